#!/bin/sh
# diag-attach quick start. Run as root on Debian 12:
#   ./setup.sh demo   install what is missing, build, snapshot the demo target
#   ./setup.sh test   install what is missing, build, run the whole test suite
#                     (plain, then under AddressSanitizer + UBSan)
set -eu
cd "$(dirname "$0")"

PACKAGES="gcc libc6-dev binutils meson ninja-build pkg-config
  libunwind-dev libdw-dev libelf-dev zlib1g-dev libprotobuf-c-dev protobuf-c-compiler
  libcjson-dev nettle-dev libcapstone-dev libcriterion-dev golang-go elfutils chromium tmux
  clang libclang-rt-14-dev golang-github-google-pprof-dev strace gdb linux-perf
  g++ nodejs python3 python3-dev redis-server nginx postgresql openjdk-17-jdk-headless"

install_packages() {
	missing=""
	for p in $PACKAGES; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
			missing="$missing $p"
		fi
	done
	if [ -n "$missing" ]; then
		echo "setup: installing$missing"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
	fi
}

# Every Go release Debian carries, beside the default golang-go (1.19),
# for the Go matrix tests: golang-1.NN-go installs under /usr/lib/go-1.NN.
# 1.21-1.23 come from bookworm-backports, 1.24 from trixie and 1.25-1.27
# from trixie-backports: those suites are added (same mirror and keyring as
# the system's) and trixie's pinned at 50, so that nothing else is ever
# upgraded from them; the toolchains pull only their own -src packages.
GO_TOOLCHAINS="golang-1.21-go golang-1.22-go golang-1.23-go golang-1.24-go golang-1.25-go
  golang-1.26-go golang-1.27-go"

install_go_toolchains() {
	missing=""
	for p in $GO_TOOLCHAINS; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
			missing="$missing $p"
		fi
	done
	[ -n "$missing" ] || return 0
	cat >/etc/apt/sources.list.d/diag-attach-go.sources <<'SOURCES'
# Written by diag-attach's setup.sh: Go toolchains for its tests only.
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports trixie trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
	cat >/etc/apt/preferences.d/diag-attach-go <<'PINS'
# Written by diag-attach's setup.sh: never upgrade anything from trixie.
Package: *
Pin: release n=trixie
Pin-Priority: 50

Package: *
Pin: release n=trixie-backports
Pin-Priority: 50
PINS
	echo "setup: installing Go toolchains$missing"
	apt-get update -qq
	# One at a time: a release the mirror lacks is said, not fatal (the
	# matrix tests skip a version that is not installed, and say so).
	for p in $missing; do
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" \
			>/dev/null || echo "setup: could not install $p" >&2
	done
}

# The browser tests drive Debian's chromium with playwright-core from the
# npm registry, at the version tests/browser/package.json pins (the last
# that runs on Debian 12's nodejs 18; Debian's nodejs comes without npm,
# NodeSource's has it).
install_browser_driver() {
	want=$(sed -n 's/.*"playwright-core": *"\([^"]*\)".*/\1/p' tests/browser/package.json)
	have=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' \
		tests/browser/node_modules/playwright-core/package.json 2>/dev/null | head -n 1)
	if [ -n "$want" ] && [ "$have" = "$want" ]; then
		return
	fi
	if ! command -v npm >/dev/null; then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
	fi
	if ! (cd tests/browser && npm install --no-audit --no-fund --no-save >/dev/null); then
		echo "setup: npm install in tests/browser failed (playwright-core $want)" >&2
		exit 1
	fi
}

# Both build directories share the Go fixtures' caches (meson_options.txt).
build() {
	dir=$1; shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" -Dgo_cache_dir="$(pwd)/build/go-caches" "$@" >/dev/null
	fi
	ninja -C "$dir" >/dev/null
}

# meson shows a failed test's stderr; criterion writes its failed
# assertions into the TAP on stdout, which only the log keeps: print them.
run_tests() {
	dir=$1; shift
	if ! "$@" meson test -C "$dir" --print-errorlogs; then
		echo "--- failed assertions ($dir/meson-logs/testlog.txt) ---"
		awk '/^not ok/ { on = 1 } on { print } /^  \.\.\.$/ { on = 0 }' "$dir/meson-logs/testlog.txt" | head -n 200
		return 1
	fi
}

# go tool pprof (used by the tests) wants a writable cache and home.
export HOME="${HOME:-/root}"
export GOCACHE="${GOCACHE:-$(pwd)/build/gocache}"

case "${1:-}" in
demo)
	install_packages
	build build
	build/tests/targets/demo >/tmp/diag-attach-demo.pid &
	demo=$!
	trap 'kill $demo 2>/dev/null || true' EXIT
	sleep 0.3
	out="$(pwd)/demo-bundle-$(date +%Y%m%d-%H%M%S)"
	build/diag-attach -p "$demo" --snapshot -o "$out" >/dev/null
	echo "--- threads.txt (first lines) ---"
	head -n 24 "$out/threads.txt"
	echo "..."
	build/diag-attach verify "$out"
	echo "--- diag-attach dump -p $demo (the first thing to type; no bundle) ---"
	build/diag-attach dump -p "$demo" | head -n 16
	echo "..."
	echo "bundle written to: $out"
	echo "try: go tool pprof -traces $out/threads.pprof"
	echo "     build/diag-attach -p PID -d 10s -o DIR    (sampled CPU/wall profiles + timeline)"
	;;
test)
	install_packages
	install_go_toolchains
	install_browser_driver
	build build
	run_tests build env
	# The tool (not the targets) under AddressSanitizer + UBSan.
	build build-asan -Db_sanitize=address,undefined -Db_lundef=false
	run_tests build-asan env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		LSAN_OPTIONS=suppressions=$(pwd)/tests/lsan.supp
	# Replay every committed fuzz input (corpus and regressions) under the
	# harnesses, then fuzz each for 10 s with a seed taken from the commit
	# (a rerun of the same commit explores the same inputs; a find names the
	# input to copy into tests/fuzz/regressions).
	tests/fuzz/run --ci --time 10
	;;
*)
	echo "usage: $0 demo|test" >&2
	exit 2
	;;
esac
