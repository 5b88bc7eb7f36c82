/*
 * rel_driver: a minimal sampler over attach.h, for reliability tests of
 * what the CLI does not expose (yet): options.no_interrupt_blocked and the
 * watchdog.
 *
 *   rel_driver PID DURATION_MS HZ [nib] [watchdog=MS] [hold=MS]
 *
 * Captures PID HZ times a second for DURATION_MS, prints "started" once the
 * watchdog (if any) runs, and at the end one line per thread seen:
 *   tid=T samples=N stopped=S not_stopped=U late=L
 * then "captures=C failed=F". Exit 0, or 3 if the target is gone at the
 * start.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attach/attach.h"

#define MAX_TIDS 4096

struct seen {
	pid_t tid;
	unsigned long samples, stopped, not_stopped, late;
};

static struct seen seen[MAX_TIDS];
static size_t nseen;

static struct seen *lookup(pid_t tid)
{
	for (size_t i = 0; i < nseen; i++)
		if (seen[i].tid == tid)
			return &seen[i];
	if (nseen == MAX_TIDS)
		return NULL;
	seen[nseen].tid = tid;
	return &seen[nseen++];
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: rel_driver PID DURATION_MS HZ [nib] [watchdog=MS] [hold=MS]\n");
		return 2;
	}
	pid_t pid = (pid_t)atoi(argv[1]);
	uint64_t duration = strtoull(argv[2], NULL, 10) * 1000000ull;
	unsigned hz = (unsigned)atoi(argv[3]);
	struct attach_options o;
	attach_options_init(&o);
	unsigned watchdog_ms = 0;
	for (int i = 4; i < argc; i++) {
		if (strcmp(argv[i], "nib") == 0)
			o.no_interrupt_blocked = true;
		else if (strncmp(argv[i], "watchdog=", 9) == 0)
			watchdog_ms = (unsigned)atoi(argv[i] + 9);
		else if (strncmp(argv[i], "hold=", 5) == 0)
			o.test_hold_ms = (unsigned)atoi(argv[i] + 5);
	}
	struct attach_target t;
	if (attach_target_open(pid, &t) < 0)
		return 3;
	if (watchdog_ms) {
		int r = attach_watchdog_start(watchdog_ms);
		if (r < 0) {
			fprintf(stderr, "watchdog: %s\n", strerror(-r));
			return 4;
		}
	}
	printf("started\n");
	fflush(stdout);

	struct process_capture pc;
	memset(&pc, 0, sizeof(pc));
	unsigned long captures = 0, failed = 0;
	uint64_t start = mono_ns(), period = 1000000000ull / (hz ? hz : 1);
	uint64_t next = start;
	while (mono_ns() - start < duration) {
		int r = attach_capture(&t, &o, &pc);
		captures++;
		if (r == -ESRCH) {
			/* Gone, unless the pidfd says otherwise (then: a bug). */
			printf("ended: target gone (alive=%d)\n", attach_target_alive(&t));
			break;
		}
		if (r < 0) {
			failed++;
		} else {
			for (size_t i = 0; i < pc.nthreads; i++) {
				struct seen *s = lookup(pc.threads[i].tid);
				if (!s)
					continue;
				s->samples++;
				if (pc.threads[i].outcome == THREAD_LATE)
					s->late++;
				else if (pc.threads[i].not_stopped)
					s->not_stopped++;
				else
					s->stopped++;
			}
		}
		next += period;
		struct timespec ts = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	attach_service_late();
	for (size_t i = 0; i < nseen; i++)
		printf("tid=%d samples=%lu stopped=%lu not_stopped=%lu late=%lu\n", (int)seen[i].tid,
		       seen[i].samples, seen[i].stopped, seen[i].not_stopped, seen[i].late);
	printf("captures=%lu failed=%lu reaped=%lu\n", captures, failed, attach_reaped_threads());
	process_capture_release(&pc);
	attach_watchdog_stop();
	attach_target_close(&t);
	return 0;
}
