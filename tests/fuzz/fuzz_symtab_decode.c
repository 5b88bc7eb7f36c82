/*
 * fuzz_symtab_decode: cmd/symtab.c's decoder of what the sandboxed
 * interpretation worker sends back. The worker parsed hostile ELF files and
 * may be compromised, so every length and index in these bytes is hostile.
 *
 * Input: the wire format (symtab.h) as is; seeds are real encodings.
 * Invariants:
 *  - no crash, no leak, bounded allocation (caps in symtab.c);
 *  - failure is -EBADMSG or -ENOMEM and hands nothing out;
 *  - on success every location's module pointer is NULL or points into the
 *    module array, frames are readable, strings are NUL-free text, and
 *    lookups find each decoded pc;
 *  - encode(decode(x)) is a fixed point: decoding it and encoding again
 *    gives the same bytes.
 */
#include "tests/fuzz/fuzz_common.h"

#include "symbolize/worker/symtab.h"

static volatile size_t sink;

static void check_table(const struct symtab *st)
{
	const struct sym_module *mods;
	size_t nmods = symtab_modules(st, &mods);

	FUZZ_CHECK(symtab_main_build_id(st) != NULL);
	sink += strlen(symtab_main_build_id(st));
	for (size_t i = 0; i < nmods; i++) {
		FUZZ_CHECK(mods[i].path && mods[i].build_id);
		sink += strlen(mods[i].path) + strlen(mods[i].build_id);
	}
}

static void check_location(const struct symtab *st, uint64_t pc)
{
	const struct sym_module *mods;
	size_t nmods = symtab_modules(st, &mods);
	const struct sym_location *loc = symtab_lookup(st, pc);

	if (!loc)
		return;
	FUZZ_CHECK(loc->pc == pc);
	FUZZ_CHECK(!loc->module || (loc->module >= mods && loc->module < mods + nmods));
	FUZZ_CHECK(loc->nframes == 0 || loc->frames);
	for (size_t k = 0; k < loc->nframes; k++) {
		if (loc->frames[k].function)
			sink += strlen(loc->frames[k].function);
		if (loc->frames[k].file)
			sink += strlen(loc->frames[k].file);
	}
}

/* The pcs of an encoding, walked with the same format rules (the decode
 * has already validated it, so plain reads are enough here). */
static void for_each_pc(const uint8_t *b, size_t len, const struct symtab *st)
{
	size_t off = 0;
	uint32_t n, nmods, nlocs;

#define RD(dst, size)                                                                              \
	do {                                                                                       \
		FUZZ_CHECK(off + (size) <= len);                                                   \
		memcpy(&(dst), b + off, (size));                                                   \
		off += (size);                                                                     \
	} while (0)
#define SKIP_STR()                                                                                 \
	do {                                                                                       \
		RD(n, 4);                                                                          \
		if (n != UINT32_MAX)                                                               \
			off += n;                                                                  \
	} while (0)
	uint64_t u64;
	uint32_t u32, nf;

	SKIP_STR();
	RD(nmods, 4);
	for (uint32_t i = 0; i < nmods; i++) {
		off += 24;
		SKIP_STR();
		SKIP_STR();
		off += 4;
	}
	RD(nlocs, 4);
	for (uint32_t i = 0; i < nlocs; i++) {
		RD(u64, 8);
		check_location(st, u64);
		FUZZ_CHECK(symtab_lookup(st, u64) != NULL);
		RD(u32, 4);
		RD(u64, 8);
		RD(nf, 4);
		for (uint32_t k = 0; k < nf; k++) {
			SKIP_STR();
			SKIP_STR();
			off += 20; /* line, start line, offset, inlined */
		}
	}
	FUZZ_CHECK(off == len);
#undef RD
#undef SKIP_STR
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symtab *st = (struct symtab *)(uintptr_t)1, *st2;
	uint8_t *enc, *enc2;
	size_t len, len2;
	int r = symtab_decode(data, size, &st);

	if (r < 0) {
		FUZZ_CHECK(r == -EBADMSG || r == -ENOMEM);
		FUZZ_CHECK(st == (struct symtab *)(uintptr_t)1); /* untouched */
		return 0;
	}
	check_table(st);
	for (size_t i = 0; i + 8 <= size; i += 8) {
		uint64_t pc;

		memcpy(&pc, data + i, 8);
		check_location(st, pc);
	}

	FUZZ_CHECK(symtab_encode(st, &enc, &len) == 0);
	FUZZ_CHECK(symtab_decode(enc, len, &st2) == 0);
	for_each_pc(enc, len, st2);
	FUZZ_CHECK(symtab_encode(st2, &enc2, &len2) == 0);
	FUZZ_CHECK(len == len2 && memcmp(enc, enc2, len) == 0);

	free(enc);
	free(enc2);
	symtab_free(st2);
	symtab_free(st);
	return 0;
}
