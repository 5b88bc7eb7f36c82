/* SPDX-License-Identifier: MIT */
/*
 * go_capture: the part that runs while the target is stopped. It only
 * copies: the runtime globals, allgs, each g (the first L.g_read bytes),
 * the M list, each live stack from its starting sp upwards, and the label
 * sets. Reads are batched GO_READ_MAX_RANGES at a time so that 10,000
 * goroutines cost tens of process_vm_readv calls, not tens of thousands.
 * Everything that can be decided later (system goroutine or not, frames,
 * names) is left to go_snapshot_unwind().
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The most Ms whose creation stack is kept (the threadcreate profile). */
#define MAX_CREATESTACKS 100000

struct rd {
	go_read_mem_fn fn;
	void *ctx;
	struct go_capture_stats *st;
};

/* Reads n ranges in batches; on a failed batch, range by range. ok[i]
 * (optional) tells which ones made it; failed buffers are zeroed. Returns
 * 0 if all were read, -EFAULT otherwise. */
static int rd_ranges(struct rd *r, struct go_mem_range *rg, size_t n, bool *ok)
{
	int ret = 0;
	for (size_t i = 0; i < n; i += GO_READ_MAX_RANGES) {
		size_t k = n - i < GO_READ_MAX_RANGES ? n - i : GO_READ_MAX_RANGES;
		r->st->read_calls++;
		if (r->fn(r->ctx, rg + i, k) == 0) {
			for (size_t j = i; j < i + k; j++) {
				r->st->bytes_read += rg[j].len;
				if (ok)
					ok[j] = true;
			}
			continue;
		}
		for (size_t j = i; j < i + k; j++) {
			r->st->read_calls++;
			bool good = r->fn(r->ctx, &rg[j], 1) == 0;
			if (good)
				r->st->bytes_read += rg[j].len;
			else {
				memset(rg[j].buf, 0, rg[j].len);
				ret = -EFAULT;
			}
			if (ok)
				ok[j] = good;
		}
	}
	return ret;
}

/* Coalesced reads for densely packed objects (g structs come from one
 * size class, so neighbours are a few hundred bytes apart): sort, merge
 * ranges whose gap is at most `gap` bytes, read the merged spans, copy
 * out. process_vm_readv costs ~1.5 us per iovec, so for 10,000 g structs
 * this turns ~17 ms into ~1 ms. */
struct span_ix {
	uint64_t addr;
	size_t i;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span_ix *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int rd_coalesced(struct rd *r, struct go_mem_range *rg, size_t n, bool *ok, size_t gap)
{
	struct span_ix *ix = malloc((n + 1) * sizeof(*ix));
	struct go_mem_range *m = malloc((n + 1) * sizeof(*m));
	size_t *first = malloc((n + 1) * sizeof(*first)); /* first ix of each merged span */
	bool *mok = calloc(n + 1, sizeof(*mok));
	uint8_t *buf = NULL;
	int ret = -ENOMEM;
	if (!ix || !m || !first || !mok)
		goto out;
	for (size_t i = 0; i < n; i++)
		ix[i] = (struct span_ix){rg[i].addr, i};
	qsort(ix, n, sizeof(*ix), cmp_span);
	size_t nm = 0, total = 0;
	for (size_t k = 0; k < n; k++) {
		const struct go_mem_range *c = &rg[ix[k].i];
		if (nm && c->addr >= m[nm - 1].addr && c->addr <= m[nm - 1].addr + m[nm - 1].len + gap &&
		    c->addr + c->len - m[nm - 1].addr <= (1u << 20)) {
			uint64_t end = c->addr + c->len;
			if (end > m[nm - 1].addr + m[nm - 1].len) {
				total += end - (m[nm - 1].addr + m[nm - 1].len);
				m[nm - 1].len = end - m[nm - 1].addr;
			}
		} else {
			first[nm] = k;
			m[nm++] = (struct go_mem_range){c->addr, NULL, c->len};
			total += c->len;
		}
	}
	buf = malloc(total + 1);
	if (!buf)
		goto out;
	for (size_t j = 0, off = 0; j < nm; j++) {
		m[j].buf = buf + off;
		off += m[j].len;
	}
	rd_ranges(r, m, nm, mok);
	ret = 0;
	for (size_t j = 0; j < nm; j++) {
		size_t end = j + 1 < nm ? first[j + 1] : n;
		for (size_t k = first[j]; k < end; k++) {
			struct go_mem_range *c = &rg[ix[k].i];
			if (mok[j]) {
				memcpy(c->buf, (uint8_t *)m[j].buf + (c->addr - m[j].addr), c->len);
				if (ok)
					ok[ix[k].i] = true;
			} else {
				/* e.g. the gap crossed unmapped memory: one by one */
				bool one = false;
				if (rd_ranges(r, c, 1, &one) != 0)
					ret = -EFAULT;
				if (ok)
					ok[ix[k].i] = one;
			}
		}
	}
out:
	free(ix);
	free(m);
	free(first);
	free(mok);
	free(buf);
	return ret;
}

static int rd_one(struct rd *r, uint64_t addr, void *buf, size_t len)
{
	struct go_mem_range rg = {addr, buf, len};
	return rd_ranges(r, &rg, 1, NULL);
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What go_capture() allocates per entry of allgs: its g copy, a merged
 * read of it with the gap rd_coalesced() may span, the go_g, the pointer,
 * the range, the sort index, the merged range and flags. */
static size_t bytes_per_g(const struct go_layout *L)
{
	return 2 * L->g_read + 512 + sizeof(struct go_g) + 8 + 2 * sizeof(struct go_mem_range) +
	       sizeof(struct span_ix) + sizeof(size_t) + 2;
}

static bool past(uint64_t deadline_ns)
{
	return deadline_ns && now_ns(CLOCK_MONOTONIC) >= deadline_ns;
}

/* A status some runtime has (runtime2.go: 0..11, maybe with _Gscan): a
 * "g" read through a forged pointer mostly has none. */
static bool status_plausible(uint32_t status)
{
	return (status & ~(uint32_t)(G_SCAN | 0xf)) == 0 && (status & 0xf) <= G_DEADEXTRA;
}

/* Entries of allgs read at a time between two looks at the deadline. */
#define G_BATCH 16384
/* Pointers of allgs read as one range: the array may end (unmapped)
 * before a forged allglen does, and what precedes stays read. */
#define GPTR_CHUNK 8192

/* ---- labels ---- */

struct pend_str {
	uint64_t kp, kn, vp, vn;
};

/* Reads the strings of npend pairs into ls (deduplicated by key: a map
 * that was mid-grow can show an entry in both the old and new buckets). */
static int read_pairs(struct rd *r, struct pend_str *p, size_t np, struct go_labelset *ls)
{
	ls->labels = calloc(np ? np : 1, sizeof(*ls->labels));
	if (!ls->labels)
		return -ENOMEM;
	struct go_mem_range *rg = calloc(2 * np + 1, sizeof(*rg));
	char **bufs = calloc(2 * np + 1, sizeof(char *));
	if (!rg || !bufs) {
		free(rg);
		free(bufs);
		return -ENOMEM;
	}
	size_t nr = 0;
	for (size_t i = 0; i < np; i++) {
		uint64_t a[2] = {p[i].kp, p[i].vp}, n[2] = {p[i].kn, p[i].vn};
		for (int k = 0; k < 2; k++) {
			size_t len = n[k] > 4096 ? 4096 : n[k]; /* cap absurd lengths */
			bufs[2 * i + k] = calloc(1, len + 1);
			if (bufs[2 * i + k] && len && a[k])
				rg[nr++] = (struct go_mem_range){a[k], bufs[2 * i + k], len};
		}
	}
	rd_ranges(r, rg, nr, NULL);
	for (size_t i = 0; i < np; i++) {
		char *k = bufs[2 * i], *v = bufs[2 * i + 1];
		bool dup = !k || !v;
		for (size_t j = 0; !dup && j < ls->n; j++)
			dup = strcmp(ls->labels[j].key, k) == 0;
		if (dup) {
			free(k);
			free(v);
			continue;
		}
		ls->labels[ls->n++] = (struct go_label){k, v};
	}
	free(rg);
	free(bufs);
	return 0;
}

/* Go <= 1.23: g.labels -> labelMap variable -> *hmap of map[string]string.
 * Layouts of hash<string,string> / bucket<string,string> are the same from
 * 1.12 to 1.23 (recipe §13.1). */
static int read_labels_hmap(struct rd *r, uint64_t lp, size_t max, struct go_labelset *ls)
{
	enum { BUCKET = 272, KEYS = 8, VALS = 136, OVF = 264, MIN_TOPHASH = 5 };
	uint64_t hmap;
	if (rd_one(r, lp, &hmap, 8) != 0 || hmap == 0)
		return read_pairs(r, NULL, 0, ls);
	uint8_t h[48];
	if (rd_one(r, hmap, h, sizeof(h)) != 0)
		return read_pairs(r, NULL, 0, ls);
	uint8_t flags = h[8], B = h[9];
	uint64_t buckets = go_u64(h + 16), old = go_u64(h + 24);
	if (B > 10) /* 1024 buckets: far beyond any label set */
		return -EINVAL;
	size_t cap = 64, nq = 0;
	uint64_t *q = malloc(cap * sizeof(*q));
	struct pend_str *p = NULL;
	size_t np = 0, pcap = 0;
	uint8_t *bk = malloc(BUCKET);
	int ret = -ENOMEM;
	if (!q || !bk)
		goto out;
	for (size_t i = 0; buckets && i < (1u << B); i++) {
		if (nq == cap) {
			uint64_t *nqp = realloc(q, (cap *= 2) * sizeof(*q));
			if (!nqp)
				goto out;
			q = nqp;
		}
		q[nq++] = buckets + i * BUCKET;
	}
	size_t nold = (flags & 8) ? (1u << B) : (B ? 1u << (B - 1) : 1); /* sameSizeGrow = 8 */
	for (size_t i = 0; old && i < nold; i++) {
		if (nq == cap) {
			uint64_t *nqp = realloc(q, (cap *= 2) * sizeof(*q));
			if (!nqp)
				goto out;
			q = nqp;
		}
		q[nq++] = old + i * BUCKET;
	}
	for (size_t qi = 0; qi < nq && qi < 4096; qi++) {
		if (rd_one(r, q[qi], bk, BUCKET) != 0)
			continue;
		for (int s = 0; s < 8 && np < max; s++) {
			if (bk[s] < MIN_TOPHASH)
				continue;
			if (np == pcap) {
				pcap = pcap ? 2 * pcap : 8;
				struct pend_str *np2 = realloc(p, pcap * sizeof(*p));
				if (!np2)
					goto out;
				p = np2;
			}
			const uint8_t *k = bk + KEYS + 16 * s, *v = bk + VALS + 16 * s;
			p[np++] = (struct pend_str){go_u64(k), go_u64(k + 8), go_u64(v), go_u64(v + 8)};
		}
		uint64_t ovf = go_u64(bk + OVF);
		if (ovf) {
			if (nq == cap) {
				uint64_t *nqp = realloc(q, (cap *= 2) * sizeof(*q));
				if (!nqp)
					goto out;
				q = nqp;
			}
			q[nq++] = ovf;
		}
	}
	ret = read_pairs(r, p, np, ls);
out:
	free(q);
	free(p);
	free(bk);
	return ret;
}

/* Go 1.24+: labelMap{LabelSet{list []label}} (1.26: label.Set{List}); a
 * slice header at +0 either way, elements {key, value string} (§13.2). */
static int read_labels_slice(struct rd *r, uint64_t lp, size_t max, struct go_labelset *ls)
{
	uint64_t sh[3];
	if (rd_one(r, lp, sh, sizeof(sh)) != 0 || sh[0] == 0)
		return read_pairs(r, NULL, 0, ls);
	size_t n = sh[1] > max ? max : sh[1];
	uint8_t *el = malloc(n * 32 + 1);
	struct pend_str *p = calloc(n + 1, sizeof(*p));
	int ret = -ENOMEM;
	if (el && p) {
		size_t np = 0;
		if (n && rd_one(r, sh[0], el, n * 32) == 0)
			for (size_t i = 0; i < n; i++, np++)
				p[i] = (struct pend_str){go_u64(el + 32 * i), go_u64(el + 32 * i + 8),
							 go_u64(el + 32 * i + 16), go_u64(el + 32 * i + 24)};
		ret = read_pairs(r, p, np, ls);
	}
	free(el);
	free(p);
	return ret;
}

/* ---- M list ---- */

struct mrec {
	uint64_t addr, procid, curg, vdsosp, vdsopc;
};

static const struct mrec *find_m(const struct mrec *ms, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (ms[i].addr == addr)
			return &ms[i];
	return NULL;
}

/* Where traceback starts (recipe §7, runtime traceback1/gentraceback). */
static void choose_start(struct go_g *g, const struct mrec *ms, size_t nms, const struct go_thread_regs *th,
			 size_t nth)
{
	uint32_t st = g->status & ~(uint32_t)G_SCAN;
	const struct mrec *m = g->m ? find_m(ms, nms, g->m) : NULL;
	g->have_start = false;
	g->start_trap = false;
	if (st == G_SYSCALL) {
		g->start_pc = g->syscall_pc;
		g->start_sp = g->syscall_sp;
		g->have_start = true;
	} else if (m && m->vdsosp) { /* in the vDSO (nanotime): set by vdsoCall */
		g->start_pc = m->vdsopc;
		g->start_sp = m->vdsosp;
		g->have_start = true;
	} else if (st == G_RUNNING) {
		const struct go_thread_regs *r = NULL;
		for (size_t i = 0; m && m->curg == g->addr && i < nth; i++)
			if ((uint64_t)th[i].tid == m->procid)
				r = &th[i];
		if (r && r->sp >= g->stack_lo && r->sp < g->stack_hi) {
			g->start_pc = r->pc;
			g->start_sp = r->sp;
			g->start_trap = true; /* the innermost pc is not a return address */
			g->have_start = true;
		} else if (r && g->sched_sp >= g->stack_lo && g->sched_sp < g->stack_hi && g->sched_pc) {
			/* on g0 inside systemstack(): systemstack_switch saved sched */
			g->start_pc = g->sched_pc;
			g->start_sp = g->sched_sp;
			g->have_start = true;
		}
		/* else: gsignal stack or no thread: "stack unavailable" */
	} else if (g->syscall_sp) {
		g->start_pc = g->syscall_pc;
		g->start_sp = g->syscall_sp;
		g->have_start = true;
	} else {
		g->start_pc = g->sched_pc;
		g->start_sp = g->sched_sp;
		g->have_start = true;
	}
	if (g->have_start && (g->start_sp < g->stack_lo || g->start_sp >= g->stack_hi || g->stack_hi - g->stack_lo > (1ull << 30)))
		g->have_start = false;
}

void go_snapshot_free(struct go_snapshot *s)
{
	if (!s)
		return;
	free(s->createstacks);
	for (size_t i = 0; i < s->ngs; i++) {
		free(s->gs[i].frames);
		free(s->gs[i].pcs);
		free(s->gs[i].locs);
	}
	for (size_t i = 0; i < s->nlsets; i++) {
		for (size_t k = 0; k < s->lsets[i].n; k++) {
			free((char *)s->lsets[i].labels[k].key);
			free((char *)s->lsets[i].labels[k].value);
		}
		free(s->lsets[i].labels);
		free(s->lsets[i].text);
	}
	free(s->lsets);
	free(s->gs);
	free(s->arena);
	free(s);
}

void go_snapshot_stats(const struct go_snapshot *s, struct go_capture_stats *ret)
{
	*ret = s->stats;
}

/* Zero every pointer of p[0..n) that an earlier one repeats. */
static int drop_repeated(uint64_t *p, size_t n)
{
	struct span_ix *ix = malloc((n + 1) * sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		ix[i] = (struct span_ix){p[i], i};
	qsort(ix, n, sizeof(*ix), cmp_span);
	for (size_t k = 0; k < n;) {
		size_t first = ix[k].i, e = k + 1;
		for (; e < n && ix[e].addr == ix[k].addr; e++)
			if (ix[e].i < first)
				first = ix[e].i;
		for (size_t j = k; j < e; j++)
			if (ix[j].i != first)
				p[ix[j].i] = 0;
		k = e;
	}
	free(ix);
	return 0;
}

/* How many entries of allgs to read, out of what runtime.allglen says:
 * never past len(runtime.allgs), which a real runtime keeps equal to it
 * (both are stored under allglock, allgs first), nor past cap(allgs), nor
 * past what the limits allow. hdr: allgs's slice header, or NULL. */
static size_t entries_to_read(uint64_t claimed, const uint64_t *hdr, size_t limit,
			      struct go_capture_stats *st)
{
	uint64_t n = claimed;
	st->allglen_claimed = (size_t)(claimed > SIZE_MAX ? SIZE_MAX : claimed);
	st->allgs_len = -1;
	if (hdr) {
		st->allgs_len = hdr[1] > INT64_MAX ? INT64_MAX : (int64_t)hdr[1];
		uint64_t real = hdr[1] < hdr[2] ? hdr[1] : hdr[2];
		if (n > real) {
			n = real;
			st->cut = GO_CUT_ALLGS;
		}
	}
	st->read_limit = limit;
	if (n > limit) {
		n = limit;
		if (!st->cut)
			st->cut = GO_CUT_LIMIT;
	}
	return (size_t)n;
}

int go_capture(struct go_target *t, go_read_mem_fn read, void *read_ctx, const struct go_thread_regs *threads,
	       size_t nthreads, const struct go_capture_limits *limits, struct go_snapshot **ret)
{
	if (!go_target_can_list_goroutines(t))
		return -ENOTSUP;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	struct go_capture_limits lim = {64 * 1024, 10000000, 1000, GO_CAPTURE_BUDGET_BYTES, 0, false};
	if (limits) {
		lim.defer_parked_stacks = limits->defer_parked_stacks;
		lim.deadline_ns = limits->deadline_ns;
		if (limits->max_stack_bytes)
			lim.max_stack_bytes = limits->max_stack_bytes;
		if (limits->max_goroutines)
			lim.max_goroutines = limits->max_goroutines;
		if (limits->max_labels)
			lim.max_labels = limits->max_labels;
		if (limits->max_bytes)
			lim.max_bytes = limits->max_bytes;
	}
	const struct go_layout *L = &t->L;
	struct go_snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->t = t;
	/* The runtime's nanotime() is CLOCK_MONOTONIC (vDSO); a target in
	 * another time namespace would need /proc/PID/timens_offsets. */
	s->nanotime = (int64_t)t0;
	struct rd r = {read, read_ctx, &s->stats};
	uint64_t bias = t->bias;
	uint8_t *gbuf = NULL;
	uint64_t *gptrs = NULL;
	struct go_mem_range *rg = NULL;
	bool *ok = NULL;
	struct mrec *ms = NULL;
	int ret_code = -ENOMEM;

	/* A: the globals, one batch; allgs's slice header too, where allglen
	 * is a global of its own (a stripped binary's allglen is that
	 * header's len already) */
	uint64_t allglen = 0, allgptr = 0, allm = 0, allgs_hdr[3] = {0, 0, 0};
	uint32_t fing = 0;
	struct go_mem_range a[5] = {
		{t->sym_allglen + bias, &allglen, 8},
		{(t->sym_allgptr ? t->sym_allgptr : t->sym_allgs) + bias, &allgptr, 8},
		{t->sym_allm + bias, &allm, 8},
	};
	size_t na = 3;
	if (t->sym_fingrunning) /* bool, <= 1.19 */
		a[na++] = (struct go_mem_range){t->sym_fingrunning + bias, &fing, 1};
	else if (t->sym_fingstatus) /* uint32, 1.20+ */
		a[na++] = (struct go_mem_range){t->sym_fingstatus + bias, &fing, 4};
	bool have_hdr = t->sym_allgs != 0;
	if (have_hdr)
		a[na++] = (struct go_mem_range){t->sym_allgs + bias, allgs_hdr, sizeof(allgs_hdr)};
	if (rd_ranges(&r, a, na, NULL) != 0) {
		ret_code = -EIO;
		goto fail;
	}
	/* 1.20+: fingRunningFinalizer = 2 (fingCreated = 1, fingWait = 4, fingWake = 8) */
	s->fing_running = t->sym_fingrunning ? (fing & 0xff) != 0 : (fing & 2) != 0;
	size_t per_g = bytes_per_g(L);
	size_t limit = lim.max_bytes / per_g < lim.max_goroutines ? lim.max_bytes / per_g
								 : lim.max_goroutines;
	size_t n = entries_to_read(allglen, have_hdr ? allgs_hdr : NULL, limit, &s->stats);

	/* B: allgs, in chunks: what precedes an unmapped end is kept */
	gptrs = calloc(n + 1, 8);
	ok = calloc(n + 1, sizeof(bool));
	rg = calloc(n + 1, sizeof(*rg));
	gbuf = malloc(n * L->g_read + 1);
	s->gs = calloc(n + 1, sizeof(*s->gs));
	if (!gptrs || !ok || !rg || !gbuf || !s->gs)
		goto fail;
	size_t nchunks = (n + GPTR_CHUNK - 1) / GPTR_CHUNK;
	for (size_t c = 0; c < nchunks; c++) {
		size_t first = c * GPTR_CHUNK, k = n - first < GPTR_CHUNK ? n - first : GPTR_CHUNK;
		rg[c] = (struct go_mem_range){allgptr + first * 8, gptrs + first, k * 8};
	}
	rd_ranges(&r, rg, nchunks, ok);
	for (size_t c = 0; c < nchunks; c++) {
		if (ok[c])
			continue;
		if (c == 0) {
			ret_code = -EIO;
			goto fail;
		}
		n = c * GPTR_CHUNK;
		if (!s->stats.cut)
			s->stats.cut = GO_CUT_UNREADABLE;
		break;
	}
	memset(ok, 0, (n + 1) * sizeof(bool));
	/* A real allgs holds each g once; past its end (a forged length),
	 * the heap holds older copies of the array too: each g is read once. */
	if (s->stats.cut && drop_repeated(gptrs, n) < 0)
		goto fail;

	/* C: every g, a batch at a time, with a look at the deadline after
	 * each: those not reached are left out */
	size_t done = 0;
	while (done < n) {
		size_t k = n - done < G_BATCH ? n - done : G_BATCH;
		for (size_t i = done; i < done + k; i++)
			rg[i] = (struct go_mem_range){gptrs[i], gbuf + i * L->g_read, L->g_read};
		if (rd_coalesced(&r, rg + done, k, ok + done, 512) == -ENOMEM)
			goto fail;
		done += k;
		if (done < n && past(lim.deadline_ns)) {
			n = done;
			if (!s->stats.cut)
				s->stats.cut = GO_CUT_DEADLINE;
		}
	}
	s->stats.allglen = n;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *b = gbuf + i * L->g_read;
		struct go_g *g = &s->gs[s->ngs];
		memset(g, 0, sizeof(*g));
		g->labelset = -1;
		g->addr = gptrs[i];
		if (!ok[i] || !gptrs[i] || !status_plausible(go_u32(b + L->g_atomicstatus))) {
			s->stats.unreadable++;
			continue;
		}
		g->readable = true;
		g->status = go_u32(b + L->g_atomicstatus);
		uint32_t st = g->status & ~(uint32_t)G_SCAN;
		if (st == G_DEAD || st == G_DEADEXTRA)
			continue;
		g->goid = go_u64(b + L->g_goid);
		g->stack_lo = go_u64(b + L->g_stack_lo);
		g->stack_hi = go_u64(b + L->g_stack_hi);
		/* A live goroutine has a stack (the runtime's are 2 KiB to
		 * 1 GiB) and an id; what a forged pointer reads mostly has
		 * neither, and is not shown as a goroutine. */
		if (!g->goid || g->stack_hi <= g->stack_lo || g->stack_hi - g->stack_lo > (1ull << 30)) {
			g->readable = false;
			s->stats.unreadable++;
			continue;
		}
		g->m = go_u64(b + L->g_m);
		g->sched_sp = go_u64(b + L->g_sched_sp);
		g->sched_pc = go_u64(b + L->g_sched_pc);
		g->syscall_sp = L->g_syscallsp >= 0 ? go_u64(b + L->g_syscallsp) : 0;
		g->syscall_pc = L->g_syscallpc >= 0 ? go_u64(b + L->g_syscallpc) : 0;
		g->waitsince = L->g_waitsince >= 0 ? (int64_t)go_u64(b + L->g_waitsince) : 0;
		g->waitreason = L->g_waitreason >= 0 ? b[L->g_waitreason] : 0;
		g->lockedm = L->g_lockedm >= 0 ? go_u64(b + L->g_lockedm) : 0;
		g->gopc = go_u64(b + L->g_gopc);
		g->startpc = go_u64(b + L->g_startpc);
		g->labels = L->g_labels >= 0 ? go_u64(b + L->g_labels) : 0;
		g->parent_goid = L->g_parentgoid >= 0 ? go_u64(b + L->g_parentgoid) : 0;
		s->ngs++;
	}
	s->stats.goroutines = s->ngs;

	/* D: the Ms, for running goroutines and vDSO calls. Few, so serial. */
	size_t nms = 0, mcap = 16, cs_cap = 0;
	ms = calloc(mcap, sizeof(*ms));
	uint8_t *mb = malloc(L->m_read);
	if (!ms || !mb) {
		free(mb);
		goto fail;
	}
	for (uint64_t m = allm; m && nms < 100000; ) {
		if (rd_one(&r, m, mb, L->m_read) != 0)
			break;
		if (nms == mcap) {
			struct mrec *nm = realloc(ms, (mcap *= 2) * sizeof(*ms));
			if (!nm) {
				free(mb);
				goto fail;
			}
			ms = nm;
		}
		/* the threadcreate profile: each M's creation stack, as
		 * runtime.ThreadCreateProfile copies it (allm order) */
		if (L->m_createstack >= 0 && nms < MAX_CREATESTACKS) {
			if (s->ncreatestacks == cs_cap) {
				size_t ncap = cs_cap ? 2 * cs_cap : 16;
				uint64_t *cs = realloc(s->createstacks, ncap * 8 * GO_CREATESTACK);
				if (cs) {
					s->createstacks = cs;
					cs_cap = ncap;
				}
			}
			if (s->ncreatestacks < cs_cap)
				memcpy(s->createstacks + s->ncreatestacks++ * GO_CREATESTACK,
				       mb + L->m_createstack, 8 * GO_CREATESTACK);
		}
		ms[nms++] = (struct mrec){m, go_u64(mb + L->m_procid), go_u64(mb + L->m_curg),
					  L->m_vdsosp >= 0 ? go_u64(mb + L->m_vdsosp) : 0,
					  L->m_vdsopc >= 0 ? go_u64(mb + L->m_vdsopc) : 0};
		m = go_u64(mb + L->m_alllink);
	}
	free(mb);

	/* E: the stacks, into one arena (deferred ones get their place in
	 * it later, so the pause does not fault in memory for them), all of
	 * them within max_bytes: a forged stack bound is 64 KiB at most, but
	 * 200,000 of them would be 12 GiB */
	size_t total = 0, budgeted = 0;
	for (size_t i = 0; i < s->ngs; i++) {
		struct go_g *g = &s->gs[i];
		choose_start(g, ms, nms, threads, nthreads);
		if (!g->have_start)
			continue;
		size_t len = g->stack_hi - g->start_sp;
		if (len > lim.max_stack_bytes) {
			len = lim.max_stack_bytes;
			g->truncated = true;
			s->stats.stacks_truncated++;
		}
		if (len > lim.max_bytes - budgeted) {
			g->have_start = false; /* "stack unavailable" */
			s->stats.stacks_over_budget++;
			continue;
		}
		budgeted += len;
		g->copy_len = len;
		if (len && lim.defer_parked_stacks && (g->status & ~(uint32_t)G_SCAN) == G_WAITING) {
			g->deferred = true;
			s->stats.stacks_deferred++;
			continue;
		}
		g->copy_off = total;
		total += len;
	}
	s->arena = malloc(total + 1);
	if (!s->arena)
		goto fail;
	s->arena_len = total;
	size_t nr = 0;
	for (size_t i = 0; i < s->ngs; i++) {
		struct go_g *g = &s->gs[i];
		if (!g->have_start || !g->copy_len || g->deferred)
			continue;
		rg[nr++] = (struct go_mem_range){g->start_sp, s->arena + g->copy_off, g->copy_len};
	}
	s->deferred_pending = s->stats.stacks_deferred > 0;
	/* A batch at a time, as rd_ranges reads them, with a look at the
	 * deadline between: a stack not copied prints "stack unavailable". */
	memset(ok, 0, (nr + 1) * sizeof(bool));
	size_t copied = 0;
	while (copied < nr && !past(lim.deadline_ns)) {
		size_t k = nr - copied < GO_READ_MAX_RANGES ? nr - copied : GO_READ_MAX_RANGES;
		rd_ranges(&r, rg + copied, k, ok + copied);
		copied += k;
	}
	if (copied < nr && !s->stats.cut)
		s->stats.cut = GO_CUT_DEADLINE;
	for (size_t i = 0, k = 0; i < s->ngs; i++) {
		struct go_g *g = &s->gs[i];
		if (g->have_start && g->copy_len && !g->deferred) {
			g->copy_ok = ok[k];
			if (k >= copied)
				s->stats.stacks_past_deadline++;
			else if (!g->copy_ok)
				s->stats.unreadable++;
			k++;
		}
	}

	/* F: label sets, one per distinct g.labels pointer (children inherit
	 * their parent's pointer, so this is usually far fewer than goroutines) */
	for (size_t i = 0; i < s->ngs && !past(lim.deadline_ns); i++) {
		struct go_g *g = &s->gs[i];
		if (!g->labels)
			continue;
		size_t k;
		for (k = 0; k < s->nlsets; k++)
			if (s->lsets[k].ptr == g->labels)
				break;
		if (k == s->nlsets) {
			if ((s->nlsets & (s->nlsets - 1)) == 0) {
				struct go_labelset *nl = realloc(s->lsets, (s->nlsets ? 2 * s->nlsets : 1) * sizeof(*nl));
				if (!nl)
					goto fail;
				s->lsets = nl;
			}
			struct go_labelset *ls = &s->lsets[s->nlsets];
			memset(ls, 0, sizeof(*ls));
			ls->ptr = g->labels;
			s->nlsets++;
			int lr = t->minor >= 24 ? read_labels_slice(&r, g->labels, lim.max_labels, ls)
						: read_labels_hmap(&r, g->labels, lim.max_labels, ls);
			if (lr == -ENOMEM)
				goto fail;
		}
		g->labelset = (int)k;
	}

	free(gbuf);
	free(gptrs);
	free(rg);
	free(ok);
	free(ms);
	s->stats.pause_ns = now_ns(CLOCK_MONOTONIC) - t0;
	*ret = s;
	return 0;
fail:
	free(gbuf);
	free(gptrs);
	free(rg);
	free(ok);
	free(ms);
	go_snapshot_free(s);
	return ret_code;
}

size_t go_capture_heap_hint(struct go_target *t, go_read_mem_fn read, void *read_ctx)
{
	if (!go_target_can_list_goroutines(t))
		return 0;
	struct go_capture_stats st = {0};
	struct rd r = {read, read_ctx, &st};
	uint64_t allglen = 0;
	if (rd_one(&r, t->sym_allglen + t->bias, &allglen, 8) != 0)
		return 0;
	/* Doubled, since goroutines come and go; never past the budget the
	 * capture itself keeps to, whatever allglen says. */
	size_t per = bytes_per_g(&t->L);
	uint64_t hint = allglen < GO_CAPTURE_BUDGET_BYTES / per ? allglen * per * 2 : GO_CAPTURE_BUDGET_BYTES;
	return (size_t)(hint < GO_CAPTURE_BUDGET_BYTES ? hint : GO_CAPTURE_BUDGET_BYTES);
}

int go_capture_parked(struct go_snapshot *s, go_read_mem_fn read, void *read_ctx)
{
	if (!s->deferred_pending)
		return 0;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	const struct go_layout *L = &s->t->L;
	struct rd r = {read, read_ctx, &s->stats};
	size_t n = s->stats.stacks_deferred;
	struct go_mem_range *rg = calloc(n + 1, sizeof(*rg));
	bool *ok = calloc(n + 1, sizeof(*ok));
	bool *hok = calloc(n + 1, sizeof(*hok));
	uint8_t *gbuf = malloc(n * L->g_read + 1);
	size_t *which = calloc(n + 1, sizeof(*which));
	int ret = -ENOMEM;
	if (!rg || !ok || !hok || !gbuf || !which)
		goto out;
	size_t total = s->arena_len;
	for (size_t i = 0; i < s->ngs; i++) {
		struct go_g *g = &s->gs[i];
		if (g->deferred) {
			g->copy_off = total;
			total += g->copy_len;
		}
	}
	uint8_t *arena = realloc(s->arena, total + 1);
	if (!arena)
		goto out;
	s->arena = arena;
	s->arena_len = total;
	size_t k = 0;
	for (size_t i = 0; i < s->ngs && k < n; i++) {
		struct go_g *g = &s->gs[i];
		if (!g->deferred)
			continue;
		which[k] = i;
		rg[k++] = (struct go_mem_range){g->start_sp, s->arena + g->copy_off, g->copy_len};
	}
	/* Stacks first, then the headers: a goroutine that ran at any point
	 * before its header is read again shows it there. */
	rd_ranges(&r, rg, k, ok);
	for (size_t j = 0; j < k; j++)
		rg[j] = (struct go_mem_range){s->gs[which[j]].addr, gbuf + j * L->g_read, L->g_read};
	if (rd_coalesced(&r, rg, k, hok, 512) == -ENOMEM)
		goto out;
	for (size_t j = 0; j < k; j++) {
		struct go_g *g = &s->gs[which[j]];
		const uint8_t *b = gbuf + j * L->g_read;
		bool same = hok[j] &&
			    (go_u32(b + L->g_atomicstatus) & ~(uint32_t)G_SCAN) ==
				    (g->status & ~(uint32_t)G_SCAN) &&
			    go_u64(b + L->g_goid) == g->goid &&
			    go_u64(b + L->g_sched_sp) == g->sched_sp &&
			    go_u64(b + L->g_sched_pc) == g->sched_pc &&
			    go_u64(b + L->g_stack_lo) == g->stack_lo &&
			    go_u64(b + L->g_stack_hi) == g->stack_hi;
		g->copy_ok = ok[j] && same;
		if (!ok[j])
			s->stats.unreadable++;
		else if (!same)
			s->stats.stacks_changed++;
	}
	s->deferred_pending = false;
	ret = 0;
out:
	free(rg);
	free(ok);
	free(hok);
	free(gbuf);
	free(which);
	s->stats.parked_ns = now_ns(CLOCK_MONOTONIC) - t0;
	return ret;
}

/*
 * runtime.gcount(): allglen - sched.gFree.n - sched.ngsys - sum(p.gFree.n).
 * Needs the schedt and p layouts from DWARF; without them we fall back to
 * allglen, which also counts dead goroutines kept for reuse.
 * heap_live: gcController.heapLive, the bytes the GC considers live (marked
 * by the last cycle plus allocated since), what GODEBUG=gctrace calls the
 * live heap; -1 without DWARF.
 */
int go_read_counters(struct go_target *t, go_read_mem_fn read, void *read_ctx, int64_t *ret_goroutines,
		     int64_t *ret_heap_live)
{
	if (!t->sym_allglen)
		return -ENOTSUP;
	struct go_capture_stats st = {0};
	struct rd r = {read, read_ctx, &st};
	const struct go_layout *L = &t->L;
	uint64_t allglen = 0, allp[2] = {0, 0}, heaplive = 0;
	int32_t gfree = 0;
	uint32_t ngsys = 0;
	bool full = t->have_layout && t->sym_sched && t->sym_allp && L->sched_gfree_n >= 0 && L->sched_ngsys >= 0 &&
		    L->p_gfree_n >= 0;
	struct go_mem_range a[5] = {{t->sym_allglen + t->bias, &allglen, 8}};
	size_t na = 1;
	bool have_heap = t->have_layout && t->sym_gccontroller && L->gc_heaplive >= 0;
	if (have_heap)
		a[na++] = (struct go_mem_range){t->sym_gccontroller + t->bias + (uint64_t)L->gc_heaplive, &heaplive, 8};
	if (full) {
		a[na++] = (struct go_mem_range){t->sym_sched + t->bias + (uint64_t)L->sched_gfree_n, &gfree, 4};
		a[na++] = (struct go_mem_range){t->sym_sched + t->bias + (uint64_t)L->sched_ngsys, &ngsys, 4};
		a[na++] = (struct go_mem_range){t->sym_allp + t->bias, allp, 16};
	}
	if (rd_ranges(&r, a, na, NULL) != 0)
		return -EIO;
	int64_t n = (int64_t)allglen;
	if (full && allp[1] <= 4096) {
		n -= gfree + (int64_t)ngsys;
		uint64_t pp[4096];
		if (allp[1] && rd_one(&r, allp[0], pp, allp[1] * 8) == 0) {
			struct go_mem_range prg[GO_READ_MAX_RANGES];
			int32_t pn[GO_READ_MAX_RANGES] = {0};
			size_t k = allp[1] > GO_READ_MAX_RANGES ? GO_READ_MAX_RANGES : allp[1];
			for (size_t i = 0; i < k; i++)
				prg[i] = (struct go_mem_range){pp[i] + (uint64_t)L->p_gfree_n, &pn[i], 4};
			rd_ranges(&r, prg, k, NULL);
			for (size_t i = 0; i < k; i++)
				n -= pn[i];
		}
		if (n < 1)
			n = 1;
	}
	if (ret_goroutines)
		*ret_goroutines = n;
	if (ret_heap_live)
		*ret_heap_live = have_heap ? (int64_t)heaplive : -1;
	return 0;
}
