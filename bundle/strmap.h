/*
 * strmap: a growable hash index from strings to a size_t, for the readers'
 * lookups by name (timeline counters, functions, stacks, goroutine groups),
 * which a hostile bundle can make millions long: a linear scan per lookup
 * is what turned 800 KB profiles into minutes of CPU.
 *
 * Keys are not copied: the caller keeps each key alive, unchanged, while
 * it is in the map. The hash is seeded once per process from getrandom(2),
 * so a bundle cannot be crafted to make every name land in one chain.
 *
 * Open addressing, load factor at most 1/2: lookups are O(1) expected. The
 * map owns only its two arrays; strmap_release frees them.
 */
#ifndef DIAG_BUNDLE_STRMAP_H
#define DIAG_BUNDLE_STRMAP_H

#include <stddef.h>

struct strmap {
	const char **keys; /* cap slots, NULL = empty */
	size_t *vals;
	size_t cap; /* power of two, or 0 before the first insert */
	size_t n;
};

#define STRMAP_INIT {0}

void strmap_release(struct strmap *m);

/* The value stored for key, or NULL. Valid until the next strmap_put. */
size_t *strmap_find(const struct strmap *m, const char *key);

/* Insert key with value val unless it is there. Returns 1 if inserted, 0 if
 * key was there already (its value untouched), -ENOMEM. *ret_val (may be
 * NULL) points at the stored value until the next strmap_put. */
int strmap_put(struct strmap *m, const char *key, size_t val, size_t **ret_val);

#endif
