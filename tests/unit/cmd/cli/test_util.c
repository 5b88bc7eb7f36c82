/* Option values: durations as -d and -i take them. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "cmd/cli/util.h"

static uint64_t ns_of(const char *s)
{
	uint64_t ns = 0;
	cr_assert_eq(parse_duration_ns(s, &ns), 0, "'%s' refused", s);
	return ns;
}

Test(duration, a_bare_number_is_seconds_and_units_go_together)
{
	cr_expect_eq(ns_of("10"), 10000000000ull);
	cr_expect_eq(ns_of("1.5"), 1500000000ull);
	cr_expect_eq(ns_of("500ms"), 500000000ull);
	cr_expect_eq(ns_of("250us"), 250000ull);
	cr_expect_eq(ns_of("2m"), 120000000000ull);
	cr_expect_eq(ns_of("1h30m"), 5400000000000ull);
	cr_expect_eq(ns_of("2m30s"), 150000000000ull);
	cr_expect_eq(ns_of("1m0.5s"), 60500000000ull);
	cr_expect_eq(ns_of(".5s"), 500000000ull);
}

Test(duration, anything_else_is_refused)
{
	static const char *const bad[] = {"", "s", "-1", "10x", "1h30", "5s3", "1 h", "h1",
					  "inf", "nan", "1e400s", "300000000000h"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t ns = 7;
		cr_expect_lt(parse_duration_ns(bad[i], &ns), 0, "'%s' accepted", bad[i]);
		cr_expect_eq(ns, 7, "'%s' changed the result", bad[i]);
	}
}
