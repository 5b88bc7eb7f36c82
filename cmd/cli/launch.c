/* launch: see launch.h. */
#include "cmd/cli/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

/* In the command, before exec: the dispositions we set would survive the
 * exec where they are "ignore" (a command that ignores SIGPIPE or
 * SIGTSTP because its profiler did is not the command the user ran). */
static void default_signals(bool keep_hangup_ignored)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN,
				   SIGTTOU, SIGXFSZ, SIGCHLD};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	/* Under nohup the command is to outlive the terminal too, as
	 * `nohup CMD` would. */
	if (!keep_hangup_ignored)
		signal(SIGHUP, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static bool write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static volatile pid_t shim_child;

/* The tool died (PR_SET_PDEATHSIG): the command must not stay stopped
 * for a capture that will never let it go. */
static void on_tool_death(int sig)
{
	(void)sig;
	if (shim_child > 0)
		kill(shim_child, SIGCONT);
	_exit(0);
}

/* The shim: start the command stopped right after its exec (so that the
 * capture is in place before its first instruction runs), report its pid
 * and whether exec worked, then its wait status. Only async-signal-safe
 * calls: we may have threads. */
static _Noreturn void shim_main(char *const argv[], int report_fd)
{
	/* A SIGHUP the tool was started ignoring (cli_install_stop_handlers
	 * kept that) stays ignored for the command. */
	struct sigaction hup;
	bool hangup_ignored = sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler == SIG_IGN;
	/* Our signals are the command's business, and the tool's; the shim
	 * must live to report, and ends with the tool. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGUSR1, on_tool_death);
	prctl(PR_SET_PDEATHSIG, SIGUSR1);
	int exec_pipe[2];
	if (pipe2(exec_pipe, O_CLOEXEC) < 0)
		_exit(1);
	pid_t child = fork();
	if (child < 0)
		_exit(1);
	if (child == 0) {
		close(exec_pipe[0]);
		close(report_fd);
		default_signals(hangup_ignored);
		/* Traced by the shim only across the exec: the exec stops it
		 * (SIGTRAP), and the shim lets go of it with a SIGSTOP. */
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0) {
			int e = errno;
			write_all(exec_pipe[1], &e, sizeof(e));
			_exit(127);
		}
		execvp(argv[0], argv);
		int e = errno;
		write_all(exec_pipe[1], &e, sizeof(e));
		_exit(127);
	}
	shim_child = child;
	close(exec_pipe[1]);
	int32_t exec_errno = 0;
	if (read_full(exec_pipe[0], &exec_errno, sizeof(exec_errno)) != sizeof(exec_errno))
		exec_errno = 0; /* EOF: the exec closed it */
	close(exec_pipe[0]);
	int status;
	if (exec_errno == 0) {
		/* Its stop at the exec; then stopped by job control until the
		 * tool sends SIGCONT (launch_continue). */
		while (waitpid(child, &status, __WALL) < 0 && errno == EINTR)
			;
		if (WIFSTOPPED(status))
			ptrace(PTRACE_DETACH, child, NULL, (void *)(long)SIGSTOP);
	}
	int32_t head[2] = {(int32_t)child, exec_errno};
	write_all(report_fd, head, sizeof(head));
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	int32_t st = status;
	write_all(report_fd, &st, sizeof(st));
	_exit(0);
}

int launch_start(char *const argv[], struct launch *l)
{
	memset(l, 0, sizeof(*l));
	l->status_fd = -1;
	int report[2];
	if (pipe2(report, O_CLOEXEC) < 0)
		return -errno;
	pid_t shim = fork();
	if (shim < 0) {
		int e = errno;
		close(report[0]);
		close(report[1]);
		return -e;
	}
	if (shim == 0) {
		close(report[0]);
		shim_main(argv, report[1]);
	}
	close(report[1]);
	int32_t head[2];
	if (read_full(report[0], head, sizeof(head)) != sizeof(head)) {
		close(report[0]);
		waitpid(shim, NULL, 0);
		return -EIO;
	}
	if (head[1]) {
		close(report[0]);
		waitpid(shim, NULL, 0);
		return -head[1];
	}
	l->pid = head[0];
	l->shim = shim;
	l->status_fd = report[0];
	return 0;
}

int launch_wait(struct launch *l, int timeout_ms, bool interruptible)
{
	if (l->done)
		return 0;
	struct pollfd p = {.fd = l->status_fd, .events = POLLIN};
	for (;;) {
		int r = poll(&p, 1, timeout_ms);
		if (r < 0 && errno == EINTR) {
			if (interruptible)
				return -EINTR;
			continue;
		}
		if (r == 0)
			return -ETIMEDOUT;
		break;
	}
	int32_t st;
	if (read_full(l->status_fd, &st, sizeof(st)) != sizeof(st))
		return -EIO;
	l->status = st;
	l->done = true;
	return 0;
}

void launch_continue(const struct launch *l)
{
	if (l->pid > 0 && !l->done)
		kill(l->pid, SIGCONT);
}

int launch_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

void launch_release(struct launch *l)
{
	if (l->status_fd >= 0)
		close(l->status_fd);
	l->status_fd = -1;
	/* A shim whose command still runs is not waited for: it dies with
	 * us (PDEATHSIG), and the command goes on, reparented. */
	if (l->shim > 0)
		while (waitpid(l->shim, NULL, l->done ? 0 : WNOHANG) < 0 && errno == EINTR)
			;
	l->shim = 0;
}

/* After a capture of a command we started: wait for it to end (Ctrl-C
 * stops the wait) and exit as it did, as strace does; our own failure,
 * code, has been printed already. If the wait is given up, code. */
int launch_finish(struct launch *l, int code, bool quiet)
{
	launch_continue(l); /* never left stopped, whatever failed */
	if (!l->done && !quiet)
		fprintf(stderr, "diag-attach: waiting for pid %d to exit (Ctrl-C: stop waiting)\n",
			(int)l->pid);
	int r = launch_wait(l, -1, true);
	if (r == 0)
		code = launch_exit_code(l->status);
	else if (!quiet)
		fprintf(stderr, "diag-attach: pid %d is still running\n", (int)l->pid);
	launch_release(l);
	return code;
}

cJSON *launch_json(struct launch *l, char **argv, bool may_have_ended)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON *a = cJSON_AddArrayToObject(o, "argv");
	for (char **p = argv; *p; p++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*p));
	cJSON_AddNumberToObject(o, "pid", l->pid);
	if (may_have_ended && launch_wait(l, 2000, false) == 0) {
		cJSON_AddNumberToObject(o, "exit_status", launch_exit_code(l->status));
		if (WIFSIGNALED(l->status))
			cJSON_AddNumberToObject(o, "signal", WTERMSIG(l->status));
	} else {
		cJSON_AddTrueToObject(o, "running_when_the_capture_ended");
	}
	return o;
}
