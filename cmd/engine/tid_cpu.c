/* Each thread's on-CPU time by tid (tid_cpu.h). */
#include "cmd/engine/tid_cpu.h"

#include <stdlib.h>

struct tid_cpu *tid_cpu_lookup(struct tid_cpu_table *t, pid_t tid)
{
	return tid_cpu_find(t, tid, true);
}

/* Keeps only the threads of pc: a process that churns threads would
 * otherwise grow the table by every thread it ever had (bench/soak). */
void tid_cpu_prune(struct tid_cpu_table *t, const struct process_capture *pc)
{
	if (t->used <= 2 * pc->nthreads + 1024)
		return;
	struct tid_cpu_table kept = {0};
	for (size_t i = 0; i < pc->nthreads; i++) {
		struct tid_cpu *old = tid_cpu_find(t, pc->threads[i].tid, false);
		struct tid_cpu *s = old ? tid_cpu_find(&kept, old->tid, true) : NULL;
		if (s)
			s->cpu_ns = old->cpu_ns;
	}
	free(t->slots);
	*t = kept;
}

struct tid_cpu *tid_cpu_find(struct tid_cpu_table *t, pid_t tid, bool insert)
{
	if (!insert && !t->cap)
		return NULL;
	if (insert && t->used * 2 >= t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct tid_cpu *s = calloc(cap, sizeof(*s));
		if (!s)
			return NULL;
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->slots[i].tid)
				continue;
			size_t h = (size_t)t->slots[i].tid * 2654435761u % cap;
			while (s[h].tid)
				h = (h + 1) % cap;
			s[h] = t->slots[i];
		}
		free(t->slots);
		t->slots = s;
		t->cap = cap;
	}
	size_t h = (size_t)tid * 2654435761u % t->cap;
	while (t->slots[h].tid && t->slots[h].tid != tid)
		h = (h + 1) % t->cap;
	if (!t->slots[h].tid) {
		if (!insert)
			return NULL;
		t->slots[h].tid = tid;
		t->slots[h].cpu_ns = UINT64_MAX; /* never seen */
		t->used++;
	}
	return &t->slots[h];
}
