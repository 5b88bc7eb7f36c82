#include "cmd/engine/snapshot_out.h"
#include "cmd/engine/waits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/engine/go_session.h"
#include "cmd/engine/py_session.h"
#include "cmd/engine/profile_out.h"
#include "cmd/engine/stackagg.h"
#include "bundle/redact.h"
#include "bundle/text.h"
#include "cmd/engine/internal.h"

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static void print_frame_line(FILE *f, unsigned *frame_no, uint64_t pc, uint64_t lookup,
			     const struct sym_location *loc)
{
	bool python = py_pc_is_python(pc);
	const char *module = loc && loc->module ? basename_of(loc->module->path) : python ? "python" : "??";
	/* Module paths, function and file names come from the target's files:
	 * escaped, so that none of them can break or forge a line. */
	char unnamed[320];
	if (!loc || loc->nframes == 0) {
		/* Never blank: module+offset is enough to symbolize later. */
		fprintf(f, "#%-3u 0x%016llx  ", (*frame_no)++, (unsigned long long)pc);
		if (sym_location_unnamed(loc, unnamed, sizeof(unnamed)))
			escape_text_put(unnamed, f);
		else
			fputs("??", f);
		fputc('\n', f);
		return;
	}
	for (size_t i = 0; i < loc->nframes; i++) {
		const struct sym_frame *fr = &loc->frames[i];
		fprintf(f, "#%-3u 0x%016llx  ", (*frame_no)++, (unsigned long long)pc);
		if (fr->function) {
			escape_text_put(fr->function, f);
			if (!fr->inlined && !python)
				fprintf(f, "+0x%llx", (unsigned long long)(fr->function_offset + (pc - lookup)));
		} else if (sym_location_unnamed(loc, unnamed, sizeof(unnamed))) {
			escape_text_put(unnamed, f);
		} else {
			fputs("??", f);
		}
		if (fr->file) {
			fputs("  (", f);
			escape_text_put(fr->file, f);
			fprintf(f, ":%d)", fr->line);
		}
		if (fr->inlined)
			fputs("  [inlined]", f);
		fputs("  ", f);
		escape_text_put(module, f);
		fputc('\n', f);
	}
}

void snapshot_print_stack(FILE *f, const struct unwound_stack *stack, const struct symtab *st)
{
	unsigned frame_no = 0;
	for (size_t k = 0; k < stack->n; k++) {
		uint64_t lookup = frame_lookup_address(stack->pcs, k);
		print_frame_line(f, &frame_no, stack->pcs[k], lookup, symtab_lookup(st, lookup));
	}
	if (stack->truncated)
		fputs("    ... (stack truncated: unwinding stopped early)\n", f);
}

static void print_thread_header(FILE *f, const struct thread_capture *tc, pid_t gil_holder)
{
	/* The name is the thread's own choice (prctl, /proc/.../comm):
	 * redacted and escaped (redact.h), one thread stays one line
	 * ("a\nThread 1 ..." would forge another). */
	char comm[BUNDLE_NAME_TEXT_SIZE];
	fprintf(f, "Thread %d \"%s\" (state %c)", (int)tc->tid,
		bundle_target_name(tc->comm, comm, sizeof(comm)), tc->state ? tc->state : '?');
	if (tc->group_stopped)
		fputs(" [stopped by job control]", f);
	if (tc->not_stopped)
		fputs(" [blocked: sampled from /proc without stopping it]", f);
	if (tc->delivered_signal)
		fprintf(f, " [signal %d delivered during capture]", tc->delivered_signal);
	if (gil_holder && tc->tid == gil_holder)
		fputs(" [holds the GIL]", f);
	fputc('\n', f);
	if (tc->outcome == THREAD_CAPTURED && tc->syscall_nr >= 0 && tc->state != 'R') {
		const char *name = attach_syscall_name(tc->syscall_nr);
		if (name)
			fprintf(f, "    in syscall: %s", name);
		else
			fprintf(f, "    in syscall: %ld", tc->syscall_nr);
		if (tc->wchan[0])
			fprintf(f, "  wchan: %s", tc->wchan);
		fputc('\n', f);
	} else if (tc->wchan[0]) {
		fprintf(f, "    wchan: %s\n", tc->wchan);
	}
}

const char *snapshot_no_stack_label(const struct thread_capture *tc)
{
	switch (tc->outcome) {
	case THREAD_LATE:
		return "late";
	case THREAD_NOT_READ:
	case THREAD_UNCHANGED: /* has not run since a tick that had no stack for it */
		return "not_seen";
	default:
		return "unwound_empty";
	}
}

const char *snapshot_no_stack_reason(const struct thread_capture *tc,
				     const struct unwound_stack *st)
{
	if (st->n > 0)
		return NULL;
	switch (tc->outcome) {
	case THREAD_LATE:
		return "not stopped before the deadline";
	case THREAD_NOT_READ:
	case THREAD_UNCHANGED:
		return "not stopped, and not sampled yet by perf events";
	default:
		return "registers read, but no frame could be unwound";
	}
}

int snapshot_collect(const struct process_capture *pc, const struct unwound_stack *stacks,
		     struct addrset *set)
{
	for (size_t i = 0; i < pc->nthreads; i++)
		for (size_t k = 0; k < stacks[i].n; k++)
			if (addrset_add(set, frame_lookup_address(stacks[i].pcs, k)) < 0)
				return -ENOMEM;
	/* The locks slept on, to be named. */
	return waits_collect(pc, set);
}

int snapshot_write(struct bundle *b, const char *prefix, const struct process_capture *pc,
		   const struct unwound_stack *stacks, const struct symtab *st,
		   const struct snapshot_meta *meta)
{
	bool last_tick = meta->last_tick;
	char *text = NULL;
	size_t text_len = 0;
	FILE *f = open_memstream(&text, &text_len);
	struct stackagg *agg = stackagg_new(1);
	struct wait_graph waits = {0};
	int r = 0;
	if (!f || !agg) {
		r = -ENOMEM;
		goto out;
	}

	size_t captured = 0, stackless = 0;
	for (size_t i = 0; i < pc->nthreads; i++) {
		captured += last_tick ? pc->threads[i].outcome != THREAD_GONE
				      : pc->threads[i].outcome == THREAD_CAPTURED;
		stackless += stacks[i].n == 0;
	}
	char when[32];
	format_rfc3339_ms(pc->wall_ns, when);
	if (last_tick)
		fprintf(f, "Process %d: %zu threads at %s, as the last sample before the target exited "
			   "saw them (not held at once)\n",
			(int)pc->pid, captured, when);
	else
		fprintf(f, "Process %d: %zu threads captured at %s, all held at once for %llu us\n",
			(int)pc->pid, captured, when, (unsigned long long)(pc->hold_ns / 1000));
	if (stackless)
		fprintf(f, "%zu thread(s) are shown without a stack (each says why)\n", stackless);
	fputc('\n', f);
	r = waits_build(pc, stacks, st, &waits);
	if (r < 0)
		goto out;
	if (waits_print_summary(f, pc, &waits))
		fputc('\n', f);

	for (size_t i = 0; i < pc->nthreads; i++) {
		const struct thread_capture *tc = &pc->threads[i];
		print_thread_header(f, tc, meta->gil_holder);
		waits_print_thread(f, "    ", pc, &waits, i);
		const uint64_t *pcs = stacks[i].pcs;
		size_t n = stacks[i].n;
		const char *why = snapshot_no_stack_reason(tc, &stacks[i]);
		if (why)
			fprintf(f, "    (no stack: %s)\n", why);
		snapshot_print_stack(f, &stacks[i], st);
		fputc('\n', f);

		/* Escaped as in the header: a raw LABEL_SEP in a name would add a
		 * label of the thread's choosing. A thread without a stack is
		 * still one sample (no frames, and a no_stack label): it is one
		 * of the process's threads, for report and diff alike. */
		char labels[200], comm[BUNDLE_NAME_TEXT_SIZE];
		snprintf(labels, sizeof(labels),
			 "tid=%d" LABEL_SEP "thread_comm=%s" LABEL_SEP "state=%c%s%s%s", (int)tc->tid,
			 bundle_target_name(tc->comm, comm, sizeof(comm)), tc->state ? tc->state : '?',
			 why ? LABEL_SEP "no_stack=" : "", why ? snapshot_no_stack_label(tc) : "",
			 meta->gil_holder && tc->tid == meta->gil_holder ? LABEL_SEP "gil=held" : "");
		int64_t one = 1;
		if (stackagg_add(agg, pcs, n, labels, &one) < 0) {
			r = -ENOMEM;
			goto out;
		}
	}
	if (fclose(f) != 0) {
		f = NULL;
		r = -ENOMEM;
		goto out;
	}
	f = NULL;

	char name[256];
	snprintf(name, sizeof(name), "%sthreads.txt", prefix);
	r = bundle_write_member(b, name, text, text_len);
	if (r < 0)
		goto out;

	static const struct profile_value_type types[] = {{"threads", "count"}};
	struct profile_spec spec = {
		.sample_types = types,
		.ntypes = 1,
		.period_type = {"threads", "count"},
		.period = 1,
		.time_nanos = (int64_t)pc->wall_ns,
		.duration_nanos = (int64_t)pc->hold_ns,
		.main_named_by_go = meta->main_named_by_go,
		.exe_path = meta->exe_path,
		.invoked_as = meta->invoked_as,
	};
	uint8_t *gz = NULL;
	size_t gz_len = 0;
	r = profile_out_encode(agg, st, &spec, &gz, &gz_len);
	if (r == 0) {
		snprintf(name, sizeof(name), "%sthreads.pprof", prefix);
		r = bundle_write_member(b, name, gz, gz_len);
	}
	free(gz);
out:
	if (f)
		fclose(f);
	free(text);
	stackagg_free(agg);
	waits_free(&waits);
	return r;
}

int snapshot_symbolize(const struct process_capture *pc, const struct unwound_stack *stacks,
		       struct interp *in, struct go_session *go, struct py_session *py,
		       struct symtab **ret_st)
{
	struct addrset *set = addrset_new();
	struct symtab *st = NULL;
	int r = set ? snapshot_collect(pc, stacks, set) : -ENOMEM;
	if (r == 0) {
		size_t n;
		const uint64_t *addrs = addrset_items(set, &n);
		r = interp_symbolize(in, pc->maps_text, pc->maps_len, addrs, n, &st);
		if (r == 0)
			r = go_session_name_unnamed(go, st);
		if (r == 0)
			r = py_session_name_unnamed(py, st);
	}
	addrset_free(set);
	if (r < 0) {
		symtab_free(st);
		return r;
	}
	*ret_st = st;
	return 0;
}

/* A string of the manifest's target object, NULL if absent. */
static const char *target_string(const cJSON *target_json, const char *key)
{
	return target_json ? cJSON_GetStringValue(cJSON_GetObjectItem(target_json, key)) : NULL;
}

int snapshot_finish(struct bundle *b, const char *prefix, const struct process_capture *pc,
		    const struct unwound_stack *stacks, struct interp *in, struct go_session *go,
		    struct py_session *py, cJSON *target_json, struct symtab **ret_st,
		    size_t *ret_truncated)
{
	struct unwound_stack *own = NULL;
	if (!stacks) {
		own = calloc(pc->nthreads ? pc->nthreads : 1, sizeof(*own));
		if (!own)
			return -ENOMEM;
		interp_unwind(in, pc, own);
		py_session_merge(py, pc, own);
		stacks = own;
	}
	struct symtab *st = NULL;
	int r = snapshot_symbolize(pc, stacks, in, go, py, &st);
	if (r == 0)
		r = snapshot_write(b, prefix, pc, stacks, st,
				   &(struct snapshot_meta){
					   .main_named_by_go = go != NULL,
					   .gil_holder = py_session_gil_holder(py),
					   .exe_path = target_string(target_json, "exe"),
					   .invoked_as = target_string(target_json, "invoked_as"),
				   });
	if (r == 0 && go)
		r = go_session_write(go, b, prefix, st,
				     target_json ? cJSON_GetObjectItem(target_json, "go") : NULL);
	if (r == 0 && target_json && !cJSON_GetObjectItem(target_json, "build_id"))
		cJSON_AddStringToObject(target_json, "build_id", symtab_main_build_id(st));
	if (ret_truncated) {
		*ret_truncated = 0;
		for (size_t i = 0; i < pc->nthreads; i++)
			*ret_truncated += stacks[i].n && stacks[i].truncated;
	}
	if (ret_st && r == 0) {
		*ret_st = st;
		st = NULL;
	}
	symtab_free(st);
	free(own);
	return r;
}
