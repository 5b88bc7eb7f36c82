/*
 * fuzz_elf_symbolize: the symbolizer (symbolize.h) on a hostile ELF file
 * that the target "maps".
 *
 * The input is written to a real file in a private directory and a maps
 * text is made up for this process that maps it executable, with the
 * file's real device and inode (the symbolizer opens files through
 * /proc/PID/root and insists on that identity). Then addresses are looked
 * up. This drives the whole path a hostile target's binary takes:
 * fileopen.c checks, elfinfo.c's bias from program headers, libdwfl's
 * reporting (build-id note, section headers, .gnu_debuglink, symbol tables,
 * compressed sections) and resolve.c's DWARF walk, inline chain and
 * demangling.
 *
 * Input: the file is the whole input (seeds are plain ELF files); the last
 * bytes double as parameters: 1-3 maps lines for the file (perms,
 * offsets, lengths in pages, an optional second instance of it) and up to
 * 32 addresses to look up, mostly inside the mapping.
 * Invariants: symbolizer_new succeeds (the maps text is well formed; a bad
 * file only leaves its PCs unknown); every lookup returns 0 with at most
 * 64 frames whose strings are readable; a PC outside the executable
 * mappings has no module; the same PC gives the cached location;
 * symbolizer_modules lists exactly the executable lines. Time is bounded
 * by libFuzzer's -timeout.
 */
#include <sys/sysmacros.h>

#include "tests/fuzz/fuzz_common.h"

#include "symbolize/symbolize.h"

#define PAGE 4096ull
#define BASE 0x5a0000000000ull

static char elf_path[300];
static volatile size_t sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(elf_path, sizeof(elf_path), "%s/lib fuzz.so", fz_dir());
	return 0;
}

struct line {
	uint64_t start, limit, offset;
	bool exec;
};

static void check_location(const struct sym_location *loc, uint64_t pc, const struct line *lines,
			   size_t nlines)
{
	bool in_exec = false;

	FUZZ_CHECK(loc->pc == pc);
	FUZZ_CHECK(loc->nframes <= 64);
	FUZZ_CHECK(loc->nframes == 0 || loc->frames);
	for (size_t i = 0; i < nlines; i++)
		in_exec |= lines[i].exec && pc >= lines[i].start && pc < lines[i].limit;
	if (!in_exec)
		FUZZ_CHECK(loc->module == NULL);
	if (loc->module)
		FUZZ_CHECK(pc >= loc->module->start && pc < loc->module->limit);
	for (size_t k = 0; k < loc->nframes; k++) {
		const struct sym_frame *fr = &loc->frames[k];

		if (fr->function)
			sink += strlen(fr->function);
		if (fr->file)
			sink += strlen(fr->file);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = fz_init(data, size);
	struct line lines[3];
	size_t nlines = (size_t)fz_range(&f, 1, 3), nexec = 0;
	char maps[2048];
	size_t mlen = 0;
	struct symbolizer *s;
	const struct sym_module *mods;
	struct stat st;
	uint64_t next = BASE;
	unsigned nlookups;

	fz_write_file(elf_path, data, size);
	FUZZ_CHECK(stat(elf_path, &st) == 0);

	/* Like ld.so: consecutive lines of one file at rising offsets. A
	 * second instance restarts at a lower offset (dlmopen). */
	for (size_t i = 0; i < nlines; i++) {
		uint8_t how = fz_u8(&f);
		uint64_t pages = 1 + fz_range(&f, 0, 63);
		uint64_t off = (i && !(how & 4)) ? lines[i - 1].offset +
							   (lines[i - 1].limit - lines[i - 1].start)
						 : fz_range(&f, 0, 15) * PAGE;

		if (how & 8)
			next += PAGE * (1 + fz_range(&f, 0, 255)); /* a hole */
		lines[i] = (struct line){next, next + pages * PAGE, off, i == 0 || (how & 1)};
		next = lines[i].limit;
		nexec += lines[i].exec;
		mlen += (size_t)snprintf(maps + mlen, sizeof(maps) - mlen,
					 "%llx-%llx %s %08llx %02x:%02x %llu                 %s\n",
					 (unsigned long long)lines[i].start,
					 (unsigned long long)lines[i].limit,
					 lines[i].exec ? "r-xp" : "r--p",
					 (unsigned long long)lines[i].offset, major(st.st_dev),
					 minor(st.st_dev), (unsigned long long)st.st_ino, elf_path);
	}
	/* Not ours to open: anonymous memory and a heap line. */
	mlen += (size_t)snprintf(maps + mlen, sizeof(maps) - mlen,
				 "%llx-%llx rw-p 00000000 00:00 0                  [heap]\n",
				 (unsigned long long)next + PAGE,
				 (unsigned long long)next + 4 * PAGE);
	FUZZ_CHECK(mlen < sizeof(maps));

	FUZZ_CHECK(symbolizer_new(getpid(), maps, mlen, NULL, &s) == 0);
	FUZZ_CHECK(symbolizer_modules(s, &mods) == nexec);
	FUZZ_CHECK(symbolizer_main_build_id(s) != NULL);

	nlookups = (unsigned)fz_range(&f, 1, 32);
	for (unsigned i = 0; i < nlookups; i++) {
		uint8_t how = fz_u8(&f);
		const struct line *l = &lines[how % nlines];
		uint64_t pc = (how & 0xc0) == 0xc0 ? fz_u64(&f)
						   : l->start + fz_u32(&f) % (l->limit - l->start);
		const struct sym_location *loc, *again;

		FUZZ_CHECK(symbolizer_lookup(s, pc, &loc) == 0);
		check_location(loc, pc, lines, nlines);
		FUZZ_CHECK(symbolizer_lookup(s, pc, &again) == 0 && again == loc);
	}
	/* After the lookups the has_* flags are final: strings still valid. */
	FUZZ_CHECK(symbolizer_modules(s, &mods) == nexec);
	for (size_t i = 0; i < nexec; i++)
		sink += strlen(mods[i].path) + strlen(mods[i].build_id);
	symbolizer_free(s);
	return 0;
}
