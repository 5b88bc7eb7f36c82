/* The sampled capture: CPU samples from perf events (or ptrace stops
 * weighted by schedstat), wall-clock ticks that stop no thread where perf
 * events allow, the /proc timeline; raw PCs aggregated as they come and
 * symbolized once per distinct PC when the capture ends (or, for a live
 * view, at each of its refreshes). */
#include "cmd/engine/sampler.h"
#include "cmd/engine/sampler_state.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach/tool_priority.h"
#include "bundle/redact.h"
#include "cmd/engine/binaries.h"
#include "cmd/engine/cpu_perf.h"
#include "cmd/engine/go_session.h"
#include "cmd/engine/growth_out.h"
#include "cmd/engine/hold.h"
#include "cmd/engine/py_session.h"
#include "cmd/engine/moments.h"
#include "cmd/engine/pause_stats.h"
#include "cmd/engine/profile_out.h"
#include "cmd/engine/sampler_manifest.h"
#include "cmd/engine/sampler_rate.h"
#include "cmd/engine/snapshot_out.h"
#include "cmd/engine/stackagg.h"
#include "cmd/engine/tid_cpu.h"
#include "cmd/engine/timeline_run.h"
#include "cmd/engine/wall_window.h"
#include "symbolize/unwind/unwind.h"
#include "symbolize/worker/interp.h"
#include "symbolize/arrays.h"

#define PROGRESS_EVERY_NS 250000000ull
#define WARM_EVERY_NS 500000000ull
#define LATE_POLL_NS 2000000ull
/* Perf rings are drained this often (a CPU fills at most 99 samples a
 * second into a ring that holds a dozen or more). */
#define PERF_DRAIN_EVERY_NS 40000000ull
#define TARGET_CPU_EVERY_NS 100000000ull
/* --unwind-later's default: 64 MiB of trimmed stack copies (a few KiB
 * each) is minutes of a few busy threads at 99 Hz. */
#define UNWIND_LATER_DEFAULT (64ull << 20)
/* --wake-hz's default: a wake at every tick. Waking at every fourth
 * (--wake-hz 25) takes 40 % less of our CPU, but in longer bursts, and
 * the target's 1 ms ticker did no better behind them at its p99 over
 * four runs (bench/RESULTS.md, sixth session). */
#define WAKE_HZ_DEFAULT 0
/* At most this many ticks a wake: at -F 999, 24 CPU samples per CPU
 * (about 800 KiB of its 2 MiB ring) wait for each drain. */
#define TICKS_PER_WAKE_MAX 24

/* --growth: one page-fault sample every this many faults of a thread (64
 * KiB of 4 KiB pages): a 1 MiB/s leak costs 16 samples a second. */
#define GROWTH_FAULT_PERIOD 16

/* Room for n tids in both want arrays. 0 or -ENOMEM. */
static int grow_want(struct sampler *sp, size_t n)
{
	if (n <= sp->want_cap)
		return 0;
	size_t cap = sp->want_cap;
	if (array_reserve(&sp->want, &cap, n, sizeof(pid_t), 64) < 0)
		return -ENOMEM;
	cap = sp->want_cap;
	if (array_reserve(&sp->want_next, &cap, n, sizeof(pid_t), 64) < 0)
		return -ENOMEM;
	sp->want_cap = cap;
	return 0;
}

static int grow_stacks(struct unwound_stack **s, size_t *cap, size_t n)
{
	return array_reserve(s, cap, n, sizeof(**s), 16);
}

static int collect_new(void *ctx, const uint64_t *pcs, size_t npcs, const char *labels,
		       const int64_t *values)
{
	struct addrset **sets = ctx; /* [0] warmed, [1] new this round */
	for (size_t i = 0; i < npcs; i++) {
		if (cpu_perf_is_placeholder(pcs[i]))
			continue; /* a sample to unwind after the capture */
		uint64_t a = frame_lookup_address(pcs, i);
		size_t before;
		addrset_items(sets[0], &before);
		if (addrset_add(sets[0], a) < 0)
			return 1;
		size_t after;
		addrset_items(sets[0], &after);
		if (after != before && addrset_add(sets[1], a) < 0)
			return 1;
	}
	return 0;
}

/* Have the symbolization worker resolve, in the background, the addresses
 * seen since the last round: its cache keeps them, and the final batch
 * (which must be quick after Ctrl-C) is then mostly cache hits. Skipped
 * while the previous round is still being worked on. */
static void warm_symbols(struct sampler *sp)
{
	if (!sp->have_last || interp_warm_busy(sp->s->interp))
		return;
	if (!sp->warmed && !(sp->warmed = addrset_new()))
		return;
	struct addrset *fresh = addrset_new();
	if (!fresh)
		return;
	struct addrset *sets[2] = {sp->warmed, fresh};
	stackagg_foreach(sp->cpu, collect_new, sets);
	stackagg_foreach(sp->wall, collect_new, sets);
	size_t n;
	const uint64_t *addrs = addrset_items(fresh, &n);
	if (n)
		interp_warm(sp->s->interp, sp->last.maps_text, sp->last.maps_len, addrs, n);
	addrset_free(fresh);
}

/* Index of tid in a capture's thread list (main thread first, then by
 * tid: a binary search), or SIZE_MAX. */
static size_t find_thread_index(const struct process_capture *pc, pid_t tid)
{
	size_t lo = 0, hi = pc->nthreads;
	if (hi && pc->threads[0].tid == pc->pid) {
		if (tid == pc->pid)
			return 0;
		lo = 1;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pc->threads[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < pc->nthreads && pc->threads[lo].tid == tid ? lo : SIZE_MAX;
}

/* A thread that has not run since the previous tick was not stopped: its
 * stack is the one we had then (it cannot have changed without running). */
static void reuse_idle_stacks(struct sampler *sp)
{
	for (size_t i = 0; i < sp->cur.nthreads; i++) {
		struct thread_capture *tc = &sp->cur.threads[i];
		if (tc->outcome != THREAD_UNCHANGED)
			continue;
		sp->stacks[i].n = 0;
		size_t j = sp->have_last ? find_thread_index(&sp->last, tc->tid) : SIZE_MAX;
		if (j == SIZE_MAX)
			continue;
		sp->stacks[i] = sp->last_stacks[j];
		/* Registers too: for the blocked-in-syscall test, and for the final
		 * snapshot should this be the last capture. */
		tc->regs = sp->last.threads[j].regs;
		tc->syscall_nr = sp->last.threads[j].syscall_nr;
	}
}

/* How many distinct threads get a tid label: every thread the process has
 * at the first tick twice over, and at least MIN_TID_LABELS. Each labelled
 * thread costs about 1 KiB of profile entries that stay for the whole
 * capture (a process creating threads all the time grew the tool by
 * ~8 MiB an hour before this cap; bench/soak). */
#define MIN_TID_LABELS 1024

static bool tid_labelled(struct sampler *sp, pid_t tid)
{
	if (!sp->tid_label_cap) {
		size_t twice = 2 * sp->cur.nthreads;
		sp->tid_label_cap = twice > MIN_TID_LABELS ? twice : MIN_TID_LABELS;
	}
	if (tid_cpu_find(&sp->labelled, tid, false))
		return true;
	return sp->labelled.used < sp->tid_label_cap && tid_cpu_find(&sp->labelled, tid, true);
}

/* On-CPU, when perf events are refused: each sample weighs the CPU time
 * the thread used since its previous sample (schedstat), so the profile's
 * total is the CPU time the kernel measured, whatever the rate and however
 * late a stop landed (a whole period per runnable thread overstated it
 * 2-3x on a busy machine). The count starts from each thread's CPU time at
 * the start of the capture (seed_cpu_seen), or from 0 for a thread born
 * during it; the final capture adds what each thread used after its last
 * tick. Without schedstat, a runnable thread weighs a period, as before. */
static int ptrace_cpu_sample(struct sampler *sp, const struct thread_capture *tc,
			     const struct unwound_stack *st, const char *labels)
{
	struct tid_cpu *seen = tid_cpu_lookup(&sp->cpu_seen, tc->tid);
	uint64_t used = 0;
	if (tc->cpu_ns == 0)
		used = tc->state == 'R' ? sp->period_ns : 0;
	else if (seen && seen->cpu_ns == UINT64_MAX)
		used = tc->cpu_ns;
	else if (seen && tc->cpu_ns > seen->cpu_ns)
		used = tc->cpu_ns - seen->cpu_ns;
	if (seen && tc->cpu_ns)
		seen->cpu_ns = tc->cpu_ns;
	if (!used || st->n == 0)
		return 0;
	int64_t cpu_values[2] = {1, (int64_t)used};
	if (stackagg_add(sp->cpu, st->pcs, st->n, labels, cpu_values) < 0)
		return -ENOMEM;
	sp->cpu_samples++;
	return 0;
}

/* Every thread's CPU time at the start, from schedstat: the ptrace
 * engine's counts start there. */
static void seed_cpu_seen(struct sampler *sp)
{
	struct thread_cpu *v;
	size_t n;
	if (attach_threads_cpu_ns(&sp->s->target, &v, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct tid_cpu *seen = tid_cpu_lookup(&sp->cpu_seen, v[i].tid);
		if (seen)
			seen->cpu_ns = v[i].ns;
	}
	free(v);
}

/* The labels of a CPU sample of tid named raw_comm (redacted and escaped
 * as in threads.txt): "tid=N<SEP>thread_comm=NAME", without the tid past
 * the label cap. Returns whether the tid label is there. */
static bool cpu_labels(struct sampler *sp, pid_t tid, const char *raw_comm, char *buf, size_t size)
{
	const char *comm = bundle_name_memo_get(&sp->names, raw_comm);
	char tidl[32] = "";
	bool labelled = tid_labelled(sp, tid);
	if (labelled)
		snprintf(tidl, sizeof(tidl), "tid=%d" LABEL_SEP, (int)tid);
	/* A comm too long for buf is cut, which a label may be. */
	if (snprintf(buf, size, "%sthread_comm=%s", tidl, comm) >= (int)size)
		buf[size - 1] = '\0';
	return labelled;
}

/* The final capture's share of the ptrace engine's CPU profile: what each
 * thread used since its last tick. */
static int ptrace_cpu_final(struct sampler *sp, const struct process_capture *pc,
			    const struct unwound_stack *stacks)
{
	for (size_t i = 0; i < pc->nthreads; i++) {
		const struct thread_capture *tc = &pc->threads[i];
		if (tc->outcome != THREAD_CAPTURED)
			continue;
		char labels[160];
		cpu_labels(sp, tc->tid, tc->comm, labels, sizeof(labels));
		if (ptrace_cpu_sample(sp, tc, &stacks[i], labels) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* options.moment_known: the thread /proc shows asleep at sp, pc (in a
 * system call with these arguments) went to sleep there in a switch-out
 * sample (taken with every register and, unless cut short, its whole
 * stack): no copy needed. Two sleeps at one SP and PC with the same
 * arguments are the same call from the same frames. */
static bool moment_known(void *ctx, pid_t tid, const uint64_t *args, uint64_t sp, uint64_t pc)
{
	return moments_knows_sleep(ctx, tid, args, sp, pc);
}

static int tid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

/* options.want_registers: the tid is one whose last stack, read from
 * /proc, stopped short (sampler.want). */
static bool want_registers(void *ctx, pid_t tid)
{
	const struct sampler *sp = ctx;
	return sp->nwant && bsearch(&tid, sp->want, sp->nwant, sizeof(pid_t), tid_cmp);
}

/* After a tick's unwind: a thread asleep where /proc read a stack that
 * did not unwind whole is wanted at the next tick, stopped, when that
 * costs it nothing (attach_stop_is_harmless). A thread the tick stopped
 * for that (or any stopped asleep in a call) is remembered asleep there
 * with its full stack: later ticks that find it at that place take it,
 * and it is stopped no more. 0 or -ENOMEM. */
static int note_resting_stacks(struct sampler *sp)
{
	sp->nwant_next = 0;
	for (size_t i = 0; i < sp->cur.nthreads; i++) {
		const struct thread_capture *tc = &sp->cur.threads[i];
		const struct unwound_stack *st = &sp->stacks[i];
		if (tc->outcome != THREAD_CAPTURED || st->n == 0)
			continue;
		if (tc->not_stopped) {
			if (st->truncated && sp->ao.want_registers &&
			    attach_stop_is_harmless(&sp->s->target, tc))
				sp->want_next[sp->nwant_next++] = tc->tid;
			continue;
		}
		if (tc->syscall_nr < 0 || (tc->state != 'S' && tc->state != 'D'))
			continue;
		sp->stops_for_registers++;
		sp->wall_from_stop++;
		struct moment m = {
			.tid = tc->tid,
			.kind = MOMENT_STOPPED_ASLEEP,
			.time_ns = monotonic_ns(),
			.sp = tc->regs.rsp,
			.pc = tc->regs.rip,
			.stack = *st,
		};
		moment_syscall_args(&tc->regs, m.args);
		if (moments_note(sp->moments, &m) < 0)
			return -ENOMEM;
	}
	pid_t *t = sp->want;
	sp->want = sp->want_next;
	sp->want_next = t;
	sp->nwant = sp->nwant_next;
	qsort(sp->want, sp->nwant, sizeof(pid_t), tid_cmp);
	return 0;
}

/* Whether the tick needs tc's held switch-out (moments.h) unwound: it is
 * asleep where that switch-out left it, or it has had no newer moment for
 * two CPU periods (it has been waiting for a CPU, or asleep since a
 * switch-out the kernel did not sample at a known place). A thread
 * preempted in its loop has a CPU sample at most a period of its own CPU
 * time old, which says where it runs as well. */
static bool needs_held(const struct sampler *sp, const struct thread_capture *tc)
{
	const struct held_switch *h = moments_held(sp->moments, tc->tid);
	if (!h)
		return false;
	if ((tc->state == 'S' || tc->state == 'D') && tc->regs.rsp) {
		uint64_t args[6];
		moment_syscall_args(&tc->regs, args);
		const uint64_t *a = tc->syscall_nr >= 0 ? args : NULL;
		/* Asleep at a kept sleep: nothing to unwind; else at the held
		 * one's place (what moments_knows_sleep adds to the kept). */
		if (moments_find_sleep(sp->moments, tc->tid, a, tc->regs.rsp, tc->regs.rip))
			return false;
		if (moments_knows_sleep(sp->moments, tc->tid, a, tc->regs.rsp, tc->regs.rip))
			return true;
	}
	const struct moment *m = moments_find(sp->moments, tc->tid);
	return !m || h->m.time_ns > m->time_ns + 2 * sp->requested_period_ns;
}

/* The held switch-outs this tick needs, unwound in one round trip. */
static int unwind_needed_held(struct sampler *sp)
{
	if (array_reserve(&sp->held_tids, &sp->held_tids_cap, sp->cur.nthreads, sizeof(pid_t), 16) < 0)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < sp->cur.nthreads; i++) {
		const struct thread_capture *tc = &sp->cur.threads[i];
		if (tc->outcome == THREAD_NOT_READ && needs_held(sp, tc))
			sp->held_tids[n++] = tc->tid;
	}
	return n ? cpu_perf_unwind_held(sp->perf, sp->s->interp, sp->held_tids, n) : 0;
}

/* Wall-clock without stops: a thread the tick did not read takes its
 * latest perf moment (where it was running at most a period ago, or where
 * it left the CPU). */
static int fill_from_moments(struct sampler *sp)
{
	int r = unwind_needed_held(sp);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sp->cur.nthreads; i++) {
		struct thread_capture *tc = &sp->cur.threads[i];
		if (tc->outcome == THREAD_CAPTURED && tc->not_stopped)
			sp->wall_from_proc++;
		if (tc->outcome != THREAD_NOT_READ)
			continue;
		/* Asleep where it slept before: that sleep's sample (the
		 * hook above said so); otherwise its latest moment. */
		const struct moment *m = NULL;
		if ((tc->state == 'S' || tc->state == 'D') && tc->regs.rsp) {
			uint64_t args[6];
			moment_syscall_args(&tc->regs, args);
			m = moments_find_sleep(sp->moments, tc->tid, tc->syscall_nr >= 0 ? args : NULL,
					       tc->regs.rsp, tc->regs.rip);
		}
		if (!m)
			m = moments_find(sp->moments, tc->tid);
		sp->stacks[i].n = 0;
		if (!m)
			continue;
		sp->stacks[i] = m->stack;
		if (m->kind == MOMENT_SWITCH_OUT)
			sp->wall_from_switch++;
		else if (m->kind == MOMENT_STOPPED_ASLEEP)
			sp->wall_from_stop++;
		else
			sp->wall_from_cpu++;
		if (tc->syscall_nr < 0) {
			tc->regs.rsp = m->sp;
			tc->regs.rip = m->pc;
		}
	}
	return 0;
}

/* One wall-clock sample: tc in this state with this stack at a tick. */
static int add_wall_sample(struct sampler *sp, const struct thread_capture *tc, char state,
			   const struct unwound_stack *st)
{
	/* The name redacted and escaped as in threads.txt (snapshot_out.c
	 * says why). */
	char labels[200], tid[32] = "";
	const char *comm = bundle_name_memo_get(&sp->names, tc->comm);
	if (tid_labelled(sp, tc->tid))
		snprintf(tid, sizeof(tid), "tid=%d" LABEL_SEP, (int)tc->tid);
	else
		sp->unlabelled_samples++;
	/* A thread without a stack at this tick (late to stop, or not
	 * sampled by perf yet) is still a thread at this tick: a sample
	 * without frames, labelled no_stack, so the profile's total is
	 * every thread's wall time and none vanishes. */
	snprintf(labels, sizeof(labels), "%sthread_comm=%s" LABEL_SEP "state=%c%s%s", tid, comm, state,
		 st->n ? "" : LABEL_SEP "no_stack=", st->n ? "" : snapshot_no_stack_label(tc));
	int64_t wall_values[2] = {1, (int64_t)sp->period_ns};
	if (stackagg_add(sp->wall, st->pcs, st->n, labels, wall_values) < 0)
		return -ENOMEM;
	if (st->n == 0) {
		sp->samples_without_stack++;
		return 0;
	}
	sp->samples++;
	sp->samples_truncated += st->truncated;
	return 0;
}

/* The wall sample at t (between the wake kept in last, read at
 * sp->anchor_ns, and this one, read at now_ns) of a thread of either:
 * tc is its entry in one, i its index in cur or SIZE_MAX, j in last or
 * SIZE_MAX. 0 or -ENOMEM. */
static int virtual_sample(struct sampler *sp, const struct thread_capture *tc, size_t i, size_t j,
			  uint64_t t, uint64_t now_ns)
{
	struct wall_anchor prev = {.present = false}, now = {.present = false};
	if (i != SIZE_MAX)
		now = (struct wall_anchor){.present = true,
					   .state = sp->cur.threads[i].state,
					   .stack = &sp->stacks[i]};
	if (j != SIZE_MAX && sp->last.threads[j].outcome != THREAD_GONE)
		prev = (struct wall_anchor){.present = true,
					    .state = sp->last.threads[j].state,
					    .stack = &sp->last_stacks[j]};
	char state;
	const struct unwound_stack *st;
	if (!wall_window_at(sp->window, tc->tid, t, sp->anchor_ns, &prev, now_ns, &now, &state, &st))
		return 0;
	sp->wall_from_records++;
	return add_wall_sample(sp, tc, state, st);
}

/* The ticks since the last wake, computed from the switch records
 * (wall_window.h) between the wake kept in last and this one (cur and
 * stacks). A thread born in between is taken from its first switch in,
 * one that ended until its last switch out. 0 or -ENOMEM. */
static int emit_virtual_ticks(struct sampler *sp, uint64_t now_ns)
{
	uint64_t n = sp->virt_n;
	sp->virt_n = 0;
	if (!sp->have_last) {
		sp->missed += n; /* before the first wake: no wake to start from */
		return 0;
	}
	/* The ticks before this wake (all of them, unless it failed to come
	 * before its own tick's time). */
	while (n && sp->virt_first_ns + (n - 1) * sp->period_ns >= now_ns)
		n--;
	/* Thread by thread, each found once in the other capture. */
	for (size_t i = 0; i < sp->cur.nthreads; i++) {
		const struct thread_capture *tc = &sp->cur.threads[i];
		if (tc->outcome == THREAD_GONE)
			continue;
		size_t j = find_thread_index(&sp->last, tc->tid);
		for (uint64_t k = 0; k < n; k++)
			if (virtual_sample(sp, tc, i, j, sp->virt_first_ns + k * sp->period_ns, now_ns) < 0)
				return -ENOMEM;
	}
	for (size_t j = 0; j < sp->last.nthreads; j++) {
		const struct thread_capture *tc = &sp->last.threads[j];
		size_t i = find_thread_index(&sp->cur, tc->tid);
		if (tc->outcome == THREAD_GONE ||
		    (i != SIZE_MAX && sp->cur.threads[i].outcome != THREAD_GONE))
			continue;
		for (uint64_t k = 0; k < n; k++)
			if (virtual_sample(sp, tc, SIZE_MAX, j, sp->virt_first_ns + k * sp->period_ns,
					   now_ns) < 0)
				return -ENOMEM;
	}
	sp->ticks += n;
	sp->virtual_ticks += n;
	return 0;
}

static int perf_drain(struct sampler *sp);
static int python_refresh(struct sampler *sp);

static int sample_tick(struct sampler *sp)
{
	if (sp->wall_perf) {
		/* Every sample up to now, so that each thread's moment is its
		 * latest before the tick. */
		int d = perf_drain(sp);
		if (d < 0)
			return d;
	}
	/* This wake's anchor: every record drained is at or before it. */
	uint64_t anchor_ns = monotonic_ns();
	/* (window_owned: the records come even where the window went unused,
	 * the switch-out samples refused, and must not pile up.) */
	if (sp->window_owned) {
		wall_window_forget(sp->window_owned, sp->anchor_ns);
		wall_window_seal(sp->window_owned);
	}
	int r = attach_capture(&sp->s->target, &sp->ao, &sp->cur);
	sp->late_samples += sp->cur.nlate;
	sp->tick_hold_ns = sp->cur.hold_ns;
	if (r < 0) {
		if (sp->cur.hold_ns) /* it held the target before it failed */
			pause_stats_add(&sp->pause, sp->cur.hold_ns);
		return r;
	}
	/* Without stops at the ticks, a tick holds someone only to read a
	 * thread's registers in full (note_resting_stacks). */
	if (!sp->wall_perf || sp->cur.hold_ns)
		pause_stats_add(&sp->pause, sp->cur.hold_ns);
	for (size_t i = 0; i < sp->cur.nthreads; i++) {
		const struct thread_capture *tc = &sp->cur.threads[i];
		if (tc->outcome == THREAD_CAPTURED && !tc->not_stopped)
			pause_stats_add(&sp->thread_pause, tc->hold_ns);
	}

	/* Released: everything below costs the target nothing but shared CPU. */
	if (!sp->prepared_once) {
		/* Loading modules takes a while (hundreds of ms): threads this
		 * first capture left late must not sit stopped through it. */
		attach_settle_late(sp->ao.stop_timeout_ms);
		/* Load modules while the target is alive, in case it exits before
		 * the end: after that /proc/PID/root and map_files are gone. */
		uint64_t t0 = monotonic_ns();
		interp_prepare(sp->s->interp, sp->cur.maps_text, sp->cur.maps_len);
		sp->one_time_ns = monotonic_ns() - t0;
		sp->prepared_once = true;
	}
	if (grow_stacks(&sp->stacks, &sp->stacks_cap, sp->cur.nthreads) < 0)
		return -ENOMEM;
	interp_unwind(sp->s->interp, &sp->cur, sp->stacks);
	attach_service_late(); /* late threads that trapped while we unwound */
	reuse_idle_stacks(sp);
	if (sp->wall_perf) {
		if (grow_want(sp, sp->cur.nthreads) < 0 || note_resting_stacks(sp) < 0)
			return -ENOMEM;
		int f = fill_from_moments(sp);
		if (f < 0)
			return f;
		sp->wall_reused += sp->cur.nunchanged;
		moments_prune(sp->moments, &sp->cur);
	}
	sp->unchanged += sp->cur.nunchanged;
	/* A CPython's frames at this tick: the read perf_drain just made, or
	 * one now (the ptrace engines drain nothing at the tick). */
	if (!sp->wall_perf && python_refresh(sp) < 0)
		return -ENOMEM;
	for (size_t i = 0; sp->s->py && i < sp->cur.nthreads; i++)
		py_session_amend(sp->s->py, sp->cur.threads[i].tid, &sp->stacks[i]);

	if (sp->window && emit_virtual_ticks(sp, anchor_ns) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < sp->cur.nthreads; i++) {
		struct thread_capture *tc = &sp->cur.threads[i];
		const struct unwound_stack *st = &sp->stacks[i];
		if (tc->outcome == THREAD_GONE)
			continue;
		/* attach/ already reports S for a thread read as R that the stop
		 * found asleep in a syscall our previous release had woken. */
		if (add_wall_sample(sp, tc, tc->state, st) < 0)
			return -ENOMEM;
		if (!sp->perf && st->n) {
			char labels[200], tid[32] = "";
			const char *comm = bundle_name_memo_get(&sp->names, tc->comm);
			if (tid_labelled(sp, tc->tid))
				snprintf(tid, sizeof(tid), "tid=%d" LABEL_SEP, (int)tc->tid);
			snprintf(labels, sizeof(labels), "%sthread_comm=%s", tid, comm);
			if (ptrace_cpu_sample(sp, tc, st, labels) < 0)
				return -ENOMEM;
		}
	}
	sp->last_threads = sp->cur.nthreads;
	tid_cpu_prune(&sp->cpu_seen, &sp->cur);

	/* A capture taken while the process was exiting (exit_group takes its
	 * threads away as we go) is no picture of it alive: keep the previous
	 * one for the final snapshot, and end. */
	if (!attach_target_alive(&sp->s->target))
		return -ESRCH;
	/* The main thread in do_exit and not yet a zombie: exit_group is
	 * taking the threads away (they were gone from this capture while
	 * main still ran its exit), or main is calling pthread_exit. Either
	 * way not the picture to keep; the next tick says which it was. */
	const struct thread_capture *main_tc = sp->cur.nthreads ? &sp->cur.threads[0] : NULL;
	if (main_tc && main_tc->tid == sp->cur.pid && main_tc->exiting && main_tc->state != 'Z')
		return 0;

	/* Keep this capture as "the last moment the target was alive". */
	struct process_capture tmp = sp->last;
	sp->last = sp->cur;
	sp->cur = tmp;
	struct unwound_stack *ts = sp->last_stacks;
	size_t tcap = sp->last_stacks_cap;
	sp->last_stacks = sp->stacks;
	sp->last_stacks_cap = sp->stacks_cap;
	sp->stacks = ts;
	sp->stacks_cap = tcap;
	sp->have_last = true;
	sp->anchor_ns = anchor_ns;
	return 0;
}

/* Labels of a perf sample: as the stops label a CPU sample (tid, comm),
 * the comm from the last capture, or from /proc for a thread it missed. */
static void perf_labels(void *arg, pid_t tid, char *buf, size_t size)
{
	struct sampler *sp = arg;
	size_t j = sp->have_last ? find_thread_index(&sp->last, tid) : SIZE_MAX;
	char raw[64] = "";
	if (j != SIZE_MAX) {
		snprintf(raw, sizeof(raw), "%s", sp->last.threads[j].comm);
	} else {
		char path[32];
		snprintf(path, sizeof(path), "%d/comm", (int)tid);
		attach_read_small_file_at(sp->s->target.task_dirfd, path, raw, sizeof(raw));
		raw[strcspn(raw, "\n")] = '\0';
	}
	if (!cpu_labels(sp, tid, raw, buf, size))
		sp->unlabelled_samples++;
}

/* Our CPU time and the unwinding worker's, so far. */
static uint64_t tick_cpu_ns(struct sampler *sp)
{
	/* This thread's, not the process's: the tick runs here, and the
	 * process clock sums every thread under a lock. */
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
	       interp_unwinder_cpu_ns(sp->s->interp);
}

/* The target's CPU time as /proc has it now (kept when it is gone). */
static void note_target_cpu(struct sampler *sp)
{
	uint64_t cpu;
	if (attach_target_cpu_ns(&sp->s->target, &cpu) == 0)
		sp->cpu_ns_last = cpu;
}

static void perf_amend(void *arg, pid_t tid, struct unwound_stack *stack)
{
	struct sampler *sp = arg;
	py_session_amend(sp->s->py, tid, stack);
}

/* The maps a Python read needs: the latest capture's. */
static int python_refresh(struct sampler *sp)
{
	const struct process_capture *m = sp->have_last ? &sp->last : &sp->cur;
	if (!sp->s->py || !m->maps_text)
		return 0;
	return py_session_refresh(sp->s->py, m->maps_text, m->maps_len);
}

/* Drain the perf rings into the CPU profile. 0 or -ENOMEM. */
static int perf_drain(struct sampler *sp)
{
	/* The CPython frames of the samples drained now: read as close to
	 * them as a read without a stop can be (perf_amend). */
	if (python_refresh(sp) < 0)
		return -ENOMEM;
	long n = cpu_perf_collect(sp->perf, sp->s->interp, sp->cpu, perf_labels, perf_amend, sp);
	if (n < 0)
		return (int)n;
	sp->cpu_samples += (uint64_t)n;
	/* The target's CPU time is kept for the summary, which needs only
	 * its last value before the target is gone: not at every tick. */
	uint64_t now = monotonic_ns();
	if (now - sp->target_cpu_read_ns >= TARGET_CPU_EVERY_NS) {
		note_target_cpu(sp);
		sp->target_cpu_read_ns = now;
	}
	return 0;
}

/* Switch-out samples asked of the kernel per (thread, CPU) event and
 * second, in ticks. A chatty thread has its period raised by the kernel,
 * which bounds its cost (perf.h); a sleep whose switch-out was not
 * sampled is found among the sleeps remembered for the thread (moments.h)
 * or read from /proc. */
#define SWITCH_SAMPLES_PER_TICK 2

/* The least CPU time of threads without schedstat readings at both ends
 * that cpu_perf_weigh weighs to the process's remaining CPU time: ten of
 * /proc/PID/stat's clock ticks. */
#define WEIGH_REST_MIN_NS 100000000ull

/* Perf events for the CPU profile, unless refused or not asked for. */
static int start_cpu_engine(struct sampler *sp)
{
	const struct capture_options *o = sp->s->opt;
	if (attach_target_cpu_ns(&sp->s->target, &sp->cpu_ns_start) == 0)
		sp->cpu_ns_last = sp->cpu_ns_start;
	if (attach_machine_cpu_ticks(&sp->machine_ticks_start, &sp->stolen_ticks_start) < 0)
		sp->machine_ticks_start = sp->stolen_ticks_start = 0;
	if (!o->frequency_hz)
		return 0;
	if (o->cpu_engine == CAPTURE_CPU_PTRACE) {
		seed_cpu_seen(sp);
		return 0;
	}
	if (o->wall_engine != CAPTURE_WALL_PTRACE && moments_new(&sp->moments) < 0)
		return -ENOMEM;
	struct cpu_perf_options co = {
		.period_ns = sp->period_ns,
		.stack_bytes = o->perf_stack_bytes ? o->perf_stack_bytes : 32768,
		.kernel_frames = !o->no_kernel_frames,
		.per_cpu = o->cpu_events != CAPTURE_CPU_EVENTS_PER_THREAD,
		.switch_freq = SWITCH_SAMPLES_PER_TICK * o->frequency_hz,
		.moments = sp->moments,
		/* A CPython's frames are put into each stack as it is drained
		 * (perf_amend): those are unwound then. */
		.defer_bytes_max = sp->s->py || o->live ? 0
				   : o->unwind_later_set ? o->unwind_later_bytes : UNWIND_LATER_DEFAULT,
		.fault_period = sp->growth ? GROWTH_FAULT_PERIOD : 0,
		.growth = sp->growth,
		.creates = sp->creates,
	};
	/* Ticks between wakes, from the switch records: not for a CPython,
	 * whose Python frames are read at each tick. */
	unsigned wake_hz = o->wake_hz_set ? o->wake_hz : WAKE_HZ_DEFAULT;
	unsigned per_wake = wake_hz ? (o->frequency_hz + wake_hz / 2) / wake_hz : 1;
	if (per_wake > TICKS_PER_WAKE_MAX)
		per_wake = TICKS_PER_WAKE_MAX;
	if (per_wake > 1 && !sp->s->py && sp->moments) {
		if (wall_window_new(&sp->window_owned) < 0)
			return -ENOMEM;
		co.window = sp->window_owned;
		/* The switch-outs a wake reads (the ticks between take a
		 * sleep's stack from the wakes): each is a copy of the stack
		 * made in the thread's own switch. */
		co.switch_freq = SWITCH_SAMPLES_PER_TICK * ((o->frequency_hz + per_wake - 1) / per_wake);
	} else {
		per_wake = 1;
	}
	int r = cpu_perf_new(&sp->s->target, &co, &sp->perf);
	if (r == -ENOMEM)
		return r;
	if (r == 0 && sp->moments && cpu_perf_switch_samples(sp->perf)) {
		/* Nothing is stopped at the ticks: each thread's latest perf
		 * moment, or its resting stack from /proc. */
		sp->wall_perf = true;
		sp->ao.no_stop = true;
		sp->ao.moment_known = moment_known;
		sp->ao.moment_known_ctx = sp->moments;
		/* --no-interrupt-blocked: no blocked thread is stopped, even
		 * where that would be harmless. */
		if (sp->ao.only_eintr_prone) {
			sp->ao.want_registers = want_registers;
			sp->ao.want_registers_ctx = sp;
		}
		/* Nothing of ours holds the target now, so nothing of ours needs
		 * to run before a target thread (tool_priority.h). The final
		 * capture's hold runs SCHED_FIFO as ever. */
		sp->keeping_pace = true;
		tool_priority_yield(0, true);
		interp_yield_to_target(sp->s->interp, true);
		if (cpu_perf_switch_records(sp->perf)) {
			sp->window = sp->window_owned;
			sp->ticks_per_wake = per_wake;
		}
	}
	if (r < 0) {
		sp->perf_refused = r;
		if (o->cpu_engine == CAPTURE_CPU_PERF)
			return capture_fail(sp->s, CAPTURE_STAGE_PERF, r);
		seed_cpu_seen(sp);
	}
	return 0;
}

static void progress(struct sampler *sp, uint64_t elapsed_ns, bool final)
{
	const struct capture_options *o = sp->s->opt;
	if (!o->progress)
		return;
	double el = (double)elapsed_ns / 1e9;
	struct capture_progress p = {
		.pid = sp->s->target.pid,
		.elapsed_ns = elapsed_ns,
		.duration_ns = o->duration_ns,
		.samples = sp->samples,
		.threads = sp->last_threads,
		.rate_hz = el > 0 ? (double)sp->ticks / el : 0,
		.final = final,
	};
	o->progress(&p, o->callback_arg);
}

/* The stop signals (SIGINT, SIGTERM, SIGHUP) stay blocked while the
 * sampling loop works and are let in only while it sleeps, atomically
 * (ppoll): one that arrived during a tick is pending and ends the sleep at
 * once. Checking a flag and then sleeping loses a signal that lands in
 * between, and the sleep then lasts a whole period, seconds once the pause
 * budget has lowered the rate (C1 saw an exit take 7 s). */
static sigset_t stop_signals_blocked(sigset_t *ret_old)
{
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop, ret_old);
	sigset_t open = *ret_old;
	sigdelset(&open, SIGINT);
	sigdelset(&open, SIGTERM);
	sigdelset(&open, SIGHUP);
	return open;
}

static void sleep_until(const struct sampler *sp, uint64_t deadline_ns, const sigset_t *open)
{
	/* Absolute deadlines: the rate does not drift with our own work. */
	uint64_t now = monotonic_ns();
	if (*sp->s->opt->stop_requests || deadline_ns <= now)
		return;
	uint64_t left = deadline_ns - now;
	struct timespec ts = {.tv_sec = (time_t)(left / 1000000000ull),
			      .tv_nsec = (long)(left % 1000000000ull)};
	ppoll(NULL, 0, &ts, open);
}

/* Name every address of set (the mappings of maps): the worker's
 * symbols, then the kernel's, a Go runtime's and a CPython's for what
 * those leave unnamed. *ret is a table even on failure. 0 or -ENOMEM. */
static int name_addresses(struct sampler *sp, const struct process_capture *maps, struct addrset *set,
			  struct symtab **ret)
{
	struct capture_session *s = sp->s;
	size_t n;
	const uint64_t *addrs = addrset_items(set, &n);
	int r = interp_symbolize(s->interp, maps->maps_text ? maps->maps_text : "",
				 maps->maps_text ? maps->maps_len : 0, addrs, n, ret);
	if (r == 0)
		r = cpu_perf_name_kernel(sp->perf, *ret);
	if (r == 0 && s->go)
		r = go_session_name_unnamed(s->go, *ret);
	if (r == 0)
		r = py_session_name_unnamed(s->py, *ret);
	return r;
}

static int write_outputs(struct sampler *sp, uint64_t start_wall, uint64_t duration)
{
	struct capture_session *s = sp->s;
	/* The final snapshot holds every thread at once: consistent, with wait
	 * channels, and the goroutine list read from a process standing still. */
	const struct process_capture *final = NULL;
	const struct unwound_stack *final_stacks = NULL;
	/* Nothing is stopped or read of a program the policy refuses. */
	int fr = sp->target_exited || sp->exec_not_dumpable ? -ESRCH
							    : capture_consistent(s, &sp->ao, &sp->cur);
	if (fr == 0 && grow_stacks(&sp->stacks, &sp->stacks_cap, sp->cur.nthreads) == 0) {
		pause_stats_add(&sp->pause, sp->cur.hold_ns);
		sp->late_samples += sp->cur.nlate;
		interp_unwind(s->interp, &sp->cur, sp->stacks);
		py_session_merge(s->py, &sp->cur, sp->stacks);
		capture_trace_phase("final unwound");
		final = &sp->cur;
		final_stacks = sp->stacks;
		if (!sp->perf && ptrace_cpu_final(sp, final, final_stacks) < 0)
			return -ENOMEM;
	} else if (sp->have_last) {
		final = &sp->last;
		final_stacks = sp->last_stacks;
	}
	for (size_t i = 0; final && i < final->nthreads; i++) {
		sp->final_threads++;
		sp->final_without_stack += final_stacks[i].n == 0;
		sp->final_truncated += final_stacks[i].n && final_stacks[i].truncated;
	}
	sp->final_was_last_tick = final == &sp->last;

	struct addrset *set = addrset_new();
	int r = set ? 0 : -ENOMEM;
	if (r == 0 && final)
		r = snapshot_collect(final, final_stacks, set);
	if (r == 0)
		r = profile_out_collect(sp->cpu, set);
	if (r == 0)
		r = profile_out_collect(sp->wall, set);
	if (r == 0 && sp->growth && sp->perf)
		r = profile_out_collect(sp->growth, set);
	if (r == 0 && sp->creates && sp->perf)
		r = profile_out_collect(sp->creates, set);
	struct symtab *st = NULL;
	if (r == 0) {
		r = name_addresses(sp, final ? final : &sp->last, set, &st);
		capture_trace_phase("symbolized");
	}
	cJSON *target = cJSON_GetObjectItem(s->manifest, "target");
	const char *exe_path = cJSON_GetStringValue(cJSON_GetObjectItem(target, "exe"));
	const char *invoked_as = cJSON_GetStringValue(cJSON_GetObjectItem(target, "invoked_as"));
	if (r == 0 && final)
		r = snapshot_write(s->bundle, "", final, final_stacks, st,
				   &(struct snapshot_meta){
					   .main_named_by_go = s->go != NULL,
					   .last_tick = final == &sp->last,
					   .gil_holder = final == &sp->cur ? py_session_gil_holder(s->py) : 0,
					   .exe_path = exe_path,
					   .invoked_as = invoked_as,
				   });
	if (r == 0 && final == &sp->cur && s->go)
		r = go_session_write(s->go, s->bundle, "", st, cJSON_GetObjectItem(target, "go"));
	if (r == 0 && *s->opt->stop_requests < 2) {
		static const struct profile_value_type cpu_types[] = {{"samples", "count"},
								      {"cpu", "nanoseconds"}};
		static const struct profile_value_type wall_types[] = {{"samples", "count"},
								       {"wall", "nanoseconds"}};
		struct profile_spec spec = {
			.sample_types = cpu_types,
			.ntypes = 2,
			.period_type = {"cpu", "nanoseconds"},
			.period = (int64_t)sp->requested_period_ns,
			.time_nanos = (int64_t)start_wall,
			.duration_nanos = (int64_t)duration,
			.main_named_by_go = s->go != NULL,
			.exe_path = exe_path,
			.invoked_as = invoked_as,
		};
		uint8_t *gz = NULL;
		size_t len = 0;
		r = profile_out_encode(sp->cpu, st, &spec, &gz, &len);
		if (r == 0)
			r = bundle_write_member(s->bundle, "cpu.pprof", gz, len);
		free(gz);
		if (r == 0 && *s->opt->stop_requests < 2) {
			spec.sample_types = wall_types;
			spec.period_type = (struct profile_value_type){"wall", "nanoseconds"};
			gz = NULL;
			r = profile_out_encode(sp->wall, st, &spec, &gz, &len);
			if (r == 0)
				r = bundle_write_member(s->bundle, "wall.pprof", gz, len);
			free(gz);
		}
		if (r == 0 && sp->growth && sp->perf && *s->opt->stop_requests < 2)
			r = growth_profile_write(s->bundle, sp->growth, st, &spec);
		/* A Go program's threadcreate.pprof is its runtime's own. */
		if (r == 0 && sp->creates && sp->perf && !s->go && *s->opt->stop_requests < 2)
			r = creates_profile_write(s->bundle, sp->creates, s->target.task_dirfd, st, &spec);
	}
	capture_trace_phase("members written");
	if (r == 0 && st)
		cJSON_AddStringToObject(target, "build_id", symtab_main_build_id(st));
	if (r == 0 && st && s->opt->with_binaries_cap)
		r = binaries_copy(s->bundle, s->target.pid, st, s->opt->with_binaries_cap,
				  cJSON_AddObjectToObject(s->manifest, "binaries"));
	symtab_free(st);
	addrset_free(set);
	return r;
}

/* Add the lookup address of every frame of the stacks to set. */
static int collect_stacks(const struct unwound_stack *stacks, size_t n, struct addrset *set)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < stacks[i].n; k++)
			if (addrset_add(set, frame_lookup_address(stacks[i].pcs, k)) < 0)
				return -ENOMEM;
	return 0;
}

/* A live view's refresh: the samples of the window up to now, named,
 * handed to the view, then a new window. 0, -ENOMEM, or 1 when the view
 * asks to end. */
static int live_refresh(struct sampler *sp, uint64_t now)
{
	struct capture_session *s = sp->s;
	if (sp->perf && perf_drain(sp) < 0)
		return -ENOMEM;
	struct addrset *set = addrset_new();
	int r = set ? profile_out_collect(sp->cpu, set) : -ENOMEM;
	if (r == 0 && sp->have_last)
		r = collect_stacks(sp->last_stacks, sp->last.nthreads, set);
	struct symtab *st = NULL;
	if (r == 0)
		r = name_addresses(sp, sp->have_last ? &sp->last : &sp->cur, set, &st);
	addrset_free(set);
	struct perf_sampler_stats ps = {0};
	if (sp->perf)
		cpu_perf_stats(sp->perf, &ps);
	int ended = 0;
	if (r == 0) {
		struct capture_live l = {
			.cpu = sp->cpu,
			.symbols = st,
			.threads = sp->have_last ? &sp->last : NULL,
			.stacks = sp->have_last ? sp->last_stacks : NULL,
			.target = cJSON_GetObjectItem(s->manifest, "target"),
			.window_ns = now - sp->live_since_ns,
			.cpu_engine = sp->perf ? "perf" : "ptrace",
			.perf_refused = sp->perf_refused,
			.lost = ps.lost - sp->live_lost_base,
			.stops = sp->pause.seen - sp->live_stops_base,
			.hold_max_ns = sp->pause.window_max_ns,
			.hold_total_ns = sp->pause.total_ns - sp->live_hold_base_ns,
		};
		ended = s->opt->live(&l, s->opt->callback_arg) != 0;
	}
	symtab_free(st);
	if (r < 0)
		return r;
	/* A new window: the samples so far were the view's. */
	struct stackagg *fresh = stackagg_new(2), *fresh_wall = stackagg_new(2);
	if (!fresh || !fresh_wall) {
		stackagg_free(fresh);
		stackagg_free(fresh_wall);
		return -ENOMEM;
	}
	stackagg_free(sp->cpu);
	stackagg_free(sp->wall);
	sp->cpu = fresh;
	sp->wall = fresh_wall;
	/* (The samples drained after now are the next window's.) */
	sp->live_since_ns = now;
	sp->live_stops_base = sp->pause.seen;
	sp->live_hold_base_ns = sp->pause.total_ns;
	sp->pause.window_max_ns = 0;
	sp->live_lost_base = ps.lost;
	return ended;
}

static void sampler_release(struct sampler *sp)
{
	process_capture_release(&sp->cur);
	process_capture_release(&sp->last);
	free(sp->stacks);
	free(sp->last_stacks);
	stackagg_free(sp->cpu);
	stackagg_free(sp->wall);
	stackagg_free(sp->growth);
	stackagg_free(sp->creates);
	free(sp->cpu_seen.slots);
	bundle_name_memo_release(&sp->names);
	free(sp->labelled.slots);
	free(sp->pause.reservoir);
	free(sp->thread_pause.reservoir);
	timeline_run_free(sp->timeline);
	cpu_perf_free(sp->perf);
	wall_window_free(sp->window_owned);
	moments_free(sp->moments);
	free(sp->held_tids);
	free(sp->want);
	free(sp->want_next);
	cJSON_Delete(sp->adaptations);
	addrset_free(sp->warmed);
}

/* When the sampler next wakes, next_tick being the next tick due: at
 * every ticks_per_wake-th with a window, else at each. The first wake
 * is at the first tick: the ticks between two wakes are computed from
 * the one before, and before the first there is none. */
static uint64_t next_wake(const struct sampler *sp, uint64_t next_tick)
{
	return sp->window && sp->wakes ? next_tick + (sp->ticks_per_wake - 1) * sp->period_ns
				       : next_tick;
}

/* The drains between wakes: none that a wake soon after makes for it. */
static uint64_t drain_every(const struct sampler *sp)
{
	uint64_t wake = sp->window ? (sp->ticks_per_wake + 1) * sp->period_ns : 0;
	return wake > PERF_DRAIN_EVERY_NS ? wake : PERF_DRAIN_EVERY_NS;
}

int sampler_run(struct capture_session *s)
{
	const struct capture_options *o = s->opt;
	struct sampler sp = {.s = s, .ao = o->attach};
	sp.ao.read_wait_details = false;
	/* Threads that have not run since the last tick are not stopped again,
	 * and each stopped thread is let go as soon as it is copied. */
	sp.ao.skip_idle = true;
	sp.ao.release_each = true;
	/* The EINTR rule: a sampling capture, its final capture included,
	 * never stops a thread blocked in a call that returns EINTR after a
	 * stop (epoll_wait, semop, sigtimedwait, io_getevents: signal(7)); it
	 * is read from /proc/TID/syscall and its resting stack instead (every
	 * blocked thread with --no-interrupt-blocked). Snapshots and leak
	 * dumps may interrupt, to hold every thread at once. */
	sp.ao.only_eintr_prone = !sp.ao.no_interrupt_blocked;
	sp.ao.no_interrupt_blocked = true;
	sp.cpu = stackagg_new(2);
	sp.wall = stackagg_new(2);
	if (o->growth || o->leak_watch) {
		sp.growth = stackagg_new(2);
		sp.creates = stackagg_new(1);
	}
	sp.pause.reservoir = malloc(PAUSE_RESERVOIR * sizeof(uint64_t));
	sp.pause.rng = monotonic_ns() | 1;
	sp.thread_pause.reservoir = malloc(PAUSE_RESERVOIR * sizeof(uint64_t));
	sp.thread_pause.rng = sp.pause.rng ^ 0x9e3779b97f4a7c15ull;
	if (!sp.cpu || !sp.wall || !sp.pause.reservoir || !sp.thread_pause.reservoir ||
	    ((o->growth || o->leak_watch) && (!sp.growth || !sp.creates))) {
		sampler_release(&sp);
		return capture_fail(s, CAPTURE_STAGE_ATTACH, -ENOMEM);
	}
	sp.period_ns = o->frequency_hz ? 1000000000ull / o->frequency_hz : 0;
	sp.requested_period_ns = sp.period_ns;
	sp.adaptations = cJSON_CreateArray();

	/* A live view has no bundle to keep a timeline in. */
	int r = o->live ? 0 : timeline_run_new(s, &sp.timeline);
	if (r < 0) {
		sampler_release(&sp);
		return capture_fail(s, r == -ESRCH ? CAPTURE_STAGE_ATTACH : CAPTURE_STAGE_WRITE, r);
	}
	r = start_cpu_engine(&sp);
	if (r < 0) {
		sampler_release(&sp);
		return r == -ENOMEM ? capture_fail(s, CAPTURE_STAGE_ATTACH, r) : r;
	}
	/* A live view names samples while it samples: the kernel's names
	 * are read before the first window, not in the middle of one. */
	if (o->live)
		cpu_perf_load_kernel_names(sp.perf);

	/* Everything that samples is in place: a launched command held
	 * stopped since its exec may run now. */
	if (o->ready)
		o->ready(o->callback_arg);

	uint64_t start = monotonic_ns();
	uint64_t start_wall = realtime_ns();
	uint64_t end = o->duration_ns ? start + o->duration_ns : UINT64_MAX;
	uint64_t next_tick = start;
	uint64_t next_timeline = start;
	/* No progress line (-q): no wake for one either. */
	uint64_t next_progress = o->progress ? start + PROGRESS_EVERY_NS : UINT64_MAX;
	uint64_t next_drain = start + PERF_DRAIN_EVERY_NS;
	/* The first round right after the first tick: loading debug info is
	 * the slow part of the end, and it can run while we sample. */
	uint64_t next_warm = start;
	uint64_t next_live = o->live ? start + o->live_every_ns : UINT64_MAX;
	sp.live_since_ns = start;
	int fatal = 0;
	enum capture_stage fatal_stage = CAPTURE_STAGE_NONE;

	/* Our CPU time (and the worker's) when the last tick, timeline tick or
	 * drain between ticks ended. A tick that stops no one costs what was
	 * used since: one read of a thread's CPU clock a tick, which is a
	 * system call (not the vdso), instead of one at each end. The work
	 * between ticks is left out as before: drains between ticks grow with
	 * a longer period, and counting them would lengthen it again. */
	uint64_t cpu_mark = sp.wall_perf ? tick_cpu_ns(&sp) : 0;
	sigset_t old_mask, open_mask = stop_signals_blocked(&old_mask);
	for (;;) {
		/* Threads left late by a capture are detached the moment they
		 * trap; between ticks is the earliest we can look. */
		attach_service_late();
		uint64_t now = monotonic_ns();
		/* At the end, the ticks due since the last wake are computed at
		 * one more wake, now: between wakes they would be lost. */
		bool ending = *s->opt->stop_requests || now >= end;
		bool wake_due = sp.period_ns && now >= next_wake(&sp, next_tick);
		if (ending && !(sp.window && sp.have_last && now >= next_tick))
			break;
		if (wake_due || ending) {
			/* A wake late by a period: our share of a saturated CPU no
			 * longer keeps up (and the rings fill while we wait). */
			if (sp.wall_perf && wake_due)
				sampler_keep_pace(&sp, now - next_wake(&sp, next_tick));
			if (sp.window) {
				/* Every tick due since the last wake is this wake's:
				 * the last read now, those before it computed from
				 * the switch records (emit_virtual_ticks). */
				uint64_t due = (now - next_tick) / sp.period_ns + 1;
				/* Those of a wake that failed before computing them. */
				sp.missed += sp.virt_n;
				sp.virt_first_ns = next_tick;
				sp.virt_n = due - 1;
				next_tick += (due - 1) * sp.period_ns;
				sp.wakes++;
			}
			/* A tick that could not start within its own period is
			 * counted as missed, not merged into this one. */
			if (now - next_tick >= sp.period_ns) {
				uint64_t late = (now - next_tick) / sp.period_ns;
				sp.missed += late;
				next_tick += late * sp.period_ns;
			}
			next_tick += sp.period_ns;
			uint64_t ticks_before = sp.ticks;
			sp.ticks++;
			uint64_t tick_start = monotonic_ns();
			uint64_t period_before = sp.period_ns;
			r = sample_tick(&sp);
			if (!sp.perf)
				note_target_cpu(&sp);
			/* The tick drained the rings: no drain of its own before
			 * PERF_DRAIN_EVERY_NS more (each is a wakeup of ours, and
			 * of the worker, that a target thread may wait behind). */
			if (sp.wall_perf)
				next_drain = monotonic_ns() + drain_every(&sp);
			/* A tick that stops no one costs the target only the CPU we
			 * take (ours and the unwinding worker's); waiting for a CPU
			 * on a busy machine is no cost to it, and must not thin the
			 * samples out. A tick that stops threads costs its wall time. */
			uint64_t cost = monotonic_ns() - tick_start;
			if (sp.wall_perf) {
				uint64_t cpu_now = tick_cpu_ns(&sp);
				cost = cpu_now - cpu_mark;
				cpu_mark = cpu_now;
			}
			cost = cost > sp.one_time_ns ? cost - sp.one_time_ns : 0;
			/* A wake's cost is shared by the ticks it made. */
			cost /= sp.ticks - ticks_before;
			sampler_adapt_rate(&sp, cost, sp.tick_hold_ns, tick_start - start);
			/* A longer period applies from this tick on, not after
			 * one more at the old rate. */
			if (sp.period_ns > period_before)
				next_tick = tick_start + sp.period_ns;
			sp.one_time_ns = 0;
			if (r == -ESRCH || (r < 0 && !attach_target_alive(&s->target))) {
				sp.target_exited = true;
				break;
			}
			if (r == -ENOMEM) {
				fatal = r;
				fatal_stage = CAPTURE_STAGE_ATTACH;
				break;
			}
			if ((r == -EPERM || r == -EACCES) && !sp.have_last) {
				/* Never captured anything: we are not allowed to. */
				fatal = r;
				fatal_stage = CAPTURE_STAGE_ATTACH;
				break;
			}
			if (r < 0)
				sp.errors++;
		}
		if (ending)
			break;
		if (sp.timeline && now >= next_timeline) {
			next_timeline += o->interval_ns;
			if (next_timeline <= now)
				next_timeline = now + o->interval_ns;
			r = timeline_run_tick(sp.timeline);
			if (sp.wall_perf)
				cpu_mark = tick_cpu_ns(&sp);
			if (r == TIMELINE_EXEC_NOT_DUMPABLE) {
				sp.exec_not_dumpable = true;
				s->summary.ended_by_exec_not_dumpable = true;
				capture_trace_phase("target exec'd a program that is not dumpable");
				break;
			}
			if (r == -ESRCH) {
				sp.target_exited = true;
				break;
			}
			if (r < 0 && r != -ENOMEM) {
				fatal = r;
				fatal_stage = CAPTURE_STAGE_WRITE;
				break;
			}
		}
		now = monotonic_ns();
		if (sp.perf && now >= next_drain) {
			if (perf_drain(&sp) < 0) {
				fatal = -ENOMEM;
				fatal_stage = CAPTURE_STAGE_ATTACH;
				break;
			}
			if (sp.wall_perf)
				cpu_mark = tick_cpu_ns(&sp);
			next_drain = monotonic_ns() + drain_every(&sp);
		}
		if (now >= next_live) {
			int lr = live_refresh(&sp, now);
			if (lr < 0) {
				fatal = lr;
				fatal_stage = CAPTURE_STAGE_ATTACH;
				break;
			}
			if (lr > 0)
				break; /* the view is done */
			next_live += o->live_every_ns;
			if (next_live <= now)
				next_live = now + o->live_every_ns;
		}
		if (now >= next_warm && sp.have_last) {
			attach_service_late();
			warm_symbols(&sp);
			next_warm = monotonic_ns() + WARM_EVERY_NS;
		}
		if (now >= next_progress) {
			progress(&sp, now - start, false);
			next_progress = now + PROGRESS_EVERY_NS;
		}
		if (!sp.period_ns && !sp.timeline) {
			/* Nothing to sample: wait for the end, a signal or an exit. */
			if (!attach_target_alive(&s->target)) {
				sp.target_exited = true;
				break;
			}
			uint64_t wake = now + 100000000ull;
			sleep_until(&sp, wake < end ? wake : end, &open_mask);
			continue;
		}
		uint64_t wake = end;
		if (sp.period_ns && next_wake(&sp, next_tick) < wake)
			wake = next_wake(&sp, next_tick);
		if (sp.timeline && next_timeline < wake)
			wake = next_timeline;
		if (next_progress < wake)
			wake = next_progress;
		if (next_live < wake)
			wake = next_live;
		if (sp.perf && next_drain < wake)
			wake = next_drain;
		/* A late thread stands still in a ptrace-stop from the moment it
		 * traps until we detach it: while there are any, look often. */
		if (attach_service_late() && monotonic_ns() + LATE_POLL_NS < wake)
			wake = monotonic_ns() + LATE_POLL_NS;
		sleep_until(&sp, wake, &open_mask);
		if (sp.timeline == NULL && sp.period_ns == 0)
			continue;
	}
	/* A stop signal pending now is handled here (counted, so a second
	 * Ctrl-C during the writing still abandons it). */
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	/* Sampling is over, whatever ended it: what remains is our own work
	 * (the last drain, the final snapshot's hold runs SCHED_FIFO, the
	 * symbolization), at the priority we started with. */
	if (sp.wall_perf) {
		tool_priority_normal(0);
		interp_normal_priority(s->interp);
	}
	uint64_t duration = monotonic_ns() - start;
	capture_trace_phase(*s->opt->stop_requests ? "sampling ended: stop requested" : "sampling ended");
	progress(&sp, duration, true);
	if (!sp.target_exited && !attach_target_alive(&s->target))
		sp.target_exited = true;

	s->target_exited = sp.target_exited;
	if (fatal) {
		sampler_release(&sp);
		return capture_fail(s, fatal_stage, fatal);
	}
	if (o->live) {
		/* A view writes nothing: no final snapshot, no profiles. */
		sampler_release(&sp);
		return 0;
	}

	attach_service_late();
	/* The last samples the kernel holds, then the events stop counting
	 * (the final snapshot's stops are not the target's CPU time). */
	r = sp.perf ? perf_drain(&sp) : 0;
	if (sp.perf) {
		cpu_perf_stop(sp.perf);
		note_target_cpu(&sp); /* the summary's end of the window */
		/* The samples kept during the capture, unwound now that it is
		 * over: the worker's CPU time for them is not taken from the
		 * target while it is measured (cpu_perf.h). Then their frames
		 * go in place of their placeholders. */
		if (r == 0)
			r = cpu_perf_unwind_deferred(sp.perf, s->interp);
		if (r == 0)
			r = cpu_perf_expand(sp.perf, &sp.cpu);
		if (r == 0)
			r = cpu_perf_expand(sp.perf, &sp.wall);
		if (r == 0 && sp.growth)
			r = cpu_perf_expand(sp.perf, &sp.growth);
		if (r == 0 && sp.creates)
			r = cpu_perf_expand(sp.perf, &sp.creates);
		for (size_t i = 0; r == 0 && sp.have_last && i < sp.last.nthreads; i++)
			cpu_perf_expand_stack(sp.perf, &sp.last_stacks[i]);
		capture_trace_phase("deferred samples unwound");
		/* Other threads' samples are weighed only when they stand for
		 * more than /proc/PID/stat's clock ticks could be off by. */
		if (r == 0)
			r = cpu_perf_weigh(sp.perf, sp.cpu, sp.cpu_ns_last - sp.cpu_ns_start,
					   WEIGH_REST_MIN_NS);
	}
	if (r < 0) {
		sampler_release(&sp);
		return capture_fail(s, CAPTURE_STAGE_ATTACH, r);
	}
	if (o->frequency_hz)
		r = write_outputs(&sp, start_wall, duration);
	if (r == 0 && sp.timeline)
		r = timeline_run_finish(sp.timeline, s->manifest);
	if (r < 0)
		r = capture_fail(s, CAPTURE_STAGE_WRITE, r);
	else
		sampler_describe(&sp, duration);
	sampler_release(&sp);
	return r;
}
