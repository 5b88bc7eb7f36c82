/* The latest perf moment per thread, and the places it last slept:
 * open addressing by tid. */
#include "cmd/engine/moments.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct thread_moments {
	pid_t tid; /* 0: empty slot */
	struct moment latest;
	struct moment sleeps[MOMENT_SLEEPS]; /* tid 0: unused; most recent first */
	struct held_switch held; /* held.m.tid 0: none */
};

struct moments {
	struct thread_moments *slots;
	size_t used, cap;
};

void moment_syscall_args(const struct user_regs_struct *r, uint64_t out[6])
{
	const uint64_t a[6] = {r->rdi, r->rsi, r->rdx, r->r10, r->r8, r->r9};
	memcpy(out, a, sizeof(a));
}

int moments_new(struct moments **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void moments_free(struct moments *ms)
{
	if (!ms)
		return;
	for (size_t i = 0; i < ms->cap; i++)
		free(ms->slots[i].held.bytes);
	free(ms->slots);
	free(ms);
}

static size_t slot_of(const struct thread_moments *slots, size_t cap, pid_t tid)
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
	struct thread_moments *s = calloc(cap, sizeof(*s));
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

static struct thread_moments *thread_add(struct moments *ms, pid_t tid)
{
	if (grow(ms, ms->used + 1) < 0)
		return NULL;
	struct thread_moments *t = &ms->slots[slot_of(ms->slots, ms->cap, tid)];
	if (!t->tid) {
		t->tid = tid;
		ms->used++;
	}
	return t;
}

static bool same_sleep(const struct moment *m, const uint64_t *args, uint64_t sp, uint64_t pc)
{
	return m->tid && m->sp == sp && m->pc == pc &&
	       (!args || memcmp(args, m->args, sizeof(m->args)) == 0);
}

/* Most recent first; a sleep at a place already kept replaces it. */
static void remember_sleep(struct thread_moments *t, const struct moment *m)
{
	size_t k = 0;
	while (k < MOMENT_SLEEPS - 1 && !same_sleep(&t->sleeps[k], m->args, m->sp, m->pc))
		k++;
	if (t->sleeps[k].tid && t->sleeps[k].time_ns > m->time_ns)
		return;
	memmove(&t->sleeps[1], &t->sleeps[0], k * sizeof(t->sleeps[0]));
	t->sleeps[0] = *m;
}

int moments_note(struct moments *ms, const struct moment *m)
{
	struct thread_moments *t = thread_add(ms, m->tid);
	if (!t)
		return -ENOMEM;
	/* Sleeps whose stack unwound whole are worth remembering. */
	if (m->kind != MOMENT_CPU && m->stack.n > 0 && !m->stack_cut)
		remember_sleep(t, m);
	if (t->latest.tid && t->latest.time_ns > m->time_ns)
		return 0; /* a sample from another CPU's ring, older */
	t->latest = *m;
	return 0;
}

/* (ms->slots is not const in a const moments: the callers that change
 * a thread's entry are the ones not given a const ms.) */
static struct thread_moments *thread_of(const struct moments *ms, pid_t tid)
{
	if (!ms->cap)
		return NULL;
	struct thread_moments *t = &ms->slots[slot_of(ms->slots, ms->cap, tid)];
	return t->tid ? t : NULL;
}

const struct moment *moments_find(const struct moments *ms, pid_t tid)
{
	const struct thread_moments *t = thread_of(ms, tid);
	return t && t->latest.tid ? &t->latest : NULL;
}

const struct moment *moments_find_sleep(const struct moments *ms, pid_t tid,
					const uint64_t *args, uint64_t sp, uint64_t pc)
{
	const struct thread_moments *t = thread_of(ms, tid);
	for (size_t k = 0; t && k < MOMENT_SLEEPS; k++)
		if (same_sleep(&t->sleeps[k], args, sp, pc))
			return &t->sleeps[k];
	return NULL;
}

bool moments_renew_sleep(struct moments *ms, const struct moment *m)
{
	struct thread_moments *t = thread_of(ms, m->tid);
	for (size_t k = 0; t && k < MOMENT_SLEEPS; k++) {
		struct moment *s = &t->sleeps[k];
		if (!same_sleep(s, m->args, m->sp, m->pc))
			continue;
		if (s->time_ns < m->time_ns)
			s->time_ns = m->time_ns;
		if (!t->latest.tid || t->latest.time_ns <= s->time_ns)
			t->latest = *s;
		return true;
	}
	return false;
}

int moments_hold(struct moments *ms, const struct moment *m, const struct user_regs_struct *regs,
		 const uint8_t *stack, size_t len)
{
	struct thread_moments *t = thread_add(ms, m->tid);
	if (!t)
		return -ENOMEM;
	struct held_switch *h = &t->held;
	if (h->m.tid && h->m.time_ns > m->time_ns)
		return 0; /* a sample from another CPU's ring, older */
	if (len > h->cap) {
		uint8_t *b = realloc(h->bytes, len);
		if (!b)
			return -ENOMEM;
		h->bytes = b;
		h->cap = len;
	}
	if (len)
		memcpy(h->bytes, stack, len);
	h->len = len;
	h->m = *m;
	h->m.stack.n = 0;
	h->regs = *regs;
	return 0;
}

const struct held_switch *moments_held(const struct moments *ms, pid_t tid)
{
	const struct thread_moments *t = thread_of(ms, tid);
	return t && t->held.m.tid ? &t->held : NULL;
}

void moments_drop_held(struct moments *ms, pid_t tid)
{
	struct thread_moments *t = thread_of(ms, tid);
	if (t)
		t->held.m.tid = 0; /* the buffer stays, for the next one */
}

bool moments_knows_sleep(const struct moments *ms, pid_t tid, const uint64_t *args, uint64_t sp,
			 uint64_t pc)
{
	if (moments_find_sleep(ms, tid, args, sp, pc))
		return true;
	const struct held_switch *h = moments_held(ms, tid);
	return h && same_sleep(&h->m, args, sp, pc);
}

void moments_prune(struct moments *ms, const struct process_capture *pc)
{
	if (ms->used <= 2 * pc->nthreads + 256)
		return;
	struct moments kept = {0};
	if (grow(&kept, pc->nthreads + 1) < 0)
		return; /* no memory to prune with: keep them all */
	for (size_t i = 0; i < pc->nthreads; i++) {
		struct thread_moments *t = thread_of(ms, pc->threads[i].tid);
		if (!t)
			continue;
		kept.slots[slot_of(kept.slots, kept.cap, t->tid)] = *t;
		kept.used++;
		t->held.bytes = NULL; /* moved */
	}
	for (size_t i = 0; i < ms->cap; i++)
		free(ms->slots[i].held.bytes);
	free(ms->slots);
	*ms = kept;
}
