/*
 * last_ran: how long a sleeping thread has not run, as the scheduler's own
 * clock tells it, read from /proc without touching the thread.
 *
 * /proc/TID/sched's se.exec_start is the task clock (rq->clock_task) of
 * the CPU the thread last ran on, taken when it last ran; /proc/TID/stat's
 * field 39 names that CPU. The same clock's "now" on that CPU is our own
 * se.exec_start just after we have been moved there. Their difference is a
 * lower bound of the time since the thread last ran: the task clock leaves
 * out what the hypervisor stole and interrupt time, and our own reading
 * may be a tick old. So it is printed as "not run for >= T", never as how
 * long a lock has been waited for (the thread may have woken and slept
 * again on the same lock).
 *
 * Read it before the thread is stopped: a ptrace stop makes it run. The
 * clocks are read first, for every CPU we may run on, before any thread is
 * held (moving between CPUs takes time that no held thread should wait);
 * each thread then costs one read of its sched file.
 */
#ifndef DIAG_ATTACH_LAST_RAN_H
#define DIAG_ATTACH_LAST_RAN_H

#include <stdint.h>
#include <sys/types.h>

/* One reading of "now" per CPU. */
struct last_ran_clock;

/* Read every CPU's clock that we may run on (our affinity), moving this
 * thread onto each in turn and back. NULL on ENOMEM. */
struct last_ran_clock *last_ran_clock_read(void);
void last_ran_clock_free(struct last_ran_clock *c);

/* The ns since thread tid (of the process whose /proc/PID/task is
 * task_dirfd) last ran, into *ret_ns; cpu is its /proc/TID/stat field 39
 * (procfs_stat.processor), read just before. 0; -ENOENT: the kernel has no
 * /proc/TID/sched (built without CONFIG_SCHED_DEBUG) or the thread is
 * gone; -EXDEV: its CPU is not one we may run on (a cpuset), so that CPU's
 * clock was not read; -EAGAIN: it ran after we read its CPU's clock;
 * -errno otherwise. */
int last_ran_ago(const struct last_ran_clock *c, int task_dirfd, pid_t tid, int cpu,
		 uint64_t *ret_ns);

#endif
