/*
 * wire: the byte plumbing of the workers' messages (interp.c's protocol):
 * little-endian integers and length-prefixed strings appended to a
 * byte_buf, and a cursor that reads them back without ever reading past
 * the end. A reader that runs out sets `bad` and gets zeros and NULLs from
 * then on, so a decoder takes everything and checks `bad` once: the bytes
 * may come from a worker that parsed hostile files.
 */
#ifndef DIAG_SYMBOLIZE_WORKER_WIRE_H
#define DIAG_SYMBOLIZE_WORKER_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "symbolize/arrays.h"

struct cursor {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

static inline const void *take(struct cursor *c, size_t n)
{
	if (c->bad || n > c->len - c->off) {
		c->bad = true;
		return NULL;
	}
	const void *p = c->p + c->off;
	c->off += n;
	return p;
}

static inline uint32_t take_u32(struct cursor *c)
{
	uint32_t v = 0;
	const void *p = take(c, 4);
	if (p)
		memcpy(&v, p, 4);
	return v;
}

static inline uint64_t take_u64(struct cursor *c)
{
	uint64_t v = 0;
	const void *p = take(c, 8);
	if (p)
		memcpy(&v, p, 8);
	return v;
}

/* A u32 length and that many bytes, refused (bad) beyond max. The bytes
 * are not NUL-terminated; *len says how many. */
static inline const char *take_bytes(struct cursor *c, size_t max, size_t *len)
{
	uint32_t n = take_u32(c);
	const void *p = n <= max ? take(c, n) : NULL;
	if (!p)
		c->bad = true;
	*len = p ? n : 0;
	return p;
}

static inline void msg_u32(struct byte_buf *m, uint32_t v)
{
	byte_buf_put(m, &v, 4);
}

static inline void msg_u64(struct byte_buf *m, uint64_t v)
{
	byte_buf_put(m, &v, 8);
}

static inline void msg_bytes(struct byte_buf *m, const void *p, size_t n)
{
	msg_u32(m, (uint32_t)n);
	byte_buf_put(m, p, n);
}

static inline void msg_string(struct byte_buf *m, const char *s)
{
	msg_bytes(m, s, s ? strlen(s) : 0);
}

#endif
