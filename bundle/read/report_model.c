/* report_model: see report_model.h. */
#include "bundle/read/report_model.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- function tables ---- */

/* A small open-addressing map from name pointer contents to index. The
 * tables are built once per report, so simplicity beats cleverness. */
struct name_map {
	size_t cap;
	const char **keys;
	size_t *vals;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int name_map_init(struct name_map *m, size_t expect)
{
	m->cap = 64;
	while (m->cap < expect * 2)
		m->cap *= 2;
	m->keys = calloc(m->cap, sizeof(*m->keys));
	m->vals = calloc(m->cap, sizeof(*m->vals));
	return m->keys && m->vals ? 0 : -ENOMEM;
}

static void name_map_release(struct name_map *m)
{
	free(m->keys);
	free(m->vals);
}

/* Slot of key: *found tells whether it is there. The map never fills up:
 * callers size it for every distinct name they can insert. */
static size_t name_map_slot(const struct name_map *m, const char *key, bool *found)
{
	size_t i = hash_str(key) & (m->cap - 1);
	while (m->keys[i]) {
		if (strcmp(m->keys[i], key) == 0) {
			*found = true;
			return i;
		}
		i = (i + 1) & (m->cap - 1);
	}
	*found = false;
	return i;
}

static int cmp_fn_share(const void *a, const void *b)
{
	const struct fn_share *x = a, *y = b;
	if (x->flat != y->flat)
		return x->flat < y->flat ? 1 : -1;
	if (x->cum != y->cum)
		return x->cum < y->cum ? 1 : -1;
	return strcmp(x->name, y->name);
}

int fn_table_build(const struct bundle_profile *p, int64_t tid, struct fn_table *ret)
{
	struct fn_table t = {0};
	size_t maxnames = 0;
	for (size_t i = 0; i < p->nsamples; i++)
		maxnames += p->samples[i].nframes;
	t.value_index = p->nvalues ? p->nvalues - 1 : 0;
	t.unit = p->nvalues ? p->value_unit[t.value_index] : "";
	struct name_map m;
	/* last_sample: which sample last added to cum, so recursion counts once. */
	size_t *last_sample = calloc(maxnames + 1, sizeof(*last_sample));
	t.fns = calloc(maxnames + 1, sizeof(*t.fns));
	if (name_map_init(&m, maxnames) < 0 || !last_sample || !t.fns) {
		name_map_release(&m);
		free(last_sample);
		free(t.fns);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct bundle_sample *s = &p->samples[i];
		if (tid >= 0 && s->tid != tid)
			continue;
		if (!p->nvalues)
			break;
		int64_t v = s->values[t.value_index];
		t.total += v;
		t.samples += s->values[0];
		for (size_t k = 0; k < s->nframes; k++) {
			bool found;
			size_t slot = name_map_slot(&m, s->frames[k].function, &found);
			size_t idx;
			if (!found) {
				idx = t.nfns++;
				m.keys[slot] = s->frames[k].function;
				m.vals[slot] = idx;
				t.fns[idx].name = s->frames[k].function;
			} else {
				idx = m.vals[slot];
			}
			if (k == 0)
				t.fns[idx].flat += v;
			if (last_sample[idx] != i + 1) {
				last_sample[idx] = i + 1;
				t.fns[idx].cum += v;
			}
		}
	}
	name_map_release(&m);
	free(last_sample);
	qsort(t.fns, t.nfns, sizeof(*t.fns), cmp_fn_share);
	*ret = t;
	return 0;
}

void fn_table_release(struct fn_table *t)
{
	free(t->fns);
	memset(t, 0, sizeof(*t));
}

const struct fn_share *fn_table_find(const struct fn_table *t, const char *name)
{
	for (size_t i = 0; i < t->nfns; i++)
		if (strcmp(t->fns[i].name, name) == 0)
			return &t->fns[i];
	return NULL;
}

/* ---- thread groups ---- */

static char *stack_key(const struct bundle_frame *f, size_t n)
{
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(f[i].function) + 1;
	char *k = malloc(len), *p = k;
	if (!k)
		return NULL;
	*p = '\0';
	for (size_t i = n; i-- > 0;) {
		size_t l = strlen(f[i].function);
		memcpy(p, f[i].function, l);
		p += l;
		if (i)
			*p++ = ';';
	}
	*p = '\0';
	return k;
}

/* threads.txt: "Thread TID "comm" (state S)" optionally followed by
 * "    in syscall: NAME  wchan: FN" (either part may be missing). The
 * profile has no wait channel, so it comes from here. */
static void find_wait(const char *txt, int64_t tid, char **syscall, char **wchan)
{
	char head[48];
	snprintf(head, sizeof(head), "Thread %lld ", (long long)tid);
	for (const char *p = txt; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, head, strlen(head)) != 0)
			continue;
		const char *nl = strchr(p, '\n');
		if (!nl)
			return;
		const char *l = nl + 1;
		const char *end = strchr(l, '\n');
		if (!end)
			end = l + strlen(l);
		while (l < end && *l == ' ')
			l++;
		if (*l == '#')
			return;
		const char *sc = strstr(l, "in syscall: "), *wc = strstr(l, "wchan: ");
		if (sc && sc < end) {
			sc += strlen("in syscall: ");
			size_t n = strcspn(sc, " \n");
			*syscall = strndup(sc, n);
		}
		if (wc && wc < end) {
			wc += strlen("wchan: ");
			size_t n = strcspn(wc, " \n");
			*wchan = strndup(wc, n);
		}
		return;
	}
}

static int cmp_group(const void *a, const void *b)
{
	const struct thread_group *x = a, *y = b;
	if (x->nthreads != y->nthreads)
		return x->nthreads < y->nthreads ? 1 : -1;
	return x->threads[0].tid < y->threads[0].tid ? -1 : x->threads[0].tid > y->threads[0].tid;
}

int thread_groups_build(struct bundle_reader *r, const char *prefix, struct thread_group **ret,
			size_t *ret_n)
{
	char name[512];
	snprintf(name, sizeof(name), "%sthreads.pprof", prefix);
	const struct bundle_profile *p;
	int e = bundle_reader_profile(r, name, &p);
	if (e < 0)
		return e;
	char *txt = NULL;
	size_t txtlen;
	snprintf(name, sizeof(name), "%sthreads.txt", prefix);
	if (bundle_reader_read(r, name, &txt, &txtlen) < 0)
		txt = NULL;
	struct thread_group *g = calloc(p->nsamples + 1, sizeof(*g));
	size_t ng = 0;
	if (!g) {
		free(txt);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct bundle_sample *s = &p->samples[i];
		char *key = stack_key(s->frames, s->nframes);
		if (!key) {
			e = -ENOMEM;
			break;
		}
		size_t gi;
		for (gi = 0; gi < ng; gi++)
			if (strcmp(g[gi].key, key) == 0)
				break;
		if (gi == ng) {
			g[ng] = (struct thread_group){
				.frames = s->frames, .nframes = s->nframes, .key = key};
			g[ng].threads = calloc(p->nsamples, sizeof(*g[ng].threads));
			ng++;
			if (!g[gi].threads) {
				e = -ENOMEM;
				break;
			}
		} else {
			free(key);
		}
		struct thread_member *m = &g[gi].threads[g[gi].nthreads++];
		*m = (struct thread_member){
			.tid = s->tid, .comm = s->thread_comm, .state = s->state};
		if (txt && s->tid >= 0)
			find_wait(txt, s->tid, &m->syscall, &m->wchan);
	}
	free(txt);
	if (e < 0) {
		thread_groups_free(g, ng);
		return e;
	}
	qsort(g, ng, sizeof(*g), cmp_group);
	*ret = g;
	*ret_n = ng;
	return 0;
}

void thread_groups_free(struct thread_group *g, size_t n)
{
	if (!g)
		return;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < g[i].nthreads; k++) {
			free(g[i].threads[k].syscall);
			free(g[i].threads[k].wchan);
		}
		free(g[i].threads);
		free(g[i].key);
	}
	free(g);
}

/* ---- goroutines ---- */

static void goroutine_group_release(struct goroutine_group *g)
{
	for (size_t i = 0; i < g->nframes; i++)
		free(g->frames[i]);
	free(g->frames);
	free(g->reason);
	free(g->key);
}

/* "chan receive, 5 minutes" -> "chan receive"; the duration differs per
 * goroutine and would split groups that are really one. */
static char *clean_reason(const char *s, size_t n)
{
	char *r = strndup(s, n);
	if (!r)
		return NULL;
	char *c = strstr(r, " minutes");
	if (c) {
		char *comma = c;
		while (comma > r && *comma != ',')
			comma--;
		if (*comma == ',')
			memmove(comma, c + strlen(" minutes"), strlen(c + strlen(" minutes")) + 1);
	}
	c = strstr(r, ", locked to thread");
	if (c)
		memmove(c, c + strlen(", locked to thread"),
			strlen(c + strlen(", locked to thread")) + 1);
	return r;
}

static int cmp_gg(const void *a, const void *b)
{
	const struct goroutine_group *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->key, y->key);
}

static int add_goroutine(struct goroutine_group **gs, size_t *n, size_t *cap,
			 struct goroutine_group *cur)
{
	size_t klen = strlen(cur->reason) + 2;
	for (size_t i = 0; i < cur->nframes; i++)
		klen += strlen(cur->frames[i]) + 1;
	cur->key = malloc(klen);
	if (!cur->key)
		return -ENOMEM;
	strcpy(cur->key, cur->reason);
	strcat(cur->key, "|");
	for (size_t i = 0; i < cur->nframes; i++) {
		strcat(cur->key, cur->frames[i]);
		if (i + 1 < cur->nframes)
			strcat(cur->key, ";");
	}
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*gs)[i].key, cur->key) == 0) {
			(*gs)[i].count++;
			goroutine_group_release(cur);
			return 0;
		}
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct goroutine_group *ng = realloc(*gs, nc * sizeof(*ng));
		if (!ng)
			return -ENOMEM;
		*gs = ng;
		*cap = nc;
	}
	cur->count = 1;
	(*gs)[(*n)++] = *cur;
	return 0;
}

int goroutine_groups_parse(const char *text, struct goroutine_group **ret, size_t *ret_n)
{
	struct goroutine_group *gs = NULL, cur = {0};
	size_t n = 0, cap = 0;
	bool in = false, skip_next = false;
	int e = 0;
	const char *p = text;
	while (*p && e == 0) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (strncmp(p, "goroutine ", 10) == 0 && len && p[len - 1] == ':') {
			if (in)
				e = add_goroutine(&gs, &n, &cap, &cur);
			memset(&cur, 0, sizeof(cur));
			const char *lb = memchr(p, '[', len),
				   *rb = lb ? memchr(lb, ']', len - (size_t)(lb - p)) : NULL;
			cur.reason = lb && rb ? clean_reason(lb + 1, (size_t)(rb - lb - 1))
					      : strdup("?");
			if (!cur.reason)
				e = -ENOMEM;
			in = true;
			skip_next = false;
		} else if (in && len == 0) {
			e = add_goroutine(&gs, &n, &cap, &cur);
			memset(&cur, 0, sizeof(cur));
			in = false;
		} else if (in && (p[0] == '\t' || skip_next)) {
			skip_next = false; /* file:line of the previous function */
		} else if (in && strncmp(p, "created by ", 11) == 0) {
			skip_next = true;
		} else if (in) {
			/* "pkg.(*T).Method(0xc000..., ...)": the arguments start at
			 * the last '(' (they never contain one). */
			size_t fl = len;
			for (size_t i = len; i-- > 0;)
				if (p[i] == '(') {
					fl = i;
					break;
				}
			char **nf = realloc(cur.frames, (cur.nframes + 1) * sizeof(*nf));
			char *f = strndup(p, fl);
			if (!nf || !f) {
				free(f);
				if (nf)
					cur.frames = nf;
				e = -ENOMEM;
				break;
			}
			cur.frames = nf;
			cur.frames[cur.nframes++] = f;
		}
		p += len + (nl ? 1 : 0);
	}
	if (e == 0 && in)
		e = add_goroutine(&gs, &n, &cap, &cur);
	else if (in)
		goroutine_group_release(&cur);
	if (e < 0) {
		goroutine_groups_free(gs, n);
		return e;
	}
	if (n)
		qsort(gs, n, sizeof(*gs), cmp_gg);
	*ret = gs;
	*ret_n = n;
	return 0;
}

void goroutine_groups_free(struct goroutine_group *g, size_t n)
{
	if (!g)
		return;
	for (size_t i = 0; i < n; i++)
		goroutine_group_release(&g[i]);
	free(g);
}

/* ---- counters ---- */

static bool is_cumulative(const char *name)
{
	static const char *const totals[] = {
		"cpu_user_ns",
		"cpu_sys_ns",
		"minor_faults",
		"major_faults",
		"voluntary_ctxt_switches",
		"nonvoluntary_ctxt_switches",
		"io_read_bytes",
		"io_write_bytes",
	};
	for (size_t i = 0; i < sizeof(totals) / sizeof(totals[0]); i++)
		if (strcmp(name, totals[i]) == 0)
			return true;
	return false;
}

void counter_stat_compute(const struct bundle_timeline *tl, const struct bundle_counter *c,
			  struct counter_stat *ret)
{
	struct counter_stat s = {.first = NAN, .last = NAN, .min = INFINITY, .max = -INFINITY};
	double sx = 0, sy = 0, sxx = 0, sxy = 0, t0 = NAN, tl_last = NAN;
	size_t n = 0;
	for (size_t i = 0; i < tl->npoints; i++) {
		double v = c->v[i];
		if (isnan(v))
			continue;
		if (isnan(s.first)) {
			s.first = v;
			t0 = tl->t[i];
		}
		s.last = v;
		tl_last = tl->t[i];
		if (v < s.min)
			s.min = v;
		if (v > s.max)
			s.max = v;
		/* Relative to the first time: epoch seconds squared lose the
		 * precision a slope needs. */
		double x = tl->t[i] - t0;
		sx += x;
		sy += v;
		sxx += x * x;
		sxy += x * v;
		n++;
	}
	double den = (double)n * sxx - sx * sx;
	s.slope_per_s = n >= 2 && den > 0 ? ((double)n * sxy - sx * sy) / den : 0;
	s.span_s = n ? tl_last - t0 : 0;
	if (!n)
		s.min = s.max = NAN;
	s.cumulative = is_cumulative(c->name);
	*ret = s;
}

void sparkline(const double *v, const double *t, size_t n, bool as_rate, size_t width, char *out,
	       size_t out_size)
{
	static const char *const blocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
	size_t start = as_rate ? 1 : 0;
	size_t m = n > start ? n - start : 0;
	size_t cells = m < width ? m : width;
	double *cell = malloc((cells ? cells : 1) * sizeof(*cell));
	size_t used = 0;
	if (out_size)
		out[0] = '\0';
	if (!cell || !cells) {
		free(cell);
		return;
	}
	double lo = INFINITY, hi = -INFINITY;
	for (size_t c = 0; c < cells; c++) {
		/* Each cell is the mean of the points that fall in it. */
		size_t a = start + c * m / cells, b = start + (c + 1) * m / cells;
		double sum = 0;
		size_t k = 0;
		for (size_t i = a; i < b; i++) {
			double x = v[i];
			if (as_rate) {
				double dt = t[i] - t[i - 1];
				x = dt > 0 ? (v[i] - v[i - 1]) / dt : NAN;
			}
			if (!isnan(x)) {
				sum += x;
				k++;
			}
		}
		cell[c] = k ? sum / (double)k : NAN;
		if (k && cell[c] < lo)
			lo = cell[c];
		if (k && cell[c] > hi)
			hi = cell[c];
	}
	for (size_t c = 0; c < cells; c++) {
		const char *s = " ";
		if (!isnan(cell[c])) {
			int lvl = hi > lo ? (int)((cell[c] - lo) / (hi - lo) * 7.0 + 0.5) : 0;
			s = blocks[lvl < 0 ? 0 : lvl > 7 ? 7 : lvl];
		}
		size_t l = strlen(s);
		if (used + l + 1 > out_size)
			break;
		memcpy(out + used, s, l);
		used += l;
		out[used] = '\0';
	}
	free(cell);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

void format_counter_value(const char *name, double v, char *out, size_t out_size)
{
	if (isnan(v)) {
		snprintf(out, out_size, "n/a");
		return;
	}
	if (ends_with(name, "_bytes")) {
		static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
		double a = fabs(v);
		int i = 0;
		while (a >= 1024 && i < 4) {
			a /= 1024;
			v /= 1024;
			i++;
		}
		snprintf(out, out_size, i ? "%.1f %s" : "%.0f %s", v, u[i]);
	} else if (ends_with(name, "_ns")) {
		snprintf(out, out_size, "%.3g s", v / 1e9);
	} else if (v == floor(v) && fabs(v) < 1e15) {
		snprintf(out, out_size, "%.0f", v);
	} else {
		snprintf(out, out_size, "%.3g", v);
	}
}

/* ---- the JSON document ---- */

static void warn(cJSON *warnings, const char *fmt, const char *a, int e)
{
	char buf[512];
	snprintf(buf, sizeof(buf), fmt, a, strerror(-e));
	cJSON_AddItemToArray(warnings, cJSON_CreateString(buf));
}

/* An interpretation worker that died lost names or stacks: the first
 * warning, so the frames that read module+0xOFF are explained. */
static void add_interpretation_losses(const cJSON *manifest, cJSON *warnings)
{
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(manifest, "interpretation");
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(in, "symbol_batches_lost");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(in, "stacks_lost");
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(in, "worker_restarts");
	double batches = cJSON_IsNumber(b) ? b->valuedouble : 0;
	double stacks = cJSON_IsNumber(s) ? s->valuedouble : 0;
	double restarts = cJSON_IsNumber(w) ? w->valuedouble : 0;
	if (batches <= 0 && stacks <= 0 && restarts <= 0)
		return;
	char buf[256];
	snprintf(buf, sizeof(buf),
		 "an interpretation worker died: %.0f symbol batch(es) lost (their frames read "
		 "module+0xOFF), %.0f stack(s) cut to their innermost frame, %.0f worker restart(s)",
		 batches, stacks, restarts);
	cJSON_AddItemToArray(warnings, cJSON_CreateString(buf));
}

static cJSON *dup_item(const cJSON *manifest, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(manifest, key);
	return it ? cJSON_Duplicate(it, true) : NULL;
}

static cJSON *stack_json(const struct bundle_frame *f, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(f[i].function));
	return a;
}

static cJSON *fn_table_json(const struct fn_table *t, size_t top)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "unit", t->unit);
	cJSON_AddNumberToObject(o, "total", (double)t->total);
	cJSON_AddNumberToObject(o, "samples", (double)t->samples);
	cJSON *flat = cJSON_AddArrayToObject(o, "top_flat");
	for (size_t i = 0; i < t->nfns && i < top; i++) {
		const struct fn_share *f = &t->fns[i];
		if (!f->flat)
			break;
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "function", f->name);
		cJSON_AddNumberToObject(e, "flat", (double)f->flat);
		cJSON_AddNumberToObject(e, "flat_pct",
					t->total ? 100.0 * (double)f->flat / (double)t->total : 0);
		cJSON_AddNumberToObject(e, "cum", (double)f->cum);
		cJSON_AddNumberToObject(e, "cum_pct",
					t->total ? 100.0 * (double)f->cum / (double)t->total : 0);
		cJSON_AddItemToArray(flat, e);
	}
	/* By cum: sort a copy of the indices. */
	size_t *idx = malloc((t->nfns + 1) * sizeof(*idx));
	cJSON *cum = cJSON_AddArrayToObject(o, "top_cum");
	if (idx) {
		for (size_t i = 0; i < t->nfns; i++)
			idx[i] = i;
		for (size_t i = 1; i < t->nfns; i++) { /* insertion sort: stable, n is small */
			size_t k = idx[i], j = i;
			while (j > 0 && t->fns[idx[j - 1]].cum < t->fns[k].cum) {
				idx[j] = idx[j - 1];
				j--;
			}
			idx[j] = k;
		}
		for (size_t i = 0; i < t->nfns && i < top; i++) {
			const struct fn_share *f = &t->fns[idx[i]];
			cJSON *e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "function", f->name);
			cJSON_AddNumberToObject(e, "flat", (double)f->flat);
			cJSON_AddNumberToObject(
				e, "flat_pct",
				t->total ? 100.0 * (double)f->flat / (double)t->total : 0);
			cJSON_AddNumberToObject(e, "cum", (double)f->cum);
			cJSON_AddNumberToObject(e, "cum_pct",
						t->total ? 100.0 * (double)f->cum / (double)t->total
							 : 0);
			cJSON_AddItemToArray(cum, e);
		}
		free(idx);
	}
	return o;
}

/* Flame graph input for the HTML page: a frame name table and, per
 * sample, [tid, value, [frame indices root first]]. Identical frames share
 * one index so a large profile stays a small page. */
static cJSON *flame_json(const struct bundle_profile *p)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *names = cJSON_AddArrayToObject(o, "frames");
	cJSON *samples = cJSON_AddArrayToObject(o, "samples");
	cJSON *threads = cJSON_AddObjectToObject(o, "threads");
	size_t total = 0;
	for (size_t i = 0; i < p->nsamples; i++)
		total += p->samples[i].nframes;
	struct name_map m;
	size_t nnames = 0;
	if (name_map_init(&m, total + 1) < 0) {
		name_map_release(&m);
		return o;
	}
	size_t vi = p->nvalues ? p->nvalues - 1 : 0;
	cJSON_AddStringToObject(o, "unit", p->nvalues ? p->value_unit[vi] : "");
	for (size_t i = 0; i < p->nsamples && p->nvalues; i++) {
		const struct bundle_sample *s = &p->samples[i];
		cJSON *stack = cJSON_CreateArray();
		for (size_t k = s->nframes; k-- > 0;) {
			bool found;
			size_t slot = name_map_slot(&m, s->frames[k].function, &found);
			if (!found) {
				m.keys[slot] = s->frames[k].function;
				m.vals[slot] = nnames++;
				cJSON_AddItemToArray(names,
						     cJSON_CreateString(s->frames[k].function));
			}
			cJSON_AddItemToArray(stack, cJSON_CreateNumber((double)m.vals[slot]));
		}
		cJSON *e = cJSON_CreateArray();
		cJSON_AddItemToArray(e, cJSON_CreateNumber((double)s->tid));
		cJSON_AddItemToArray(e, cJSON_CreateNumber((double)s->values[vi]));
		cJSON_AddItemToArray(e, stack);
		cJSON_AddItemToArray(samples, e);
		char tid[32];
		snprintf(tid, sizeof(tid), "%lld", (long long)s->tid);
		if (!cJSON_GetObjectItemCaseSensitive(threads, tid))
			cJSON_AddStringToObject(threads, tid, s->thread_comm ? s->thread_comm : "");
	}
	name_map_release(&m);
	return o;
}

static void add_profiles(struct bundle_reader *r, const struct report_options *opt, cJSON *doc,
			 cJSON *warnings)
{
	static const char *const kinds[] = {"cpu", "wall"};
	cJSON *profiles = cJSON_AddObjectToObject(doc, "profiles");
	cJSON *flame = opt->with_flame ? cJSON_AddObjectToObject(doc, "flame") : NULL;
	for (size_t k = 0; k < 2; k++) {
		char member[32];
		snprintf(member, sizeof(member), "%s.pprof", kinds[k]);
		if (!bundle_reader_has(r, member))
			continue;
		const struct bundle_profile *p;
		int e = bundle_reader_profile(r, member, &p);
		if (e < 0) {
			warn(warnings, "%s: cannot decode: %s", member, e);
			continue;
		}
		struct fn_table t;
		if (fn_table_build(p, -1, &t) < 0)
			continue;
		cJSON *pj = fn_table_json(&t, opt->top ? opt->top : 15);
		cJSON_AddNumberToObject(pj, "functions", (double)t.nfns);
		cJSON_AddItemToObject(profiles, kinds[k], pj);
		fn_table_release(&t);
		if (flame)
			cJSON_AddItemToObject(flame, kinds[k], flame_json(p));
	}
}

static cJSON *thread_groups_json(struct thread_group *g, size_t ng)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < ng; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "count", (double)g[i].nthreads);
		cJSON_AddItemToObject(o, "stack", stack_json(g[i].frames, g[i].nframes));
		cJSON *states = cJSON_AddObjectToObject(o, "states");
		cJSON *th = cJSON_AddArrayToObject(o, "threads");
		for (size_t k = 0; k < g[i].nthreads; k++) {
			const struct thread_member *m = &g[i].threads[k];
			cJSON *t = cJSON_CreateObject();
			cJSON_AddNumberToObject(t, "tid", (double)m->tid);
			cJSON_AddStringToObject(t, "comm", m->comm ? m->comm : "");
			cJSON_AddStringToObject(t, "state", m->state ? m->state : "?");
			if (m->syscall)
				cJSON_AddStringToObject(t, "syscall", m->syscall);
			if (m->wchan)
				cJSON_AddStringToObject(t, "wchan", m->wchan);
			cJSON_AddItemToArray(th, t);
			const char *st = m->state ? m->state : "?";
			cJSON *c = cJSON_GetObjectItemCaseSensitive(states, st);
			if (c)
				cJSON_SetNumberValue(c, c->valuedouble + 1);
			else
				cJSON_AddNumberToObject(states, st, 1);
		}
		/* The group's wait is the first member's: same stack almost
		 * always means same syscall and wait channel. */
		if (g[i].threads[0].syscall)
			cJSON_AddStringToObject(o, "syscall", g[i].threads[0].syscall);
		if (g[i].threads[0].wchan)
			cJSON_AddStringToObject(o, "wchan", g[i].threads[0].wchan);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static void add_threads(struct bundle_reader *r, cJSON *doc, cJSON *warnings)
{
	if (!bundle_reader_has(r, "threads.pprof")) {
		cJSON_AddItemToArray(
			warnings,
			cJSON_CreateString("no threads.pprof: no thread snapshot in this bundle"));
		return;
	}
	struct thread_group *g;
	size_t ng;
	int e = thread_groups_build(r, "", &g, &ng);
	if (e < 0) {
		warn(warnings, "%s: cannot decode: %s", "threads.pprof", e);
		return;
	}
	size_t nthreads = 0, stackless = 0;
	for (size_t i = 0; i < ng; i++) {
		nthreads += g[i].nthreads;
		if (g[i].nframes == 0)
			stackless += g[i].nthreads;
	}
	cJSON_AddNumberToObject(doc, "threads", (double)nthreads);
	cJSON_AddNumberToObject(doc, "threads_without_stack", (double)stackless);
	/* Counted among the threads, never dropped: threads.txt says why
	 * each has none (late to stop, not sampled yet). */
	if (stackless) {
		char buf[160];
		snprintf(buf, sizeof(buf),
			 "%zu of %zu thread(s) have no stack in the snapshot (threads.txt says why)",
			 stackless, nthreads);
		cJSON_AddItemToArray(warnings, cJSON_CreateString(buf));
	}
	cJSON_AddItemToObject(doc, "thread_groups", thread_groups_json(g, ng));
	thread_groups_free(g, ng);
}

static void add_goroutines(struct bundle_reader *r, cJSON *doc, cJSON *warnings)
{
	if (!bundle_reader_has(r, "goroutine.txt"))
		return;
	char *txt;
	size_t len;
	int e = bundle_reader_read(r, "goroutine.txt", &txt, &len);
	if (e < 0) {
		warn(warnings, "%s: unreadable: %s", "goroutine.txt", e);
		return;
	}
	struct goroutine_group *g;
	size_t ng;
	e = goroutine_groups_parse(txt, &g, &ng);
	free(txt);
	if (e < 0)
		return;
	size_t total = 0;
	cJSON *a = cJSON_AddArrayToObject(doc, "goroutine_groups");
	for (size_t i = 0; i < ng; i++) {
		cJSON *o = cJSON_CreateObject();
		total += g[i].count;
		cJSON_AddNumberToObject(o, "count", (double)g[i].count);
		cJSON_AddStringToObject(o, "reason", g[i].reason);
		cJSON *s = cJSON_AddArrayToObject(o, "stack");
		for (size_t k = 0; k < g[i].nframes; k++)
			cJSON_AddItemToArray(s, cJSON_CreateString(g[i].frames[k]));
		cJSON_AddItemToArray(a, o);
	}
	cJSON_AddNumberToObject(doc, "goroutines", (double)total);
	goroutine_groups_free(g, ng);
}

static double json_num(double v)
{
	/* cJSON prints NAN/inf as null, which is what we want, but keep
	 * -0 and tiny noise out of the output. */
	return fabs(v) < 1e-12 ? 0 : v;
}

static void add_timeline(struct bundle_reader *r, cJSON *doc, cJSON *warnings)
{
	const struct bundle_timeline *tl;
	int e = bundle_reader_timeline(r, &tl);
	if (e == -ENOENT)
		return;
	if (e < 0) {
		warn(warnings, "%s: %s", "timeline", e);
		return;
	}
	if (tl->bad_lines) {
		char buf[128];
		snprintf(buf, sizeof(buf), "timeline: %zu malformed line(s) skipped",
			 tl->bad_lines);
		cJSON_AddItemToArray(warnings, cJSON_CreateString(buf));
	}
	cJSON *a = cJSON_AddArrayToObject(doc, "counters");
	cJSON *series = NULL;
	{
		cJSON *t = cJSON_AddObjectToObject(doc, "timeline");
		cJSON *ts = cJSON_AddArrayToObject(t, "t");
		for (size_t i = 0; i < tl->npoints; i++)
			cJSON_AddItemToArray(ts, cJSON_CreateNumber(tl->t[i]));
		series = cJSON_AddObjectToObject(t, "series");
	}
	cJSON_AddNumberToObject(doc, "timeline_points", (double)tl->npoints);
	for (size_t i = 0; i < tl->ncounters; i++) {
		const struct bundle_counter *c = &tl->counters[i];
		struct counter_stat s;
		counter_stat_compute(tl, c, &s);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", c->name);
		cJSON_AddNumberToObject(o, "first", json_num(s.first));
		cJSON_AddNumberToObject(o, "last", json_num(s.last));
		cJSON_AddNumberToObject(o, "min", json_num(s.min));
		cJSON_AddNumberToObject(o, "max", json_num(s.max));
		cJSON_AddNumberToObject(o, "slope_per_s", json_num(s.slope_per_s));
		cJSON_AddNumberToObject(o, "points", (double)c->nvalid);
		cJSON_AddBoolToObject(o, "cumulative", s.cumulative);
		cJSON_AddItemToArray(a, o);
		{
			cJSON *v = cJSON_AddArrayToObject(series, c->name);
			for (size_t k = 0; k < tl->npoints; k++)
				cJSON_AddItemToArray(v, isnan(c->v[k])
								? cJSON_CreateNull()
								: cJSON_CreateNumber(c->v[k]));
		}
	}
}

int report_build_json(struct bundle_reader *r, const struct report_options *opt, cJSON **ret)
{
	const cJSON *m = bundle_reader_manifest(r);
	cJSON *doc = cJSON_CreateObject();
	if (!doc)
		return -ENOMEM;
	cJSON_AddStringToObject(doc, "bundle", bundle_reader_dir(r));
	static const char *const copy[] = {"bundle_id",	  "mode",	"target",	 "host",
					   "started_at",  "ended_at",	"capture",	 "pause",
					   "annotations", "leak_watch", "target_exited", "go"};
	for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++) {
		cJSON *it = dup_item(m, copy[i]);
		if (it)
			cJSON_AddItemToObject(doc, copy[i], it);
	}
	cJSON *warnings = cJSON_CreateArray();
	add_interpretation_losses(m, warnings);
	add_profiles(r, opt, doc, warnings);
	add_threads(r, doc, warnings);
	add_goroutines(r, doc, warnings);
	add_timeline(r, doc, warnings);
	cJSON *f = dup_item(m, "findings");
	cJSON_AddItemToObject(doc, "findings", f ? f : cJSON_CreateArray());
	cJSON_AddItemToObject(doc, "warnings", warnings);
	/* cJSON reports allocation failure only by leaving things out; a
	 * final print is the cheapest honest check. */
	char *probe = cJSON_PrintUnformatted(doc);
	if (!probe) {
		cJSON_Delete(doc);
		return -ENOMEM;
	}
	free(probe);
	*ret = doc;
	return 0;
}
