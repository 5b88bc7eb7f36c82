/* bench-waker: a process that does nothing but wake HZ times a second (an
 * absolute-deadline clock_nanosleep loop) until a signal ends it. In the
 * burner figure it stands where a profiler would: what the target's ticker
 * loses to any tool that wakes at a profiler's rate on a busy box, before
 * it does any work at all (the floor under a tick-based sampler).
 *
 *   bench-waker HZ
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void end(int sig)
{
	(void)sig;
	_exit(0);
}

int main(int argc, char **argv)
{
	long hz = argc > 1 ? atol(argv[1]) : 99;
	if (hz < 1 || hz > 100000) {
		fprintf(stderr, "usage: bench-waker HZ (1 to 100000)\n");
		return 2;
	}
	/* bench/run stops a profiler with SIGINT, which a background job
	 * inherits ignored (a shell without job control): catch it. */
	signal(SIGINT, end);
	signal(SIGTERM, end);
	long period = 1000000000L / hz;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		next.tv_nsec += period;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
}
