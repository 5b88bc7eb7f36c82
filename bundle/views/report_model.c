/* report_model: see report_model.h. */
#include "bundle/views/report_model.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/views/thread_waits.h"
#include "bundle/strmap.h"

/* ---- function tables ---- */

static int cmp_fn_share(const void *a, const void *b)
{
	const struct fn_share *x = a, *y = b;
	if (x->flat != y->flat)
		return x->flat < y->flat ? 1 : -1;
	if (x->cum != y->cum)
		return x->cum < y->cum ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Index of the entry for name in t, added if new. The table grows with
 * the distinct names, not with the frames (a profile has millions of
 * frames and some thousands of functions). */
static int fn_slot(struct fn_table *t, size_t *cap, const char *name, size_t **last_sample,
		   size_t *ret)
{
	size_t *idx;
	int e = strmap_put(&t->by_name, name, t->nfns, &idx);
	if (e < 0)
		return e;
	*ret = *idx;
	if (e == 0)
		return 0;
	if (t->nfns == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct fn_share *nf = realloc(t->fns, nc * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		t->fns = nf;
		size_t *nl = realloc(*last_sample, nc * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		*last_sample = nl;
		*cap = nc;
	}
	t->fns[t->nfns] = (struct fn_share){.name = name};
	(*last_sample)[t->nfns] = 0;
	t->nfns++;
	return 0;
}

int fn_table_build(const struct bundle_profile *p, int64_t tid, struct fn_table *ret)
{
	struct fn_table t = {.by_name = STRMAP_INIT};
	size_t cap = 0;
	t.value_index = p->nvalues ? p->nvalues - 1 : 0;
	t.unit = p->nvalues ? p->value_unit[t.value_index] : "";
	/* last_sample: which sample last added to cum, so recursion counts once. */
	size_t *last_sample = NULL;
	int e = 0;
	for (size_t i = 0; i < p->nsamples && e == 0; i++) {
		const struct bundle_sample *s = &p->samples[i];
		if (tid >= 0 && s->tid != tid)
			continue;
		if (!p->nvalues)
			break;
		int64_t v = s->values[t.value_index];
		t.total += v;
		t.samples += s->values[0];
		for (size_t k = 0; k < s->nframes; k++) {
			size_t idx;
			e = fn_slot(&t, &cap, s->frames[k].function, &last_sample, &idx);
			if (e < 0)
				break;
			if (k == 0)
				t.fns[idx].flat += v;
			if (last_sample[idx] != i + 1) {
				last_sample[idx] = i + 1;
				t.fns[idx].cum += v;
			}
		}
	}
	free(last_sample);
	if (e < 0) {
		fn_table_release(&t);
		return e;
	}
	if (t.nfns)
		qsort(t.fns, t.nfns, sizeof(*t.fns), cmp_fn_share);
	/* The map now points at each name's place in the sorted table. */
	for (size_t i = 0; i < t.nfns; i++)
		*strmap_find(&t.by_name, t.fns[i].name) = i;
	*ret = t;
	return 0;
}

void fn_table_release(struct fn_table *t)
{
	free(t->fns);
	strmap_release(&t->by_name);
	memset(t, 0, sizeof(*t));
}

const struct fn_share *fn_table_find(const struct fn_table *t, const char *name)
{
	size_t *i = strmap_find(&t->by_name, name);
	return i ? &t->fns[*i] : NULL;
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
 * profile has no wait channel, so it comes from here. Each thread's
 * header is found through wait_index, not by scanning the text per
 * thread. */
struct wait_line {
	int64_t tid;
	const char *head; /* its "Thread TID " line */
};

static int cmp_wait_line(const void *a, const void *b)
{
	const struct wait_line *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->head < y->head ? -1 : x->head > y->head; /* the first one wins */
}

/* Every "Thread TID " line of txt, sorted by tid. */
static int wait_index(const char *txt, struct wait_line **ret, size_t *ret_n)
{
	struct wait_line *v = NULL;
	size_t n = 0, cap = 0;
	for (const char *p = txt; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, "Thread ", 7) != 0 || !(p[7] == '-' || (p[7] >= '0' && p[7] <= '9')))
			continue;
		char *end;
		errno = 0;
		long long tid = strtoll(p + 7, &end, 10);
		if (end == p + 7 || *end != ' ' || errno)
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct wait_line *nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = (struct wait_line){tid, p};
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_wait_line);
	*ret = v;
	*ret_n = n;
	return 0;
}

static void find_wait(const struct wait_line *idx, size_t n, int64_t tid, char **syscall,
		      char **wchan, char **waits)
{
	size_t lo = 0, hi = n;
	while (lo < hi) { /* the first entry for tid */
		size_t mid = lo + (hi - lo) / 2;
		if (idx[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n || idx[lo].tid != tid)
		return;
	*waits = thread_waits_line(idx[lo].head);
	const char *nl = strchr(idx[lo].head, '\n');
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
		size_t k = strcspn(sc, " \n");
		*syscall = strndup(sc, k);
	}
	if (wc && wc < end) {
		wc += strlen("wchan: ");
		size_t k = strcspn(wc, " \n");
		*wchan = strndup(wc, k);
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
	e = bundle_reader_read(r, name, &txt, &txtlen);
	if (e == BUNDLE_PAST_CAP || e == -ENOMEM)
		return e;
	if (e < 0)
		txt = NULL;
	struct wait_line *waits = NULL;
	size_t nwaits = 0;
	struct thread_group *g = calloc(p->nsamples + 1, sizeof(*g));
	size_t *group_of = calloc(p->nsamples + 1, sizeof(*group_of));
	struct strmap by_key = STRMAP_INIT;
	size_t ng = 0;
	e = g && group_of ? 0 : -ENOMEM;
	if (e == 0 && txt)
		e = wait_index(txt, &waits, &nwaits);
	/* Which group each sample joins (groups found by key, in O(1)), then
	 * each group's members in one array of its exact size. */
	for (size_t i = 0; i < p->nsamples && e == 0; i++) {
		const struct bundle_sample *s = &p->samples[i];
		char *key = stack_key(s->frames, s->nframes);
		size_t *gi;
		int put = key ? strmap_put(&by_key, key, ng, &gi) : -ENOMEM;
		if (put < 0) {
			free(key);
			e = -ENOMEM;
			break;
		}
		if (put == 1)
			g[ng++] = (struct thread_group){
				.frames = s->frames, .nframes = s->nframes, .key = key};
		else
			free(key);
		group_of[i] = *gi;
		g[*gi].nthreads++;
	}
	for (size_t k = 0; k < ng && e == 0; k++) {
		g[k].threads = calloc(g[k].nthreads, sizeof(*g[k].threads));
		if (!g[k].threads)
			e = -ENOMEM;
		g[k].nthreads = 0;
	}
	for (size_t i = 0; i < p->nsamples && e == 0; i++) {
		const struct bundle_sample *s = &p->samples[i];
		struct thread_group *gr = &g[group_of[i]];
		struct thread_member *m = &gr->threads[gr->nthreads++];
		*m = (struct thread_member){
			.tid = s->tid, .comm = s->thread_comm, .state = s->state};
		if (waits && s->tid >= 0)
			find_wait(waits, nwaits, s->tid, &m->syscall, &m->wchan, &m->waits);
	}
	strmap_release(&by_key);
	free(group_of);
	free(waits);
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
		for (size_t k = 0; g[i].threads && k < g[i].nthreads; k++) {
			free(g[i].threads[k].syscall);
			free(g[i].threads[k].wchan);
			free(g[i].threads[k].waits);
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

static int add_goroutine_to(struct goroutine_group **gs, size_t *n, size_t *cap,
			    struct strmap *by_key, struct goroutine_group *cur);

/* Group cur (whose key is made here) into gs, found by key in O(1). cur
 * is consumed (and zeroed) whatever happens. */
static int add_goroutine(struct goroutine_group **gs, size_t *n, size_t *cap, struct strmap *by_key,
			 struct goroutine_group *cur)
{
	int e = add_goroutine_to(gs, n, cap, by_key, cur);
	if (e < 0)
		goroutine_group_release(cur);
	memset(cur, 0, sizeof(*cur));
	return e;
}

static int add_goroutine_to(struct goroutine_group **gs, size_t *n, size_t *cap,
			    struct strmap *by_key, struct goroutine_group *cur)
{
	size_t klen = strlen(cur->reason) + 2;
	for (size_t i = 0; i < cur->nframes; i++)
		klen += strlen(cur->frames[i]) + 1;
	cur->key = malloc(klen);
	if (!cur->key)
		return -ENOMEM;
	char *k = cur->key;
	size_t l = strlen(cur->reason);
	memcpy(k, cur->reason, l);
	k += l;
	*k++ = '|';
	for (size_t i = 0; i < cur->nframes; i++) {
		l = strlen(cur->frames[i]);
		memcpy(k, cur->frames[i], l);
		k += l;
		if (i + 1 < cur->nframes)
			*k++ = ';';
	}
	*k = '\0';
	size_t *known = strmap_find(by_key, cur->key);
	if (known) {
		(*gs)[*known].count++;
		goroutine_group_release(cur);
		memset(cur, 0, sizeof(*cur));
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
	/* The key string stays where it is when gs moves. */
	if (strmap_put(by_key, cur->key, *n, NULL) < 0)
		return -ENOMEM;
	cur->count = 1;
	(*gs)[(*n)++] = *cur;
	return 0;
}

int goroutine_groups_parse(const char *text, struct goroutine_group **ret, size_t *ret_n)
{
	struct goroutine_group *gs = NULL, cur = {0};
	struct strmap by_key = STRMAP_INIT;
	size_t n = 0, cap = 0, frames_cap = 0;
	bool in = false, skip_next = false;
	int e = 0;
	const char *p = text;
	while (*p && e == 0) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (strncmp(p, "goroutine ", 10) == 0 && len && p[len - 1] == ':') {
			if (in)
				e = add_goroutine(&gs, &n, &cap, &by_key, &cur);
			memset(&cur, 0, sizeof(cur));
			frames_cap = 0;
			const char *lb = memchr(p, '[', len),
				   *rb = lb ? memchr(lb, ']', len - (size_t)(lb - p)) : NULL;
			cur.reason = lb && rb ? clean_reason(lb + 1, (size_t)(rb - lb - 1))
					      : strdup("?");
			if (!cur.reason)
				e = -ENOMEM;
			in = true;
			skip_next = false;
		} else if (in && len == 0) {
			e = add_goroutine(&gs, &n, &cap, &by_key, &cur);
			memset(&cur, 0, sizeof(cur));
			frames_cap = 0;
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
			if (cur.nframes == frames_cap) {
				size_t nc = frames_cap ? frames_cap * 2 : 16;
				char **nf = realloc(cur.frames, nc * sizeof(*nf));
				if (!nf) {
					e = -ENOMEM;
					break;
				}
				cur.frames = nf;
				frames_cap = nc;
			}
			char *f = strndup(p, fl);
			if (!f) {
				e = -ENOMEM;
				break;
			}
			cur.frames[cur.nframes++] = f;
		}
		p += len + (nl ? 1 : 0);
	}
	if (e == 0 && in)
		e = add_goroutine(&gs, &n, &cap, &by_key, &cur);
	else if (in)
		goroutine_group_release(&cur);
	strmap_release(&by_key);
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
	s.cumulative = bundle_counter_cumulative(c->name);
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

/* What --growth asked for and the capture could not record (the
 * manifest's one line), as a warning of the report. */
static void add_growth_not_recorded(const cJSON *manifest, cJSON *warnings)
{
	const cJSON *cap = cJSON_GetObjectItemCaseSensitive(manifest, "capture");
	const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cap, "growth_not_recorded"));
	if (why)
		cJSON_AddItemToArray(warnings, cJSON_CreateString(why));
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

struct by_cum {
	int64_t cum;
	size_t i;
};

static int cmp_by_cum(const void *a, const void *b)
{
	const struct by_cum *x = a, *y = b;
	if (x->cum != y->cum)
		return x->cum < y->cum ? 1 : -1;
	return x->i < y->i ? -1 : x->i > y->i;
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
	/* By cum: sort a copy (cum, then the flat order: stable). */
	struct by_cum *idx = malloc((t->nfns + 1) * sizeof(*idx));
	cJSON *cum = cJSON_AddArrayToObject(o, "top_cum");
	if (idx) {
		for (size_t i = 0; i < t->nfns; i++)
			idx[i] = (struct by_cum){t->fns[i].cum, i};
		qsort(idx, t->nfns, sizeof(*idx), cmp_by_cum);
		for (size_t i = 0; i < t->nfns && i < top; i++) {
			const struct fn_share *f = &t->fns[idx[i].i];
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
	/* Frame names and threads already added, by name: no scan of either
	 * list per frame. A thread's key is the string of its item in
	 * "threads", which lives as long as o. */
	struct strmap frames = STRMAP_INIT, tids = STRMAP_INIT;
	size_t nnames = 0;
	size_t vi = p->nvalues ? p->nvalues - 1 : 0;
	cJSON_AddStringToObject(o, "unit", p->nvalues ? p->value_unit[vi] : "");
	for (size_t i = 0; i < p->nsamples && p->nvalues; i++) {
		const struct bundle_sample *s = &p->samples[i];
		cJSON *stack = cJSON_CreateArray();
		for (size_t k = s->nframes; k-- > 0;) {
			size_t *id;
			int put = strmap_put(&frames, s->frames[k].function, nnames, &id);
			if (put < 0) {
				cJSON_Delete(stack);
				goto out;
			}
			if (put == 1) {
				nnames++;
				cJSON_AddItemToArray(names,
						     cJSON_CreateString(s->frames[k].function));
			}
			cJSON_AddItemToArray(stack, cJSON_CreateNumber((double)*id));
		}
		cJSON *e = cJSON_CreateArray();
		cJSON_AddItemToArray(e, cJSON_CreateNumber((double)s->tid));
		cJSON_AddItemToArray(e, cJSON_CreateNumber((double)s->values[vi]));
		cJSON_AddItemToArray(e, stack);
		cJSON_AddItemToArray(samples, e);
		char tid[32];
		snprintf(tid, sizeof(tid), "%lld", (long long)s->tid);
		if (!strmap_find(&tids, tid)) {
			cJSON *c = cJSON_AddStringToObject(threads, tid,
							   s->thread_comm ? s->thread_comm : "");
			if (!c || strmap_put(&tids, c->string, 0, NULL) < 0)
				goto out;
		}
	}
out:
	strmap_release(&frames);
	strmap_release(&tids);
	return o;
}

static void add_profiles(struct bundle_reader *r, const struct report_options *opt, cJSON *doc,
			 cJSON *warnings)
{
	/* cpu and wall, and a Go program's block and mutex profiles (where
	 * goroutines waited, by delay) and threadcreate (where its threads
	 * were created), and growth (--growth: where memory was first
	 * touched, by bytes): top functions of each; flame graphs of the
	 * first two.
	 * "counts" names what the first value counts. */
	static const char *const kinds[] = {"cpu", "wall", "block", "mutex", "threadcreate", "growth"};
	static const char *const counts[] = {"samples", "samples", "contentions", "contentions", "threads",
					     "page faults"};
	cJSON *profiles = cJSON_AddObjectToObject(doc, "profiles");
	cJSON *flame = opt->with_flame ? cJSON_AddObjectToObject(doc, "flame") : NULL;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		char member[32];
		snprintf(member, sizeof(member), "%s.pprof", kinds[k]);
		if (!bundle_reader_has(r, member))
			continue;
		const struct bundle_profile *p;
		int e = bundle_reader_profile(r, member, &p);
		if (e == BUNDLE_PAST_CAP)
			return;
		if (e < 0) {
			warn(warnings, "%s: cannot decode: %s", member, e);
			continue;
		}
		struct fn_table t;
		if (fn_table_build(p, -1, &t) < 0)
			continue;
		cJSON *pj = fn_table_json(&t, opt->top ? opt->top : 15);
		cJSON_AddNumberToObject(pj, "functions", (double)t.nfns);
		cJSON_AddStringToObject(pj, "counts", counts[k]);
		cJSON_AddItemToObject(profiles, kinds[k], pj);
		fn_table_release(&t);
		if (flame && k < 2)
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
			if (m->waits)
				cJSON_AddStringToObject(t, "waits", m->waits);
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
		if (g[i].threads[0].waits)
			cJSON_AddStringToObject(o, "waits", g[i].threads[0].waits);
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
	if (e == BUNDLE_PAST_CAP)
		return;
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
	/* Who waits on whom, deadlocks first (threads.txt's own lines). */
	char *txt = NULL;
	size_t len;
	if (bundle_reader_read(r, "threads.txt", &txt, &len) == 0) {
		cJSON *waits = cJSON_CreateArray();
		if (waits && thread_waits_summary(txt, waits) == 0 && cJSON_GetArraySize(waits))
			cJSON_AddItemToObject(doc, "waits", waits);
		else
			cJSON_Delete(waits);
	}
	free(txt);
}

static void add_goroutines(struct bundle_reader *r, cJSON *doc, cJSON *warnings)
{
	if (!bundle_reader_has(r, "goroutine.txt"))
		return;
	char *txt;
	size_t len;
	int e = bundle_reader_read(r, "goroutine.txt", &txt, &len);
	if (e == BUNDLE_PAST_CAP)
		return;
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
	if (e == -ENOENT || e == BUNDLE_PAST_CAP)
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
	add_growth_not_recorded(m, warnings);
	/* A member past a cap of the reader is no warning: the bundle is
	 * refused, with no report made of the rest. */
	add_profiles(r, opt, doc, warnings);
	if (!bundle_reader_refusal(r))
		add_threads(r, doc, warnings);
	if (!bundle_reader_refusal(r))
		add_goroutines(r, doc, warnings);
	if (!bundle_reader_refusal(r))
		add_timeline(r, doc, warnings);
	if (bundle_reader_refusal(r)) {
		cJSON_Delete(warnings);
		cJSON_Delete(doc);
		return BUNDLE_PAST_CAP;
	}
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
