/*
 * profile_out: turn aggregated raw stacks (cmd/engine/stackagg.h) into a gzipped
 * pprof profile, with the names of a symbol table (symbolize/worker/symtab.h).
 *
 * Label strings in the aggregator are "key=value" pairs joined by
 * LABEL_SEP; the key "tid" is emitted as a numeric label, all others as
 * strings (the keys perf_to_profile uses: tid, thread_comm, state).
 */
#ifndef DIAG_CMD_ENGINE_PROFILE_OUT_H
#define DIAG_CMD_ENGINE_PROFILE_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "bundle/profile.h"
#include "cmd/engine/stackagg.h"
#include "symbolize/worker/symtab.h"

#define LABEL_SEP "\x1f"

struct profile_spec {
	const struct profile_value_type *sample_types;
	size_t ntypes;
	struct profile_value_type period_type;
	int64_t period;
	int64_t time_nanos, duration_nanos;
	/* A Go target: its main mapping is named from the runtime's own
	 * tables (go_session_name_unnamed) even when stripped. */
	bool main_named_by_go;
	/* The executable as the user started it (the manifest's
	 * target.invoked_as: redis-server for redis-check-rdb) and as it is
	 * mapped (target.exe): the mapping of exe_path is given the first
	 * name, which pprof shows as File:. NULL: the mapped path. */
	const char *exe_path, *invoked_as;
};

/* Address to symbolize for frame i of a stack: return addresses (i > 0)
 * minus one, so they fall inside the call instruction. */
static inline uint64_t frame_lookup_address(const uint64_t *pcs, size_t i)
{
	return i == 0 ? pcs[0] : pcs[i] - 1;
}

/* pprof Lines for a location from its frames (innermost first), skipping
 * frames without a name. Returns how many were written (at most max). */
size_t profile_lines_from_frames(const struct sym_frame *frames, size_t nframes,
				 struct profile_line *lines, size_t max);

/* Add every address agg's stacks will look up to set. 0 or -ENOMEM. */
int profile_out_collect(const struct stackagg *agg, struct addrset *set);

/* Encode agg as a gzipped pprof into *ret (malloc'd), with symbols from st
 * (which must hold every address profile_out_collect gathered). 0 or
 * -errno. */
int profile_out_encode(const struct stackagg *agg, const struct symtab *st,
		       const struct profile_spec *spec, uint8_t **ret, size_t *ret_len);

#endif
