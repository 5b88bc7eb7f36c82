#include <criterion/criterion.h>
#include <string.h>

#include "cmd/engine/cpu_weigh.h"
#include "cmd/engine/profile_out.h"

#define MS 1000000ll

/* The CPU time (values[1]) of the entry with these labels and leaf. */
struct find {
	const char *labels;
	uint64_t leaf;
	int64_t ns, samples;
};

static int find_entry(void *ctx, const uint64_t *pcs, size_t npcs, const char *labels, const int64_t *values)
{
	struct find *f = ctx;
	if (npcs && pcs[0] == f->leaf && labels && strcmp(labels, f->labels) == 0) {
		f->ns = values[1];
		f->samples = values[0];
		return 1;
	}
	return 0;
}

static int64_t ns_of(struct stackagg *a, const char *labels, uint64_t leaf, int64_t *samples)
{
	struct find f = {.labels = labels, .leaf = leaf, .ns = -1};
	stackagg_foreach(a, find_entry, &f);
	if (samples)
		*samples = f.samples;
	return f.ns;
}

static void add(struct stackagg *a, const char *labels, uint64_t leaf, int n, int64_t period)
{
	uint64_t pcs[2] = {leaf, 0x1000};
	int64_t v[2] = {n, n * period};
	cr_assert_eq(stackagg_add(a, pcs, 2, labels, v), 0);
}

/* Thread 10 lost a fifth of its samples to the kernel's timer; thread 11
 * (born during the capture: no start reading) none; both are weighed to
 * their schedstat, each stack keeping its share of its thread, and the
 * sample counts stay what the kernel sent. */
Test(cpu_weigh, each_thread_is_weighed_to_its_schedstat)
{
	struct stackagg *a = stackagg_new(2);
	const char *t10 = "tid=10" LABEL_SEP "thread_comm=a", *t11 = "tid=11" LABEL_SEP "thread_comm=b";
	add(a, t10, 0xa, 60, 10 * MS);
	add(a, t10, 0xb, 20, 10 * MS);
	add(a, t11, 0xa, 50, 10 * MS);
	struct thread_cpu start[] = {{10, 5000 * MS}, {12, 1 * MS}};
	struct thread_cpu end[] = {{11, 500 * MS}, {10, 6000 * MS}, {12, 1 * MS}};
	struct cpu_weighing w;
	cr_assert_eq(cpu_weigh(a, 1, start, 2, end, 3, 1501 * MS, 100 * MS, &w), 0);
	int64_t samples;
	cr_expect_eq(ns_of(a, t10, 0xa, &samples), 750 * MS);
	cr_expect_eq(samples, 60);
	cr_expect_eq(ns_of(a, t10, 0xb, NULL), 250 * MS);
	cr_expect_eq(ns_of(a, t11, 0xa, NULL), 500 * MS);
	cr_expect_eq(w.sampled_ns, 1300 * MS);
	cr_expect_eq(w.weighed_ns, 1500 * MS);
	cr_expect_eq(w.threads_weighed, 2);
	cr_expect_eq(w.rest_sampled_ns, 0);
	cr_expect_float_eq(w.rest_factor, 1.0, 1e-9);
	stackagg_free(a);
}

/* A thread that exited (no end reading) and samples without a tid label
 * share what is left of the process's CPU time. */
Test(cpu_weigh, the_others_share_what_is_left_of_the_process)
{
	struct stackagg *a = stackagg_new(2);
	const char *t10 = "tid=10" LABEL_SEP "thread_comm=a", *t20 = "tid=20" LABEL_SEP "thread_comm=gone";
	const char *nolabel = "thread_comm=many";
	add(a, t10, 0xa, 10, 10 * MS);
	add(a, t20, 0xa, 40, 10 * MS);
	add(a, nolabel, 0xa, 40, 10 * MS);
	struct thread_cpu start[] = {{10, 0}, {20, 0}};
	struct thread_cpu end[] = {{10, 100 * MS}};
	struct cpu_weighing w;
	/* 100 ms for thread 10; 900 ms for the 800 ms of the others' samples. */
	cr_assert_eq(cpu_weigh(a, 1, start, 2, end, 1, 1000 * MS, 100 * MS, &w), 0);
	cr_expect_eq(ns_of(a, t10, 0xa, NULL), 100 * MS);
	cr_expect_eq(ns_of(a, t20, 0xa, NULL), 450 * MS);
	cr_expect_eq(ns_of(a, nolabel, 0xa, NULL), 450 * MS);
	cr_expect_float_eq(w.rest_factor, 1.125, 1e-9);
	cr_expect_eq(w.weighed_ns, 1000 * MS);
	stackagg_free(a);
}

/* The others are left as they were when their samples are too few for
 * /proc/PID/stat's clock ticks, or the process's CPU says something no
 * loss explains; a reused tid (its end below its start) is not weighed. */
Test(cpu_weigh, the_others_are_left_alone_when_the_process_says_little)
{
	const char *t20 = "tid=20" LABEL_SEP "thread_comm=gone", *t30 = "tid=30" LABEL_SEP "thread_comm=reused";
	struct thread_cpu start[] = {{30, 900 * MS}};
	struct thread_cpu end[] = {{30, 50 * MS}};
	struct cpu_weighing w;

	struct stackagg *a = stackagg_new(2);
	add(a, t20, 0xa, 5, 10 * MS);
	cr_assert_eq(cpu_weigh(a, 1, start, 1, end, 1, 80 * MS, 100 * MS, &w), 0);
	cr_expect_eq(ns_of(a, t20, 0xa, NULL), 50 * MS, "too few to weigh");
	stackagg_free(a);

	a = stackagg_new(2);
	add(a, t20, 0xa, 50, 10 * MS);
	add(a, t30, 0xa, 10, 10 * MS);
	cr_assert_eq(cpu_weigh(a, 1, start, 1, end, 1, 5000 * MS, 100 * MS, &w), 0);
	cr_expect_eq(ns_of(a, t20, 0xa, NULL), 500 * MS, "8.3x is no sampling loss");
	cr_expect_eq(ns_of(a, t30, 0xa, NULL), 100 * MS, "a reused tid is not weighed");
	cr_expect_eq(w.threads_weighed, 0);
	cr_expect_float_eq(w.rest_factor, 1.0, 1e-9);
	stackagg_free(a);
}
