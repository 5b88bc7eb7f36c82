/* The timeline of a capture and its leak watchdog: sample /proc, append a
 * JSON line to runtime.jsonl (flushed at once, so a killed capture still
 * leaves a usable timeline), feed the fitter, and on a finding dump a
 * thread snapshot and the fitted window into leak/<counter>-<n>/. */
#include "cmd/engine/timeline_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/engine/go_session.h"
#include "cmd/engine/leak_evidence.h"
#include "cmd/engine/snapshot_out.h"
#include "timeline/leakwatch.h"
#include "timeline/newcomers.h"
#include "timeline/proc_sampler.h"
#include "bundle/text.h"
#include "cmd/engine/hold.h"
#include "cmd/engine/internal.h"
#include "cmd/engine/target_info.h"

#define TIMELINE_MEMBER "runtime.jsonl"
#define MAX_FINDINGS_PER_TICK TIMELINE_COUNTER_COUNT

struct ring_line {
	uint64_t seq;
	char json[TIMELINE_JSON_MAX];
	size_t len;
};

struct timeline_run {
	struct capture_session *s;
	struct proc_sampler *ps;
	struct bundle_stream *stream;
	struct leakwatch *lw;
	const char *names[TIMELINE_COUNTER_COUNT];
	struct ring_line *ring; /* the last ring_cap samples, for window.jsonl */
	size_t ring_cap;
	uint64_t seq;
	uint64_t samples;
	unsigned fired[TIMELINE_COUNTER_COUNT];
	cJSON *findings;
	struct leakwatch_threshold *thresholds;
};

static int build_leakwatch(struct timeline_run *t)
{
	const struct capture_options *o = t->s->opt;
	size_t ndef;
	const struct leakwatch_threshold *def = leakwatch_default_thresholds(&ndef);
	size_t n = ndef + o->nleak_thresholds;
	t->thresholds = calloc(n, sizeof(*t->thresholds));
	if (!t->thresholds)
		return -ENOMEM;
	memcpy(t->thresholds, def, ndef * sizeof(*def));
	/* Overrides are appended: the last entry for a name wins. They were
	 * validated when the options were parsed. */
	for (size_t i = 0; i < o->nleak_thresholds; i++)
		if (leakwatch_threshold_parse(o->leak_thresholds[i], &t->thresholds[ndef + i]) < 0)
			return -EINVAL;

	struct leakwatch_config cfg;
	leakwatch_config_init(&cfg);
	cfg.window = o->leak_window;
	/* The longest window must cover minutes whatever the interval, or slow
	 * leaks (one fd every 5 s) are never seen at 250 ms. */
	int r = leakwatch_config_set_span(&cfg, (double)o->interval_ns / 1e9, LEAKWATCH_DEFAULT_SPAN_S);
	if (r < 0)
		return r;
	cfg.repeat = o->leak_repeat;
	cfg.thresholds = t->thresholds;
	cfg.n_thresholds = n;
	for (size_t i = 0; i < TIMELINE_COUNTER_COUNT; i++)
		t->names[i] = timeline_counter_name((enum timeline_counter)i);
	r = leakwatch_new(&cfg, t->names, TIMELINE_COUNTER_COUNT, &t->lw);
	if (r < 0)
		return r;
	t->ring_cap = leakwatch_max_window(t->lw);
	t->ring = calloc(t->ring_cap, sizeof(*t->ring));
	return t->ring ? 0 : -ENOMEM;
}

int timeline_run_new(struct capture_session *s, struct timeline_run **ret)
{
	*ret = NULL;
	struct timeline_run *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->s = s;
	t->findings = cJSON_CreateArray();
	int r = t->findings ? 0 : -ENOMEM;
	if (r == 0)
		r = proc_sampler_open(s->target.pid, PROC_SAMPLER_FD_TYPES, &t->ps);
	if (r == 0)
		r = bundle_stream_open(s->bundle, TIMELINE_MEMBER, &t->stream);
	if (r == 0 && s->opt->leak_watch)
		r = build_leakwatch(t);
	if (r < 0) {
		timeline_run_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

static int write_window(struct timeline_run *t, const char *prefix,
			const struct leakwatch_finding *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	if (!mem)
		return -ENOMEM;
	for (uint64_t seq = f->window_start_seq; seq <= f->window_end_seq; seq++) {
		const struct ring_line *l = &t->ring[seq % t->ring_cap];
		if (l->seq == seq && l->len)
			fwrite(l->json, 1, l->len, mem);
	}
	fclose(mem);
	char name[256];
	snprintf(name, sizeof(name), "%swindow.jsonl", prefix);
	int r = bundle_write_member(t->s->bundle, name, buf, len);
	free(buf);
	return r;
}

/* A thread snapshot at the moment the leak is found: that is when the
 * stacks that leak are most likely on screen. pc, *ret_stacks and *ret_st
 * are the caller's to release, whatever this returns. */
static int dump_snapshot(struct timeline_run *t, const char *prefix, struct process_capture *pc,
			 struct unwound_stack **ret_stacks, struct symtab **ret_st)
{
	int r = capture_consistent(t->s, &t->s->opt->attach, pc);
	if (r < 0)
		return r;
	*ret_stacks = calloc(pc->nthreads ? pc->nthreads : 1, sizeof(**ret_stacks));
	if (!*ret_stacks)
		return -ENOMEM;
	interp_unwind(t->s->interp, pc, *ret_stacks);
	return snapshot_finish(t->s->bundle, prefix, pc, *ret_stacks, t->s->interp, t->s->go, t->s->py, NULL,
			       ret_st, NULL);
}

static int on_finding(struct timeline_run *t, const struct leakwatch_finding *f)
{
	unsigned n = ++t->fired[f->counter_index];
	char prefix[128];
	snprintf(prefix, sizeof(prefix), "leak/%s-%u/", f->counter, n);

	cJSON *j = cJSON_CreateObject();
	if (!j)
		return -ENOMEM;
	cJSON_AddStringToObject(j, "counter", f->counter);
	cJSON_AddNumberToObject(j, "slope_per_s", f->slope_per_s);
	cJSON_AddNumberToObject(j, "delta", f->delta);
	cJSON_AddNumberToObject(j, "first", f->first);
	cJSON_AddNumberToObject(j, "last", f->last);
	/* Window bounds as wall-clock times: the fitter's clock is monotonic. */
	double now_mono_s = (double)monotonic_ns() / 1e9;
	uint64_t now_wall = realtime_ns();
	char when[32];
	format_rfc3339_ms(now_wall - (uint64_t)((now_mono_s - f->window_start_time) * 1e9), when);
	cJSON_AddStringToObject(j, "window_start", when);
	format_rfc3339_ms(now_wall - (uint64_t)((now_mono_s - f->window_end_time) * 1e9), when);
	cJSON_AddStringToObject(j, "window_end", when);
	cJSON_AddNumberToObject(j, "samples", (double)f->n_samples);
	cJSON_AddNumberToObject(j, "tau", f->tau);
	cJSON_AddNumberToObject(j, "r2", f->r2);

	struct process_capture pc = {0};
	struct unwound_stack *stacks = NULL;
	struct symtab *st = NULL;
	int r = dump_snapshot(t, prefix, &pc, &stacks, &st);
	cJSON *dumps = cJSON_AddArrayToObject(j, "dumps");
	if (r == 0) {
		char name[192];
		snprintf(name, sizeof(name), "%sthreads.txt", prefix);
		cJSON_AddItemToArray(dumps, cJSON_CreateString(name));
		snprintf(name, sizeof(name), "%sthreads.pprof", prefix);
		cJSON_AddItemToArray(dumps, cJSON_CreateString(name));
	}
	/* What the counter added, named (the descriptors, the new threads or
	 * children), from /proc now, with the snapshot's stacks. */
	if (r == 0 || r == -ESRCH || r == -EPERM || r == -ENOMEM) {
		struct leak_evidence ev = {
			.pid = t->s->target.pid,
			.counter = f->counter,
			.prefix = prefix,
			.added = f->last - f->first,
			.window_start_boot_s = newcomers_boottime_s() - (now_mono_s - f->window_start_time),
			.pc = r == 0 ? &pc : NULL,
			.stacks = stacks,
			.st = st,
		};
		int e = leak_evidence_write(t->s->bundle, &ev, j, dumps);
		if (e < 0 && e != -ENOMEM)
			r = e;
		else if (r == -ESRCH || r == -EPERM || r == -ENOMEM)
			r = 0; /* no snapshot: the finding stands without one */
	}
	symtab_free(st);
	free(stacks);
	process_capture_release(&pc);
	if (r < 0) {
		cJSON_Delete(j);
		return r; /* a bundle write error */
	}
	int w = write_window(t, prefix, f);
	if (w < 0 && w != -ENOMEM) {
		cJSON_Delete(j);
		return w;
	}
	if (w == 0) {
		char name[192];
		snprintf(name, sizeof(name), "%swindow.jsonl", prefix);
		cJSON_AddItemToArray(dumps, cJSON_CreateString(name));
	}
	cJSON_AddItemToArray(t->findings, j);
	const struct capture_options *o = t->s->opt;
	if (o->leak_found) {
		struct capture_leak l = {
			.counter = f->counter,
			.slope_per_s = f->slope_per_s,
			.first = f->first,
			.last = f->last,
			.n_samples = f->n_samples,
			.bundle_dir = bundle_dir(t->s->bundle),
			.evidence = prefix,
		};
		o->leak_found(&l, o->callback_arg);
	}
	return 0;
}

int timeline_run_tick(struct timeline_run *t)
{
	cJSON *target = cJSON_GetObjectItemCaseSensitive(t->s->manifest, "target");
	int exec = target ? target_info_follow_exec(&t->s->target, target, t->s->opt->record_environ) : 0;
	if (exec < 0)
		return -ENOMEM;
	/* Before anything is read of the new program. */
	struct attach_probe pr;
	if (exec == 1 && !t->s->opt->force && attach_target_probe(t->s->target.pid, &pr) == 0 &&
	    !pr.dumpable) {
		cJSON_AddFalseToObject(target, "dumpable");
		return TIMELINE_EXEC_NOT_DUMPABLE;
	}
	struct timeline_sample smp;
	int r = proc_sampler_sample(t->ps, &smp);
	if (r < 0)
		return r;
	if (t->s->go)
		go_session_counters(t->s->go, &smp.goroutines, &smp.heap_live_bytes);
	char json[TIMELINE_JSON_MAX];
	int len = timeline_sample_format_json(&smp, json, sizeof(json));
	if (len < 0)
		return 0; /* cannot happen with TIMELINE_JSON_MAX; skip the line */
	r = bundle_stream_append(t->stream, json, (size_t)len);
	if (r < 0)
		return r;
	t->samples++;
	if (!t->lw)
		return 0;

	struct ring_line *slot = &t->ring[t->seq % t->ring_cap];
	slot->seq = t->seq;
	memcpy(slot->json, json, (size_t)len);
	slot->len = (size_t)len;

	int64_t values[TIMELINE_COUNTER_COUNT];
	timeline_sample_values(&smp, values);
	struct leakwatch_finding found[MAX_FINDINGS_PER_TICK];
	size_t nfound = 0;
	r = leakwatch_feed(t->lw, (double)smp.t_monotonic_ns / 1e9, values, found,
			   MAX_FINDINGS_PER_TICK, &nfound);
	t->seq++;
	if (r < 0)
		return 0; /* a clock that did not advance: the sample is dropped */
	for (size_t i = 0; i < nfound; i++) {
		r = on_finding(t, &found[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

int timeline_run_finish(struct timeline_run *t, cJSON *manifest)
{
	cJSON *tl = cJSON_AddObjectToObject(manifest, "timeline");
	cJSON_AddStringToObject(tl, "member", TIMELINE_MEMBER);
	cJSON_AddNumberToObject(tl, "interval_s", (double)t->s->opt->interval_ns / 1e9);
	cJSON_AddNumberToObject(tl, "samples", (double)t->samples);
	cJSON *lw = cJSON_AddObjectToObject(manifest, "leak_watch");
	cJSON_AddBoolToObject(lw, "enabled", t->lw != NULL);
	if (t->lw) {
		cJSON_AddNumberToObject(lw, "shortest_window", t->s->opt->leak_window);
		cJSON_AddNumberToObject(lw, "longest_window", (double)t->ring_cap);
		cJSON_AddBoolToObject(lw, "repeat", t->s->opt->leak_repeat);
		cJSON *th = cJSON_AddObjectToObject(lw, "thresholds");
		for (size_t i = 0; i < TIMELINE_COUNTER_COUNT; i++) {
			if (!leakwatch_watched(t->lw, i))
				continue;
			/* Report the floors in force (last entry for the name wins). */
			size_t ndef;
			leakwatch_default_thresholds(&ndef);
			for (size_t k = ndef + t->s->opt->nleak_thresholds; k-- > 0;) {
				if (strcmp(t->thresholds[k].name, t->names[i]) != 0)
					continue;
				cJSON *e = cJSON_AddObjectToObject(th, t->names[i]);
				cJSON_AddNumberToObject(e, "min_slope_per_s", t->thresholds[k].min_slope_per_s);
				cJSON_AddNumberToObject(e, "min_delta", t->thresholds[k].min_delta);
				if (t->thresholds[k].min_span_s > 0)
					cJSON_AddNumberToObject(e, "min_span_s", t->thresholds[k].min_span_s);
				break;
			}
		}
	}
	cJSON_AddItemToObject(manifest, "findings", t->findings);
	t->findings = NULL;
	return 0;
}

void timeline_run_free(struct timeline_run *t)
{
	if (!t)
		return;
	proc_sampler_free(t->ps);
	leakwatch_free(t->lw);
	free(t->ring);
	free(t->thresholds);
	cJSON_Delete(t->findings);
	free(t);
}
