/*
 * harness: what every integration test needs. Targets are spawned as the
 * test's own children (so Yama ptrace_scope=1 allows tracing them), are
 * waited for through a "ready" line on a pipe rather than with sleeps, and
 * are always killed and reaped. The tool runs as a separate process, the
 * way an operator runs it.
 */
#ifndef DIAG_TEST_HARNESS_H
#define DIAG_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
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
/* Wait for a spawned tool, with a timeout in ms; returns the exit code or
 * -1 (killed by signal) or -2 (timed out: it is then SIGKILLed). */
int tool_wait(pid_t pid, int timeout_ms);

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

/* The lines of text that contain needle, in order: returns a pointer to the
 * first line at or after from that contains needle, or NULL. */
const char *find_line(const char *from, const char *needle);

/* Is `go` on PATH (for `go tool pprof` checks)? */
bool have_go(void);
/* Run `go tool pprof ARGS FILE`; returns its exit status; stderr captured
 * into err (NUL-terminated). */
int go_pprof(const char *args, const char *file, char *out, size_t out_size, char *err,
	     size_t err_size);

#endif
