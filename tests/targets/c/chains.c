/*
 * chains: threads parked at known call chains, for snapshot tests.
 *
 * Expected stacks (innermost first, below the blocking libc call):
 *   thread "parker-a":  park_here <- level_three <- level_two <- level_one <- thread_a_main
 *   thread "parker-b":  park_here <- inlined_step (always_inline, shows as
 *                       an inlined frame) <- middle_b <- thread_b_main
 *   thread "recurser":  park_here <- recurse x 42 <- thread_r_main
 *   main thread:        main_wait <- main
 *
 * Each parked thread blocks in read() on a pipe that is never written, so
 * it sits still for as long as the test needs. Prints "ready\n" once every
 * thread is parked (after a short settle). Runs until killed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int block_fds[2];
static volatile int parked;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

NOINLINE void park_here(void);
NOINLINE void park_here(void)
{
	char c;
	pthread_mutex_lock(&lock);
	parked++;
	pthread_mutex_unlock(&lock);
	/* Never returns: nobody writes to the pipe. */
	while (read(block_fds[0], &c, 1) != 0)
		;
	__asm__ volatile("" ::: "memory");
}

NOINLINE void level_three(void);
NOINLINE void level_three(void)
{
	park_here();
	__asm__ volatile("" ::: "memory");
}

NOINLINE void level_two(void);
NOINLINE void level_two(void)
{
	level_three();
	__asm__ volatile("" ::: "memory");
}

NOINLINE void level_one(void);
NOINLINE void level_one(void)
{
	level_two();
	__asm__ volatile("" ::: "memory");
}

static void *thread_a_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "parker-a");
	level_one();
	return NULL;
}

static inline __attribute__((always_inline)) void inlined_step(int x)
{
	if (x > 0)
		park_here();
	__asm__ volatile("" ::: "memory");
}

NOINLINE void middle_b(int x);
NOINLINE void middle_b(int x)
{
	inlined_step(x);
	__asm__ volatile("" ::: "memory");
}

static void *thread_b_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "parker-b");
	middle_b(1);
	return NULL;
}

NOINLINE int recurse(int depth);
NOINLINE int recurse(int depth)
{
	if (depth == 0)
		park_here();
	else
		recurse(depth - 1);
	__asm__ volatile("" ::: "memory");
	return depth;
}

static void *thread_r_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "recurser");
	recurse(41);
	return NULL;
}

NOINLINE void main_wait(void);
NOINLINE void main_wait(void)
{
	for (;;)
		pause();
}

int main(void)
{
	if (pipe(block_fds) < 0)
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, thread_a_main, NULL);
	pthread_create(&t, NULL, thread_b_main, NULL);
	pthread_create(&t, NULL, thread_r_main, NULL);
	while (parked < 3)
		usleep(1000);
	usleep(20000); /* let each thread reach read() */
	printf("ready\n");
	fflush(stdout);
	main_wait();
	return 0;
}
