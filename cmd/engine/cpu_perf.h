/*
 * cpu_perf: the CPU profile from perf events (attach/perf.h). Samples are
 * drained from the kernel's rings, their user stacks unwound in the
 * sandboxed worker like any capture, the kernel part of their call chain
 * put on top, and each added to the CPU profile with the CPU time it
 * stands for (its period). Kernel frames are named from /proc/kallsyms.
 *
 * With moments, every thread's latest cpu-clock sample is also kept
 * there, unwound: what the wall-clock ticks use instead of stopping
 * threads. Switch-out samples (when switch_freq asks for those) are not
 * unwound when drained: one at a place its thread already slept at
 * renews that sleep, any other is held raw (moments_hold), the newest per
 * thread, until a tick asks for it (cpu_perf_unwind_held).
 *
 * With defer_bytes_max, a CPU sample is not unwound when drained either:
 * its trimmed stack copy is kept, and it enters the profiles (and the
 * moments, and so the wall ticks) as a one-frame placeholder stack. After
 * the last collect, cpu_perf_unwind_deferred unwinds them all, and
 * cpu_perf_expand puts each one's frames in place of its placeholder. The
 * unwinding worker then does nothing during the capture but the held
 * switch-outs and the threads read from /proc: the target's CPUs are not
 * shared with it while it is measured (perf record works the same way:
 * nothing is unwound before perf report). A budget bounds what is kept;
 * past it, samples are unwound as they are drained.
 */
#ifndef DIAG_CMD_ENGINE_CPU_PERF_H
#define DIAG_CMD_ENGINE_CPU_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "attach/attach.h"
#include "attach/perf.h"
#include "cmd/engine/cpu_weigh.h"
#include "cmd/engine/moments.h"
#include "cmd/engine/stackagg.h"
#include "cmd/engine/wall_window.h"
#include "symbolize/worker/interp.h"
#include "symbolize/worker/symtab.h"

struct cpu_perf;

/* Writes the profile labels of a sample of tid into buf ("" for none). */
typedef void (*cpu_perf_label_fn)(void *arg, pid_t tid, char *buf, size_t size);

struct cpu_perf_options {
	uint64_t period_ns;   /* one sample per period_ns of each thread's CPU time */
	size_t stack_bytes;   /* user stack copied per sample */
	bool kernel_frames;   /* the kernel call chain on top of each stack */
	unsigned switch_freq; /* switch-out samples (perf.h); 0: none */
	struct moments *moments; /* latest sample per thread kept here; NULL: not kept */
	/* Stack copies kept to unwind CPU samples after the capture (above);
	 * 0: none. Not with an amend function that must see each stack when
	 * it is drained. */
	uint64_t defer_bytes_max;
	/* Every thread's switches in and out of a CPU, and its CPU samples'
	 * user stacks, go here too (wall_window.h); NULL: not asked for. */
	struct wall_window *window;
	/* cpu-clock events per CPU, not per thread (perf.h, per_cpu). */
	bool per_cpu;
	/* Page-fault samples (perf.h, fault_period), unwound like CPU samples
	 * and added to growth with values {faults, bytes}: where the target
	 * touches new memory. 0 or NULL: none. */
	uint64_t fault_period;
	struct stackagg *growth;
	/* Fork samples (perf.h, forks): each thread or process the target
	 * creates, its creator's stack, into creates (values {1}, labels the
	 * creator's then child_tid=N). NULL: none. */
	struct stackagg *creates;
};

/* Start perf events on every thread of t. 0 or -errno from
 * perf_sampler_open (the caller falls back to ptrace sampling). */
int cpu_perf_new(const struct attach_target *t, const struct cpu_perf_options *o,
		 struct cpu_perf **ret);

/* Whether switch-out samples are being taken (the kernel may refuse the
 * event and leave the cpu-clock ones). */
bool cpu_perf_switch_samples(const struct cpu_perf *cp);

/* Whether the switch records the window asked for are coming (kernels
 * before 4.3 have none). */
bool cpu_perf_switch_records(const struct cpu_perf *cp);

/* Amends the unwound user stack of a CPU sample of tid before it is added
 * (a CPython's frames: py_session_amend). */
typedef void (*cpu_perf_amend_fn)(void *arg, pid_t tid, struct unwound_stack *stack);

/* Drain the rings into cpu (values {1, period}), unwinding in `in`, each
 * sample labelled by label and amended by amend (either may be NULL; both
 * get arg). Returns the samples added, or -ENOMEM. */
long cpu_perf_collect(struct cpu_perf *cp, struct interp *in, struct stackagg *cpu,
		      cpu_perf_label_fn label, cpu_perf_amend_fn amend, void *arg);

/* Unwind the held switch-outs of these threads (those that have one)
 * into the moments, in one round trip. 0 or -ENOMEM. */
int cpu_perf_unwind_held(struct cpu_perf *cp, struct interp *in, const pid_t *tids, size_t n);

/* After the last cpu_perf_collect, while the target is still there if it
 * can be: unwind every sample kept (defer_bytes_max), in batches. A sample
 * the worker could not unwind gets its leaf only. 0 or -ENOMEM. */
int cpu_perf_unwind_deferred(struct cpu_perf *cp, struct interp *in);

/* Whether pc is a deferred sample's placeholder (not an address). */
bool cpu_perf_is_placeholder(uint64_t pc);

/* After cpu_perf_unwind_deferred: *agg rebuilt with every placeholder
 * replaced by its sample's frames (merging entries that become equal).
 * A stackagg without placeholders is left as it is. 0 or -ENOMEM (*agg
 * unchanged). */
int cpu_perf_expand(const struct cpu_perf *cp, struct stackagg **agg);

/* The same for one stack (a placeholder-only stack a tick kept). */
void cpu_perf_expand_stack(const struct cpu_perf *cp, struct unwound_stack *st);

/* Name the kernel addresses of st (/proc/kallsyms; "[kernel]" when it
 * cannot be read). 0 or -ENOMEM. */
int cpu_perf_name_kernel(struct cpu_perf *cp, struct symtab *st);

/* Read /proc/kallsyms now rather than at the first kernel frame to name
 * (a few hundred ms, up to a second on a busy machine): for a live view,
 * which names samples while it samples. cp may be NULL. */
void cpu_perf_load_kernel_names(struct cpu_perf *cp);

/* What cpu_perf_weigh did; false if it has not (or could not). */
bool cpu_perf_weighing(const struct cpu_perf *cp, struct cpu_weighing *ret);

/* {samples, lost, throttled, stacks_truncated, threads_followed,
 * threads_without_event, kernel_symbols} into o. */
void cpu_perf_describe(const struct cpu_perf *cp, cJSON *o);
/* The perf sampler's counts (lost, throttled, threads without an event...). */
void cpu_perf_stats(const struct cpu_perf *cp, struct perf_sampler_stats *ret);

/* After the last collect: the events stop (the final snapshot's stops and
 * our symbolizing are not the target's CPU profile), and every thread's
 * CPU time is read for cpu_perf_weigh. */
void cpu_perf_stop(struct cpu_perf *cp);

/* After cpu_perf_stop: weigh cpu's samples (values {1, ns}) to the CPU
 * time the kernel counted (cpu_weigh.h); process_ns is the target's CPU
 * time from the events' opening to their stop. The manifest says what
 * it did (cpu_perf_describe). 0 or -ENOMEM. */
int cpu_perf_weigh(struct cpu_perf *cp, struct stackagg *cpu, uint64_t process_ns, uint64_t rest_min_ns);

void cpu_perf_free(struct cpu_perf *cp);

#endif
