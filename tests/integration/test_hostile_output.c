/*
 * Issue 18, the writer and the opener (items 1, 2, 3, 6), as the attacks
 * were reproduced: a real unprivileged target (setpriv to nobody) that
 * links its debug file to a host secret; another user's and world-writable
 * output directories; symlinks planted where report, export and pem put
 * their temporaries and outputs; FIFOs planted, by another user, under the
 * names of a capture's temporaries. Each test asserts the refusal or that
 * nothing was written through or waited on. Those need root (they plant as
 * nobody, and make files nobody may not read) and skip without it.
 *
 * Then the readers on hostile bundles and logs (items 9, 10, 11), as any
 * user: bundles and PEM logs crafted byte by byte (tests/lib/craft.h)
 * with names that are not UTF-8, hold terminal controls, leave the output
 * directory or repeat; the real binary reads them.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/profile.h"
#include "cmd/cli/exit_codes.h"
#include "craft.h"
#include "harness.h"

#define NOBODY 65534
#define SECRET "SECRET-MARKER-6c1f0e"

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (plants files as another user)");
}

static void write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	chmod(path, mode);
}

/* Does any regular file under dir contain needle? */
static const char *grep_needle;
static char grep_hit[1024];
static int grep_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)f;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	size_t len;
	char *data = read_file(path, &len);
	if (data && memmem(data, len, grep_needle, strlen(grep_needle)))
		snprintf(grep_hit, sizeof(grep_hit), "%s", path);
	free(data);
	return 0;
}

static bool tree_contains(const char *dir, const char *needle)
{
	grep_needle = needle;
	grep_hit[0] = '\0';
	nftw(dir, grep_one, 16, FTW_PHYS);
	return grep_hit[0] != '\0';
}

/* A snapshot bundle of the demo target, in dir. */
static void make_bundle(const char *dir)
{
	struct target t = target_start_args("demo", (const char *[]){NULL}, NULL);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result r;
	tool_run(&r, (const char *[]){"-p", pid, "--snapshot", "-q", "-o", dir, NULL});
	target_kill(&t);
	cr_assert_eq(r.exit_code, EXIT_OK, "snapshot: %s", r.err);
}

/* Item 1: app.debug -> a root-only file, beside a binary an unprivileged
 * target runs. --with-binaries must not copy it, and say why. */
Test(hostile_output, i1_debug_file_link_to_host_secret, .timeout = 120)
{
	need_root();
	char d[256], secret_dir[256], app[400], dbg[400], secret[400], out[400], cmd[1200];
	make_tmpdir(d, sizeof(d));
	make_tmpdir(secret_dir, sizeof(secret_dir));
	chmod(d, 0755);
	snprintf(app, sizeof(app), "%s/app", d);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0755 '%s'", target_path("demo"), app, app);
	cr_assert_eq(system(cmd), 0);
	snprintf(secret, sizeof(secret), "%s/shadow", secret_dir);
	write_text(secret, SECRET "\n", 0600);
	snprintf(dbg, sizeof(dbg), "%s/app.debug", d);
	cr_assert_eq(symlink(secret, dbg), 0);
	/* The .debug/ directory form too, as a second try. */
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/.debug' && ln -s '%s' '%s/.debug/app.debug'", d,
		 secret, d);
	cr_assert_eq(system(cmd), 0);

	cr_assert(can_exec_as(NOBODY, NOBODY, app), "nobody cannot run %s", app);
	char uid[32];
	snprintf(uid, sizeof(uid), "--reuid=%d", NOBODY);
	const char *argv[] = {"/usr/bin/setpriv", uid, "--regid=65534", "--clear-groups", app, NULL};
	struct target t = target_start(argv, NULL);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	snprintf(out, sizeof(out), "%s/bundle", d);
	struct tool_result r;
	tool_run(&r, (const char *[]){"-p", pid, "--snapshot", "-q", "--with-binaries", "-o", out,
				      NULL});
	target_kill(&t);
	cr_assert_eq(r.exit_code, EXIT_OK, "capture: %s", r.err);
	expect_verified(out, "i1");
	cr_expect(!tree_contains(out, SECRET), "the secret was copied into the bundle: %s",
		  grep_hit);

	cJSON *m = manifest_need(out);
	const cJSON *bin = cJSON_GetObjectItem(m, "binaries");
	cr_assert(bin, "no binaries section in the manifest");
	bool said = false;
	const cJSON *s;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(bin, "skipped"))
	{
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(s, "reason"));
		const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(s, "path"));
		if (why && path && strstr(why, "build-id") && strcmp(path, app) == 0)
			said = true;
	}
	cr_expect(said, "the manifest does not say why app.debug was skipped");
	/* The binary that ran is still copied. */
	bool copied_app = false;
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(bin, "copied"))
	{
		const char *member = cJSON_GetStringValue(cJSON_GetObjectItem(c, "member"));
		size_t n = member ? strlen(member) : 0;
		if (n > 4 && strcmp(member + n - 4, "/app") == 0)
			copied_app = true;
	}
	cr_expect(copied_app, "the target's own binary was not copied");
	cJSON_Delete(m);
	rm_rf(d);
	rm_rf(secret_dir);
}

static void expect_unpem_refused(const char *pem, const char *dir, const char *what)
{
	struct tool_result r;
	tool_run(&r, (const char *[]){"unpem", "-o", dir, pem, NULL});
	cr_expect_eq(r.exit_code, EXIT_OUTPUT_DIR, "unpem into %s: exit %d: %s", what, r.exit_code,
		     r.err);
	cr_expect(strchr(r.err, '\n') == strrchr(r.err, '\n'), "not one line: %s", r.err);
}

static bool dir_empty(const char *dir)
{
	char cmd[600], out[64];
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	return shell_output(cmd, out, sizeof(out)) == 0 && atoi(out) == 0;
}

/* Item 2 (and 6's root cause): unpem and capture refuse a directory that
 * is another user's, writable by others without the sticky bit, or a
 * symlink; a sticky one of our own is accepted. */
Test(hostile_output, i2_output_dirs_of_others_refused, .timeout = 120)
{
	need_root();
	char d[256], bundle[400], pem[400], dir[400], target[400];
	make_tmpdir(d, sizeof(d));
	snprintf(bundle, sizeof(bundle), "%s/bundle", d);
	make_bundle(bundle);
	snprintf(pem, sizeof(pem), "%s/log.pem", d);
	struct tool_result r;
	tool_run(&r, (const char *[]){"pem", "-o", pem, bundle, NULL});
	cr_assert_eq(r.exit_code, EXIT_OK, "pem: %s", r.err);

	snprintf(dir, sizeof(dir), "%s/nobodys", d);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chown(dir, NOBODY, NOBODY), 0);
	expect_unpem_refused(pem, dir, "another user's empty directory");
	cr_expect(dir_empty(dir), "something was written into %s", dir);

	snprintf(dir, sizeof(dir), "%s/open", d);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, 0777), 0);
	expect_unpem_refused(pem, dir, "a world-writable directory");
	cr_expect(dir_empty(dir), "something was written into %s", dir);
	/* A capture too: this is where FIFOs were planted (item 6). */
	struct target t = target_start_args("demo", (const char *[]){NULL}, NULL);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	tool_run(&r, (const char *[]){"-p", pid, "--snapshot", "-q", "-o", dir, NULL});
	cr_expect_eq(r.exit_code, EXIT_OUTPUT_DIR, "capture into a world-writable dir: %d %s",
		     r.exit_code, r.err);
	cr_expect(dir_empty(dir), "the capture wrote into %s", dir);
	target_kill(&t);

	snprintf(target, sizeof(target), "%s/real", d);
	cr_assert_eq(mkdir(target, 0700), 0);
	snprintf(dir, sizeof(dir), "%s/link", d);
	cr_assert_eq(symlink(target, dir), 0);
	expect_unpem_refused(pem, dir, "a symlink to an empty directory");
	cr_expect(dir_empty(target), "unpem wrote through the link");

	snprintf(dir, sizeof(dir), "%s/sticky", d);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, 01777), 0);
	tool_run(&r, (const char *[]){"unpem", "-o", dir, pem, NULL});
	cr_expect_eq(r.exit_code, EXIT_OK, "unpem into our own sticky directory: %s", r.err);
	rm_rf(d);
}

/* Item 3: a symlink planted under the output's name, or under the old
 * predictable temporary name, is never written through. */
Test(hostile_output, i3_planted_links_at_outputs, .timeout = 120)
{
	need_root();
	char d[256], bundle[400], victim[400], path[700], tmp[720];
	make_tmpdir(d, sizeof(d));
	snprintf(bundle, sizeof(bundle), "%s/bundle", d);
	make_bundle(bundle);
	snprintf(victim, sizeof(victim), "%s/victim", d);
	write_text(victim, "VICTIM\n", 0644);

	const char *kinds[] = {"html", "export", "pem"};
	for (int k = 0; k < 3; k++) {
		snprintf(path, sizeof(path), "%s/out.%s", d, kinds[k]);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		cr_assert_eq(symlink(victim, tmp), 0);
		cr_assert_eq(symlink(victim, path), 0);
		struct tool_result r;
		if (k == 0)
			tool_run(&r, (const char *[]){"report", "--html", path, bundle, NULL});
		else if (k == 1)
			tool_run(&r, (const char *[]){"export", "-o", path, bundle, NULL});
		else
			tool_run(&r, (const char *[]){"pem", "-o", path, bundle, NULL});
		cr_expect_eq(r.exit_code, EXIT_OK, "%s: %s", kinds[k], r.err);
		size_t len;
		char *v = read_file(victim, &len);
		cr_expect(v && strcmp(v, "VICTIM\n") == 0, "%s wrote through a planted link", kinds[k]);
		free(v);
		struct stat st;
		cr_expect(lstat(path, &st) == 0 && S_ISREG(st.st_mode),
			  "%s: the output is not a regular file in place of the link", kinds[k]);
		cr_expect(lstat(tmp, &st) == 0 && S_ISLNK(st.st_mode),
			  "%s: the planted temporary link was touched", kinds[k]);
	}

	/* An output in a directory others may swap entries in is refused. */
	char open_dir[400];
	snprintf(open_dir, sizeof(open_dir), "%s/open", d);
	cr_assert_eq(mkdir(open_dir, 0777), 0);
	cr_assert_eq(chmod(open_dir, 0777), 0);
	snprintf(path, sizeof(path), "%s/page.html", open_dir);
	struct tool_result r;
	tool_run(&r, (const char *[]){"report", "--html", path, bundle, NULL});
	cr_expect_neq(r.exit_code, EXIT_OK, "report --html into a world-writable directory");
	cr_expect(strstr(r.err, "writable by other users"), "no reason given: %s", r.err);
	cr_expect(dir_empty(open_dir), "something was written into %s", open_dir);
	rm_rf(d);
}

/* Item 6: another user plants FIFOs under the names a capture's
 * temporaries had, in a sticky world-writable directory we own, while the
 * capture runs. It must finish (it used to block forever in open). */
Test(hostile_output, i6_fifos_planted_during_capture, .timeout = 120)
{
	need_root();
	char d[256], out[400];
	make_tmpdir(d, sizeof(d));
	chmod(d, 0755);
	snprintf(out, sizeof(out), "%s/bundle", d);
	cr_assert_eq(mkdir(out, 0700), 0);
	cr_assert_eq(chmod(out, 01777), 0);

	struct target t = target_start_args("demo", (const char *[]){NULL}, NULL);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	pid_t tool = tool_spawn((const char *[]){"-p", pid, "-d", "3s", "-q", "-o", out, NULL},
				NULL, NULL);
	/* Past the capture's emptiness check: its first timeline line. */
	for (int i = 0; i < 200 && !path_exists(out, "timeline.jsonl"); i++)
		sleep_ms(10);
	pid_t planter = fork();
	cr_assert(planter >= 0);
	if (planter == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(126);
		const char *names[] = {"manifest.json.tmp", "threads.txt.tmp", "cpu.pprof.tmp",
				       "wall.pprof.tmp",    "threads.pprof.tmp", "timeline.jsonl.tmp",
				       "report.txt.tmp"};
		for (int round = 0; round < 200; round++) {
			for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
				char p[600];
				snprintf(p, sizeof(p), "%s/%s", out, names[i]);
				mkfifo(p, 0666);
			}
			usleep(10000);
		}
		_exit(0);
	}
	int code = tool_wait(tool, 60000);
	kill(planter, SIGKILL);
	waitpid(planter, NULL, 0);
	target_kill(&t);
	cr_expect_neq(code, -2, "the capture hung on a planted FIFO");
	cr_expect_eq(code, EXIT_OK, "capture exit %d", code);
	cr_expect(path_exists(out, "manifest.json"), "no manifest");
	rm_rf(d);
}

/* ---- items 9, 10, 11: hostile bundles and logs, any user ---- */

/* Strictly UTF-8 and JSON, as python's json module reads it from bytes
 * decoded strictly (the brief's oracle, and what a log shipper does). */
static void expect_strict_json(const char *path, const char *what)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,sys; json.loads(open(sys.argv[1],\"rb\").read()"
		 ".decode(\"utf-8\",\"strict\"))' '%s' 2>&1",
		 path);
	char out[2048];
	int st = shell_output(cmd, out, sizeof(out));
	cr_expect_eq(st, 0, "%s is not strict UTF-8 JSON: %s", what, out);
}

static void save(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	size_t n = strlen(text);
	cr_assert_eq(write(fd, text, n), (ssize_t)n);
	close(fd);
}

/* A gzipped pprof of one stack in hot\xff\xfe_fn (file src\xc3.c), the
 * thread named "th\xe2\x80" (cut in the middle of a character), as a
 * perf map or a target could name them and a bundle could carry them; in
 * the snapshot, a state label that clears the screen (report keys its
 * thread states by it). */
static uint8_t *hostile_profile(bool cpu, size_t *len)
{
	struct profile_value_type cpu_types[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
	struct profile_value_type thr_types[] = {{"threads", "count"}};
	struct profile_builder *pb =
		cpu ? profile_builder_new(cpu_types, 2, cpu_types[1], 10000000)
		    : profile_builder_new(thr_types, 1, thr_types[0], 1);
	cr_assert(pb);
	uint64_t map = profile_builder_add_mapping(pb, 0x400000, 0x500000, 0, "/opt/app\xff", NULL,
						   true, true, true);
	struct profile_line leaf = {.function = "hot\xff\xfe_fn", .filename = "src\xc3.c",
				    .line = 12};
	struct profile_line root = {.function = "main", .filename = "main.c", .line = 3};
	uint64_t loc[2] = {profile_builder_add_location(pb, 0x401000, map, &leaf, 1),
			   profile_builder_add_location(pb, 0x402000, map, &root, 1)};
	struct profile_label labels[] = {
		{.key = "tid", .num = 4243},
		{.key = "thread_comm", .str = "th\xe2\x80"},
		{.key = "state", .str = cpu ? "R" : "S\x1b[2J"},
	};
	int64_t values[2] = {5, 50000000};
	cr_assert_eq(profile_builder_add_sample(pb, loc, 2, values, labels, 3), 0);
	uint8_t *gz;
	cr_assert_eq(profile_builder_encode_gz(pb, &gz, len), 0);
	profile_builder_free(pb);
	return gz;
}

/* dir: a bundle whose profiles and manifest hold bytes that are not
 * UTF-8, intact (verify says so): only its names are hostile. */
static void make_hostile_bundle(const char *dir)
{
	size_t cpu_len, thr_len;
	uint8_t *cpu = hostile_profile(true, &cpu_len), *thr = hostile_profile(false, &thr_len);
	const struct craft_member m[] = {{"cpu.pprof", cpu, cpu_len},
					 {"threads.pprof", thr, thr_len}};
	char *manifest = craft_manifest(
		"\"bundle_id\":\"b1e5a0c2-0000-4000-8000-000000000009\",\"mode\":\"profile\","
		"\"target\":{\"pid\":4242,\"comm\":\"comm\xff\xfe\",\"exe\":\"/opt/app\xff\"},",
		m, 2);
	cr_assert(manifest);
	cr_assert_eq(craft_bundle(dir, m, 2, manifest), 0);
	free(manifest);
	free(cpu);
	free(thr);
}

static bool has_raw_byte_not_utf8(const char *s)
{
	return strstr(s, "\xff") || strstr(s, "\xfe_fn");
}

/* Item 9: report --json (and diff --json, export's speedscope, the HTML
 * page's data) is valid UTF-8 although the bundle's function, file,
 * thread and command names are not; each such byte reads "\xNN" there, as
 * the text report shows it. It used to pass the raw bytes through. */
Test(hostile_output, i9_json_outputs_are_utf8, .timeout = 120)
{
	char d[256], b[300], path[400];
	make_tmpdir(d, sizeof(d));
	snprintf(b, sizeof(b), "%s/bundle", d);
	make_hostile_bundle(b);
	expect_verified(b, "i9 crafted bundle");

	struct tool_result r;
	tool_run(&r, (const char *[]){"report", "--json", b, NULL});
	cr_expect_eq(r.exit_code, EXIT_OK, "report --json: %s", r.err);
	snprintf(path, sizeof(path), "%s/report.json", d);
	save(path, r.out);
	expect_strict_json(path, "report --json");
	/* The JSON text spells the byte with an escaped backslash: the
	 * parsed string is hot\xff\xfe_fn, as the terminal shows it. */
	cr_expect(strstr(r.out, "hot\\\\xff\\\\xfe_fn"), "function name not spelled:\n%.2000s",
		  r.out);
	cr_expect(strstr(r.out, "th\\\\xe2\\\\x80"), "thread name not spelled:\n%.3000s", r.out);
	cr_expect(strstr(r.out, "comm\\\\xff\\\\xfe"), "comm not spelled:\n%.2000s", r.out);
	cr_expect(!has_raw_byte_not_utf8(r.out), "raw bytes in report --json");

	tool_run(&r, (const char *[]){"report", b, NULL});
	cr_expect_eq(r.exit_code, EXIT_OK, "report: %s", r.err);
	cr_expect(strstr(r.out, "hot\\xff\\xfe_fn"), "text report does not show it escaped:\n%s",
		  r.out);
	cr_expect(!has_raw_byte_not_utf8(r.out), "raw bytes in the text report:\n%s", r.out);
	cr_expect(strstr(r.out, "S\\x1b[2J") && !strchr(r.out, '\x1b'),
		  "the state label is not shown escaped:\n%s", r.out);

	tool_run(&r, (const char *[]){"diff", "--json", b, b, NULL});
	cr_expect_eq(r.exit_code, EXIT_OK, "diff --json: %s", r.err);
	snprintf(path, sizeof(path), "%s/diff.json", d);
	save(path, r.out);
	expect_strict_json(path, "diff --json");

	snprintf(path, sizeof(path), "%s/speedscope.json", d);
	tool_run(&r, (const char *[]){"export", "-f", "speedscope", "-o", path, b, NULL});
	cr_expect_eq(r.exit_code, EXIT_OK, "export speedscope: %s", r.err);
	expect_strict_json(path, "export -f speedscope");

	snprintf(path, sizeof(path), "%s/page.html", d);
	tool_run(&r, (const char *[]){"report", "--html", path, b, NULL});
	cr_expect_eq(r.exit_code, EXIT_OK, "report --html: %s", r.err);
	char *page = read_file(path, NULL);
	cr_assert(page);
	cr_expect(!has_raw_byte_not_utf8(page), "raw bytes in the HTML page's data");
	cr_expect(strstr(page, "hot\\\\xff\\\\xfe_fn"), "function name not spelled in the page");
	free(page);
	rm_rf(d);
}

/* Item 10: verify says what it checked and what it cannot: the members
 * against the manifest, which nothing signs. A bundle whose member and
 * manifest entry were rewritten together is "intact" too, and the line
 * says why that is no contradiction. It used to print "DIR: intact". */
Test(hostile_output, i10_verify_says_what_it_vouches_for, .timeout = 120)
{
	char d[256], b[300], want[800];
	make_tmpdir(d, sizeof(d));
	snprintf(b, sizeof(b), "%s/bundle", d);
	const struct craft_member m[] = {{"runtime.jsonl", "{}\n", 3},
					 {"threads.txt", "Thread 1\n", 9},
					 {"leak/open_fds-1/threads.txt", "t\n", 2}};
	char *manifest = craft_manifest("\"bundle_id\":\"x\",", m, 3);
	cr_assert_eq(craft_bundle(b, m, 3, manifest), 0);
	free(manifest);
	struct tool_result r;
	tool_run(&r, (const char *[]){"verify", b, NULL});
	cr_expect_eq(r.exit_code, EXIT_OK, "verify: %s", r.err);
	snprintf(want, sizeof(want),
		 "%s: intact: 3 members match the size and sha256 the manifest lists, no file is "
		 "unlisted; the manifest itself is not signed\n",
		 b);
	cr_expect_str_eq(r.out, want);

	/* Forged: threads.txt and its manifest entry rewritten together. */
	char forged[300];
	snprintf(forged, sizeof(forged), "%s/forged", d);
	const struct craft_member f[] = {{"threads.txt", "Thread 666 \"forged\"\n", 20}};
	manifest = craft_manifest("\"bundle_id\":\"x\",", f, 1);
	cr_assert_eq(craft_bundle(forged, f, 1, manifest), 0);
	free(manifest);
	tool_run(&r, (const char *[]){"verify", forged, NULL});
	cr_expect_eq(r.exit_code, EXIT_OK, "verify of a forged bundle: %s", r.err);
	cr_expect(strstr(r.out, ": intact: 1 member matches the size and sha256 the manifest "
				"lists") &&
			  strstr(r.out, "the manifest itself is not signed"),
		  "%s", r.out);
	rm_rf(d);
}

/* A log of one bundle: manifest.json listing m, then a block per member
 * (names written as given, NULs included). */
static void write_log(const char *path, const char *id, const struct craft_member *m, size_t n,
		      const size_t *name_lens)
{
	FILE *f = fopen(path, "we");
	cr_assert(f, "create %s", path);
	fputs("2026-01-01T00:00:00Z app: dumping a bundle\n", f);
	char *manifest = craft_manifest("\"bundle_id\":\"x\",", m, n);
	cr_assert(manifest);
	craft_pem_block(f, id, 1, n + 1, "manifest.json", 13, manifest, strlen(manifest));
	for (size_t i = 0; i < n; i++)
		craft_pem_block(f, id, i + 2, n + 1, m[i].name,
				name_lens ? name_lens[i] : strlen(m[i].name), m[i].data, m[i].len);
	fputs("2026-01-01T00:00:01Z app: done\n", f);
	cr_assert_eq(fclose(f), 0);
	free(manifest);
}

static bool raw_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 && *s != '\n')
			return true;
	return false;
}

/* Item 11: names that leave the output directory, or that no member can
 * have, are refused by name: one line, exit 16, and nothing written (the
 * output directory is not even created, nothing appears beside it). They
 * used to be "block 2 of 2 is missing or damaged", exit 1. */
Test(hostile_output, i11_unpem_refuses_hostile_member_names, .timeout = 120)
{
	char d[256], pem[300], out[300], outside[300], abs_name[300];
	make_tmpdir(d, sizeof(d));
	snprintf(pem, sizeof(pem), "%s/log.pem", d);
	snprintf(out, sizeof(out), "%s/sub/out", d);
	snprintf(outside, sizeof(outside), "%s/sub", d);
	cr_assert_eq(mkdir(outside, 0700), 0);
	snprintf(abs_name, sizeof(abs_name), "%s/sub/absolute.txt", d);
	static const struct {
		const char *name;
		size_t len;
		const char *said;
	} cases[] = {
		{"../escaped.txt", 14, "member name '../escaped.txt' (part 2) escapes the output "
				       "directory; nothing was written"},
		{"a/../../escaped.txt", 19, "member name 'a/../../escaped.txt' (part 2) escapes the "
					    "output directory"},
		{NULL, 0, "escapes the output directory"}, /* abs_name */
		{"ctl\x1b]0;pwn\x07.txt", 15, "member name 'ctl\\x1b]0;pwn\\x07.txt' (part 2) holds "
					      "a control character"},
		{"nul\0name", 8, "member name 'nul\\x00name' (part 2) holds a control character"},
		{"", 0, "member name '' (part 2) is not a name a bundle member can have"},
		{"a//b", 4, "member name 'a//b' (part 2) is not a name a bundle member can have"},
		{"x.tmp", 5, "member name 'x.tmp' (part 2) is not a name a bundle member can have"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *name = cases[i].name ? cases[i].name : abs_name;
		size_t len = cases[i].name ? cases[i].len : strlen(abs_name);
		const struct craft_member m[] = {{name, "HOSTILE\n", 8}};
		write_log(pem, "b1e5a0c2-0000-4000-8000-000000000011", m, 1, &len);
		struct tool_result r;
		tool_run(&r, (const char *[]){"unpem", "-o", out, pem, NULL});
		cr_expect_eq(r.exit_code, EXIT_UNSAFE_NAME, "case %zu: exit %d: %s", i, r.exit_code,
			     r.err);
		cr_expect(strstr(r.err, cases[i].said), "case %zu: not said: %s", i, r.err);
		cr_expect(strchr(r.err, '\n') == strrchr(r.err, '\n'), "case %zu: not one line: %s",
			  i, r.err);
		cr_expect(!raw_control(r.err), "case %zu: a raw control on stderr: %s", i, r.err);
		cr_expect(!path_exists(out, NULL), "case %zu: the output directory was created", i);
		cr_expect(!path_exists(outside, "escaped.txt") && !path_exists(abs_name, NULL),
			  "case %zu: a member was written outside", i);
		cr_expect(dir_empty(outside), "case %zu: something was written beside it", i);
	}
	rm_rf(d);
}

/* Item 11: two blocks of one member (or a member inside another) are
 * found before anything is written. It used to write the first, stop at
 * the second with "it exists and is not empty", exit 9, and leave that
 * half-written directory. */
Test(hostile_output, i11_unpem_duplicate_members_write_nothing, .timeout = 120)
{
	char d[256], pem[300], out[300];
	make_tmpdir(d, sizeof(d));
	snprintf(pem, sizeof(pem), "%s/log.pem", d);
	snprintf(out, sizeof(out), "%s/out", d);
	const struct craft_member dup[] = {{"cpu.pprof", "first\n", 6},
					   {"threads.txt", "t\n", 2},
					   {"cpu.pprof", "second\n", 7}};
	write_log(pem, "b1e5a0c2-0000-4000-8000-000000000012", dup, 3, NULL);
	struct tool_result r;
	tool_run(&r, (const char *[]){"unpem", "-o", out, pem, NULL});
	cr_expect_eq(r.exit_code, EXIT_UNSAFE_NAME, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "diag-attach: duplicate member 'cpu.pprof' (parts 2 and 4); "
				"nothing was written\n"),
		  "%s", r.err);
	cr_expect(strchr(r.err, '\n') == strrchr(r.err, '\n'), "not one line: %s", r.err);
	cr_expect(!path_exists(out, NULL), "a directory was left: %s", out);

	const struct craft_member nested[] = {{"leak", "a file\n", 7},
					      {"leak/open_fds-1/threads.txt", "t\n", 2}};
	write_log(pem, "b1e5a0c2-0000-4000-8000-000000000013", nested, 2, NULL);
	tool_run(&r, (const char *[]){"unpem", "-o", out, pem, NULL});
	cr_expect_eq(r.exit_code, EXIT_UNSAFE_NAME, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "member 'leak/open_fds-1/threads.txt' (part 3) is inside member "
				"'leak' (part 2), which is a file; nothing was written"),
		  "%s", r.err);
	cr_expect(!path_exists(out, NULL), "a directory was left: %s", out);
	rm_rf(d);
}

/* Item 11: what unpem and verify print of a log's names goes through the
 * terminal escaping: a bundle id and a manifest entry that set the
 * window title. They used to reach stderr and stdout raw. */
Test(hostile_output, i11_names_printed_escaped, .timeout = 120)
{
	char d[256], pem[300], out[300];
	make_tmpdir(d, sizeof(d));
	snprintf(pem, sizeof(pem), "%s/log.pem", d);
	snprintf(out, sizeof(out), "%s/out", d);
	/* The manifest lists a member no block carries. */
	const struct craft_member listed[] = {{"a.txt", "a\n", 2}, {"\x1b]0;pwn\x07.txt", "x", 1}};
	char *manifest = craft_manifest("\"bundle_id\":\"x\",", listed, 2);
	FILE *f = fopen(pem, "we");
	cr_assert(f);
	craft_pem_block(f, "id", 1, 2, "manifest.json", 13, manifest, strlen(manifest));
	craft_pem_block(f, "id", 2, 2, "a.txt", 5, "a\n", 2);
	cr_assert_eq(fclose(f), 0);
	free(manifest);
	struct tool_result r;
	tool_run(&r, (const char *[]){"unpem", "-o", out, pem, NULL});
	cr_expect_eq(r.exit_code, EXIT_VERIFY_FAILED, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "\\x1b]0;pwn\\x07.txt: missing"), "%s", r.err);
	cr_expect(!raw_control(r.err), "a raw control on stderr: %s", r.err);
	tool_run(&r, (const char *[]){"verify", out, NULL});
	cr_expect_eq(r.exit_code, EXIT_VERIFY_FAILED, "verify: exit %d", r.exit_code);
	cr_expect(strstr(r.out, "\\x1b]0;pwn\\x07.txt: missing"), "%s", r.out);
	cr_expect(!raw_control(r.out), "a raw control on stdout: %s", r.out);
	rm_rf(out);

	/* A hostile bundle id, with a block missing. */
	f = fopen(pem, "we");
	cr_assert(f);
	craft_pem_block(f, "id\x1b[2J", 1, 2, "manifest.json", 13, "{}", 2);
	cr_assert_eq(fclose(f), 0);
	tool_run(&r, (const char *[]){"unpem", "-o", out, pem, NULL});
	cr_expect_eq(r.exit_code, EXIT_VERIFY_FAILED, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "block 2 of 2 of bundle id\\x1b[2J is missing"), "%s", r.err);
	cr_expect(!raw_control(r.err), "a raw control on stderr: %s", r.err);
	rm_rf(d);
}
