/* diff_model: see diff_model.h. */
#include "bundle/views/diff_model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/views/report_model.h"
#include "bundle/strmap.h"
#include "timeline/leakwatch.h"

/* Leak-watch floors when neither manifest has them: the capture's own
 * defaults. */
static double default_floor(const char *name)
{
	static const struct {
		const char *name;
		double slope;
	} floors[] = {
		{"rss_bytes", 16384},  {"threads", 0.05},   {"open_fds", 0.05},
		{"child_procs", 0.01}, {"goroutines", 0.2}, {"heap_live_bytes", 16384},
	};
	for (size_t i = 0; i < sizeof(floors) / sizeof(floors[0]); i++)
		if (strcmp(floors[i].name, name) == 0)
			return floors[i].slope;
	return NAN;
}

/* A leak-watch floor recorded in B's manifest, else A's; NULL if neither
 * has one for this counter. */
static const cJSON *manifest_floor(const cJSON *ma, const cJSON *mb, const char *name,
				   const char *field)
{
	const cJSON *ms[] = {mb, ma};
	for (size_t i = 0; i < 2; i++) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(ms[i], "leak_watch"),
				"thresholds"),
			name);
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, field);
		if (cJSON_IsNumber(v))
			return v;
	}
	return NULL;
}

static double floor_for(const cJSON *ma, const cJSON *mb, const char *name)
{
	const cJSON *v = manifest_floor(ma, mb, name, "min_slope_per_s");
	return v ? v->valuedouble : default_floor(name);
}

/* The rise a counter must make to count as growing: the bundle's own
 * leak-watch floor, else the watchdog's default, else none. Without it a
 * process that is merely warming up (RSS +1 MiB in 4 s) reads as leaking. */
static double rise_floor_for(const cJSON *ma, const cJSON *mb, const char *name)
{
	const cJSON *v = manifest_floor(ma, mb, name, "min_delta");
	if (v)
		return v->valuedouble;
	size_t n;
	const struct leakwatch_threshold *def = leakwatch_default_thresholds(&n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(def[i].name, name) == 0)
			return def[i].min_delta;
	return 0;
}

static bool has_finding(const cJSON *m, const char *name)
{
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(m, "findings"))
	{
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(f, "counter");
		if (cJSON_IsString(c) && strcmp(c->valuestring, name) == 0)
			return true;
	}
	return false;
}

/* The timeline's counters by name. */
static int counter_map(const struct bundle_timeline *tl, struct strmap *ret)
{
	for (size_t i = 0; tl && i < tl->ncounters; i++)
		if (strmap_put(ret, tl->counters[i].name, i, NULL) < 0)
			return -ENOMEM;
	return 0;
}

static const struct bundle_counter *find_counter(const struct bundle_timeline *tl,
						 const struct strmap *m, const char *name)
{
	size_t *i = tl ? strmap_find(m, name) : NULL;
	return i ? &tl->counters[*i] : NULL;
}

static void add_stat(cJSON *o, const char *key, const struct bundle_timeline *tl,
		     const struct bundle_counter *c, struct counter_stat *ret)
{
	if (!c) {
		ret->slope_per_s = NAN;
		return;
	}
	counter_stat_compute(tl, c, ret);
	cJSON *s = cJSON_AddObjectToObject(o, key);
	cJSON_AddNumberToObject(s, "first", ret->first);
	cJSON_AddNumberToObject(s, "last", ret->last);
	cJSON_AddNumberToObject(s, "slope_per_s",
				fabs(ret->slope_per_s) < 1e-12 ? 0 : ret->slope_per_s);
}

static cJSON *diff_counters(struct bundle_reader *a, struct bundle_reader *b)
{
	const struct bundle_timeline *ta = NULL, *tb = NULL;
	if (bundle_reader_timeline(a, &ta) < 0)
		ta = NULL;
	if (bundle_reader_timeline(b, &tb) < 0)
		tb = NULL;
	struct strmap by_a = STRMAP_INIT, by_b = STRMAP_INIT;
	if (counter_map(ta, &by_a) < 0 || counter_map(tb, &by_b) < 0) {
		strmap_release(&by_a);
		strmap_release(&by_b);
		return NULL;
	}
	cJSON *arr = cJSON_CreateArray();
	const cJSON *ma = bundle_reader_manifest(a), *mb = bundle_reader_manifest(b);
	/* B's counters in order, then A's that B lacks. */
	const struct bundle_timeline *order[] = {tb, ta};
	for (size_t pass = 0; pass < 2; pass++) {
		const struct bundle_timeline *tl = order[pass];
		for (size_t i = 0; tl && i < tl->ncounters; i++) {
			const char *name = tl->counters[i].name;
			if (pass == 1 && find_counter(tb, &by_b, name))
				continue;
			const struct bundle_counter *ca = find_counter(ta, &by_a, name),
						    *cb = find_counter(tb, &by_b, name);
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", name);
			struct counter_stat sa = {0}, sb = {0};
			add_stat(o, "a", ta, ca, &sa);
			add_stat(o, "b", tb, cb, &sb);
			double fl = floor_for(ma, mb, name);
			double rise = rise_floor_for(ma, mb, name);
			bool grows_b = cb && !isnan(fl) && sb.slope_per_s > fl && sb.last > sb.first &&
				       sb.last - sb.first >= rise;
			bool grows_a = ca && !isnan(fl) && sa.slope_per_s > fl && sa.last > sa.first &&
				       sa.last - sa.first >= rise;
			bool leak_b = has_finding(mb, name) || (grows_b && !grows_a);
			bool leak_a = has_finding(ma, name);
			/* A counter only one side has (a snapshot has none) is
			 * news only if it moved there. */
			bool changed =
				ca && cb ? sa.first != sb.first || sa.last != sb.last ||
						   fabs(sa.slope_per_s - sb.slope_per_s) > 1e-9
				: ca ? sa.first != sa.last
				     : sb.first != sb.last;
			cJSON_AddBoolToObject(o, "growing_in_b", leak_b);
			cJSON_AddBoolToObject(o, "finding_in_a", leak_a);
			cJSON_AddBoolToObject(o, "finding_in_b", has_finding(mb, name));
			cJSON_AddBoolToObject(o, "changed", changed);
			cJSON_AddBoolToObject(o, "cumulative", (ca ? sa : sb).cumulative);
			if (!isnan(fl))
				cJSON_AddNumberToObject(o, "leak_floor_per_s", fl);
			cJSON_AddItemToArray(arr, o);
		}
	}
	strmap_release(&by_a);
	strmap_release(&by_b);
	/* Growing-in-B first, keeping the counter order otherwise. */
	cJSON *sorted = cJSON_CreateArray();
	for (int want = 1; want >= 0; want--) {
		const cJSON *o;
		cJSON_ArrayForEach(o, arr)
		{
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "growing_in_b")) ==
			    want)
				cJSON_AddItemToArray(sorted, cJSON_Duplicate(o, true));
		}
	}
	cJSON_Delete(arr);
	return sorted;
}

struct moved {
	const char *name;
	double fa, fb, ca, cb; /* flat and cum shares in percent */
};

static int cmp_moved(const void *x, const void *y)
{
	const struct moved *a = x, *b = y;
	double da = fmax(fabs(a->fb - a->fa), fabs(a->cb - a->ca));
	double db = fmax(fabs(b->fb - b->fa), fabs(b->cb - b->ca));
	return da < db ? 1 : da > db ? -1 : strcmp(a->name, b->name);
}

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0;
}

static cJSON *diff_functions(struct bundle_reader *a, struct bundle_reader *b, const char *member,
			     size_t top)
{
	const struct bundle_profile *pa, *pb;
	if (!bundle_reader_has(a, member) || !bundle_reader_has(b, member) ||
	    bundle_reader_profile(a, member, &pa) < 0 || bundle_reader_profile(b, member, &pb) < 0)
		return NULL;
	struct fn_table ta, tb;
	if (fn_table_build(pa, -1, &ta) < 0)
		return NULL;
	if (fn_table_build(pb, -1, &tb) < 0) {
		fn_table_release(&ta);
		return NULL;
	}
	/* With no samples on one side every share "moves" by 100 points;
	 * that says nothing, so list nothing. */
	struct moved *mv =
		ta.samples && tb.samples ? calloc(ta.nfns + tb.nfns + 1, sizeof(*mv)) : NULL;
	size_t n = 0;
	cJSON *arr = cJSON_CreateArray();
	if (mv) {
		for (size_t i = 0; i < tb.nfns; i++) {
			const struct fn_share *x = fn_table_find(&ta, tb.fns[i].name);
			mv[n++] = (struct moved){tb.fns[i].name, x ? pct(x->flat, ta.total) : 0,
						 pct(tb.fns[i].flat, tb.total),
						 x ? pct(x->cum, ta.total) : 0,
						 pct(tb.fns[i].cum, tb.total)};
		}
		for (size_t i = 0; i < ta.nfns; i++)
			if (!fn_table_find(&tb, ta.fns[i].name))
				mv[n++] = (struct moved){ta.fns[i].name,
							 pct(ta.fns[i].flat, ta.total), 0,
							 pct(ta.fns[i].cum, ta.total), 0};
		qsort(mv, n, sizeof(*mv), cmp_moved);
		for (size_t i = 0; i < n && i < top; i++) {
			if (fmax(fabs(mv[i].fb - mv[i].fa), fabs(mv[i].cb - mv[i].ca)) < 0.5)
				break; /* below half a point is sampling noise */
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "function", mv[i].name);
			cJSON_AddNumberToObject(o, "flat_pct_a", mv[i].fa);
			cJSON_AddNumberToObject(o, "flat_pct_b", mv[i].fb);
			cJSON_AddNumberToObject(o, "cum_pct_a", mv[i].ca);
			cJSON_AddNumberToObject(o, "cum_pct_b", mv[i].cb);
			cJSON_AddItemToArray(arr, o);
		}
		free(mv);
	}
	cJSON *res = cJSON_CreateObject();
	cJSON_AddNumberToObject(res, "samples_a", (double)ta.samples);
	cJSON_AddNumberToObject(res, "samples_b", (double)tb.samples);
	cJSON_AddItemToObject(res, "moved", arr);
	fn_table_release(&ta);
	fn_table_release(&tb);
	return res;
}

/* A group whose count went from a to b: {"a", "b", "change"}, change
 * being "appeared", "grew" or "gone"; the caller adds the rest (reason,
 * stack). */
static cJSON *change_new(size_t a, size_t b)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "a", (double)a);
	cJSON_AddNumberToObject(o, "b", (double)b);
	cJSON_AddStringToObject(o, "change", b == 0 ? "gone" : a ? "grew" : "appeared");
	return o;
}

/* One group of one side, thread or goroutine alike: what the comparison
 * matches (key), counts, and prints (reason, stack). */
struct group_view {
	const char *key;
	size_t count;
	const char *reason; /* NULL for thread groups */
	const void *group;  /* for add_stack */
};

typedef void (*add_stack_fn)(cJSON *stack, const void *group);

/* Groups of one side by key (keys are unique per side: they are how the
 * groups were made). */
static int view_map(const struct group_view *g, size_t n, struct strmap *ret)
{
	for (size_t i = 0; i < n; i++)
		if (strmap_put(ret, g[i].key, i, NULL) < 0)
			return -ENOMEM;
	return 0;
}

static size_t count_in(const struct group_view *g, const struct strmap *m, const char *key,
		       bool *found)
{
	size_t *i = strmap_find(m, key);
	*found = i != NULL;
	return i ? g[*i].count : 0;
}

static void add_change(cJSON *arr, const struct group_view *g, size_t a, size_t b,
		       add_stack_fn add_stack)
{
	cJSON *o = change_new(a, b);
	if (g->reason)
		cJSON_AddStringToObject(o, "reason", g->reason);
	add_stack(cJSON_AddArrayToObject(o, "stack"), g->group);
	cJSON_AddItemToArray(arr, o);
}

/* B's groups that appeared or grew, in B's order; with list_gone, then
 * A's groups that B no longer has. */
static cJSON *diff_groups(const struct group_view *ga, size_t na, const struct strmap *ma,
			  const struct group_view *gb, size_t nb, const struct strmap *mb,
			  bool list_gone, add_stack_fn add_stack)
{
	cJSON *arr = cJSON_CreateArray();
	bool found;
	for (size_t i = 0; i < nb; i++) {
		size_t ca = count_in(ga, ma, gb[i].key, &found);
		if (gb[i].count > ca)
			add_change(arr, &gb[i], ca, gb[i].count, add_stack);
	}
	for (size_t k = 0; list_gone && k < na; k++) {
		count_in(gb, mb, ga[k].key, &found);
		if (!found)
			add_change(arr, &ga[k], ga[k].count, 0, add_stack);
	}
	return arr;
}

static void thread_stack(cJSON *stack, const void *group)
{
	const struct thread_group *g = group;
	for (size_t k = 0; k < g->nframes; k++)
		cJSON_AddItemToArray(stack, cJSON_CreateString(g->frames[k].function));
}

static void goroutine_stack(cJSON *stack, const void *group)
{
	const struct goroutine_group *g = group;
	for (size_t k = 0; k < g->nframes; k++)
		cJSON_AddItemToArray(stack, cJSON_CreateString(g->frames[k]));
}

static struct group_view *thread_views(const struct thread_group *g, size_t n)
{
	struct group_view *v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && i < n; i++)
		v[i] = (struct group_view){g[i].key, g[i].nthreads, NULL, &g[i]};
	return v;
}

static struct group_view *goroutine_views(const struct goroutine_group *g, size_t n)
{
	struct group_view *v = calloc(n + 1, sizeof(*v));
	for (size_t i = 0; v && i < n; i++)
		v[i] = (struct group_view){g[i].key, g[i].count, g[i].reason, &g[i]};
	return v;
}

static int cmp_tid(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The tids of g's threads that have no stack, sorted (for bsearch). */
static int64_t *stackless_tids(const struct thread_group *g, size_t n, size_t *ret_n)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		if (g[i].nframes == 0)
			count += g[i].nthreads;
	int64_t *v = malloc((count + 1) * sizeof(*v));
	if (!v)
		return NULL;
	count = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; g[i].nframes == 0 && k < g[i].nthreads; k++)
			v[count++] = g[i].threads[k].tid;
	qsort(v, count, sizeof(*v), cmp_tid);
	*ret_n = count;
	return v;
}

static cJSON *diff_threads(struct bundle_reader *a, struct bundle_reader *b)
{
	struct thread_group *ga = NULL, *gb = NULL;
	size_t na = 0, nb = 0, nstackless = 0;
	if (thread_groups_build(a, "", &ga, &na) < 0)
		na = 0;
	if (thread_groups_build(b, "", &gb, &nb) < 0) {
		thread_groups_free(ga, na);
		return NULL;
	}
	struct group_view *va = thread_views(ga, na), *vb = thread_views(gb, nb);
	struct strmap ma = STRMAP_INIT, mb = STRMAP_INIT;
	int64_t *stackless_b = stackless_tids(gb, nb, &nstackless);
	cJSON *arr =
		va && vb && stackless_b && view_map(va, na, &ma) == 0 && view_map(vb, nb, &mb) == 0
			? diff_groups(va, na, &ma, vb, nb, &mb, false, thread_stack)
			: NULL;
	/* A's groups that B no longer has: gone, unless every one of their
	 * threads is still in B, only without a stack there (late to stop,
	 * not sampled yet): then nothing is known to have changed. */
	for (size_t k = 0; arr && k < na; k++) {
		bool found;
		count_in(vb, &mb, va[k].key, &found);
		if (found)
			continue;
		bool all_stackless_in_b = ga[k].nthreads > 0;
		for (size_t t = 0; all_stackless_in_b && t < ga[k].nthreads; t++)
			all_stackless_in_b = bsearch(&ga[k].threads[t].tid, stackless_b, nstackless,
						     sizeof(*stackless_b), cmp_tid) != NULL;
		cJSON *o = change_new(va[k].count, 0);
		if (all_stackless_in_b)
			cJSON_ReplaceItemInObject(o, "change", cJSON_CreateString("no_stack_in_b"));
		thread_stack(cJSON_AddArrayToObject(o, "stack"), &ga[k]);
		cJSON_AddItemToArray(arr, o);
	}
	strmap_release(&ma);
	strmap_release(&mb);
	free(stackless_b);
	free(va);
	free(vb);
	thread_groups_free(ga, na);
	thread_groups_free(gb, nb);
	return arr;
}

static int load_goroutines(struct bundle_reader *r, struct goroutine_group **g, size_t *n)
{
	char *txt;
	size_t len;
	*g = NULL;
	*n = 0;
	if (!bundle_reader_has(r, "goroutine.txt") ||
	    bundle_reader_read(r, "goroutine.txt", &txt, &len) < 0)
		return -ENOENT;
	int e = goroutine_groups_parse(txt, g, n);
	free(txt);
	return e;
}

/* Goroutine groups that appeared or grew; unlike thread groups, ones that
 * went away are not listed. */
static cJSON *diff_goroutines(struct bundle_reader *a, struct bundle_reader *b)
{
	struct goroutine_group *ga, *gb;
	size_t na, nb;
	int ea = load_goroutines(a, &ga, &na), eb = load_goroutines(b, &gb, &nb);
	if (ea < 0 && eb < 0)
		return NULL;
	struct group_view *va = goroutine_views(ga, na), *vb = goroutine_views(gb, nb);
	struct strmap ma = STRMAP_INIT, mb = STRMAP_INIT;
	cJSON *arr = va && vb && view_map(va, na, &ma) == 0 && view_map(vb, nb, &mb) == 0
			     ? diff_groups(va, na, &ma, vb, nb, &mb, false, goroutine_stack)
			     : NULL;
	strmap_release(&ma);
	strmap_release(&mb);
	free(va);
	free(vb);
	goroutine_groups_free(ga, na);
	goroutine_groups_free(gb, nb);
	return arr;
}

static cJSON *side(const struct bundle_reader *r)
{
	const cJSON *m = bundle_reader_manifest(r);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "bundle", bundle_reader_dir(r));
	static const char *const keys[] = {"bundle_id", "started_at", "ended_at", "mode", "target"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const cJSON *it = cJSON_GetObjectItemCaseSensitive(m, keys[i]);
		if (it)
			cJSON_AddItemToObject(o, keys[i], cJSON_Duplicate(it, true));
	}
	return o;
}

int diff_build_json(struct bundle_reader *a, struct bundle_reader *b, size_t top, cJSON **ret)
{
	cJSON *d = cJSON_CreateObject();
	if (!d)
		return -ENOMEM;
	cJSON_AddItemToObject(d, "a", side(a));
	cJSON_AddItemToObject(d, "b", side(b));
	cJSON_AddItemToObject(d, "counters", diff_counters(a, b));
	cJSON *fns = cJSON_AddObjectToObject(d, "functions");
	cJSON *f = diff_functions(a, b, "cpu.pprof", top);
	if (f)
		cJSON_AddItemToObject(fns, "cpu", f);
	f = diff_functions(a, b, "wall.pprof", top);
	if (f)
		cJSON_AddItemToObject(fns, "wall", f);
	cJSON *t = diff_threads(a, b);
	if (t)
		cJSON_AddItemToObject(d, "thread_groups", t);
	t = diff_goroutines(a, b);
	if (t)
		cJSON_AddItemToObject(d, "goroutine_groups", t);
	/* What either reader refused is missing above: refuse the comparison
	 * rather than show half of it. */
	if (bundle_reader_refusal(a) || bundle_reader_refusal(b)) {
		cJSON_Delete(d);
		return BUNDLE_PAST_CAP;
	}
	*ret = d;
	return 0;
}
