/* The reaper thread; see reaper.h for why it exists. */
#include "reaper.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Enough for the largest capture plus the late list; beyond it a thread is
 * still captured, only without the reaper's protection. */
#define MAX_TRACKED 16384
/* How long a tracked thread may sit before the reaper looks at it. Captures
 * normally hold threads for well under a millisecond, so the reaper does not
 * wake at all during healthy captures; when something waits on our zombies,
 * this is the added delay. */
#define POLL_NS 2000000L
/* The reaper sleeps in sigwaitinfo until a one-shot timer aimed at it
 * fires POLL_NS after the table stopped being empty; a capture that empties
 * it sooner disarms the timer. (Woken by a condition variable at every
 * capture's first seize, it cost two wake-ups and four context switches
 * per sample, a tenth of the tool's CPU at 99 Hz; a timer costs two
 * timer_settime calls.) Not SIGRTMIN: the capture's stop deadline has it. */
#define REAPER_SIGNAL (SIGRTMIN + 1)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t tracked[MAX_TRACKED];
static size_t ntracked;
static bool started;
static int start_error; /* sticky: a failed start is not retried every capture */
static timer_t wake_timer;
static pid_t reaper_tid;
static sem_t reaper_up;
static atomic_ulong reaped;

static bool exited(const siginfo_t *si)
{
	return si->si_code == CLD_EXITED || si->si_code == CLD_KILLED || si->si_code == CLD_DUMPED;
}

/* One pass over the table, lock held. Only WNOHANG calls: never blocks. */
static void sweep(void)
{
	size_t kept = 0;
	for (size_t i = 0; i < ntracked; i++) {
		pid_t tid = tracked[i];
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		/* WNOWAIT: a ptrace-stop must stay queued for the capture
		 * thread; only an exit is ours to consume. */
		int r = waitid(P_PID, (id_t)tid, &si, WEXITED | WNOHANG | WNOWAIT | __WALL);
		if (r < 0 && errno == ECHILD)
			continue; /* already reaped (by the capture thread) */
		if (r == 0 && si.si_pid == tid && exited(&si)) {
			int status;
			waitpid(tid, &status, __WALL | WNOHANG);
			atomic_fetch_add(&reaped, 1);
			continue;
		}
		tracked[kept++] = tid;
	}
	ntracked = kept;
}

static void *reaper_main(void *arg)
{
	(void)arg;
	reaper_tid = gettid();
	sem_post(&reaper_up);
	sigset_t wake;
	sigemptyset(&wake);
	sigaddset(&wake, REAPER_SIGNAL);
	for (;;) {
		/* Blocked in every thread of ours (see start_locked): it stays
		 * pending until we wait for it, so an arm that races with our
		 * going back to sleep is not lost. */
		siginfo_t si;
		if (sigwaitinfo(&wake, &si) < 0)
			continue;
		/* Poll while anything is tracked; a capture that adds to the
		 * table meanwhile finds the timer already spent and re-arms it,
		 * which costs at most one spare wake-up here. */
		for (;;) {
			pthread_mutex_lock(&lock);
			if (ntracked)
				sweep();
			bool more = ntracked != 0;
			pthread_mutex_unlock(&lock);
			if (!more)
				break;
			struct timespec ts = {0, POLL_NS};
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static void arm_locked(long ns)
{
	struct itimerspec its = {.it_value = {0, ns}};
	timer_settime(wake_timer, 0, &its, NULL);
}

static int start_locked(void)
{
	if (started)
		return 0;
	if (start_error)
		return start_error;
	/* All signals blocked in the reaper, so process-directed signals
	 * (SIGINT, SIGTERM) keep going to the thread that handles them and our
	 * deadline timer's signal keeps interrupting the capture thread. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_t th;
	sem_init(&reaper_up, 0, 0);
	int r = pthread_create(&th, &attr, reaper_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0)
		return start_error = -r;
	while (sem_wait(&reaper_up) < 0 && errno == EINTR)
		;
	/* The timer signals that one thread only (SIGEV_THREAD_ID), which has
	 * every signal blocked: nothing else of ours ever sees it. */
	struct sigevent sev = {0};
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = REAPER_SIGNAL;
	sev._sigev_un._tid = reaper_tid; /* sigev_notify_thread_id in newer glibc */
	if (timer_create(CLOCK_MONOTONIC, &sev, &wake_timer) < 0)
		return start_error = -errno; /* the thread sleeps on, harmless; no reaper */
	started = true;
	return 0;
}

int reaper_start(void)
{
	pthread_mutex_lock(&lock);
	int r = start_locked();
	pthread_mutex_unlock(&lock);
	return r;
}

int reaper_track(pid_t tid)
{
	pthread_mutex_lock(&lock);
	int r = start_locked();
	if (r == 0 && ntracked == MAX_TRACKED)
		r = -ENOSPC;
	if (r == 0) {
		tracked[ntracked++] = tid;
		if (ntracked == 1)
			arm_locked(POLL_NS);
	}
	pthread_mutex_unlock(&lock);
	return r;
}

void reaper_replace(const pid_t *tids, size_t n)
{
	pthread_mutex_lock(&lock);
	if (n > MAX_TRACKED)
		n = MAX_TRACKED;
	memcpy(tracked, tids, n * sizeof(*tids));
	bool was_empty = ntracked == 0;
	ntracked = n;
	/* Empty: nothing to look after, disarm. Late threads left traced:
	 * keep (or start) the countdown. */
	if (started && (n == 0) != was_empty)
		arm_locked(n ? POLL_NS : 0);
	pthread_mutex_unlock(&lock);
}

unsigned long reaper_reaped_count(void)
{
	return atomic_load(&reaped);
}
