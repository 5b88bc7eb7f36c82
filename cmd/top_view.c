/* top's screen: each refresh's samples tallied by function (or function
 * and line), since top started and over the last window, and every
 * thread's CPU% and where it is; rendered as text, escaped. */
#include "cmd/top_view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/text.h"
#include "cmd/engine/profile_out.h"
#include "cmd/engine/stackagg.h"
#include "symbolize/arrays.h"
#include "symbolize/worker/interp.h"
#include "symbolize/worker/symtab.h"

#define MAX_ROWS 20
#define MAX_THREAD_ROWS 24

/* A function (or function and line) with its samples: in the last
 * refresh ("recent", for the percentages) and since top started (for
 * the times). */
struct fn_total {
	char *key;
	uint64_t self_ns, total_ns;               /* since top started */
	uint64_t recent_self_ns, recent_total_ns; /* last refresh */
};

struct tally {
	struct fn_total *v;
	size_t n, cap;
};

struct thread_now {
	pid_t tid;
	char comm[17];
	char state;
	uint64_t leaf; /* lookup address of its latest frame; 0: none */
	/* Its on-CPU time (schedstat) at the latest tick, and at the last
	 * refresh (or when first seen), and the time of the ticks that read
	 * them: CPU% is the kernel's own count over the wall time between,
	 * not a share of samples.
	 * cpu_pct < 0: not known yet. */
	uint64_t cpu_ns, cpu_ns_base, base_at_ns;
	bool have_base;
	double cpu_pct;
};

struct top_view {
	pid_t pid;
	char comm[64];
	struct thread_now *threads, *scratch;
	size_t nthreads, threads_cap, scratch_cap;
	uint64_t recent_cpu_ns; /* this refresh's CPU time in samples */
	uint64_t recent_samples;
	uint64_t cpu_since_start_ns; /* every refresh's CPU time added up */
	struct tally by_function, by_line;
	struct view view;
	bool tty;
};

/* The threads as the engine's latest tick saw them, each keeping its
 * CPU% base from the refresh before (a thread new since starts one). */
static int take_threads(struct top_view *t, const struct capture_live *l, uint64_t now)
{
	size_t n = l->threads ? l->threads->nthreads : 0;
	if (array_reserve(&t->scratch, &t->scratch_cap, n ? n : 1, sizeof(*t->scratch), 64) < 0)
		return -ENOMEM;
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		const struct thread_capture *tc = &l->threads->threads[i];
		if (tc->outcome == THREAD_GONE)
			continue;
		struct thread_now *was = NULL;
		for (size_t j = 0; j < t->nthreads && !was; j++)
			if (t->threads[j].tid == tc->tid)
				was = &t->threads[j];
		struct thread_now *c = &t->scratch[kept++];
		*c = was ? *was : (struct thread_now){.tid = tc->tid, .cpu_pct = -1};
		snprintf(c->comm, sizeof(c->comm), "%s", tc->comm);
		c->state = tc->state;
		c->leaf = l->stacks && l->stacks[i].n ? l->stacks[i].pcs[0] : 0;
		if (tc->cpu_ns)
			c->cpu_ns = tc->cpu_ns;
		c->cpu_pct = -1;
		if (c->have_base && now && now > c->base_at_ns && c->cpu_ns >= c->cpu_ns_base)
			c->cpu_pct = 100.0 * (double)(c->cpu_ns - c->cpu_ns_base) /
				     (double)(now - c->base_at_ns);
		if (c->cpu_ns && now) {
			c->have_base = true;
			c->cpu_ns_base = c->cpu_ns;
			c->base_at_ns = now;
		}
	}
	struct thread_now *tmp = t->threads;
	size_t tcap = t->threads_cap;
	t->threads = t->scratch;
	t->threads_cap = t->scratch_cap;
	t->scratch = tmp;
	t->scratch_cap = tcap;
	t->nthreads = kept;
	return 0;
}

/* The row a frame counts for: its function (the outermost frame of the
 * PC's inline chain: the function the code belongs to), or with lines the
 * innermost frame and its source line, "function (file.c:42)". Unnamed
 * code is module+0xOFF, as everywhere. */
static const char *key_of(const struct symtab *st, uint64_t addr, bool lines, char *buf, size_t size)
{
	const struct sym_location *loc = symtab_lookup(st, addr);
	if (loc && loc->nframes) {
		const struct sym_frame *fr = &loc->frames[lines ? 0 : loc->nframes - 1];
		if (fr->function && lines && fr->file) {
			const char *base = strrchr(fr->file, '/');
			snprintf(buf, size, "%s (%s:%d)", fr->function, base ? base + 1 : fr->file, fr->line);
			return buf;
		}
		if (fr->function)
			return fr->function;
	}
	if (sym_location_unnamed(loc, buf, size))
		return buf;
	snprintf(buf, size, "0x%llx", (unsigned long long)addr);
	return buf;
}

static struct fn_total *tally_find(struct tally *t, const char *key)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i].key, key) == 0)
			return &t->v[i];
	if (array_reserve(&t->v, &t->cap, t->n + 1, sizeof(*t->v), 64) < 0)
		return NULL;
	char *k = strdup(key);
	if (!k)
		return NULL;
	t->v[t->n] = (struct fn_total){.key = k};
	return &t->v[t->n++];
}

static void tally_free(struct tally *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].key);
	free(t->v);
}

struct tally_pass {
	struct tally *t;
	const struct symtab *st;
	bool lines;
	char (*keys)[160];
};

/* One sampled stack into the tally: self for the leaf's row, total once
 * per stack for every row on it (recursion counts once). Its first 256
 * frames: deeper ones are recursion already counted, or too deep to read
 * on a terminal. */
static int tally_stack(void *ctx, const uint64_t *pcs, size_t npcs, const char *labels,
		       const int64_t *values)
{
	(void)labels;
	struct tally_pass *p = ctx;
	uint64_t w = values[1] > 0 ? (uint64_t)values[1] : 0;
	size_t n = npcs < 256 ? npcs : 256;
	for (size_t k = 0; k < n; k++) {
		char *slot = p->keys[k];
		const char *key = key_of(p->st, frame_lookup_address(pcs, k), p->lines, slot, 160);
		if (key != slot)
			snprintf(slot, 160, "%s", key);
		bool seen = false;
		for (size_t j = 0; j < k && !seen; j++)
			seen = strcmp(p->keys[j], slot) == 0;
		struct fn_total *f = seen ? NULL : tally_find(p->t, slot);
		if (!f)
			continue;
		f->total_ns += w;
		f->recent_total_ns += w;
		if (k == 0) {
			f->self_ns += w;
			f->recent_self_ns += w;
		}
	}
	return 0;
}

/* Add this refresh's samples to t. */
static void tally_refresh(struct tally *t, const struct stackagg *cpu, const struct symtab *st, bool lines)
{
	for (size_t i = 0; i < t->n; i++)
		t->v[i].recent_self_ns = t->v[i].recent_total_ns = 0;
	struct tally_pass p = {.t = t, .st = st, .lines = lines, .keys = malloc(256 * sizeof(*p.keys))};
	if (!p.keys)
		return;
	stackagg_foreach(cpu, tally_stack, &p);
	free(p.keys);
}

/* The CPU time and samples of a refresh, for the percentages. */
static int sum_samples(void *ctx, const uint64_t *pcs, size_t npcs, const char *labels,
		       const int64_t *values)
{
	(void)pcs;
	(void)npcs;
	(void)labels;
	struct top_view *t = ctx;
	t->recent_samples += values[0] > 0 ? (uint64_t)values[0] : 0;
	t->recent_cpu_ns += values[1] > 0 ? (uint64_t)values[1] : 0;
	return 0;
}

static enum sort_key sort_by;

static uint64_t sort_value(const struct fn_total *f, enum sort_key k)
{
	switch (k) {
	case SORT_SELF:
		return f->recent_self_ns;
	case SORT_TOTAL:
		return f->recent_total_ns;
	case SORT_SELF_TIME:
		return f->self_ns;
	default:
		return f->total_ns;
	}
}

static int cmp_rows(const void *a, const void *b)
{
	const struct fn_total *x = *(const struct fn_total *const *)a, *y = *(const struct fn_total *const *)b;
	uint64_t vx = sort_value(x, sort_by), vy = sort_value(y, sort_by);
	if (vx != vy)
		return vx < vy ? 1 : -1;
	/* Ties: the other measure of the same kind, then the name. */
	enum sort_key other = sort_by == SORT_SELF ? SORT_TOTAL : sort_by == SORT_TOTAL ? SORT_SELF
			      : sort_by == SORT_SELF_TIME ? SORT_TOTAL_TIME : SORT_SELF_TIME;
	vx = sort_value(x, other);
	vy = sort_value(y, other);
	if (vx != vy)
		return vx < vy ? 1 : -1;
	return strcmp(x->key, y->key);
}

static int cmp_threads(const void *a, const void *b)
{
	const struct thread_now *x = *(const struct thread_now *const *)a,
				*y = *(const struct thread_now *const *)b;
	if (x->cpu_pct != y->cpu_pct)
		return x->cpu_pct < y->cpu_pct ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void render_functions(struct top_view *t)
{
	double cpu = (double)t->recent_cpu_ns;
	struct tally *tl = t->view.lines ? &t->by_line : &t->by_function;
	const struct fn_total **rows = malloc((tl->n ? tl->n : 1) * sizeof(*rows));
	if (!rows)
		return;
	for (size_t i = 0; i < tl->n; i++)
		rows[i] = &tl->v[i];
	sort_by = t->view.sort;
	qsort(rows, tl->n, sizeof(*rows), cmp_rows);
	static const char *const marks[] = {"SELF%", "TOTAL%", "SELF_TIME", "TOTAL_TIME"};
	char head[4][16];
	for (int i = 0; i < 4; i++)
		snprintf(head[i], sizeof(head[i]), "%s%s", (int)t->view.sort == i ? "*" : "", marks[i]);
	printf("%7s %7s %10s %10s  %s\n", head[0], head[1], head[2], head[3],
	       t->view.lines ? "FUNCTION (FILE:LINE)" : "FUNCTION");
	char e1[4 * 256 + 1];
	size_t shown = 0;
	for (size_t i = 0; i < tl->n && shown < MAX_ROWS; i++) {
		const struct fn_total *f = rows[i];
		if (sort_by <= SORT_TOTAL && f->recent_total_ns == 0)
			break;
		printf("%6.1f%% %6.1f%% %9.2fs %9.2fs  %s\n",
		       cpu > 0 ? 100.0 * (double)f->recent_self_ns / cpu : 0,
		       cpu > 0 ? 100.0 * (double)f->recent_total_ns / cpu : 0, (double)f->self_ns / 1e9,
		       (double)f->total_ns / 1e9, escape_text(f->key, e1, sizeof(e1)));
		shown++;
	}
	if (shown == 0)
		puts("    (no thread was running)");
	free(rows);
}

static void render_threads(struct top_view *t, const struct symtab *st, size_t max)
{
	const struct thread_now **rows = malloc((t->nthreads ? t->nthreads : 1) * sizeof(*rows));
	if (!rows)
		return;
	for (size_t i = 0; i < t->nthreads; i++)
		rows[i] = &t->threads[i];
	if (t->view.threads)
		qsort(rows, t->nthreads, sizeof(*rows), cmp_threads);
	printf("%8s %-16s %5s %6s  %s\n", "TID", "THREAD", "STATE", "CPU%",
	       "NOW IN (CPU%: schedstat, last second)");
	char e1[4 * 256 + 1], e2[4 * 64 + 1], buf[160];
	for (size_t i = 0; i < t->nthreads && i < max; i++) {
		const struct thread_now *n = rows[i];
		char pct[16] = "     -";
		if (n->cpu_pct >= 0)
			snprintf(pct, sizeof(pct), "%5.0f%%", n->cpu_pct);
		printf("%8d %-16s %5c %6s  %s\n", (int)n->tid, escape_text(n->comm, e2, sizeof(e2)),
		       n->state ? n->state : '?', pct,
		       escape_text(key_of(st, n->leaf, t->view.lines, buf, sizeof(buf)), e1, sizeof(e1)));
	}
	if (t->nthreads > max)
		printf("   ... %zu more (t: the threads view)\n", t->nthreads - max);
	free(rows);
}

/* What the view cannot show or did not get, each in one line. */
static void render_notes(const struct capture_live *l)
{
	if (l->perf_refused)
		printf("CPU samples from ptrace stops: perf events refused (%s)\n", strerror(-l->perf_refused));
	if (l->lost)
		printf("%llu samples lost by the kernel (its ring was full)\n", (unsigned long long)l->lost);
	const cJSON *py = cJSON_GetObjectItem(l->target, "python");
	if (py && !cJSON_IsTrue(cJSON_GetObjectItem(py, "frames_readable"))) {
		const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(py, "version"));
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(py, "why"));
		printf("Python%s%s frames not shown: %s\n", v ? " " : "", v ? v : "", why ? why : "unreadable");
	}
}

static void render(struct top_view *t, const struct capture_live *l)
{
	if (t->tty)
		fputs("\033[H\033[2J", stdout);
	/* Names and paths are the target's: escaped (bundle/text.h), never
	 * handed to the terminal raw. */
	char e2[4 * 64 + 1], stops[96] = "no stops";
	if (l->stops)
		snprintf(stops, sizeof(stops), "%llu stops, longest %.1f ms", (unsigned long long)l->stops,
			 (double)l->hold_max_ns / 1e6);
	double secs = l->window_ns ? (double)l->window_ns / 1e9 : 1;
	printf("diag-attach top  pid %d (%s)  %s  %.0f CPU samples/s  %.2fs CPU since start  %zu threads  %s\n",
	       (int)t->pid, escape_text(t->comm, e2, sizeof(e2)), l->cpu_engine,
	       (double)t->recent_samples / secs, (double)t->cpu_since_start_ns / 1e9, t->nthreads, stops);
	render_notes(l);
	if (t->tty)
		printf("keys: 1-4 sort by the column (* marks it)  l %s  t %s  q quit\n",
		       t->view.lines ? "functions" : "file:line", t->view.threads ? "functions view" : "threads view");
	putchar('\n');
	if (t->view.threads) {
		render_threads(t, l->symbols, SIZE_MAX);
	} else {
		render_functions(t);
		putchar('\n');
		render_threads(t, l->symbols, MAX_THREAD_ROWS);
	}
	fflush(stdout);
}

bool top_view_take_key(struct top_view *t, char key)
{
	struct view *v = &t->view;
	if (key >= '1' && key <= '4')
		v->sort = (enum sort_key)(key - '1');
	else if (key == 'l' || key == 'L')
		v->lines = !v->lines;
	else if (key == 't' || key == 'T')
		v->threads = !v->threads;
	else
		return false;
	return true;
}

struct top_view *top_view_new(pid_t pid, const struct view *v, bool tty)
{
	struct top_view *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = pid;
	t->view = *v;
	t->tty = tty;
	return t;
}

int top_view_refresh(struct top_view *t, const struct capture_live *l)
{
	const char *comm = cJSON_GetStringValue(cJSON_GetObjectItem(l->target, "comm"));
	snprintf(t->comm, sizeof(t->comm), "%s", comm ? comm : "?");
	t->recent_cpu_ns = t->recent_samples = 0;
	stackagg_foreach(l->cpu, sum_samples, t);
	t->cpu_since_start_ns += t->recent_cpu_ns;
	/* CPU% over the time between the ticks that read the schedstats. */
	if (take_threads(t, l, l->threads ? l->threads->wall_ns : 0) < 0)
		return -ENOMEM;
	tally_refresh(&t->by_function, l->cpu, l->symbols, false);
	tally_refresh(&t->by_line, l->cpu, l->symbols, true);
	render(t, l);
	return 0;
}

void top_view_free(struct top_view *t)
{
	if (!t)
		return;
	free(t->threads);
	free(t->scratch);
	tally_free(&t->by_function);
	tally_free(&t->by_line);
	free(t);
}
