/*
 * arrays: the one bisection over address-sorted arrays (maps, JIT perf
 * maps, the unwinder's executable mappings) and the one growable array
 * (address batches, stack lists, mapping tables) of the interpretation
 * side: symbolize/, its unwind/ and worker/, and the engine and top above
 * them. Header-only so that they share it without a link dependency (the
 * fuzz harnesses compile single modules whole).
 */
#ifndef DIAG_SYMBOLIZE_ARRAYS_H
#define DIAG_SYMBOLIZE_ARRAYS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Index of the first of n elements (each `size` bytes from base, sorted by
 * the uint64_t at key_offset) whose key is greater than x; n when none is.
 * The element before it, if any, is the last one with key <= x. */
static inline size_t addr_first_above(const void *base, size_t n, size_t size, size_t key_offset,
				      uint64_t x)
{
	const unsigned char *b = base;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t key;
		memcpy(&key, b + mid * size + key_offset, sizeof(key));
		if (key <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Make room for at least need elements of elem_size bytes in *items
 * (capacity *cap): doubles, starting at min_cap. On failure *items and *cap
 * are untouched. 0 or -ENOMEM. */
static inline int array_reserve(void *items, size_t *cap, size_t need, size_t elem_size,
				size_t min_cap)
{
	if (*cap >= need)
		return 0;
	size_t c = *cap ? *cap : min_cap;
	while (c < need)
		c *= 2;
	if (c > SIZE_MAX / elem_size)
		return -ENOMEM;
	void **p = items;
	void *n = realloc(*p, c * elem_size);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = c;
	return 0;
}

/* A growable byte buffer that remembers a failed allocation, so that a
 * writer appends without checking and looks at `failed` once at the end
 * (the workers' messages, the symbol table's wire form). The bytes are
 * kept NUL-terminated. */
struct byte_buf {
	uint8_t *p;
	size_t len, cap;
	bool failed;
};

/* Append n bytes of d (d may be NULL when n is 0). */
static inline void byte_buf_put(struct byte_buf *b, const void *d, size_t n)
{
	if (b->failed)
		return;
	if (array_reserve(&b->p, &b->cap, b->len + n + 1, 1, 4096) < 0) {
		b->failed = true;
		return;
	}
	if (n)
		memcpy(b->p + b->len, d, n);
	b->len += n;
	b->p[b->len] = 0;
}

#endif
