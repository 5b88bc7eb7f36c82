#include "attach/tool_priority.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* With nice 10 a 1 ms ticker in the target was late at its p99 1.18x
 * unprofiled, the same as perf record's, against 1.3x-2x for SCHED_BATCH
 * alone (bench/RESULTS.md, "The ticker on a quiet box"). A long EEVDF
 * slice did as well at the p99, but its lag credit, given back when we
 * woke, left target threads waiting 10-20 ms now and then. */
#define GENTLE_NICE 10

/* glibc 2.36 declares neither the struct nor the call. */
struct sched_attr_v1 {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};

static int set_fair(pid_t who, int policy, int nice)
{
	struct sched_attr_v1 a = {
		.size = sizeof(a),
		.sched_policy = (uint32_t)policy,
		.sched_nice = nice,
	};
	if (syscall(SYS_sched_setattr, who, &a, 0) == 0)
		return 0;
	/* A kernel or seccomp profile without sched_setattr: the policy
	 * alone, nice as it is. */
	struct sched_param p = {.sched_priority = 0};
	return sched_setscheduler(who, policy, &p) == 0 ? 0 : -errno;
}

/* Whether nice 0 can be had back after nice 10. */
static bool can_raise_priority(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NICE, &rl) == 0 && (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= 20))
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

int tool_priority_yield(pid_t who, bool keep_pace)
{
	static int can_return = -1;
	if (can_return < 0)
		can_return = can_raise_priority();
	return set_fair(who, SCHED_BATCH, keep_pace || !can_return ? 0 : GENTLE_NICE);
}

int tool_priority_normal(pid_t who)
{
	return set_fair(who, SCHED_OTHER, 0);
}
