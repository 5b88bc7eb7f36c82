/* A process that SIGKILLs the tool if it holds target threads too long.
 *
 * Why a process: the failure it guards against is the tool itself being
 * stopped (SIGSTOP, a debugger, a hung NFS write in the wrong place) while
 * target threads sit in ptrace-stops; a thread of the tool stops with it.
 * SIGKILL is the one thing that both wakes a stopped tool and makes the
 * kernel detach and resume every tracee (group-stopped ones stay stopped).
 *
 * Why double-forked: the watchdog must not be our child. The capture waits
 * for specific tids only, but a child would still show up in a waitpid(-1)
 * anywhere in the tool, and the shell's job control and Ctrl-C must not
 * reach it either (it calls setsid). It is not a tracer and never touches
 * the target. It ends when the tool ends (its pidfd becomes readable) or
 * when told to. */
#include "attach.h"
#include "watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct wd_shared {
	_Atomic uint64_t open_since_ns; /* CLOCK_MONOTONIC; 0: no window open */
	_Atomic uint32_t quit;
	_Atomic uint64_t fired;
	uint32_t limit_ms;
};

static struct wd_shared *shared;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void watchdog_window(bool open)
{
	if (shared)
		atomic_store(&shared->open_since_ns, open ? mono_ns() : 0);
}

/* Runs in the grandchild: only async-signal-safe calls (the tool may have
 * other threads, and fork copied only ours). */
static _Noreturn void watchdog_main(int tool_pidfd, struct wd_shared *w)
{
	setsid();
	prctl(PR_SET_NAME, "diag-watchdog", 0, 0, 0);
	/* The box the tool is needed on is often overloaded, and a watchdog
	 * that waits its turn behind dozens of runnable tasks fires seconds
	 * late (seen: 1-5 s at load 65 on 2 cores). It sleeps in poll nearly
	 * all the time, so real-time priority costs the machine nothing;
	 * where that is refused (no CAP_SYS_NICE, a container), the highest
	 * nice level we may take. */
	struct sched_param rt = {.sched_priority = 1};
	if (sched_setscheduler(0, SCHED_FIFO, &rt) != 0)
		(void)setpriority(PRIO_PROCESS, 0, -20);
	static const int ignored[] = {SIGINT, SIGHUP, SIGTERM, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE};
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	uint64_t limit_ns = (uint64_t)w->limit_ms * 1000000ull;
	/* Overshoot at most a tenth of the limit; a poll every 50 ms (for the
	 * default 500 ms) costs nothing measurable. */
	int tick_ms = (int)(w->limit_ms / 10);
	if (tick_ms < 1)
		tick_ms = 1;
	for (;;) {
		struct pollfd p = {.fd = tool_pidfd, .events = POLLIN};
		int r = poll(&p, 1, tick_ms);
		if (r > 0 || (r < 0 && errno != EINTR))
			_exit(0); /* the tool exited */
		if (atomic_load(&w->quit))
			_exit(0);
		uint64_t since = atomic_load(&w->open_since_ns);
		if (since && mono_ns() > since + limit_ns) {
			atomic_fetch_add(&w->fired, 1);
			syscall(SYS_pidfd_send_signal, tool_pidfd, SIGKILL, NULL, 0);
			_exit(0);
		}
	}
}

int attach_watchdog_start(unsigned limit_ms)
{
	if (shared)
		return -EALREADY;
	if (limit_ms == 0)
		return -EINVAL;
	struct wd_shared *w = mmap(NULL, sizeof(*w), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				   -1, 0);
	if (w == MAP_FAILED)
		return -errno;
	w->limit_ms = limit_ms;
	pid_t tool = getpid();
	pid_t child = fork();
	if (child < 0) {
		int e = errno;
		munmap(w, sizeof(*w));
		return -e;
	}
	if (child == 0) {
		/* Open the pidfd here, while the tool is certainly alive (it is
		 * waiting for us), so a reused pid can never be signalled. */
		int pfd = (int)syscall(SYS_pidfd_open, tool, 0);
		if (pfd < 0)
			_exit(1);
		/* Hold nothing of the tool's: an inherited pipe end would keep a
		 * reader (a shell, a test) waiting after the tool is gone, and
		 * the target's capture lock (target.c) would refuse the next
		 * capture as "already traced". Dropped here, before the second
		 * fork, while the tool waits for us: done in the watchdog itself,
		 * a watchdog starved of CPU on a loaded machine (seen: seconds,
		 * past the tool's wait for it and past the tool's own exit)
		 * held them all that time. */
		if (pfd != 3) {
			dup2(pfd, 3);
			pfd = 3;
		}
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		syscall(SYS_close_range, 4u, ~0u, 0u);
		pid_t gc = fork();
		if (gc < 0)
			_exit(1);
		if (gc == 0)
			watchdog_main(pfd, w);
		_exit(0);
	}
	int status;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		munmap(w, sizeof(*w));
		return -ECHILD;
	}
	/* Not waiting for it to run: a capture that starts before it does is
	 * guarded all the same, because it compares the window's opening time
	 * with the clock whenever it first looks (a grandchild's first run was
	 * seen to take up to 1.6 s on a loaded box, all of which the wait added
	 * to our start, and to the exit of a tool interrupted then). */
	shared = w;
	return 0;
}

void attach_watchdog_stop(void)
{
	if (!shared)
		return;
	atomic_store(&shared->open_since_ns, 0);
	atomic_store(&shared->quit, 1);
	munmap(shared, sizeof(*shared));
	shared = NULL;
}

bool attach_watchdog_running(void)
{
	return shared != NULL;
}
