/*
 * sampler_state: what the sampled capture keeps between its ticks, shared
 * by the loop (sampler.c) and the account it writes into the manifest
 * (sampler_manifest.c). Not an interface: only those include it.
 */
#ifndef DIAG_CMD_ENGINE_SAMPLER_STATE_H
#define DIAG_CMD_ENGINE_SAMPLER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "attach/attach.h"
#include "bundle/text.h"
#include "cmd/engine/cpu_perf.h"
#include "cmd/engine/internal.h"
#include "cmd/engine/moments.h"
#include "cmd/engine/pause_stats.h"
#include "cmd/engine/stackagg.h"
#include "cmd/engine/tid_cpu.h"
#include "cmd/engine/timeline_run.h"
#include "cmd/engine/wall_window.h"
#include "symbolize/symbolize.h"
#include "symbolize/worker/interp.h"

struct sampler {
	struct capture_session *s;
	struct attach_options ao;
	struct process_capture cur, last;
	struct unwound_stack *stacks, *last_stacks;
	size_t stacks_cap, last_stacks_cap;
	struct stackagg *cpu, *wall;
	struct stackagg *growth; /* page-fault samples (--growth); NULL: not asked */
	struct stackagg *creates; /* fork samples (--growth): threads and processes made */
	struct tid_cpu_table cpu_seen;
	/* Thread names as the labels spell them (redact.h), each redacted
	 * once rather than at every sample. */
	struct bundle_name_memo names;
	/* Threads whose samples carry a tid label; past tid_label_cap new
	 * threads go without one (counted), so that a process that churns
	 * threads cannot grow the profiles by one entry per thread forever. */
	struct tid_cpu_table labelled;
	size_t tid_label_cap;
	uint64_t unlabelled_samples;
	struct pause_stats pause;
	/* Each stopped thread's own hold: with release_each, a thread is
	 * detached as soon as it is copied, so this is what a busy thread
	 * feels, while pause above runs to the last thread's release. */
	struct pause_stats thread_pause;
	struct timeline_run *timeline;
	uint64_t period_ns;
	uint64_t ticks, missed, samples, cpu_samples, errors, unchanged;
	/* While nothing is stopped we yield to the target gently, and keep
	 * pace when our ticks start late (a saturated box): the ticks late
	 * and on time in a row, and how many times we had to keep pace. */
	bool keeping_pace;
	unsigned ticks_on_time;
	uint64_t pace_raised;
	/* Per-sample budget: the tick's own cost, smoothed. When it takes more
	 * than half the period the rate halves (and recovers when cheap again),
	 * so many threads cannot turn sampling into a standing stop. */
	uint64_t requested_period_ns, tick_cost_ewma_ns;
	uint64_t one_time_ns; /* this tick's one-off work (loading modules): not its cost */
	uint64_t tick_hold_ns; /* this tick's hold (cur and last swap at its end) */
	/* Pause budget (judge_pause): the current window's start, holds and
	 * ticks, the last window's mean hold, and the shortest period it
	 * allows; cost_period_ns is what our own cost allows. */
	uint64_t prev_hold_ns, win_start_ns, win_hold_ns, win_ticks, win_mean_hold_ns;
	uint64_t pause_floor_ns, cost_period_ns;
	uint64_t late_samples; /* threads found late, summed over the ticks */
	cJSON *adaptations;
	/* Addresses already resolved in the worker during the capture, so the
	 * end (which must be quick after Ctrl-C) only resolves what is new. */
	struct addrset *warmed;
	size_t last_threads;
	bool have_last, target_exited, prepared_once;
	bool exec_not_dumpable; /* ended: the target exec'd a non-dumpable program */
	/* CPU samples from perf events (NULL: from the stops above, weighted
	 * by schedstat); perf_refused: why not (-errno), 0 if used. */
	struct cpu_perf *perf;
	int perf_refused;
	/* Wall-clock ticks without stops (the perf engine with switch-out
	 * samples): each thread's latest perf moment, or its resting stack
	 * read from /proc. Counts of where each wall sample came from. */
	struct moments *moments;
	pid_t *held_tids; /* scratch: threads whose held switch-out a tick needs */
	size_t held_tids_cap;
	bool wall_perf;
	uint64_t wall_from_switch, wall_from_cpu, wall_from_proc, wall_reused;
	/* Threads asleep since a /proc read whose stack did not unwind (code
	 * with frame pointers): stopped once at the next tick for their
	 * registers, where that is harmless (want_registers). want is this
	 * tick's (sorted), want_next the next one's. */
	pid_t *want, *want_next;
	size_t nwant, nwant_next, want_cap;
	uint64_t stops_for_registers, wall_from_stop;
	/* Ticks between wakes (wall_window.h): the sampler wakes at every
	 * ticks_per_wake-th tick and computes those in between from the
	 * switch records; window NULL: it wakes at every tick. The next
	 * tick's virtual ticks (virt_n from virt_first_ns), the last anchor's
	 * time (the drain of the tick kept in last), and the counts. */
	struct wall_window *window, *window_owned;
	unsigned ticks_per_wake;
	uint64_t virt_first_ns, virt_n, anchor_ns;
	uint64_t wakes, virtual_ticks, wall_from_records;
	/* Thread samples (a thread at a tick) that had no stack: late to
	 * stop, or not seen by perf yet. Counted, never silently dropped. */
	uint64_t samples_without_stack;
	uint64_t samples_truncated; /* thread samples whose unwind stopped early */
	/* The final snapshot (threads.txt): its threads, those without a
	 * stack, and whether it is the last tick's (the target had exited). */
	size_t final_threads, final_without_stack, final_truncated;
	bool final_was_last_tick;
	uint64_t cpu_ns_start, cpu_ns_last; /* the target's utime+stime, /proc */
	uint64_t target_cpu_read_ns;        /* when cpu_ns_last was read */
	/* The machine's CPU ticks and the hypervisor's part of them, at the
	 * start (attach_machine_cpu_ticks); all 0 when unreadable. */
	uint64_t machine_ticks_start, stolen_ticks_start;
	int exit_signal_seen;
	/* A live view (capture_options.live): when its window started, and
	 * the stops and samples lost counted before it. */
	uint64_t live_since_ns, live_stops_base, live_hold_base_ns, live_lost_base;
};

#endif
