/* sha256 via nettle: no global state, no init, nothing to configure. */
#include <errno.h>
#include <unistd.h>
#include <nettle/sha2.h>

#include "bundle/bundle.h"
#include "bundle/internal.h"

void bundle_sha256_digest_hex(struct sha256_ctx *ctx, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t d[SHA256_DIGEST_SIZE];

	sha256_digest(ctx, sizeof(d), d);
	for (size_t i = 0; i < sizeof(d); i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[64] = '\0';
}

void bundle_sha256_hex(const void *data, size_t len, char out[65])
{
	struct sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, len, data);
	bundle_sha256_digest_hex(&ctx, out);
}

int bundle_sha256_fd(int fd, char out[65], uint64_t *ret_bytes)
{
	struct sha256_ctx ctx;
	uint8_t buf[64 * 1024];
	uint64_t total = 0;
	off_t off = 0;

	sha256_init(&ctx);
	for (;;) {
		/* pread: the fd may be an O_APPEND stream whose offset we
		 * should not depend on. */
		ssize_t n = pread(fd, buf, sizeof(buf), off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		sha256_update(&ctx, (size_t)n, buf);
		off += n;
		total += (uint64_t)n;
	}
	bundle_sha256_digest_hex(&ctx, out);
	if (ret_bytes)
		*ret_bytes = total;
	return 0;
}

uint64_t bundle_hash_bytes(uint64_t h, const void *data, size_t len)
{
	/* FNV-1a with a final avalanche: tables use the low bits, and plain
	 * FNV leaves them weak for the 8-byte-aligned PCs we mostly hash. */
	const uint8_t *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}
