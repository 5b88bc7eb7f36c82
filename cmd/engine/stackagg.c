/*
 * stackagg: open-addressing index over an insertion-ordered entry array.
 * The array gives stable iteration order (the order stacks were first seen,
 * which keeps profiles reproducible); the index gives O(1) merging.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/engine/stackagg.h"

/* FNV-1a: stacks are keyed by their bytes; no adversary picks them to
 * collide (a collision costs a compare, not a wrong answer). */
#define HASH_SEED 0xcbf29ce484222325ULL
static uint64_t hash_bytes(uint64_t h, const void *data, size_t len)
{
	for (const unsigned char *p = data, *end = p + len; p < end; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return h;
}

struct entry {
	uint64_t hash;
	uint64_t *pcs; /* one allocation: pcs, then the labels bytes */
	char *labels;  /* NULL if added without labels */
	size_t npcs;
	int64_t values[STACKAGG_MAX_VALUES];
};

struct stackagg {
	size_t nvalues;
	struct entry *entries;
	size_t n, cap;
	size_t *slots; /* entry index + 1; 0 = empty */
	size_t nslots; /* power of two */
};

struct stackagg *stackagg_new(size_t nvalues)
{
	struct stackagg *a;

	if (nvalues == 0 || nvalues > STACKAGG_MAX_VALUES)
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->nvalues = nvalues;
	return a;
}

void stackagg_free(struct stackagg *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		free(a->entries[i].pcs);
	free(a->entries);
	free(a->slots);
	free(a);
}

size_t stackagg_count(const struct stackagg *a)
{
	return a ? a->n : 0;
}

size_t stackagg_nvalues(const struct stackagg *a)
{
	return a->nvalues;
}

static uint64_t key_hash(const uint64_t *pcs, size_t npcs, const char *labels)
{
	uint64_t h = hash_bytes(HASH_SEED, pcs, npcs * sizeof(*pcs));

	/* One extra byte tells "no labels" from "": a NULL key is distinct. */
	h = hash_bytes(h, labels ? "L" : "N", 1);
	return labels ? hash_bytes(h, labels, strlen(labels)) : h;
}

static bool key_equal(const struct entry *e, uint64_t h, const uint64_t *pcs, size_t npcs,
		      const char *labels)
{
	if (e->hash != h || e->npcs != npcs)
		return false;
	if (npcs && memcmp(e->pcs, pcs, npcs * sizeof(*pcs)) != 0)
		return false;
	if (!e->labels || !labels)
		return e->labels == labels;
	return strcmp(e->labels, labels) == 0;
}

static int grow_slots(struct stackagg *a)
{
	size_t nslots = a->nslots ? 2 * a->nslots : 64;
	size_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < a->n; i++) {
		size_t s = a->entries[i].hash & (nslots - 1);
		while (slots[s])
			s = (s + 1) & (nslots - 1);
		slots[s] = i + 1;
	}
	free(a->slots);
	a->slots = slots;
	a->nslots = nslots;
	return 0;
}

static int insert(struct stackagg *a, size_t slot, uint64_t h, const uint64_t *pcs, size_t npcs,
		  const char *labels, const int64_t *values)
{
	size_t llen = labels ? strlen(labels) + 1 : 0;
	struct entry *e;

	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 64;
		e = realloc(a->entries, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		a->entries = e;
		a->cap = cap;
	}
	e = &a->entries[a->n];
	memset(e, 0, sizeof(*e));
	/* +1 so a zero-frame stack without labels still gets a block. */
	e->pcs = malloc(npcs * sizeof(*pcs) + llen + 1);
	if (!e->pcs)
		return -ENOMEM;
	if (npcs)
		memcpy(e->pcs, pcs, npcs * sizeof(*pcs));
	if (labels) {
		e->labels = (char *)(e->pcs + npcs);
		memcpy(e->labels, labels, llen);
	}
	e->npcs = npcs;
	e->hash = h;
	memcpy(e->values, values, a->nvalues * sizeof(*values));
	a->slots[slot] = ++a->n;
	return 0;
}

int stackagg_add(struct stackagg *a, const uint64_t *pcs, size_t npcs, const char *labels,
		 const int64_t *values)
{
	uint64_t h;
	size_t s;

	if (!a || (!pcs && npcs) || !values)
		return -EINVAL;
	/* Keep the load factor at or below 1/2 so probe runs stay short. */
	if (2 * (a->n + 1) > a->nslots && grow_slots(a) < 0)
		return -ENOMEM;
	h = key_hash(pcs, npcs, labels);
	for (s = h & (a->nslots - 1); a->slots[s]; s = (s + 1) & (a->nslots - 1)) {
		struct entry *e = &a->entries[a->slots[s] - 1];
		if (key_equal(e, h, pcs, npcs, labels)) {
			for (size_t i = 0; i < a->nvalues; i++)
				e->values[i] += values[i];
			return 0;
		}
	}
	return insert(a, s, h, pcs, npcs, labels, values);
}

int stackagg_foreach(const struct stackagg *a, stackagg_visit_fn fn, void *ctx)
{
	if (!a || !fn)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct entry *e = &a->entries[i];
		int r = fn(ctx, e->pcs, e->npcs, e->labels, e->values);
		if (r)
			return r;
	}
	return 0;
}

void stackagg_scale(struct stackagg *a, size_t index, stackagg_factor_fn factor, void *ctx)
{
	if (!a || !factor || index >= a->nvalues)
		return;
	for (size_t i = 0; i < a->n; i++) {
		struct entry *e = &a->entries[i];
		double v = (double)e->values[index] * factor(ctx, e->labels);
		e->values[index] = v > 0 ? (int64_t)(v + 0.5) : 0;
	}
}
