/*
 * gzip: the one gzip encoder and decoder of the bundle format. pprof
 * members are gzip (pprof and `gzip -d` read them), and the readers
 * (bundle_reader, tests/lib, the PEM codec) all decode through here.
 *
 * Both are one-shot on whole buffers, return 0 or a negative errno and
 * never print. The caller owns and frees *ret. The format is gzip proper
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

#endif
