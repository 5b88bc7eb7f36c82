/* SPDX-License-Identifier: MIT */
#ifndef DIAG_SYMBOLIZE_GO_GOPROFILES_H
#define DIAG_SYMBOLIZE_GO_GOPROFILES_H

/*
 * gosym: the runtime's other pprof profiles, read from outside as
 * runtime/pprof writes them from inside:
 *
 *   threadcreate  each M's creation stack (m.createstack, copied by
 *                 go_capture with the Ms), one sample per distinct stack
 *                 counting its Ms: pprof.Lookup("threadcreate");
 *   block, mutex  the runtime's bbuckets / xbuckets ({bucket, stk[nstk],
 *                 blockRecord{count float64, cycles int64}}), copied while
 *                 the threads are held (go_contention_capture), values as
 *                 printCountCycleProfile makes them: contentions, and the
 *                 delay in nanoseconds from CPU ticks and
 *                 runtime.ticks.val (the ticks per second the runtime
 *                 measured; when it has not yet, measured here against
 *                 the same clocks, and said).
 *
 * Addresses out are run-time (load bias included), one per pprof Location
 * as Go's profileBuilder groups inlined frames; symbolize each with
 * go_target_symbolize_pc (the address of the call, as for any location).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "goroutines.h"

/* One sample of the threadcreate profile. */
struct go_threadcreate_sample {
	int64_t count;        /* Ms created from this stack */
	const uint64_t *locs; /* Location addresses, leaf first */
	size_t nlocs;
};
typedef int (*go_threadcreate_fn)(void *ctx, const struct go_threadcreate_sample *s);

/* Is m.createstack's place known (DWARF or the release's row)? */
bool go_threadcreate_supported(const struct go_target *t);

/* The Ms of the snapshot's capture grouped by creation stack. 0, -ENOTSUP
 * (no layout for m.createstack), -ENOMEM, or cb's non-zero return. */
int go_snapshot_foreach_threadcreate(struct go_snapshot *s, go_threadcreate_fn cb, void *ctx);

enum go_contention_kind { GO_BLOCK_PROFILE, GO_MUTEX_PROFILE };

struct go_contention;

/* Does the target have what the profile of kind needs (the bucket list,
 * the rate, the bucket layout)? */
bool go_contention_supported(const struct go_target *t, enum go_contention_kind kind);

/* Where those globals came from: "symtab", "disasm" or "none". Static. */
const char *go_target_contention_globals_source(const struct go_target *t);

/*
 * While every thread is held: the bucket list of kind and its rate. 0 and
 * *ret; -ENOTSUP not supported; -ENODATA the program never turned it on
 * (rate 0 and no bucket: runtime.SetBlockProfileRate /
 * SetMutexProfileFraction were not called); -EIO the list head is not a
 * bucket of kind; -ENOMEM; -errno from read. A list that turns bad halfway
 * is kept up to there (truncated).
 */
int go_contention_capture(struct go_target *t, enum go_contention_kind kind, go_read_mem_fn read,
			  void *read_ctx, struct go_contention **ret);

struct go_contention_info {
	int64_t rate;              /* blockprofilerate (ns) or mutexprofilerate (1/fraction) */
	size_t buckets;
	bool truncated;
	double ticks_per_second;   /* what the delays were converted with */
	bool ticks_from_runtime;   /* false: the runtime had not measured it yet */
};
void go_contention_info(struct go_contention *c, struct go_contention_info *ret);

struct go_contention_record {
	int64_t contentions;
	int64_t delay_ns;
	const uint64_t *locs; /* Location addresses, leaf first */
	size_t nlocs;
};
typedef int (*go_contention_fn)(void *ctx, const struct go_contention_record *r);

/* After the release: each bucket as a sample, in the order Go writes them
 * (delay descending). 0, -ENOMEM, or cb's non-zero return. */
int go_contention_foreach(struct go_contention *c, go_contention_fn cb, void *ctx);

void go_contention_free(struct go_contention *c);

#endif
