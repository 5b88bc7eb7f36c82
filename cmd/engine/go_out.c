#include "cmd/engine/go_out.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "bundle/profile.h"
#include "cmd/engine/profile_out.h"
#include "symbolize/go/goheap.h"
#include "symbolize/go/goroutines.h"
#include "cmd/engine/internal.h"
#include "symbolize/arrays.h"

#define MAX_GO_FRAMES 64
#define MAX_GO_LABELS 64

struct go_session {
	pid_t pid;
	struct go_target *target;
	struct go_snapshot *snap; /* from the last armed capture */
	int parked_error;         /* go_capture_parked() ran out of memory */
	struct go_heap *heap;     /* heap-profile buckets from the same stop */
	int heap_error;
	int capture_error;
	uint64_t capture_ns;
	/* Interned strings handed out by go_session_frames. */
	char **strings;
	size_t nstrings, strings_cap;
};

/* All-or-nothing vectored read; go_capture retries failed batches range by
 * range. */
static int read_ranges(void *ctx, const struct go_mem_range *ranges, size_t n)
{
	struct go_session *g = ctx;
	struct iovec local[GO_READ_MAX_RANGES], remote[GO_READ_MAX_RANGES];
	size_t done = 0;
	while (done < n) {
		size_t k = 0;
		size_t want = 0;
		/* process_vm_readv takes at most IOV_MAX (1024) iovecs a call. */
		while (k < GO_READ_MAX_RANGES && done + k < n) {
			const struct go_mem_range *r = &ranges[done + k];
			local[k].iov_base = r->buf;
			local[k].iov_len = r->len;
			remote[k].iov_base = (void *)(uintptr_t)r->addr;
			remote[k].iov_len = r->len;
			want += r->len;
			k++;
		}
		ssize_t got = process_vm_readv(g->pid, local, k, remote, k, 0);
		if (got < 0)
			return -errno;
		if ((size_t)got != want)
			return -EFAULT;
		done += k;
	}
	return 0;
}

struct go_session *go_session_open(pid_t pid, pid_t ns_pid)
{
	char exe[64];
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	struct go_target *t = NULL;
	if (go_target_open(pid, exe, &t) < 0)
		return NULL;
	struct go_session *g = calloc(1, sizeof(*g));
	if (!g) {
		go_target_free(t);
		return NULL;
	}
	g->pid = pid;
	g->target = t;
	/* A stripped binary: its runtime.allgs and allm are looked for in its
	 * memory (a failure is said in the manifest, goroutines_unreadable_because). */
	go_target_find_globals(t, ns_pid, read_ranges, g);
	return g;
}

void go_session_free(struct go_session *g)
{
	if (!g)
		return;
	go_heap_free(g->heap);
	go_snapshot_free(g->snap);
	go_target_free(g->target);
	for (size_t i = 0; i < g->nstrings; i++)
		free(g->strings[i]);
	free(g->strings);
	free(g);
}

void go_session_describe(struct go_session *g, cJSON *target)
{
	cJSON *o = cJSON_AddObjectToObject(target, "go");
	cJSON_AddStringToObject(o, "version", go_target_version(g->target));
	cJSON_AddBoolToObject(o, "goroutines_readable", go_target_can_list_goroutines(g->target));
	/* How the runtime's structs were read, and if goroutines could not
	 * be, why: the user of a stripped binary learns what it costs. */
	cJSON_AddStringToObject(o, "layouts", go_target_layout_source(g->target));
	cJSON_AddStringToObject(o, "globals", go_target_globals_source(g->target));
	cJSON_AddStringToObject(o, "heap_globals", go_target_heap_globals_source(g->target));
	const char *why = go_target_goroutines_unreadable_because(g->target);
	if (why)
		cJSON_AddStringToObject(o, "goroutines_unreadable_because", why);
}

static void while_held(void *ctx, const struct process_capture *pc)
{
	struct go_session *g = ctx;
	struct go_thread_regs regs[4096];
	size_t n = 0;
	for (size_t i = 0; i < pc->nthreads && n < 4096; i++) {
		const struct thread_capture *tc = &pc->threads[i];
		if (tc->outcome != THREAD_CAPTURED)
			continue;
		regs[n++] = (struct go_thread_regs){
			.tid = tc->tid,
			.pc = tc->regs.rip,
			.sp = tc->regs.rsp,
			.fp = tc->regs.rbp,
			.fs_base = tc->regs.fs_base,
		};
	}
	go_snapshot_free(g->snap);
	g->snap = NULL;
	g->parked_error = 0;
	uint64_t t0 = monotonic_ns();
	const struct go_capture_limits lim = {.defer_parked_stacks = true};
	g->capture_error = go_capture(g->target, read_ranges, g, regs, n, &lim, &g->snap);
	/* The heap buckets too, in the same stop, so both describe one moment. */
	go_heap_free(g->heap);
	g->heap = NULL;
	g->heap_error = go_heap_supported(g->target)
				? go_heap_capture(g->target, read_ranges, g, &g->heap)
				: -ENOTSUP;
	g->capture_ns = monotonic_ns() - t0;
}

void go_session_released(struct go_session *g)
{
	if (g && g->snap && go_capture_parked(g->snap, read_ranges, g) < 0) {
		/* Out of memory: the parked goroutines print "stack unavailable". */
		g->parked_error = -ENOMEM;
	}
}

/* Faults in, now, the heap the capture will allocate while every thread is
 * held: a fresh page costs a fault inside the pause otherwise. glibc is
 * told to serve such blocks from the heap rather than from new mappings
 * and to keep freed memory instead of trimming it, so the blocks touched
 * here are the ones the capture gets back. The tool is short-lived; its
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

void go_session_arm(struct go_session *g, struct attach_options *opts)
{
	if (!go_target_can_list_goroutines(g->target))
		return;
	prefault_heap(go_capture_heap_hint(g->target, read_ranges, g));
	opts->while_held = while_held;
	opts->while_held_ctx = g;
}

static const char *intern(struct go_session *g, const char *s)
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
	struct go_session *g;
	struct sym_frame *out;
	size_t n, max;
	uint64_t addr;
};

static int collect_frame(void *ctx, const struct go_frame *f)
{
	struct frame_collect *c = ctx;
	if (c->n == c->max)
		return 1;
	struct sym_frame *o = &c->out[c->n++];
	memset(o, 0, sizeof(*o));
	o->function = intern(c->g, f->function);
	o->file = intern(c->g, f->file);
	o->line = f->line;
	o->function_start_line = f->start_line;
	o->inlined = f->inlined;
	o->function_offset = f->inlined ? 0 : c->addr - f->entry;
	return 0;
}

size_t go_session_frames(struct go_session *g, uint64_t addr, struct sym_frame *out, size_t max)
{
	if (!g)
		return 0;
	struct frame_collect c = {.g = g, .out = out, .max = max, .addr = addr};
	go_target_symbolize_pc(g->target, addr, collect_frame, &c);
	return c.n;
}

static size_t name_from_go(void *arg, uint64_t addr, struct sym_frame *out, size_t max)
{
	return go_session_frames(arg, addr, out, max);
}

int go_session_name_unnamed(struct go_session *g, struct symtab *st)
{
	return g ? symtab_name_unnamed(st, name_from_go, g) : 0;
}

void go_session_counters(struct go_session *g, int64_t *goroutines, int64_t *heap_live)
{
	*goroutines = *heap_live = -1;
	if (go_read_counters(g->target, read_ranges, g, goroutines, heap_live) < 0)
		*goroutines = *heap_live = -1;
}

struct pprof_ctx {
	struct go_session *g;
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
	size_t nf = go_session_frames(c->g, addr, frames, MAX_GO_FRAMES);
	struct profile_line lines[MAX_GO_FRAMES];
	size_t nl = profile_lines_from_frames(frames, nf, lines, MAX_GO_FRAMES);
	return profile_builder_add_location(c->pb, addr, mapping_for(c, addr), lines, nl);
}

static int add_go_sample(void *ctx, const struct go_sample *s)
{
	struct pprof_ctx *c = ctx;
	uint64_t ids[512];
	size_t nids = 0;
	for (size_t i = 0; i < s->nlocs && nids < 512; i++) {
		uint64_t id = location_for_go(c, s->locs[i]);
		if (!id) {
			c->error = -ENOMEM;
			return 1;
		}
		ids[nids++] = id;
	}
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

typedef int (*fill_fn)(struct pprof_ctx *c);

/* One Go profile: mappings from the symbol table, samples from fill. Go
 * symbolizes its own frames from pclntab, so the mappings really have
 * functions, files and lines. */
static int write_go_profile(struct go_session *g, struct bundle *b, const char *name,
			    const struct symtab *st, const struct profile_value_type *types,
			    size_t ntypes, struct profile_value_type period_type, int64_t period,
			    fill_fn fill)
{
	struct pprof_ctx c = {.g = g};
	c.pb = profile_builder_new(types, ntypes, period_type, period);
	if (!c.pb)
		return -ENOMEM;
	profile_builder_set_time(c.pb, (int64_t)realtime_ns(), 0);
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
	if (r == 0)
		r = bundle_write_member(b, name, gz, len);
	free(gz);
	free(c.mapping_ids);
	profile_builder_free(c.pb);
	return r;
}

static int fill_goroutines(struct pprof_ctx *c)
{
	return go_snapshot_foreach_sample(c->g->snap, add_go_sample, c);
}

/* goroutine.pprof shaped like Go's debug=0 goroutine profile. */
static int write_pprof(struct go_session *g, struct bundle *b, const char *name,
		       const struct symtab *st)
{
	static const struct profile_value_type types[] = {{"goroutine", "count"}};
	return write_go_profile(g, b, name, st, types, 1, types[0], 1, fill_goroutines);
}

static int add_heap_record(void *ctx, const struct go_heap_record *rec)
{
	struct pprof_ctx *c = ctx;
	uint64_t ids[1024];
	size_t nids = 0;
	for (size_t i = 0; i < rec->nlocs && nids < 1024; i++) {
		uint64_t id = location_for_go(c, rec->locs[i]);
		if (!id) {
			c->error = -ENOMEM;
			return 1;
		}
		ids[nids++] = id;
	}
	int64_t values[4] = {rec->alloc_objects, rec->alloc_space, rec->inuse_objects,
			     rec->inuse_space};
	struct profile_label label = {.key = "bytes", .num = rec->block_size};
	if (profile_builder_add_sample(c->pb, ids, nids, values, &label, rec->block_size ? 1 : 0) < 0) {
		c->error = -ENOMEM;
		return 1;
	}
	return 0;
}

static int fill_heap(struct pprof_ctx *c)
{
	return go_heap_foreach_record(c->g->heap, add_heap_record, c);
}

/* heap.pprof shaped like Go's own (runtime/pprof writeHeapProto). */
static int write_heap(struct go_session *g, struct bundle *b, const char *name,
		      const struct symtab *st)
{
	static const struct profile_value_type types[] = {
		{"alloc_objects", "count"},
		{"alloc_space", "bytes"},
		{"inuse_objects", "count"},
		{"inuse_space", "bytes"},
	};
	return write_go_profile(g, b, name, st, types, 4,
				(struct profile_value_type){"space", "bytes"}, go_heap_rate(g->heap),
				fill_heap);
}

static void describe_heap(struct go_session *g, cJSON *manifest_go)
{
	cJSON_DeleteItemFromObject(manifest_go, "heap_profile");
	cJSON *o = cJSON_AddObjectToObject(manifest_go, "heap_profile");
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
							     : strerror(-g->heap_error));
	}
}

/* The last armed capture's goroutines, unwound, and their counts: 1, or 0
 * when there are none to show (g NULL, not listable, or unwinding failed
 * for another reason than memory), or -ENOMEM. Shared by the text and JSON
 * dumps. */
static int listed_goroutines(struct go_session *g, struct go_capture_stats *stats)
{
	if (!g || !g->snap || !go_target_can_list_goroutines(g->target))
		return 0;
	int r = go_snapshot_unwind(g->snap);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	go_snapshot_stats(g->snap, stats);
	return 1;
}

long go_session_print(struct go_session *g, FILE *f)
{
	struct go_capture_stats stats;
	int r = listed_goroutines(g, &stats);
	if (r <= 0)
		return r;
	/* The runtime's own dump leaves its system goroutines out; so do we. */
	fprintf(f,
		"\nGoroutines: %zu, as the Go runtime's own dump (debug=2) prints them (%zu of "
		"the runtime's own not shown)\n\n",
		(size_t)stats.user_goroutines, (size_t)(stats.goroutines - stats.user_goroutines));
	go_snapshot_write_debug2(g->snap, f);
	return (long)stats.user_goroutines;
}

struct json_collect {
	struct go_session *g;
	cJSON *list;
	cJSON *frames; /* of the sample being added */
};

static int json_frame(void *ctx, const struct go_frame *f)
{
	struct json_collect *c = ctx;
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

int go_session_json(struct go_session *g, cJSON *doc)
{
	struct go_capture_stats stats;
	int r = listed_goroutines(g, &stats);
	if (r <= 0)
		return r;
	cJSON_AddNumberToObject(doc, "goroutines_total", (double)stats.user_goroutines);
	struct json_collect c = {.g = g, .list = cJSON_AddArrayToObject(doc, "goroutines")};
	if (!c.list)
		return -ENOMEM;
	r = go_snapshot_foreach_sample(g->snap, json_sample, &c);
	return r < 0 ? r : 0;
}

int go_session_write(struct go_session *g, struct bundle *b, const char *prefix,
		     const struct symtab *st, cJSON *manifest_go)
{
	if (!g || !go_target_can_list_goroutines(g->target))
		return 0;
	if (manifest_go) {
		cJSON_DeleteItemFromObject(manifest_go, "goroutine_capture");
		cJSON *o = cJSON_AddObjectToObject(manifest_go, "goroutine_capture");
		if (!g->snap) {
			cJSON_AddStringToObject(o, "error", strerror(g->capture_error < 0 ? -g->capture_error : EIO));
			return 0;
		}
		struct go_capture_stats stats;
		go_snapshot_stats(g->snap, &stats);
		cJSON_AddNumberToObject(o, "goroutines", (double)stats.goroutines);
		cJSON_AddNumberToObject(o, "read_us", (double)g->capture_ns / 1000.0);
		cJSON_AddNumberToObject(o, "goroutines_us", (double)stats.pause_ns / 1000.0);
		cJSON_AddNumberToObject(o, "bytes_read", (double)stats.bytes_read);
		cJSON_AddNumberToObject(o, "stacks_truncated", (double)stats.stacks_truncated);
		cJSON_AddNumberToObject(o, "unreadable", (double)stats.unreadable);
		/* The pause covers the goroutine list and the stacks of the
		 * goroutines not parked; parked ones are copied after release
		 * and dropped if they ran before the copy finished. */
		cJSON_AddNumberToObject(o, "stacks_copied_after_release",
					(double)stats.stacks_deferred);
		cJSON_AddNumberToObject(o, "stacks_changed_before_copy",
					(double)stats.stacks_changed);
		cJSON_AddNumberToObject(o, "after_release_us", (double)stats.parked_ns / 1000.0);
		if (g->parked_error)
			cJSON_AddStringToObject(o, "after_release_error", strerror(-g->parked_error));
	}
	if (!g->snap)
		return 0;
	int r = go_snapshot_unwind(g->snap);
	if (r < 0)
		return r == -ENOMEM ? r : 0;

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	go_snapshot_write_debug2(g->snap, f);
	fclose(f);
	char name[256];
	snprintf(name, sizeof(name), "%sgoroutine.txt", prefix);
	r = bundle_write_member(b, name, text, len);
	free(text);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "%sgoroutine.pprof", prefix);
	r = write_pprof(g, b, name, st);
	if (r < 0)
		return r;
	if (manifest_go)
		describe_heap(g, manifest_go);
	if (!g->heap)
		return 0; /* disabled: said so in the manifest, no empty profile */
	snprintf(name, sizeof(name), "%sheap.pprof", prefix);
	return write_heap(g, b, name, st);
}
