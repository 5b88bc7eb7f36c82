/* gzip: see gzip.h. */
#include "bundle/gzip.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int bundle_gzip(const void *data, size_t len, int level, uint8_t **ret, size_t *ret_len)
{
	z_stream zs;
	uint8_t *out;
	size_t bound;
	int zr;

	if (len > UINT_MAX)
		return -EFBIG;
	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	bound = deflateBound(&zs, (uLong)len);
	out = malloc(bound ? bound : 1);
	if (!out) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)bound;
	zr = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (zr != Z_STREAM_END) {
		free(out);
		return zr == Z_MEM_ERROR ? -ENOMEM : -EIO;
	}
	*ret = out;
	*ret_len = zs.total_out;
	return 0;
}

int bundle_gunzip(const void *gz, size_t len, size_t max_len, uint8_t **ret, size_t *ret_len)
{
	/* A first guess that fits most profiles (they compress about 4:1),
	 * never more than the bound plus the one byte that detects
	 * overflowing it. */
	size_t limit = max_len == SIZE_MAX ? SIZE_MAX : max_len + 1;
	size_t cap = len <= (SIZE_MAX - 1024) / 4 ? len * 4 + 1024 : SIZE_MAX / 2;
	size_t n = 0;
	z_stream zs;
	uint8_t *out;
	int zr;

	if (len > UINT_MAX)
		return -EBADMSG; /* no gzip member of ours is that large */
	if (cap > limit)
		cap = limit;
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK) {
		free(out);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)gz;
	zs.avail_in = (uInt)len;
	do {
		if (n == cap) {
			if (cap >= limit) {
				zr = Z_BUF_ERROR;
				break;
			}
			size_t ncap = cap <= limit / 2 ? cap * 2 : limit;
			uint8_t *o = realloc(out, ncap);
			if (!o) {
				zr = Z_MEM_ERROR;
				break;
			}
			out = o;
			cap = ncap;
		}
		size_t room = cap - n > UINT_MAX ? UINT_MAX : cap - n;
		zs.next_out = out + n;
		zs.avail_out = (uInt)room;
		zr = inflate(&zs, Z_NO_FLUSH);
		n += room - zs.avail_out;
	} while (zr == Z_OK);
	inflateEnd(&zs);
	if (zr == Z_STREAM_END && n > max_len)
		zr = Z_BUF_ERROR;
	if (zr != Z_STREAM_END) {
		free(out);
		return zr == Z_MEM_ERROR ? -ENOMEM
		       : zr == Z_BUF_ERROR && n >= limit && limit != SIZE_MAX ? -EFBIG
									    : -EBADMSG;
	}
	*ret = out;
	*ret_len = n;
	return 0;
}

struct bundle_gunzip_stream {
	z_stream zs;
	bool ended;
	uint8_t out[64 * 1024];
};

int bundle_gunzip_stream_new(struct bundle_gunzip_stream **ret)
{
	struct bundle_gunzip_stream *z = calloc(1, sizeof(*z));

	if (!z)
		return -ENOMEM;
	if (inflateInit2(&z->zs, 15 + 16) != Z_OK) {
		free(z);
		return -ENOMEM;
	}
	*ret = z;
	return 0;
}

int bundle_gunzip_stream_reset(struct bundle_gunzip_stream *z)
{
	z->ended = false;
	return inflateReset(&z->zs) == Z_OK ? 0 : -ENOMEM;
}

int bundle_gunzip_stream_feed(struct bundle_gunzip_stream *z, const void *data, size_t len,
			      bundle_gunzip_out_fn out, void *ctx)
{
	const uint8_t *in = data;

	while (!z->ended && len) {
		uInt n = len > UINT_MAX ? UINT_MAX : (uInt)len;
		z->zs.next_in = (Bytef *)in;
		z->zs.avail_in = n;
		int zr;
		do {
			z->zs.next_out = z->out;
			z->zs.avail_out = sizeof(z->out);
			zr = inflate(&z->zs, Z_NO_FLUSH);
			size_t got = sizeof(z->out) - z->zs.avail_out;
			if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
				return zr == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
			if (got) {
				int r = out(ctx, z->out, got);
				if (r < 0)
					return r;
			}
			/* Z_BUF_ERROR: no progress possible without more
			 * input, which is not an error of the stream. */
		} while (zr == Z_OK && (z->zs.avail_in || !z->zs.avail_out));
		if (zr == Z_STREAM_END)
			z->ended = true;
		size_t used = n - z->zs.avail_in;
		in += used;
		len -= used;
		if (!used)
			break;
	}
	return z->ended ? 1 : 0;
}

void bundle_gunzip_stream_free(struct bundle_gunzip_stream *z)
{
	if (!z)
		return;
	inflateEnd(&z->zs);
	free(z);
}
