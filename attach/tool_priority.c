#include "attach/tool_priority.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* Ten levels lower, a 1 ms ticker in the target was late at its p99
 * 1.15x-1.76x unprofiled over 12-round runs (perf record: 1.04x-1.10x),
 * against 1.7x-3.5x at the tool's own level (bench/RESULTS.md, "The
 * ticker on a quiet box, found"). A long EEVDF slice did as well at the
 * p99, but its lag credit, given back when we woke, left target threads
 * waiting 6-20 ms now and then.
 *
 * The policy stays SCHED_OTHER. SCHED_BATCH was tried: the ticker did no
 * better when the tool shared the target's session, and from a session
 * (autogroup) of its own, as an operator's shell is beside a service, the
 * ticker's p99 was 1.40x under SCHED_BATCH against 1.12x under
 * SCHED_OTHER (pooled 2.61x against 1.26x): the ticker's wakeups did not
 * preempt our running SCHED_BATCH threads (bench/RESULTS.md, "SCHED_BATCH
 * across groups").
 *
 * SCHED_IDLE, a 100 us EEVDF slice (sched_attr.sched_runtime) and a
 * sched_yield() every 50 us of work were tried too (bench/RESULTS.md,
 * eighth session). None helped. A thread of ours that is runnable but
 * has not run yet in the target's runqueue keeps the target's own wakeups
 * from preempting a busy target thread until the scheduler tick. SCHED_IDLE
 * and yields leave us in that state more often. A short slice never
 * waits, but then the target waits behind our runs. */
#define GENTLE_STEPS 10

/* The nice level the tool started with (the user's, if it ran under
 * nice), read once: we never go above it, and come back to it. */
static int base_nice = 100;
static bool gentle_allowed;

/* Whether base_nice can be had back after base_nice + GENTLE_STEPS. */
static bool can_raise_priority(int base)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NICE, &rl) == 0 &&
	    (rl.rlim_cur == RLIM_INFINITY || (long long)rl.rlim_cur >= 20 - base))
		return true;
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return false;
	char line[256];
	unsigned long long eff = 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "CapEff:", 7) == 0)
			eff = strtoull(line + 7, NULL, 16);
	fclose(f);
	return (eff >> 23) & 1; /* CAP_SYS_NICE */
}

static void read_base(void)
{
	if (base_nice != 100)
		return;
	errno = 0;
	int n = getpriority(PRIO_PROCESS, 0);
	base_nice = errno ? 0 : n;
	gentle_allowed = base_nice < 19 && can_raise_priority(base_nice);
}

/* SCHED_OTHER (whatever policy we were started with), then the nice level
 * (per thread on Linux): sched_setscheduler leaves nice as it is. */
static int set_other(pid_t who, int nice)
{
	struct sched_param p = {.sched_priority = 0};
	if (sched_setscheduler(who, SCHED_OTHER, &p) != 0)
		return -errno;
	return setpriority(PRIO_PROCESS, (id_t)who, nice) == 0 ? 0 : -errno;
}

int tool_priority_yield(pid_t who, bool keep_pace)
{
	read_base();
	int nice = base_nice;
	if (!keep_pace && gentle_allowed)
		nice = base_nice + GENTLE_STEPS > 19 ? 19 : base_nice + GENTLE_STEPS;
	return set_other(who, nice);
}

int tool_priority_normal(pid_t who)
{
	read_base();
	return set_other(who, base_nice);
}
