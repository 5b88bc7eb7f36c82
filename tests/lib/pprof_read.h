/*
 * pprof_read: decode gzipped pprof files for tests.
 *
 * Profiles are returned as protobuf-c messages (bundle/profile.pb-c.h); the
 * caller frees them with perftools__profiles__profile__free_unpacked(p, NULL).
 * Functions return 0 or a negative errno (-EBADMSG: not gzip, or not a
 * Profile) and never print.
 */
#ifndef DIAG_TESTS_PPROF_READ_H
#define DIAG_TESTS_PPROF_READ_H

#include <stddef.h>
#include <stdint.h>

#include "bundle/profile.pb-c.h"

/* Read and decode a gzipped profile file. *ret untouched on failure. */
int pprof_read_file(const char *path, Perftools__Profiles__Profile **ret);

/* The same for an in-memory gzipped buffer (e.g. profile_builder_encode_gz
 * output). */
int pprof_read_buf(const void *gz, size_t len, Perftools__Profiles__Profile **ret);

/* string_table[idx], or NULL if idx is out of range. */
const char *pprof_str(const Perftools__Profiles__Profile *p, int64_t idx);

/* Location / Function with the given id, or NULL. */
const Perftools__Profiles__Location *pprof_location(const Perftools__Profiles__Profile *p,
						    uint64_t id);
const Perftools__Profiles__Function *pprof_function(const Perftools__Profiles__Profile *p,
						    uint64_t id);

/* Function names of sample s, leaf first, expanding each Location's Lines in
 * order (inlined callee before its caller). Stores at most max names
 * (pointers into p's string table) and returns how many were stored, or
 * -EBADMSG if an id does not resolve. */
int pprof_sample_frames(const Perftools__Profiles__Profile *p,
			const Perftools__Profiles__Sample *s, const char **names, size_t max);

/* Write a copy of the profile at in_path to out_path (gzipped) with every
 * trace of symbolization removed: no Functions, no Lines, and mappings that
 * say so (has_functions etc. false), as a profiler that records raw
 * addresses only would write it. Lets a test prove that a consumer
 * symbolized the addresses itself. */
int pprof_write_unsymbolized(const char *in_path, const char *out_path);

#endif
