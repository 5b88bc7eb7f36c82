/*
 * demo: the bundled demo target of the README quick start. A small "server"
 * with a worker pool: two workers burn CPU in compute_checksum, one waits on
 * a condition variable in wait_for_job, one is stuck on a lock in
 * flush_to_disk. Runs until killed; prints its pid.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t disk_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long checksum;

NOINLINE unsigned long compute_checksum(unsigned long seed);
NOINLINE unsigned long compute_checksum(unsigned long seed)
{
	unsigned long h = seed;
	for (int i = 0; i < 100000; i++)
		h = h * 1099511628211ul ^ (unsigned long)i;
	return h;
}

static void *cpu_worker(void *arg)
{
	pthread_setname_np(pthread_self(), "cpu-worker");
	for (unsigned long n = (unsigned long)arg;; n++)
		checksum ^= compute_checksum(n);
	return NULL;
}

NOINLINE void wait_for_job(void);
NOINLINE void wait_for_job(void)
{
	pthread_mutex_lock(&queue_lock);
	for (;;)
		pthread_cond_wait(&queue_cond, &queue_lock);
}

static void *idle_worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "idle-worker");
	wait_for_job();
	return NULL;
}

NOINLINE void flush_to_disk(void);
NOINLINE void flush_to_disk(void)
{
	pthread_mutex_lock(&disk_lock); /* held by main forever: a stuck thread */
	pthread_mutex_unlock(&disk_lock);
}

static void *flusher(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "flusher");
	flush_to_disk();
	return NULL;
}

int main(void)
{
	pthread_mutex_lock(&disk_lock);
	pthread_t t;
	pthread_create(&t, NULL, cpu_worker, (void *)1);
	pthread_create(&t, NULL, cpu_worker, (void *)2);
	pthread_create(&t, NULL, idle_worker, NULL);
	pthread_create(&t, NULL, flusher, NULL);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
