/* SPDX-License-Identifier: MIT */
/*
 * leak_threads [THREADS_PER_SECOND=2]
 *
 * Starts threads that block forever and are never joined: threads grows by
 * the rate. Stacks are 64 KiB so a long run leaks threads, not gigabytes of
 * address space. Past the thread limit it keeps trying.
 */
#include <pthread.h>
#include <unistd.h>

#include "leak_common.h"

static void *parked(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static pthread_attr_t attr;

static void tick(unsigned long n)
{
	pthread_t th;

	(void)n;
	if (pthread_create(&th, &attr, parked, NULL) == 0)
		pthread_detach(th);
}

int main(int argc, char **argv)
{
	leak_threads_main(argc, argv, 2, &attr, tick);
}
