/* SPDX-License-Identifier: MIT */
/*
 * The threadcreate, block and mutex profiles (goprofiles.h).
 *
 * Block and mutex buckets are the heap's (mprof.go: {bucket header,
 * stk[nstk], record}) with a blockRecord{count float64, cycles int64} after
 * the stack, on their own lists (bbuckets, xbuckets) and never freed. The
 * lists are short (a bucket per distinct blocking call site), so each
 * bucket is two reads: its header, then its stack and record.
 */
#include "goprofiles.h"
#include "internal.h"
#include "symbolize/arrays.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#define MAX_BUCKETS 100000u
#define MAX_NSTK 1024u
/* All the stacks' PCs together: real programs have a few thousand; a
 * forged list is cut here (truncated), not at 100,000 x 1024. */
#define MAX_PCS (1u << 20)
#define BLOCK_RECORD 16 /* blockRecord: count float64, cycles int64 */

/* ---- threadcreate ---- */

/* A createstack's length: up to its first 0 (runtime.StackRecord.Stack). */
static size_t stack_len(const uint64_t *stk)
{
	size_t n = 0;
	while (n < GO_CREATESTACK && stk[n])
		n++;
	return n;
}

static const uint64_t *sort_base;

static int by_stack(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, k = *(const size_t *)b;
	return memcmp(sort_base + i * GO_CREATESTACK, sort_base + k * GO_CREATESTACK, 8 * GO_CREATESTACK);
}

bool go_threadcreate_supported(const struct go_target *t)
{
	return t->have_layout && t->L.m_createstack >= 0;
}

int go_snapshot_foreach_threadcreate(struct go_snapshot *s, go_threadcreate_fn cb, void *ctx)
{
	const struct go_target *t = s->t;
	if (t->L.m_createstack < 0)
		return -ENOTSUP;
	size_t n = s->ncreatestacks;
	size_t *order = malloc((n ? n : 1) * sizeof(*order));
	uint64_t *locs = malloc((GO_CREATESTACK + 1000) * sizeof(*locs));
	if (!order || !locs) {
		free(order);
		free(locs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	/* printCountProfile counts each distinct stack: identical ones adjacent */
	sort_base = s->createstacks;
	qsort(order, n, sizeof(*order), by_stack);
	int r = 0;
	for (size_t i = 0; i < n && !r;) {
		const uint64_t *stk = s->createstacks + order[i] * GO_CREATESTACK;
		size_t k = i + 1;
		while (k < n && memcmp(stk, s->createstacks + order[k] * GO_CREATESTACK, 8 * GO_CREATESTACK) == 0)
			k++;
		uint64_t link[GO_CREATESTACK];
		size_t len = stack_len(stk);
		for (size_t j = 0; j < len; j++)
			link[j] = stk[j] - t->bias;
		struct go_threadcreate_sample smp = {.count = (int64_t)(k - i), .locs = locs};
		smp.nlocs = go_pprof_locations(t, link, len, locs);
		r = cb(ctx, &smp);
		i = k;
	}
	free(order);
	free(locs);
	return r;
}

/* ---- block and mutex ---- */

struct cbucket {
	double count;
	int64_t cycles;
	size_t stk_off, nstk; /* into c->pcs */
	size_t loc_off, nlocs; /* into c->locs, once built */
};

struct go_contention {
	const struct go_target *t;
	enum go_contention_kind kind;
	int64_t rate;
	uint64_t ticks;        /* runtime.ticks.val at the capture, 0: not measured */
	struct cbucket *b;
	size_t nb, cap_b;
	uint64_t *pcs;         /* run-time return addresses */
	size_t npcs, cap_pcs;
	uint64_t *locs;
	size_t nlocs;
	bool have_locs, truncated;
	double tps;            /* ticks per second used, once known */
};

const char *go_target_contention_globals_source(const struct go_target *t)
{
	return t->contention_globals_source ? t->contention_globals_source : "none";
}

bool go_contention_supported(const struct go_target *t, enum go_contention_kind kind)
{
	uint64_t list = kind == GO_BLOCK_PROFILE ? t->sym_bbuckets : t->sym_xbuckets;
	uint64_t rate = kind == GO_BLOCK_PROFILE ? t->sym_blockrate : t->sym_mutexrate;
	return t->have_heap_layout && list && rate;
}

void go_contention_free(struct go_contention *c)
{
	if (!c)
		return;
	free(c->b);
	free(c->pcs);
	free(c->locs);
	free(c);
}

int go_contention_capture(struct go_target *t, enum go_contention_kind kind, go_read_mem_fn read,
			  void *read_ctx, struct go_contention **ret)
{
	if (!go_contention_supported(t, kind))
		return -ENOTSUP;
	const struct go_heap_layout *H = &t->HL;
	uint64_t head = 0, ticks = 0;
	int64_t rate = 0;
	struct go_mem_range rg[2] = {
		{(kind == GO_BLOCK_PROFILE ? t->sym_bbuckets : t->sym_xbuckets) + t->bias, &head, 8},
		{(kind == GO_BLOCK_PROFILE ? t->sym_blockrate : t->sym_mutexrate) + t->bias, &rate, 8},
	};
	int r = read(read_ctx, rg, 2);
	if (r < 0)
		return r;
	/* ticks.val apart: an address from the code that reads wrong costs
	 * the runtime's rate (measured here instead), not the profile */
	struct go_mem_range tr = {t->sym_ticksval + t->bias, &ticks, 8};
	if (!t->sym_ticksval || read(read_ctx, &tr, 1) < 0)
		ticks = 0;
	if (!head && rate == 0)
		return -ENODATA;
	struct go_contention *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->t = t;
	c->kind = kind;
	c->rate = rate;
	c->ticks = ticks;
	/* bucketType: memProfile 1, blockProfile 2, mutexProfile 3 (mprof.go) */
	uint64_t typ = kind == GO_BLOCK_PROFILE ? 2 : 3;
	size_t hdr = (size_t)H->bucket_size;
	uint8_t *buf = malloc(hdr + 8 * MAX_NSTK + BLOCK_RECORD);
	if (!buf) {
		go_contention_free(c);
		return -ENOMEM;
	}
	/* Brent's cycle check: a forged allnext loop ends at once */
	uint64_t saved = head;
	size_t power = 1, lam = 0;
	for (uint64_t a = head; a;) {
		if (c->nb == MAX_BUCKETS || c->npcs > MAX_PCS) {
			c->truncated = true;
			break;
		}
		if (c->nb && a == saved) {
			c->truncated = true;
			break;
		}
		if (++lam == power) {
			saved = a;
			power *= 2;
			lam = 0;
		}
		struct go_mem_range h = {a, buf, hdr};
		uint64_t nstk = 0;
		bool ok = read(read_ctx, &h, 1) == 0;
		if (ok) {
			nstk = go_u64(buf + H->b_nstk);
			ok = nstk <= MAX_NSTK && (H->b_typ < 0 || go_u64(buf + H->b_typ) == typ);
		}
		struct go_mem_range rest = {a + hdr, buf + hdr, 8 * (size_t)nstk + BLOCK_RECORD};
		ok = ok && read(read_ctx, &rest, 1) == 0;
		if (!ok) {
			if (a == head) {
				free(buf);
				go_contention_free(c);
				return -EIO;
			}
			c->truncated = true;
			break;
		}
		if (array_reserve(&c->b, &c->cap_b, c->nb + 1, sizeof(*c->b), 64) < 0 ||
		    array_reserve(&c->pcs, &c->cap_pcs, c->npcs + nstk + 1, sizeof(*c->pcs), 64) < 0) {
			free(buf);
			go_contention_free(c);
			return -ENOMEM;
		}
		struct cbucket *b = &c->b[c->nb++];
		memset(b, 0, sizeof(*b));
		b->stk_off = c->npcs;
		b->nstk = (size_t)nstk;
		memcpy(c->pcs + c->npcs, buf + hdr, 8 * (size_t)nstk);
		c->npcs += (size_t)nstk;
		memcpy(&b->count, buf + hdr + 8 * nstk, 8);
		b->cycles = (int64_t)go_u64(buf + hdr + 8 * nstk + 8);
		a = go_u64(buf + H->b_allnext);
	}
	free(buf);
	*ret = c;
	return 0;
}

/* One reading of CLOCK_MONOTONIC and the TSC at the same moment: the
 * clock read between two RDTSCs, the tightest of a few tries kept, so a
 * preemption between the two reads (hundreds of microseconds on a busy
 * box, percents of a 20 ms measurement) never skews the rate. */
static void paired_reading(double *ns, double *tsc)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 8; i++) {
		struct timespec ts;
		uint64_t before = __rdtsc();
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t after = __rdtsc();
		if (after >= before && after - before < best) {
			best = after - before;
			*ns = (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
			*tsc = (double)before + (double)(after - before) / 2;
		}
	}
}

/* The runtime's cputicks are the TSC (RDTSC on amd64), which every
 * process reads alike: when it has not measured their rate yet, measure
 * it here as it would, against CLOCK_MONOTONIC (its nanotime), over 20 ms,
 * once per process (the rate is the machine's). */
static double measure_ticks_per_second(void)
{
	static double measured;
	if (measured > 0)
		return measured;
	double t0 = 0, c0 = 0, t1 = 0, c1 = 0;
	paired_reading(&t0, &c0);
	struct timespec pause = {0, 20 * 1000 * 1000};
	nanosleep(&pause, NULL);
	paired_reading(&t1, &c1);
	measured = t1 > t0 && c1 > c0 ? (c1 - c0) * 1e9 / (t1 - t0) : 0;
	return measured;
}

static double ticks_per_second(struct go_contention *c)
{
	if (c->tps <= 0)
		c->tps = c->ticks > 0 && c->ticks < (1ull << 50) ? (double)c->ticks : measure_ticks_per_second();
	return c->tps;
}

void go_contention_info(struct go_contention *c, struct go_contention_info *ret)
{
	*ret = (struct go_contention_info){
		.rate = c->rate,
		.buckets = c->nb,
		.truncated = c->truncated,
		.ticks_per_second = ticks_per_second(c),
		.ticks_from_runtime = c->ticks > 0 && c->ticks < (1ull << 50),
	};
}

static int build_locs(struct go_contention *c)
{
	uint64_t *link = malloc((MAX_NSTK + 1) * sizeof(*link));
	size_t cap = 0;
	if (!link)
		return -ENOMEM;
	for (size_t i = 0; i < c->nb; i++) {
		struct cbucket *b = &c->b[i];
		for (size_t k = 0; k < b->nstk; k++)
			link[k] = c->pcs[b->stk_off + k] - c->t->bias;
		if (array_reserve(&c->locs, &cap, c->nlocs + b->nstk + 1000, sizeof(*c->locs), 64) < 0) {
			free(link);
			return -ENOMEM;
		}
		b->loc_off = c->nlocs;
		b->nlocs = go_pprof_locations(c->t, link, b->nstk, c->locs + c->nlocs);
		c->nlocs += b->nlocs;
	}
	free(link);
	c->have_locs = true;
	return 0;
}

static int by_cycles_desc(const void *a, const void *b)
{
	const struct cbucket *x = a, *y = b;
	return x->cycles > y->cycles ? -1 : x->cycles < y->cycles;
}

int go_contention_foreach(struct go_contention *c, go_contention_fn cb, void *ctx)
{
	if (!c->have_locs) {
		/* writeProfileInternal sorts by cycles, most first */
		qsort(c->b, c->nb, sizeof(*c->b), by_cycles_desc);
		int r = build_locs(c);
		if (r < 0)
			return r;
	}
	double ghz = ticks_per_second(c) / 1e9;
	/* Go 1.19's runtime/pprof scaled the mutex profile by the sampling
	 * period (scaleMutexProfile); from 1.20 the runtime records it scaled */
	double scale = c->kind == GO_MUTEX_PROFILE && c->t->minor < 20 ? (double)c->rate : 1;
	for (size_t i = 0; i < c->nb; i++) {
		const struct cbucket *b = &c->b[i];
		int64_t count = go_clamp_to_int64(b->count);
		/* BlockProfile: "Prevent callers from having to worry about
		 * division by zero errors" */
		if (c->kind == GO_BLOCK_PROFILE && count == 0)
			count = 1;
		double ns = ghz > 0 ? (double)b->cycles / ghz : 0;
		struct go_contention_record rec = {
			.contentions = go_clamp_to_int64((double)count * scale),
			.delay_ns = go_clamp_to_int64(ns * scale),
			.locs = b->nlocs ? c->locs + b->loc_off : NULL,
			.nlocs = b->nlocs,
		};
		int r = cb(ctx, &rec);
		if (r)
			return r;
	}
	return 0;
}
