/*
 * perfmap_find on a map that made every lookup a scan of the whole map:
 * one entry covering the address space, then 100000 small ones (issue
 * 54). Results only: the bound on a lookup is perfmap.c's flattening,
 * which this checks against the rule it must keep (the latest line that
 * covers a PC names it), not a clock.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/direct_open.h"
#include "symbolize/internal.h"

#define BASE 0x10000000ull
#define STEP 0x100ull
#define SMALL 0x80ull
#define NSMALL 100000u
/* Written last, over small entries LATE_FIRST.. (they lose there). */
#define LATE 0x10800000ull
#define LATE_SIZE 0x1000ull

static char map_path[64];

static void write_map(void)
{
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(map_path, "w");
	cr_assert_not_null(f);
	fprintf(f, "0 ffffffffffffffff whole\n");
	for (unsigned k = 0; k < NSMALL; k++)
		fprintf(f, "%llx %llx f%u\n", BASE + k * STEP, SMALL, k);
	/* Same start as f0, later, shorter: wins over f0's first 16 bytes. */
	fprintf(f, "%llx 10 newer_f0_head\n", BASE);
	fprintf(f, "%llx %llx late_region\n", LATE, LATE_SIZE);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(map_path, 0644), 0); /* perfmap_check: not writable by others */
}

static void expect_at(const struct perfmap *pm, uint64_t pc, const char *name, uint64_t start)
{
	uint64_t got = 0;
	const char *n = perfmap_find(pm, pc, &got);
	cr_assert_not_null(n, "pc 0x%" PRIx64 ": nothing, want %s", pc, name);
	cr_assert_str_eq(n, name, "pc 0x%" PRIx64, pc);
	cr_assert_eq(got, start, "pc 0x%" PRIx64 " (%s): start 0x%" PRIx64 ", want 0x%" PRIx64, pc,
		     name, got, start);
}

/* What the map above says of pc, by its lines read in order. */
static void expect_rule(const struct perfmap *pm, uint64_t pc)
{
	char name[32];
	uint64_t k = (pc - BASE) / STEP;

	if (pc >= LATE && pc < LATE + LATE_SIZE) {
		expect_at(pm, pc, "late_region", LATE);
	} else if (pc >= BASE && pc < BASE + 0x10) {
		expect_at(pm, pc, "newer_f0_head", BASE);
	} else if (pc >= BASE && k < NSMALL && (pc - BASE) % STEP < SMALL) {
		snprintf(name, sizeof(name), "f%" PRIu64, k);
		expect_at(pm, pc, name, BASE + k * STEP);
	} else {
		expect_at(pm, pc, "whole", 0);
	}
}

Test(perfmap, huge_entry_and_many_small)
{
	struct perfmap *pm = NULL;

	write_map();
	cr_assert_eq(perfmap_load(getpid(), &pm), 0);
	unlink(map_path);

	expect_at(pm, 0, "whole", 0);
	expect_at(pm, BASE - 1, "whole", 0);
	expect_at(pm, BASE, "newer_f0_head", BASE);
	expect_at(pm, BASE + 0xf, "newer_f0_head", BASE);
	expect_at(pm, BASE + 0x10, "f0", BASE);
	for (unsigned k = 0; k < NSMALL; k++) {
		uint64_t start = BASE + k * STEP;
		uint64_t pcs[] = {start + 0x10, start + SMALL - 1, start + SMALL, start + STEP - 1};
		for (size_t i = 0; i < sizeof(pcs) / sizeof(pcs[0]); i++)
			expect_rule(pm, pcs[i]);
	}
	expect_at(pm, LATE + LATE_SIZE - 1, "late_region", LATE);
	expect_at(pm, LATE + LATE_SIZE, "f32784", LATE + LATE_SIZE);
	expect_at(pm, BASE + NSMALL * STEP, "whole", 0);
	/* SIZE ffffffffffffffff from 0 ends one short of the top. */
	expect_at(pm, UINT64_MAX - 1, "whole", 0);
	uint64_t start;
	cr_expect_null(perfmap_find(pm, UINT64_MAX, &start));
	perfmap_free(pm);
}

/* Entries that run past the top of the address space, nested ones, and
 * the order of lines rather than of sizes deciding. */
Test(perfmap, overlaps_by_line_order)
{
	struct perfmap *pm = NULL;

	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(map_path, "w");
	cr_assert_not_null(f);
	fprintf(f, "1000 100 inner_old\n");	      /* 0x1000-0x10ff, then covered */
	fprintf(f, "800 1000 outer\n");		      /* 0x800-0x17ff */
	fprintf(f, "1040 10 inner_new\n");	      /* 0x1040-0x104f */
	fprintf(f, "fffffffffffff000 2000 top\n"); /* past the top */
	fprintf(f, "2000 0 empty\n");		      /* size 0: ignored */
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(map_path, 0644), 0);
	cr_assert_eq(perfmap_load(getpid(), &pm), 0);
	unlink(map_path);

	uint64_t start;
	cr_expect_null(perfmap_find(pm, 0x7ff, &start));
	expect_at(pm, 0x800, "outer", 0x800);
	expect_at(pm, 0x1000, "outer", 0x800);
	expect_at(pm, 0x1040, "inner_new", 0x1040);
	expect_at(pm, 0x1050, "outer", 0x800);
	expect_at(pm, 0x17ff, "outer", 0x800);
	cr_expect_null(perfmap_find(pm, 0x1800, &start));
	cr_expect_null(perfmap_find(pm, 0x2000, &start));
	expect_at(pm, 0xfffffffffffff000ull, "top", 0xfffffffffffff000ull);
	expect_at(pm, UINT64_MAX, "top", 0xfffffffffffff000ull);
	perfmap_free(pm);
}
