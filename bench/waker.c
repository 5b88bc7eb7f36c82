/* bench-waker: a process that does nothing but wake HZ times a second (an
 * absolute-deadline clock_nanosleep loop) until a signal ends it. In the
 * burner figure it stands where a profiler would: what the target's ticker
 * loses to any tool that wakes at a profiler's rate on a busy box, before
 * it does any work at all (the floor under a tick-based sampler).
 *
 *   bench-waker HZ [BURN_US [fifo|NICE]]
 *
 * With BURN_US it also spins that long after each wake (on the monotonic
 * clock), at SCHED_FIFO 1 or the nice level given: a profiler's run
 * pattern without its perf events, to tell what our own runs cost the
 * ticker from what the kernel's sampling does (bench/RESULTS.md, ninth
 * session).
 */
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
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
		fprintf(stderr, "usage: bench-waker HZ (1 to 100000) [BURN_US [fifo|NICE]]\n");
		return 2;
	}
	/* bench/run stops a profiler with SIGINT, which a background job
	 * inherits ignored (a shell without job control): catch it. */
	signal(SIGINT, end);
	signal(SIGTERM, end);
	long burn_ns = argc > 2 ? atol(argv[2]) * 1000L : 0;
	if (argc > 3 && strcmp(argv[3], "fifo") == 0) {
		struct sched_param sp = {.sched_priority = 1};
		sched_setscheduler(0, SCHED_FIFO, &sp);
	} else if (argc > 3) {
		setpriority(PRIO_PROCESS, 0, atoi(argv[3]));
	}
	long period = 1000000000L / hz;
	/* A spin as long as the period would never sleep: at SCHED_FIFO
	 * that is a CPU gone. */
	if (burn_ns < 0 || burn_ns > period / 2) {
		fprintf(stderr, "bench-waker: BURN_US must be at most half the period\n");
		return 2;
	}
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		next.tv_nsec += period;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		do
			clock_gettime(CLOCK_MONOTONIC, &b);
		while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < burn_ns);
	}
}
