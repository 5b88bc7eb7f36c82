/* The capture session: open the target, the workers and the bundle, run a
 * snapshot or a sampled capture, finish the manifest. The sampled capture
 * lives in sampler.c, the hold of a consistent capture in hold.c. */
#include "cmd/engine/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/bundle.h"
#include "bundle/text.h"
#include "cmd/engine/binaries.h"
#include "cmd/engine/dump_out.h"
#include "cmd/engine/go_session.h"
#include "cmd/engine/hold.h"
#include "cmd/engine/py_session.h"
#include "cmd/engine/sampler.h"
#include "cmd/engine/snapshot_out.h"
#include "cmd/engine/target_info.h"
#include "symbolize/worker/interp.h"
#include "version.h"

static int run_snapshot(struct capture_session *s)
{
	struct process_capture pc = {0};
	if (s->opt->ready)
		s->opt->ready(s->opt->callback_arg);
	int r = capture_consistent(s, &s->opt->attach, &pc);
	if (r < 0) {
		process_capture_release(&pc);
		return capture_fail(s, CAPTURE_STAGE_ATTACH, r);
	}

	/* The target runs again from here on: unwinding and symbols cost it
	 * nothing but the CPU we share with it. */
	struct symtab *st = NULL;
	size_t truncated = 0;
	struct unwound_stack *stacks = calloc(pc.nthreads ? pc.nthreads : 1, sizeof(*stacks));
	if (!stacks) {
		process_capture_release(&pc);
		return capture_fail(s, CAPTURE_STAGE_WRITE, -ENOMEM);
	}
	interp_unwind(s->interp, &pc, stacks);
	py_session_merge(s->py, &pc, stacks);
	cJSON *target_json = cJSON_GetObjectItem(s->manifest, "target");
	if (s->bundle)
		r = snapshot_finish(s->bundle, "", &pc, stacks, s->interp, s->go, s->py, target_json, &st,
				    &truncated);
	else
		r = snapshot_symbolize(&pc, stacks, s->interp, s->go, s->py, &st);
	if (r == 0 && s->bundle && s->opt->with_binaries_cap)
		r = binaries_copy(s->bundle, s->target.pid, st, s->opt->with_binaries_cap,
				  cJSON_AddObjectToObject(s->manifest, "binaries"));
	capture_trace_phase("snapshot members written");
	size_t interrupted = 0;
	for (size_t i = 0; i < pc.nthreads; i++) {
		/* Stopped while asleep in a system call that a stop makes fail
		 * with EINTR (epoll_wait, semop, sigtimedwait...; not futex,
		 * nanosleep or a pipe read, which the kernel restarts), as under
		 * eu-stack or gdb; --no-interrupt-blocked reads such threads
		 * instead. */
		const struct thread_capture *tc = &pc.threads[i];
		if (tc->outcome == THREAD_CAPTURED && !tc->not_stopped &&
		    (tc->state == 'S' || tc->state == 'D') && tc->syscall_nr >= 0 &&
		    !attach_stop_is_harmless(&s->target, tc))
			interrupted++;
	}
	if (r == 0 && s->opt->dump_to) {
		struct dump_meta meta = {
			.exe = cJSON_GetStringValue(cJSON_GetObjectItem(target_json, "exe")),
			.comm = s->target.comm[0] ? s->target.comm : NULL,
			.interrupted = interrupted,
			.gil_holder = py_session_gil_holder(s->py),
			.go = s->go,
		};
		r = dump_write(s->opt->dump_to, s->opt->dump_json, &pc, stacks, st, &meta);
		/* A Go program's goroutines follow its threads (text only). */
		if (r == 0 && !s->opt->dump_json && go_session_print(s->go, s->opt->dump_to) >= 0)
			r = dump_flush_error(s->opt->dump_to);
		if (r == -EIO || r == -EPIPE || r == -ENOSPC || r == -EDQUOT) {
			symtab_free(st);
			free(stacks);
			process_capture_release(&pc);
			return capture_fail(s, CAPTURE_STAGE_PRINT, r);
		}
	}
	symtab_free(st);
	free(stacks);
	if (r < 0) {
		process_capture_release(&pc);
		return capture_fail(s, CAPTURE_STAGE_WRITE, r);
	}
	cJSON_AddStringToObject(s->manifest, "mode", "snapshot");

	uint64_t max = 0, total = 0;
	size_t captured = 0;
	for (size_t i = 0; i < pc.nthreads; i++) {
		if (pc.threads[i].outcome != THREAD_CAPTURED)
			continue;
		captured++;
		total += pc.threads[i].hold_ns;
		if (pc.threads[i].hold_ns > max)
			max = pc.threads[i].hold_ns;
	}
	cJSON *pause = cJSON_AddObjectToObject(s->manifest, "pause");
	cJSON_AddNumberToObject(pause, "threads", (double)captured);
	cJSON_AddNumberToObject(pause, "process_hold_us", (double)pc.hold_ns / 1000.0);
	cJSON_AddNumberToObject(pause, "thread_hold_max_us", (double)max / 1000.0);
	cJSON_AddNumberToObject(pause, "thread_hold_total_us", (double)total / 1000.0);
	cJSON_AddNumberToObject(pause, "late_threads", (double)pc.nlate);
	cJSON_AddNumberToObject(pause, "exited_threads", (double)pc.ngone);
	cJSON_AddNumberToObject(pause, "threads_interrupted_in_syscall", (double)interrupted);
	cJSON_AddNumberToObject(pause, "threads_read_without_stop", (double)pc.nnot_stopped);
	size_t stackless = 0;
	for (size_t i = 0; i < pc.nthreads; i++)
		stackless += pc.threads[i].outcome != THREAD_CAPTURED;
	cJSON_AddNumberToObject(pause, "threads_without_stack", (double)stackless);
	/* Stacks whose unwinding stopped before the outermost frame (shown
	 * "(stack truncated)" in threads.txt). */
	cJSON_AddNumberToObject(pause, "stacks_truncated", (double)truncated);
	process_capture_release(&pc);
	return 0;
}

static cJSON *annotations_json(const struct capture_options *o)
{
	cJSON *a = cJSON_CreateObject();
	for (size_t i = 0; a && i < o->nannotations; i++) {
		const char *eq = strchr(o->annotations[i], '=');
		if (!eq)
			continue;
		char key[256];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - o->annotations[i]), o->annotations[i]);
		cJSON_DeleteItemFromObject(a, key);
		cJSON_AddStringToObject(a, key, eq + 1);
	}
	return a;
}

static cJSON *initial_manifest(struct capture_session *s)
{
	cJSON *m = cJSON_CreateObject();
	if (!m)
		return NULL;
	char id[37];
	make_uuid(id);
	cJSON_AddStringToObject(m, "bundle_id", id);
	cJSON_AddNumberToObject(m, "format_version", BUNDLE_FORMAT_VERSION);
	cJSON *tool = cJSON_AddObjectToObject(m, "tool");
	cJSON_AddStringToObject(tool, "name", "diag-attach");
	cJSON_AddStringToObject(tool, "version", DIAG_ATTACH_VERSION);
	cJSON *target = target_info_json(&s->target, s->opt->record_environ);
	if (target && s->go)
		go_session_describe(s->go, target);
	if (target && s->py)
		py_session_describe(s->py, target);
	if (target && s->opt->not_dumpable)
		cJSON_AddFalseToObject(target, "dumpable");
	cJSON_AddItemToObject(m, "target", target);
	cJSON_AddItemToObject(m, "host", host_info_json());
	char when[32];
	format_rfc3339_ms(s->started_wall_ns, when);
	cJSON_AddStringToObject(m, "started_at", when);
	cJSON_AddItemToObject(m, "annotations", annotations_json(s->opt));
	return m;
}

int capture_session_new(const struct capture_options *opt, const char *dir,
			struct capture_session **ret, enum capture_stage *ret_stage)
{
	struct capture_session *s = calloc(1, sizeof(*s));
	if (!s) {
		*ret_stage = CAPTURE_STAGE_SETUP;
		return -ENOMEM;
	}
	s->opt = opt;
	s->started_wall_ns = realtime_ns();
	s->symopt.allow_debuginfod = opt->debuginfod;
	s->symopt.names_only = opt->names_only;
	/* A dump without a bundle lists no module it has no frame in. */
	s->symopt.lazy_modules = dir == NULL;
	int r = attach_target_open(opt->pid, &s->target);
	if (r < 0) {
		free(s);
		*ret_stage = CAPTURE_STAGE_TARGET;
		return r;
	}
	capture_trace_phase("target opened");
	/* Unwinding and symbols run in a sandboxed worker, forked before we
	 * hold anything. */
	r = interp_new(opt->pid, &s->symopt, &s->interp);
	capture_trace_phase("worker started");
	/* A Go target gets its goroutines read too, by a third worker that
	 * parses its binary now, before anything is stopped. */
	if (r == 0) {
		s->go = go_session_open(s->interp, (pid_t)target_inner_pid(&s->target));
		capture_trace_phase("go probed");
	}
	/* A CPython target gets its Python frames read too (by the worker,
	 * which finds the interpreter in its ELF symbols now). */
	if (r == 0 && !s->go) {
		s->py = py_session_open(&s->target, s->interp);
		capture_trace_phase("python probed");
	}
	if (r == 0) {
		s->manifest = initial_manifest(s);
		if (!s->manifest)
			r = -ENOMEM;
	}
	if (r < 0) {
		capture_session_free(s);
		*ret_stage = CAPTURE_STAGE_SETUP;
		return r;
	}
	/* Create the output before attaching: an unusable directory must fail
	 * before we pause anything. */
	r = dir ? bundle_create(dir, &s->bundle) : 0;
	if (r < 0) {
		capture_session_free(s);
		*ret_stage = CAPTURE_STAGE_OUTPUT;
		return r;
	}
	capture_trace_phase("bundle directory created");
	*ret = s;
	return 0;
}

int capture_session_run(struct capture_session *s)
{
	capture_trace_phase("ready to capture");
	int r = s->opt->snapshot ? run_snapshot(s) : sampler_run(s);
	if (r < 0)
		return r;
	interp_describe(s->interp, cJSON_AddObjectToObject(s->manifest, "interpretation"));
	/* A second stop request while we wrote: abandon, as asked. */
	if (*s->opt->stop_requests >= 2)
		return capture_fail(s, CAPTURE_STAGE_WRITE, -EINTR);
	return 0;
}

int capture_session_finish(struct capture_session *s)
{
	if (!s->bundle)
		return 0; /* a dump without a bundle: printed already */
	char when[32];
	format_rfc3339_ms(realtime_ns(), when);
	cJSON_AddStringToObject(s->manifest, "ended_at", when);
	int r = bundle_finalize(s->bundle, s->manifest);
	capture_trace_phase("bundle finalized");
	/* bundle_finalize takes both, whatever it returns. */
	s->manifest = NULL;
	s->bundle = NULL;
	return r < 0 ? capture_fail(s, CAPTURE_STAGE_FINALIZE, r) : 0;
}

void capture_session_note(struct capture_session *s, const char *key, cJSON *item)
{
	if (!s->manifest) {
		cJSON_Delete(item);
		return;
	}
	cJSON_DeleteItemFromObject(s->manifest, key);
	cJSON_AddItemToObject(s->manifest, key, item);
}

enum capture_stage capture_session_stage(const struct capture_session *s)
{
	return s->stage;
}

char *capture_session_manifest_text(const struct capture_session *s)
{
	return s->manifest ? json_print(s->manifest, false) : NULL;
}

void capture_session_summary(const struct capture_session *s, struct capture_summary *ret)
{
	*ret = s->summary;
	const char *gw = go_session_warning(s->go);
	snprintf(ret->go_warning, sizeof(ret->go_warning), "%s", gw ? gw : "");
	struct interp_losses l = {0};
	if (s->interp)
		interp_losses(s->interp, &l);
	ret->worker_restarts = l.worker_restarts;
	ret->stacks_lost = l.stacks_lost;
	ret->symbol_batches_lost = l.symbol_batches_lost;
	ret->workers_denied = l.denied;
	ret->denied_syscall = s->interp ? l.denied_syscall : -1;
}

bool capture_session_target_exited(const struct capture_session *s)
{
	return s->target_exited;
}

void capture_session_free(struct capture_session *s)
{
	if (!s)
		return;
	if (s->bundle)
		bundle_abandon(s->bundle);
	cJSON_Delete(s->manifest);
	interp_free(s->interp);
	capture_trace_phase("worker gone");
	go_session_free(s->go);
	py_session_free(s->py);
	attach_target_close(&s->target);
	free(s);
}
