/*
 * Bump allocator for results that live as long as the symbolizer: cached
 * locations, frame arrays and the few strings we own. Freeing them one by one
 * would buy nothing; the symbolizer dies as a whole.
 */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/internal.h"

#define CHUNK_SIZE (64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	alignas(max_align_t) unsigned char data[];
};

void *arena_alloc(struct arena *a, size_t size)
{
	const size_t align = alignof(max_align_t);
	struct arena_chunk *c = a->head;
	size_t need = (size + align - 1) & ~(align - 1);

	if (need < size)
		return NULL;
	if (!c || c->size - c->used < need) {
		size_t csize = need > CHUNK_SIZE / 4 ? need : CHUNK_SIZE;

		c = malloc(sizeof(*c) + csize);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = csize;
		if (a->head && csize != CHUNK_SIZE) {
			/* Oversized one-off: keep the current chunk open for
			 * the small allocations that follow. */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
	}
	void *p = c->data + c->used;
	c->used += need;
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t len)
{
	char *p = arena_alloc(a, len + 1);

	if (!p)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

void arena_release(struct arena *a)
{
	struct arena_chunk *c = a->head;

	while (c) {
		struct arena_chunk *next = c->next;

		free(c);
		c = next;
	}
	a->head = NULL;
}
