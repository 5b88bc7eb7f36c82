/*
 * The profile builder's tables, shared by profile.c (building) and
 * profile_encode.c (protobuf + gzip). Internal to bundle/.
 *
 * Everything is stored as string-table indices and 1-based ids already, so
 * encoding is a shallow translation into protobuf-c structs that point at
 * these arrays (no copies of strings, location ids or values).
 */
#ifndef DIAG_PROFILE_INTERNAL_H
#define DIAG_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bundle/profile.h"

/* Open-addressing index: slots hold item index + 1, 0 = empty. */
struct pidx {
	size_t *slots;
	size_t nslots; /* power of two, or 0 */
};

struct pfunc {
	int64_t name, system_name, filename, start_line;
	uint64_t hash;
};

struct pline {
	uint64_t function_id;
	int64_t line;
};

struct ploc {
	uint64_t address, mapping_id;
	struct pline *lines;
	size_t nlines;
};

struct pmap {
	uint64_t start, limit, offset;
	int64_t filename, build_id;
	bool has_functions, has_filenames, has_line_numbers;
};

struct plabel {
	int64_t key, str, num, num_unit;
};

struct psample {
	uint64_t *locs; /* one allocation: locs, values, labels */
	int64_t *values;
	struct plabel *labels;
	size_t nlocs, nlabels;
};

/* A growable array of fixed-size items. */
#define PVEC(type)                                                                                 \
	struct {                                                                                   \
		type *v;                                                                           \
		size_t n, cap;                                                                     \
	}

struct profile_builder {
	PVEC(char *) strs;
	uint64_t *str_hash; /* parallel to strs */
	size_t str_hash_cap;
	struct pidx str_idx;

	PVEC(struct pfunc) funcs;
	struct pidx func_idx;
	PVEC(struct ploc) locs;
	struct pidx loc_idx;
	PVEC(struct pmap) maps;
	PVEC(struct psample) samples;
	PVEC(int64_t) comments;

	int64_t *sample_types; /* 2 * ntypes: type, unit */
	size_t ntypes;
	int64_t period_type[2];
	int64_t period;
	int64_t time_nanos, duration_nanos;
	int64_t default_sample_type; /* string index, 0: not set */
};

#endif
