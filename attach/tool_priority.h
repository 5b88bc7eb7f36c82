/* How the tool's own processes are scheduled while a capture stops no one.
 *
 * While nothing of the target is held, nothing of ours needs to run the
 * moment it wakes, and every moment it runs first is a moment a target
 * thread that woke with it waits. Returns 0 or a negative errno. who is a
 * pid or tid of ours, 0 for the calling thread. */
#ifndef DIAG_ATTACH_TOOL_PRIORITY_H
#define DIAG_ATTACH_TOOL_PRIORITY_H

#include <stdbool.h>
#include <sys/types.h>

/* Gently (keep_pace false): 10 nice levels lower. EEVDF picks the
 * eligible task with the earliest virtual deadline, and a low weight puts
 * ours late (its slice counts about 9x in virtual time), so a target thread
 * that woke in the same timer interrupt as our tick runs first. The same
 * weight is a small share of a saturated CPU, so a sampler that falls
 * behind asks to keep pace (the nice level the tool started with) until it
 * is on time again. The policy is SCHED_OTHER either way: a SCHED_BATCH
 * thread in another scheduling group than the target (another session
 * or cgroup) was not preempted by the target's wakeups (tool_priority.c).
 * A process that could not come back from the lower level (no
 * CAP_SYS_NICE, RLIMIT_NICE too low) is never put there: gently is then
 * the same as keep_pace. */
int tool_priority_yield(pid_t who, bool keep_pace);

/* Back to SCHED_OTHER at the nice level the tool started with. */
int tool_priority_normal(pid_t who);

#endif
