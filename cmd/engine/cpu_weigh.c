/* Weigh each thread's perf samples to its schedstat (cpu_weigh.h). */
#include "cmd/engine/cpu_weigh.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/engine/profile_out.h"

/* Far enough from 1 that /proc/PID/stat's clock ticks, not a real loss,
 * would be behind it. */
#define REST_FACTOR_MIN 0.5
#define REST_FACTOR_MAX 2.0

struct weighed_thread {
	pid_t tid;
	uint64_t kernel_ns; /* on-CPU time over the window */
	uint64_t sampled_ns;
};

struct weighing {
	struct weighed_thread *t;
	size_t n;
	size_t ns_index;
	uint64_t rest_sampled_ns;
	double rest_factor;
};

static int by_tid(const void *a, const void *b)
{
	pid_t x = ((const struct weighed_thread *)a)->tid, y = ((const struct weighed_thread *)b)->tid;
	return (x > y) - (x < y);
}

static int cpu_by_tid(const void *a, const void *b)
{
	pid_t x = ((const struct thread_cpu *)a)->tid, y = ((const struct thread_cpu *)b)->tid;
	return (x > y) - (x < y);
}

/* The tid of a sample's labels, 0 when it has none. */
static pid_t labels_tid(const char *labels)
{
	if (!labels || strncmp(labels, "tid=", 4) != 0)
		return 0;
	char *end;
	long tid = strtol(labels + 4, &end, 10);
	return tid > 0 && (*end == '\0' || *end == LABEL_SEP[0]) ? (pid_t)tid : 0;
}

static struct weighed_thread *thread_of(struct weighing *w, const char *labels)
{
	struct weighed_thread key = {.tid = labels_tid(labels)};
	if (!key.tid || !w->n)
		return NULL;
	return bsearch(&key, w->t, w->n, sizeof(*w->t), by_tid);
}

static int tally(void *ctx, const uint64_t *pcs, size_t npcs, const char *labels, const int64_t *values)
{
	(void)pcs;
	(void)npcs;
	struct weighing *w = ctx;
	uint64_t v = values[w->ns_index] > 0 ? (uint64_t)values[w->ns_index] : 0;
	struct weighed_thread *t = thread_of(w, labels);
	if (t)
		t->sampled_ns += v;
	else
		w->rest_sampled_ns += v;
	return 0;
}

static double factor_of(void *ctx, const char *labels)
{
	struct weighing *w = ctx;
	struct weighed_thread *t = thread_of(w, labels);
	if (!t)
		return w->rest_factor;
	return t->sampled_ns ? (double)t->kernel_ns / (double)t->sampled_ns : 1.0;
}

int cpu_weigh(struct stackagg *cpu, size_t ns_index, const struct thread_cpu *start, size_t nstart,
	      const struct thread_cpu *end, size_t nend, uint64_t process_ns, uint64_t rest_min_ns,
	      struct cpu_weighing *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->rest_factor = 1.0;
	struct weighing w = {.ns_index = ns_index, .rest_factor = 1.0};
	w.t = calloc(nend ? nend : 1, sizeof(*w.t));
	struct thread_cpu *first = malloc((nstart ? nstart : 1) * sizeof(*first));
	if (!w.t || !first) {
		free(w.t);
		free(first);
		return -ENOMEM;
	}
	if (nstart)
		memcpy(first, start, nstart * sizeof(*first));
	qsort(first, nstart, sizeof(*first), cpu_by_tid);
	/* A thread of end that start does not list was created since the
	 * events opened, and inherited them at its birth: all its CPU time
	 * was sampled. A smaller end is another thread that took a dead one's
	 * tid. */
	for (size_t i = 0; i < nend; i++) {
		const struct thread_cpu *s = bsearch(&end[i], first, nstart, sizeof(*first), cpu_by_tid);
		uint64_t before = s ? s->ns : 0;
		if (end[i].ns >= before)
			w.t[w.n++] = (struct weighed_thread){.tid = end[i].tid, .kernel_ns = end[i].ns - before};
	}
	free(first);
	qsort(w.t, w.n, sizeof(*w.t), by_tid);
	stackagg_foreach(cpu, tally, &w);

	uint64_t known_kernel = 0;
	for (size_t i = 0; i < w.n; i++) {
		known_kernel += w.t[i].kernel_ns;
		ret->sampled_ns += w.t[i].sampled_ns;
		if (w.t[i].sampled_ns) {
			ret->weighed_ns += w.t[i].kernel_ns;
			ret->threads_weighed++;
		}
	}
	ret->rest_sampled_ns = w.rest_sampled_ns;
	ret->sampled_ns += w.rest_sampled_ns;
	if (w.rest_sampled_ns >= rest_min_ns && w.rest_sampled_ns && process_ns > known_kernel) {
		double f = (double)(process_ns - known_kernel) / (double)w.rest_sampled_ns;
		if (f >= REST_FACTOR_MIN && f <= REST_FACTOR_MAX)
			w.rest_factor = f;
	}
	ret->rest_factor = w.rest_factor;
	ret->weighed_ns += (uint64_t)((double)w.rest_sampled_ns * w.rest_factor + 0.5);
	stackagg_scale(cpu, ns_index, factor_of, &w);
	free(w.t);
	return 0;
}
