/* SPDX-License-Identifier: MIT */
#ifndef DIAG_SYMBOLIZE_GO_GOHEAP_H
#define DIAG_SYMBOLIZE_GO_GOHEAP_H

/*
 * goheap: the Go runtime's heap profile (runtime.mbuckets), read from
 * outside, as pprof.Lookup("heap").WriteTo(w, 0) would write it at the
 * moment of the pause (see shared/research/go-goroutines.md §14).
 *
 * Life cycle:
 *
 *   go_target_open()        (goroutines.h) parses the bucket layouts too.
 *   go_heap_capture()       while ALL threads are ptrace-stopped: copies the
 *                           bucket list (header, stack, memRecord of each).
 *                           Changes nothing in the target.
 *   go_heap_foreach_record() after the target was released: one record per
 *                           bucket, in the order runtime.MemProfile returns
 *                           them, which is the order of Go's own samples.
 *   go_heap_free()
 *
 * Encoding heap.pprof (what writeHeapProto in runtime/pprof/protomem.go
 * does, and what the caller does with bundle/profile.h):
 *   period_type {"space","bytes"}, period = go_heap_rate();
 *   sample types alloc_objects/count, alloc_space/bytes,
 *                inuse_objects/count, inuse_space/bytes
 *   (the "heap" profile leaves default_sample_type unset);
 *   one sample per record: value = {alloc_objects, alloc_space,
 *   inuse_objects, inuse_space}, locations = locs[], and a numeric label
 *   {"bytes", num = block_size} when block_size != 0.
 *   Every loc is one pprof Location: its address is locs[i] and its lines
 *   are go_target_symbolize_pc(t, locs[i]) (inline frames innermost first).
 *
 * Errors: 0 or a negative errno, never prints. Out of memory: -ENOMEM, and
 * nothing is returned.
 *
 * Versions: written for Go 1.18 and later from DWARF layouts; tested on
 * 1.19. Version-specific facts are marked in heap.c.
 */

#include "goroutines.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct go_heap;

/*
 * True if the binary has what go_heap_capture() needs: the runtime symbols
 * (.symtab) and the bucket layouts (DWARF, or the built-in Go 1.19 table).
 * False for stripped (-s) binaries.
 */
bool go_heap_supported(const struct go_target *t);

/* The target's heap-profiler setting. Readable without stopping it. */
struct go_heap_config {
	int64_t rate;            /* runtime.MemProfileRate: 0 = profiling off */
	/* runtime.disableMemoryProfiling: the linker found runtime.MemProfile
	 * unreachable (the program does not link runtime/pprof), so the rate
	 * was 0 from the start and nothing was ever recorded. */
	bool disabled_by_linker;
};

/*
 * Reads MemProfileRate and disableMemoryProfiling in one read call.
 * Returns 0, -ENOTSUP (!go_heap_supported), or the read error (-EIO, ...).
 * Suggested manifest wording when rate == 0: "heap profiling disabled in
 * target (MemProfileRate=0)" plus ", program does not link runtime/pprof"
 * when disabled_by_linker.
 */
int go_heap_read_config(struct go_target *t, go_read_mem_fn read, void *read_ctx, struct go_heap_config *ret);

/*
 * Copies the heap profile of the stopped target. Every thread of the
 * target must be stopped (a thread stopped halfway through an update of a
 * bucket can skew that one bucket by one event; we accept that rather than
 * resume and retry). Reads are windowed: buckets are persistentalloc'ed
 * close together, so a few hundred buckets cost a few read calls.
 *
 * Returns 0 and *ret; h keeps a pointer to t, so free h (go_heap_free())
 * before t;
 *   -ENODATA  heap profiling is off in the target (MemProfileRate == 0):
 *             report "disabled", not an empty profile; go_heap_read_config()
 *             says whether the linker did it;
 *   -ENOTSUP  !go_heap_supported(t);
 *   -EIO, -EFAULT, ...  the globals or the list head could not be read;
 *   -ENOMEM.
 * A list that breaks off later (unreadable bucket, absurd nstk, more than
 * 1,000,000 buckets) keeps the buckets read so far and sets
 * go_heap_stats().truncated.
 */
int go_heap_capture(struct go_target *t, go_read_mem_fn read, void *read_ctx, struct go_heap **ret);

/* runtime.MemProfileRate at the capture: the pprof period (> 0). */
int64_t go_heap_rate(const struct go_heap *h);

/* Figures about one capture, for the manifest and benchmarks. */
struct go_heap_stats {
	uint64_t pause_ns;   /* wall time spent inside go_heap_capture() */
	size_t buckets;      /* records copied */
	size_t read_calls;   /* calls of the read callback */
	size_t bytes_read;
	bool truncated;      /* the walk stopped early (see go_heap_capture) */
	/* The runtime's profile cycle had no published data yet (no GC since
	 * the start): like runtime.MemProfile, all pending cycles were summed. */
	bool unpublished;
};
void go_heap_stats(const struct go_heap *h, struct go_heap_stats *ret);

/*
 * One record, i.e. one runtime.MemProfileRecord / one pprof sample.
 *
 * Raw counts are what runtime.MemProfile(p, inuseZero=true) would return
 * at the pause (the active cycle plus the one a concurrent MemProfile call
 * would flush; all pending cycles if no GC has published anything yet).
 * The scaled values are Go's scaleHeapSample(count, bytes, rate); they
 * equal the raw ones when rate is 1.
 *
 * pcs: the bucket's stack exactly as runtime.MemProfile returns it
 *      (Record.Stack()): return PCs, innermost first, inlined calls
 *      expanded into the runtime's "fake" PCs, runtime frames included,
 *      at most 32 deep on 1.19 (128 by default from 1.23). What Go's
 *      debug=1 heap text prints after "@".
 * locs: the pprof Location addresses Go's writeHeapProto produces from
 *      pcs: leading frames of functions named "runtime.*" hidden (unless
 *      that hides all), inlined frames grouped into the Location of the
 *      function they were inlined into, runtime.goexit dropped. Every
 *      address is its group's innermost return address - 1, the leaf
 *      included (heap stacks hold return PCs only; Go subtracts 1 from all
 *      of them, except a PC equal to its function's entry).
 * All addresses are run-time addresses (bias included). Everything is owned
 * by h and valid until go_heap_free().
 */
struct go_heap_record {
	int64_t alloc_objects, alloc_space, inuse_objects, inuse_space; /* scaled */
	int64_t allocs, frees, alloc_bytes, free_bytes;                 /* raw */
	int64_t block_size;    /* the "bytes" label: alloc_bytes / allocs, 0 = none */
	const uint64_t *pcs;
	size_t npcs;
	const uint64_t *locs;
	size_t nlocs;
};

typedef int (*go_heap_record_fn)(void *ctx, const struct go_heap_record *rec);

/*
 * Calls cb for every record in runtime.MemProfile's order (newest bucket
 * first), zero-valued records included as Go includes them. The first call
 * computes every record's locs from the target's .gopclntab (outside the
 * pause). Returns 0, -ENOMEM, or cb's non-zero return value.
 */
int go_heap_foreach_record(struct go_heap *h, go_heap_record_fn cb, void *ctx);

/* Sums over all records (raw counts): Go's debug=1 header line is
 * "heap profile: inuse_objects: inuse_space [alloc_objects: alloc_space] @ heap/(2*rate)". */
struct go_heap_totals {
	int64_t allocs, frees, alloc_bytes, free_bytes;
};
void go_heap_totals(const struct go_heap *h, struct go_heap_totals *ret);

/* Frees h; NULL is a no-op. */
void go_heap_free(struct go_heap *h);

/* Go's scaleHeapSample(count, size, rate) (protomem.go), exposed for tests. */
void go_heap_scale(int64_t count, int64_t size, int64_t rate, int64_t *ret_count, int64_t *ret_size);

#endif
