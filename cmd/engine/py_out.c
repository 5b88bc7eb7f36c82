/* The Python part of a capture (py_out.h). */
#include "cmd/engine/py_out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/arrays.h"

/* Synthetic PCs: in the non-canonical hole of x86-64 addresses, where no
 * process maps anything and no kernel address lies, 16 apart so that a
 * caller's pc - 1 names the same frame. */
#define PY_PC_BASE 0x5059000000000000ull
#define PY_PC_STRIDE 16

struct py_session {
	struct interp *in;
	int status;
	uint32_t hexversion;
	uint64_t eval_start, eval_end;
	struct py_stacks *last; /* the last armed capture's frames */
	int last_status;
	/* One synthetic PC per distinct (function, file, line); the strings
	 * are copies, kept for the session. */
	struct py_pc {
		char *function, *file;
		int line;
	} *pcs;
	size_t npcs, pcs_cap;
};

struct py_session *py_session_open(const struct attach_target *t, struct interp *in)
{
	struct process_capture pc = {0};
	if (attach_read_maps(t, &pc) < 0) {
		process_capture_release(&pc);
		return NULL;
	}
	struct interp_python ip;
	int r = interp_python(in, pc.maps_text, pc.maps_len, false, &ip);
	process_capture_release(&pc);
	if (r == 0)
		py_stacks_free(ip.stacks); /* none asked for: an empty list */
	if (r < 0 || ip.status == -ENOENT)
		return NULL;
	struct py_session *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->in = in;
	p->status = ip.status;
	p->hexversion = ip.hexversion;
	p->eval_start = ip.eval_start;
	p->eval_end = ip.eval_end;
	p->last_status = -ENODATA;
	return p;
}

void py_session_free(struct py_session *p)
{
	if (!p)
		return;
	py_stacks_free(p->last);
	for (size_t i = 0; i < p->npcs; i++) {
		free(p->pcs[i].function);
		free(p->pcs[i].file);
	}
	free(p->pcs);
	free(p);
}

void py_session_describe(const struct py_session *p, cJSON *target)
{
	if (!p)
		return;
	cJSON *o = cJSON_AddObjectToObject(target, "python");
	if (p->hexversion) {
		char v[32];
		snprintf(v, sizeof(v), "%u.%u.%u", p->hexversion >> 24, (p->hexversion >> 16) & 0xff,
			 (p->hexversion >> 8) & 0xff);
		cJSON_AddStringToObject(o, "version", v);
	}
	cJSON_AddBoolToObject(o, "frames_readable", p->status == 0);
	if (p->status == -ENOTSUP)
		cJSON_AddStringToObject(o, "why", p->hexversion ? "no layout for this CPython version (3.11 is read)"
								: "a CPython older than 3.11 (no Py_Version)");
	else if (p->status == -ECHILD)
		cJSON_AddStringToObject(o, "why", "no sandboxed worker to read the interpreter's memory");
	else if (p->status < 0)
		cJSON_AddStringToObject(o, "why", strerror(-p->status));
}

static void while_held(void *ctx, const struct process_capture *pc)
{
	struct py_session *p = ctx;
	py_stacks_free(p->last);
	p->last = NULL;
	struct interp_python ip;
	if (interp_python(p->in, pc->maps_text, pc->maps_len, true, &ip) < 0) {
		p->last_status = -ENOMEM;
		return;
	}
	p->last_status = ip.status;
	p->last = ip.stacks;
}

void py_session_arm(struct py_session *p, struct attach_options *opts)
{
	if (!p || p->status < 0)
		return;
	opts->while_held = while_held;
	opts->while_held_ctx = p;
}

/* The synthetic PC of a frame: one per distinct (function, file, line). */
static uint64_t frame_pc(struct py_session *p, const struct py_frame *f, bool *oom)
{
	for (size_t i = p->npcs; i-- > 0;)
		if (p->pcs[i].line == f->line && strcmp(p->pcs[i].function, f->function) == 0 &&
		    strcmp(p->pcs[i].file, f->file) == 0)
			return PY_PC_BASE + i * PY_PC_STRIDE + PY_PC_STRIDE / 2;
	if (array_reserve(&p->pcs, &p->pcs_cap, p->npcs + 1, sizeof(*p->pcs), 64) < 0) {
		*oom = true;
		return 0;
	}
	struct py_pc e = {.function = strdup(f->function), .file = strdup(f->file), .line = f->line};
	if (!e.function || !e.file) {
		free(e.function);
		free(e.file);
		*oom = true;
		return 0;
	}
	p->pcs[p->npcs] = e;
	return PY_PC_BASE + p->npcs++ * PY_PC_STRIDE + PY_PC_STRIDE / 2;
}

static const struct py_thread *thread_of(const struct py_session *p, pid_t tid)
{
	for (size_t i = 0; p->last && i < p->last->nthreads; i++)
		if (p->last->threads[i].native_tid == (uint64_t)tid)
			return &p->last->threads[i];
	return NULL;
}

bool py_session_holds_gil(const struct py_session *p, pid_t tid)
{
	const struct py_thread *t = p ? thread_of(p, tid) : NULL;
	return t && t->holds_gil;
}

/* Emit the Python frames of the group starting at *next (up to and
 * including the next entry frame) into out. */
static void emit_group(struct py_session *p, const struct py_thread *t, size_t *next, uint64_t *out,
		       size_t *n, bool *cut, bool *oom)
{
	while (*next < t->nframes) {
		const struct py_frame *f = &t->frames[(*next)++];
		uint64_t pc = frame_pc(p, f, oom);
		if (*oom)
			return;
		if (*n < UNWIND_MAX_FRAMES_DEFAULT)
			out[(*n)++] = pc;
		else
			*cut = true;
		if (f->entry)
			return;
	}
}

size_t py_session_merge(struct py_session *p, const struct process_capture *pc,
			struct unwound_stack *stacks)
{
	size_t merged = 0;
	if (!p || !p->last || !p->eval_start)
		return 0;
	uint64_t *out = malloc(UNWIND_MAX_FRAMES_DEFAULT * sizeof(*out));
	if (!out)
		return 0;
	bool oom = false;
	for (size_t i = 0; i < pc->nthreads && !oom; i++) {
		const struct py_thread *t = thread_of(p, pc->threads[i].tid);
		struct unwound_stack *s = &stacks[i];
		if (!t || !t->nframes || !s->n)
			continue;
		size_t n = 0, next = 0;
		bool cut = false;
		for (size_t j = 0; j < s->n && !oom; j++) {
			uint64_t a = j ? s->pcs[j] - 1 : s->pcs[j];
			if (a >= p->eval_start && a < p->eval_end && next < t->nframes) {
				emit_group(p, t, &next, out, &n, &cut, &oom);
				continue;
			}
			if (n < UNWIND_MAX_FRAMES_DEFAULT)
				out[n++] = s->pcs[j];
			else
				cut = true;
		}
		/* Frames the native stack showed no loop for (its unwinding
		 * stopped short): they are still where the thread is, below
		 * whatever was unwound. */
		while (next < t->nframes && !oom)
			emit_group(p, t, &next, out, &n, &cut, &oom);
		if (oom)
			break;
		memcpy(s->pcs, out, n * sizeof(*out));
		s->n = n;
		s->truncated = s->truncated || cut || t->truncated;
		merged++;
	}
	free(out);
	return merged;
}

bool py_pc_is_python(uint64_t pc)
{
	return pc >> 48 == PY_PC_BASE >> 48;
}

static size_t name_python(void *arg, uint64_t addr, struct sym_frame *out, size_t max)
{
	struct py_session *p = arg;
	if (addr < PY_PC_BASE || !max)
		return 0;
	uint64_t i = (addr - PY_PC_BASE) / PY_PC_STRIDE;
	if (i >= p->npcs)
		return 0;
	memset(out, 0, sizeof(*out));
	out->function = p->pcs[i].function;
	out->file = p->pcs[i].file;
	out->line = p->pcs[i].line;
	return 1;
}

int py_session_name_unnamed(struct py_session *p, struct symtab *st)
{
	return p && p->npcs ? symtab_name_unnamed(st, name_python, p) : 0;
}
