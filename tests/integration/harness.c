#include "harness.h"
#include "rel_shared.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sem.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *target_path(const char *name)
{
	static char buf[8][4096];
	static int slot;
	const char *dir = getenv("DIAG_TARGETS_DIR");
	cr_assert(dir, "DIAG_TARGETS_DIR not set (run through meson test)");
	char *b = buf[slot++ % 8];
	snprintf(b, 4096, "%s/%s", dir, name);
	return b;
}

static const char *tool_path(void)
{
	const char *p = getenv("DIAG_ATTACH");
	cr_assert(p, "DIAG_ATTACH not set (run through meson test)");
	return p;
}

struct target target_start(const char *const *argv, const char *ready_word)
{
	return target_start_logged(argv, ready_word, NULL);
}

struct target target_start_logged(const char *const *argv, const char *ready_word,
				  const char *stderr_path)
{
	int fds[2], in[2];
	cr_assert(pipe2(fds, O_CLOEXEC) == 0);
	cr_assert(pipe2(in, O_CLOEXEC) == 0);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		/* A test that dies (assertion, timeout) must not leave its
		 * target spinning on a shared machine. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(in[0], STDIN_FILENO);
		dup2(fds[1], STDOUT_FILENO);
		if (stderr_path) {
			int err = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
			if (err >= 0)
				dup2(err, STDERR_FILENO);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	close(in[0]);
	struct target t = {.pid = pid, .stdout_fd = fds[0], .stdin_fd = in[1]};
	char line[256];
	size_t len = 0;
	struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
	for (;;) {
		int r = poll(&pfd, 1, 10000);
		cr_assert(r > 0, "target %s did not become ready within 10 s", argv[0]);
		ssize_t n = read(fds[0], line + len, 1);
		cr_assert(n == 1, "target %s closed stdout before ready", argv[0]);
		if (line[len] == '\n') {
			line[len] = '\0';
			if (!ready_word || strncmp(line, ready_word, strlen(ready_word)) == 0)
				return t;
			len = 0;
			continue;
		}
		if (len < sizeof(line) - 2)
			len++;
	}
}

int target_kill(struct target *t)
{
	int status = 0;
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, &status, 0);
		t->pid = 0;
	}
	if (t->stdout_fd >= 0)
		close(t->stdout_fd);
	if (t->stdin_fd >= 0)
		close(t->stdin_fd);
	t->stdout_fd = t->stdin_fd = -1;
	return status;
}

static void slurp_fd(int fd, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	while ((n = read(fd, buf + len, size - 1 - len)) > 0) {
		len += (size_t)n;
		if (len == size - 1) {
			char scratch[4096];
			while (read(fd, scratch, sizeof(scratch)) > 0)
				;
			break;
		}
	}
	buf[len] = '\0';
}

/* Become uid:gid with no supplementary groups; from root that also drops
 * every capability (no SECBIT_KEEP_CAPS). In a forked child only. */
static void drop_to(uid_t uid, gid_t gid)
{
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		_exit(126);
}

static pid_t spawn(bool drop, uid_t uid, gid_t gid, const char *const *args, const char *out_path,
		   const char *err_path, bool hangup_ignored);

static void run(struct tool_result *r, bool drop, uid_t uid, gid_t gid, const char *const *args)
{
	char outp[] = "/tmp/diag-test-out-XXXXXX", errp[] = "/tmp/diag-test-err-XXXXXX";
	int ofd = mkstemp(outp), efd = mkstemp(errp);
	cr_assert(ofd >= 0 && efd >= 0);
	pid_t pid = spawn(drop, uid, gid, args, outp, errp, false);
	int code = tool_wait(pid, 120000);
	memset(r, 0, sizeof(*r));
	r->exit_code = code;
	slurp_fd(ofd, r->out, sizeof(r->out));
	slurp_fd(efd, r->err, sizeof(r->err));
	close(ofd);
	close(efd);
	unlink(outp);
	unlink(errp);
}

void tool_run(struct tool_result *r, const char *const *args)
{
	run(r, false, 0, 0, args);
}

void tool_run_as(struct tool_result *r, uid_t uid, gid_t gid, const char *const *args)
{
	run(r, true, uid, gid, args);
}

pid_t tool_spawn(const char *const *args, const char *out_path, const char *err_path)
{
	return spawn(false, 0, 0, args, out_path, err_path, false);
}

pid_t tool_spawn_nohup(const char *const *args, const char *out_path, const char *err_path)
{
	return spawn(false, 0, 0, args, out_path, err_path, true);
}

pid_t tool_spawn_as(uid_t uid, gid_t gid, const char *const *args, const char *out_path,
		    const char *err_path)
{
	return spawn(true, uid, gid, args, out_path, err_path, false);
}

bool can_exec_as(uid_t uid, gid_t gid, const char *path)
{
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		drop_to(uid, gid);
		_exit(access(path, X_OK) == 0 ? 0 : 1);
	}
	int status;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static pid_t spawn(bool drop, uid_t uid, gid_t gid, const char *const *args, const char *out_path,
		   const char *err_path, bool hangup_ignored)
{
	const char *argv[64];
	size_t n = 0;
	argv[n++] = tool_path();
	for (size_t i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		if (out_path) {
			int fd = open(out_path, O_WRONLY | O_TRUNC);
			dup2(fd, STDOUT_FILENO);
		}
		if (err_path) {
			int fd = open(err_path, O_WRONLY | O_TRUNC);
			dup2(fd, STDERR_FILENO);
		}
		/* After the opens: the output files stay root's. */
		if (drop)
			drop_to(uid, gid);
		/* The tool keeps a SIGHUP ignored at its start (nohup): the
		 * tests that send one must not depend on how the test runner
		 * was started (CI under nohup). */
		signal(SIGHUP, hangup_ignored ? SIG_IGN : SIG_DFL);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

int tool_wait(pid_t pid, int timeout_ms)
{
	for (int waited = 0;; waited += 10) {
		int status;
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid) {
			if (WIFEXITED(status))
				return WEXITSTATUS(status);
			return -1;
		}
		if (waited >= timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -2;
		}
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
}

void run_begin(struct target_run *r, const char *const *argv, const char *ready_word,
	       const char *sub)
{
	r->t = target_start(argv, ready_word);
	make_tmpdir(r->dir, sizeof(r->dir));
	snprintf(r->out, sizeof(r->out), "%s/%s", r->dir, sub);
	snprintf(r->pid, sizeof(r->pid), "%d", (int)r->t.pid);
}

void run_end(struct target_run *r)
{
	target_kill(&r->t);
	rm_rf(r->dir);
}

void tool_run_ok(struct tool_result *r, const char *const *args)
{
	tool_run(r, args);
	cr_assert_eq(r->exit_code, 0, "%s: exit %d: %s", args[0], r->exit_code, r->err);
}

char *read_in(const char *dir, const char *name)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return read_file(path, NULL);
}

void make_tmpdir(char *buf, size_t size)
{
	snprintf(buf, size, "/tmp/diag-test-XXXXXX");
	cr_assert(mkdtemp(buf));
}

void rm_rf(const char *path)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0) {
		/* best effort */
	}
}

char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	size_t got;
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* Call fn with each thread of pid and its /proc/PID/task/TID/status text
 * (a thread that exits meanwhile is skipped) until fn returns false.
 * Returns -1 when the task directory cannot be read (the process is
 * gone), else 0. */
typedef bool thread_status_fn(const char *tid, const char *status, void *ctx);

static int each_thread_status(pid_t pid, thread_status_fn *fn, void *ctx)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *e;
	bool more = true;
	while (more && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char spath[320];
		snprintf(spath, sizeof(spath), "/proc/%d/task/%s/status", (int)pid, e->d_name);
		char *st = read_file(spath, NULL);
		if (!st)
			continue; /* exited meanwhile */
		more = fn(e->d_name, st, ctx);
		free(st);
	}
	closedir(d);
	return 0;
}

/* The State: letter ('?' if none) and the TracerPid (0 if none) of a
 * status text. */
static char status_state(const char *st)
{
	const char *state = strstr(st, "\nState:");
	return state ? state[8] : '?';
}

static int status_tracer(const char *st)
{
	const char *tracer = strstr(st, "\nTracerPid:");
	return tracer ? atoi(tracer + 11) : 0;
}

struct thread_check {
	bool allow_stopped;
	char *why;
	size_t why_size;
	bool ok;
};

static bool thread_healthy(const char *tid, const char *st, void *ctx)
{
	struct thread_check *c = ctx;
	char s = status_state(st);
	int tracer = status_tracer(st);
	if (tracer != 0) {
		snprintf(c->why, c->why_size, "thread %s still traced by %d", tid, tracer);
		c->ok = false;
	} else if (s == 't' || (s == 'T' && !c->allow_stopped)) {
		snprintf(c->why, c->why_size, "thread %s left in state %c", tid, s);
		c->ok = false;
	}
	return c->ok;
}

bool target_healthy(pid_t pid, bool allow_stopped, char *why, size_t why_size)
{
	struct thread_check c = {allow_stopped, why, why_size, true};
	if (each_thread_status(pid, thread_healthy, &c) < 0) {
		snprintf(why, why_size, "target %d is gone", (int)pid);
		return false;
	}
	return c.ok;
}

const char *find_line(const char *from, const char *needle)
{
	const char *p = strstr(from, needle);
	if (!p)
		return NULL;
	while (p > from && p[-1] != '\n')
		p--;
	return p;
}

int sh(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool have_program(const char *name)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
	return sh(cmd) == 0;
}

bool have_go(void)
{
	return have_program("go");
}

int shell_output(const char *cmd, char *out, size_t out_size)
{
	FILE *p = popen(cmd, "r");
	cr_assert(p);
	size_t n = fread(out, 1, out_size - 1, p);
	out[n] = '\0';
	char scratch[4096];
	while (fread(scratch, 1, sizeof(scratch), p) > 0)
		;
	int status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Run `program args 'file'` through the shell (program is shell words),
 * with a writable home; stdout into out, stderr into err. */
static int run_pprof(const char *program, const char *args, const char *file, char *out,
		     size_t out_size, char *err, size_t err_size)
{
	char errp[] = "/tmp/diag-test-pprof-err-XXXXXX";
	int efd = mkstemp(errp);
	cr_assert(efd >= 0);
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} %s %s '%s' 2>'%s'", program, args, file, errp);
	int status = shell_output(cmd, out, out_size);
	slurp_fd(efd, err, err_size);
	close(efd);
	unlink(errp);
	return status;
}

int go_pprof(const char *args, const char *file, char *out, size_t out_size, char *err,
	     size_t err_size)
{
	/* go needs a writable cache too, even for `go tool`. */
	return run_pprof("GOCACHE=${GOCACHE:-/tmp/diag-test-gocache} go tool pprof", args, file, out,
			 out_size, err, err_size);
}

int upstream_pprof_raw(const char *pprof, const char *file, char *out, size_t out_size, char *err,
		       size_t err_size)
{
	char program[4200];
	snprintf(program, sizeof(program), "'%s'", pprof);
	return run_pprof(program, "-raw", file, out, out_size, err, err_size);
}

uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void sleep_ms(unsigned ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void loaders_start(pid_t out[2])
{
	for (int i = 0; i < 2; i++) {
		out[i] = fork();
		cr_assert(out[i] >= 0);
		if (out[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (volatile unsigned long x = 0;; x++)
				;
		}
	}
}

void loaders_stop(pid_t l[2])
{
	for (int i = 0; i < 2; i++) {
		kill(l[i], SIGKILL);
		waitpid(l[i], NULL, 0);
	}
}

void steal_mark(struct steal_mark *m)
{
	m->steal = m->total = 0;
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return;
	unsigned long long v[10] = {0};
	/* cpu user nice system idle iowait irq softirq steal guest guest_nice */
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) == 8) {
		m->steal = v[7];
		for (int i = 0; i < 8; i++)
			m->total += v[i];
	}
	fclose(f);
}

double steal_share_since(const struct steal_mark *m)
{
	struct steal_mark now;
	steal_mark(&now);
	if (now.total <= m->total || now.steal < m->steal)
		return 0;
	return (double)(now.steal - m->steal) / (double)(now.total - m->total);
}

void skip_if_stolen(double share, const char *what)
{
	fprintf(stderr, "hypervisor steal during the run: %.1f %%\n", 100 * share);
	if (share > STEAL_SKIP_SHARE)
		cr_skip_test("the hypervisor took %.0f %% of this machine's CPU time (steal in "
			     "/proc/stat): %s not judged",
			     100 * share, what);
}

bool path_exists(const char *dir, const char *name)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s%s%s", dir, name ? "/" : "", name ? name : "");
	struct stat st;
	return lstat(p, &st) == 0;
}

int tool_verify(const char *dir, char *why, size_t why_size)
{
	struct tool_result r;
	const char *args[] = {"verify", dir, NULL};
	tool_run(&r, args);
	if (why)
		snprintf(why, why_size, "%.1500s%.1500s", r.out, r.err);
	return r.exit_code;
}

void expect_verified(const char *dir, const char *ctx)
{
	char why[3072];
	int code = tool_verify(dir, why, sizeof(why));
	cr_expect_eq(code, 0, "%s%sverify %s: exit %d: %s", ctx ? ctx : "", ctx ? ": " : "", dir,
		     code, why);
}

cJSON *manifest_load(const char *dir)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	char *text = read_file(path, NULL);
	cJSON *m = text ? cJSON_Parse(text) : NULL;
	free(text);
	return m;
}

cJSON *manifest_need(const char *dir)
{
	cJSON *m = manifest_load(dir);
	cr_assert(m, "no manifest.json in %s, or it does not parse", dir);
	return m;
}

double number_at(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = o ? cJSON_GetObjectItem(o, a) : NULL;
	const cJSON *y = x && b ? cJSON_GetObjectItem(x, b) : x;
	return cJSON_IsNumber(y) ? y->valuedouble : -1;
}

void capture_spawn(struct capture *c, pid_t pid, const char *const *extra)
{
	make_tmpdir(c->dir, sizeof(c->dir));
	snprintf(c->out, sizeof(c->out), "%s/b", c->dir);
	snprintf(c->errp, sizeof(c->errp), "%s/stderr", c->dir);
	close(open(c->errp, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	const char *args[32] = {"-p", p, "-o", c->out, "-q"};
	size_t n = 5;
	for (size_t i = 0; extra && extra[i] && n < 31; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	c->tool = tool_spawn(args, "/dev/null", c->errp);
}

void capture_start(struct capture *c, pid_t pid, const char *dur, const char *hz)
{
	const char *extra[] = {"-d", dur, "-F", hz, NULL};
	capture_spawn(c, pid, extra);
}

char *capture_finish_rss(struct capture *c, int timeout_ms, long *ru_maxrss_kb)
{
	int code = -2, status = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	for (uint64_t t0 = now_ms();;) {
		pid_t r = wait4(c->tool, &status, WNOHANG, &ru);
		if (r == c->tool) {
			code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
			break;
		}
		if (now_ms() - t0 > (uint64_t)timeout_ms) {
			kill(c->tool, SIGKILL);
			waitpid(c->tool, &status, 0);
			break;
		}
		usleep(5000);
	}
	if (ru_maxrss_kb)
		*ru_maxrss_kb = ru.ru_maxrss;
	char *err = read_file(c->errp, NULL);
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	cr_expect_eq(code, 0,
		     "diag-attach exit %d (-1: signal %d, -2: still running after %d ms): %s", code,
		     sig, timeout_ms, err ? err : "");
	expect_verified(c->out, NULL);
	return err;
}

char *capture_finish(struct capture *c, int timeout_ms)
{
	return capture_finish_rss(c, timeout_ms, NULL);
}

int capture_end_ms(int duration_ms, int hz, int busy_threads)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus > 0 && busy_threads > cpus)
		busy_threads = (int)cpus;
	int samples = (int)((long)duration_ms * hz / 1000 * busy_threads);
	return 2 * (duration_ms + END_SLACK_MS + DEFERRED_UNWIND_MS(samples));
}

int rel_loops(int default_loops)
{
	const char *e = getenv("DIAG_REL_LOOPS");
	int n = e ? atoi(e) : 0;
	return n > 0 ? n : default_loops;
}

void rel_shm_create(struct rel_target *rt)
{
	memset(rt, 0, sizeof(*rt));
	rt->t.stdout_fd = -1;
	snprintf(rt->shm_path, sizeof(rt->shm_path), "/tmp/diag-rel-shm-XXXXXX");
	int fd = mkstemp(rt->shm_path);
	cr_assert(fd >= 0);
	cr_assert(ftruncate(fd, (off_t)sizeof(struct rel_shared)) == 0);
	rt->sh = mmap(NULL, sizeof(struct rel_shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert(rt->sh != MAP_FAILED);
	close(fd);
	setenv("DIAG_REL_SHM", rt->shm_path, 1);
}

void rel_start(struct rel_target *rt, const char *const *args)
{
	rel_shm_create(rt);
	rt->t = target_start_args("reliability/rel_target", args, "ready");
	snprintf(rt->pid, sizeof(rt->pid), "%d", (int)rt->t.pid);
}

struct target target_start_args(const char *name, const char *const *args, const char *ready_word)
{
	const char *argv[64];
	size_t n = 0;
	argv[n++] = target_path(name);
	for (size_t i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return target_start(argv, ready_word);
}

void rel_stop(struct rel_target *rt)
{
	if (rt->t.pid > 0 || rt->t.stdout_fd >= 0)
		target_kill(&rt->t);
	if (rt->sh) {
		int sem = atomic_load(&rt->sh->sem_id);
		if (sem > 0)
			semctl(sem, 0, IPC_RMID);
		munmap(rt->sh, sizeof(struct rel_shared));
		rt->sh = NULL;
	}
	if (rt->shm_path[0])
		unlink(rt->shm_path);
	rt->shm_path[0] = '\0';
}

/* Threads that are traced (TracerPid set) or, with only_stopped, that
 * sit in a ptrace-stop ('t'). */
struct thread_count {
	bool only_stopped;
	int n;
};

static bool thread_count_one(const char *tid, const char *st, void *ctx)
{
	struct thread_count *c = ctx;
	if (status_state(st) == 't' || (!c->only_stopped && status_tracer(st) != 0))
		c->n++;
	return true;
}

int traced_threads(pid_t pid)
{
	struct thread_count c = {false, 0};
	each_thread_status(pid, thread_count_one, &c);
	return c.n;
}

int ptrace_stopped_threads(pid_t pid)
{
	struct thread_count c = {true, 0};
	each_thread_status(pid, thread_count_one, &c);
	return c.n;
}

static bool thread_stopped(const char *tid, const char *st, void *ctx)
{
	struct thread_check *c = ctx;
	char s = status_state(st);
	if (s != '?' && s != 'T') {
		snprintf(c->why, c->why_size, "thread %s is in %c, expected T (stopped)", tid, s);
		c->ok = false;
	}
	return c->ok;
}

static bool all_threads_stopped(pid_t pid, char *why, size_t why_size)
{
	struct thread_check c = {false, why, why_size, true};
	return each_thread_status(pid, thread_stopped, &c) == 0 && c.ok;
}

bool rel_healthy(struct rel_target *rt, const struct health *h, char *why, size_t why_size)
{
	pid_t pid = rt->t.pid;
	if (!target_healthy(pid, h->allow_stopped || h->expect_stopped, why, why_size))
		return false;
	/* A thread we just detached re-enters the group-stop when it next
	 * runs; on a loaded machine that takes a moment. */
	if (h->expect_stopped) {
		bool stopped = false;
		for (uint64_t until = now_ms() + 2000; !stopped && now_ms() < until; usleep(2000))
			stopped = all_threads_stopped(pid, why, why_size);
		if (!stopped)
			return false;
	}
	for (int sig = 1; sig < REL_NSIG; sig++) {
		uint64_t n = atomic_load(&rt->sh->signals[sig]);
		if (n == 0 || (h->sent_mask & (1ull << sig)))
			continue;
		if (sig == SIGCHLD && h->allow_sigchld)
			continue;
		snprintf(why, why_size, "target received %llu x signal %d (%s) that the test did not send",
			 (unsigned long long)n, sig, strsignal(sig));
		return false;
	}
	if (h->expect_stopped || h->skip_progress)
		return true;
	uint64_t before = atomic_load(&rt->sh->progress);
	/* 2 s: on a loaded 2-CPU machine an exec'ing target can take that
	 * long to run its threads again. */
	for (uint64_t until = now_ms() + 2000; now_ms() < until;) {
		if (atomic_load(&rt->sh->progress) != before)
			return true;
		usleep(1000);
	}
	snprintf(why, why_size, "target made no progress for 2 s after the tool exited");
	return false;
}

void expect_healthy(struct rel_target *rt, const struct health *h, const char *ctx)
{
	static const struct health defaults;
	char why[512];
	cr_expect(rel_healthy(rt, h ? h : &defaults, why, sizeof(why)), "%s%shealth: %s",
		  ctx ? ctx : "", ctx ? ": " : "", why);
}

/* The state letter of /proc/PID/task/TID/stat, after the last ")" (a
 * thread name may hold one), or '?' when it cannot be read. */
pid_t other_thread_of(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	pid_t other = 0;
	for (struct dirent *e; (e = readdir(d));) {
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid > 0 && tid != pid)
			other = tid;
	}
	closedir(d);
	return other;
}

char task_state(pid_t pid, const char *tid)
{
	char path[128], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

char proc_state(pid_t pid)
{
	char tid[16];
	snprintf(tid, sizeof(tid), "%d", (int)pid);
	return task_state(pid, tid);
}

void rel_capture_start(struct rel_target *rt, struct capture *c, const char *const *args,
		       const char *dur, const char *hz)
{
	rel_start(rt, args);
	capture_start(c, rt->t.pid, dur, hz);
}

void rel_capture_done(struct rel_target *rt, struct capture *c, const struct health *h)
{
	expect_healthy(rt, h, NULL);
	rel_stop(rt);
	rm_rf(c->dir);
}

void expect_member_has(const char *dir, const char *name, const char *needle, const char *what)
{
	char *text = read_in(dir, name);
	cr_expect(text && strstr(text, needle), "%s", what);
	free(text);
}

void rel_start_spin2(struct rel_target *rt)
{
	const char *args[] = {"spin", "2", NULL};
	rel_start(rt, args);
}

pid_t rel_command_wait(struct rel_target *rt, int cmd, unsigned poll_us, int *status,
		       uint64_t *waited_ms)
{
	uint64_t t0 = now_ms();
	atomic_store(&rt->sh->command, cmd);
	pid_t r;
	*status = 0;
	while ((r = waitpid(rt->t.pid, status, WNOHANG)) == 0 && now_ms() - t0 < 5000)
		usleep(poll_us);
	*waited_ms = now_ms() - t0;
	return r;
}

/* Read the target's output until a line contains needle (10 s at most);
 * that line is copied into line. */
void wait_for_line(int fd, const char *needle, char *line, size_t size)
{
	size_t len = 0;
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	for (;;) {
		cr_assert(poll(&pfd, 1, 10000) > 0, "no line with \"%s\" within 10 s", needle);
		char c;
		cr_assert(read(fd, &c, 1) == 1, "output closed before \"%s\"", needle);
		if (c != '\n') {
			if (len + 1 < size)
				line[len++] = c;
			continue;
		}
		line[len] = '\0';
		if (strstr(line, needle))
			return;
		len = 0;
	}
}

/* ---- Go fixtures (tests/targets/go/fixture) ---- */

/* Send a command line to the fixture and wait for its "ok" answer. */
void go_fixture_command(struct target *t, const char *cmd)
{
	char line[512];
	snprintf(line, sizeof(line), "%s\n", cmd);
	cr_assert(write(t->stdin_fd, line, strlen(line)) == (ssize_t)strlen(line));
	size_t len = 0;
	for (;;) {
		char c;
		cr_assert(read(t->stdout_fd, &c, 1) == 1, "fixture closed stdout");
		if (c == '\n') {
			line[len] = '\0';
			if (strncmp(line, "ok", 2) == 0)
				return;
			len = 0;
		} else if (len < sizeof(line) - 1) {
			line[len++] = c;
		}
	}
}

/* The "goroutine N [" header lines of a debug=2 dump. */
size_t go_goroutine_ids(const char *text, long *ids, size_t max)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, "goroutine ")) && n < max; p++) {
		if (p != text && p[-1] != '\n')
			continue;
		char *end;
		long id = strtol(p + 10, &end, 10);
		if (end != p + 10 && strncmp(end, " [", 2) == 0)
			ids[n++] = id;
	}
	return n;
}


pid_t perf_record_start(pid_t pid, int hz, const char *call_graph, const char *out)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "exec perf record -q -e cpu-clock %s %d --call-graph %s -p %d -o %s >/dev/null 2>&1",
		 hz < 0 ? "-c" : "-F", hz < 0 ? 1000000000 / -hz : hz, call_graph, (int)pid, out);
	pid_t perf = fork();
	cr_assert(perf >= 0);
	if (perf == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	/* perf has no "ready": wait for its events to be open. */
	perf_events_wait(perf);
	return perf;
}

/* Until the process `sh -c exec perf` became holds a perf event open
 * (plus a little, for the rest of its threads' events). */
void perf_events_wait(pid_t perf)
{
	uint64_t give_up = now_ms() + 20000;
	for (;;) {
		cr_assert(now_ms() < give_up, "perf record opened no event within 20 s");
		char dir[64], out[256];
		snprintf(dir, sizeof(dir), "ls -l /proc/%d/fd 2>/dev/null | grep -c perf_event", (int)perf);
		if (shell_output(dir, out, sizeof(out)) == 0 && atoi(out) > 0)
			break;
		sleep_ms(20);
	}
	sleep_ms(200);
}

void shares_add(struct shares *s, const char *name, double v)
{
	s->total += v;
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->name[i], name) == 0) {
			s->value[i] += v;
			return;
		}
	if (s->n < MAX_FUNCS) {
		s->name[s->n] = strdup(name);
		s->value[s->n++] = v;
	}
}

double shares_pct(const struct shares *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->name[i], name) == 0)
			return s->total > 0 ? 100.0 * s->value[i] / s->total : 0;
	return 0;
}

/* perf report's flat (self) samples per symbol, "[.] name" / "[k] name". */
void perf_report_leaf_shares(const char *perf_data, struct shares *s)
{
	memset(s, 0, sizeof(*s));
	char cmd[1024], out[65536];
	snprintf(cmd, sizeof(cmd),
		 "perf report -i %s --stdio --no-children -g none --sort sym -F sample,sym 2>/dev/null",
		 perf_data);
	cr_assert_eq(shell_output(cmd, out, sizeof(out)), 0, "perf report failed");
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long n;
		char tag[8], name[256];
		if (line[0] == '#' || sscanf(line, " %llu [%7[^]]] %255s", &n, tag, name) != 3)
			continue;
		shares_add(s, name, (double)n);
	}
	cr_assert_gt(s->total, 0, "no samples in perf report of %s", perf_data);
}
