/*
 * forker: a parent that forks a child in the middle of a capture, for
 * --subprocesses.
 *
 *   forker DELAY_MS [EXIT_CODE]
 *
 * The parent prints "ready", sleeps DELAY_MS in parent_wait_to_fork, then
 * forks one child and prints "forked PID". The child starts two threads
 * named "kid-0" and "kid-1" that spin in kid_spin (its main thread waits
 * in kid_main), and dies with its parent (PR_SET_PDEATHSIG). The parent
 * then sleeps in parent_after_fork for DELAY_MS more and exits with
 * EXIT_CODE (default: runs until killed), killing the child as it goes.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

NOINLINE void *kid_spin(void *arg);
NOINLINE void *kid_spin(void *arg)
{
	(void)arg;
	for (;;)
		for (unsigned long i = 0; i < 1000000ul; i++)
			sink += i;
	return NULL;
}

NOINLINE void kid_main(void);
NOINLINE void kid_main(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(0);
	for (int i = 0; i < 2; i++) {
		pthread_t t;
		char name[16];
		snprintf(name, sizeof(name), "kid-%d", i);
		if (pthread_create(&t, NULL, kid_spin, NULL) == 0)
			pthread_setname_np(t, name);
	}
	for (;;)
		pause();
}

NOINLINE void parent_wait_to_fork(long ms);
NOINLINE void parent_wait_to_fork(long ms)
{
	sleep_ms(ms);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void parent_after_fork(long ms);
NOINLINE void parent_after_fork(long ms)
{
	sleep_ms(ms);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	long delay = argc > 1 ? atol(argv[1]) : 1000;
	printf("ready\n");
	fflush(stdout);
	parent_wait_to_fork(delay);
	pid_t kid = fork();
	if (kid == 0)
		kid_main();
	printf("forked %d\n", (int)kid);
	fflush(stdout);
	if (argc > 2) {
		parent_after_fork(delay);
		kill(kid, SIGKILL);
		return atoi(argv[2]);
	}
	for (;;)
		parent_after_fork(delay);
}
