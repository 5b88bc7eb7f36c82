/* The sampled capture's account of itself in the manifest: its settings,
 * ticks, the CPU and wall-clock engines and what each gave or lost, the
 * growth asked for and not recorded, the final snapshot, the pauses
 * (sampler_manifest.h). */
#include "cmd/engine/sampler_manifest.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd/engine/py_session.h"

/* --growth (or --leak-watch) asked for growth.pprof and threadcreate.pprof,
 * which come from perf events: when one is not recorded, why, in the
 * summary and the manifest, never only as a missing member. */
static void describe_growth(struct sampler *sp, cJSON *cap)
{
	const struct capture_options *o = sp->s->opt;
	char *why = sp->s->summary.growth_warning;
	size_t size = sizeof(sp->s->summary.growth_warning);
	why[0] = '\0';
	if (!o->growth && !o->leak_watch)
		return;
	struct perf_sampler_stats st = {0};
	if (sp->perf)
		cpu_perf_stats(sp->perf, &st);
	if (!o->frequency_hz)
		snprintf(why, size, "growth.pprof and threadcreate.pprof not written: they come from perf "
				    "events, which -F 0 turns off");
	else if (!sp->perf && sp->perf_refused)
		snprintf(why, size, "growth.pprof and threadcreate.pprof not written: perf events refused (%s)",
			 strerror(-sp->perf_refused));
	else if (!sp->perf)
		snprintf(why, size, "growth.pprof and threadcreate.pprof not written: they come from perf "
				    "events, and --cpu-engine ptrace does not open them");
	else if (st.fault_refused && (st.fork_refused || sp->s->go))
		snprintf(why, size, "growth.pprof and threadcreate.pprof not written: the kernel refused "
				    "the page-fault event (%s) and the fork tracepoint (%s)",
			 strerror(st.fault_refused), strerror(st.fork_refused));
	else if (st.fault_refused)
		snprintf(why, size, "growth.pprof not written: the kernel refused the page-fault event (%s)",
			 strerror(st.fault_refused));
	else if (st.fork_refused && !sp->s->go)
		snprintf(why, size, "threadcreate.pprof not written: the sched_process_fork tracepoint was "
				    "refused (%s%s)",
			 strerror(st.fork_refused), st.fork_refused == ENOENT ? ": no tracefs" : "");
	if (why[0])
		cJSON_AddStringToObject(cap, "growth_not_recorded", why);
}

/* The manifest's account of the CPU profile and the summary line's. */
static void describe_cpu(struct sampler *sp, cJSON *cap, uint64_t stops)
{
	const struct capture_options *o = sp->s->opt;
	struct capture_summary *sum = &sp->s->summary;
	sum->sampled = true;
	sum->cpu_engine = sp->perf ? "perf" : "ptrace";
	sum->perf_refused = sp->perf_refused;
	sum->hz = o->frequency_hz;
	sum->target_cpu_s = (double)(sp->cpu_ns_last - sp->cpu_ns_start) / 1e9;
	sum->cpu_samples = sp->cpu_samples;
	sum->cpu_samples_expected = sum->target_cpu_s * sum->hz;
	uint64_t all = 0, stolen = 0;
	sum->steal_share = -1;
	if (sp->machine_ticks_start && attach_machine_cpu_ticks(&all, &stolen) == 0 &&
	    all > sp->machine_ticks_start && stolen >= sp->stolen_ticks_start)
		sum->steal_share = (double)(stolen - sp->stolen_ticks_start) /
				   (double)(all - sp->machine_ticks_start);
	if (sp->perf) {
		struct perf_sampler_stats st;
		cpu_perf_stats(sp->perf, &st);
		sum->lost = st.lost;
		sum->throttled = st.throttled;
		sum->threads_without_event = st.threads_without_event;
		sum->per_cpu_events = st.per_cpu;
		struct cpu_weighing wg;
		if (cpu_perf_weighing(sp->perf, &wg)) {
			sum->cpu_sampled_s = (double)wg.sampled_ns / 1e9;
			sum->cpu_weighed_s = (double)wg.weighed_ns / 1e9;
		}
	}
	sum->stops = stops;
	sum->wall_engine = sp->wall_perf ? "perf" : "ptrace";
	sum->thread_samples = sp->samples + sp->samples_without_stack;
	sum->samples_without_stack = sp->samples_without_stack;
	cJSON_AddStringToObject(cap, "cpu_engine", sum->cpu_engine);
	if (sp->perf_refused)
		cJSON_AddStringToObject(cap, "cpu_engine_fallback", strerror(-sp->perf_refused));
	cJSON *cpu = cJSON_AddObjectToObject(cap, "cpu");
	cJSON_AddNumberToObject(cpu, "target_cpu_s", sum->target_cpu_s);
	cJSON_AddNumberToObject(cpu, "samples", (double)sum->cpu_samples);
	cJSON_AddNumberToObject(cpu, "samples_expected", sum->cpu_samples_expected);
	if (sum->steal_share >= 0)
		cJSON_AddNumberToObject(cpu, "machine_steal_share", sum->steal_share);
	if (sp->perf)
		cpu_perf_describe(sp->perf, cJSON_AddObjectToObject(cpu, "perf"));
	else
		cJSON_AddStringToObject(cpu, "weighting", "schedstat_delta");

	/* Where each wall-clock sample (a thread at a tick) came from. */
	cJSON_AddStringToObject(cap, "wall_engine", sum->wall_engine);
	cJSON *wall = cJSON_AddObjectToObject(cap, "wall");
	cJSON_AddNumberToObject(wall, "thread_samples", (double)sum->thread_samples);
	cJSON_AddNumberToObject(wall, "without_stack", (double)sp->samples_without_stack);
	cJSON_AddNumberToObject(wall, "stacks_truncated", (double)sp->samples_truncated);
	if (sp->wall_perf) {
		cJSON_AddNumberToObject(wall, "from_switch_out_sample", (double)sp->wall_from_switch);
		cJSON_AddNumberToObject(wall, "from_cpu_sample", (double)sp->wall_from_cpu);
		cJSON_AddNumberToObject(wall, "read_from_proc", (double)sp->wall_from_proc);
		cJSON_AddNumberToObject(wall, "not_run_since_last_tick", (double)sp->wall_reused);
		/* Threads stopped once, asleep, for registers /proc does not
		 * give (note_resting_stacks), and the samples their stacks gave. */
		cJSON_AddNumberToObject(wall, "stops_for_registers", (double)sp->stops_for_registers);
		cJSON_AddNumberToObject(wall, "from_stop_for_registers", (double)sp->wall_from_stop);
		/* Ticks between wakes (wall_window.h), and the samples in them. */
		cJSON *rec = cJSON_AddObjectToObject(wall, "between_wakes");
		cJSON_AddNumberToObject(rec, "ticks_per_wake", sp->window ? sp->ticks_per_wake : 1);
		cJSON_AddNumberToObject(rec, "wakes", (double)sp->wakes);
		cJSON_AddNumberToObject(rec, "ticks", (double)sp->virtual_ticks);
		cJSON_AddNumberToObject(rec, "thread_samples", (double)sp->wall_from_records);
	}
}

void sampler_describe(struct sampler *sp, uint64_t duration)
{
	struct capture_session *s = sp->s;
	const struct capture_options *o = s->opt;
	cJSON *m = s->manifest;
	cJSON_AddStringToObject(m, "mode", "sample");
	cJSON *cap = cJSON_AddObjectToObject(m, "capture");
	cJSON_AddNumberToObject(cap, "frequency_hz", o->frequency_hz);
	cJSON_AddNumberToObject(cap, "duration_requested_s",
				o->duration_ns ? (double)o->duration_ns / 1e9 : 0);
	cJSON_AddNumberToObject(cap, "duration_s", (double)duration / 1e9);
	cJSON_AddNumberToObject(cap, "interval_s", (double)o->interval_ns / 1e9);
	cJSON_AddNumberToObject(cap, "ticks", (double)sp->ticks);
	cJSON_AddNumberToObject(cap, "missed_ticks", (double)sp->missed);
	if (sp->wall_perf)
		cJSON_AddNumberToObject(cap, "times_kept_pace", (double)sp->pace_raised);
	cJSON_AddNumberToObject(cap, "achieved_hz",
				duration ? (double)sp->ticks / ((double)duration / 1e9) : 0);
	cJSON_AddNumberToObject(cap, "thread_samples", (double)sp->samples);
	cJSON_AddNumberToObject(cap, "cpu_samples", (double)sp->cpu_samples);
	describe_cpu(sp, cap, sp->pause.seen);
	describe_growth(sp, cap);
	py_session_sampling_json(s->py, cap);
	cJSON_AddNumberToObject(cap, "failed_ticks", (double)sp->errors);
	/* Threads that could not be stopped by the deadline (in D, or not
	 * scheduled), counted once per tick that found them so. */
	cJSON_AddNumberToObject(cap, "late_thread_samples", (double)sp->late_samples);
	cJSON_AddNumberToObject(cap, "idle_thread_samples_not_stopped", (double)sp->unchanged);
	cJSON *fin = cJSON_AddObjectToObject(cap, "final_snapshot");
	cJSON_AddNumberToObject(fin, "threads", (double)sp->final_threads);
	cJSON_AddNumberToObject(fin, "without_stack", (double)sp->final_without_stack);
	cJSON_AddNumberToObject(fin, "stacks_truncated", (double)sp->final_truncated);
	cJSON_AddStringToObject(fin, "taken", sp->final_was_last_tick ? "last_tick" : "held");
	/* Samples of threads beyond the first tid_labels_max seen: they
	 * carry no tid label (thread_comm still). */
	cJSON_AddNumberToObject(cap, "tid_labels_max", (double)sp->tid_label_cap);
	cJSON_AddNumberToObject(cap, "samples_without_tid", (double)sp->unlabelled_samples);
	cJSON_AddNumberToObject(cap, "final_hz", sp->period_ns ? 1e9 / (double)sp->period_ns : 0);
	cJSON_AddItemToObject(cap, "rate_adaptations", sp->adaptations);
	sp->adaptations = NULL;
	cJSON_AddNumberToObject(cap, "threads_reaped", (double)attach_reaped_threads());
	cJSON_AddBoolToObject(cap, "no_interrupt_blocked", sp->ao.no_interrupt_blocked);
	cJSON_AddNumberToObject(cap, "stack_bytes_max", (double)o->attach.stack_bytes_max);
	cJSON_AddNumberToObject(cap, "stop_timeout_ms", o->attach.stop_timeout_ms);
	const char *ended = sp->exec_not_dumpable ? "exec_not_dumpable"
			    : sp->target_exited ? "target_exited"
			    : *s->opt->stop_requests ? "signal"
			    : o->duration_ns ? "duration" : "signal";
	cJSON_AddStringToObject(cap, "ended_by", ended);
	cJSON_AddBoolToObject(m, "target_exited", sp->target_exited);
	cJSON *pause = cJSON_AddObjectToObject(m, "pause");
	pause_stats_json(pause, &sp->pause);
	pause_stats_json(cJSON_AddObjectToObject(pause, "per_thread"), &sp->thread_pause);
}
