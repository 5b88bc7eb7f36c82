/* The reaper thread; see reaper.h for why it exists. */
#include "reaper.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

/* Enough for the largest capture plus the late list; beyond it a thread is
 * still captured, only without the reaper's protection. */
#define MAX_TRACKED 16384
/* How long a tracked thread may sit before the reaper looks at it. Captures
 * normally hold threads for well under a millisecond, so the reaper rarely
 * wakes during healthy captures; when something waits on our zombies, this
 * is the added delay. */
#define POLL_NS 2000000L

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nonempty = PTHREAD_COND_INITIALIZER;
static pid_t tracked[MAX_TRACKED];
static size_t ntracked;
static bool started;
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
	pthread_mutex_lock(&lock);
	for (;;) {
		while (ntracked == 0)
			pthread_cond_wait(&nonempty, &lock);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += POLL_NS;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		/* Sleep one poll interval with the lock released; the table may
		 * have emptied meanwhile. */
		pthread_cond_timedwait(&nonempty, &lock, &ts);
		if (ntracked)
			sweep();
	}
	return NULL;
}

static int start_locked(void)
{
	if (started)
		return 0;
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
	int r = pthread_create(&th, &attr, reaper_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0)
		return -r;
	started = true;
	return 0;
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
			pthread_cond_signal(&nonempty);
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
	ntracked = n;
	if (n)
		pthread_cond_signal(&nonempty);
	pthread_mutex_unlock(&lock);
}

unsigned long reaper_reaped_count(void)
{
	return atomic_load(&reaped);
}
