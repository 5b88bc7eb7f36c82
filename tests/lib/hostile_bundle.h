/*
 * hostile_bundle: bundles that verify "intact" and are built to exhaust a
 * reader (issue 18 item 7), for the tests of the reader's limits: gzip
 * bombs, profiles written straight in the protobuf wire format (so that a
 * test can make a million tiny samples or sparse 64-bit location ids
 * without a builder that would refuse them), and runtime.jsonl timelines.
 *
 * Everything is malloc'd and owned by the caller; out of memory aborts (a
 * test that cannot build its input has nothing to test). Nothing prints.
 */
#ifndef DIAG_TESTS_HOSTILE_BUNDLE_H
#define DIAG_TESTS_HOSTILE_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer. */
struct hb_buf {
	uint8_t *v;
	size_t n, cap;
};

void hb_buf_release(struct hb_buf *b);
void hb_put(struct hb_buf *b, const void *data, size_t len);
void hb_printf(struct hb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- protobuf wire format ---- */

void pb_varint(struct hb_buf *b, uint64_t v);
/* Field `field` as a varint. */
void pb_uint(struct hb_buf *b, unsigned field, uint64_t v);
/* Field `field` length-delimited (a string, a packed array, a message). */
void pb_len(struct hb_buf *b, unsigned field, const void *data, size_t len);

/*
 * A gzip stream of `inflated` zero bytes (a multiple of 1 MiB), made
 * without compressing them: one full-flushed deflate block of 1 MiB of
 * zeros repeated, about 1 KiB each, with a correct CRC and size. 8 GiB
 * takes 8 MB and milliseconds.
 */
void hb_gzip_zeros(uint64_t inflated, uint8_t **ret, size_t *ret_len);
/* gzip of data (bundle_gzip). */
void hb_gzip(const void *data, size_t len, uint8_t **ret, size_t *ret_len);

/*
 * A pprof Profile (uncompressed wire bytes) with `nlocs` locations whose
 * ids are huge and sparse (not 1..n, in shuffled order), one function per
 * location named "fn_<i>", and `nsamples` samples of one location each
 * (sample i on location (i * 7919) % nlocs) with values {1, 1000}
 * ("samples"/"count", "cpu"/"nanoseconds") and a "tid" label i % 64.
 * Location i has address 0x10000 + 16 i.
 */
void hb_profile_sparse(size_t nlocs, size_t nsamples, struct hb_buf *ret);

/* Profiles with counts past a cap and nothing else of substance: n
 * samples of no location (values {1, 1000}, 7 bytes each); n locations
 * with id i+1 (and one sample on location 1); n functions; one sample of
 * `depth` location ids (all 1, one byte each) over one location. */
void hb_profile_empty_samples(size_t n, struct hb_buf *ret);
void hb_profile_locations(size_t n, struct hb_buf *ret);
void hb_profile_functions(size_t n, struct hb_buf *ret);
void hb_profile_deep_sample(size_t depth, struct hb_buf *ret);

/* runtime.jsonl with `points` lines, each with `per_line` counters; with
 * distinct, every line's counters have names no other line uses ("c<line>_<k>"),
 * else all lines share "c<k>". */
void hb_timeline(size_t points, size_t per_line, int distinct, struct hb_buf *ret);

/*
 * Write an intact bundle into dir (which must not exist): the members
 * given (names[i] with data[i], len[i]) and a manifest that names
 * runtime.jsonl as the timeline. Returns 0 or -errno.
 */
int hb_write_bundle(const char *dir, const char *const *names, const void *const *data,
		    const size_t *len, size_t n);

#endif
