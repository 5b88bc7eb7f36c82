/* bench-chatty: the target of the switch-out cost figure. Two threads
 * hand one byte back and forth through two pipes, so each blocks and is
 * woken tens of thousands of times a second: the worst case for sampling
 * threads as they leave the CPU (each leaving is a context switch).
 *
 * Same line protocol as bench-target, on stdin/stdout:
 *   "reset\n"  start a measurement window
 *   "report\n" one JSON line: round trips and context switches per second
 *              of the window (getrusage of the whole process)
 *   "quit\n"   exit (EOF does the same)
 * Prints "ready" once both threads run.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];
static atomic_ulong round_trips;

static void *echo_main(void *arg)
{
	(void)arg;
	char c;
	while (read(ping[0], &c, 1) == 1)
		if (write(pong[1], &c, 1) != 1)
			break;
	return NULL;
}

static void *serve_main(void *arg)
{
	(void)arg;
	char c = 'x';
	for (;;) {
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			break;
		atomic_fetch_add_explicit(&round_trips, 1, memory_order_relaxed);
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long switches(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

int main(void)
{
	if (pipe(ping) < 0 || pipe(pong) < 0)
		return 1;
	pthread_t a, b;
	if (pthread_create(&a, NULL, echo_main, NULL) || pthread_create(&b, NULL, serve_main, NULL))
		return 1;
	printf("ready\n");
	fflush(stdout);
	double t0 = now_s();
	unsigned long r0 = atomic_load(&round_trips);
	long s0 = switches();
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, "reset") == 0) {
			t0 = now_s();
			r0 = atomic_load(&round_trips);
			s0 = switches();
		} else if (strcmp(line, "report") == 0) {
			double el = now_s() - t0;
			printf("{\"iters_per_s\": %.1f, \"switches_per_s\": %.1f, \"elapsed_s\": %.3f}\n",
			       (double)(atomic_load(&round_trips) - r0) / el,
			       (double)(switches() - s0) / el, el);
			fflush(stdout);
		} else if (strcmp(line, "quit") == 0) {
			break;
		}
	}
	return 0;
}
