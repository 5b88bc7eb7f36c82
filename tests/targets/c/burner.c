/*
 * burner: CPU-bound threads with a known 3:1 split of work between two
 * functions, plus blocked threads in known places, for sampling tests.
 *
 *   "burn-0", "burn-1": loop forever calling burn_heavy (3 units) and
 *                       burn_light (1 unit) alternately.
 *   "sleeper":          nanosleep in sleep_forever
 *   "locker":           blocked on a mutex held by main, in lock_forever
 *
 * argv[1] (optional): number of burner threads (default 2).
 * Prints "ready\n" once everything runs. Runs until killed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

NOINLINE void spin_units(unsigned units);
NOINLINE void spin_units(unsigned units)
{
	for (unsigned long i = 0; i < units * 200000ul; i++)
		sink += i;
}

NOINLINE void burn_heavy(void);
NOINLINE void burn_heavy(void)
{
	spin_units(3);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void burn_light(void);
NOINLINE void burn_light(void)
{
	spin_units(1);
	__asm__ volatile("" ::: "memory");
}

static void *burner_main(void *arg)
{
	char name[16];
	snprintf(name, sizeof(name), "burn-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	for (;;) {
		burn_heavy();
		burn_light();
	}
	return NULL;
}

NOINLINE void sleep_forever(void);
NOINLINE void sleep_forever(void)
{
	for (;;) {
		struct timespec ts = {3600, 0};
		nanosleep(&ts, NULL);
	}
}

static void *sleeper_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "sleeper");
	sleep_forever();
	return NULL;
}

NOINLINE void lock_forever(void);
NOINLINE void lock_forever(void)
{
	pthread_mutex_lock(&held);
	pthread_mutex_unlock(&held);
}

static void *locker_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "locker");
	lock_forever();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2;
	pthread_mutex_lock(&held);
	pthread_t t;
	for (int i = 0; i < n; i++)
		pthread_create(&t, NULL, burner_main, (void *)(long)i);
	pthread_create(&t, NULL, sleeper_main, NULL);
	pthread_create(&t, NULL, locker_main, NULL);
	usleep(50000);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}
