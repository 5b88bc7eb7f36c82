/* diag-attach dump's output: one capture's threads grouped by identical
 * stack. Grouping is by the raw PCs (and where unwinding stopped), so two
 * threads share a group only when every frame is the same; the biggest
 * group comes first, as the pile of identical waiters is what a person
 * skips past to find the odd thread out, and ties keep the capture's
 * order (main thread first). */
#include "cmd/engine/dump_out.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bundle/redact.h"
#include "bundle/text.h"
#include "cmd/engine/profile_out.h"
#include "cmd/engine/go_session.h"
#include "cmd/engine/py_session.h"
#include "cmd/engine/snapshot_out.h"
#include "cmd/engine/waits.h"

struct group {
	size_t start, count; /* a run of order[] */
};

struct grouping {
	const struct process_capture *pc;
	const struct unwound_stack *stacks;
	struct wait_graph waits;
	size_t *order; /* thread indexes, members of a group adjacent */
	struct group *groups;
	size_t ngroups;
};

static int cmp_stack(const struct grouping *g, size_t a, size_t b)
{
	const struct unwound_stack *x = &g->stacks[a], *y = &g->stacks[b];
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	if (x->n) {
		int c = memcmp(x->pcs, y->pcs, x->n * sizeof(x->pcs[0]));
		if (c)
			return c;
		return (int)x->truncated - (int)y->truncated;
	}
	/* Without a stack: grouped by why (late, not read, nothing unwound). */
	return strcmp(snapshot_no_stack_label(&g->pc->threads[a]),
		      snapshot_no_stack_label(&g->pc->threads[b]));
}

static int cmp_thread(const void *pa, const void *pb, void *ctx)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	int c = cmp_stack(ctx, a, b);
	if (c)
		return c;
	return a < b ? -1 : a > b;
}

static int cmp_group(const void *pa, const void *pb, void *ctx)
{
	const struct grouping *g = ctx;
	const struct group *x = pa, *y = pb;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	size_t a = g->order[x->start], b = g->order[y->start];
	return a < b ? -1 : a > b;
}

static int group_threads(struct grouping *g)
{
	size_t n = g->pc->nthreads;
	g->order = malloc((n ? n : 1) * sizeof(*g->order));
	g->groups = malloc((n ? n : 1) * sizeof(*g->groups));
	if (!g->order || !g->groups)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		g->order[i] = i;
	qsort_r(g->order, n, sizeof(*g->order), cmp_thread, g);
	g->ngroups = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || cmp_stack(g, g->order[i - 1], g->order[i]) != 0)
			g->groups[g->ngroups++] = (struct group){.start = i};
		g->groups[g->ngroups - 1].count++;
	}
	qsort_r(g->groups, g->ngroups, sizeof(*g->groups), cmp_group, g);
	return 0;
}

static const char *syscall_of(const struct thread_capture *tc, char buf[24])
{
	if (tc->syscall_nr < 0 || tc->state == 'R')
		return NULL;
	const char *name = attach_syscall_name(tc->syscall_nr);
	if (name)
		return name;
	snprintf(buf, 24, "%ld", tc->syscall_nr);
	return buf;
}

/* ---- text ---- */

static void text_thread(FILE *f, const struct thread_capture *tc, pid_t gil_holder)
{
	char comm[BUNDLE_NAME_TEXT_SIZE], nr[24];
	fprintf(f, "    %d \"%s\"  %c", (int)tc->tid, bundle_target_name(tc->comm, comm, sizeof(comm)),
		tc->state ? tc->state : '?');
	const char *sc = syscall_of(tc, nr);
	if (sc)
		fprintf(f, "  in %s", sc);
	if (tc->wchan[0]) {
		fputs("  wchan ", f);
		escape_text_put(tc->wchan, f);
	}
	if (tc->group_stopped)
		fputs("  [stopped by job control]", f);
	if (tc->not_stopped)
		fputs("  [read from /proc, not stopped]", f);
	if (gil_holder && tc->tid == gil_holder)
		fputs("  [holds the GIL]", f);
	fputc('\n', f);
}

static void write_text(FILE *f, const struct grouping *g, const struct symtab *st,
		       const struct dump_meta *meta)
{
	const struct process_capture *pc = g->pc;
	char name[256];
	fprintf(f, "Process %d", (int)pc->pid);
	if (meta->comm)
		fprintf(f, " \"%s\"", bundle_target_name(meta->comm, name, sizeof(name)));
	if (meta->exe)
		fprintf(f, " (%s)", escape_text(meta->exe, name, sizeof(name)));
	fprintf(f, ": %zu thread%s in %zu group%s, held at once for %llu us\n", pc->nthreads,
		pc->nthreads == 1 ? "" : "s", g->ngroups, g->ngroups == 1 ? "" : "s",
		(unsigned long long)(pc->hold_ns / 1000));
	size_t stackless = 0;
	for (size_t i = 0; i < pc->nthreads; i++)
		stackless += g->stacks[i].n == 0;
	if (stackless)
		fprintf(f, "%zu thread%s without a stack (the group says why)\n", stackless,
			stackless == 1 ? "" : "s");
	if (meta->interrupted)
		fprintf(f,
			"%zu thread%s stopped in a system call that a stop interrupts (each may have "
			"seen one EINTR, as under eu-stack or gdb; --no-interrupt-blocked reads them "
			"from /proc instead)\n",
			meta->interrupted, meta->interrupted == 1 ? "" : "s");
	/* Who waits on whom comes before any stack: a deadlock is the
	 * answer, the stacks are the evidence. */
	waits_print_summary(f, pc, &g->waits);
	for (size_t k = 0; k < g->ngroups; k++) {
		const struct group *gr = &g->groups[k];
		const struct unwound_stack *stack = &g->stacks[g->order[gr->start]];
		fprintf(f, "\n%zu thread%s:\n", gr->count, gr->count == 1 ? "" : "s");
		for (size_t i = 0; i < gr->count; i++) {
			size_t t = g->order[gr->start + i];
			text_thread(f, &pc->threads[t], meta->gil_holder);
			waits_print_thread(f, "      ", pc, &g->waits, t);
		}
		const char *why = snapshot_no_stack_reason(&pc->threads[g->order[gr->start]], stack);
		if (why)
			fprintf(f, "    (no stack: %s)\n", why);
		snapshot_print_stack(f, stack, st);
	}
}

/* ---- JSON ---- */

/* A thread's or the process's name, as redact.h lets it into the bundle. */
static void add_name(cJSON *o, const char *comm)
{
	char *name = bundle_target_string(TARGET_NAME, TARGET_FOR_JSON, comm, strlen(comm));
	cJSON_AddStringToObject(o, "comm", name ? name : BUNDLE_REDACTED);
	free(name);
}

static cJSON *json_thread(const struct thread_capture *tc, pid_t gil_holder)
{
	cJSON *t = cJSON_CreateObject();
	char state[2] = {tc->state ? tc->state : '?', 0}, nr[24];
	cJSON_AddNumberToObject(t, "tid", tc->tid);
	add_name(t, tc->comm);
	cJSON_AddStringToObject(t, "state", state);
	const char *sc = syscall_of(tc, nr);
	if (sc)
		cJSON_AddStringToObject(t, "syscall", sc);
	if (tc->wchan[0])
		cJSON_AddStringToObject(t, "wchan", tc->wchan);
	if (tc->group_stopped)
		cJSON_AddTrueToObject(t, "stopped_by_job_control");
	if (tc->not_stopped)
		cJSON_AddTrueToObject(t, "read_without_stop");
	if (gil_holder && tc->tid == gil_holder)
		cJSON_AddTrueToObject(t, "holds_gil");
	return t;
}

/* One entry per frame, inline frames included (innermost first), as the
 * text shows them. */
static void json_frames(cJSON *frames, const struct unwound_stack *stack, const struct symtab *st)
{
	for (size_t k = 0; k < stack->n; k++) {
		uint64_t pc = stack->pcs[k], lookup = frame_lookup_address(stack->pcs, k);
		const struct sym_location *loc = symtab_lookup(st, lookup);
		char addr[24], unnamed[320];
		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)pc);
		bool python = py_pc_is_python(pc);
		const char *module = loc && loc->module ? loc->module->path : python ? "python" : NULL;
		size_t n = loc && loc->nframes ? loc->nframes : 1;
		for (size_t i = 0; i < n; i++) {
			const struct sym_frame *fr = loc && loc->nframes ? &loc->frames[i] : NULL;
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "address", addr);
			if (fr && fr->function) {
				cJSON_AddStringToObject(o, "function", fr->function);
				if (!fr->inlined && !python)
					cJSON_AddNumberToObject(o, "offset",
								(double)(fr->function_offset + (pc - lookup)));
			} else if (sym_location_unnamed(loc, unnamed, sizeof(unnamed))) {
				cJSON_AddStringToObject(o, "unnamed", unnamed);
			}
			if (fr && fr->file) {
				cJSON_AddStringToObject(o, "file", fr->file);
				cJSON_AddNumberToObject(o, "line", fr->line);
			}
			if (fr && fr->inlined)
				cJSON_AddTrueToObject(o, "inlined");
			if (module)
				cJSON_AddStringToObject(o, "module", module);
			if (module && loc && loc->module && loc->module->build_id[0])
				cJSON_AddStringToObject(o, "build_id", loc->module->build_id);
			cJSON_AddItemToArray(frames, o);
		}
	}
}

static cJSON *json_doc(const struct grouping *g, const struct symtab *st,
		       const struct dump_meta *meta)
{
	const struct process_capture *pc = g->pc;
	cJSON *d = cJSON_CreateObject();
	char when[32];
	format_rfc3339_ms(pc->wall_ns, when);
	cJSON_AddNumberToObject(d, "pid", pc->pid);
	if (meta->comm)
		add_name(d, meta->comm);
	if (meta->exe)
		cJSON_AddStringToObject(d, "exe", meta->exe);
	cJSON_AddStringToObject(d, "captured_at", when);
	cJSON_AddNumberToObject(d, "held_us", (double)(pc->hold_ns / 1000));
	cJSON_AddNumberToObject(d, "threads", (double)pc->nthreads);
	cJSON_AddNumberToObject(d, "threads_interrupted_in_syscall", (double)meta->interrupted);
	cJSON_AddItemToObject(d, "deadlocks", waits_deadlocks_json(pc, &g->waits));
	cJSON *groups = cJSON_AddArrayToObject(d, "groups");
	for (size_t k = 0; k < g->ngroups; k++) {
		const struct group *gr = &g->groups[k];
		size_t first = g->order[gr->start];
		const struct unwound_stack *stack = &g->stacks[first];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToArray(groups, o);
		cJSON_AddNumberToObject(o, "count", (double)gr->count);
		cJSON *threads = cJSON_AddArrayToObject(o, "threads");
		for (size_t i = 0; i < gr->count; i++) {
			size_t t = g->order[gr->start + i];
			cJSON *thread = json_thread(&pc->threads[t], meta->gil_holder);
			waits_thread_json(thread, pc, &g->waits, t);
			cJSON_AddItemToArray(threads, thread);
		}
		const char *why = snapshot_no_stack_reason(&pc->threads[first], stack);
		if (why)
			cJSON_AddStringToObject(o, "no_stack", why);
		cJSON_AddBoolToObject(o, "truncated", stack->n && stack->truncated);
		json_frames(cJSON_AddArrayToObject(o, "frames"), stack, st);
	}
	return d;
}

/* A failed write's errno as dump_flush_error reports it. */
static int write_error(int e)
{
	return e == EPIPE || e == ENOSPC || e == EDQUOT ? -e : -EIO;
}

int dump_flush_error(FILE *f)
{
	/* The failing write's errno (a closed pipe, a full disk) says more
	 * than the stream's error flag. A stream whose failed write came
	 * earlier (a long line written past the buffer) flushes nothing now:
	 * a pipe whose reader left then shows POLLERR. */
	if (fflush(f) != 0)
		return write_error(errno);
	if (!ferror(f))
		return 0;
	struct pollfd p = {.fd = fileno(f), .events = POLLOUT};
	if (p.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLERR))
		return -EPIPE;
	return -EIO;
}

int dump_write(FILE *f, bool json, const struct process_capture *pc,
	       const struct unwound_stack *stacks, const struct symtab *st,
	       const struct dump_meta *meta)
{
	struct grouping g = {.pc = pc, .stacks = stacks};
	int r = group_threads(&g);
	if (r == 0)
		r = waits_build(pc, stacks, st, &g.waits);
	if (r == 0 && json) {
		/* cJSON reports no allocation failure along the way: a
		 * document that does not print is the one sign of it. */
		cJSON *d = json_doc(&g, st, meta);
		if (d && go_session_json(meta->go, d) < 0) {
			cJSON_Delete(d);
			d = NULL;
		}
		char *s = d ? json_print(d, true) : NULL;
		if (!s)
			r = -ENOMEM;
		else if (fputs(s, f) == EOF || fputc('\n', f) == EOF)
			r = write_error(errno);
		free(s);
		cJSON_Delete(d);
	} else if (r == 0) {
		write_text(f, &g, st, meta);
	}
	waits_free(&g.waits);
	free(g.order);
	free(g.groups);
	if (r == 0)
		r = dump_flush_error(f);
	return r;
}
