/* The Python part of a capture (py_session.h). */
#include "cmd/engine/py_session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/arrays.h"

/* Synthetic PCs: in the non-canonical hole of x86-64 addresses, where no
 * process maps anything and no kernel address lies, 16 apart so that a
 * caller's pc - 1 names the same frame. */
#define PY_PC_BASE   0x5059000000000000ull
#define PY_PC_STRIDE 16

struct py_session {
	struct interp *in;
	int status;
	uint32_t hexversion;
	uint64_t eval_start, eval_end;
	struct py_stacks *last; /* the last read's frames */
	int last_status;
	/* Sampling (py_session_refresh, py_session_amend). */
	uint64_t reads, reads_failed, samples_merged, samples_inconsistent;
	/* Why reading stopped during the capture (NULL: it did not). */
	const char *gave_up;
	/* One synthetic PC per distinct (function, file, line); the strings
	 * are copies, kept for the session. */
	struct py_pc {
		char *function, *file; /* as profiles show them (display_name) */
		char *qualname;	       /* as the interpreter has it */
		int line;
	} * pcs;
	size_t npcs, pcs_cap;
};

struct py_session *py_session_open(const struct attach_target *t, struct interp *in)
{
	struct process_capture pc = {0};
	if (attach_read_maps(t, &pc) < 0) {
		process_capture_release(&pc);
		return NULL;
	}
	/* Most targets map nothing called python: no round trip for them. */
	if (!memmem(pc.maps_text, pc.maps_len, "python3", 7)) {
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
		free(p->pcs[i].qualname);
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
		snprintf(v, sizeof(v), "%u.%u.%u", p->hexversion >> 24,
			 (p->hexversion >> 16) & 0xff, (p->hexversion >> 8) & 0xff);
		cJSON_AddStringToObject(o, "version", v);
	}
	cJSON_AddBoolToObject(o, "frames_readable", p->status == 0);
	if (p->status == -ENOTSUP)
		cJSON_AddStringToObject(
			o, "why",
			p->hexversion ? "no layout for this CPython version (3.11 is read)"
				      : "a CPython older than 3.11 (no Py_Version)");
	else if (p->status == -ENODATA)
		cJSON_AddStringToObject(o, "why",
					"no _PyRuntime among the symbols of its python executable "
					"or libpython (a static build, stripped)");
	else if (p->status == -ECHILD)
		cJSON_AddStringToObject(o, "why",
					"no sandboxed worker to read the interpreter's memory");
	else if (p->status < 0)
		cJSON_AddStringToObject(o, "why", strerror(-p->status));
}

/* A read that cost the worker (it timed out, died, or answered nonsense:
 * the interpreter's memory made it so) is not tried again: the worker's
 * restarts are few, and the capture's unwinding needs them. */
static void note_read(struct py_session *p, const struct interp_python *ip)
{
	p->last_status = ip->status;
	if (ip->status == -ECHILD || ip->status == -EBADMSG) {
		p->status = ip->status;
		p->gave_up = ip->status == -ECHILD
				     ? "a read of the frames lost the worker (too slow, or it died)"
				     : "the worker's answer made no sense";
	}
}

static void while_held(void *ctx, const struct process_capture *pc)
{
	struct py_session *p = ctx;
	py_stacks_free(p->last);
	p->last = NULL;
	if (p->status < 0)
		return;
	struct interp_python ip;
	if (interp_python(p->in, pc->maps_text, pc->maps_len, true, &ip) < 0) {
		p->last_status = -ENOMEM;
		return;
	}
	note_read(p, &ip);
	p->last = ip.stacks;
}

void py_session_arm(struct py_session *p, struct attach_options *opts)
{
	if (!p || p->status < 0)
		return;
	opts->while_held = while_held;
	opts->while_held_ctx = p;
}

/* A code object's qualified name as a profile shows it. Module-level code
 * ("<module>", "<lambda>", "<genexpr>") gets its module's name in front,
 * as Python itself dots names ("fixture.<module>"): pprof takes a bare
 * "<...>" for C++ template parameters and shows it as nothing at all. */
static char *display_name(const struct py_frame *f)
{
	if (f->function[0] != '<')
		return strdup(f->function);
	const char *base = strrchr(f->file, '/');
	base = base ? base + 1 : f->file;
	size_t len = strlen(base);
	if (len > 3 && strcmp(base + len - 3, ".py") == 0)
		len -= 3;
	char *out = NULL;
	if (asprintf(&out, "%.*s.%s", (int)len, base, f->function) < 0)
		return NULL;
	return out;
}

/* The synthetic PC of a frame: one per distinct (function, file, line). */
static uint64_t frame_pc(struct py_session *p, const struct py_frame *f, bool *oom)
{
	for (size_t i = p->npcs; i-- > 0;)
		if (p->pcs[i].line == f->line && strcmp(p->pcs[i].qualname, f->function) == 0 &&
		    strcmp(p->pcs[i].file, f->file) == 0)
			return PY_PC_BASE + i * PY_PC_STRIDE + PY_PC_STRIDE / 2;
	if (array_reserve(&p->pcs, &p->pcs_cap, p->npcs + 1, sizeof(*p->pcs), 64) < 0) {
		*oom = true;
		return 0;
	}
	struct py_pc e = {.function = display_name(f),
			  .file = strdup(f->file),
			  .qualname = strdup(f->function),
			  .line = f->line};
	if (!e.function || !e.file || !e.qualname) {
		free(e.function);
		free(e.file);
		free(e.qualname);
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

pid_t py_session_gil_holder(const struct py_session *p)
{
	for (size_t i = 0; p && p->last && i < p->last->nthreads; i++)
		if (p->last->threads[i].holds_gil)
			return (pid_t)p->last->threads[i].native_tid;
	return 0;
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

static bool has_python(const struct unwound_stack *s)
{
	for (size_t j = 0; j < s->n; j++)
		if (py_pc_is_python(s->pcs[j]))
			return true;
	return false;
}

/* How many of s's frames are the evaluation loop's. */
static size_t eval_frames(const struct py_session *p, const struct unwound_stack *s)
{
	size_t n = 0;
	for (size_t j = 0; j < s->n; j++) {
		uint64_t a = j ? s->pcs[j] - 1 : s->pcs[j];
		n += a >= p->eval_start && a < p->eval_end;
	}
	return n;
}

static size_t python_groups(const struct py_thread *t)
{
	size_t n = 0;
	for (size_t k = 0; k < t->nframes; k++)
		n += t->frames[k].entry || k + 1 == t->nframes;
	return n;
}

/* Merge t's frames into s (out: scratch of UNWIND_MAX_FRAMES_DEFAULT).
 * false on ENOMEM. */
static bool merge_one(struct py_session *p, const struct py_thread *t, struct unwound_stack *s,
		      uint64_t *out)
{
	size_t n = 0, next = 0;
	bool cut = false, oom = false;
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
		return false;
	memcpy(s->pcs, out, n * sizeof(*out));
	s->n = n;
	s->truncated = s->truncated || cut || t->truncated;
	return true;
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
	for (size_t i = 0; i < pc->nthreads; i++) {
		const struct py_thread *t = thread_of(p, pc->threads[i].tid);
		struct unwound_stack *s = &stacks[i];
		if (!t || !t->nframes || !s->n || has_python(s))
			continue;
		if (!merge_one(p, t, s, out))
			break;
		merged++;
	}
	free(out);
	return merged;
}

int py_session_refresh(struct py_session *p, const char *maps_text, size_t maps_len)
{
	if (!p || p->status < 0)
		return 0;
	py_stacks_free(p->last);
	p->last = NULL;
	struct interp_python ip;
	int r = interp_python(p->in, maps_text, maps_len, true, &ip);
	if (r < 0)
		return r;
	p->reads++;
	note_read(p, &ip);
	p->last = ip.stacks;
	if (ip.status < 0) {
		p->reads_failed++;
		py_stacks_free(p->last);
		p->last = NULL;
	}
	return 0;
}

void py_session_amend(struct py_session *p, pid_t tid, struct unwound_stack *stack)
{
	if (!p || !p->last || !p->eval_start || !stack->n || has_python(stack))
		return;
	size_t loops = eval_frames(p, stack);
	if (!loops)
		return; /* not in Python at that moment (or a native-only thread) */
	const struct py_thread *t = thread_of(p, tid);
	if (!t || t->moved || !t->nframes || python_groups(t) != loops) {
		p->samples_inconsistent++;
		return;
	}
	uint64_t out[UNWIND_MAX_FRAMES_DEFAULT];
	if (merge_one(p, t, stack, out))
		p->samples_merged++;
}

void py_session_sampling_json(const struct py_session *p, cJSON *capture)
{
	if (!p || (p->status < 0 && !p->gave_up))
		return;
	cJSON *o = cJSON_AddObjectToObject(capture, "python");
	if (p->gave_up)
		cJSON_AddStringToObject(o, "gave_up", p->gave_up);
	cJSON_AddNumberToObject(o, "reads", (double)p->reads);
	cJSON_AddNumberToObject(o, "reads_failed", (double)p->reads_failed);
	cJSON_AddNumberToObject(o, "samples_with_python_frames", (double)p->samples_merged);
	cJSON_AddNumberToObject(o, "samples_inconsistent", (double)p->samples_inconsistent);
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
