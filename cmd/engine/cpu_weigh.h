/*
 * cpu_weigh: the perf engine's CPU profile weighed to the CPU time the
 * kernel counted.
 *
 * A cpu-clock sample stands for one period of its thread's CPU time, but
 * the kernel's timer delivers fewer samples than the time it counts for a
 * thread that leaves the CPU often: on a 2-core box kept busy by other
 * work, two threads ping-ponging through a pipe got 80-92 % of the samples
 * their CPU time asks for, under `perf record -e cpu-clock` as under us
 * (and task-clock alike), while the event's own count and the threads'
 * schedstat agreed within 1 %. So that cpu.pprof's totals are what the
 * kernel measured, each thread's samples are weighed at the end by its
 * on-CPU time over the capture (schedstat, read when the events opened and
 * when they stopped) over what its samples add up to. The shares within a
 * thread stay perf's own; only the threads' totals move.
 *
 * A thread created during the capture inherited its events at birth: its
 * whole schedstat counts. Samples of threads without an end reading (they
 * exited), or past the tid label cap, share what is left of the process's
 * CPU time over the window (/proc/PID/stat: every thread's, the exited
 * ones' included), when there is enough of it to be more than the clock
 * ticks' noise.
 */
#ifndef DIAG_CMD_ENGINE_CPU_WEIGH_H
#define DIAG_CMD_ENGINE_CPU_WEIGH_H

#include <stddef.h>
#include <stdint.h>

#include "attach/attach.h"
#include "cmd/engine/stackagg.h"

struct cpu_weighing {
	uint64_t sampled_ns;    /* what the samples stood for, as the kernel sent them */
	uint64_t weighed_ns;    /* what they stand for now */
	size_t threads_weighed; /* threads weighed by their own schedstat */
	uint64_t rest_sampled_ns; /* the other threads' samples */
	double rest_factor;     /* what those were multiplied by (1: left as they were) */
};

/* Weigh values[ns_index] of cpu, whose labels start "tid=N" LABEL_SEP for
 * a labelled thread: start and end are every thread's schedstat when the
 * events opened (every thread that had them then) and when they stopped,
 * in any order; process_ns the
 * process's CPU time in between. Samples of other threads are weighed
 * only when they stand for rest_min_ns or more. 0 or -ENOMEM (cpu is
 * then untouched). */
int cpu_weigh(struct stackagg *cpu, size_t ns_index, const struct thread_cpu *start, size_t nstart,
	      const struct thread_cpu *end, size_t nend, uint64_t process_ns, uint64_t rest_min_ns,
	      struct cpu_weighing *ret);

#endif
