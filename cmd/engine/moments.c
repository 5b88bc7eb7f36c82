/* The latest perf moment per thread: open addressing by tid. */
#include "cmd/engine/moments.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct moments {
	struct moment *slots; /* tid 0: empty */
	size_t used, cap;
};

int moments_new(struct moments **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void moments_free(struct moments *ms)
{
	if (!ms)
		return;
	free(ms->slots);
	free(ms);
}

static size_t slot_of(const struct moment *slots, size_t cap, pid_t tid)
{
	size_t h = (size_t)tid * 2654435761u % cap;
	while (slots[h].tid && slots[h].tid != tid)
		h = (h + 1) % cap;
	return h;
}

static int grow(struct moments *ms, size_t want)
{
	size_t cap = ms->cap ? ms->cap : 64;
	while (want * 2 >= cap)
		cap *= 2;
	if (cap == ms->cap)
		return 0;
	struct moment *s = calloc(cap, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < ms->cap; i++)
		if (ms->slots[i].tid)
			s[slot_of(s, cap, ms->slots[i].tid)] = ms->slots[i];
	free(ms->slots);
	ms->slots = s;
	ms->cap = cap;
	return 0;
}

int moments_note(struct moments *ms, const struct moment *m)
{
	if (grow(ms, ms->used + 1) < 0)
		return -ENOMEM;
	struct moment *slot = &ms->slots[slot_of(ms->slots, ms->cap, m->tid)];
	if (!slot->tid)
		ms->used++;
	else if (slot->time_ns > m->time_ns)
		return 0; /* a sample from another CPU's ring, older */
	*slot = *m;
	return 0;
}

const struct moment *moments_find(const struct moments *ms, pid_t tid)
{
	if (!ms->cap)
		return NULL;
	const struct moment *slot = &ms->slots[slot_of(ms->slots, ms->cap, tid)];
	return slot->tid ? slot : NULL;
}

void moments_prune(struct moments *ms, const struct process_capture *pc)
{
	if (ms->used <= 2 * pc->nthreads + 256)
		return;
	struct moments kept = {0};
	for (size_t i = 0; i < pc->nthreads; i++) {
		const struct moment *m = moments_find(ms, pc->threads[i].tid);
		if (m && moments_note(&kept, m) < 0) {
			free(kept.slots);
			return; /* no memory to prune with: keep them all */
		}
	}
	free(ms->slots);
	*ms = kept;
}
