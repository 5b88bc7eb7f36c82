/*
 * Reliability, part F: bundle integrity (reliability.md section 4, F1-F5),
 * and C5 (the tool's stdout cannot be written).
 *
 * A bundle is a directory whose manifest.json is written last (temp file,
 * fsync, rename); a directory without one is a partial capture, never a
 * bundle (README). So the invariant checked everywhere here is: after any
 * failure, any kill, at any write, the output is absent, or has no
 * manifest.json (and no manifest.json.tmp, and verify refuses it), or has
 * one and `diag-attach verify` passes. Exit 0 always comes with a bundle
 * that verifies; exit 10 (write failed) never with a manifest.
 *
 * Small file systems are private tmpfs mounts: the test process unshares
 * its mount namespace (criterion runs each test in its own process), and
 * the tool, its child, sees them. Needs root (CAP_SYS_ADMIN); skips when
 * that is refused. tmpfs counts space in whole pages, so "N bytes left"
 * sweeps move in pages; RLIMIT_FSIZE (F3) limits in bytes.
 *
 * $DIAG_REL_LOOPS sets the number of sweep points (F2, F3) and of kills
 * (F4).
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "rel_shared.h"

#define PAGE		  4096ull
#define EXIT_OUTPUT_DIR	  9
#define EXIT_WRITE_FAILED 10
#define EXIT_CLOSED_PIPE 141 /* stdout's reader left: as SIGPIPE would end it */

/* ---- private tmpfs mounts ---- */

/* Once per test process: our own mount namespace, with / private so
 * nothing we mount propagates to the rest of the machine. 0 or an errno. */
static int private_mount_ns(void)
{
	static int done = -1;
	if (done >= 0)
		return done;
	done = 0;
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		done = errno;
	return done;
}

/* A fresh tmpfs of `opts` (e.g. "size=64k") on a new directory mnt: 0, or
 * the errno of a refusal (EPERM: not root), mnt then removed. */
static int tmpfs_mount_try(char *mnt, size_t size, const char *opts, unsigned long flags)
{
	int e = private_mount_ns();
	if (e)
		return e;
	make_tmpdir(mnt, size);
	if (mount("tmpfs", mnt, "tmpfs", flags, opts) == 0)
		return 0;
	e = errno;
	rm_rf(mnt);
	return e;
}

/* The same, skipping the test when refused. */
static void tmpfs_mount(char *mnt, size_t size, const char *opts, unsigned long flags)
{
	int e = tmpfs_mount_try(mnt, size, opts, flags);
	if (e == EPERM || e == EACCES)
		cr_skip_test("mount -t tmpfs -o %s: %s (needs root)", opts, strerror(e));
	cr_assert(e == 0, "mount -t tmpfs -o %s on %s: %s", opts, mnt, strerror(e));
}

static void tmpfs_unmount(const char *mnt)
{
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
}

/* Free bytes as the kernel would grant them to us. */
static uint64_t fs_free(const char *path)
{
	struct statvfs sv;
	cr_assert(statvfs(path, &sv) == 0, "statvfs %s: %s", path, strerror(errno));
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/* Fill the file system of dir so that exactly `left` bytes (a multiple of
 * the page size) stay free, with one preallocated file. */
static void fill_leaving(const char *dir, uint64_t left)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/filler", dir);
	unlink(path);
	uint64_t avail = fs_free(dir);
	cr_assert(avail >= left, "only %llu bytes free, want %llu left", (unsigned long long)avail,
		  (unsigned long long)left);
	if (avail > left) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		cr_assert(fd >= 0);
		cr_assert(fallocate(fd, 0, 0, (off_t)(avail - left)) == 0, "fallocate: %s",
			  strerror(errno));
		close(fd);
	}
	uint64_t now = fs_free(dir);
	cr_assert(now == left, "filled to %llu bytes free, wanted %llu", (unsigned long long)now,
		  (unsigned long long)left);
}

/* ---- running the tool with a chosen stdout and file-size limit ---- */

enum out_mode {
	OUT_PIPE,	 /* a pipe we read */
	OUT_DEV_FULL,	 /* /dev/full: every write fails ENOSPC */
	OUT_CLOSED_PIPE, /* a pipe whose read end is closed: EPIPE / SIGPIPE */
};

struct run {
	int code; /* exit status; -1 killed by a signal (sig); -2 timed out */
	int sig;
	bool traced;	/* watch_pid was seen traced while the tool ran */
	uint64_t ms;	/* from spawn to exit */
	char out[4096]; /* stdout (OUT_PIPE) */
	char err[16384];
};

struct spawn {
	pid_t pid;
	int out_fd, err_fd;
	uint64_t t0;
};

/* fsize: RLIMIT_FSIZE for the tool, RLIM_INFINITY for none. SIGXFSZ and
 * SIGPIPE are reset to their default (fatal) actions before exec, so a
 * tool that does not ignore them itself dies of them. */
static void tool_start(struct spawn *sp, const char *const *args, enum out_mode mode, rlim_t fsize)
{
	const char *argv[64];
	size_t n = 0;
	argv[n++] = getenv("DIAG_ATTACH");
	cr_assert(argv[0], "DIAG_ATTACH not set (run through meson test)");
	for (size_t i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	int out[2], err[2];
	cr_assert(pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0);
	if (mode == OUT_CLOSED_PIPE) {
		close(out[0]);
		out[0] = -1;
	}
	sp->t0 = now_ms();
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		signal(SIGXFSZ, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		struct rlimit rl = {fsize, fsize};
		if (fsize != RLIM_INFINITY && setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(126);
		int ofd = out[1];
		if (mode == OUT_DEV_FULL)
			ofd = open("/dev/full", O_WRONLY);
		if (ofd < 0 || dup2(ofd, STDOUT_FILENO) < 0 || dup2(err[1], STDERR_FILENO) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	if (out[0] >= 0)
		fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	sp->pid = pid;
	sp->out_fd = out[0];
	sp->err_fd = err[0];
}

static void drain(int fd, char *buf, size_t size)
{
	if (fd < 0)
		return;
	size_t len = strlen(buf);
	ssize_t n;
	while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
}

/* Wait for the tool (SIGKILL after timeout_ms), collecting its output.
 * The tool's watchdog process may hold the pipes a moment longer, so they
 * are read without waiting for EOF. While waiting, if watch_pid > 0, check
 * every millisecond whether any of its threads is traced. */
static void tool_finish(struct spawn *sp, int timeout_ms, pid_t watch_pid, struct run *r)
{
	memset(r, 0, sizeof(*r));
	int status = 0;
	for (;;) {
		pid_t w = waitpid(sp->pid, &status, WNOHANG);
		if (w == sp->pid)
			break;
		if (watch_pid > 0 && traced_threads(watch_pid))
			r->traced = true;
		drain(sp->out_fd, r->out, sizeof(r->out));
		drain(sp->err_fd, r->err, sizeof(r->err));
		if (now_ms() - sp->t0 > (uint64_t)timeout_ms) {
			kill(sp->pid, SIGKILL);
			waitpid(sp->pid, &status, 0);
			r->code = -2;
			break;
		}
		struct pollfd p = {.fd = sp->err_fd, .events = POLLIN};
		poll(&p, 1, watch_pid > 0 ? 1 : 5);
	}
	r->ms = now_ms() - sp->t0;
	drain(sp->out_fd, r->out, sizeof(r->out));
	drain(sp->err_fd, r->err, sizeof(r->err));
	if (sp->out_fd >= 0)
		close(sp->out_fd);
	close(sp->err_fd);
	if (r->code != -2) {
		r->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		r->sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	}
}

#if defined(__SANITIZE_ADDRESS__)
#define RUN_TIMEOUT_MS 120000
#else
#define RUN_TIMEOUT_MS 60000
#endif

static void tool_exec(const char *const *args, enum out_mode mode, rlim_t fsize, pid_t watch_pid,
		      struct run *r)
{
	struct spawn sp;
	tool_start(&sp, args, mode, fsize);
	tool_finish(&sp, RUN_TIMEOUT_MS, watch_pid, r);
}

/* ---- what a run may leave behind ---- */

enum outcome { NOTHING, PARTIAL, BUNDLE };
static const char *const outcome_name[] = {"nothing", "partial", "bundle"};

/* The invariant: absent, partial (no manifest, refused by verify), or a
 * bundle that verifies. A tool that failed cleaned up after itself (no
 * manifest.json.tmp); one that was killed may have left it. */
static enum outcome expect_output_sane(const char *out, bool killed, const char *ctx)
{
	char why[1024];
	if (!path_exists(out, NULL))
		return NOTHING;
	if (!path_exists(out, "manifest.json")) {
		cr_expect(killed || !path_exists(out, "manifest.json.tmp"),
			  "%s: manifest.json.tmp left in %s", ctx, out);
		int v = tool_verify(out, why, sizeof(why));
		cr_expect(v == 1, "%s: verify of a partial capture exited %d: %s", ctx, v, why);
		return PARTIAL;
	}
	int v = tool_verify(out, why, sizeof(why));
	cr_expect(v == 0, "%s: a directory with a manifest does not verify (exit %d): %s", ctx, v,
		  why);
	return BUNDLE;
}

/* A failed write: exit 10, one "diag-attach: cannot write bundle" line
 * naming the error (any other stderr lines are hints), and no bundle. */
static void expect_write_failure(const struct run *r, const char *out, const char *errtext,
				 const char *ctx)
{
	cr_expect(r->code == EXIT_WRITE_FAILED, "%s: exit %d (signal %d), want %d: %s", ctx,
		  r->code, r->sig, EXIT_WRITE_FAILED, r->err);
	const char *line = find_line(r->err, "diag-attach: cannot write bundle");
	cr_expect(line, "%s: no 'cannot write bundle' message: %s", ctx, r->err);
	if (line && errtext) {
		const char *nl = strchr(line, '\n');
		char msg[1024];
		snprintf(msg, sizeof(msg), "%.*s", nl ? (int)(nl - line) : (int)strlen(line), line);
		cr_expect(strstr(msg, errtext), "%s: message does not say '%s': %s", ctx, errtext,
			  msg);
	}
	int lines = 0;
	for (const char *p = r->err; *p;) {
		if (strncmp(p, "diag-attach: ", 13) == 0)
			lines++;
		else
			cr_expect(strncmp(p, "hint: ", 6) == 0, "%s: stray stderr line: %s", ctx,
				  p);
		const char *nl = strchr(p, '\n');
		p = nl ? nl + 1 : p + strlen(p);
	}
	cr_expect(lines == 1, "%s: %d error lines, want one: %s", ctx, lines, r->err);
	cr_expect(expect_output_sane(out, false, ctx) != BUNDLE, "%s: exit 10 but %s is a bundle",
		  ctx, out);
}

/* Exit 0 or 10, consistent with what is on disk. */
static enum outcome expect_consistent(const struct run *r, const char *out, const char *ctx)
{
	cr_expect(r->code == 0 || r->code == EXIT_WRITE_FAILED, "%s: exit %d (signal %d): %s", ctx,
		  r->code, r->sig, r->err);
	enum outcome o = expect_output_sane(out, false, ctx);
	if (r->code == 0)
		cr_expect(o == BUNDLE, "%s: exit 0 but no bundle in %s", ctx, out);
	if (r->code == EXIT_WRITE_FAILED)
		cr_expect(o != BUNDLE, "%s: exit 10 but %s is a bundle", ctx, out);
	return o;
}

/* ---- capture configurations the sweeps use ---- */

/* plain: one timeline line, four small members, a 5 KiB manifest.
 * dense: a timeline of ~50 lines written during the capture (the sweep
 *        then runs out of space mid-capture, at various lines).
 * binaries: --with-binaries, megabytes in binaries/<build-id>/ subdirs. */
enum config { PLAIN, DENSE, BINARIES, NCONFIGS };
static const char *const config_name[] = {"plain", "dense", "binaries"};

static void config_args(enum config c, const char *pid, const char *out, const char **args)
{
	/* A long annotation makes the manifest the largest plain file, so a
	 * per-file limit (F3) can single it out too. */
	static char note[3100];
	if (!note[0]) {
		memcpy(note, "note=", 5);
		memset(note + 5, 'x', sizeof(note) - 6);
	}
	size_t n = 0;
	args[n++] = "--annotate";
	args[n++] = note;
	args[n++] = "-p";
	args[n++] = pid;
	args[n++] = "-d";
	args[n++] = "500ms";
	args[n++] = "-i";
	args[n++] = c == DENSE ? "10ms" : "1s";
	if (c == BINARIES)
		args[n++] = "--with-binaries";
	args[n++] = "-o";
	args[n++] = out;
	args[n++] = "-q";
	args[n] = NULL;
}

/* A reference bundle's members in the order the tool wrote them (the
 * timeline during the capture; snapshot, profiles, binaries at the end),
 * then manifest.json: by modification time, ties (coarse file system
 * clocks) broken by the order the sampler is known to use. */
struct member_size {
	char name[256];
	uint64_t bytes;
	struct timespec mtime;
};
struct reference {
	struct member_size m[32];
	size_t n;
	uint64_t pages; /* tmpfs pages the whole bundle used */
};

static void member_stat(const char *dir, struct member_size *m)
{
	char path[600];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, m->name);
	cr_assert(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
	m->bytes = (uint64_t)st.st_size;
	m->mtime = st.st_mtim;
}

static int write_rank(const char *name)
{
	static const char *const order[] = {"runtime.jsonl", "threads.txt", "threads.pprof",
					    "cpu.pprof", "wall.pprof"};
	for (int i = 0; i < 5; i++)
		if (strcmp(name, order[i]) == 0)
			return i;
	return strcmp(name, "manifest.json") == 0 ? 99 : 50;
}

static int member_cmp(const void *a, const void *b)
{
	const struct member_size *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return write_rank(x->name) - write_rank(y->name);
}

/* Capture a reference bundle into dir (a fresh tmpfs) and record its
 * members' sizes and the pages it used. */
static void reference_take(struct reference *ref, enum config c, const char *pid, const char *dir,
			   struct rel_target *rt)
{
	char out[400];
	snprintf(out, sizeof(out), "%s/ref", dir);
	uint64_t before = fs_free(dir);
	const char *args[16];
	config_args(c, pid, out, args);
	struct run r;
	tool_exec(args, OUT_PIPE, RLIM_INFINITY, 0, &r);
	cr_assert(r.code == 0, "reference %s capture: exit %d: %s", config_name[c], r.code, r.err);
	cJSON *m = manifest_load(out);
	cJSON *members = m ? cJSON_GetObjectItem(m, "members") : NULL;
	cr_assert(cJSON_IsArray(members), "reference %s: no members", config_name[c]);
	memset(ref, 0, sizeof(*ref));
	cJSON *e;
	cJSON_ArrayForEach(e, members)
	{
		cr_assert(ref->n < 31);
		snprintf(ref->m[ref->n].name, sizeof(ref->m[0].name), "%s",
			 cJSON_GetObjectItem(e, "name")->valuestring);
		member_stat(out, &ref->m[ref->n++]);
	}
	cJSON_Delete(m);
	snprintf(ref->m[ref->n].name, sizeof(ref->m[0].name), "manifest.json");
	member_stat(out, &ref->m[ref->n++]);
	qsort(ref->m, ref->n, sizeof(ref->m[0]), member_cmp);
	ref->pages = (before - fs_free(dir)) / PAGE;
	fprintf(stderr, "reference %s: %llu pages:", config_name[c],
		(unsigned long long)ref->pages);
	for (size_t i = 0; i < ref->n; i++)
		fprintf(stderr, " %s=%llu", ref->m[i].name, (unsigned long long)ref->m[i].bytes);
	fprintf(stderr, "\n");
	rm_rf(out);
	expect_healthy(rt, NULL, "reference");
}

static uint64_t member_bytes(const struct reference *ref, const char *name)
{
	for (size_t i = 0; i < ref->n; i++)
		if (strcmp(ref->m[i].name, name) == 0)
			return ref->m[i].bytes;
	cr_assert_fail("reference bundle has no %s", name);
	return 0;
}

static uint64_t pages_of(uint64_t bytes)
{
	return (bytes + PAGE - 1) / PAGE;
}

struct point {
	enum config c;
	uint64_t n; /* pages left free (F2) or RLIMIT_FSIZE bytes (F3) */
	int want;   /* required exit code, or -1: 0 or 10, whichever is true */
	const char *what;
};

#define MAX_POINTS 256

static void add_point(struct point *p, size_t *np, enum config c, uint64_t n, int want,
		      const char *what)
{
	if (*np < MAX_POINTS)
		p[(*np)++] = (struct point){c, n, want, what};
}

/* Extra points when $DIAG_REL_LOOPS asks for more than the fixed ones:
 * random amounts up to the top of each configuration. */
static void add_random_points(struct point *p, size_t *np, int loops, const uint64_t top[NCONFIGS],
			      unsigned *seed)
{
	while ((int)*np < loops && *np < MAX_POINTS) {
		enum config c = (enum config)(rand_r(seed) % NCONFIGS);
		add_point(p, np, c, (uint64_t)rand_r(seed) % (top[c] + 1), -1, "random");
	}
}

/* One sweep (F2, F3): the output is dir/b; by_fsize says whether a
 * point's n is the tool's RLIMIT_FSIZE (F3) or the pages left free on dir
 * (F2); a write failure must name strerror(err). */
struct sweep {
	const char *name, *pid, *dir;
	bool by_fsize;
	int err;
};

/* Cut the fixed points to $DIAG_REL_LOOPS or add random ones up to it,
 * then run each: exit 0 or 10 consistent with what is on disk, the
 * required exit where there is one, a healthy target. */
static void sweep_run(struct rel_target *rt, const struct sweep *sw, struct point *pts, size_t np,
		      const uint64_t top[NCONFIGS])
{
	unsigned seed = (unsigned)getpid() ^ (unsigned)now_ms();
	int loops = rel_loops((int)np);
	if ((size_t)loops < np)
		np = (size_t)loops; /* the first points are the ones that matter most */
	add_random_points(pts, &np, loops, top, &seed);
	fprintf(stderr, "%s: seed %u, %zu points\n", sw->name, seed, np);

	static int codes[MAX_POINTS];
	static enum outcome outs[MAX_POINTS];
	int failed = 0, ok = 0;
	for (size_t i = 0; i < np; i++) {
		char out[400], ctx[400];
		snprintf(out, sizeof(out), "%s/b", sw->dir);
		snprintf(ctx, sizeof(ctx), "%s %s, %s %llu (%s)", sw->name, config_name[pts[i].c],
			 sw->by_fsize ? "RLIMIT_FSIZE" : "pages left", (unsigned long long)pts[i].n,
			 pts[i].what);
		rm_rf(out);
		if (!sw->by_fsize)
			fill_leaving(sw->dir, pts[i].n * PAGE);
		const char *args[16];
		config_args(pts[i].c, sw->pid, out, args);
		struct run r;
		tool_exec(args, OUT_PIPE, sw->by_fsize ? (rlim_t)pts[i].n : RLIM_INFINITY, 0, &r);
		if (sw->by_fsize)
			cr_expect(r.sig != SIGXFSZ, "%s: the tool died of SIGXFSZ", ctx);
		if (r.code == EXIT_WRITE_FAILED)
			expect_write_failure(&r, out, strerror(sw->err), ctx);
		outs[i] = expect_consistent(&r, out, ctx);
		codes[i] = r.code;
		if (pts[i].want >= 0)
			cr_expect(r.code == pts[i].want, "%s: exit %d, want %d: %s", ctx, r.code,
				  pts[i].want, r.err);
		failed += r.code == EXIT_WRITE_FAILED;
		ok += r.code == 0;
		expect_healthy(rt, NULL, ctx);
	}
	for (size_t i = 0; i < np; i++)
		fprintf(stderr, "%s: %s n=%llu (%s): exit %d, %s\n", sw->name,
			config_name[pts[i].c], (unsigned long long)pts[i].n, pts[i].what, codes[i],
			outcome_name[outs[i]]);
	fprintf(stderr, "%s: %d complete, %d write failures\n", sw->name, ok, failed);
}

/* ---- F1 ---- */

/* F1: the output on a 64 KiB and a 512 KiB tmpfs. A --with-binaries
 * bundle (megabytes: libc and its debug file) cannot fit either: exit 10,
 * one clear line, no bundle, a healthy target. A plain bundle (~24 KiB)
 * may fit: then it verifies. */
Test(reliability_integrity, f1_tiny_tmpfs, .timeout = 600)
{
	struct rel_target rt;
	rel_start_spin2(&rt);
	static const char *const sizes[] = {"size=64k", "size=512k"};
	for (int i = 0; i < 2; i++) {
		char mnt[256], out[400], ctx[128];
		tmpfs_mount(mnt, sizeof(mnt), sizes[i], 0);
		snprintf(out, sizeof(out), "%s/b", mnt);
		snprintf(ctx, sizeof(ctx), "%s --with-binaries", sizes[i]);
		const char *args[] = {"-p", rt.pid, "-d", "1s", "--with-binaries",
				      "-o", out, "-q", NULL};
		struct run r;
		tool_exec(args, OUT_PIPE, RLIM_INFINITY, 0, &r);
		expect_write_failure(&r, out, strerror(ENOSPC), ctx);
		cr_expect(r.out[0] == '\0', "%s: printed a bundle path: %s", ctx, r.out);
		expect_healthy(&rt, NULL, ctx);
		rm_rf(out);

		snprintf(ctx, sizeof(ctx), "%s plain", sizes[i]);
		const char *pargs[] = {"-p", rt.pid, "-d", "1s", "-o", out, "-q", NULL};
		tool_exec(pargs, OUT_PIPE, RLIM_INFINITY, 0, &r);
		enum outcome o = expect_consistent(&r, out, ctx);
		fprintf(stderr, "f1 %s: exit %d, %s\n", ctx, r.code, outcome_name[o]);
		expect_healthy(&rt, NULL, ctx);
		tmpfs_unmount(mnt);
	}
	rel_stop(&rt);
}

/* ---- F2 ---- */

/* F2: ENOSPC at every write point. The points come from reference
 * bundles: leaving exactly the pages that everything written before a
 * member needs makes that member's write fail (the timeline's first line,
 * each of threads.txt, threads.pprof, cpu.pprof, wall.pprof, each file
 * under binaries/, the manifest); the dense timeline runs out mid-capture.
 * (On tmpfs a rename needs no space, so it cannot fail here.) Never a
 * manifest over a missing or short member: exit 0 with a bundle that
 * verifies, or exit 10 with none. */
Test(reliability_integrity, f2_enospc_sweep, .timeout = 900)
{
	struct rel_target rt;
	rel_start_spin2(&rt);
	char mnt[256];
	tmpfs_mount(mnt, sizeof(mnt), "size=24m", 0);

	struct reference ref[NCONFIGS];
	for (int c = 0; c < NCONFIGS; c++)
		reference_take(&ref[c], (enum config)c, rt.pid, mnt, &rt);

	static struct point pts[MAX_POINTS];
	size_t np = 0;
	uint64_t top[NCONFIGS];
	/* Nothing free: the timeline's first line fails (mid-capture). */
	add_point(pts, &np, PLAIN, 0, EXIT_WRITE_FAILED, "nothing free");
	/* Each member of the plain bundle in write order, manifest last. */
	uint64_t before = 0;
	for (size_t i = 0; i < ref[PLAIN].n; i++) {
		if (before > 0) /* 0 is the point above */
			add_point(pts, &np, PLAIN, before, -1, ref[PLAIN].m[i].name);
		before += pages_of(ref[PLAIN].m[i].bytes);
	}
	/* Room to spare (timelines vary by a line or two): must succeed. */
	top[PLAIN] = ref[PLAIN].pages + 4;
	add_point(pts, &np, PLAIN, top[PLAIN], 0, "room to spare");
	/* Inside the dense timeline: out of space at a quarter, half, three
	 * quarters of its lines. */
	uint64_t tl = pages_of(member_bytes(&ref[DENSE], "runtime.jsonl"));
	for (int q = 1; q <= 3; q++)
		add_point(pts, &np, DENSE, tl * (uint64_t)q / 4, -1, "mid-timeline");
	top[DENSE] = ref[DENSE].pages + 4;
	/* Each file under binaries/ (after the plain members). */
	before = 0;
	for (size_t i = 0; i < ref[BINARIES].n; i++) {
		if (strncmp(ref[BINARIES].m[i].name, "binaries/", 9) == 0)
			add_point(pts, &np, BINARIES, before, -1, ref[BINARIES].m[i].name);
		before += pages_of(ref[BINARIES].m[i].bytes);
	}
	top[BINARIES] = ref[BINARIES].pages + 4;
	const struct sweep sw = {.name = "f2", .pid = rt.pid, .dir = mnt, .err = ENOSPC};
	sweep_run(&rt, &sw, pts, np, top);
	tmpfs_unmount(mnt);
	rel_stop(&rt);
}

/* ---- F3 ---- */

/* F3: the same under RLIMIT_FSIZE, which limits each file, in bytes: a
 * limit fails the first file in write order that is larger (in the
 * middle of the timeline's lines, or a whole member). SIGXFSZ (whose default action kills) is reset
 * to default before exec: the tool must ignore it and report EFBIG as a
 * write failure (exit 10), never die of it. */
Test(reliability_integrity, f3_rlimit_fsize_sweep, .timeout = 900)
{
	struct rel_target rt;
	rel_start_spin2(&rt);
	char dir[256];
	/* A tmpfs where we may mount one (no disk syncs: quicker), else /tmp. */
	bool mounted = tmpfs_mount_try(dir, sizeof(dir), "size=24m", 0) == 0;
	if (!mounted)
		make_tmpdir(dir, sizeof(dir));

	struct reference ref[NCONFIGS];
	for (int c = 0; c < NCONFIGS; c++)
		reference_take(&ref[c], (enum config)c, rt.pid, dir, &rt);

	/* A limit under a member's size fails it only if nothing written
	 * before it is larger: those are the points, each limit half way
	 * between the member and the largest before it (sizes vary by some
	 * bytes from run to run). */
	static struct point pts[MAX_POINTS];
	size_t np = 0;
	uint64_t top[NCONFIGS] = {0};
	add_point(pts, &np, PLAIN, 0, EXIT_WRITE_FAILED, "no file may grow");
	for (size_t i = 0; i < ref[PLAIN].n; i++) {
		uint64_t b = ref[PLAIN].m[i].bytes;
		if (b > top[PLAIN]) {
			add_point(pts, &np, PLAIN, (top[PLAIN] + b) / 2, -1, ref[PLAIN].m[i].name);
			top[PLAIN] = b;
		}
	}
	top[PLAIN] *= 4;
	add_point(pts, &np, PLAIN, top[PLAIN], 0, "room to spare");
	uint64_t tl = member_bytes(&ref[DENSE], "runtime.jsonl");
	for (int q = 1; q <= 3; q++)
		add_point(pts, &np, DENSE, tl * (uint64_t)q / 4, -1, "mid-timeline");
	top[DENSE] = tl * 4;
	for (size_t i = 0; i < ref[BINARIES].n; i++) {
		uint64_t b = ref[BINARIES].m[i].bytes;
		if (b > top[BINARIES]) {
			if (strncmp(ref[BINARIES].m[i].name, "binaries/", 9) == 0)
				add_point(pts, &np, BINARIES, (top[BINARIES] + b) / 2, -1,
					  ref[BINARIES].m[i].name);
			top[BINARIES] = b;
		}
	}
	top[BINARIES] *= 2;
	const struct sweep sw = {
		.name = "f3", .pid = rt.pid, .dir = dir, .by_fsize = true, .err = EFBIG};
	sweep_run(&rt, &sw, pts, np, top);
	if (mounted)
		tmpfs_unmount(dir);
	else
		rm_rf(dir);
	rel_stop(&rt);
}

/* ---- F4 ---- */

/* The processes a killed tool leaves behind (its watchdog, its worker)
 * must go too: oracle H allows no leftover tool processes. Until they run
 * again they hold copies of the tool's descriptors, the capture lock
 * among them, so a capture started meanwhile is refused (exit 7, "already
 * traced" by the dead tool): a watchdog forked just before the kill was
 * seen starved for 6 s on an overloaded machine (load 180 on 2 CPUs).
 * With this test process as child subreaper they become our children:
 * wait until every child but keep is gone, reaping them (30 s: a hang
 * check, not a speed check). Returns how long that took. */
static uint64_t reap_orphans(pid_t keep, const char *ctx)
{
	static bool subreaper;
	if (!subreaper) {
		cr_assert(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
		subreaper = true;
	}
	uint64_t t0 = now_ms();
	bool reported = false;
	for (;;) {
		int left = 0;
		char who[256] = "";
		DIR *d = opendir("/proc");
		cr_assert(d);
		struct dirent *e;
		while ((e = readdir(d))) {
			pid_t p = (pid_t)atoi(e->d_name);
			if (p <= 0 || p == keep)
				continue;
			char path[64], buf[512];
			snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			ssize_t n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (n <= 0)
				continue;
			buf[n] = '\0';
			const char *rp = strrchr(buf, ')');
			char state;
			int ppid;
			if (!rp || sscanf(rp + 1, " %c %d", &state, &ppid) != 2 || ppid != getpid())
				continue;
			if (state == 'Z') {
				waitpid(p, NULL, WNOHANG);
				continue;
			}
			left++;
			size_t wl = strlen(who);
			snprintf(who + wl, sizeof(who) - wl, " %.60s", buf);
		}
		closedir(d);
		if (!left)
			break;
		if (!reported && now_ms() - t0 > 1000) {
			fprintf(stderr, "%s: still alive 1 s after the tool:%s\n", ctx, who);
			reported = true;
		}
		if (now_ms() - t0 > 30000) {
			cr_expect_fail(
				"%s: %d processes of the killed tool still alive after 30 s:%s",
				ctx, left, who);
			break;
		}
		usleep(1000);
	}
	return now_ms() - t0;
}

/* F4: SIGKILL at random moments around the end of a capture, where the
 * profiles, snapshot, binaries and manifest are written: the output is
 * absent, partial, or a bundle that verifies; the target is released
 * (within 1 s) and healthy. Half the runs copy binaries, which stretches
 * finalization over many more writes. A calibration run per configuration
 * measures when the first member appears and when the tool exits; the
 * kills are spread from 100 ms before the one (symbolization) to just past
 * the other. */
Test(reliability_integrity, f4_sigkill_during_finalize, .timeout = 900)
{
	struct rel_target rt;
	rel_start_spin2(&rt);
	char dir[256], out[400];
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/b", dir);

	uint64_t from[2], to[2];
	for (int c = 0; c < 2; c++) {
		const char *args[16];
		config_args(c ? BINARIES : PLAIN, rt.pid, out, args);
		struct spawn sp;
		tool_start(&sp, args, OUT_PIPE, RLIM_INFINITY);
		uint64_t first = 0;
		for (;;) {
			siginfo_t si = {0};
			/* WNOWAIT: tool_finish reaps it. */
			if (waitid(P_PID, (id_t)sp.pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
			    si.si_pid == sp.pid)
				break;
			if (!first && (path_exists(out, "threads.txt.tmp") ||
				       path_exists(out, "threads.txt")))
				first = now_ms() - sp.t0;
			usleep(500);
		}
		struct run r;
		tool_finish(&sp, RUN_TIMEOUT_MS, 0, &r);
		cr_assert(r.code == 0, "calibration: exit %d: %s", r.code, r.err);
		reap_orphans(rt.t.pid, "calibration");
		if (!first)
			first = r.ms;
		from[c] = first > 100 ? first - 100 : 0;
		to[c] = r.ms + 10;
		/* A loaded machine can stretch a run to seconds; the kills stay
		 * around its end without making the test that long. */
		if (to[c] > from[c] + 2000)
			to[c] = from[c] + 2000;
		fprintf(stderr, "f4 %s: first member after %llu ms, exit after %llu ms\n",
			config_name[c ? BINARIES : PLAIN], (unsigned long long)first,
			(unsigned long long)r.ms);
		rm_rf(out);
	}

	int loops = rel_loops(20);
	unsigned seed = (unsigned)getpid() ^ (unsigned)now_ms();
	int seen[3] = {0}, finished = 0;
	uint64_t worst_linger = 0;
	fprintf(stderr, "f4: seed %u, %d runs\n", seed, loops);
	for (int it = 0; it < loops; it++) {
		int c = it % 2;
		char ctx[128];
		rm_rf(out);
		const char *args[16];
		config_args(c ? BINARIES : PLAIN, rt.pid, out, args);
		uint64_t delay = from[c] + (uint64_t)rand_r(&seed) % (to[c] - from[c] + 1);
		snprintf(ctx, sizeof(ctx), "f4 run %d (%s, kill at %llu ms)", it,
			 c ? "binaries" : "plain", (unsigned long long)delay);
		struct spawn sp;
		tool_start(&sp, args, OUT_PIPE, RLIM_INFINITY);
		while (now_ms() - sp.t0 < delay)
			usleep(200);
		kill(sp.pid, SIGKILL);
		struct run r;
		tool_finish(&sp, RUN_TIMEOUT_MS, 0, &r);
		uint64_t t0 = now_ms();
		while (traced_threads(rt.t.pid) && now_ms() - t0 < 1000)
			usleep(500);
		cr_expect(traced_threads(rt.t.pid) == 0,
			  "%s: target still traced 1 s after the kill", ctx);
		uint64_t lingered = reap_orphans(rt.t.pid, ctx);
		if (lingered > worst_linger)
			worst_linger = lingered;
		enum outcome o = expect_output_sane(out, r.sig == SIGKILL, ctx);
		if (r.sig != SIGKILL) {
			/* It finished before the kill landed. */
			finished++;
			cr_expect(r.code == 0 && o == BUNDLE, "%s: finished with exit %d, %s: %s",
				  ctx, r.code, outcome_name[o], r.err);
		}
		seen[o]++;
		expect_healthy(&rt, NULL, ctx);
	}
	fprintf(stderr,
		"f4: %d nothing, %d partial, %d bundle (%d finished before the kill); "
		"helpers outlived the tool by up to %llu ms\n",
		seen[NOTHING], seen[PARTIAL], seen[BUNDLE], finished,
		(unsigned long long)worst_linger);
	rm_rf(dir);
	rel_stop(&rt);
}

/* ---- F5 ---- */

static void run_unwritable_once(struct rel_target *rt, const char *out, const char *what,
				bool existed, bool snapshot)
{
	char pid[16], ctx[256];
	snprintf(pid, sizeof(pid), "%d", (int)rt->t.pid);
	snprintf(ctx, sizeof(ctx), "%s%s", what, snapshot ? " (--snapshot)" : "");
	const char *sampled[] = {"-p", pid, "-d", "1s", "-o", out, "-q", NULL};
	const char *snap[] = {"-p", pid, "--snapshot", "-o", out, "-q", NULL};
	struct run r;
	tool_exec(snapshot ? snap : sampled, OUT_PIPE, RLIM_INFINITY, rt->t.pid, &r);
	cr_expect(r.code == EXIT_OUTPUT_DIR, "%s: exit %d, want %d: %s", ctx, r.code,
		  EXIT_OUTPUT_DIR, r.err);
	cr_expect(!r.traced, "%s: the target was traced before the output was refused", ctx);
	cr_expect(find_line(r.err, out), "%s: the message does not name %s: %s", ctx, out, r.err);
	if (existed)
		cr_expect(!path_exists(out, "manifest.json") && !path_exists(out, "runtime.jsonl"),
			  "%s: wrote into %s", ctx, out);
	else
		cr_expect(!path_exists(out, NULL), "%s: %s was created", ctx, out);
	expect_healthy(rt, NULL, ctx);
}

/* Sampled, and --snapshot (which stops the target before it writes
 * anything, so a late check would show as a traced target). */
static void run_unwritable(struct rel_target *rt, const char *out, const char *what, bool existed)
{
	for (int snap = 0; snap < 2; snap++)
		run_unwritable_once(rt, out, what, existed, snap);
}

/* F5: an output directory that cannot be written is refused with exit 9
 * before the target is touched: its TracerPid stays 0 all along (polled
 * every millisecond while the tool runs). Root ignores mode bits, so the
 * cases are a read-only tmpfs (a new directory in it, its empty root, an
 * existing empty directory after a remount read-only) and an immutable
 * empty directory (where the file system supports the flag). */
Test(reliability_integrity, f5_unwritable_output_dir, .timeout = 600)
{
	struct rel_target rt;
	rel_start_spin2(&rt);
	char mnt[256], out[400];

	tmpfs_mount(mnt, sizeof(mnt), "size=64k", MS_RDONLY);
	snprintf(out, sizeof(out), "%s/new", mnt);
	run_unwritable(&rt, out, "read-only tmpfs, new directory", false);
	run_unwritable(&rt, mnt, "read-only tmpfs, its empty root", true);
	tmpfs_unmount(mnt);

	tmpfs_mount(mnt, sizeof(mnt), "size=64k", 0);
	snprintf(out, sizeof(out), "%s/empty", mnt);
	cr_assert(mkdir(out, 0700) == 0);
	cr_assert(mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0, "remount ro: %s",
		  strerror(errno));
	run_unwritable(&rt, out, "empty directory, remounted read-only", true);
	cr_assert(mount(NULL, mnt, NULL, MS_REMOUNT, NULL) == 0);

	/* chattr +i: tmpfs supports it since Linux 6.0. */
	int fd = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int flags = 0;
	cr_assert(fd >= 0);
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 &&
	    (flags |= FS_IMMUTABLE_FL, ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0)) {
		run_unwritable(&rt, out, "immutable empty directory", true);
		flags &= ~FS_IMMUTABLE_FL;
		cr_assert(ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0);
	} else {
		fprintf(stderr, "f5: immutable directories not supported here (%s); case skipped\n",
			strerror(errno));
	}
	close(fd);
	tmpfs_unmount(mnt);
	rel_stop(&rt);
}

/* ---- F6 (end to end; bundle_verify itself is unit-tested) ---- */

/* F6: `diag-attach verify` on a real bundle: exit 1 naming a member with
 * one flipped byte, and an extra file; exit 0 once both are undone. */
Test(reliability_integrity, f6_verify_flipped_byte_and_extra_file, .timeout = 600)
{
	struct rel_target rt;
	rel_start_spin2(&rt);
	char dir[256], out[400], path[600], why[4096];
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/b", dir);
	const char *args[16];
	config_args(PLAIN, rt.pid, out, args);
	struct run r;
	tool_exec(args, OUT_PIPE, RLIM_INFINITY, 0, &r);
	cr_assert(r.code == 0, "capture: exit %d: %s", r.code, r.err);
	cr_assert(tool_verify(out, why, sizeof(why)) == 0, "fresh bundle: %s", why);

	snprintf(path, sizeof(path), "%s/cpu.pprof", out);
	int fd = open(path, O_RDWR);
	cr_assert(fd >= 0);
	unsigned char byte;
	cr_assert(pread(fd, &byte, 1, 7) == 1);
	byte ^= 0x01;
	cr_assert(pwrite(fd, &byte, 1, 7) == 1);
	cr_expect(tool_verify(out, why, sizeof(why)) == 1, "flipped byte not detected: %s", why);
	cr_expect(strstr(why, "cpu.pprof: sha256 mismatch"), "%s", why);
	byte ^= 0x01;
	cr_assert(pwrite(fd, &byte, 1, 7) == 1);
	close(fd);
	cr_expect(tool_verify(out, why, sizeof(why)) == 0, "restored byte: %s", why);

	snprintf(path, sizeof(path), "%s/extra.txt", out);
	close(open(path, O_WRONLY | O_CREAT, 0600));
	cr_expect(tool_verify(out, why, sizeof(why)) == 1, "extra file not detected: %s", why);
	cr_expect(strstr(why, "extra.txt: not listed in manifest"), "%s", why);
	unlink(path);
	cr_expect(tool_verify(out, why, sizeof(why)) == 0, "extra file removed: %s", why);
	rm_rf(dir);
	rel_stop(&rt);
}

/* ---- C5 ---- */

/* C5: the tool prints one thing on stdout, the finished bundle's path. If
 * stdout is /dev/full or a pipe nobody reads, the capture still runs to
 * its end (no death by SIGPIPE, which is reset to default before exec)
 * and the bundle is complete and verifies, but the caller never learned
 * where it is: exit 10 with a message that says the bundle is complete.
 * The target is healthy either way. */
static void c5_case(struct rel_target *rt, enum out_mode mode, bool snapshot, const char *ctx)
{
	char pid[16], dir[256], out[400], why[4096];
	snprintf(pid, sizeof(pid), "%d", (int)rt->t.pid);
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/b", dir);
	const char *sampled[] = {"-p", pid, "-d", "1s", "-o", out, "-q", NULL};
	const char *snap[] = {"-p", pid, "--snapshot", "-o", out, "-q", NULL};
	const char *const *args = snapshot ? snap : sampled;
	struct run r;
	tool_exec(args, mode, RLIM_INFINITY, 0, &r);
	cr_expect(r.sig == 0, "%s: the tool died of signal %d", ctx, r.sig);
	cr_expect(tool_verify(out, why, sizeof(why)) == 0, "%s: bundle does not verify: %s", ctx,
		  why);
	if (mode == OUT_PIPE) {
		char want[450];
		snprintf(want, sizeof(want), "%s\n", out);
		cr_expect(r.code == 0, "%s: exit %d: %s", ctx, r.code, r.err);
		cr_expect(strcmp(r.out, want) == 0, "%s: stdout is '%s', want the bundle path", ctx,
			  r.out);
	} else if (mode == OUT_CLOSED_PIPE) {
		/* The reader left: quietly, as SIGPIPE would end it (141), the
		 * bundle whole (verified above). */
		cr_expect(r.code == EXIT_CLOSED_PIPE, "%s: exit %d, want %d: %s", ctx, r.code,
			  EXIT_CLOSED_PIPE, r.err);
		cr_expect(!strstr(r.err, "standard output"), "%s: %s", ctx, r.err);
	} else {
		cr_expect(r.code == EXIT_WRITE_FAILED, "%s: exit %d, want %d: %s", ctx, r.code,
			  EXIT_WRITE_FAILED, r.err);
		cr_expect(strstr(r.err,
				 "is complete, but writing its path to standard output failed"),
			  "%s: %s", ctx, r.err);
		cr_expect(strstr(r.err, strerror(ENOSPC)), "%s: %s", ctx, r.err);
	}
	if (!snapshot) {
		/* It sampled to the end, not cut short. */
		cJSON *m = manifest_load(out);
		cJSON *cap = m ? cJSON_GetObjectItem(m, "capture") : NULL;
		cJSON *ended = cap ? cJSON_GetObjectItem(cap, "ended_by") : NULL;
		cr_expect(cJSON_IsString(ended) && strcmp(ended->valuestring, "duration") == 0,
			  "%s: capture ended by %s", ctx,
			  cJSON_IsString(ended) ? ended->valuestring : "?");
		cJSON_Delete(m);
	}
	expect_healthy(rt, NULL, ctx);
	rm_rf(dir);
}

Test(reliability_integrity, c5_stdout_unwritable, .timeout = 600)
{
	struct rel_target rt;
	rel_start_spin2(&rt);
	c5_case(&rt, OUT_PIPE, false, "stdout a pipe (baseline)");
	c5_case(&rt, OUT_DEV_FULL, false, "stdout /dev/full");
	c5_case(&rt, OUT_CLOSED_PIPE, false, "stdout a closed pipe");
	c5_case(&rt, OUT_CLOSED_PIPE, true, "snapshot, stdout a closed pipe");
	rel_stop(&rt);
}
