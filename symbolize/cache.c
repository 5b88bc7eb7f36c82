/*
 * pc -> location map. Open addressing with linear probing: the keys are
 * program counters (well spread after mixing), entries are never deleted, and
 * the table is rebuilt at 50% load, so probes stay short.
 */
#include <errno.h>
#include <stdlib.h>

#include "symbolize/internal.h"

static size_t slot_of(uint64_t pc, size_t cap)
{
	/* Fibonacci hashing: PCs share high bits and low alignment bits. */
	return (size_t)((pc * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
}

const struct sym_location *pc_cache_get(struct pc_cache *c, uint64_t pc)
{
	if (c->cap == 0)
		goto miss;
	for (size_t i = slot_of(pc, c->cap);; i = (i + 1) & (c->cap - 1)) {
		if (!c->vals[i])
			break;
		if (c->keys[i] == pc) {
			c->hits++;
			return c->vals[i];
		}
	}
miss:
	c->misses++;
	return NULL;
}

static void insert(uint64_t *keys, const struct sym_location **vals, size_t cap, uint64_t pc,
		   const struct sym_location *loc)
{
	size_t i = slot_of(pc, cap);

	while (vals[i] && keys[i] != pc)
		i = (i + 1) & (cap - 1);
	keys[i] = pc;
	vals[i] = loc;
}

int pc_cache_put(struct pc_cache *c, uint64_t pc, const struct sym_location *loc)
{
	if ((c->count + 1) * 2 > c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 1024;
		uint64_t *nkeys = malloc(ncap * sizeof(*nkeys));
		const struct sym_location **nvals = calloc(ncap, sizeof(*nvals));

		if (!nkeys || !nvals) {
			free(nkeys);
			free(nvals);
			return -ENOMEM;
		}
		for (size_t i = 0; i < c->cap; i++)
			if (c->vals[i])
				insert(nkeys, nvals, ncap, c->keys[i], c->vals[i]);
		free(c->keys);
		free(c->vals);
		c->keys = nkeys;
		c->vals = nvals;
		c->cap = ncap;
	}
	insert(c->keys, c->vals, c->cap, pc, loc);
	c->count++;
	return 0;
}

void pc_cache_release(struct pc_cache *c)
{
	free(c->keys);
	free((void *)c->vals);
	c->keys = NULL;
	c->vals = NULL;
	c->cap = c->count = 0;
}
