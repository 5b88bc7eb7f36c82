/*
 * symbolize/unwind/step_cache.h: ranges found by PC, overlaps left out,
 * emptied by a clear and when full.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "symbolize/unwind/step_cache.h"

struct rules {
	uint64_t tag[3]; /* stands for libunwind's opaque state */
};

static const struct rules *find(struct step_cache *c, uint64_t pc)
{
	return step_cache_find(c, pc);
}

static void add(struct step_cache *c, uint64_t start, uint64_t end, uint64_t tag)
{
	struct rules r = {{tag, ~tag, tag * 3}};
	cr_assert_eq(step_cache_add(c, start, end, &r, sizeof(r)), 0);
}

Test(step_cache, found_by_pc_within_its_range)
{
	struct step_cache *c;
	cr_assert_eq(step_cache_new(&c), 0);
	cr_expect_null(find(c, 0x1000), "an empty cache found something");
	add(c, 0x2000, 0x2010, 2);
	add(c, 0x1000, 0x1004, 1);
	add(c, 0x1004, 0x1020, 3); /* adjacent: not an overlap */
	cr_expect_eq(step_cache_ranges(c), 3);
	cr_expect_null(find(c, 0xfff));
	cr_expect_eq(find(c, 0x1000)->tag[0], 1);
	cr_expect_eq(find(c, 0x1003)->tag[0], 1);
	cr_expect_eq(find(c, 0x1004)->tag[0], 3);
	cr_expect_eq(find(c, 0x101f)->tag[2], 9, "the state is copied whole");
	cr_expect_null(find(c, 0x1020), "the end is not in the range");
	cr_expect_null(find(c, 0x1fff));
	cr_expect_eq(find(c, 0x200f)->tag[1], ~2ull);
	cr_expect_null(find(c, UINT64_MAX));
	step_cache_free(c);
}

Test(step_cache, overlaps_and_empty_ranges_left_out)
{
	struct step_cache *c;
	cr_assert_eq(step_cache_new(&c), 0);
	add(c, 0x1000, 0x1100, 1);
	add(c, 0x10f0, 0x1200, 2); /* overlaps the end */
	add(c, 0x0f00, 0x1001, 3); /* overlaps the start */
	add(c, 0x1010, 0x1020, 4); /* inside */
	add(c, 0x3000, 0x3000, 5); /* empty */
	cr_expect_eq(step_cache_ranges(c), 1);
	cr_expect_eq(find(c, 0x10f8)->tag[0], 1, "the first range held stays");
	cr_expect_null(find(c, 0x1100));
	struct rules big[2] = {0};
	cr_expect_eq(step_cache_add(c, 0x4000, 0x4010, big, sizeof(big)), -EINVAL,
		     "a state of another size was taken");
	step_cache_free(c);
}

Test(step_cache, cleared_and_emptied_when_full)
{
	struct step_cache *c;
	cr_assert_eq(step_cache_new(&c), 0);
	for (uint64_t i = 0; i < STEP_CACHE_MAX_RANGES; i++)
		add(c, 0x100000 + i * 16, 0x100000 + i * 16 + 16, i);
	cr_expect_eq(step_cache_ranges(c), STEP_CACHE_MAX_RANGES);
	cr_expect_eq(find(c, 0x100000 + 77 * 16 + 5)->tag[0], 77);
	/* One more: it starts over with just that one. */
	add(c, 0x10, 0x20, 42);
	cr_expect_eq(step_cache_ranges(c), 1);
	cr_expect_null(find(c, 0x100000));
	cr_expect_eq(find(c, 0x18)->tag[0], 42);
	step_cache_clear(c);
	cr_expect_eq(step_cache_ranges(c), 0);
	cr_expect_null(find(c, 0x18));
	add(c, 0x10, 0x20, 43);
	cr_expect_eq(find(c, 0x10)->tag[0], 43, "a slot reused after a clear holds the new state");
	step_cache_free(c);
}
