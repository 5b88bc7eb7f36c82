/*
 * gzip: the one gzip encoder and decoder of the bundle format. pprof
 * members are gzip (pprof and `gzip -d` read them), and the readers
 * (bundle_reader, tests/lib, the PEM codec) all decode through here.
 *
 * Both are one-shot on whole buffers (and the decoder also comes as a
 * stream, for unpem, which must not hold a member whole), return 0 or a
 * negative errno and never print. The caller owns and frees *ret. The format is gzip proper
 * (windowBits 15 + 16), never a bare zlib stream: a member that is not
 * gzip is malformed, and a test or a reader should notice.
 */
#ifndef DIAG_BUNDLE_GZIP_H
#define DIAG_BUNDLE_GZIP_H

#include <stddef.h>
#include <stdint.h>

/* Compress len bytes at zlib level (1..9, or -1 for zlib's default).
 * -EFBIG above UINT_MAX bytes (one-shot deflate takes a uInt), -ENOMEM,
 * -EIO if zlib fails otherwise. */
int bundle_gzip(const void *data, size_t len, int level, uint8_t **ret, size_t *ret_len);

/* Decompress one gzip stream. max_len bounds the output (SIZE_MAX: no
 * bound) so that a hostile member cannot inflate without limit; output
 * that would exceed it is -EFBIG. -EBADMSG if the input is not a complete
 * gzip stream, -ENOMEM. */
int bundle_gunzip(const void *gz, size_t len, size_t max_len, uint8_t **ret, size_t *ret_len);

/* The decoder as a stream: input in pieces of any size, output handed to
 * a callback in pieces of at most 64 KiB as it is inflated, so nothing
 * the size of the stream is ever held. One gzip stream, as bundle_gunzip
 * reads it: what follows its end is ignored. Owned by the caller
 * (bundle_gunzip_stream_free; NULL is a no-op). */
struct bundle_gunzip_stream;
typedef int (*bundle_gunzip_out_fn)(void *ctx, const uint8_t *data, size_t len);
int bundle_gunzip_stream_new(struct bundle_gunzip_stream **ret);
/* Start a new stream (the one before, ended or not, is forgotten). */
int bundle_gunzip_stream_reset(struct bundle_gunzip_stream *z);
/* Inflate len bytes; out is called for what they decode to, and a
 * negative return of it is returned as is (nothing more is inflated).
 * 0: more input wanted; 1: the stream has ended; -EBADMSG: not gzip, or
 * damaged; -ENOMEM. */
int bundle_gunzip_stream_feed(struct bundle_gunzip_stream *z, const void *data, size_t len,
			      bundle_gunzip_out_fn out, void *ctx);
void bundle_gunzip_stream_free(struct bundle_gunzip_stream *z);

#endif
