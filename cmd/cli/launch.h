/*
 * launch: start a command for `diag-attach [options] -- CMD ARGS...`, as
 * strace and py-spy do, so that it can be captured from its first moments.
 *
 * The command runs as the grandchild of a small shim process, not as our
 * child: the capture waits for the target's threads by tid (ptrace stops,
 * the reaper of threads that die while held), and as their parent too we
 * could consume the exit status we must hand on. The shim waits for the
 * command and sends its wait status down a pipe. The command gets our
 * stdin, stdout, stderr and process group (Ctrl-C reaches it as it would
 * without us), and default dispositions for the signals we ignore.
 */
#ifndef DIAG_CMD_CLI_LAUNCH_H
#define DIAG_CMD_CLI_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

struct launch {
	pid_t pid;     /* the command */
	pid_t shim;
	int status_fd; /* the shim's report */
	int status;    /* the command's wait status, once known */
	bool done;
};

/* Start argv[0] (found in PATH) with argv, and return once it has been
 * exec'd, held stopped (job control) before its first instruction: 0, or
 * -errno (-ENOENT, -EACCES...: it could not be run; nothing is left
 * running). If we die before launch_continue, the shim lets it run. */
int launch_start(char *const argv[], struct launch *l);

/* Let the command run (SIGCONT); from the capture's ready callback, and
 * on every way out. */
void launch_continue(const struct launch *l);

/* Wait for the command's end (timeout_ms < 0: as long as it takes) and
 * keep its wait status in l->status. 0, -ETIMEDOUT, -EINTR (a signal, when
 * interruptible), -EIO (the shim died without a report). */
int launch_wait(struct launch *l, int timeout_ms, bool interruptible);

/* The exit status a shell would give: the code, or 128 + the signal. */
int launch_exit_code(int status);

void launch_release(struct launch *l);

/* The manifest's "launched" object: argv, pid and, if the command has
 * ended (waited up to 2 s, when may_have_ended), its exit_status (and
 * signal); otherwise running_when_the_capture_ended. NULL on ENOMEM. */
cJSON *launch_json(struct launch *l, char **argv, bool may_have_ended);

/* After a capture of the command: let it run, wait for its end (Ctrl-C
 * stops the wait; said on stderr unless quiet), release l and return its
 * exit status as a shell gives it, or code (our own failure, printed
 * already) if the wait is given up. */
int launch_finish(struct launch *l, int code, bool quiet);

#endif
