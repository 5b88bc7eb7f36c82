/* Each thread's switches and CPU samples between two wakes, sorted by
 * thread and time when the window closes. */
#include "cmd/engine/wall_window.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/arrays.h"

enum rec_kind {
	REC_IN,      /* came onto a CPU */
	REC_SLEEP,   /* left it to sleep */
	REC_PREEMPT, /* left it runnable */
	REC_CPU,     /* a CPU sample: pcs[off, off + n) */
};

struct rec {
	pid_t tid;
	enum rec_kind kind;
	bool truncated;
	uint64_t time_ns;
	uint64_t seq; /* arrival order: ties in time keep it */
	size_t off, n;
};

struct wall_window {
	struct rec *recs;
	size_t nrecs, recs_cap;
	uint64_t *pcs;
	size_t npcs, pcs_cap;
	uint64_t seq;
	struct unwound_stack scratch; /* what wall_window_at returns */
	struct unwound_stack empty;
};

int wall_window_new(struct wall_window **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void wall_window_free(struct wall_window *w)
{
	if (!w)
		return;
	free(w->recs);
	free(w->pcs);
	free(w);
}

static struct rec *add(struct wall_window *w, pid_t tid, uint64_t time_ns, enum rec_kind kind)
{
	if (array_reserve(&w->recs, &w->recs_cap, w->nrecs + 1, sizeof(*w->recs), 256) < 0)
		return NULL;
	struct rec *r = &w->recs[w->nrecs++];
	*r = (struct rec){.tid = tid, .kind = kind, .time_ns = time_ns, .seq = w->seq++};
	return r;
}

int wall_window_switch(struct wall_window *w, pid_t tid, uint64_t time_ns, bool out, bool preempt)
{
	enum rec_kind k = !out ? REC_IN : preempt ? REC_PREEMPT : REC_SLEEP;
	return add(w, tid, time_ns, k) ? 0 : -ENOMEM;
}

int wall_window_cpu(struct wall_window *w, pid_t tid, uint64_t time_ns,
		    const struct unwound_stack *st)
{
	if (array_reserve(&w->pcs, &w->pcs_cap, w->npcs + st->n, sizeof(*w->pcs), 1024) < 0)
		return -ENOMEM;
	struct rec *r = add(w, tid, time_ns, REC_CPU);
	if (!r)
		return -ENOMEM;
	r->off = w->npcs;
	r->n = st->n;
	r->truncated = st->truncated;
	if (st->n)
		memcpy(&w->pcs[w->npcs], st->pcs, st->n * sizeof(uint64_t));
	w->npcs += st->n;
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (x->tid != y->tid)
		return (x->tid > y->tid) - (x->tid < y->tid);
	if (x->time_ns != y->time_ns)
		return (x->time_ns > y->time_ns) - (x->time_ns < y->time_ns);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

void wall_window_seal(struct wall_window *w)
{
	if (w->nrecs)
		qsort(w->recs, w->nrecs, sizeof(*w->recs), rec_cmp);
}

/* The first record of tid (sorted), or nrecs. */
static size_t first_of(const struct wall_window *w, pid_t tid)
{
	size_t lo = 0, hi = w->nrecs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->recs[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct unwound_stack *stack_of(struct wall_window *w, const struct rec *r)
{
	struct unwound_stack *s = &w->scratch;
	s->n = r->n < UNWIND_MAX_FRAMES_DEFAULT ? r->n : UNWIND_MAX_FRAMES_DEFAULT;
	s->truncated = r->truncated;
	if (s->n)
		memcpy(s->pcs, &w->pcs[r->off], s->n * sizeof(uint64_t));
	return s;
}

/* tid's CPU sample in [from, to] nearest t, or NULL. */
static const struct rec *nearest_cpu(const struct wall_window *w, size_t lo, size_t hi, uint64_t t,
				     uint64_t from, uint64_t to)
{
	const struct rec *best = NULL;
	uint64_t best_d = UINT64_MAX;
	for (size_t k = lo; k < hi; k++) {
		const struct rec *r = &w->recs[k];
		if (r->kind != REC_CPU || r->time_ns < from || r->time_ns > to)
			continue;
		uint64_t d = r->time_ns > t ? r->time_ns - t : t - r->time_ns;
		if (d < best_d) {
			best = r;
			best_d = d;
		}
	}
	return best;
}

static bool asleep(const struct wall_anchor *a)
{
	return a->present && (a->state == 'S' || a->state == 'D');
}

bool wall_window_at(struct wall_window *w, pid_t tid, uint64_t t, uint64_t prev_ns,
		    const struct wall_anchor *prev, uint64_t now_ns, const struct wall_anchor *now,
		    char *state, const struct unwound_stack **stack)
{
	size_t lo = first_of(w, tid), hi = lo;
	while (hi < w->nrecs && w->recs[hi].tid == tid)
		hi++;
	/* The switches on either side of t: the episode t falls in. */
	const struct rec *before = NULL, *after = NULL;
	for (size_t k = lo; k < hi; k++) {
		const struct rec *r = &w->recs[k];
		if (r->kind == REC_CPU || r->time_ns <= prev_ns || r->time_ns > now_ns)
			continue;
		if (r->time_ns <= t)
			before = r;
		else if (!after)
			after = r;
	}
	uint64_t from = before ? before->time_ns : prev_ns, to = after ? after->time_ns : now_ns;
	const struct rec *cpu;

	/* An episode that reaches an anchor is the anchor's: its state, and
	 * where it runs (its CPU sample nearest t) or sleeps. */
	const struct wall_anchor *a = !after && now->present    ? now
				      : !before && prev->present ? prev
								 : NULL;
	if (a) {
		*state = a->state;
		cpu = a->state == 'R' ? nearest_cpu(w, lo, hi, t, from, to) : NULL;
		*stack = cpu ? stack_of(w, cpu) : a->stack ? a->stack : &w->empty;
		return true;
	}
	/* Not a thread after its last switch out (it ended in the window),
	 * nor before its first switch in (born in the window). */
	if (!now->present && !after && before && before->kind != REC_IN)
		return false;
	if (!before && (!after || after->kind == REC_IN))
		return false;
	enum rec_kind k = before ? before->kind : REC_IN;
	if (k == REC_SLEEP) {
		/* A sleep inside the window: a thread that sleeps often sleeps at
		 * one place, and an anchor read where. */
		const struct wall_anchor *s = asleep(now) ? now : asleep(prev) ? prev : NULL;
		*state = s ? s->state : 'S';
		cpu = s ? NULL : nearest_cpu(w, lo, hi, t, 0, t);
		*stack = s && s->stack ? s->stack : cpu ? stack_of(w, cpu) : &w->empty;
		return true;
	}
	/* On a CPU (its nearest sample in this run of it, else the last one
	 * before), or preempted (where it last ran). */
	*state = 'R';
	cpu = k == REC_IN ? nearest_cpu(w, lo, hi, t, from, to) : NULL;
	if (!cpu)
		cpu = nearest_cpu(w, lo, hi, t, 0, t);
	if (!cpu)
		cpu = nearest_cpu(w, lo, hi, t, 0, UINT64_MAX);
	if (cpu) {
		*stack = stack_of(w, cpu);
		return true;
	}
	const struct wall_anchor *any = now->present ? now : prev;
	*stack = any->present && any->stack ? any->stack : &w->empty;
	return true;
}

void wall_window_forget(struct wall_window *w, uint64_t t)
{
	/* The kept samples' frames go to a fresh pool: sorting put the
	 * records out of the pool's order. */
	size_t n = 0, need = 0;
	for (size_t k = 0; k < w->nrecs; k++)
		if (w->recs[k].time_ns > t && w->recs[k].kind == REC_CPU)
			need += w->recs[k].n;
	uint64_t *pcs = need ? malloc(need * sizeof(uint64_t)) : NULL;
	size_t npcs = 0;
	for (size_t k = 0; k < w->nrecs; k++) {
		struct rec r = w->recs[k];
		if (r.time_ns <= t)
			continue;
		if (r.kind == REC_CPU) {
			if (!pcs)
				r.n = 0; /* no memory: the sample keeps its time, not its frames */
			else if (r.n)
				memcpy(&pcs[npcs], &w->pcs[r.off], r.n * sizeof(uint64_t));
			r.off = npcs;
			npcs += r.n;
		}
		w->recs[n++] = r;
	}
	if (pcs || !need) {
		free(w->pcs);
		w->pcs = pcs;
		w->pcs_cap = need;
	}
	w->nrecs = n;
	w->npcs = pcs ? npcs : 0;
}
