/*
 * profile: build a pprof Profile (bundle/profile.proto, encoded with
 * protobuf-c) and write it gzipped.
 *
 * The builder interns strings, functions and locations; ids are 1-based as
 * pprof requires. It copies every string it is given.
 */
#ifndef DIAG_PROFILE_H
#define DIAG_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct profile_builder;

struct profile_value_type {
	const char *type, *unit; /* e.g. "samples","count" / "cpu","nanoseconds" */
};

struct profile_line {
	const char *function;    /* name; NULL -> no Line is emitted for it */
	const char *system_name; /* NULL -> same as function */
	const char *filename;    /* NULL -> "" */
	int64_t start_line;
	int64_t line;
};

struct profile_label {
	const char *key;
	const char *str; /* string label if non-NULL */
	int64_t num;     /* numeric label otherwise */
	const char *num_unit; /* optional, NULL */
};

/* Returns NULL on ENOMEM. */
struct profile_builder *profile_builder_new(const struct profile_value_type *sample_types,
					    size_t ntypes,
					    struct profile_value_type period_type, int64_t period);
void profile_builder_free(struct profile_builder *pb);

/* time_nanos / duration_nanos of the Profile. */
void profile_builder_set_time(struct profile_builder *pb, int64_t time_nanos, int64_t duration_nanos);
/* The sample type pprof shows by default (Profile.default_sample_type),
 * e.g. "alloc_space" for Go's allocs profile. 0 or -ENOMEM. */
int profile_builder_set_default_sample_type(struct profile_builder *pb, const char *type);
/* Add a comment string. */
int profile_builder_add_comment(struct profile_builder *pb, const char *comment);

/* Returns the mapping id (>0, sequential from 1), or 0 on ENOMEM.
 * filename/build_id NULL -> "". has_inline_frames is not asked for: it is
 * set at encode time on mappings that have a location with >1 Line. */
uint64_t profile_builder_add_mapping(struct profile_builder *pb, uint64_t start, uint64_t limit,
				     uint64_t offset, const char *filename, const char *build_id,
				     bool has_functions, bool has_filenames, bool has_line_numbers);

/* Location for address (deduplicated by address: a second call with the same
 * address returns the first id and ignores the rest). lines[0] is the
 * innermost (inlined) frame, as pprof orders Lines. mapping_id 0 = none; an
 * unknown mapping_id is stored as 0 (pprof rejects dangling ids). Lines
 * whose function is NULL are skipped. Functions are deduplicated by
 * (name, system_name, filename, start_line).
 * Returns the location id (>0), or 0 on ENOMEM. */
uint64_t profile_builder_add_location(struct profile_builder *pb, uint64_t address,
				      uint64_t mapping_id, const struct profile_line *lines,
				      size_t nlines);
/* Is a location already known for address? Returns its id or 0. */
uint64_t profile_builder_find_location(struct profile_builder *pb, uint64_t address);

/* One sample: location ids leaf first; values has ntypes entries. Labels
 * with str == NULL are numeric. -EINVAL for an unknown/zero location id or a
 * label without key, -ENOMEM. Samples are not merged here (see stackagg). */
int profile_builder_add_sample(struct profile_builder *pb, const uint64_t *location_ids,
			       size_t nlocs, const int64_t *values,
			       const struct profile_label *labels, size_t nlabels);

/* Serialize and gzip. *ret is malloc'd; caller frees. 0 or -errno. The
 * builder is unchanged and may be encoded again. Decoders: include
 * "bundle/profile.pb-c.h" (generated from bundle/profile.proto). */
int profile_builder_encode_gz(struct profile_builder *pb, uint8_t **ret, size_t *ret_len);

#endif
