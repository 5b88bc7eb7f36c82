/* SPDX-License-Identifier: MIT */
/*
 * Integration tests for symbolize/go/goheap.h against
 * tests/targets/go/heap (recipe §16.3, heap): our copy of the stopped
 * target's heap profile must equal the target's own
 * pprof.Lookup("heap").WriteTo(f, 1) and (f, 0) taken right after, except
 * for the records the dump itself creates (new buckets, all zero until the
 * next GC publishes them, or stacks through runtime/pprof). A fixture
 * without runtime/pprof reports heap profiling as disabled.
 */
#include "goheap.h"
#include "goroutines.h"
#include "gotest.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

/* ---- our side ---- */

#define MAXREC 20000

struct rec {
	int64_t v[4];        /* debug=1: inuse objs, inuse bytes, alloc objs, alloc bytes; debug=0: the 4 values */
	int64_t bytes_label; /* debug=0 only */
	char *key;           /* "0x.. 0x.." (pcs for debug=1, Location addresses for debug=0) */
	char *names;         /* debug=0: function names of all Location lines, ";"-separated;
			      * Go's debug=1: the record's "#\t..." lines; ours raw: NULL */
	bool used;
};

struct ours {
	const struct go_target *t;
	struct rec raw[MAXREC], loc[MAXREC];
	size_t n;
};

static char *hexlist(const uint64_t *a, size_t n)
{
	char *s = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&s, &len);
	for (size_t i = 0; i < n; i++)
		fprintf(m, "%s%#" PRIx64, i ? " " : "", a[i]);
	fclose(m);
	return s;
}

static int our_rec(void *ctx, const struct go_heap_record *r)
{
	struct ours *o = ctx;
	cr_assert_lt(o->n, MAXREC);
	struct rec *a = &o->raw[o->n], *b = &o->loc[o->n];
	*a = (struct rec){.v = {r->allocs - r->frees, r->alloc_bytes - r->free_bytes, r->allocs, r->alloc_bytes}};
	a->key = hexlist(r->pcs, r->npcs);
	*b = (struct rec){.v = {r->alloc_objects, r->alloc_space, r->inuse_objects, r->inuse_space}, .bytes_label = r->block_size};
	b->key = hexlist(r->locs, r->nlocs);
	b->names = calloc(1, GOTEST_NAMES);
	for (size_t i = 0; i < r->nlocs; i++)
		go_target_symbolize_pc(o->t, r->locs[i], gotest_add_name, b->names);
	o->n++;
	return 0;
}

/* ---- Go's debug=1 text ---- */

struct theirs1 {
	int64_t total[4];
	int64_t period2;
	struct rec r[MAXREC];
	size_t n;
};

static void parse_debug1(char *s, struct theirs1 *g)
{
	char *save = NULL;
	memset(g, 0, sizeof(*g));
	for (char *line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long long a, b, c, d, p;
		if (sscanf(line, "heap profile: %lld: %lld [%lld: %lld] @ heap/%lld", &a, &b, &c, &d, &p) == 5) {
			g->total[0] = a, g->total[1] = b, g->total[2] = c, g->total[3] = d, g->period2 = p;
			continue;
		}
		if (line[0] == '#' && g->n > 0) {
			char *t = g->r[g->n - 1].names; /* the record's "#\t..." lines */
			size_t l = t ? strlen(t) : 0;
			t = realloc(t, l + strlen(line) + 2);
			sprintf(t + l, "%s\n", line);
			g->r[g->n - 1].names = t;
			continue;
		}
		char *at = strstr(line, "] @");
		if (!at || sscanf(line, "%lld: %lld [%lld: %lld]", &a, &b, &c, &d) != 4 || g->n == MAXREC)
			continue;
		g->r[g->n] = (struct rec){.v = {a, b, c, d}};
		g->r[g->n].key = strdup(at[3] == ' ' ? at + 4 : at + 3);
		g->n++;
	}
}

/* ---- Go's debug=0 protobuf ---- */

/* A repeated varint field, packed or not. */
static size_t pb_repeated(uint64_t v, const struct pb *sub, uint64_t *out, size_t max)
{
	if (!sub->p) {
		out[0] = v;
		return 1;
	}
	struct pb s = *sub;
	size_t n = 0;
	while (s.p < s.end && n < max)
		out[n++] = pb_varint(&s);
	return n;
}

struct theirs0 {
	char *strs[1 << 16];
	size_t nstrs;
	int64_t period;
	uint64_t period_type[2];
	uint64_t sample_type[8][2];
	size_t nsample_type;
	bool has_default_sample_type;
	struct rec r[MAXREC];
	size_t n;
};

struct loc0 {
	uint64_t id, addr;
	char names[1024];
};

static void parse_debug0(const char *path, struct theirs0 *g)
{
	static uint8_t raw[1 << 24];
	static struct loc0 locs[1 << 15];
	static uint64_t fn_id[1 << 15], fn_name[1 << 15];
	memset(g, 0, sizeof(*g));
	gzFile gz = gzopen(path, "rb");
	cr_assert(gz, "cannot open %s", path);
	int n = gzread(gz, raw, sizeof(raw));
	gzclose(gz);
	cr_assert_gt(n, 0);
	size_t nloc = 0, nfn = 0;
	struct pb top = {raw, raw + n}, sub, s2, s3;
	uint64_t v, w;
	int f, h, k;
	while ((f = pb_next(&top, &v, &sub)) != 0) {
		if (f == 6 && g->nstrs < (1 << 16))
			g->strs[g->nstrs++] = strndup((const char *)sub.p, (size_t)(sub.end - sub.p));
		if (f == 5 && nfn < (1 << 15)) {
			while ((h = pb_next(&sub, &w, &s2)) != 0) {
				if (h == 1) fn_id[nfn] = w;
				if (h == 2) fn_name[nfn] = w;
			}
			nfn++;
		}
		if (f == 12) /* period */
			g->period = (int64_t)v;
		if (f == 14)
			g->has_default_sample_type = true;
		if (f == 1 || f == 11) { /* sample_type, period_type: ValueType{type, unit} */
			uint64_t *vt = f == 1 ? g->sample_type[g->nsample_type++] : g->period_type;
			while ((h = pb_next(&sub, &w, &s2)) != 0)
				if (h == 1 || h == 2)
					vt[h - 1] = w;
		}
	}
	top = (struct pb){raw, raw + n};
	while ((f = pb_next(&top, &v, &sub)) != 0) {
		if (f != 4 || nloc == (1 << 15))
			continue;
		struct loc0 *l = &locs[nloc++];
		l->names[0] = 0;
		while ((h = pb_next(&sub, &w, &s2)) != 0) {
			if (h == 1) l->id = w;
			if (h == 3) l->addr = w;
			if (h == 4) { /* Line{function_id, line} */
				uint64_t x;
				while ((k = pb_next(&s2, &x, &s3)) != 0) {
					if (k != 1)
						continue;
					/* Go numbers functions 1, 2, ... in order */
					size_t i = x - 1 < nfn && fn_id[x - 1] == x ? x - 1 : 0;
					for (; i < nfn; i++)
						if (fn_id[i] == x)
							break;
					if (i < nfn && fn_name[i] < g->nstrs)
						snprintf(l->names + strlen(l->names), sizeof(l->names) - strlen(l->names),
							 "%s;", g->strs[fn_name[i]]);
				}
			}
		}
	}
	top = (struct pb){raw, raw + n};
	while ((f = pb_next(&top, &v, &sub)) != 0) {
		if (f != 2 || g->n == MAXREC)
			continue;
		struct rec *r = &g->r[g->n++];
		memset(r, 0, sizeof(*r));
		uint64_t addrs[1100];
		size_t na = 0;
		r->names = calloc(1, 8192);
		while ((h = pb_next(&sub, &w, &s2)) != 0) {
			uint64_t ids[1100];
			if (h == 1) { /* location_id */
				size_t m = pb_repeated(w, &s2, ids, 1100);
				for (size_t i = 0; i < m; i++) {
					/* Go numbers Locations 1, 2, ... in order */
					size_t j = ids[i] - 1 < nloc && locs[ids[i] - 1].id == ids[i] ? ids[i] - 1 : 0;
					for (; j < nloc; j++)
						if (locs[j].id == ids[i])
							break;
					if (j < nloc && na < 1100) {
						addrs[na++] = locs[j].addr;
						snprintf(r->names + strlen(r->names), 8192 - strlen(r->names), "%s", locs[j].names);
					}
				}
			} else if (h == 2) { /* value */
				size_t m = pb_repeated(w, &s2, ids, 4);
				for (size_t i = 0; i < m && i < 4; i++)
					r->v[i] = (int64_t)ids[i];
			} else if (h == 3) { /* Label{key, str, num} */
				uint64_t x, key = 0, num = 0;
				while ((k = pb_next(&s2, &x, &s3)) != 0) {
					if (k == 1) key = x;
					if (k == 3) num = x;
				}
				if (key < g->nstrs && !strcmp(g->strs[key], "bytes"))
					r->bytes_label = (int64_t)num;
			}
		}
		r->key = hexlist(addrs, na);
	}
}

static const char *str_at(struct theirs0 *g, uint64_t i)
{
	return i < g->nstrs ? g->strs[i] : "?";
}

/* ---- the comparison ---- */

static bool zero(const int64_t v[4])
{
	return !v[0] && !v[1] && !v[2] && !v[3];
}

static int cmp_rec(const void *a, const void *b)
{
	return strcmp(((const struct rec *)a)->key, ((const struct rec *)b)->key);
}

/* First index in sorted theirs whose key is >= key. */
static size_t lower_bound(const struct rec *theirs, size_t nt, const char *key)
{
	size_t lo = 0, hi = nt;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(theirs[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Multiset match on (key, values); sorts theirs by key. tol allows
 * |diff| <= tol per value (Go's math.Exp against glibc's exp; 0 when
 * nothing is scaled). Returns how many of ours matched. */
static size_t match(struct rec *ours, size_t no, struct rec *theirs, size_t nt, int64_t tol, bool label)
{
	qsort(theirs, nt, sizeof(*theirs), cmp_rec);
	size_t matched = 0;
	for (size_t i = 0; i < no; i++) {
		bool found = false;
		for (size_t j = lower_bound(theirs, nt, ours[i].key); j < nt && !found; j++) {
			if (strcmp(ours[i].key, theirs[j].key) != 0)
				break;
			if (theirs[j].used)
				continue;
			bool eq = !label || ours[i].bytes_label == theirs[j].bytes_label;
			for (int k = 0; k < 4; k++)
				eq = eq && llabs(ours[i].v[k] - theirs[j].v[k]) <= tol;
			if (eq) {
				theirs[j].used = found = true;
				/* the Location lines agree too */
				if (ours[i].names && theirs[j].names)
					cr_expect_str_eq(ours[i].names, theirs[j].names, "Location lines differ for %s",
							 ours[i].key);
			}
		}
		if (!found)
			cr_log_error("ours not in Go's: [%lld %lld %lld %lld] @ %s %s", (long long)ours[i].v[0],
				     (long long)ours[i].v[1], (long long)ours[i].v[2], (long long)ours[i].v[3], ours[i].key,
				     ours[i].names ? ours[i].names : "");
		matched += found;
	}
	return matched;
}

struct heap_run {
	struct go_heap_stats stats;
	struct go_heap_totals totals;
	int64_t rate;
	struct ours *ours;
	struct theirs1 *t1;
	struct theirs0 *t0;
};

/* Starts the fixture, captures its heap profile during a stop, then has it
 * write its own debug=1 and debug=0 profiles. */
static void run_heap(const char *name, const char *exe, char *const envp[], struct heap_run *res)
{
	struct child c;
	struct go_target *t = gotest_start(&c, exe, envp);
	cr_assert(go_heap_supported(t));
	struct go_heap_config cfg;
	cr_assert_eq(go_heap_read_config(t, stopper_read, (void *)(intptr_t)c.pid, &cfg), 0);
	cr_assert(!cfg.disabled_by_linker);
	cr_assert_gt(cfg.rate, 0);

	struct stopper st;
	cr_assert_eq(stopper_stop(&st, c.pid), 0);
	struct go_heap *h = NULL;
	int r = go_heap_capture(t, stopper_read, (void *)(intptr_t)c.pid, &h);
	stopper_release(&st);
	cr_assert_eq(r, 0, "go_heap_capture: %s", strerror(-r));
	go_heap_stats(h, &res->stats);
	go_heap_totals(h, &res->totals);
	res->rate = go_heap_rate(h);
	cr_assert_eq(res->rate, cfg.rate);
	res->ours = calloc(1, sizeof(*res->ours));
	res->ours->t = t;
	cr_assert_eq(go_heap_foreach_record(h, our_rec, res->ours), 0);
	cr_assert_eq(res->ours->n, res->stats.buckets);
	go_heap_free(h);
	fprintf(stderr, "%s: go_heap_capture of %zu buckets: %.3f ms, %zu read calls, %zu bytes\n", name,
		res->stats.buckets, res->stats.pause_ns / 1e6, res->stats.read_calls, res->stats.bytes_read);

	/* the target keeps running and answering; its own profiles */
	char p1[600], p0[600];
	snprintf(p1, sizeof(p1), "heap1 %s/goheap-%s-theirs1.txt", gotest_outdir(), name);
	snprintf(p0, sizeof(p0), "heap0 %s/goheap-%s-theirs0.pb.gz", gotest_outdir(), name);
	cr_assert_eq(child_cmd(&c, p1), 0);
	cr_assert_eq(child_cmd(&c, p0), 0);
	char *text = gotest_slurp(p1 + 6);
	cr_assert(text);
	res->t1 = calloc(1, sizeof(*res->t1));
	parse_debug1(text, res->t1);
	free(text);
	res->t0 = calloc(1, sizeof(*res->t0));
	parse_debug0(p0 + 6, res->t0);
	gotest_quit(&c);
	go_target_free(t);
	res->ours->t = NULL;
}

/* Go's extras may only be records the dump created. */
static void check_extras1(struct theirs1 *g)
{
	for (size_t j = 0; j < g->n; j++) {
		if (g->r[j].used || zero(g->r[j].v))
			continue;
		const char *t = g->r[j].names ? g->r[j].names : "";
		cr_expect(strstr(t, "runtime/pprof.") || strstr(t, "compress/"),
			  "Go's debug=1 record not in ours: %s\n%s", g->r[j].key, t);
	}
}

static void check_extras0(struct theirs0 *g)
{
	for (size_t j = 0; j < g->n; j++) {
		if (g->r[j].used || zero(g->r[j].v))
			continue;
		cr_expect(strstr(g->r[j].names, "runtime/pprof.") || strstr(g->r[j].names, "compress/"),
			  "Go's debug=0 sample not in ours: %s %s", g->r[j].key, g->r[j].names);
	}
}

static void check_against_go(struct heap_run *res, int64_t tol)
{
	struct ours *o = res->ours;
	struct theirs1 *g1 = res->t1;
	struct theirs0 *g0 = res->t0;
	/* totals line: exact (the dump's own buckets are all zero until the next GC) */
	const struct go_heap_totals *T = &res->totals;
	cr_assert_eq(g1->total[0], T->allocs - T->frees);
	cr_assert_eq(g1->total[1], T->alloc_bytes - T->free_bytes);
	cr_assert_eq(g1->total[2], T->allocs);
	cr_assert_eq(g1->total[3], T->alloc_bytes);
	cr_assert_eq(g1->period2, 2 * res->rate);
	/* debug=1: raw counts and raw PCs */
	cr_assert_geq(g1->n, o->n);
	size_t m1 = match(o->raw, o->n, g1->r, g1->n, 0, false);
	cr_assert_eq(m1, o->n, "%zu of our %zu records in Go's debug=1", m1, o->n);
	check_extras1(g1);
	/* debug=0: header, then scaled values, the bytes label and Location addresses */
	cr_assert_eq(g0->period, res->rate);
	cr_assert_str_eq(str_at(g0, g0->period_type[0]), "space");
	cr_assert_str_eq(str_at(g0, g0->period_type[1]), "bytes");
	cr_assert_eq(g0->nsample_type, 4);
	static const char *const want[4][2] = {
		{"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}};
	for (int i = 0; i < 4; i++) {
		cr_assert_str_eq(str_at(g0, g0->sample_type[i][0]), want[i][0]);
		cr_assert_str_eq(str_at(g0, g0->sample_type[i][1]), want[i][1]);
	}
	cr_assert(!g0->has_default_sample_type);
	size_t m0 = match(o->loc, o->n, g0->r, g0->n, tol, true);
	cr_assert_eq(m0, o->n, "%zu of our %zu records in Go's debug=0", m0, o->n);
	check_extras0(g0);
}

/* The record of an allocation site: its stack and block size (the same
 * stack has other records for the growth of `keep` by append). */
static struct rec *find_names(struct ours *o, const char *prefix, int64_t block)
{
	for (size_t i = 0; i < o->n; i++)
		if (!strncmp(o->loc[i].names, prefix, strlen(prefix)) && o->loc[i].bytes_label == block)
			return &o->loc[i];
	return NULL;
}

static void free_run(struct heap_run *res)
{
	for (size_t i = 0; i < res->ours->n; i++) {
		free(res->ours->raw[i].key);
		free(res->ours->loc[i].key);
		free(res->ours->loc[i].names);
	}
	for (size_t i = 0; i < res->t1->n; i++) {
		free(res->t1->r[i].key);
		free(res->t1->r[i].names);
	}
	for (size_t i = 0; i < res->t0->n; i++) {
		free(res->t0->r[i].key);
		free(res->t0->r[i].names);
	}
	for (size_t i = 0; i < res->t0->nstrs; i++)
		free(res->t0->strs[i]);
	free(res->ours);
	free(res->t1);
	free(res->t0);
}

static void check_rate1(const char *name, const char *exe)
{
	struct heap_run res;
	char *envp[] = {NULL};
	run_heap(name, exe, envp, &res);
	cr_assert_eq(res.rate, 1);
	cr_assert(!res.stats.truncated && !res.stats.unpublished);
	check_against_go(&res, 0);
	/* the known sites (fixture header), every allocation sampled */
	struct rec *r = find_names(res.ours, "main.allocSmall;main.main;runtime.main;", 64);
	cr_assert(r, "no main.allocSmall record");
	cr_expect_eq(r->v[0], 20000);
	cr_expect_eq(r->v[1], 20000 * 64);
	cr_expect_eq(r->v[2], 1000, "inuse objects %lld", (long long)r->v[2]);
	r = find_names(res.ours, "main.allocLarge;main.main;", 1 << 20);
	cr_assert(r && r->v[0] == 40 && r->v[2] == 4);
	r = find_names(res.ours, "main.leaf;main.middle;main.outer;main.main;runtime.main;", 512);
	cr_assert(r && r->v[0] == 300 && r->v[2] == 300);
	/* the inlined helper shares one Location with its caller */
	r = find_names(res.ours, "main.mk;main.viaInline;main.main;", 4096);
	cr_assert(r && r->v[0] == 500 && r->v[2] == 100);
	cr_assert(strchr(r->key, ' ') && strchr(strchr(r->key, ' ') + 1, ' '), "expected 3+ Locations: %s", r->key);
	/* a goroutine's stack: runtime.goexit dropped */
	r = find_names(res.ours, "main.inGoroutine;main.main.func1;", 128);
	cr_assert(r && r->v[0] == 1000 && r->v[2] == 10, "%s", r ? r->names : "none");
	cr_assert(!strstr(r->names, "goexit"));
	free_run(&res);
}

Test(go_heap, matches_own_profile, .timeout = 60)
{
	check_rate1("r1", GO_HEAP_FIXTURE);
}

/* PIE: every PC and symbol moves by the load bias */
Test(go_heap, matches_own_profile_pie, .timeout = 60)
{
	check_rate1("r1pie", GO_HEAP_FIXTURE_PIE);
}

/* Sampled (rate 4096): values scaled as scaleHeapSample does. */
Test(go_heap, scaled_sampling_rate, .timeout = 60)
{
	struct heap_run res;
	char *envp[] = {"RATE=4096", NULL};
	run_heap("r4096", GO_HEAP_FIXTURE, envp, &res);
	cr_assert_eq(res.rate, 4096);
	check_against_go(&res, 1);
	struct rec *r = find_names(res.ours, "main.allocLarge;main.main;", 1 << 20);
	/* 1 MiB blocks at rate 4096: scale ~1, and nearly all sampled (an
	 * mcache's first nextSample was drawn at the 512 KiB default rate) */
	cr_assert(r && r->v[0] >= 20 && r->v[0] <= 40, "allocLarge %lld", r ? (long long)r->v[0] : -1LL);
	free_run(&res);
}

/* Many buckets: timing of the pause (tests do not assert on time). Its own
 * suite, run by a separate meson test: libcriterion 2.4.1 leaks 48 bytes in
 * its runner (seen under LeakSanitizer) when this long test overlaps the
 * others. */
Test(go_heap_many, many_buckets, .timeout = 120)
{
	struct heap_run res;
	char *envp[] = {"BUCKETS=5000", NULL};
	run_heap("5k", GO_HEAP_FIXTURE, envp, &res);
	cr_assert_geq(res.stats.buckets, 5000);
	check_against_go(&res, 0);
	free_run(&res);
}

/* No runtime/pprof: the linker disabled profiling; capture says so. */
Test(go_heap, disabled_without_pprof, .timeout = 60)
{
	char *envp[] = {NULL};
	struct child c;
	struct go_target *t = gotest_start(&c, GO_NOPPROF_FIXTURE, envp);
	cr_assert(go_heap_supported(t));
	struct go_heap_config cfg = {.rate = -1};
	cr_assert_eq(go_heap_read_config(t, stopper_read, (void *)(intptr_t)c.pid, &cfg), 0);
	cr_assert_eq(cfg.rate, 0);
	cr_assert(cfg.disabled_by_linker);
	struct stopper st;
	cr_assert_eq(stopper_stop(&st, c.pid), 0);
	struct go_heap *h = (struct go_heap *)&cfg; /* must stay untouched */
	int r = go_heap_capture(t, stopper_read, (void *)(intptr_t)c.pid, &h);
	stopper_release(&st);
	cr_assert_eq(r, -ENODATA);
	cr_assert_eq(h, (struct go_heap *)&cfg);
	cr_assert_eq(child_cmd(&c, "ping"), 0, "target still answers");
	child_kill(&c);
	go_target_free(t);
}

/* Stripped (-s -w): no symbols, no layouts. */
/* Stripped (-s -w): no .symtab, so mbuckets, mProfCycle and MemProfileRate
 * come from the runtime's instructions (globals.c) and the bucket layout
 * from the release's row; the records still equal Go's own profile. */
Test(go_heap, matches_own_profile_stripped, .timeout = 60)
{
	struct go_target *t;
	cr_assert_eq(go_target_open(0, GO_HEAP_FIXTURE_STRIPPED, &t), 0);
	cr_expect_str_eq(go_target_heap_globals_source(t), "disasm");
	cr_expect_str_eq(go_target_layout_source(t), "table");
	go_target_free(t);
	check_rate1("r1stripped", GO_HEAP_FIXTURE_STRIPPED);
}

/* Expected values from Go 1.19's scaleHeapSample itself. */
Test(go_heap, scale_formula, .timeout = 60)
{
	static const int64_t cases[][5] = {
		{1, 64, 524288, 8192, 524320},
		{3, 3145728, 524288, 3, 3638089},
		{7, 28672, 4096, 11, 45358},
		{100, 1600, 524288, 3276850, 52429600},
		{5, 80, 2, 5, 80},
		{5, 80, 1, 5, 80},
		{0, 80, 4096, 0, 0},
		{5, 0, 4096, 0, 0},
		/* hostile buckets (fuzz_go_memory found the first overflowing):
		 * what Go's formula gives, saturated where it leaves int64,
		 * never undefined */
		{INT64_MAX, INT64_MAX, 2, INT64_MAX, INT64_MAX},
		{-1, INT64_MIN, 2, -1, INT64_MIN},
		{1, -1, 4096, -4095, 4095},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t c, s;
		go_heap_scale(cases[i][0], cases[i][1], cases[i][2], &c, &s);
		cr_expect_eq(c, cases[i][3], "case %zu: count %lld", i, (long long)c);
		cr_expect_eq(s, cases[i][4], "case %zu: size %lld", i, (long long)s);
	}
}
