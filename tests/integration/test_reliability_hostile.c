/*
 * Reliability, part E (security / hostile inputs) and D8, from
 * reliability.md section 4: hostile ELF files mapped by the target (E1, E2),
 * a container whose paths lead to host files (E3), FIFOs, /dev/zero and huge
 * sparse files where a mapped file was (E4), a binary replaced on disk (E5),
 * secrets in argv and environ (E6), hostile thread names and mapped paths
 * (E8), and a non-dumpable target (D8).
 *
 * The target is tests/targets/reliability/hostile_target: it maps the files
 * the test generates and runs a thread inside each, at file offset 4096
 * (`jmp .`, or a pause() loop for threads that should not burn a CPU).
 * Mount namespaces (E3, E4, E5) need root; those tests skip without it.
 * $DIAG_REL_LOOPS sets how many mutated ELFs E2 maps (default 50), and
 * $DIAG_REL_SEED its seed (default: the time; printed either way).
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "cmd/cli/exit_codes.h"
#include "../lib/elf_img.h"
#include "harness.h"
#include "pprof_read.h"

/* ---- generated ELF files ---- */

#define IMG_SIZE 12288
#define CODE_OFF 4096

enum code_kind {
	CODE_SPIN,  /* jmp . */
	CODE_PAUSE, /* 1: mov eax, 34 (pause); syscall; jmp 1b -- PC ends at +7 */
};

static const uint8_t spin_code[] = {0xeb, 0xfe};
static const uint8_t pause_code[] = {0xb8, 0x22, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xeb, 0xf7};

static void put_code(uint8_t *img, enum code_kind code)
{
	if (code == CODE_SPIN)
		memcpy(img + CODE_OFF, spin_code, sizeof(spin_code));
	else
		memcpy(img + CODE_OFF, pause_code, sizeof(pause_code));
}

struct elf_spec {
	enum code_kind code;
	const char *symbol;    /* a FUNC symbol at CODE_OFF, or NULL */
	const char *debuglink; /* a .gnu_debuglink section, or NULL */
	uint32_t debuglink_crc;
};

/*
 * A small valid ELF64 shared object: one PT_LOAD (R+X) mapping the whole
 * image at vaddr 0, code at 4096, and optionally .symtab with one function
 * and a .gnu_debuglink. No build-id, no CFI.
 */
static void elf_valid(uint8_t *img, const struct elf_spec *s)
{
	memset(img, 0, IMG_SIZE);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));
	elf_img_header(eh, 1);
	eh->e_entry = CODE_OFF;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shentsize = sizeof(Elf64_Shdr);
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_filesz = ph->p_memsz = IMG_SIZE;
	ph->p_align = 4096;
	put_code(img, s->code);
	if (!s->symbol)
		return;

	/* Sections: null, .text, .symtab, .strtab, .shstrtab[, .gnu_debuglink] */
	const size_t strtab = 8192, symtab = 8448, debuglink = 8512, shstrtab = 8704, shdrs = 9216;
	snprintf((char *)img + strtab + 1, 240, "%s", s->symbol);
	Elf64_Sym *sym = (Elf64_Sym *)(img + symtab);
	sym[1] = (Elf64_Sym){.st_name = 1,
			     .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			     .st_shndx = 1,
			     .st_value = CODE_OFF,
			     .st_size = 16};
	size_t dl_size = 0;
	if (s->debuglink) {
		size_t n = strlen(s->debuglink) + 1;
		memcpy(img + debuglink, s->debuglink, n);
		n = (n + 3) & ~(size_t)3;
		memcpy(img + debuglink + n, &s->debuglink_crc, 4);
		dl_size = n + 4;
	}
	static const char names[] = "\0.text\0.symtab\0.strtab\0.shstrtab\0.gnu_debuglink";
	memcpy(img + shstrtab, names, sizeof(names));
	Elf64_Shdr *sh = (Elf64_Shdr *)(img + shdrs);
	sh[1] = (Elf64_Shdr){.sh_name = 1,
			     .sh_type = SHT_PROGBITS,
			     .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			     .sh_addr = CODE_OFF,
			     .sh_offset = CODE_OFF,
			     .sh_size = 16,
			     .sh_addralign = 16};
	sh[2] = (Elf64_Shdr){.sh_name = 7,
			     .sh_type = SHT_SYMTAB,
			     .sh_offset = symtab,
			     .sh_size = 2 * sizeof(Elf64_Sym),
			     .sh_link = 3,
			     .sh_info = 1,
			     .sh_addralign = 8,
			     .sh_entsize = sizeof(Elf64_Sym)};
	sh[3] = (Elf64_Shdr){.sh_name = 15,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = strtab,
			     .sh_size = strlen(s->symbol) + 2,
			     .sh_addralign = 1};
	sh[4] = (Elf64_Shdr){.sh_name = 23,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = shstrtab,
			     .sh_size = sizeof(names),
			     .sh_addralign = 1};
	sh[5] = (Elf64_Shdr){.sh_name = 33,
			     .sh_type = SHT_PROGBITS,
			     .sh_offset = debuglink,
			     .sh_size = dl_size,
			     .sh_addralign = 4};
	eh->e_shoff = shdrs;
	eh->e_shnum = s->debuglink ? 6 : 5;
	eh->e_shstrndx = 4;
}

/* The five hostile files of E1 (as tests/fuzz/gen_seeds.c makes them). */
static const char *const hostile_names[] = {
	"1-bad-magic.elf",     "2-huge-counts.elf",
	"3-wrapped-shoff.elf", "4-random-shdrs-bogus-eh-frame.elf",
	"5-bad-class.elf",
};

static void elf_hostile(uint8_t *img, int which, enum code_kind code)
{
	struct elf_spec s = {.code = code};
	elf_valid(img, &s);
	elf_img_hostile(img, which);
}

static void write_bytes(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, data, len), (ssize_t)len, "write %s", path);
	close(fd);
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	char *data = read_file(from, &len);
	cr_assert(data, "read %s", from);
	write_bytes(to, data, len);
	free(data);
}

/* ---- running the tool ---- */

struct run {
	int code;  /* exit status; -1 signal; -2 timed out */
	char *err; /* stderr, malloc'd */
	char *out; /* stdout, malloc'd */
};

/* diag-attach -p PID ARGS... -o OUT -q, waited for up to timeout_ms.
 * With strace_log, under `strace -f -e trace=open,openat,openat2 -o LOG`. */
static struct run tool(pid_t pid, const char *out, const char *const *args, int timeout_ms,
		       const char *strace_log)
{
	char pidbuf[16], errp[320], outp[320];
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	/* Our output paths are short: a cut one would write elsewhere. */
	if (snprintf(errp, sizeof(errp), "%s.stderr", out) >= (int)sizeof(errp) ||
	    snprintf(outp, sizeof(outp), "%s.stdout", out) >= (int)sizeof(outp))
		cr_assert_fail("output path too long: %s", out);
	close(open(errp, O_CREAT | O_WRONLY | O_TRUNC, 0600));
	close(open(outp, O_CREAT | O_WRONLY | O_TRUNC, 0600));
	const char *argv[48];
	size_t n = 0;
	if (strace_log) {
		/* tool_spawn runs $DIAG_ATTACH: put strace in front by hand. */
		argv[n++] = "-f";
		argv[n++] = "-qq";
		argv[n++] = "-e";
		argv[n++] = "trace=open,openat,openat2";
		argv[n++] = "-o";
		argv[n++] = strace_log;
		argv[n++] = getenv("DIAG_ATTACH");
	}
	argv[n++] = "-p";
	argv[n++] = pidbuf;
	for (size_t i = 0; args && args[i] && n < 40; i++)
		argv[n++] = args[i];
	argv[n++] = "-o";
	argv[n++] = out;
	argv[n++] = "-q";
	argv[n] = NULL;
	pid_t p;
	if (strace_log) {
		p = fork();
		cr_assert(p >= 0);
		if (p == 0) {
			int fd = open(errp, O_WRONLY);
			dup2(fd, STDERR_FILENO);
			fd = open(outp, O_WRONLY);
			dup2(fd, STDOUT_FILENO);
			/* LeakSanitizer cannot run in a traced process. */
			char asan[512];
			const char *prev = getenv("ASAN_OPTIONS");
			snprintf(asan, sizeof(asan), "%s%sdetect_leaks=0", prev ? prev : "",
				 prev && prev[0] ? ":" : "");
			setenv("ASAN_OPTIONS", asan, 1);
			const char *sargv[50];
			sargv[0] = "strace";
			memcpy(sargv + 1, argv, (n + 1) * sizeof(*argv));
			execvp("strace", (char *const *)sargv);
			_exit(127);
		}
	} else {
		p = tool_spawn(argv, outp, errp);
	}
	struct run r = {.code = tool_wait(p, timeout_ms)};
	r.err = read_file(errp, NULL);
	r.out = read_file(outp, NULL);
	unlink(errp);
	unlink(outp);
	return r;
}

static void run_free(struct run *r)
{
	free(r->err);
	free(r->out);
}

/* Exit 0 and a bundle that verifies. */
static void expect_bundle(const struct run *r, const char *dir, const char *what)
{
	cr_expect_eq(r->code, 0, "%s: diag-attach exit %d (-2: hung, -1: crashed): %s", what,
		     r->code, r->err ? r->err : "");
	if (r->code == 0)
		expect_verified(dir, what);
}

/* tool() on pid into out with args and a 60 s limit, then expect_bundle:
 * the runs that must give a bundle. */
static void bundle_run(pid_t pid, const char *out, const char *const *args, const char *what)
{
	struct run r = tool(pid, out, args, 60000, NULL);
	expect_bundle(&r, out, what);
	run_free(&r);
}

/* The sandboxed worker never crashed or hung: no restart, nothing lost. */
static void expect_worker_survived(const char *dir, const char *what)
{
	cJSON *m = manifest_load(dir);
	cr_expect(m, "%s: no manifest", what);
	double restarts = number_at(m, "interpretation", "worker_restarts");
	double lost = number_at(m, "interpretation", "stacks_lost");
	double batches = number_at(m, "interpretation", "symbol_batches_lost");
	cr_expect(restarts == 0 && lost == 0 && batches == 0,
		  "%s: interpretation worker lost (restarts %.0f, stacks lost %.0f, symbol "
		  "batches lost %.0f)",
		  what, restarts, lost, batches);
	cJSON_Delete(m);
}

static char *member(const char *dir, const char *name)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return read_file(path, NULL);
}

/* Every file under a bundle, gunzipped when it is gzip (pprof): which one
 * contains needle? Returns a malloc'd relative name, or NULL. */
static const char *scan_needle;
static size_t scan_root_len;
static char *scan_hit;

static int scan_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	if (type != FTW_F || scan_hit)
		return 0;
	gzFile g = gzopen(path, "rb"); /* reads plain files as they are */
	if (!g)
		return 0;
	size_t cap = (size_t)st->st_size * 8 + 65536, len = 0;
	char *buf = malloc(cap);
	int n;
	while (buf && (n = gzread(g, buf + len, (unsigned)(cap - len))) > 0) {
		len += (size_t)n;
		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
	}
	gzclose(g);
	if (buf && memmem(buf, len, scan_needle, strlen(scan_needle)))
		scan_hit = strdup(path + scan_root_len);
	free(buf);
	return 0;
}

static char *bundle_find(const char *dir, const char *needle)
{
	scan_needle = needle;
	scan_root_len = strlen(dir);
	scan_hit = NULL;
	nftw(dir, scan_one, 16, FTW_PHYS);
	return scan_hit;
}

/* RFC 8259 wants JSON text in UTF-8: is it? */
static bool utf8_valid(const unsigned char *s, size_t n, size_t *bad_at)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		size_t k = c < 0x80		? 0
			   : (c & 0xe0) == 0xc0 ? 1
			   : (c & 0xf0) == 0xe0 ? 2
			   : (c & 0xf8) == 0xf0 ? 3
						: 9;
		if (k == 9 || (k == 1 && c < 0xc2) || i + k >= n + (k ? 0 : 1)) {
			*bad_at = i;
			return false;
		}
		for (size_t j = 1; j <= k; j++)
			if ((s[i + j] & 0xc0) != 0x80) {
				*bad_at = i;
				return false;
			}
		i += k + 1;
	}
	return true;
}

static void expect_json_file(const char *path)
{
	size_t len, bad;
	char *text = read_file(path, &len);
	cr_assert(text, "cannot read %s", path);
	cJSON *j = cJSON_ParseWithLength(text, len);
	cr_expect(j, "%s is not JSON (near byte %ld)", path,
		  cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - text) : -1L);
	cJSON_Delete(j);
	cr_expect(utf8_valid((const unsigned char *)text, len, &bad), "%s is not UTF-8 at byte %zu",
		  path, bad);
	free(text);
}

static void expect_target_ok(pid_t pid, const char *what)
{
	char why[512];
	cr_expect(kill(pid, 0) == 0, "%s: the target is gone", what);
	cr_expect(target_healthy(pid, false, why, sizeof(why)), "%s: %s", what, why);
}

static struct target hostile_start(const char *const *args)
{
	return target_start_args("reliability/hostile_target", args, "ready");
}

/* Like hostile_start, but a target that cannot make its mount namespace
 * (not root, or no CAP_SYS_ADMIN) skips the test. */
static struct target hostile_start_ns(const char *const *args)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: the target makes a mount namespace");
	return hostile_start(args);
}

/* ---- E1 ---- */

/* E1: the five hostile ELFs mapped executable, a thread spinning in each.
 * Snapshot and a short sampling run: exit 0, the frames shown as
 * module+offset, the bundle verifies, the worker never crashed, the target
 * is untouched. */
Test(reliability_hostile, e1_hostile_elfs, .timeout = 300)
{
	char dir[256], files[5][320], out[320];
	make_tmpdir(dir, sizeof(dir));
	const char *args[8];
	uint8_t img[IMG_SIZE];
	for (int i = 0; i < 5; i++) {
		elf_hostile(img, i, CODE_SPIN);
		snprintf(files[i], sizeof(files[i]), "%s/%s", dir, hostile_names[i]);
		write_bytes(files[i], img, sizeof(img));
		args[i] = files[i];
	}
	args[5] = NULL;
	struct target t = hostile_start(args);

	snprintf(out, sizeof(out), "%s/snap", dir);
	const char *snap[] = {"--snapshot", NULL};
	bundle_run(t.pid, out, snap, "snapshot");
	expect_worker_survived(out, "snapshot");
	char *txt = member(out, "threads.txt");
	cr_assert(txt, "no threads.txt");
	for (int i = 0; i < 5; i++) {
		char want[128];
		snprintf(want, sizeof(want), "  %s+0x1000\n", hostile_names[i]);
		cr_expect(strstr(txt, want), "no frame '%s' in threads.txt:\n%s", want, txt);
	}
	free(txt);
	expect_target_ok(t.pid, "after the snapshot");

	snprintf(out, sizeof(out), "%s/sampled", dir);
	const char *sampled[] = {"-d", "1s", "-F", "99", NULL};
	bundle_run(t.pid, out, sampled, "sampling");
	expect_worker_survived(out, "sampling");
	expect_target_ok(t.pid, "after sampling");
	target_kill(&t);
	rm_rf(dir);
}

/* ---- E2 ---- */

/* E2: mutated copies of a real ELF (this suite's own target binary: with
 * CFI, symbols and DWARF), each mapped with a thread sleeping in a pause()
 * loop at offset 4096. Bytes are flipped mostly in the headers and section
 * tables, where parsers go wrong. Pass: no tool crash or hang, the bundle
 * verifies, the target is untouched. A worker crash is allowed (that is what
 * the sandbox is for) but reported with the seed. */
#define E2_BATCH 25

static uint32_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

static void mutate(uint8_t *img, size_t len, uint64_t *seed)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	uint64_t shoff = eh->e_shoff < len ? eh->e_shoff : len / 2;
	unsigned flips = 1 + rnd(seed) % 24;
	for (unsigned k = 0; k < flips; k++) {
		size_t at;
		switch (rnd(seed) % 4) {
		case 0:
			at = rnd(seed) % 64;
			break; /* ELF header */
		case 1:
			at = 64 + rnd(seed) % (CODE_OFF - 64);
			break; /* phdrs, notes, dynamic */
		case 2:
			at = shoff + rnd(seed) % (len - shoff);
			break; /* section headers */
		default:
			at = rnd(seed) % len;
			break; /* anywhere */
		}
		if (rnd(seed) % 3 == 0)
			img[at] = (uint8_t)rnd(seed); /* a new byte */
		else
			img[at] ^= (uint8_t)(1u << (rnd(seed) % 8)); /* one bit */
	}
	memcpy(img + CODE_OFF, pause_code, sizeof(pause_code));
}

Test(reliability_hostile, e2_mutated_elfs, .timeout = 1800)
{
	int total = rel_loops(50);
	const char *env_seed = getenv("DIAG_REL_SEED");
	uint64_t seed = env_seed ? strtoull(env_seed, NULL, 0) : (uint64_t)time(NULL);
	fprintf(stderr, "e2: %d mutated ELFs, DIAG_REL_SEED=%llu\n", total,
		(unsigned long long)seed);
	size_t base_len;
	uint8_t *base = (uint8_t *)read_file(target_path("reliability/hostile_target"), &base_len);
	cr_assert(base && base_len > 2 * CODE_OFF);
	char dir[256];
	make_tmpdir(dir, sizeof(dir));
	uint8_t *img = malloc(base_len);
	int worker_lost = 0;
	for (int done = 0, batch = 0; done < total; batch++) {
		static char files[E2_BATCH][320];
		const char *args[E2_BATCH + 1];
		int n = 0;
		for (; n < E2_BATCH && done < total; n++, done++) {
			memcpy(img, base, base_len);
			mutate(img, base_len, &seed);
			snprintf(files[n], sizeof(files[n]), "%s/m%04d.so", dir, done);
			write_bytes(files[n], img, base_len);
			args[n] = files[n];
		}
		args[n] = NULL;
		struct target t = hostile_start(args);
		char out[320];
		snprintf(out, sizeof(out), "%s/b%d", dir, batch);
		/* Snapshots, and one short sampling run for the first batch. */
		const char *snap[] = {"--snapshot", NULL};
		const char *sampled[] = {"-d", "1s", "-F", "49", NULL};
		struct run r = tool(t.pid, out, batch == 0 ? sampled : snap, 120000, NULL);
		char what[64];
		snprintf(what, sizeof(what), "e2 batch %d (seed printed above)", batch);
		expect_bundle(&r, out, what);
		run_free(&r);
		/* Every thread was found inside its file (a frame in it,
		 * symbolized or as module+offset). */
		char *txt = member(out, "threads.txt");
		for (int i = 0; i < n; i++) {
			char want[32];
			snprintf(want, sizeof(want), "m%04d.so", done - n + i);
			cr_expect(txt && strstr(txt, want), "%s: no frame in %s", what, want);
		}
		free(txt);
		cJSON *m = manifest_load(out);
		double restarts = number_at(m, "interpretation", "worker_restarts");
		cJSON_Delete(m);
		if (restarts > 0) {
			worker_lost += (int)restarts;
			fprintf(stderr,
				"e2: batch %d (files m%04d..): the worker was restarted %.0f "
				"time(s)\n",
				batch, done - n, restarts);
		}
		expect_target_ok(t.pid, what);
		target_kill(&t);
		for (int i = 0; i < n; i++)
			unlink(files[i]);
		rm_rf(out);
	}
	fprintf(stderr, "e2: worker restarts over all batches: %d\n", worker_lost);
	free(img);
	free(base);
	rm_rf(dir);
}

/* ---- E3 ---- */

/* The host marker must never be read: watch its inode for any open. */
static int watch_open(const char *path)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	cr_assert(fd >= 0);
	cr_assert(inotify_add_watch(fd, path, IN_OPEN | IN_ACCESS) >= 0);
	return fd;
}

static bool was_opened(int fd)
{
	char buf[4096];
	return read(fd, buf, sizeof(buf)) > 0;
}

/*
 * E3: a container (own mount namespace, pivot_root into a directory the
 * test populated) whose absolute paths name host files:
 *   A: lib/x.so -> /HOST/host_marker (absolute symlink). Inside the
 *      container that is the container's own ELF (function container_a);
 *      maps, read from the host, says /HOST/host_marker, which on the host
 *      is the marker (an ELF whose function is named by the marker).
 *   B: sub/y.so (function container_b) is mapped, then the container mounts
 *      a tmpfs over sub/ holding y.so -> /HOST/host_marker: following the
 *      path through /proc/PID/root now leads to the host's marker.
 *   C: A's file has a .gnu_debuglink "dbg.debug" (with the marker's CRC)
 *      and the container's dbg.debug is a symlink to /HOST/host_marker.
 * Pass: the marker is never opened (inotify on its inode; and no
 * open/openat of its bare path under strace, when strace is installed), its
 * name never appears in the bundle (with --with-binaries, all members,
 * gunzipped), and the container's own functions are found.
 */
Test(reliability_hostile, e3_container_symlink_escape, .timeout = 300)
{
	char host[256], root[300], marker[320], path[2048], out[320], log[320];
	make_tmpdir(host, sizeof(host));
	char marker_fn[64];
	snprintf(marker_fn, sizeof(marker_fn), "diag_host_marker_%d_%ld", (int)getpid(),
		 (long)time(NULL));
	uint8_t img[IMG_SIZE];

	/* The host's marker file: an ELF too, so that a tool that reads it
	 * would print its function. */
	struct elf_spec hs = {.code = CODE_PAUSE, .symbol = marker_fn};
	elf_valid(img, &hs);
	snprintf(marker, sizeof(marker), "%s/host_marker", host);
	write_bytes(marker, img, sizeof(img));
	uint32_t marker_crc = (uint32_t)crc32(0, img, sizeof(img));

	/* The container's root: the same absolute paths, its own files. */
	snprintf(root, sizeof(root), "%s/root", host);
	snprintf(path, sizeof(path), "mkdir -p '%s%s' '%s/lib' '%s%s/sub'", root, host, root, root,
		 host);
	cr_assert_eq(system(path), 0);
	struct elf_spec ca = {.code = CODE_PAUSE,
			      .symbol = "container_a",
			      .debuglink = "dbg.debug",
			      .debuglink_crc = marker_crc};
	elf_valid(img, &ca);
	snprintf(path, sizeof(path), "%s%s/host_marker", root, host);
	write_bytes(path, img, sizeof(img));
	struct elf_spec cb = {.code = CODE_PAUSE, .symbol = "container_b"};
	elf_valid(img, &cb);
	snprintf(path, sizeof(path), "%s%s/sub/y.so", root, host);
	write_bytes(path, img, sizeof(img));
	snprintf(path, sizeof(path), "%s/lib/x.so", root);
	cr_assert_eq(symlink(marker, path), 0);
	snprintf(path, sizeof(path), "%s%s/dbg.debug", root, host);
	cr_assert_eq(symlink(marker, path), 0);

	char sub[320], plant[400], ypath[320];
	snprintf(sub, sizeof(sub), "%s/sub", host);
	snprintf(plant, sizeof(plant), "link:y.so:%s", marker);
	snprintf(ypath, sizeof(ypath), "%s/sub/y.so", host);
	const char *args[] = {"--root", root,	     "--overmount", sub, "--plant",
			      plant,	"/lib/x.so", ypath,	    NULL};
	struct target t = hostile_start_ns(args);

	int wfd = watch_open(marker);
	bool strace = have_program("strace");
	if (!strace)
		fprintf(stderr, "e3: strace not installed: the open log part is skipped\n");
	snprintf(out, sizeof(out), "%s/bundle", host);
	snprintf(log, sizeof(log), "%s/strace.log", host);
	const char *snap[] = {"--snapshot", "--with-binaries", NULL};
	struct run r = tool(t.pid, out, snap, 120000, strace ? log : NULL);
	expect_bundle(&r, out, "snapshot");
	cr_expect(!r.out || !strstr(r.out, marker_fn), "the marker's function on stdout");
	cr_expect(!r.err || !strstr(r.err, marker_fn), "the marker's function on stderr");
	run_free(&r);
	cr_expect(!was_opened(wfd), "the host marker %s was opened during the capture", marker);

	char *hit = bundle_find(out, marker_fn);
	cr_expect(!hit, "the host marker's content is in bundle member %s", hit);
	free(hit);
	char *txt = member(out, "threads.txt");
	cr_expect(txt && strstr(txt, "container_a+0x7"), "container A's function not found:\n%s",
		  txt);
	cr_expect(txt && strstr(txt, "container_b+0x7"), "container B's function not found:\n%s",
		  txt);
	free(txt);

	if (strace) {
		/* No open of the bare host path: `open("/HOST/host_marker"` or
		 * `openat(AT_FDCWD, "/HOST/host_marker"`. */
		char *slog = read_file(log, NULL);
		char bare1[400], bare2[400];
		snprintf(bare1, sizeof(bare1), "open(\"%s\"", marker);
		snprintf(bare2, sizeof(bare2), "AT_FDCWD, \"%s\"", marker);
		const char *l1 = slog ? find_line(slog, bare1) : NULL;
		const char *l2 = slog ? find_line(slog, bare2) : NULL;
		cr_expect(slog, "no strace log");
		size_t opens = 0;
		for (const char *q = slog; q && (q = strstr(q, "open")); q++)
			opens++;
		fprintf(stderr, "e3: %zu open calls of diag-attach under strace checked\n", opens);
		cr_expect(!l1 && !l2, "diag-attach opened the host path: %.200s", l1 ? l1 : l2);
		free(slog);
	}
	close(wfd);
	expect_target_ok(t.pid, "after the capture");
	target_kill(&t);
	rm_rf(host);
}

/* ---- E4 ---- */

static void e4_capture_both(pid_t pid, const char *dir, const char *what)
{
	char out[320];
	snprintf(out, sizeof(out), "%s/snap", dir);
	const char *snap[] = {"--snapshot", "--with-binaries", NULL};
	/* A hang on the FIFO would show as a timeout here, or (bounded by the
	 * worker's own 10 s deadline) as a worker restart. */
	struct run r = tool(pid, out, snap, 60000, NULL);
	expect_bundle(&r, out, what);
	run_free(&r);
	expect_worker_survived(out, what);
	char *txt = member(out, "threads.txt");
	for (int i = 0; i < 3; i++) {
		char want[32];
		snprintf(want, sizeof(want), "%c.so+0x1007", 'a' + i);
		cr_expect(txt && strstr(txt, want), "%s: no frame %s in threads.txt:\n%s", what,
			  want, txt);
	}
	free(txt);

	snprintf(out, sizeof(out), "%s/sampled", dir);
	const char *sampled[] = {"-d", "1s", "-F", "49", NULL};
	r = tool(pid, out, sampled, 60000, NULL);
	expect_bundle(&r, out, what);
	run_free(&r);
	expect_worker_survived(out, what);
	expect_target_ok(pid, what);
}

/* E4, as on a host: the mapped files are replaced on disk by a FIFO, a
 * symlink to /dev/zero and a 100 GiB sparse file. maps then says
 * "PATH (deleted)", and a path with that very suffix gets the same hostile
 * objects, for readers that take the maps text literally. */
Test(reliability_hostile, e4_fifo_devzero_sparse_replaced, .timeout = 300)
{
	char dir[256], files[3][320], path[400];
	make_tmpdir(dir, sizeof(dir));
	uint8_t img[IMG_SIZE];
	struct elf_spec s = {.code = CODE_PAUSE};
	elf_valid(img, &s);
	const char *args[4];
	for (int i = 0; i < 3; i++) {
		snprintf(files[i], sizeof(files[i]), "%s/%c.so", dir, 'a' + i);
		write_bytes(files[i], img, sizeof(img));
		args[i] = files[i];
	}
	args[3] = NULL;
	struct target t = hostile_start(args);
	for (int suffix = 0; suffix < 2; suffix++) {
		for (int i = 0; i < 3; i++) {
			snprintf(path, sizeof(path), "%s%s", files[i], suffix ? " (deleted)" : "");
			unlink(path);
			if (i == 0) {
				cr_assert_eq(mkfifo(path, 0600), 0);
			} else if (i == 1) {
				cr_assert_eq(symlink("/dev/zero", path), 0);
			} else {
				int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0700);
				cr_assert(fd >= 0 && ftruncate(fd, 100ll << 30) == 0,
					  "100 GiB sparse file: %s", strerror(errno));
				close(fd);
			}
		}
	}
	e4_capture_both(t.pid, dir, "e4 replaced");
	target_kill(&t);
	rm_rf(dir);
}

/* E4, as in a container that changes its files under us: the paths in maps
 * are not deleted, but a tmpfs mounted over their directory (in the
 * target's mount namespace, which /proc/PID/root leads into) now holds a
 * FIFO, a symlink to /dev/zero and a 100 GiB sparse file under those names. */
Test(reliability_hostile, e4_fifo_devzero_sparse_overmounted, .timeout = 300)
{
	char dir[256], sub[320], files[3][400];
	make_tmpdir(dir, sizeof(dir));
	snprintf(sub, sizeof(sub), "%s/m", dir);
	cr_assert_eq(mkdir(sub, 0755), 0);
	uint8_t img[IMG_SIZE];
	struct elf_spec s = {.code = CODE_PAUSE};
	elf_valid(img, &s);
	const char *args[16] = {"--overmount", sub,	     "--plant",
				"fifo:a.so",   "--plant",    "link:b.so:/dev/zero",
				"--plant",     "sparse:c.so"};
	for (int i = 0; i < 3; i++) {
		snprintf(files[i], sizeof(files[i]), "%s/%c.so", sub, 'a' + i);
		write_bytes(files[i], img, sizeof(img));
		args[8 + i] = files[i];
	}
	args[11] = NULL;
	struct target t = hostile_start_ns(args);
	e4_capture_both(t.pid, dir, "e4 overmounted");
	target_kill(&t);
	rm_rf(dir);
}

/* ---- E5 ---- */

/* The frames of threads.txt that lie in module `module`, one per line. */
static char *frames_in(const char *txt, const char *module)
{
	char *res = calloc(1, strlen(txt) + 1);
	char suffix[128];
	snprintf(suffix, sizeof(suffix), "  %s", module);
	for (const char *l = txt; *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		size_t sl = strlen(suffix);
		if (l[0] == '#' && n > sl && memcmp(l + n - sl, suffix, sl) == 0) {
			/* "#N 0xPC  function+0xOFF ...": keep from the function on. */
			const char *pc = strstr(l, " 0x");
			const char *fn = pc ? strstr(pc, "  ") : NULL;
			if (fn && fn < l + n) {
				strncat(res, fn + 2, (size_t)(l + n - fn - 2));
				strcat(res, "\n");
			}
		}
		l += n + (nl ? 1 : 0);
	}
	return res;
}

static char *build_id_of(const char *dir)
{
	cJSON *m = manifest_load(dir);
	cJSON *t = m ? cJSON_GetObjectItem(m, "target") : NULL;
	cJSON *b = t ? cJSON_GetObjectItem(t, "build_id") : NULL;
	char *id = strdup(cJSON_IsString(b) ? b->valuestring : "");
	cJSON_Delete(m);
	return id;
}

static void e5_expect_same(const char *expected_dir, const char *dir, const char *orig_copy,
			   const char *what)
{
	char *want_id = build_id_of(expected_dir), *got_id = build_id_of(dir);
	cr_expect(want_id[0], "%s: the original has no build-id", what);
	cr_expect_str_eq(got_id, want_id, "%s: build-id of the replacement reported", what);
	char *a = member(expected_dir, "threads.txt"), *b = member(dir, "threads.txt");
	char *fa = frames_in(a ? a : "", "app"), *fb = frames_in(b ? b : "", "app");
	cr_expect(strstr(fa, "main+"), "%s: the original's frames lack main:\n%s", what, a);
	cr_expect(strstr(fb, "main+"), "%s: main is gone:\n%s", what, b);
	/* Every frame shown in app is one the original showed: nothing comes
	 * from the new file. (The unwinding past app may stop earlier: CFI is
	 * read from the file, and the file is gone.) */
	for (char *l = fb, *nl; *l; l = nl + 1) {
		nl = strchr(l, '\n');
		*nl = '\0';
		cr_expect(strstr(fa, l), "%s: frame '%s' is not one of the original's:\n%s", what,
			  l, fa);
		*nl = '\n';
	}
	/* --with-binaries copied what ran, not what is on disk now. */
	char path[700];
	snprintf(path, sizeof(path), "%s/binaries/%s/app", dir, want_id);
	size_t l1, l2;
	char *copied = read_file(path, &l1), *orig = read_file(orig_copy, &l2);
	cr_expect(copied && orig && l1 == l2 && memcmp(copied, orig, l1) == 0,
		  "%s: binaries/%s/app is not the binary that ran", what, want_id);
	free(copied);
	free(orig);
	free(fa);
	free(fb);
	free(a);
	free(b);
	free(want_id);
	free(got_id);
}

/* E5, deploy style: a copy of the target runs as D/app; D/app is then
 * replaced (rename over it) by a different program. Snapshots before and
 * after agree on the build-id and on every frame in app. */
/* The end of an E5 test: e5_expect_same, the target healthy, then it is
 * killed and dir removed. */
static void e5_finish(struct target *t, const char *expected_dir, const char *got_dir,
		      const char *orig_copy, const char *what, const char *dir)
{
	e5_expect_same(expected_dir, got_dir, orig_copy, what);
	expect_target_ok(t->pid, "e5");
	target_kill(t);
	rm_rf(dir);
}

Test(reliability_hostile, e5_binary_replaced_renamed, .timeout = 300)
{
	char dir[256], app[320], orig[320], repl[320], before[320], after[320];
	make_tmpdir(dir, sizeof(dir));
	snprintf(app, sizeof(app), "%s/app", dir);
	snprintf(orig, sizeof(orig), "%s/app.orig", dir);
	snprintf(repl, sizeof(repl), "%s/app.new", dir);
	copy_file(target_path("reliability/hostile_target"), app);
	copy_file(app, orig);
	const char *argv[] = {app, NULL};
	struct target t = target_start(argv, "ready");
	snprintf(before, sizeof(before), "%s/before", dir);
	const char *snap[] = {"--snapshot", "--with-binaries", NULL};
	bundle_run(t.pid, before, snap, "before");
	copy_file(target_path("reliability/rel_target"), repl);
	cr_assert_eq(rename(repl, app), 0);
	snprintf(after, sizeof(after), "%s/after", dir);
	bundle_run(t.pid, after, snap, "after");
	e5_finish(&t, before, after, orig, "renamed over", dir);
}

/* E5, without "(deleted)": the target's own mount namespace gets a tmpfs
 * over bin/ with a different program at bin/app, so the path in maps names
 * a live, different file. Compared with a run of the same copy without the
 * swap. */
Test(reliability_hostile, e5_binary_replaced_overmounted, .timeout = 300)
{
	char dir[256], bin[320], app[400], orig[320], plant[400], control[320], swapped[320];
	make_tmpdir(dir, sizeof(dir));
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	cr_assert_eq(mkdir(bin, 0755), 0);
	snprintf(app, sizeof(app), "%s/app", bin);
	snprintf(orig, sizeof(orig), "%s/app.orig", dir);
	copy_file(target_path("reliability/hostile_target"), app);
	copy_file(app, orig);
	const char *snap[] = {"--snapshot", "--with-binaries", NULL};

	const char *argv1[] = {app, NULL};
	struct target t = target_start(argv1, "ready");
	snprintf(control, sizeof(control), "%s/control", dir);
	bundle_run(t.pid, control, snap, "control");
	target_kill(&t);

	if (geteuid() != 0)
		cr_skip_test("needs root: the target makes a mount namespace");
	snprintf(plant, sizeof(plant), "copy:app:%s", target_path("reliability/rel_target"));
	const char *argv2[] = {app, "--overmount", bin, "--plant", plant, NULL};
	t = target_start(argv2, "ready");
	snprintf(swapped, sizeof(swapped), "%s/swapped", dir);
	bundle_run(t.pid, swapped, snap, "swapped");
	e5_finish(&t, control, swapped, orig, "overmounted", dir);
}

/* ---- E6 ---- */

static const char jwt[] = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
			  "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6Ikh1bnRlciJ9."
			  "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";

static void e6_set_env(void)
{
	setenv("AWS_SECRET_ACCESS_KEY", "hunter5", 1);
	setenv("GITHUB_TOKEN", "hunter6", 1);
	setenv("APP_CONTEXT", jwt, 1);
	setenv("DATABASE_URL", "postgres://app:hunter7@db.internal/prod", 1);
	setenv("JAVA_TOOL_OPTIONS", "-Xmx1g -Djavax.net.ssl.keyStorePassword=hunter8", 1);
	setenv("E6_HARMLESS", "visible-value", 1);
}

static void e6_check(const char *out, const struct run *r, bool environ_recorded)
{
	char *hit = bundle_find(out, "hunter");
	cr_expect(!hit, "a secret is in bundle member %s", hit);
	free(hit);
	hit = bundle_find(out, jwt);
	cr_expect(!hit, "the JWT is in bundle member %s", hit);
	free(hit);
	cr_expect(!r->out || !strstr(r->out, "hunter"), "a secret on stdout");
	cr_expect(!r->err || !strstr(r->err, "hunter"), "a secret on stderr");

	cJSON *m = manifest_load(out);
	cJSON *t = m ? cJSON_GetObjectItem(m, "target") : NULL;
	cJSON *argv = t ? cJSON_GetObjectItem(t, "argv") : NULL;
	char *argv_s = argv ? cJSON_PrintUnformatted(argv) : NULL;
	cr_expect(argv_s && strstr(argv_s, "\"--password=[REDACTED]\"") &&
			  strstr(argv_s, "\"--token\",\"[REDACTED]\"") &&
			  strstr(argv_s, "postgres://u:[REDACTED]@h/db"),
		  "argv not redacted as expected: %s", argv_s);
	free(argv_s);
	cJSON *env = t ? cJSON_GetObjectItem(t, "environ") : NULL;
	if (!environ_recorded) {
		cr_expect(!env, "environ recorded without --record-environ");
	} else {
		char *env_s = env ? cJSON_PrintUnformatted(env) : NULL;
		cr_expect(cJSON_IsArray(env), "no environ array with --record-environ");
		static const char *const want[] = {
			"\"AWS_SECRET_ACCESS_KEY=[REDACTED]\"",
			"\"GITHUB_TOKEN=[REDACTED]\"",
			"\"APP_CONTEXT=[REDACTED]\"",
			"postgres://app:[REDACTED]@db.internal/prod",
			"keyStorePassword=[REDACTED]",
			"\"E6_HARMLESS=visible-value\"",
		};
		for (size_t i = 0; env_s && i < sizeof(want) / sizeof(want[0]); i++)
			cr_expect(strstr(env_s, want[i]), "environ lacks %s: %s", want[i], env_s);
		free(env_s);
	}
	cJSON_Delete(m);
}

/* E6: secrets in argv (all three forms) and in the environment. The bundle
 * never holds them, with or without --record-environ; environ is recorded
 * only when asked, keys kept, values [REDACTED]. */
Test(reliability_hostile, e6_secrets, .timeout = 300)
{
	e6_set_env();
	const char *args[] = {"--",	 "--password=hunter2",	      "--token",
			      "hunter3", "postgres://u:hunter4@h/db", NULL};
	struct target t = hostile_start(args);
	char dir[256], out[320];
	make_tmpdir(dir, sizeof(dir));

	snprintf(out, sizeof(out), "%s/plain", dir);
	const char *snap[] = {"--snapshot", NULL};
	struct run r = tool(t.pid, out, snap, 60000, NULL);
	expect_bundle(&r, out, "without --record-environ");
	e6_check(out, &r, false);
	run_free(&r);

	snprintf(out, sizeof(out), "%s/environ", dir);
	const char *with_env[] = {"--snapshot", "--record-environ", NULL};
	r = tool(t.pid, out, with_env, 60000, NULL);
	expect_bundle(&r, out, "with --record-environ");
	e6_check(out, &r, true);
	run_free(&r);

	snprintf(out, sizeof(out), "%s/sampled", dir);
	const char *sampled[] = {"-d", "1s", "--record-environ", NULL};
	r = tool(t.pid, out, sampled, 60000, NULL);
	expect_bundle(&r, out, "sampled with --record-environ");
	e6_check(out, &r, true);
	run_free(&r);

	expect_target_ok(t.pid, "e6");
	target_kill(&t);
	rm_rf(dir);
}

/* E6: argv and environ with terminal escapes, newlines, quotes, backslashes
 * and invalid UTF-8: manifest.json is still JSON, and UTF-8; valid strings
 * come back exactly. */
Test(reliability_hostile, e6_hostile_argv_is_valid_json, .timeout = 300)
{
	static const char *const hostile[] = {
		"\x1b[31mred\x1b[0m\x07",
		"two\nlines\r\n",
		"bad\xff\xfeutf8\xc3",
		"q\"uote\\back",
		"tab\there",
		"\xc3\xa9t\xc3\xa9 \xe2\x82\xac",
		"\x7f\x01",
	};
	setenv("E6_HOSTILE", "\x1b]0;title\x07\xff\n", 1);
	const char *args[16] = {"--"};
	for (size_t i = 0; i < 7; i++)
		args[1 + i] = hostile[i];
	args[8] = NULL;
	struct target t = hostile_start(args);
	char dir[256], out[320], path[400];
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/b", dir);
	const char *snap[] = {"--snapshot", "--record-environ", NULL};
	bundle_run(t.pid, out, snap, "hostile argv");
	snprintf(path, sizeof(path), "%s/manifest.json", out);
	expect_json_file(path);
	cJSON *m = manifest_load(out);
	cJSON *argv = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "target"), "argv");
	cr_assert(cJSON_IsArray(argv) && cJSON_GetArraySize(argv) == 9, "argv: %s",
		  argv ? cJSON_PrintUnformatted(argv) : "(none)");
	for (int i = 0; i < 7; i++) {
		const char *got = cJSON_GetArrayItem(argv, 2 + i)->valuestring;
		size_t bad;
		if (utf8_valid((const unsigned char *)hostile[i], strlen(hostile[i]), &bad))
			cr_expect_str_eq(got, hostile[i], "argv[%d] changed", 2 + i);
		else
			cr_expect(strstr(got, "bad") && strstr(got, "utf8"), "argv[%d]: %s", 2 + i,
				  got);
	}
	cJSON_Delete(m);
	expect_target_ok(t.pid, "e6 json");
	target_kill(&t);
	rm_rf(dir);
}

/* ---- E8 ---- */

/* How the tool must print the hostile names: ") R 1 (" as is; control
 * bytes and invalid UTF-8 escaped, so one thread is one line. */
static const char *const e8_names[] = {
	") R 1 (",
	"nl\\nname",
	"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\\xe2",
};

static int count_threads(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	char *st = read_file(path, NULL);
	const char *t = st ? strstr(st, "\nThreads:") : NULL;
	int n = t ? atoi(t + 9) : -1;
	free(st);
	return n;
}

static bool has_label(const Perftools__Profiles__Profile *p, const char *key, const char *value)
{
	for (size_t i = 0; i < p->n_sample; i++)
		for (size_t k = 0; k < p->sample[i]->n_label; k++) {
			const Perftools__Profiles__Label *l = p->sample[i]->label[k];
			const char *kk = pprof_str(p, l->key), *vv = pprof_str(p, l->str);
			if (kk && vv && strcmp(kk, key) == 0 && strcmp(vv, value) == 0)
				return true;
		}
	return false;
}

static void e8_check_profile(const char *dir, const char *name)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	Perftools__Profiles__Profile *p = NULL;
	cr_assert_eq(pprof_read_file(path, &p), 0, "cannot read %s", path);
	for (size_t i = 0; i < 3; i++)
		cr_expect(has_label(p, "thread_comm", e8_names[i]), "%s: no thread_comm label '%s'",
			  name, e8_names[i]);
	/* The mapping keeps the real path: pprof looks binaries up by it. */
	bool spaced = false, newline = false;
	for (size_t i = 0; i < p->n_mapping; i++) {
		const char *f = pprof_str(p, p->mapping[i]->filename);
		spaced |= f && strstr(f, "/with space.so");
		newline |= f && strstr(f, "/new\nline.so");
	}
	cr_expect(spaced && newline, "%s: mappings with hostile paths missing", name);
	perftools__profiles__profile__free_unpacked(p, NULL);
}

/* E8: threads named ") R 1 (", "nl\nname" and a UTF-8 name cut in the
 * middle of a character (the process's comm too), and mapped paths with a
 * space, a newline (maps: \012) and " (deleted)". threads.txt has one line
 * per thread header and escapes the names; the profiles carry the same
 * names; manifest.json and report --json are JSON and UTF-8. */
Test(reliability_hostile, e8_hostile_names_and_paths, .timeout = 300)
{
	char dir[256], files[3][320], out[320], path[400];
	make_tmpdir(dir, sizeof(dir));
	uint8_t img[IMG_SIZE];
	struct elf_spec s = {.code = CODE_PAUSE};
	elf_valid(img, &s);
	static const char *const base[] = {"with space.so", "new\nline.so", "gone.so"};
	for (int i = 0; i < 3; i++) {
		snprintf(files[i], sizeof(files[i]), "%s/%s", dir, base[i]);
		write_bytes(files[i], img, sizeof(img));
	}
	const char *args[] = {"--names", files[0], files[1], "--unlink", files[2], NULL};
	struct target t = hostile_start(args);
	int nthreads = count_threads(t.pid);

	snprintf(out, sizeof(out), "%s/snap", dir);
	const char *snap[] = {"--snapshot", NULL};
	bundle_run(t.pid, out, snap, "snapshot");
	char *txt = member(out, "threads.txt");
	cr_assert(txt);
	int headers = 0;
	for (const char *l = txt; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		headers += strncmp(l, "Thread ", 7) == 0;
	cr_expect_eq(headers, nthreads, "%d thread headers for %d threads:\n%s", headers, nthreads,
		     txt);
	for (size_t i = 0; i < 3; i++) {
		char want[64];
		snprintf(want, sizeof(want), "\"%s\" (state", e8_names[i]);
		cr_expect(strstr(txt, want), "no header with %s:\n%s", want, txt);
	}
	cr_expect(strstr(txt, "  with space.so+0x1007\n"), "no frame in 'with space.so':\n%s", txt);
	cr_expect(strstr(txt, "  new\\nline.so+0x1007\n"), "no frame in 'new\\nline.so':\n%s", txt);
	cr_expect(strstr(txt, "  gone.so+0x1007\n"), "no frame in the deleted gone.so:\n%s", txt);
	free(txt);
	e8_check_profile(out, "threads.pprof");
	snprintf(path, sizeof(path), "%s/manifest.json", out);
	expect_json_file(path);

	/* report --json reads the names back out of the profiles. */
	struct tool_result rep;
	const char *rargs[] = {"report", "--json", out, NULL};
	tool_run(&rep, rargs);
	cr_expect_eq(rep.exit_code, 0, "report --json: %s", rep.err);
	snprintf(path, sizeof(path), "%s/report.json", dir);
	write_bytes(path, rep.out, strlen(rep.out));
	expect_json_file(path);

	snprintf(out, sizeof(out), "%s/sampled", dir);
	const char *sampled[] = {"-d", "1s", "-F", "49", NULL};
	bundle_run(t.pid, out, sampled, "sampling");
	e8_check_profile(out, "wall.pprof");
	snprintf(path, sizeof(path), "%s/manifest.json", out);
	expect_json_file(path);
	expect_target_ok(t.pid, "e8");
	target_kill(&t);
	rm_rf(dir);
}

/* ---- E9 ---- */

/* A real attack on the operator's terminal: python3 names its threads
 * with an OSC title-set and a clear-screen CSI (ESC), a C1 CSI (U+009B)
 * and a bidi override (U+202E). Nothing of them reaches stdout or stderr
 * raw from capture, report, diff or top, nor threads.txt. */
static const char e9_script[] =
	"import ctypes, threading, sys, time\n"
	"libc = ctypes.CDLL(None)\n"
	"def name(b):\n"
	"    libc.prctl(15, ctypes.c_char_p(b), 0, 0, 0)\n"
	"def park(b):\n"
	"    name(b)\n"
	"    while True: time.sleep(1)\n"
	"for b in (b'\\x1b]0;pwn\\x07\\x1b[2J', b'c1\\xc2\\x9b2J', b'bidi\\xe2\\x80\\xaeexe'):\n"
	"    threading.Thread(target=park, args=(b,), daemon=True).start()\n"
	"name(b'\\x1b[31mred')\n"
	"time.sleep(0.3)\n"
	"print('ready', flush=True)\n"
	"while True: time.sleep(1)\n";

static bool raw_terminal_control(const char *s)
{
	return s && (strchr(s, '\x1b') || strstr(s, "\xc2\x9b") || strstr(s, "\xe2\x80\xae"));
}

static void e9_expect_clean(const char *what, const struct tool_result *r)
{
	cr_expect(!raw_terminal_control(r->out), "%s: raw control on stdout:\n%s", what, r->out);
	cr_expect(!raw_terminal_control(r->err), "%s: raw control on stderr:\n%s", what, r->err);
}

Test(reliability_hostile, e9_names_never_reach_the_terminal_raw, .timeout = 300)
{
	const char *argv[] = {"/usr/bin/python3", "-c", e9_script, NULL};
	struct target t = target_start(argv, "ready");
	char dir[256], snap[320], sampled[320], pid[16];
	make_tmpdir(dir, sizeof(dir));
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	snprintf(sampled, sizeof(sampled), "%s/sampled", dir);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result r;
	const char *a1[] = {"-p", pid, "--snapshot", "-o", snap, NULL};
	tool_run(&r, a1);
	cr_assert_eq(r.exit_code, 0, "snapshot: %s", r.err);
	e9_expect_clean("snapshot", &r);
	const char *a2[] = {"-p", pid, "-d", "1s", "-F", "49", "-o", sampled, NULL};
	tool_run(&r, a2);
	cr_assert_eq(r.exit_code, 0, "sampling: %s", r.err);
	e9_expect_clean("sampling", &r);
	char *txt = read_in(snap, "threads.txt");
	cr_assert(txt);
	cr_expect(!raw_terminal_control(txt), "threads.txt holds a raw control:\n%s", txt);
	cr_expect(strstr(txt, "\\u202e") && strstr(txt, "\\u009b") && strstr(txt, "\\x1b"),
		  "the names are not shown escaped:\n%s", txt);
	free(txt);
	const char *reports[][4] = {{"report", snap, NULL}, {"report", sampled, NULL},
				    {"diff", snap, sampled, NULL}};
	for (size_t i = 0; i < 3; i++) {
		tool_run(&r, reports[i]);
		cr_expect(r.exit_code == 0 || r.exit_code == 1, "%s: exit %d: %s", reports[i][0],
			  r.exit_code, r.err);
		e9_expect_clean(reports[i][0], &r);
	}
	const char *top[] = {"top", "-p", pid, "-n", "1", NULL};
	tool_run(&r, top);
	cr_expect_eq(r.exit_code, 0, "top: %s", r.err);
	e9_expect_clean("top", &r);
	cr_expect(strstr(r.out, "\\x1b[31mred"), "top does not show the escaped name:\n%s", r.out);
	expect_target_ok(t.pid, "e9");
	target_kill(&t);
	rm_rf(dir);
}

/* Issue 54 item 3: export --format collapsed prints names as the text
 * report does. hostile_target --jit: a thread named "\x1b[31mjit\u202eevil"
 * blocked in anonymous code that /tmp/perf-PID.map names
 * "jit_\x1b[31mred\x1b[0m_\u202eevil". The symbol reaches the profile raw
 * (names are the bundle's data); the export escapes it. */
Test(reliability_hostile, e9_export_collapsed_escapes_jit_names, .timeout = 300)
{
#if !defined(__x86_64__)
	cr_skip_test("hostile_target --jit runs x86-64 code");
#endif
	const char *args[] = {"--jit", NULL};
	struct target t = hostile_start(args);
	char dir[256], out[320], map[64];
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)t.pid);
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/sampled", dir);
	const char *sampled[] = {"-d", "1s", "-F", "49", NULL};
	bundle_run(t.pid, out, sampled, "sampling");
	expect_target_ok(t.pid, "e9 jit");
	target_kill(&t);
	unlink(map);

	struct tool_result r;
	const char *per_thread[] = {"export", "--format", "collapsed", "--profile", "wall",
				    "--per-thread", out, NULL};
	tool_run(&r, per_thread);
	cr_assert_eq(r.exit_code, 0, "export: exit %d: %s", r.exit_code, r.err);
	e9_expect_clean("export --format collapsed --per-thread", &r);
	cr_expect(strstr(r.out, ";jit_\\x1b[31mred\\x1b[0m_\\u202eevil"),
		  "the perf map's name is not shown escaped:\n%s", r.out);
	/* The label is stored escaped, and escaped again as any name read
	 * from a bundle is (report shows it so too). */
	cr_expect(strstr(r.out, "x1b[31mjit") && strstr(r.out, "u202eevil/"),
		  "the thread's name is not shown escaped:\n%s", r.out);
	const char *plain[] = {"export", "-f", "collapsed", "--profile", "wall", out, NULL};
	tool_run(&r, plain);
	cr_assert_eq(r.exit_code, 0, "export: exit %d: %s", r.exit_code, r.err);
	e9_expect_clean("export --format collapsed", &r);
	cr_expect(strstr(r.out, "jit_\\x1b[31mred\\x1b[0m_\\u202eevil"), "%s", r.out);
	rm_rf(dir);
}

/* ---- D8 ---- */

/* D8: a process that made itself non-dumpable (PR_SET_DUMPABLE 0) asked
 * not to be inspected. Even as root, diag-attach refuses it (its own exit
 * status, nothing created, the target never traced) unless --force is
 * given. The target runs as nobody: for a process whose uid is root, the
 * kernel shows nothing from outside that tells (/proc/PID is root's either
 * way, and every access check needs CAP_SYS_PTRACE against root anyway). */
Test(reliability_hostile, d8_non_dumpable_refused_unless_forced, .timeout = 300)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: the target drops to another uid");
	char dir[256], out[320], file[320];
	make_tmpdir(dir, sizeof(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	uint8_t img[IMG_SIZE];
	struct elf_spec s = {.code = CODE_PAUSE};
	elf_valid(img, &s);
	snprintf(file, sizeof(file), "%s/f.so", dir);
	write_bytes(file, img, sizeof(img));
	const char *args[] = {"--user", "65534", "--no-dump", file, NULL};
	struct target t = hostile_start(args);

	snprintf(out, sizeof(out), "%s/refused", dir);
	const char *snap[] = {"--snapshot", NULL};
	struct run r = tool(t.pid, out, snap, 60000, NULL);
	cr_expect_eq(r.code, EXIT_NOT_DUMPABLE, "exit %d for a non-dumpable target: %s", r.code,
		     r.err);
	cr_expect(r.err && strstr(r.err, "dumpable") && strstr(r.err, "--force"),
		  "message does not explain the refusal: %s", r.err);
	run_free(&r);
	struct stat st;
	cr_expect(lstat(out, &st) < 0, "a refused capture created %s", out);
	expect_target_ok(t.pid, "refused");

	const char *sampled[] = {"-d", "1s", NULL};
	r = tool(t.pid, out, sampled, 60000, NULL);
	cr_expect_eq(r.code, EXIT_NOT_DUMPABLE, "sampling: exit %d for a non-dumpable target: %s",
		     r.code, r.err);
	run_free(&r);
	cr_expect(lstat(out, &st) < 0, "a refused capture created %s", out);

	snprintf(out, sizeof(out), "%s/forced", dir);
	const char *forced[] = {"--snapshot", "--force", NULL};
	bundle_run(t.pid, out, forced, "--force");
	cJSON *m = manifest_load(out);
	cJSON *d = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "target"), "dumpable");
	cr_expect(cJSON_IsFalse(d), "the manifest does not say the target was not dumpable");
	cJSON_Delete(m);
	char *txt = member(out, "threads.txt");
	cr_expect(txt && strstr(txt, "f.so+0x1007"), "forced snapshot lacks the thread:\n%s", txt);
	free(txt);
	expect_target_ok(t.pid, "forced");
	target_kill(&t);

	/* The same process, dumpable: captured without --force (the control). */
	const char *args2[] = {"--user", "65534", file, NULL};
	t = hostile_start(args2);
	snprintf(out, sizeof(out), "%s/dumpable", dir);
	bundle_run(t.pid, out, snap, "dumpable control");
	m = manifest_load(out);
	cr_expect(!cJSON_GetObjectItem(cJSON_GetObjectItem(m, "target"), "dumpable"),
		  "a dumpable target marked as not dumpable");
	cJSON_Delete(m);
	target_kill(&t);
	rm_rf(dir);
}
