#include "symbolize/unwind/step_cache.h"
#include "symbolize/arrays.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct range {
	uint64_t start, end; /* [start, end) */
	size_t slot;         /* its state: states + slot * state_size */
};

struct step_cache {
	struct range *ranges; /* by start; never overlapping */
	size_t n, ranges_cap;
	unsigned char *states; /* slot i at i * state_size, in order of adding */
	size_t states_cap;     /* in states */
	size_t state_size;     /* 0 until the first add */
};

int step_cache_new(struct step_cache **ret)
{
	struct step_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*ret = c;
	return 0;
}

void step_cache_free(struct step_cache *c)
{
	if (!c)
		return;
	free(c->ranges);
	free(c->states);
	free(c);
}

void step_cache_clear(struct step_cache *c)
{
	c->n = 0;
}

size_t step_cache_ranges(const struct step_cache *c)
{
	return c->n;
}

/* Index of the first range that starts above pc. */
static size_t first_above(const struct step_cache *c, uint64_t pc)
{
	return addr_first_above(c->ranges, c->n, sizeof(c->ranges[0]),
				offsetof(struct range, start), pc);
}

const void *step_cache_find(const struct step_cache *c, uint64_t pc)
{
	size_t i = first_above(c, pc);
	if (i == 0 || pc >= c->ranges[i - 1].end)
		return NULL;
	return c->states + c->ranges[i - 1].slot * c->state_size;
}

/* Room for one more range and its state. A full cache starts over rather
 * than grow without end (the doubling from 256 stops at the bound). */
static int make_room(struct step_cache *c)
{
	if (c->n == STEP_CACHE_MAX_RANGES)
		c->n = 0;
	int r = array_reserve(&c->ranges, &c->ranges_cap, c->n + 1, sizeof(c->ranges[0]), 256);
	if (r == 0)
		r = array_reserve(&c->states, &c->states_cap, c->n + 1, c->state_size, 256);
	return r;
}

int step_cache_add(struct step_cache *c, uint64_t start, uint64_t end, const void *state,
		   size_t size)
{
	if (size == 0 || (c->state_size && size != c->state_size))
		return -EINVAL;
	if (start >= end)
		return 0;
	if (!c->state_size)
		c->state_size = size;
	int r = make_room(c);
	if (r < 0)
		return r;
	size_t i = first_above(c, start);
	if ((i > 0 && c->ranges[i - 1].end > start) || (i < c->n && c->ranges[i].start < end))
		return 0;
	/* Slots are handed out in order of adding and reused only after a
	 * clear, so the n-th range added since then owns slot n. */
	size_t slot = c->n;
	memmove(&c->ranges[i + 1], &c->ranges[i], (c->n - i) * sizeof(c->ranges[0]));
	c->ranges[i] = (struct range){.start = start, .end = end, .slot = slot};
	memcpy(c->states + slot * size, state, size);
	c->n++;
	return 0;
}
