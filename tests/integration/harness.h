/*
 * harness: what every integration test needs. Targets are spawned as the
 * test's own children (so Yama ptrace_scope=1 allows tracing them), are
 * waited for through a "ready" line on a pipe rather than with sleeps, and
 * are always killed and reaped. The tool runs as a separate process, the
 * way an operator runs it.
 */
#ifndef DIAG_TEST_HARNESS_H
#define DIAG_TEST_HARNESS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct target {
	pid_t pid;
	int stdout_fd; /* read end of the target's stdout */
	int stdin_fd;  /* write end of the target's stdin (kept open: EOF ends some targets) */
};

/* Path of a built target program (from $DIAG_TARGETS_DIR). */
const char *target_path(const char *name);

/* Start the target with argv (argv[0] = path, NULL-terminated) and wait up
 * to 10 s for a line starting with "ready" (or any line if ready_word is
 * NULL). Asserts on failure. */
struct target target_start(const char *const *argv, const char *ready_word);
/* The same, with the target's stderr sent to stderr_path (criterion does
 * not pass a test's own stderr on to the log, so a failing test quotes the
 * file in its message instead). */
struct target target_start_logged(const char *const *argv, const char *ready_word,
				  const char *stderr_path);
/* target_start of the built target name (target_path) with args (without
 * argv[0], NULL-terminated; at most 62 are passed). */
struct target target_start_args(const char *name, const char *const *args, const char *ready_word);
/* Read a target's output (fd) until a line contains needle, 10 s at
 * most (asserts); that line is copied into line. */
void wait_for_line(int fd, const char *needle, char *line, size_t size);
/* SIGKILL and reap. Returns the wait status. */
int target_kill(struct target *t);

struct tool_result {
	int exit_code;  /* -1 if killed by a signal */
	int signal;
	char out[65536];
	char err[65536];
};

/* Run build/diag-attach with args (NULL-terminated, without argv[0]) and wait. */
void tool_run(struct tool_result *r, const char *const *args);
/* Start the tool in the background; returns its pid; output goes to files
 * out_path / err_path (may be NULL). */
pid_t tool_spawn(const char *const *args, const char *out_path, const char *err_path);
/* tool_spawn with SIGHUP ignored, as `nohup diag-attach ...` starts it
 * (tool_spawn gives it the default, whatever the test runner had). */
pid_t tool_spawn_nohup(const char *const *args, const char *out_path, const char *err_path);
/* The same two, with the tool running as uid:gid, no supplementary groups
 * and (dropped from root) no capabilities: an ordinary user. The output
 * files are opened before the drop. Exit status 126 if the drop failed. */
void tool_run_as(struct tool_result *r, uid_t uid, gid_t gid, const char *const *args);
pid_t tool_spawn_as(uid_t uid, gid_t gid, const char *const *args, const char *out_path,
		    const char *err_path);
/* May uid:gid (no supplementary groups) execute path? Asked by a child
 * that has dropped to those ids. */
bool can_exec_as(uid_t uid, gid_t gid, const char *path);
/* Wait for a spawned tool, with a timeout in ms; returns the exit code or
 * -1 (killed by signal) or -2 (timed out: it is then SIGKILLed). */
int tool_wait(pid_t pid, int timeout_ms);

/*
 * What most integration tests start with: a target, a fresh directory for
 * what the tool writes about it, and the target's pid as the tool's -p
 * argument.
 */
struct target_run {
	struct target t;
	char dir[256], out[300], pid[16];
};
/* target_start(argv, ready_word), make_tmpdir(dir), out = dir/sub and pid
 * the target's pid as text. Asserts on failure. */
void run_begin(struct target_run *r, const char *const *argv, const char *ready_word,
	       const char *sub);
/* Kill and reap the target, rm_rf the directory. */
void run_end(struct target_run *r);
/* tool_run, then cr_assert that the tool exited 0 (its first argument and
 * stderr quoted). */
void tool_run_ok(struct tool_result *r, const char *const *args);
/* read_file of dir/name (NUL-terminated, caller frees), NULL if unreadable. */
char *read_in(const char *dir, const char *name);

/* A fresh directory under /tmp; the returned path is static per call site
 * style: caller copies it. Removed by rm_rf. */
void make_tmpdir(char *buf, size_t size);
void rm_rf(const char *path);

/* Read a whole file; NUL-terminated; caller frees. NULL if unreadable. */
char *read_file(const char *path, size_t *len);

/* The health oracle after the tool exited: no thread of pid is traced or in
 * a ptrace-stop ('t'), and none is in 'T' unless allow_stopped. Returns
 * true if healthy; describes the first problem in why. */
bool target_healthy(pid_t pid, bool allow_stopped, char *why, size_t why_size);

/*
 * Reliability targets (tests/targets/reliability/rel_target.c) report
 * through a shared page (rel_shared.h): progress, every signal received,
 * per-scenario counters; the test writes commands into it.
 */
struct rel_shared;
struct rel_target {
	struct target t;
	struct rel_shared *sh;
	char shm_path[64];
	char pid[16]; /* t.pid as text, the tool's -p argument (set by rel_start) */
};

/* Create the shared page, start rel_target with args (without argv[0],
 * NULL-terminated) and wait for "ready". Asserts on failure. */
void rel_start(struct rel_target *rt, const char *const *args);
/* Only the shared page (and $DIAG_REL_SHM), for tests that start the
 * target in their own way. */
void rel_shm_create(struct rel_target *rt);
/* rel_start(rt, {"spin", "2"}): two spinning threads, the reliability
 * tests' usual subject. */
void rel_start_spin2(struct rel_target *rt);
/* Write the command cmd (enum rel_command) into rt's page, then wait up to
 * 5 s (polling every poll_us) for the target to end. Returns waitpid's
 * answer (rt->t.pid once it ended), with its status in *status and the
 * wait, from the command on, in *waited_ms. */
pid_t rel_command_wait(struct rel_target *rt, int cmd, unsigned poll_us, int *status,
		       uint64_t *waited_ms);
/* Kill and reap it (if still ours), remove the page and any semaphore. */
void rel_stop(struct rel_target *rt);

/* The health oracle H of reliability.md section 4, checked after the tool
 * exited: every thread has TracerPid 0 and is not in 't'; a thread is in
 * 'T' only if allow_stopped (and every thread is, if expect_stopped); the
 * target received no signal outside sent_mask (bit n = signal n; SIGCHLD is
 * also allowed when allow_sigchld); its progress counter advances within
 * 2 s (unless it is expected stopped, or skip_progress is set). */
struct health {
	bool allow_stopped;
	bool expect_stopped;
	bool allow_sigchld;
	bool skip_progress;
	uint64_t sent_mask;
};
bool rel_healthy(struct rel_target *rt, const struct health *h, char *why, size_t why_size);
/* cr_expect that rel_healthy holds. h NULL: the defaults (struct health
 * {0}); ctx (may be NULL) starts the failure message. */
void expect_healthy(struct rel_target *rt, const struct health *h, const char *ctx);

struct capture;
/* A reliability iteration's start: rel_start(rt, args), then capture_start
 * of it with -d dur -F hz. */
void rel_capture_start(struct rel_target *rt, struct capture *c, const char *const *args,
		       const char *dur, const char *hz);
/* Its end: expect_healthy(rt, h, NULL), rel_stop, rm_rf the capture's
 * directory. */
void rel_capture_done(struct rel_target *rt, struct capture *c, const struct health *h);

/* Threads of pid in ptrace-stop or traced right now (0 = none). */
int traced_threads(pid_t pid);
/* Threads of pid in a ptrace-stop (state 't'): held by a tracer now. */
int ptrace_stopped_threads(pid_t pid);
/* One thread's state letter (R, S, D, T, t, Z...), or '?' when it cannot be
 * read (gone, or reaped); proc_state is the same for a process's leader. */
char task_state(pid_t pid, const char *tid);
char proc_state(pid_t pid);
/* A thread of pid other than its main one (the last /proc lists), or 0
 * when it has none. */
pid_t other_thread_of(pid_t pid);

/* How many times to repeat racy tests: $DIAG_REL_LOOPS if set, else
 * default_loops. */
int rel_loops(int default_loops);
/* for (int it = 0; it < rel_loops(default_loops); it++), rel_loops read
 * once: the loop every racy test runs its body in. */
#define REL_REPEAT(it, default_loops)                                                              \
	for (int it = 0, it##_loops = rel_loops(default_loops); it < it##_loops; it++)

/* Milliseconds on CLOCK_MONOTONIC. */
uint64_t now_ms(void);
/* Sleep ms milliseconds, resumed after a signal handler ran. */
void sleep_ms(unsigned ms);
/* Two processes that keep both cores busy (a loaded machine) until
 * loaders_stop; they die with the test. */
/* perf record -e cpu-clock -F hz --call-graph call_graph ("fp", "dwarf")
 * of pid into out (hz < 0: -c 1e9/-hz, a fixed period as ours, where -F
 * lets the kernel adjust it), started and waited for until its events are open; it
 * ends with the target or SIGINT. Its pid. */
pid_t perf_record_start(pid_t pid, int hz, const char *call_graph, const char *out);

/* Until the process perf (a `perf record` started by `sh -c exec`)
 * holds a perf event open, and a little more for its other threads'. */
void perf_events_wait(pid_t perf);

/* Functions' shares of a profile: name -> value, and the total. */
#define MAX_FUNCS 64
struct shares {
	const char *name[MAX_FUNCS];
	double value[MAX_FUNCS];
	size_t n;
	double total;
};
void shares_add(struct shares *s, const char *name, double v);
/* name's share of the total, in percent (0 if absent). */
double shares_pct(const struct shares *s, const char *name);
/* perf report's flat (self) samples per symbol of perf_data, "[.] name"
 * and "[k] name" rows. */
void perf_report_leaf_shares(const char *perf_data, struct shares *s);

void loaders_start(pid_t out[2]);
void loaders_stop(pid_t l[2]);

/* The hypervisor's share of this machine's CPU time (steal in /proc/stat)
 * since a mark. A virtual machine whose host is overcommitted runs its
 * vCPUs only part of the time: perf's cpu-clock counts the stolen time as
 * the running thread's, the kernel's accounting (schedstat, /proc) does
 * not, and every deadline stretches. Timing truths cannot be judged on
 * such a machine; tests that judge them skip, saying so, above
 * STEAL_SKIP_SHARE. */
struct steal_mark {
	unsigned long long steal, total;
};
#define STEAL_SKIP_SHARE 0.15
void steal_mark(struct steal_mark *m);
/* 0..1; 0 when /proc/stat cannot be read. */
double steal_share_since(const struct steal_mark *m);
/* Skip the running test (criterion) when share (steal_share_since: read
 * once, so that a test that cleans up before skipping decides on the same
 * figure) is over STEAL_SKIP_SHARE, naming it and what was not judged. */
void skip_if_stolen(double share, const char *what);

/* Does dir/name exist (name NULL: dir itself)? lstat: a dangling symlink
 * counts. */
bool path_exists(const char *dir, const char *name);

/*
 * Bundles. The tool's own verifier is the oracle for "a bundle": these run
 * `diag-attach verify`, never a reimplementation of it.
 */
/* `diag-attach verify DIR`: returns its exit code; why (may be NULL) gets
 * its stdout and stderr, cut to fit. */
int tool_verify(const char *dir, char *why, size_t why_size);
/* cr_expect that DIR verifies (exit 0); ctx (may be NULL) starts the
 * failure message. */
void expect_verified(const char *dir, const char *ctx);
/* DIR/manifest.json parsed, or NULL when it is missing or not JSON. The
 * caller cJSON_Delete()s it. */
cJSON *manifest_load(const char *dir);
/* The same, but cr_assert that it is there and parses. */
cJSON *manifest_need(const char *dir);
/* The number at o.a.b (b NULL: at o.a), or -1 when o is NULL or the value
 * is absent or not a number. */
double number_at(const cJSON *o, const char *a, const char *b);

/*
 * A capture in the background: `diag-attach -p PID -o DIR/b -q EXTRA...`
 * with stdout to /dev/null and stderr to DIR/stderr, DIR a fresh
 * make_tmpdir (rm_rf(c.dir) when done).
 */
struct capture {
	pid_t tool;
	char dir[256], out[300], errp[300];
};
/* extra: more arguments, NULL-terminated (or NULL). */
void capture_spawn(struct capture *c, pid_t pid, const char *const *extra);
/* The same with -d dur -F hz. */
void capture_start(struct capture *c, pid_t pid, const char *dur, const char *hz);
/* Wait up to timeout_ms for the tool (then SIGKILL it); cr_expect exit 0
 * and a bundle that verifies. Returns the tool's stderr (caller frees; NULL
 * if unreadable). */
char *capture_finish(struct capture *c, int timeout_ms);
/* END_SLACK_MS: what a capture may take after its duration to end and
 * write its bundle: 2 s, twice that under the sanitizers (2-3x slower at
 * everything, their process start and exit included).
 * DEFERRED_UNWIND_MS(n): what unwinding n CPU samples kept for after the
 * capture (--unwind-later, the default) may add to its end: about 40 us
 * each in the plain build and 270 us under the sanitizers on a quiet box
 * (4840 samples of a 5 s capture at 1 kHz took 190 ms and 1.26 s), about
 * 2.5 times that with both cores busy (700 us: 3.0-3.3 s for
 * b5_exec_storm's under the sanitizers), so 100 and 700 us. */
#if defined(__SANITIZE_ADDRESS__)
#define END_SLACK_MS 4000
#define DEFERRED_UNWIND_MS(n) ((n) * 7 / 10)
#else
#define END_SLACK_MS 2000
#define DEFERRED_UNWIND_MS(n) ((n) / 10)
#endif
/* How long a capture of duration_ms at hz may run in all before a test
 * calls it hung: twice its duration, END_SLACK_MS and the deferred
 * unwinding of the samples of busy_threads spinning threads (at most one
 * per online CPU). A wait for a hang, not a speed check (bench/ measures
 * speed): twice, so that CI's parallel suites on 2 cores never read as
 * one, and never less than the fixed waits it replaced (8-10 s). */
int capture_end_ms(int duration_ms, int hz, int busy_threads);
/* Send a command line ("dump2 FILE") to the Go fixture and wait for its
 * "ok" answer. */
void go_fixture_command(struct target *t, const char *cmd);
/* The ids of the "goroutine N [" header lines of a Go debug=2 dump, at
 * most max; how many. */
size_t go_goroutine_ids(const char *text, long *ids, size_t max);

/* The same, also returning the tool's peak RSS with its reaped children's,
 * in KiB (getrusage of the tool: includes its worker). */
char *capture_finish_rss(struct capture *c, int timeout_ms, long *ru_maxrss_kb);

/* cr_expect that member name of the bundle dir can be read and contains
 * needle; what is the failure message. */
void expect_member_has(const char *dir, const char *name, const char *needle, const char *what);

/* The lines of text that contain needle, in order: returns a pointer to the
 * first line at or after from that contains needle, or NULL. */
const char *find_line(const char *from, const char *needle);

/* Run cmd with /bin/sh; its stdout (NUL-terminated, cut at out_size - 1,
 * the rest drained) into out. Returns its exit status, -1 if killed. */
int shell_output(const char *cmd, char *out, size_t out_size);

/* Run cmd with /bin/sh (system(3)); its exit status, -1 if it did not
 * exit. */
int sh(const char *cmd);
/* Is name a program on PATH? */
bool have_program(const char *name);
/* Is `go` on PATH (for `go tool pprof` checks)? */
bool have_go(void);
/* Run `go tool pprof ARGS FILE`; returns its exit status; stderr captured
 * into err (NUL-terminated). */
int go_pprof(const char *args, const char *file, char *out, size_t out_size, char *err,
	     size_t err_size);
/* upstream pprof (a binary, not `go tool`) -raw file: the same outputs. */
int upstream_pprof_raw(const char *pprof, const char *file, char *out, size_t out_size, char *err,
		       size_t err_size);

/* Send a command line ("dump2 FILE") to the Go fixture and wait for its
 * "ok" answer. */
void go_fixture_command(struct target *t, const char *cmd);
/* The ids of the "goroutine N [" header lines of a Go debug=2 dump, at
 * most max; how many. */
size_t go_goroutine_ids(const char *text, long *ids, size_t max);

#endif
