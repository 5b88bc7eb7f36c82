/*
 * wall_mix: 50 threads in every state a wall-clock profile must account
 * for, each named after what it does (the test reads the names back from
 * the thread_comm labels):
 *
 *   "spin"   x10  always running (R; waiting for a CPU on a loaded box)
 *   "starve" x5   spinning at nice 19: runnable, starved of CPU when
 *                 the cores are busy (R)
 *   "nap"    x10  nanosleep 20 ms, a little work, again (S)
 *   "pipe"   x10  read() on a pipe nobody writes (S, never runs)
 *   "epoll"  x5   epoll_wait with a 1 ms timeout: a chatty sleeper (S)
 *   "cond"   x5   pthread_cond_wait, never signalled (S, futex)
 *   "vfork"  x5   vfork a child that sleeps 100 ms: the parent waits
 *                 uninterruptibly (D). glibc's vfork keeps its return
 *                 address in a register (rdi) across the call: a stack
 *                 unwound from SP and PC alone ends at __vfork
 *
 * With the argument "long" the vfork children sleep 5 s instead: a stop
 * deadline then always finds the vfork parents in D (late, no stack).
 * Prints "ready" once every thread runs; exits on EOF on stdin.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t started;
static int pipe_fds[2];
static long vfork_child_ns = 100000000;

static void __attribute__((noinline)) burn(unsigned long n)
{
	for (volatile unsigned long x = 0; x < n; x++)
		;
}

static void *spin_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "spin");
	pthread_barrier_wait(&started);
	for (;;)
		burn(1000000);
	return NULL;
}

static void *starve_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "starve");
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	pthread_barrier_wait(&started);
	for (;;)
		burn(1000000);
	return NULL;
}

static void *nap_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "nap");
	pthread_barrier_wait(&started);
	struct timespec ts = {0, 20000000};
	for (;;) {
		nanosleep(&ts, NULL);
		burn(20000);
	}
	return NULL;
}

static void *pipe_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "pipe");
	pthread_barrier_wait(&started);
	char c;
	for (;;)
		if (read(pipe_fds[0], &c, 1) <= 0)
			pause();
	return NULL;
}

static void *epoll_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "epoll");
	int ep = epoll_create1(0);
	pthread_barrier_wait(&started);
	struct epoll_event ev;
	for (;;)
		epoll_wait(ep, &ev, 1, 1);
	return NULL;
}

static void *cond_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "cond");
	pthread_barrier_wait(&started);
	pthread_mutex_lock(&mu);
	for (;;)
		pthread_cond_wait(&never, &mu);
	return NULL;
}

static void *vfork_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "vfork");
	pthread_barrier_wait(&started);
	for (;;) {
		/* The child borrows our memory until it exits: only raw
		 * system calls in it. The parent sleeps in D meanwhile. */
		pid_t c = vfork();
		if (c == 0) {
			struct timespec ts = {vfork_child_ns / 1000000000, vfork_child_ns % 1000000000};
			syscall(SYS_nanosleep, &ts, NULL);
			syscall(SYS_exit, 0);
		}
		if (c > 0)
			waitpid(c, NULL, 0);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "long") == 0)
		vfork_child_ns = 5000000000L;
	static const struct {
		void *(*fn)(void *);
		int n;
	} kinds[] = {{spin_main, 10},  {starve_main, 5}, {nap_main, 10}, {pipe_main, 10},
		     {epoll_main, 5},  {cond_main, 5},   {vfork_main, 5}};
	if (pipe(pipe_fds) < 0)
		return 1;
	pthread_barrier_init(&started, NULL, 51);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (int i = 0; i < kinds[k].n; i++) {
			pthread_t t;
			if (pthread_create(&t, NULL, kinds[k].fn, NULL) != 0)
				return 1;
		}
	pthread_barrier_wait(&started);
	printf("ready\n");
	fflush(stdout);
	char buf[64];
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return 0;
}
