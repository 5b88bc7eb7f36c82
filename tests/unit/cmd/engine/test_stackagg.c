#include <criterion/criterion.h>
#include <string.h>

#include "cmd/engine/stackagg.h"

struct seen {
	size_t n;
	uint64_t first_pc[8];
	const char *labels[8];
	int64_t v0[8], v1[8];
	size_t npcs[8];
};

static int collect(void *ctx, const uint64_t *pcs, size_t npcs, const char *labels,
		   const int64_t *values)
{
	struct seen *s = ctx;

	cr_assert_lt(s->n, 8);
	s->first_pc[s->n] = npcs ? pcs[0] : 0;
	s->npcs[s->n] = npcs;
	s->labels[s->n] = labels;
	s->v0[s->n] = values[0];
	s->v1[s->n] = values[1];
	s->n++;
	return 0;
}

Test(stackagg, rejects_bad_nvalues)
{
	cr_assert_null(stackagg_new(0));
	cr_assert_null(stackagg_new(STACKAGG_MAX_VALUES + 1));
	stackagg_free(NULL);
	cr_assert_eq(stackagg_count(NULL), 0);
}

Test(stackagg, merges_identical_keys_in_insertion_order)
{
	struct stackagg *a = stackagg_new(2);
	uint64_t s1[3] = { 0x10, 0x20, 0x30 }, s2[2] = { 0x10, 0x20 }, s3[3] = { 0x11, 0x20, 0x30 };
	int64_t one[2] = { 1, 100 }, two[2] = { 2, 5 };
	char lab[32];
	struct seen seen = { 0 };

	cr_assert_not_null(a);
	cr_assert_eq(stackagg_add(a, s1, 3, "tid=1", one), 0);
	cr_assert_eq(stackagg_add(a, s2, 2, "tid=1", one), 0); /* prefix: distinct */
	/* labels compared by content, not pointer */
	strcpy(lab, "tid=1");
	cr_assert_eq(stackagg_add(a, s1, 3, lab, two), 0);
	cr_assert_eq(stackagg_add(a, s1, 3, "tid=2", one), 0);
	cr_assert_eq(stackagg_add(a, s1, 3, NULL, one), 0);
	cr_assert_eq(stackagg_add(a, s1, 3, "", one), 0);   /* "" is not NULL */
	cr_assert_eq(stackagg_add(a, s3, 3, NULL, one), 0);
	cr_assert_eq(stackagg_add(a, NULL, 0, NULL, one), 0); /* empty stack */
	cr_assert_eq(stackagg_add(a, s1, 3, NULL, two), 0);
	cr_assert_eq(stackagg_add(a, NULL, 0, NULL, two), 0);
	cr_assert_eq(stackagg_count(a), 7);

	cr_assert_eq(stackagg_foreach(a, collect, &seen), 0);
	cr_assert_eq(seen.n, 7);
	cr_assert_eq(seen.first_pc[0], 0x10);
	cr_assert_str_eq(seen.labels[0], "tid=1");
	cr_assert_eq(seen.npcs[0], 3);
	cr_assert_eq(seen.v0[0], 3);
	cr_assert_eq(seen.v1[0], 105);
	cr_assert_eq(seen.npcs[1], 2);
	cr_assert_eq(seen.v0[1], 1);
	cr_assert_str_eq(seen.labels[2], "tid=2");
	cr_assert_null(seen.labels[3]);
	cr_assert_eq(seen.v0[3], 3);
	cr_assert_str_eq(seen.labels[4], "");
	cr_assert_eq(seen.v0[4], 1);
	cr_assert_eq(seen.first_pc[5], 0x11);
	cr_assert_eq(seen.npcs[6], 0);
	cr_assert_eq(seen.v0[6], 3);
	stackagg_free(a);
}

static int stop_at_second(void *ctx, const uint64_t *pcs, size_t npcs, const char *labels,
			  const int64_t *values)
{
	int *calls = ctx;

	return ++*calls == 2 ? 42 : 0;
}

Test(stackagg, foreach_stops_early)
{
	struct stackagg *a = stackagg_new(1);
	int64_t v = 1;
	int calls = 0;

	for (uint64_t pc = 1; pc <= 5; pc++)
		cr_assert_eq(stackagg_add(a, &pc, 1, NULL, &v), 0);
	cr_assert_eq(stackagg_foreach(a, stop_at_second, &calls), 42);
	cr_assert_eq(calls, 2);
	stackagg_free(a);
}

struct sum {
	int64_t total;
	uint64_t next_expected;
	bool ordered;
};

static int check_order(void *ctx, const uint64_t *pcs, size_t npcs, const char *labels,
		       const int64_t *values)
{
	struct sum *s = ctx;

	if (pcs[0] != s->next_expected || values[0] != 3)
		s->ordered = false;
	s->next_expected++;
	s->total += values[0];
	return 0;
}

Test(stackagg, memory_bounded_by_distinct_stacks)
{
	struct stackagg *a = stackagg_new(1);
	struct sum sum = { .ordered = true };
	int64_t v = 1;

	/* 20000 distinct stacks seen three times each: 20000 entries. */
	for (int round = 0; round < 3; round++) {
		for (uint64_t i = 0; i < 20000; i++) {
			uint64_t pcs[4] = { i, 0x400000, 0x400100, 0x400200 };
			cr_assert_eq(stackagg_add(a, pcs, 4, "state=R", &v), 0);
		}
	}
	cr_assert_eq(stackagg_count(a), 20000);
	cr_assert_eq(stackagg_foreach(a, check_order, &sum), 0);
	cr_assert(sum.ordered);
	cr_assert_eq(sum.total, 60000);
	stackagg_free(a);
}
