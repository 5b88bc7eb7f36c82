/* SPDX-License-Identifier: MIT */
/*
 * go_heap: runtime.MemProfile(p, inuseZero=true) done from outside.
 *
 * The pause only copies: the globals (mbuckets, the profile cycle,
 * MemProfileRate), then the bucket list through allnext. Each memory
 * bucket is a persistentalloc'ed block {header, stk[nstk], memRecord};
 * buckets are never freed, so the list is stable while the target is
 * stopped. persistentalloc bumps upwards and new buckets are pushed at the
 * head of the list, so walking it goes mostly downwards through the same
 * chunks: we read a window reaching 64 KiB below each miss and serve the
 * following buckets from it (a few read calls instead of one per bucket).
 *
 * After the release, the counts are combined the way MemProfile would
 * (flush of the current cycle, the "clear" branch), and the stacks become
 * pprof Locations the way runtime/pprof's profileBuilder does it (hide
 * leading runtime frames, expandFinalInlineFrame, pcDeck grouping).
 */
#include "goheap.h"
#include "internal.h"
#include "symbolize/arrays.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Caps against a corrupt (or cyclic) list. Go 1.19 records 32 frames;
 * 1.23+ up to GODEBUG profstackdepth, whose maximum is 1024. */
#define MAX_BUCKETS 1000000u
#define MAX_NSTK 1024u
#define PAGE 4096u
/* 64 KiB: a 5,000-bucket list took ~100 read calls with it, ~290 with
 * 16 KiB, and 128 KiB was not faster (more bytes copied per call). */
#define WINDOW (64u * 1024u)

struct hbucket {
	uint64_t size;
	size_t stk_off, nstk;      /* into h->pcs */
	int64_t cyc[4][4];         /* active, future[0..2] x {allocs, frees, alloc_bytes, free_bytes} */
	int64_t rec[4];            /* combined as MemProfile would */
	size_t loc_off, nlocs;     /* into h->locs, after go_heap_foreach_record's first call */
};

struct go_heap {
	const struct go_target *t;
	int64_t rate;
	uint32_t cycle;
	struct hbucket *b;
	size_t nb, cap_b;
	uint64_t *pcs;
	size_t npcs, cap_pcs;
	uint64_t *locs;
	size_t nlocs;
	bool have_locs;
	struct go_heap_stats stats;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool go_heap_supported(const struct go_target *t)
{
	return t->have_heap_layout && t->sym_mbuckets && (t->sym_mprofcycle || t->sym_mprof) && t->sym_memprofilerate;
}

int go_heap_read_config(struct go_target *t, go_read_mem_fn read, void *read_ctx, struct go_heap_config *ret)
{
	if (!go_heap_supported(t))
		return -ENOTSUP;
	int64_t rate = 0;
	uint8_t disabled = 0;
	struct go_mem_range rg[2] = {{t->sym_memprofilerate + t->bias, &rate, 8}};
	size_t n = 1;
	if (t->sym_disablememprof)
		rg[n++] = (struct go_mem_range){t->sym_disablememprof + t->bias, &disabled, 1};
	int r = read(read_ctx, rg, n);
	if (r < 0)
		return r;
	*ret = (struct go_heap_config){.rate = rate, .disabled_by_linker = disabled != 0};
	return 0;
}

/* ---- the pause ---- */

struct win {
	go_read_mem_fn fn;
	void *ctx;
	struct go_heap_stats *st;
	uint8_t *buf;
	uint64_t base;
	size_t len;
};

static int win_read(struct win *w, uint64_t lo, uint64_t hi)
{
	struct go_mem_range rg = {lo, w->buf, (size_t)(hi - lo)};
	w->st->read_calls++;
	int r = w->fn(w->ctx, &rg, 1);
	if (r < 0) {
		w->len = 0;
		return r;
	}
	w->st->bytes_read += rg.len;
	w->base = lo;
	w->len = rg.len;
	return 0;
}

/* Makes [addr, addr+len) available in w->buf. Tries a window that ends at
 * most a page above the range and reaches WINDOW below it, then just the
 * pages the range touches (the window can run into an unmapped page at
 * either end of a persistentalloc chunk). */
static const uint8_t *win_get(struct win *w, uint64_t addr, size_t len)
{
	if (addr >= w->base && addr + len <= w->base + w->len)
		return w->buf + (addr - w->base);
	uint64_t top = (addr + len + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	uint64_t lo = top - WINDOW;
	if (lo > addr) /* wrapped */
		lo = addr & ~(uint64_t)(PAGE - 1);
	if (win_read(w, lo, top) == 0)
		return w->buf + (addr - w->base);
	lo = addr & ~(uint64_t)(PAGE - 1);
	top = (addr + len + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	if (win_read(w, lo, top) == 0)
		return w->buf + (addr - w->base);
	return NULL;
}

static int64_t field(const uint8_t *p, int off)
{
	return off >= 0 ? (int64_t)go_u64(p + off) : 0;
}

/* int64 arithmetic as Go does it: wrapping, where C's signed overflow
 * would be undefined (a hostile bucket's counts are the target's). */
static int64_t add_go(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t sub_go(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* MemProfile: flush future[cycle % 3] into active (done by every call),
 * and if that leaves no bucket with allocs or frees (no GC has published
 * anything yet), add all three future cycles instead. */
static void combine(struct go_heap *h)
{
	size_t idx = h->cycle % 3;
	bool clear = true;
	for (size_t i = 0; i < h->nb; i++) {
		struct hbucket *b = &h->b[i];
		for (int k = 0; k < 4; k++)
			b->rec[k] = add_go(b->cyc[0][k], b->cyc[1 + idx][k]);
		if (b->rec[0] != 0 || b->rec[1] != 0)
			clear = false;
	}
	if (!clear)
		return;
	h->stats.unpublished = true;
	for (size_t i = 0; i < h->nb; i++) {
		struct hbucket *b = &h->b[i];
		for (int k = 0; k < 4; k++)
			b->rec[k] = add_go(add_go(b->cyc[0][k], b->cyc[1][k]), add_go(b->cyc[2][k], b->cyc[3][k]));
	}
}

int go_heap_capture(struct go_target *t, go_read_mem_fn read, void *read_ctx, struct go_heap **ret)
{
	uint64_t t0 = now_ns();
	if (!go_heap_supported(t))
		return -ENOTSUP;
	const struct go_heap_layout *H = &t->HL;
	struct go_heap *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->t = t;

	uint64_t head = 0;
	uint32_t cycle = 0;
	int64_t rate = 0;
	struct go_mem_range rg[3] = {
		{t->sym_mbuckets + t->bias, &head, 8},
		/* 1.19+: mProfCycleHolder{value}, cycle << 1 | flushed;
		 * 1.18: mProf{cycle uint32, flushed bool} */
		{(t->sym_mprofcycle ? t->sym_mprofcycle : t->sym_mprof) + t->bias, &cycle, 4},
		{t->sym_memprofilerate + t->bias, &rate, 8},
	};
	h->stats.read_calls++;
	int r = read(read_ctx, rg, 3);
	if (r < 0)
		goto fail;
	h->stats.bytes_read += 20;
	if (rate == 0) {
		r = -ENODATA;
		goto fail;
	}
	h->rate = rate;
	h->cycle = t->sym_mprofcycle ? cycle >> 1 : cycle;

	size_t hdr = (size_t)H->bucket_size;
	size_t rec_size = (size_t)H->mr_future + 3 * (size_t)H->cyc_size;
	if ((size_t)H->mr_active + (size_t)H->cyc_size > rec_size)
		rec_size = (size_t)H->mr_active + (size_t)H->cyc_size;
	size_t reach = hdr + 8 * MAX_NSTK + rec_size; /* the largest bucket */
	struct win w = {.fn = read, .ctx = read_ctx, .st = &h->stats};
	w.buf = malloc(WINDOW + reach + 2 * PAGE);
	if (!w.buf) {
		r = -ENOMEM;
		goto fail;
	}
	for (uint64_t a = head; a; ) {
		if (h->nb == MAX_BUCKETS) {
			h->stats.truncated = true;
			break;
		}
		const uint8_t *p = win_get(&w, a, hdr);
		uint64_t nstk = p ? go_u64(p + H->b_nstk) : 0;
		/* memProfile == 1 (mprof.go, all versions): anything else in
		 * mbuckets means we are reading garbage */
		if (!p || nstk > MAX_NSTK || (H->b_typ >= 0 && go_u64(p + H->b_typ) != 1)) {
			if (a == head && h->nb == 0) {
				r = -EIO;
				free(w.buf);
				goto fail;
			}
			h->stats.truncated = true;
			break;
		}
		size_t full = hdr + 8 * (size_t)nstk + rec_size;
		if (!(p = win_get(&w, a, full))) {
			h->stats.truncated = true;
			break;
		}
		if (array_reserve(&h->b, &h->cap_b, h->nb + 1, sizeof(*h->b), 256) < 0 ||
		    array_reserve(&h->pcs, &h->cap_pcs, h->npcs + nstk, sizeof(*h->pcs), 256) < 0) {
			r = -ENOMEM;
			free(w.buf);
			goto fail;
		}
		struct hbucket *b = &h->b[h->nb++];
		memset(b, 0, sizeof(*b));
		b->size = go_u64(p + H->b_size);
		b->stk_off = h->npcs;
		b->nstk = (size_t)nstk;
		if (nstk)
			memcpy(h->pcs + h->npcs, p + hdr, 8 * (size_t)nstk);
		h->npcs += (size_t)nstk;
		const uint8_t *mr = p + hdr + 8 * (size_t)nstk;
		for (int c = 0; c < 4; c++) {
			const uint8_t *cy = mr + (c == 0 ? H->mr_active : H->mr_future + (c - 1) * H->cyc_size);
			int64_t allocs = field(cy, H->cyc_allocs), frees = field(cy, H->cyc_frees);
			b->cyc[c][0] = allocs;
			b->cyc[c][1] = frees;
			/* newer runtimes keep counts only: bytes = count * size */
			b->cyc[c][2] = H->cyc_alloc_bytes >= 0 ? field(cy, H->cyc_alloc_bytes) : allocs * (int64_t)b->size;
			b->cyc[c][3] = H->cyc_free_bytes >= 0 ? field(cy, H->cyc_free_bytes) : frees * (int64_t)b->size;
		}
		a = go_u64(p + H->b_allnext);
	}
	free(w.buf);
	combine(h);
	h->stats.buckets = h->nb;
	h->stats.pause_ns = now_ns() - t0;
	*ret = h;
	return 0;
fail:
	go_heap_free(h);
	return r;
}

int64_t go_heap_rate(const struct go_heap *h)
{
	return h->rate;
}

void go_heap_stats(const struct go_heap *h, struct go_heap_stats *ret)
{
	*ret = h->stats;
}

void go_heap_totals(const struct go_heap *h, struct go_heap_totals *ret)
{
	*ret = (struct go_heap_totals){0};
	for (size_t i = 0; i < h->nb; i++) {
		ret->allocs = add_go(ret->allocs, h->b[i].rec[0]);
		ret->frees = add_go(ret->frees, h->b[i].rec[1]);
		ret->alloc_bytes = add_go(ret->alloc_bytes, h->b[i].rec[2]);
		ret->free_bytes = add_go(ret->free_bytes, h->b[i].rec[3]);
	}
}

void go_heap_free(struct go_heap *h)
{
	if (!h)
		return;
	free(h->b);
	free(h->pcs);
	free(h->locs);
	free(h);
}

/* A bucket's counts are the target's to write: a value no real program
 * reaches must saturate, not overflow (undefined in C). NaN (0/0 of a
 * hostile bucket) is 0. */
int64_t go_clamp_to_int64(double v)
{
	if (v != v)
		return 0;
	if (v >= 9223372036854775807.0)
		return INT64_MAX;
	if (v <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)v;
}

void go_heap_scale(int64_t count, int64_t size, int64_t rate, int64_t *ret_count, int64_t *ret_size)
{
	if (count == 0 || size == 0) {
		*ret_count = *ret_size = 0;
		return;
	}
	if (rate <= 1) {
		*ret_count = count;
		*ret_size = size;
		return;
	}
	/* Go's math.Exp and glibc's exp may differ in the last bit; after the
	 * truncation below that can, rarely, move a value by one. */
	double avg = (double)size / (double)count;
	double scale = 1 / (1 - exp(-avg / (double)rate));
	*ret_count = go_clamp_to_int64((double)count * scale);
	*ret_size = go_clamp_to_int64((double)size * scale);
}

/* ---- stacks to Locations (runtime/pprof, go1.19) ---- */

/* runtime.FuncForPC(pc).Name(): the inlined function at pc itself (not
 * pc-1), else the physical one; NULL if pc is not in Go code. */
static const char *func_for_pc(const struct go_target *t, uint64_t linkpc)
{
	struct go_func f;
	if (!go_findfunc(t, linkpc, &f))
		return NULL;
	uint64_t tree = go_funcdata(t, &f, FUNCDATA_INLTREE);
	if (tree) {
		int32_t ix = go_pcdata(t, &f, PCDATA_INLTREE, linkpc);
		struct go_inl ic;
		if (ix >= 0 && go_inltree_at(t, tree, ix, &ic)) {
			const char *n = go_funcname_off(t, ic.nameoff);
			return n ? n : "";
		}
	}
	const char *n = go_funcname(t, &f);
	return n ? n : "";
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool elide_wrapper_calling(const struct go_target *t, int callee)
{
	return !(callee == t->fid_gopanic || callee == t->fid_sigpanic || callee == t->fid_panicwrap);
}

/* runtime_expandFinalInlineFrame (symtab.go): a stack cut at the depth
 * limit inside inlined code gets its callers' fake PCs back. Link-time
 * pcs in and out; out has room for n + 1000. */
static size_t expand_final(const struct go_target *t, const uint64_t *in, size_t n, uint64_t *out)
{
	memcpy(out, in, n * sizeof(*in));
	if (n == 0)
		return 0;
	uint64_t pc = in[n - 1], tracepc = pc - 1;
	struct go_func f;
	if (!go_findfunc(t, tracepc, &f))
		return n;
	uint64_t tree = go_funcdata(t, &f, FUNCDATA_INLTREE);
	if (!tree)
		return n;
	size_t k = n - 1;
	int last = 0; /* funcID_normal */
	for (int d = 0; d < 999; d++) {
		int32_t ix = go_pcdata(t, &f, PCDATA_INLTREE, tracepc);
		struct go_inl ic;
		if (ix < 0 || !go_inltree_at(t, tree, ix, &ic))
			break;
		if (!(ic.funcid == t->fid_wrapper && elide_wrapper_calling(t, last)))
			out[k++] = pc;
		last = ic.funcid;
		tracepc = f.entry + (uint64_t)(int64_t)ic.parent_pc;
		pc = tracepc + 1;
	}
	out[k++] = pc;
	return k;
}

/* What runtime.CallersFrames([]uintptr{pc}) yields: one frame. */
struct hframe {
	uint64_t pc;       /* Frame.PC: pc - 1 unless pc is the entry */
	uint64_t entry;
	const char *name;
	bool inlined;      /* Frame.Func == nil */
};

static bool frame_at(const struct go_target *t, uint64_t pc, struct hframe *ret)
{
	struct go_func f;
	/* findfunc on pc, then pc-- (symtab.go Frames.Next) */
	if (!go_findfunc(t, pc, &f))
		return false;
	if (pc > f.entry)
		pc--;
	ret->pc = pc;
	ret->entry = f.entry;
	ret->inlined = false;
	ret->name = go_funcname(t, &f);
	uint64_t tree = go_funcdata(t, &f, FUNCDATA_INLTREE);
	struct go_inl ic;
	int32_t ix;
	if (tree && (ix = go_pcdata(t, &f, PCDATA_INLTREE, pc)) >= 0 && go_inltree_at(t, tree, ix, &ic)) {
		ret->name = go_funcname_off(t, ic.nameoff);
		ret->inlined = true;
	}
	if (!ret->name)
		ret->name = "";
	return true;
}

/* appendLocsForStack with pcDeck.tryAdd/emitLocation (proto.go). The
 * profileBuilder's cache of Locations by first PC is left out: it only
 * short-cuts the same grouping. Link-time pcs in, run-time addrs out. */
static size_t locs_for_stack(const struct go_target *t, const uint64_t *stk, size_t n, uint64_t *out)
{
	size_t nout = 0;
	struct hframe last = {0}, first = {0};
	size_t deck = 0;
	for (size_t i = 0; i < n; i++) {
		struct hframe fr;
		bool ok = frame_at(t, stk[i], &fr);
		if (!ok || !strcmp(fr.name, "runtime.goexit")) {
			/* no frames (non-Go pc, or goexit): flush, skip */
			if (deck)
				out[nout++] = first.pc + t->bias;
			deck = 0;
			continue;
		}
		if (deck && (!last.inlined || last.entry == 0 || fr.entry == 0 || last.entry != fr.entry ||
			     !strcmp(last.name, fr.name))) {
			out[nout++] = first.pc + t->bias;
			deck = 0;
		}
		if (!deck)
			first = fr;
		last = fr;
		deck++;
	}
	if (deck)
		out[nout++] = first.pc + t->bias;
	return nout;
}

size_t go_pprof_locations(const struct go_target *t, const uint64_t *stk, size_t n, uint64_t *out)
{
	uint64_t *expanded = malloc((n + 1000) * sizeof(*expanded));
	if (!expanded)
		return 0;
	size_t k = expand_final(t, stk, n, expanded);
	size_t nlocs = locs_for_stack(t, expanded, k, out);
	free(expanded);
	return nlocs;
}

static int build_locs(struct go_heap *h)
{
	const struct go_target *t = h->t;
	size_t maxn = 0;
	for (size_t i = 0; i < h->nb; i++)
		if (h->b[i].nstk > maxn)
			maxn = h->b[i].nstk;
	uint64_t *stk = malloc((maxn + 1000) * sizeof(*stk));
	uint64_t *tmp = malloc((maxn + 1000) * sizeof(*tmp));
	size_t cap = 0;
	int r = 0;
	if (!stk || !tmp) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < h->nb; i++) {
		struct hbucket *b = &h->b[i];
		/* no bucket with a stack: h->pcs is NULL (and NULL + 0 undefined) */
		const uint64_t *pcs = b->nstk ? h->pcs + b->stk_off : NULL;
		for (size_t k = 0; k < b->nstk; k++)
			tmp[k] = pcs[k] - t->bias;
		if (array_reserve(&h->locs, &cap, h->nlocs + b->nstk + 1000, sizeof(*h->locs), 256) < 0) {
			r = -ENOMEM;
			goto out;
		}
		b->loc_off = h->nlocs;
		b->nlocs = 0;
		/* writeHeapProto: first with leading runtime.* frames hidden
		 * (FuncForPC at the return PC), then, if no Location is left,
		 * with all frames */
		for (int hide = 1; hide >= 0 && b->nlocs == 0; hide--) {
			size_t skip = 0;
			if (hide) {
				for (size_t k = 0; k < b->nstk; k++) {
					const char *name = func_for_pc(t, tmp[k]);
					/* 1.24 on hides internal/runtime/... (the
					 * maps, atomics) the same way */
					if (name && (has_prefix(name, "runtime.") ||
						     (t->minor >= 24 && has_prefix(name, "internal/runtime/"))))
						continue;
					skip = k;
					break;
				}
			}
			size_t n = expand_final(t, tmp + skip, b->nstk - skip, stk);
			b->nlocs = locs_for_stack(t, stk, n, h->locs + h->nlocs);
		}
		h->nlocs += b->nlocs;
	}
	h->have_locs = true;
out:
	free(stk);
	free(tmp);
	return r;
}

int go_heap_foreach_record(struct go_heap *h, go_heap_record_fn cb, void *ctx)
{
	if (!h->have_locs) {
		int r = build_locs(h);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < h->nb; i++) {
		const struct hbucket *b = &h->b[i];
		struct go_heap_record rec = {
			.allocs = b->rec[0], .frees = b->rec[1], .alloc_bytes = b->rec[2], .free_bytes = b->rec[3],
			.block_size = b->rec[0] > 0 ? b->rec[2] / b->rec[0] : 0,
			.pcs = b->nstk ? h->pcs + b->stk_off : NULL, .npcs = b->nstk,
			.locs = b->nlocs ? h->locs + b->loc_off : NULL, .nlocs = b->nlocs,
		};
		go_heap_scale(rec.allocs, rec.alloc_bytes, h->rate, &rec.alloc_objects, &rec.alloc_space);
		go_heap_scale(sub_go(rec.allocs, rec.frees), sub_go(rec.alloc_bytes, rec.free_bytes),
			      h->rate, &rec.inuse_objects, &rec.inuse_space);
		int r = cb(ctx, &rec);
		if (r)
			return r;
	}
	return 0;
}
