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
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A capture that stops no one (every sampling tick by default) never
 * opens a window, and a watchdog that looked every limit/10 regardless
 * woke ten times a second, for hours, at real-time priority: each time it
 * preempts whatever runs on that CPU, a target thread included. So after
 * IDLE_LOOKS looks that found no window opened since the last, the
 * watchdog sleeps until a window opens (the doorbell, an eventfd), the
 * tool exits or it is told to quit. (What the wakeups cost a target was
 * below the bench's noise: bench/RESULTS.md, "The ticker, 2026-12-05
 * (third session)".) */
#define IDLE_LOOKS 10

#define EPILOGUE_BYTES (60 * 1024)
#define EPILOGUE_WORDS 50

struct wd_shared {
	_Atomic uint64_t open_since_ns; /* CLOCK_MONOTONIC; 0: no window open */
	_Atomic uint64_t windows_opened;
	_Atomic uint32_t asleep; /* waiting for the doorbell, no timeout */
	_Atomic uint32_t quit;
	_Atomic uint64_t fired;
	uint32_t limit_ms;
	pid_t tool;
	/* attach_watchdog_set_epilogue: its words, each NUL-terminated;
	 * epilogue_words is stored last (0: none, or being changed). */
	_Atomic uint32_t epilogue_words;
	uint32_t epilogue_len;
	char epilogue[EPILOGUE_BYTES];
};

static struct wd_shared *shared;
static int doorbell = -1; /* our end: the same eventfd as the watchdog's */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void ring_doorbell(void)
{
	uint64_t one = 1;
	/* Nonblocking: a full counter is a bell already rung. */
	ssize_t n = write(doorbell, &one, sizeof(one));
	(void)n;
}

void watchdog_window(bool open)
{
	if (!shared)
		return;
	if (!open) {
		atomic_store(&shared->open_since_ns, 0);
		return;
	}
	/* Sequentially consistent, against the watchdog's store of asleep and
	 * its loads of these two: either it sees this window before it goes
	 * to sleep, or we see it asleep and ring. */
	atomic_store(&shared->open_since_ns, mono_ns());
	atomic_fetch_add(&shared->windows_opened, 1);
	if (atomic_load(&shared->asleep))
		ring_doorbell();
}

/* Async-signal-safe formatting of n into buf (at least 21 bytes). */
static char *format_u64(uint64_t n, char *buf)
{
	char tmp[21];
	int k = 0;
	do
		tmp[k++] = (char)('0' + n % 10);
	while ((n /= 10) && k < 20);
	for (int i = 0; i < k; i++)
		buf[i] = tmp[k - 1 - i];
	buf[k] = '\0';
	return buf;
}

/* The tool's standard error, opened again (appending: a regular file is
 * not overwritten from its start) while the tool still lives; -1 if it
 * cannot be (a socket, a closed descriptor). */
static int open_tool_stderr(pid_t tool)
{
	char path[48] = "/proc/", num[21];
	size_t o = 6;
	for (const char *p = format_u64((uint64_t)tool, num); *p; p++)
		path[o++] = *p;
	for (const char *p = "/fd/2"; *p; p++)
		path[o++] = *p;
	path[o] = '\0';
	return open(path, O_WRONLY | O_APPEND | O_NOCTTY);
}

/* After the kill: wait for the tool to be gone (the kernel has detached
 * its tracees by then), and become the epilogue. */
static void run_epilogue(struct wd_shared *w, int tool_pidfd, int err_fd, uint64_t held_ms)
{
	uint32_t words = atomic_load(&w->epilogue_words);
	if (!words || words > EPILOGUE_WORDS)
		return;
	struct pollfd p = {.fd = tool_pidfd, .events = POLLIN};
	if (poll(&p, 1, 10000) != 1)
		return; /* not gone in 10 s: better nothing than a racing writer */
	char *argv[EPILOGUE_WORDS + 4], limit[21], held[21];
	size_t n = 0, off = 0;
	argv[n++] = "diag-attach";
	while (n <= words && off < w->epilogue_len) {
		argv[n++] = w->epilogue + off;
		while (off < w->epilogue_len && w->epilogue[off])
			off++;
		off++;
	}
	argv[n++] = format_u64(w->limit_ms, limit);
	argv[n++] = format_u64(held_ms, held);
	argv[n] = NULL;
	/* What the watchdog took for itself, the epilogue does not need:
	 * real-time priority, ignored signals, its descriptors. */
	struct sched_param normal = {.sched_priority = 0};
	sched_setscheduler(0, SCHED_OTHER, &normal);
	setpriority(PRIO_PROCESS, 0, 0);
	static const int reset[] = {SIGINT, SIGHUP, SIGTERM, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE};
	for (size_t i = 0; i < sizeof(reset) / sizeof(reset[0]); i++)
		signal(reset[i], SIG_DFL);
	if (err_fd >= 0 && err_fd != 2)
		dup2(err_fd, 2);
	syscall(SYS_close_range, 3u, ~0u, 0u);
	execve("/proc/self/exe", argv, environ);
}

/* Runs in the grandchild: only async-signal-safe calls (the tool may have
 * other threads, and fork copied only ours). */
static _Noreturn void watchdog_main(int tool_pidfd, int bell, struct wd_shared *w)
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
	/* Overshoot at most a tenth of the limit: a look every 100 ms for the
	 * CLI's default 1 s, while captures hold threads (IDLE_LOOKS). */
	int tick_ms = (int)(w->limit_ms / 10);
	if (tick_ms < 1)
		tick_ms = 1;
	uint64_t seen = atomic_load(&w->windows_opened);
	unsigned idle_looks = 0;
	for (;;) {
		int timeout = tick_ms;
		if (idle_looks >= IDLE_LOOKS) {
			atomic_store(&w->asleep, 1);
			if (!atomic_load(&w->open_since_ns) && atomic_load(&w->windows_opened) == seen)
				timeout = -1;
		}
		struct pollfd p[2] = {{.fd = tool_pidfd, .events = POLLIN}, {.fd = bell, .events = POLLIN}};
		int r = poll(p, 2, timeout);
		atomic_store(&w->asleep, 0);
		if ((r > 0 && p[0].revents) || (r < 0 && errno != EINTR))
			_exit(0); /* the tool exited */
		if (r > 0 && p[1].revents) {
			uint64_t rings;
			ssize_t n = read(bell, &rings, sizeof(rings));
			(void)n;
		}
		if (atomic_load(&w->quit))
			_exit(0);
		uint64_t since = atomic_load(&w->open_since_ns);
		uint64_t opened = atomic_load(&w->windows_opened);
		if (since || opened != seen)
			idle_looks = 0;
		else if (idle_looks < IDLE_LOOKS)
			idle_looks++;
		seen = opened;
		uint64_t now = mono_ns();
		if (since && now > since + limit_ns) {
			atomic_fetch_add(&w->fired, 1);
			/* Opened before the kill, while /proc still has it. */
			int err = atomic_load(&w->epilogue_words) ? open_tool_stderr(w->tool) : -1;
			syscall(SYS_pidfd_send_signal, tool_pidfd, SIGKILL, NULL, 0);
			run_epilogue(w, tool_pidfd, err, (now - since) / 1000000ull);
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
	w->tool = getpid();
	int bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (bell < 0) {
		int e = errno;
		munmap(w, sizeof(*w));
		return -e;
	}
	pid_t tool = getpid();
	pid_t child = fork();
	if (child < 0) {
		int e = errno;
		close(bell);
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
		/* The two we keep go to 3 and 4, by way of numbers above both
		 * (either may be 3 or 4 now). */
		int high_pfd = fcntl(pfd, F_DUPFD, 10);
		int high_bell = fcntl(bell, F_DUPFD, 10);
		if (high_pfd < 0 || high_bell < 0 || dup2(high_pfd, 3) < 0 || dup2(high_bell, 4) < 0)
			_exit(1);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		syscall(SYS_close_range, 5u, ~0u, 0u);
		pid_t gc = fork();
		if (gc < 0)
			_exit(1);
		if (gc == 0)
			watchdog_main(3, 4, w);
		_exit(0);
	}
	int status;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		close(bell);
		munmap(w, sizeof(*w));
		return -ECHILD;
	}
	/* Not waiting for it to run: a capture that starts before it does is
	 * guarded all the same, because it compares the window's opening time
	 * with the clock whenever it first looks (a grandchild's first run was
	 * seen to take up to 1.6 s on a loaded box, all of which the wait added
	 * to our start, and to the exit of a tool interrupted then). */
	shared = w;
	doorbell = bell;
	return 0;
}

void attach_watchdog_stop(void)
{
	if (!shared)
		return;
	atomic_store(&shared->open_since_ns, 0);
	atomic_store(&shared->quit, 1);
	ring_doorbell(); /* it may be asleep */
	close(doorbell);
	doorbell = -1;
	munmap(shared, sizeof(*shared));
	shared = NULL;
}

bool attach_watchdog_running(void)
{
	return shared != NULL;
}

int attach_watchdog_set_epilogue(const char *const *argv)
{
	if (!shared)
		return -ENOENT;
	atomic_store(&shared->epilogue_words, 0);
	size_t len = 0, n = 0;
	for (; argv && argv[n]; n++) {
		size_t l = strlen(argv[n]) + 1;
		if (n >= EPILOGUE_WORDS || l > EPILOGUE_BYTES - len)
			return -E2BIG;
		memcpy(shared->epilogue + len, argv[n], l);
		len += l;
	}
	shared->epilogue_len = (uint32_t)len;
	atomic_store(&shared->epilogue_words, (uint32_t)n);
	return 0;
}

unsigned attach_watchdog_left_ms(void)
{
	if (!shared)
		return UINT_MAX;
	uint64_t since = atomic_load(&shared->open_since_ns), limit = shared->limit_ms;
	if (!since)
		return (unsigned)limit; /* no window open: a whole one ahead */
	uint64_t spent = (mono_ns() - since) / 1000000ull;
	return spent >= limit ? 0 : (unsigned)(limit - spent);
}
