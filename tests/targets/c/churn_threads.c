/*
 * churn_threads: threads constantly created and exiting, plus one steady
 * worker ("steady") spinning in steady_work, for sampling robustness tests.
 * argv[1] (optional): seconds after which the process exits with status 42
 * (0 = never). Prints "ready\n". Counts progress in a global.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long progress;

__attribute__((noinline)) void steady_work(void);
__attribute__((noinline)) void steady_work(void)
{
	for (;;)
		progress++;
}

static void *steady_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "steady");
	steady_work();
	return NULL;
}

static void *short_main(void *arg)
{
	(void)arg;
	for (volatile int i = 0; i < 20000; i++)
		;
	return NULL;
}

int main(int argc, char **argv)
{
	int exit_after = argc > 1 ? atoi(argv[1]) : 0;
	time_t start = time(NULL);
	pthread_t t;
	pthread_create(&t, NULL, steady_main, NULL);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		pthread_t c[4];
		for (int i = 0; i < 4; i++)
			pthread_create(&c[i], NULL, short_main, NULL);
		for (int i = 0; i < 4; i++)
			pthread_join(c[i], NULL);
		if (exit_after && time(NULL) - start >= exit_after)
			exit(42);
	}
}
