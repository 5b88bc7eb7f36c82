/* strmap: see strmap.h. */
#include "bundle/strmap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "bundle/internal.h"

static uint64_t seed;

/* Not thread-safe, like the readers: a race would at worst pick two seeds
 * for two maps, each consistent with itself (the seed is read once per
 * map operation and never changes after the first). */
static uint64_t map_seed(void)
{
	if (!seed) {
		uint64_t s = 0;
		if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s))
			s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)&s;
		seed = s ? s : BUNDLE_HASH_SEED;
	}
	return seed;
}

static size_t slot_of(const struct strmap *m, const char *key, uint64_t s, bool *found)
{
	size_t i = (size_t)bundle_hash_bytes(s, key, strlen(key)) & (m->cap - 1);
	while (m->keys[i]) {
		if (strcmp(m->keys[i], key) == 0) {
			*found = true;
			return i;
		}
		i = (i + 1) & (m->cap - 1);
	}
	*found = false;
	return i;
}

void strmap_release(struct strmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

size_t *strmap_find(const struct strmap *m, const char *key)
{
	bool found;
	if (!m->cap)
		return NULL;
	size_t i = slot_of(m, key, map_seed(), &found);
	return found ? &m->vals[i] : NULL;
}

static int grow(struct strmap *m, uint64_t s)
{
	struct strmap g = {.cap = m->cap ? m->cap * 2 : 64, .n = m->n};
	if (g.cap < m->cap)
		return -ENOMEM;
	g.keys = calloc(g.cap, sizeof(*g.keys));
	g.vals = malloc(g.cap * sizeof(*g.vals));
	if (!g.keys || !g.vals) {
		free(g.keys);
		free(g.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		bool found;
		if (!m->keys[i])
			continue;
		size_t k = slot_of(&g, m->keys[i], s, &found);
		g.keys[k] = m->keys[i];
		g.vals[k] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	*m = g;
	return 0;
}

int strmap_put(struct strmap *m, const char *key, size_t val, size_t **ret_val)
{
	uint64_t s = map_seed();
	bool found;
	if (2 * (m->n + 1) > m->cap && grow(m, s) < 0)
		return -ENOMEM;
	size_t i = slot_of(m, key, s, &found);
	if (!found) {
		m->keys[i] = key;
		m->vals[i] = val;
		m->n++;
	}
	if (ret_val)
		*ret_val = &m->vals[i];
	return found ? 0 : 1;
}
