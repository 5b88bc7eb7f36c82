/*
 * rel_target: the reliability tests' target. It reports through the page
 * named by $DIAG_REL_SHM (rel_shared.h): progress, every signal received
 * (logging handlers on every catchable signal whose default action is not
 * a stop), and the counters of its mode. Prints "ready\n" once in its
 * state (the first image only, for exec modes).
 *
 *   spin N [tstp]       N threads spinning in spin_work + a gap probe; the
 *                       main thread obeys .command (exit 42, SIGKILL,
 *                       SIGSEGV). "tstp": SIGTSTP has a counting handler.
 *   signals             A1/A2: SIGRTMIN is blocked in every thread but
 *                       "rt-recv", whose handler checks si_value is 1, 2, 3..;
 *                       SIGUSR1 in every thread but "usr1-recv" (real-time),
 *                       whose handler acks and checks the sender.
 *   leader_exit N       N spinners; the main thread calls pthread_exit.
 *   exec MS [GEN]       6 spinners; thread "execer" execs this program again
 *                       (GEN+1) every MS milliseconds, forever.
 *   exec_once MS        like exec, but the new image (GEN 1) spins without
 *                       exec'ing again.
 *   fork                2 spinners; "forker" forks children that _exit(i % 100)
 *                       and checks each status; "vforker" the same with vfork;
 *                       "vfork-long" vforks a child that sleeps 3 s (the
 *                       parent sits in D), then exits 7.
 *   blocked             one thread per rel_blocked_call, each blocked in its
 *                       call forever, counting EINTR returns; one spinner.
 *   churn N [RATE]      N "churner" threads creating and joining trivial
 *                       threads as fast as they can (.churned), or RATE
 *                       per second each (bench/soak), + a probe.
 *   vfork_hold SECS N   N spinners + a probe + "vfork-hold", which vforks a
 *                       child that sleeps SECS s (the parent sits in D) and
 *                       then records .vfork_hold_done; ready once it is in D.
 *   idle N              N threads asleep for good (64 KiB stacks) and a
 *                       "heartbeat" that bumps .progress every 10 ms: every
 *                       thread is in S nearly all the time.
 *   crowd N             like spin N, but the spinners start spinning only
 *                       once all exist and "ready" is out (with hundreds of
 *                       them, the main thread would otherwise take seconds
 *                       to get there).
 *   exit_race N         N spinners that call exit_group(43) the moment
 *                       .command is REL_CMD_EXIT_GROUP, + a probe; the main
 *                       thread only sleeps (it never consumes the command).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rel_shared.h"

#define NOINLINE __attribute__((noinline))

static struct rel_shared *sh;
static char *self_path;
static unsigned long generation;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	_exit(99);
}

static void map_shared(void)
{
	const char *path = getenv("DIAG_REL_SHM");
	if (!path) {
		fprintf(stderr, "DIAG_REL_SHM not set\n");
		_exit(98);
	}
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die("open shm");
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (sh == MAP_FAILED)
		die("mmap shm");
	close(fd);
}

static void on_signal_log(int sig)
{
	if (sig > 0 && sig < REL_NSIG)
		atomic_fetch_add(&sh->signals[sig], 1);
}

static void on_tstp(int sig)
{
	on_signal_log(sig);
	atomic_fetch_add(&sh->tstp_handled, 1);
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	on_signal_log(sig);
	uint64_t seq = (uint64_t)si->si_value.sival_int;
	uint64_t last = atomic_load(&sh->rt_last);
	if (seq != last + 1)
		atomic_fetch_add(&sh->rt_out_of_order, 1);
	atomic_store(&sh->rt_last, seq);
	atomic_fetch_add(&sh->rt_received, 1);
}

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	on_signal_log(sig);
	if (si->si_code != SI_USER || si->si_pid != atomic_load(&sh->usr1_sender) ||
	    si->si_uid != getuid())
		atomic_fetch_add(&sh->usr1_bad_sender, 1);
	atomic_fetch_add(&sh->usr1_acks, 1);
}

static void install(int sig, void (*fn)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(sig, &sa, NULL);
}

/* Log every signal a tool might leak (SIGTRAP above all) or a test might
 * send. Stop signals keep their default action unless a mode says so, so
 * SIGSTOP/SIGTSTP tests stop the process for real. */
static void install_loggers(void)
{
	static const int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTRAP, SIGUSR1, SIGUSR2, SIGPIPE,
				   SIGALRM, SIGTERM, SIGCHLD, SIGCONT, SIGURG, SIGWINCH, SIGIO,
				   SIGPROF, SIGVTALRM, SIGXCPU, SIGXFSZ, SIGSYS};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		install(sigs[i], on_signal_log);
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		install(s, on_signal_log);
}

NOINLINE void spin_work(void);
NOINLINE void spin_work(void)
{
	for (;;) {
		for (volatile int i = 0; i < 4096; i++)
			;
		atomic_fetch_add_explicit(&sh->progress, 1, memory_order_relaxed);
	}
}

static void *spinner_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "spinner");
	spin_work();
	return NULL;
}

/* Records the longest time this thread went without running. On a loaded
 * machine (or among 200 spinners on 2 cores) the scheduler alone would
 * leave an ordinary thread off the CPU for hundreds of milliseconds, which
 * drowns the tool's holds; a real-time probe (or, where that is refused, a
 * nice -20 one) runs the moment it wakes, so its gaps are the target's
 * stops and nothing else. */
/* SCHED_FIFO where allowed, else nice -20. DIAG_REL_NO_RT=1 keeps to nice
 * -20: a cgroup-v1 cpu group without a real-time budget (A10's throttle)
 * refuses to take a process that has a real-time thread. */
static void make_realtime(void)
{
	struct sched_param sp = {.sched_priority = 1};
	if (getenv("DIAG_REL_NO_RT") || pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0)
		(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -20);
}

static void *probe_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "probe");
	make_realtime();
	uint64_t last = mono_ns();
	for (;;) {
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
		uint64_t now = mono_ns();
		uint64_t gap = now - last;
		if (gap > atomic_load(&sh->max_gap_ns))
			atomic_store(&sh->max_gap_ns, gap);
		atomic_store(&sh->probe_last_ns, now);
		last = now;
	}
	return NULL;
}

static void start(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	if (pthread_create(&t, NULL, fn, arg) != 0)
		die("pthread_create");
	pthread_detach(t);
}

/* n threads of fn, then the probe (whose gaps the tests read): the
 * threads every scenario starts with. */
static void start_with_probe(void *(*fn)(void *), int n)
{
	for (int i = 0; i < n; i++)
		start(fn, NULL);
	start(probe_main, NULL);
}

/* Sleep 1 ms: the poll interval of the scenarios' setup loops. */
static void nap_1ms(void)
{
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
}

static void ready(void)
{
	atomic_store(&sh->ready_pid, getpid());
	if (generation == 0) {
		printf("ready\n");
		fflush(stdout);
	}
}

static _Noreturn void obey_commands(void)
{
	for (;;) {
		switch (atomic_exchange(&sh->command, REL_CMD_NONE)) {
		case REL_CMD_EXIT42:
			exit(42);
		case REL_CMD_SIGKILL:
			raise(SIGKILL);
			break;
		case REL_CMD_SIGSEGV:
			*(volatile int *)8 = 1;
			break;
		default:
			break;
		}
		nap_1ms();
	}
}

/* Say ready, then do what the test commands: how every scenario ends its
 * setup. */
static _Noreturn void ready_and_obey(void)
{
	ready();
	obey_commands();
}

static void *rt_recv_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "rt-recv");
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	spin_work();
	return NULL;
}

/* A2's receiver: SIGUSR1 is blocked in every other thread, so each ping is
 * handled here, by a real-time thread that runs the moment it arrives: an
 * ack that comes late is then the tool's doing, not a loaded scheduler's
 * (A2 allows 100 ms). */
static void *usr1_recv_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "usr1-recv");
	make_realtime();
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	for (;;)
		pause();
	return NULL;
}

static void mode_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sa.sa_sigaction = on_rt;
	sigaction(SIGRTMIN, &sa, NULL);
	sa.sa_sigaction = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &s, NULL); /* inherited by every thread */
	start(spinner_main, NULL);
	start(spinner_main, NULL);
	start(rt_recv_main, NULL);
	start(usr1_recv_main, NULL);
	start(probe_main, NULL);
	ready_and_obey();
}

static void *execer_main(void *arg)
{
	unsigned ms = (unsigned)(uintptr_t)arg;
	pthread_setname_np(pthread_self(), "execer");
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	char gen[32], msbuf[32];
	snprintf(gen, sizeof(gen), "%lu", generation + 1);
	snprintf(msbuf, sizeof(msbuf), "%u", ms);
	atomic_fetch_add(&sh->execs, 1);
	char *argv[] = {self_path, "exec", msbuf, gen, NULL};
	char *once[] = {self_path, "spin", "3", "gen1", NULL};
	execv(self_path, generation == 0 && getenv("DIAG_REL_EXEC_ONCE") ? once : argv);
	die("execv");
	return NULL;
}

static void mode_exec(unsigned ms)
{
	atomic_fetch_add(&sh->generation, 1);
	for (int i = 0; i < 6; i++)
		start(spinner_main, NULL);
	start(execer_main, (void *)(uintptr_t)ms);
	ready_and_obey();
}

static void check_child(pid_t pid, int want_code)
{
	int status;
	pid_t r;
	while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (r == pid && WIFEXITED(status) && WEXITSTATUS(status) == want_code)
		atomic_fetch_add(&sh->children_ok, 1);
	else
		atomic_fetch_add(&sh->children_bad, 1);
}

static void *forker_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "forker");
	for (unsigned i = 0;; i++) {
		pid_t p = fork();
		if (p == 0)
			_exit((int)(i % 100));
		if (p < 0)
			continue;
		check_child(p, (int)(i % 100));
	}
	return NULL;
}

/* The child only _exits, so returning from here in the parent is safe;
 * keeping vfork out of the loop keeps the compiler's clobber analysis
 * (and us) simple. */
NOINLINE static pid_t vfork_exit(int code)
{
	pid_t p = vfork();
	if (p == 0)
		_exit(code);
	return p;
}

static void *vforker_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "vforker");
	for (unsigned i = 0;; i++) {
		pid_t p = vfork_exit((int)(i % 100));
		if (p > 0)
			check_child(p, (int)(i % 100));
	}
	return NULL;
}

static void *vfork_long_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "vfork-long");
	for (;;) {
		pid_t p = vfork();
		if (p == 0) {
			/* Only raw syscalls in a vfork child. */
			struct timespec ts = {3, 0};
			syscall(SYS_nanosleep, &ts, NULL);
			syscall(SYS_exit, 7);
		}
		if (p < 0)
			continue;
		check_child(p, 7);
		atomic_fetch_add(&sh->vfork_long_done, 1);
	}
	return NULL;
}

static void mode_fork(void)
{
	start(spinner_main, NULL);
	start(spinner_main, NULL);
	start(probe_main, NULL);
	start(forker_main, NULL);
	start(vforker_main, NULL);
	start(vfork_long_main, NULL);
	ready_and_obey();
}

/* A8. Each thread blocks in one call forever; a return with EINTR is
 * counted and the call repeated; any other return is a test bug. */
static int block_epfd, block_pipe[2], block_sem;
static uint32_t futex_word;

static void *blocked_main(void *arg)
{
	int which = (int)(intptr_t)arg;
	static const char *const names[] = {"epoll-inf", "epoll-100s", "sigtimedwait", "semop",
					    "read", "poll", "nanosleep", "futex"};
	pthread_setname_np(pthread_self(), names[which]);
	atomic_store(&sh->blocked_tid[which], (int32_t)gettid());
	sigset_t rtset;
	sigemptyset(&rtset);
	sigaddset(&rtset, SIGRTMIN + 5);
	for (;;) {
		atomic_fetch_add(&sh->entered[which], 1);
		long r;
		switch (which) {
		case REL_EPOLL_INF: {
			struct epoll_event ev;
			r = epoll_wait(block_epfd, &ev, 1, -1);
			break;
		}
		case REL_EPOLL_TIMEOUT: {
			struct epoll_event ev;
			r = epoll_wait(block_epfd, &ev, 1, 100000);
			break;
		}
		case REL_SIGTIMEDWAIT: {
			struct timespec ts = {100, 0};
			r = sigtimedwait(&rtset, NULL, &ts);
			break;
		}
		case REL_SEMOP: {
			struct sembuf op = {.sem_num = 0, .sem_op = -1, .sem_flg = 0};
			r = semop(block_sem, &op, 1);
			break;
		}
		case REL_READ: {
			char c;
			r = read(block_pipe[0], &c, 1);
			break;
		}
		case REL_POLL: {
			struct pollfd p = {.fd = block_pipe[0], .events = POLLIN};
			r = poll(&p, 1, -1);
			break;
		}
		case REL_NANOSLEEP: {
			struct timespec ts = {100, 0};
			r = nanosleep(&ts, NULL);
			break;
		}
		default:
			r = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
			break;
		}
		if (r < 0 && errno == EINTR)
			atomic_fetch_add(&sh->eintr[which], 1);
		else if (r < 0 && errno == EAGAIN && which == REL_SIGTIMEDWAIT)
			; /* 100 s passed */
		else if (!(which == REL_EPOLL_TIMEOUT && r == 0))
			atomic_fetch_add(&sh->unexpected_returns, 1);
	}
	return NULL;
}

static void mode_blocked(void)
{
	block_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (block_epfd < 0 || pipe(block_pipe) < 0)
		die("epoll/pipe");
	struct epoll_event ev = {.events = EPOLLIN};
	epoll_ctl(block_epfd, EPOLL_CTL_ADD, block_pipe[0], &ev);
	block_sem = semget(IPC_PRIVATE, 1, 0600);
	if (block_sem < 0)
		die("semget");
	atomic_store(&sh->sem_id, block_sem); /* the test removes it */
	sigset_t rtset;
	sigemptyset(&rtset);
	sigaddset(&rtset, SIGRTMIN + 5);
	pthread_sigmask(SIG_BLOCK, &rtset, NULL);
	for (int i = 0; i < REL_NBLOCKED; i++)
		start(blocked_main, (void *)(intptr_t)i);
	start(spinner_main, NULL);
	/* Ready once every thread is inside its call. */
	for (;;) {
		int in = 0;
		for (int i = 0; i < REL_NBLOCKED; i++) {
			char path[64], buf[128] = "";
			snprintf(path, sizeof(path), "/proc/self/task/%d/stat",
				 (int)atomic_load(&sh->blocked_tid[i]));
			FILE *f = atomic_load(&sh->blocked_tid[i]) ? fopen(path, "r") : NULL;
			if (f) {
				if (fgets(buf, sizeof(buf), f)) {
					char *p = strrchr(buf, ')');
					if (p && p[2] == 'S')
						in++;
				}
				fclose(f);
			}
		}
		if (in == REL_NBLOCKED)
			break;
		nap_1ms();
	}
	ready_and_obey();
}

/* B1/B2: thread churn. The children do nothing: the point is the rate at
 * which threads appear and vanish under the tool's /proc/PID/task scans. */
static void *churn_child(void *arg)
{
	return arg;
}

static unsigned churn_rate; /* threads per second per churner; 0: flat out */

static void *churner_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "churner");
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	uint64_t next = mono_ns();
	for (;;) {
		if (churn_rate) {
			next += 1000000000ull / churn_rate;
			struct timespec ts = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
		pthread_t t;
		if (pthread_create(&t, &attr, churn_child, NULL) != 0)
			continue;
		pthread_join(t, NULL);
		atomic_fetch_add_explicit(&sh->churned, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&sh->progress, 1, memory_order_relaxed);
	}
	return NULL;
}

static void mode_churn(int n, unsigned rate)
{
	churn_rate = rate;
	start_with_probe(churner_main, n);
	ready_and_obey();
}

/* B9: a thread in vfork for SECS seconds: in D (killable), so no
 * PTRACE_INTERRUPT can stop it until the child exits. */
static void *vfork_hold_main(void *arg)
{
	long secs = (long)(intptr_t)arg;
	pthread_setname_np(pthread_self(), "vfork-hold");
	atomic_store(&sh->vfork_tid, (int32_t)gettid());
	pid_t p = vfork();
	if (p == 0) {
		/* Only raw syscalls and plain stores in a vfork child. */
		atomic_store(&sh->vfork_child, (int32_t)syscall(SYS_getpid));
		struct timespec ts = {secs, 0};
		syscall(SYS_nanosleep, &ts, NULL);
		syscall(SYS_exit, 7);
	}
	if (p > 0)
		check_child(p, 7);
	atomic_store(&sh->vfork_hold_done, 1);
	for (;;) {
		struct timespec ts = {1, 0};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static char thread_state(pid_t tid)
{
	char path[64], buf[512] = "";
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	char *ok = fgets(buf, sizeof(buf), f);
	fclose(f);
	char *p = ok ? strrchr(buf, ')') : NULL;
	return p && p[1] == ' ' ? p[2] : '?';
}

static void mode_vfork_hold(long secs, int n)
{
	start_with_probe(spinner_main, n);
	start(vfork_hold_main, (void *)(intptr_t)secs);
	/* Ready once the vfork parent is in D. */
	for (;;) {
		pid_t tid = atomic_load(&sh->vfork_tid);
		if (tid && atomic_load(&sh->vfork_child) && thread_state(tid) == 'D')
			break;
		nap_1ms();
	}
	ready_and_obey();
}

/* B10: an idle process, or a huge one (2,000 threads) that is idle too. */
static void *sleeper_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec ts = {1000, 0};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void *heartbeat_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "heartbeat");
	for (;;) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
		atomic_fetch_add(&sh->progress, 1);
	}
	return NULL;
}

static void mode_idle(int n)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, &attr, sleeper_main, NULL) != 0)
			die("pthread_create");
	}
	start(heartbeat_main, NULL);
	ready_and_obey();
}

/* A9: many spinners, released together once the process is ready. */
static atomic_int crowd_go;

static void *crowd_spinner_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "spinner");
	while (!atomic_load(&crowd_go)) {
		nap_1ms();
	}
	spin_work();
	return NULL;
}

static void mode_crowd(int n)
{
	start_with_probe(crowd_spinner_main, n);
	ready();
	atomic_store(&crowd_go, 1);
	obey_commands();
}

/* B8: exit_group from a spinning thread at a moment the test picks. */
NOINLINE static void racer_work(void)
{
	for (;;) {
		for (volatile int i = 0; i < 4096; i++)
			;
		atomic_fetch_add_explicit(&sh->progress, 1, memory_order_relaxed);
		if (atomic_load_explicit(&sh->command, memory_order_relaxed) == REL_CMD_EXIT_GROUP)
			syscall(SYS_exit_group, 43);
	}
}

static void *racer_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "racer");
	racer_work();
	return NULL;
}

static void mode_exit_race(int n)
{
	start_with_probe(racer_main, n);
	ready();
	for (;;) {
		struct timespec ts = {1, 0};
		nanosleep(&ts, NULL);
	}
}

int main(int argc, char **argv)
{
	/* A process group of its own, whose parent (the test) is in another
	 * group of the same session: not orphaned, so SIGTSTP/SIGTTIN/SIGTTOU
	 * really stop it instead of being discarded by the kernel. */
	setpgid(0, 0);
	map_shared();
	struct rlimit nocore = {0, 0};
	setrlimit(RLIMIT_CORE, &nocore);
	self_path = argv[0];
	install_loggers();
	const char *mode = argc > 1 ? argv[1] : "spin";
	if (strcmp(mode, "spin") == 0) {
		int n = argc > 2 ? atoi(argv[2]) : 2;
		if (argc > 3 && strcmp(argv[3], "tstp") == 0)
			install(SIGTSTP, on_tstp);
		if (argc > 3 && strcmp(argv[3], "gen1") == 0) {
			generation = 1;
			atomic_fetch_add(&sh->generation, 1);
		}
		start_with_probe(spinner_main, n);
		ready();
		obey_commands();
	}
	if (strcmp(mode, "signals") == 0)
		mode_signals();
	if (strcmp(mode, "leader_exit") == 0) {
		int n = argc > 2 ? atoi(argv[2]) : 3;
		for (int i = 0; i < n; i++)
			start(spinner_main, NULL);
		ready();
		pthread_exit(NULL);
	}
	if (strcmp(mode, "exec") == 0 || strcmp(mode, "exec_once") == 0) {
		if (strcmp(mode, "exec_once") == 0)
			setenv("DIAG_REL_EXEC_ONCE", "1", 1);
		generation = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
		mode_exec(argc > 2 ? (unsigned)atoi(argv[2]) : 20);
	}
	if (strcmp(mode, "fork") == 0)
		mode_fork();
	if (strcmp(mode, "blocked") == 0)
		mode_blocked();
	if (strcmp(mode, "churn") == 0)
		mode_churn(argc > 2 ? atoi(argv[2]) : 1, argc > 3 ? (unsigned)atoi(argv[3]) : 0);
	if (strcmp(mode, "vfork_hold") == 0)
		mode_vfork_hold(argc > 2 ? atol(argv[2]) : 10, argc > 3 ? atoi(argv[3]) : 2);
	if (strcmp(mode, "idle") == 0)
		mode_idle(argc > 2 ? atoi(argv[2]) : 8);
	if (strcmp(mode, "crowd") == 0)
		mode_crowd(argc > 2 ? atoi(argv[2]) : 200);
	if (strcmp(mode, "exit_race") == 0)
		mode_exit_race(argc > 2 ? atoi(argv[2]) : 3);
	fprintf(stderr, "unknown mode %s\n", mode);
	return 97;
}
