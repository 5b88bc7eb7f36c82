/* Parts of the capture engine that need no live target: the pause
 * statistics of the manifest, and naming unnamed PCs from a second source
 * (how a stripped Go binary's frames get their names, once). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/engine/hold.h"
#include "symbolize/worker/symtab.h"

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	cr_assert(cJSON_IsNumber(v), "no number %s", k);
	return v->valuedouble;
}

Test(engine_parts, pause_stats_percentiles)
{
	uint64_t holds[200];
	for (size_t i = 0; i < 200; i++)
		holds[i] = (200 - i) * 1000; /* 200 us .. 1 us, unsorted */
	cJSON *o = cJSON_CreateObject();
	capture_pause_stats_json(o, holds, 200);
	cr_expect_eq(num(o, "stops"), 200);
	cr_expect_eq(num(o, "p50_us"), 101);
	cr_expect_eq(num(o, "p99_us"), 199); /* index ceil(0.99 n) = 198 of 0..199 */
	cr_expect_eq(num(o, "max_us"), 200);
	cJSON_Delete(o);

	o = cJSON_CreateObject();
	capture_pause_stats_json(o, NULL, 0);
	cr_expect_eq(num(o, "stops"), 0);
	cr_expect_null(cJSON_GetObjectItem(o, "p50_us"));
	cJSON_Delete(o);
}

static size_t name_odd(void *arg, uint64_t addr, struct sym_frame *out, size_t max)
{
	int *calls = arg;
	(*calls)++;
	if (!(addr & 1) || max < 2)
		return 0;
	char name[32];
	snprintf(name, sizeof(name), "go.fn%llx", (unsigned long long)addr);
	memset(out, 0, 2 * sizeof(*out));
	out[0].function = name; /* copied by the table before we return */
	out[0].inlined = true;
	out[1].function = "go.caller";
	out[1].file = "caller.go";
	out[1].line = 7;
	return 2;
}

Test(engine_parts, unnamed_pcs_named_once_from_a_second_source)
{
	static char maps[1 << 16];
	FILE *f = fopen("/proc/self/maps", "r");
	cr_assert(f);
	size_t len = 0, n;
	while ((n = fread(maps + len, 1, sizeof(maps) - 1 - len, f)) > 0)
		len += n;
	fclose(f);
	maps[len] = '\0';
	struct symbolizer *sym;
	int r = symbolizer_new(getpid(), maps, len, NULL, &sym);
	cr_assert_eq(r, 0, "symbolizer_new: %s", strerror(-r));
	/* Addresses no module holds: the symbolizer leaves them unnamed. */
	uint64_t addrs[] = {0x11, 0x20, (uint64_t)(uintptr_t)&name_odd};
	struct symtab *st = symtab_new();
	cr_assert(st);
	cr_assert_eq(symtab_fill(st, sym, addrs, 3), 0);
	symbolizer_free(sym);
	size_t named_before = symtab_lookup(st, addrs[2])->nframes;
	cr_assert_gt(named_before, 0, "our own function is named by DWARF");

	int calls = 0;
	cr_assert_eq(symtab_name_unnamed(st, name_odd, &calls), 0);
	cr_expect_eq(calls, 2, "only the two unnamed addresses are asked for");
	const struct sym_location *odd = symtab_lookup(st, 0x11);
	cr_assert_eq(odd->nframes, 2);
	cr_expect_str_eq(odd->frames[0].function, "go.fn11");
	cr_expect_str_eq(odd->frames[1].file, "caller.go");
	cr_expect_eq(odd->frames[1].line, 7);
	cr_expect_eq(symtab_lookup(st, 0x20)->nframes, 0, "the namer could not name it either");
	cr_expect_eq(symtab_lookup(st, addrs[2])->nframes, named_before, "a named PC is left alone");
	symtab_free(st);
}
