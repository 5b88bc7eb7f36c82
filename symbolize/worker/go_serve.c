/* The worker's side of a Go target (go_serve.h), and the tracer's decoding
 * of what it sends back. */
#include "symbolize/target_access.h"
#include "symbolize/worker/go_serve.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "bundle/profile.h"
#include "symbolize/go/goheap.h"
#include "symbolize/go/goprofiles.h"
#include "symbolize/go/goroutines.h"
#include "symbolize/worker/symtab.h"

#define MAX_GO_FRAMES GO_NAMES_MAX_FRAMES
#define MAX_GO_LABELS 64
#define MAX_HELD_THREADS 4096

struct go_served {
	pid_t pid;
	int open_status;
	struct go_target *target;
	struct go_snapshot *snap; /* from the last GO_REQ_HELD */
	int parked_error;         /* go_capture_parked() ran out of memory */
	struct go_heap *heap;     /* heap-profile buckets from the same stop */
	int heap_error;
	struct go_contention *contention[2]; /* block, mutex: from the same stop */
	int contention_error[2];
	int capture_error;
	uint64_t capture_ns;
	uint32_t held_ms; /* what the tracer gave the last capture (GO_REQ_HELD) */
	/* Interned strings of the frames handed to the pprof writers. */
	char **strings;
	size_t nstrings, strings_cap;
};

static uint64_t now_ns(int clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* All-or-nothing vectored read (target_access.h: a pread each on the
 * worker's read-only /proc/PID/mem); go_capture retries failed batches
 * range by range. */
static int read_ranges(void *ctx, const struct go_mem_range *ranges, size_t n)
{
	const struct go_served *g = ctx;
	struct iovec local[GO_READ_MAX_RANGES], remote[GO_READ_MAX_RANGES];
	size_t done = 0;
	while (done < n) {
		size_t k = 0;
		while (k < GO_READ_MAX_RANGES && done + k < n) {
			const struct go_mem_range *r = &ranges[done + k];
			local[k].iov_base = r->buf;
			local[k].iov_len = r->len;
			remote[k].iov_base = (void *)(uintptr_t)r->addr;
			remote[k].iov_len = r->len;
			k++;
		}
		int r = target_read_ranges(g->pid, local, remote, k);
		if (r < 0)
			return r;
		done += k;
	}
	return 0;
}

/* The target, parsed once per worker and kept until it exits: a worker
 * restarted after a crash parses it again on its first request. */
static struct go_served *served_open(pid_t pid, pid_t ns_pid)
{
	struct go_served *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->pid = pid;
	g->open_status = go_target_open(pid, NULL, &g->target);
	/* A stripped binary: its runtime.allgs and allm are looked for in its
	 * memory (a failure is said in the manifest,
	 * goroutines_unreadable_because). */
	if (g->open_status == 0)
		go_target_find_globals(g->target, ns_pid, read_ranges, g);
	return g;
}

static bool listable(const struct go_served *g)
{
	return g->open_status == 0 && go_target_can_list_goroutines(g->target);
}

static void put_json(struct byte_buf *out, cJSON *o)
{
	char *text = o ? cJSON_PrintUnformatted(o) : NULL;
	msg_string(out, text);
	if (!text)
		out->failed = out->failed || o; /* an object that did not print: ENOMEM */
	free(text);
}

static void serve_open(struct go_served *g, struct byte_buf *out)
{
	msg_u32(out, (uint32_t)g->open_status);
	msg_u32(out, listable(g));
	if (g->open_status < 0) {
		msg_u32(out, 0);
		return;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "version", go_target_version(g->target));
	cJSON_AddBoolToObject(o, "goroutines_readable", listable(g));
	/* How the runtime's structs were read, and if goroutines could not
	 * be, why: the user of a stripped binary learns what it costs. */
	cJSON_AddStringToObject(o, "layouts", go_target_layout_source(g->target));
	cJSON_AddStringToObject(o, "globals", go_target_globals_source(g->target));
	cJSON_AddStringToObject(o, "heap_globals", go_target_heap_globals_source(g->target));
	cJSON_AddStringToObject(o, "contention_globals", go_target_contention_globals_source(g->target));
	const char *why = go_target_goroutines_unreadable_because(g->target);
	if (why)
		cJSON_AddStringToObject(o, "goroutines_unreadable_because", why);
	/* Said where it is done, for the user who wonders what parsed what. */
	cJSON_AddStringToObject(o, "parsed_in", "sandboxed worker");
	put_json(out, o);
	cJSON_Delete(o);
}

/* Faults in, now, the heap the capture will allocate while every thread is
 * held: a fresh page costs a fault inside the pause otherwise. glibc is
 * told to serve such blocks from the heap rather than from new mappings
 * and to keep freed memory instead of trimming it, so the blocks touched
 * here are the ones the capture gets back. The worker is short-lived; its
 * peak RSS does not change, it is only reached earlier. */
static void prefault_heap(size_t bytes)
{
	enum { PIECE = 8 << 20 };
	void *pieces[64];
	size_t n = 0;
	if (!bytes)
		return;
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	for (size_t done = 0; done < bytes && n < 64; done += PIECE) {
		pieces[n] = malloc(PIECE);
		if (!pieces[n])
			break;
		/* One store per page, through volatile: malloc+memset(0) is
		 * turned into calloc, which skips fresh (known-zero) memory. */
		volatile char *page = pieces[n++];
		for (size_t off = 0; off < PIECE; off += 4096)
			page[off] = 1;
	}
	while (n)
		free(pieces[--n]);
}

static void serve_held(struct go_served *g, struct cursor *c, struct byte_buf *out)
{
	static struct go_thread_regs regs[MAX_HELD_THREADS];
	/* The tracer's deadline: it releases the target when it passes,
	 * answered or not (go_session.c), so what is not read by then is lost
	 * anyway; stopping in time keeps what was. */
	g->held_ms = take_u32(c);
	uint32_t n = take_u32(c);
	if (n > MAX_HELD_THREADS)
		n = MAX_HELD_THREADS;
	for (uint32_t i = 0; i < n; i++) {
		regs[i].tid = (pid_t)take_u32(c);
		regs[i].pc = take_u64(c);
		regs[i].sp = take_u64(c);
		regs[i].fp = take_u64(c);
		regs[i].fs_base = take_u64(c);
	}
	go_snapshot_free(g->snap);
	g->snap = NULL;
	go_heap_free(g->heap);
	g->heap = NULL;
	for (int k = 0; k < 2; k++) {
		go_contention_free(g->contention[k]);
		g->contention[k] = NULL;
		g->contention_error[k] = -ENOTSUP;
	}
	g->parked_error = 0;
	if (c->bad || !listable(g)) {
		g->capture_error = c->bad ? -EBADMSG : -ENOTSUP;
		g->heap_error = -ENOTSUP;
	} else {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);
		uint64_t deadline = g->held_ms ? t0 + (uint64_t)g->held_ms * 1000000ull : 0;
		const struct go_capture_limits lim = {.defer_parked_stacks = true,
						      .deadline_ns = deadline};
		g->capture_error = go_capture(g->target, read_ranges, g, regs, n, &lim, &g->snap);
		/* The heap buckets too, in the same stop, so both describe one
		 * moment; not once the deadline has passed (the goroutines
		 * come first). */
		bool late = deadline && now_ns(CLOCK_MONOTONIC) >= deadline;
		g->heap_error = !go_heap_supported(g->target) ? -ENOTSUP
				: late ? -ETIME
				       : go_heap_capture(g->target, read_ranges, g, &g->heap);
		/* and the block and mutex buckets: short lists */
		for (int k = 0; k < 2; k++) {
			late = deadline && now_ns(CLOCK_MONOTONIC) >= deadline;
			g->contention_error[k] =
				late ? -ETIME
				     : go_contention_capture(g->target, (enum go_contention_kind)k,
							     read_ranges, g, &g->contention[k]);
		}
		g->capture_ns = now_ns(CLOCK_MONOTONIC) - t0;
	}
	msg_u32(out, (uint32_t)g->capture_error);
	msg_u32(out, (uint32_t)g->heap_error);
}

static const char *intern(struct go_served *g, const char *s)
{
	if (!s)
		return NULL;
	/* Few distinct names per session; a linear scan from the newest keeps
	 * repeated lookups of a hot function cheap enough. */
	for (size_t i = g->nstrings; i-- > 0;)
		if (strcmp(g->strings[i], s) == 0)
			return g->strings[i];
	if (array_reserve(&g->strings, &g->strings_cap, g->nstrings + 1, sizeof(char *), 64) < 0)
		return NULL;
	char *copy = strdup(s);
	if (!copy)
		return NULL;
	g->strings[g->nstrings++] = copy;
	return copy;
}

struct frame_collect {
	struct go_served *g;
	struct sym_frame *out;
	size_t n, max;
	uint64_t addr;
	bool as_pprof; /* leave out the wrappers runtime/pprof never shows */
};

static int collect_frame(void *ctx, const struct go_frame *f)
{
	struct frame_collect *c = ctx;
	if (c->as_pprof && f->pprof_elided)
		return 0;
	if (c->n == c->max)
		return 1;
	struct sym_frame *o = &c->out[c->n++];
	memset(o, 0, sizeof(*o));
	/* A generic function by its symbol, shapes and all: runtime/pprof's
	 * name for it, and the ELF symbol that perf and libdw give it in an
	 * unstripped build, so a stripped one names it alike. */
	o->function = intern(c->g, f->symbol_name);
	o->file = intern(c->g, f->file);
	o->line = f->line;
	o->function_start_line = f->start_line;
	o->inlined = f->inlined;
	o->function_offset = f->inlined ? 0 : c->addr - f->entry;
	return 0;
}

/* The frames of addr, innermost first: all of them (a thread's stack,
 * named as any symbolizer would), or as_pprof as runtime/pprof's
 * profileBuilder lists them (a Location's Lines). */
static size_t frames_of(struct go_served *g, uint64_t addr, struct sym_frame *out, size_t max,
			bool as_pprof)
{
	struct frame_collect c = {.g = g, .out = out, .max = max, .addr = addr, .as_pprof = as_pprof};
	go_target_symbolize_pc(g->target, addr, collect_frame, &c);
	return c.n;
}

/* ---- profiles ---- */

struct pprof_ctx {
	struct go_served *g;
	struct profile_builder *pb;
	const struct sym_module *modules;
	size_t nmodules;
	uint64_t *mapping_ids;
	int error;
};

static uint64_t mapping_for(struct pprof_ctx *c, uint64_t addr)
{
	for (size_t i = 0; i < c->nmodules; i++)
		if (addr >= c->modules[i].start && addr < c->modules[i].limit)
			return c->mapping_ids[i];
	return 0;
}

/* A Location for a Go address, its lines from pclntab (inlined frames
 * grouped in one Location, as Go does). 0 on ENOMEM. */
static uint64_t location_for_go(struct pprof_ctx *c, uint64_t addr)
{
	uint64_t id = profile_builder_find_location(c->pb, addr);
	if (id)
		return id;
	struct sym_frame frames[MAX_GO_FRAMES];
	size_t nf = frames_of(c->g, addr, frames, MAX_GO_FRAMES, true);
	struct profile_line lines[MAX_GO_FRAMES];
	size_t nl = 0;
	for (size_t i = 0; i < nf; i++)
		if (frames[i].function)
			lines[nl++] = (struct profile_line){
				.function = frames[i].function,
				.filename = frames[i].file,
				.start_line = frames[i].function_start_line,
				.line = frames[i].line,
			};
	return profile_builder_add_location(c->pb, addr, mapping_for(c, addr), lines, nl);
}

/* The Location ids of the first max of locs, into ids: their count, or
 * -ENOMEM (said in c->error too, for the fill's caller). */
static int location_ids(struct pprof_ctx *c, const uint64_t *locs, size_t n, uint64_t *ids, size_t max)
{
	size_t nids = 0;
	for (size_t i = 0; i < n && nids < max; i++) {
		uint64_t id = location_for_go(c, locs[i]);
		if (!id)
			return c->error = -ENOMEM;
		ids[nids++] = id;
	}
	return (int)nids;
}

static int add_go_sample(void *ctx, const struct go_sample *s)
{
	struct pprof_ctx *c = ctx;
	uint64_t ids[512];
	int got = location_ids(c, s->locs, s->nlocs, ids, sizeof(ids) / sizeof(ids[0]));
	if (got < 0)
		return 1;
	size_t nids = (size_t)got;
	struct profile_label labels[MAX_GO_LABELS];
	size_t nl = 0;
	for (size_t i = 0; i < s->nlabels && nl < MAX_GO_LABELS; i++)
		labels[nl++] = (struct profile_label){.key = s->labels[i].key, .str = s->labels[i].value};
	int64_t count = (int64_t)s->count;
	if (profile_builder_add_sample(c->pb, ids, nids, &count, labels, nl) < 0) {
		c->error = -ENOMEM;
		return 1;
	}
	return 0;
}

static int add_heap_record(void *ctx, const struct go_heap_record *rec)
{
	struct pprof_ctx *c = ctx;
	uint64_t ids[1024];
	int got = location_ids(c, rec->locs, rec->nlocs, ids, sizeof(ids) / sizeof(ids[0]));
	if (got < 0)
		return 1;
	size_t nids = (size_t)got;
	int64_t values[4] = {rec->alloc_objects, rec->alloc_space, rec->inuse_objects,
			     rec->inuse_space};
	struct profile_label label = {.key = "bytes", .num = rec->block_size};
	if (profile_builder_add_sample(c->pb, ids, nids, values, &label, rec->block_size ? 1 : 0) < 0) {
		c->error = -ENOMEM;
		return 1;
	}
	return 0;
}

typedef int (*fill_fn)(struct pprof_ctx *c);

static int fill_goroutines(struct pprof_ctx *c)
{
	return go_snapshot_foreach_sample(c->g->snap, add_go_sample, c);
}

static int fill_heap(struct pprof_ctx *c)
{
	return go_heap_foreach_record(c->g->heap, add_heap_record, c);
}

/* One Go profile, gzipped, appended to out as u32 len + bytes: mappings
 * from the symbol table, samples from fill. Go symbolizes its own frames
 * from pclntab, so the mappings really have functions, files and lines. */
static int put_go_profile(struct go_served *g, struct byte_buf *out, const char *name,
			  const struct symtab *st, const struct profile_value_type *types, size_t ntypes,
			  struct profile_value_type period_type, int64_t period,
			  const char *default_type, fill_fn fill)
{
	struct pprof_ctx c = {.g = g};
	c.pb = profile_builder_new(types, ntypes, period_type, period);
	if (!c.pb)
		return -ENOMEM;
	if (default_type && profile_builder_set_default_sample_type(c.pb, default_type) < 0) {
		profile_builder_free(c.pb);
		return -ENOMEM;
	}
	profile_builder_set_time(c.pb, (int64_t)now_ns(CLOCK_REALTIME), 0);
	c.nmodules = symtab_modules(st, &c.modules);
	c.mapping_ids = calloc(c.nmodules + 1, sizeof(uint64_t));
	if (!c.mapping_ids) {
		profile_builder_free(c.pb);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c.nmodules; i++) {
		const struct sym_module *m = &c.modules[i];
		c.mapping_ids[i] = profile_builder_add_mapping(c.pb, m->start, m->limit, m->offset,
							       m->path, m->build_id, true, true, true);
	}
	int r = fill(&c);
	if (c.error)
		r = c.error;
	uint8_t *gz = NULL;
	size_t len = 0;
	if (r == 0)
		r = profile_builder_encode_gz(c.pb, &gz, &len);
	if (r == 0) {
		msg_string(out, name);
		msg_bytes(out, gz, len);
	}
	free(gz);
	free(c.mapping_ids);
	profile_builder_free(c.pb);
	return r;
}

/* n with thousands separators: "1,000,000". */
static const char *grouped(uint64_t n, char buf[32])
{
	char digits[24];
	int len = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)n), o = 0;
	for (int i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

/* The one line that says why fewer goroutines were read than the runtime
 * claims, or stacks were left out; "" when nothing was. */
static void capture_warning(const struct go_served *g, const struct go_capture_stats *st,
			    char *out, size_t size)
{
	char a[32], b[32], c[32];
	size_t o = 0;
	out[0] = '\0';
	grouped(st->allglen_claimed, a);
	grouped(st->allglen, c);
	switch (st->cut) {
	case GO_CUT_NONE:
		break;
	case GO_CUT_ALLGS:
		/* allgs's cap below its len is as forged as allglen: the
		 * smaller of the two is what was read. */
		o = (size_t)snprintf(out, size,
				     "allglen %s exceeds len(runtime.allgs) %s%s, which a real runtime "
				     "keeps equal to it (a forged count): read %s",
				     a, grouped(st->allgs_len < 0 ? 0 : (uint64_t)st->allgs_len, b),
				     st->allgs_len >= 0 && (uint64_t)st->allgs_len > st->allglen
					     ? " (or its cap)"
					     : "",
				     c);
		break;
	case GO_CUT_LIMIT:
		o = (size_t)snprintf(out, size,
				     "allglen %s exceeds the %u MiB budget for reading goroutines (%s of "
				     "them): read %s",
				     a, GO_CAPTURE_BUDGET_BYTES >> 20, grouped(st->read_limit, b), c);
		break;
	case GO_CUT_UNREADABLE:
		o = (size_t)snprintf(out, size,
				     "allglen %s exceeds the runtime.allgs array, which ends (unmapped) "
				     "after %s entries: read %s",
				     a, c, c);
		break;
	case GO_CUT_DEADLINE:
		o = (size_t)snprintf(out, size,
				     "the %u ms the target could be held passed after %s of %s "
				     "goroutines: read %s, %zu stack(s) not copied",
				     g->held_ms, c, a, c, st->stacks_past_deadline);
		break;
	}
	if (o < size && st->stacks_over_budget)
		snprintf(out + o, size - o, "%s%zu stack(s) past the %u MiB budget for stacks not copied",
			 o ? "; " : "", st->stacks_over_budget, GO_CAPTURE_BUDGET_BYTES >> 20);
}

static void describe_capture(struct go_served *g, cJSON *o)
{
	if (!g->snap) {
		cJSON_AddStringToObject(o, "error", strerror(g->capture_error < 0 ? -g->capture_error : EIO));
		return;
	}
	struct go_capture_stats stats;
	go_snapshot_stats(g->snap, &stats);
	cJSON_AddNumberToObject(o, "goroutines", (double)stats.goroutines);
	/* What the runtime claims and what was read of it: a forged
	 * runtime.allglen costs a bounded read, said here and in one line. */
	static const char *const cuts[] = {"none", "allgs", "budget", "unreadable", "deadline"};
	cJSON_AddNumberToObject(o, "allglen", (double)stats.allglen_claimed);
	if (stats.allgs_len >= 0)
		cJSON_AddNumberToObject(o, "allgs_len", (double)stats.allgs_len);
	cJSON_AddNumberToObject(o, "goroutines_read", (double)stats.allglen);
	cJSON_AddNumberToObject(o, "goroutines_read_limit", (double)stats.read_limit);
	cJSON_AddNumberToObject(o, "held_ms_allowed", (double)g->held_ms);
	if (stats.cut || stats.stacks_over_budget) {
		char text[512];
		capture_warning(g, &stats, text, sizeof(text));
		cJSON_AddStringToObject(o, "cut", cuts[stats.cut]);
		cJSON_AddNumberToObject(o, "stacks_over_budget", (double)stats.stacks_over_budget);
		cJSON_AddNumberToObject(o, "stacks_past_deadline", (double)stats.stacks_past_deadline);
		cJSON_AddStringToObject(o, "warning", text);
	}
	cJSON_AddNumberToObject(o, "read_us", (double)g->capture_ns / 1000.0);
	cJSON_AddNumberToObject(o, "goroutines_us", (double)stats.pause_ns / 1000.0);
	cJSON_AddNumberToObject(o, "bytes_read", (double)stats.bytes_read);
	cJSON_AddNumberToObject(o, "stacks_truncated", (double)stats.stacks_truncated);
	cJSON_AddNumberToObject(o, "unreadable", (double)stats.unreadable);
	/* The pause covers the goroutine list and the stacks of the
	 * goroutines not parked; parked ones are copied after release and
	 * dropped if they ran before the copy finished. */
	cJSON_AddNumberToObject(o, "stacks_copied_after_release", (double)stats.stacks_deferred);
	cJSON_AddNumberToObject(o, "stacks_changed_before_copy", (double)stats.stacks_changed);
	cJSON_AddNumberToObject(o, "after_release_us", (double)stats.parked_ns / 1000.0);
	if (g->parked_error)
		cJSON_AddStringToObject(o, "after_release_error", strerror(-g->parked_error));
}

static void describe_heap(struct go_served *g, cJSON *o)
{
	if (g->heap) {
		struct go_heap_stats st;
		go_heap_stats(g->heap, &st);
		cJSON_AddBoolToObject(o, "enabled", true);
		cJSON_AddNumberToObject(o, "rate", (double)go_heap_rate(g->heap));
		cJSON_AddNumberToObject(o, "buckets", (double)st.buckets);
		cJSON_AddBoolToObject(o, "truncated", st.truncated);
		return;
	}
	cJSON_AddBoolToObject(o, "enabled", false);
	if (g->heap_error == -ENODATA) {
		struct go_heap_config cfg = {0};
		bool by_linker = go_heap_read_config(g->target, read_ranges, g, &cfg) == 0 &&
				 cfg.disabled_by_linker;
		cJSON_AddStringToObject(o, "reason",
					by_linker ? "heap profiling disabled in target (MemProfileRate=0): "
						    "program does not link runtime/pprof"
						  : "heap profiling disabled in target (MemProfileRate=0)");
	} else {
		cJSON_AddStringToObject(o, "reason", g->heap_error == -ENOTSUP
							     ? "heap buckets not readable in this binary"
						     : g->heap_error == -ETIME
							     ? "not read: the time the target could be held "
							       "had passed"
							     : strerror(-g->heap_error));
	}
}

static int add_threadcreate(void *ctx, const struct go_threadcreate_sample *smp)
{
	struct pprof_ctx *c = ctx;
	uint64_t ids[1100]; /* a createstack (32 PCs) and its inlined frames */
	int got = location_ids(c, smp->locs, smp->nlocs, ids, sizeof(ids) / sizeof(ids[0]));
	if (got < 0)
		return 1;
	size_t nids = (size_t)got;
	if (profile_builder_add_sample(c->pb, ids, nids, &smp->count, NULL, 0) < 0) {
		c->error = -ENOMEM;
		return 1;
	}
	return 0;
}

static int fill_threadcreate(struct pprof_ctx *c)
{
	int r = go_snapshot_foreach_threadcreate(c->g->snap, add_threadcreate, c);
	return r < 0 ? r : 0;
}

static int add_contention(void *ctx, const struct go_contention_record *rec)
{
	struct pprof_ctx *c = ctx;
	uint64_t ids[2048];
	int got = location_ids(c, rec->locs, rec->nlocs, ids, sizeof(ids) / sizeof(ids[0]));
	if (got < 0)
		return 1;
	size_t nids = (size_t)got;
	int64_t values[2] = {rec->contentions, rec->delay_ns};
	if (profile_builder_add_sample(c->pb, ids, nids, values, NULL, 0) < 0) {
		c->error = -ENOMEM;
		return 1;
	}
	return 0;
}

static int fill_block(struct pprof_ctx *c)
{
	return go_contention_foreach(c->g->contention[GO_BLOCK_PROFILE], add_contention, c);
}

static int fill_mutex(struct pprof_ctx *c)
{
	return go_contention_foreach(c->g->contention[GO_MUTEX_PROFILE], add_contention, c);
}

static void describe_contention(struct go_served *g, enum go_contention_kind k, cJSON *o)
{
	struct go_contention *c = g->contention[k];
	if (c) {
		struct go_contention_info info;
		go_contention_info(c, &info);
		cJSON_AddBoolToObject(o, "enabled", true);
		cJSON_AddNumberToObject(o, "rate", (double)info.rate);
		cJSON_AddNumberToObject(o, "buckets", (double)info.buckets);
		cJSON_AddBoolToObject(o, "truncated", info.truncated);
		/* The delays are CPU ticks converted as runtime/pprof does;
		 * when the runtime had not measured the rate yet (it does on
		 * first use), it was measured here on the same clock. */
		cJSON_AddNumberToObject(o, "ticks_per_second", info.ticks_per_second);
		cJSON_AddStringToObject(o, "ticks_per_second_from",
					info.ticks_from_runtime ? "runtime"
								: "measured by diag-attach (not yet by the runtime)");
		return;
	}
	cJSON_AddBoolToObject(o, "enabled", false);
	int e = g->contention_error[k];
	const char *reason =
		e == -ENODATA ? (k == GO_BLOCK_PROFILE ? "block profiling not enabled in target "
							 "(runtime.SetBlockProfileRate never called)"
						       : "mutex profiling not enabled in target "
							 "(runtime.SetMutexProfileFraction never called)")
		: e == -ENOTSUP ? "profile buckets not readable in this binary"
		: e == -ETIME	? "not read: the time the target could be held had passed"
				: strerror(-e);
	cJSON_AddStringToObject(o, "reason", reason);
}

/* A text member of GO_REQ_WRITE written by fn into memory. */
static int put_text(struct byte_buf *out, const char *name, struct go_snapshot *snap,
		    int (*fn)(struct go_snapshot *, FILE *))
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	int r = fn(snap, f);
	if (fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0) {
		free(text); /* never a member that looks whole and is not */
		return r;
	}
	msg_string(out, name);
	msg_bytes(out, text, len);
	free(text);
	return 0;
}

/* The members of GO_REQ_WRITE after the JSON, each {name, bytes}. */
static int put_members(struct go_served *g, const struct symtab *st, struct byte_buf *out)
{
	int r = go_snapshot_unwind(g->snap);
	if (r == 0)
		r = put_text(out, "goroutine.txt", g->snap, go_snapshot_write_debug2);
	/* The runtime's debug=1 text: goroutines grouped by stack, with
	 * their labels (the design's goroutine.labels.txt). */
	if (r == 0)
		r = put_text(out, "goroutine.labels.txt", g->snap, go_snapshot_write_debug1);
	static const struct profile_value_type goroutine[] = {{"goroutine", "count"}};
	if (r == 0)
		r = put_go_profile(g, out, "goroutine.pprof", st, goroutine, 1, goroutine[0], 1, NULL,
				   fill_goroutines);
	static const struct profile_value_type threadcreate[] = {{"threadcreate", "count"}};
	if (r == 0 && go_threadcreate_supported(g->target))
		r = put_go_profile(g, out, "threadcreate.pprof", st, threadcreate, 1, threadcreate[0], 1,
				   NULL, fill_threadcreate);
	/* heap.pprof and allocs.pprof shaped like Go's own (runtime/pprof
	 * writeHeapProto): the same buckets, allocs shown by default as
	 * alloc_space. No heap: said so in the manifest, no empty profile. */
	static const struct profile_value_type heap[] = {
		{"alloc_objects", "count"},
		{"alloc_space", "bytes"},
		{"inuse_objects", "count"},
		{"inuse_space", "bytes"},
	};
	const struct profile_value_type space = {"space", "bytes"};
	if (r == 0 && g->heap)
		r = put_go_profile(g, out, "heap.pprof", st, heap, 4, space, go_heap_rate(g->heap), NULL,
				   fill_heap);
	if (r == 0 && g->heap)
		r = put_go_profile(g, out, "allocs.pprof", st, heap, 4, space, go_heap_rate(g->heap),
				   "alloc_space", fill_heap);
	/* printCountCycleProfile's shape */
	static const struct profile_value_type contention[] = {{"contentions", "count"},
							       {"delay", "nanoseconds"}};
	if (r == 0 && g->contention[GO_BLOCK_PROFILE])
		r = put_go_profile(g, out, "block.pprof", st, contention, 2, contention[0], 1, NULL,
				   fill_block);
	if (r == 0 && g->contention[GO_MUTEX_PROFILE])
		r = put_go_profile(g, out, "mutex.pprof", st, contention, 2, contention[0], 1, NULL,
				   fill_mutex);
	return r;
}

static void serve_write(struct go_served *g, struct cursor *c, struct byte_buf *out)
{
	struct symtab *st = NULL;
	size_t stlen = c->len - c->off;
	if (symtab_decode(take(c, stlen), stlen, &st) < 0)
		st = symtab_new();
	cJSON *o = cJSON_CreateObject();
	describe_capture(g, cJSON_AddObjectToObject(o, "goroutine_capture"));
	size_t json_at = out->len;
	if (g->snap) {
		describe_heap(g, cJSON_AddObjectToObject(o, "heap_profile"));
		describe_contention(g, GO_BLOCK_PROFILE, cJSON_AddObjectToObject(o, "block_profile"));
		describe_contention(g, GO_MUTEX_PROFILE, cJSON_AddObjectToObject(o, "mutex_profile"));
	}
	put_json(out, o);
	cJSON_Delete(o);
	int r = g->snap && st ? put_members(g, st, out) : 0;
	if (r < 0) {
		/* Nothing half-written: the manifest says what failed. */
		out->len = json_at;
		o = cJSON_CreateObject();
		cJSON *e = cJSON_AddObjectToObject(o, "goroutine_capture");
		cJSON_AddStringToObject(e, "error", strerror(-r));
		put_json(out, o);
		cJSON_Delete(o);
	}
	symtab_free(st);
}

static void serve_dump_text(struct go_served *g, struct byte_buf *out)
{
	char *text = NULL;
	size_t len = 0;
	struct go_capture_stats stats = {0};
	if (g->snap && go_snapshot_unwind(g->snap) == 0) {
		go_snapshot_stats(g->snap, &stats);
		FILE *f = open_memstream(&text, &len);
		if (f) {
			int r = go_snapshot_write_debug2(g->snap, f);
			if (fclose(f) != 0 || r < 0) {
				free(text);
				text = NULL;
			}
		}
	}
	if (!text) {
		msg_u64(out, 0);
		msg_u64(out, 0);
		msg_u32(out, 0);
		return;
	}
	msg_u64(out, stats.user_goroutines);
	msg_u64(out, stats.goroutines - stats.user_goroutines);
	msg_bytes(out, text, len);
	free(text);
}

struct json_collect {
	struct go_served *g;
	cJSON *list;
	cJSON *frames; /* of the sample being added */
};

static int json_frame(void *ctx, const struct go_frame *f)
{
	struct json_collect *c = ctx;
	if (f->pprof_elided)
		return 0; /* as goroutine.pprof lists it */
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return -ENOMEM;
	cJSON_AddItemToArray(c->frames, o);
	cJSON_AddStringToObject(o, "function", f->function ? f->function : "?");
	if (f->file) {
		cJSON_AddStringToObject(o, "file", f->file);
		cJSON_AddNumberToObject(o, "line", f->line);
	}
	if (f->inlined)
		cJSON_AddTrueToObject(o, "inlined");
	return 0;
}

static int json_sample(void *ctx, const struct go_sample *s)
{
	struct json_collect *c = ctx;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return -ENOMEM;
	cJSON_AddItemToArray(c->list, o);
	cJSON_AddNumberToObject(o, "count", (double)s->count);
	if (s->has_labels) {
		cJSON *labels = cJSON_AddObjectToObject(o, "labels");
		for (size_t i = 0; labels && i < s->nlabels; i++)
			cJSON_AddStringToObject(labels, s->labels[i].key, s->labels[i].value);
	}
	c->frames = cJSON_AddArrayToObject(o, "frames");
	if (!c->frames)
		return -ENOMEM;
	for (size_t i = 0; i < s->nlocs; i++) {
		int r = go_target_symbolize_pc(c->g->target, s->locs[i], json_frame, c);
		if (r < 0)
			return r;
	}
	return 0;
}

static void serve_dump_json(struct go_served *g, struct byte_buf *out)
{
	struct go_capture_stats stats;
	if (!g->snap || go_snapshot_unwind(g->snap) < 0) {
		msg_u32(out, 0);
		return;
	}
	go_snapshot_stats(g->snap, &stats);
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddNumberToObject(doc, "goroutines_total", (double)stats.user_goroutines);
	struct json_collect c = {.g = g, .list = cJSON_AddArrayToObject(doc, "goroutines")};
	if (!c.list || go_snapshot_foreach_sample(g->snap, json_sample, &c) < 0)
		out->failed = true;
	put_json(out, doc);
	cJSON_Delete(doc);
}

static void serve_counters(struct go_served *g, struct byte_buf *out)
{
	int64_t goroutines = -1, heap_live = -1;
	if (g->open_status == 0 &&
	    go_read_counters(g->target, read_ranges, g, &goroutines, &heap_live) < 0)
		goroutines = heap_live = -1;
	msg_u64(out, (uint64_t)goroutines);
	msg_u64(out, (uint64_t)heap_live);
}

static void serve_names(struct go_served *g, struct cursor *c, struct byte_buf *out)
{
	uint32_t n = take_u32(c);
	for (uint32_t i = 0; i < n && !c->bad; i++) {
		uint64_t addr = take_u64(c);
		struct sym_frame frames[MAX_GO_FRAMES];
		size_t nf = c->bad || g->open_status < 0 ? 0 : frames_of(g, addr, frames, MAX_GO_FRAMES, false);
		msg_u32(out, (uint32_t)nf);
		for (size_t k = 0; k < nf; k++) {
			msg_u32(out, (uint32_t)frames[k].line);
			msg_u32(out, (uint32_t)frames[k].function_start_line);
			msg_u32(out, frames[k].inlined);
			msg_u64(out, frames[k].function_offset);
			msg_string(out, frames[k].function);
			msg_string(out, frames[k].file);
		}
	}
}

bool go_serve_handles(uint8_t kind)
{
	return kind && strchr("gahrodjcn", kind) != NULL;
}

void go_serve(struct go_served **state, pid_t pid, uint8_t kind, struct cursor *c,
	      struct byte_buf *out)
{
	pid_t ns_pid = (pid_t)take_u32(c);
	if (!*state)
		*state = served_open(pid, ns_pid);
	struct go_served *g = *state;
	if (!g) {
		out->failed = true;
		return;
	}
	switch ((enum go_request)kind) {
	case GO_REQ_OPEN:
		serve_open(g, out);
		break;
	case GO_REQ_ARM:
		if (listable(g))
			prefault_heap(go_capture_heap_hint(g->target, read_ranges, g));
		break;
	case GO_REQ_HELD:
		serve_held(g, c, out);
		break;
	case GO_REQ_RELEASED:
		/* Out of memory: the parked goroutines print "stack unavailable". */
		if (g->snap && go_capture_parked(g->snap, read_ranges, g) < 0)
			g->parked_error = -ENOMEM;
		break;
	case GO_REQ_WRITE:
		serve_write(g, c, out);
		break;
	case GO_REQ_DUMP_TEXT:
		serve_dump_text(g, out);
		break;
	case GO_REQ_DUMP_JSON:
		serve_dump_json(g, out);
		break;
	case GO_REQ_COUNTERS:
		serve_counters(g, out);
		break;
	case GO_REQ_NAMES:
		serve_names(g, c, out);
		break;
	}
}
