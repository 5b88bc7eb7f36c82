/*
 * fuzz_go_binary: symbolize/go's parsers (goroutines.h: go_target_open and
 * what it reads: ELF and section headers, .go.buildinfo, .gopclntab and
 * its tables, moduledata, DWARF struct layouts, the wait-reason strings in
 * .data, the runtime's instructions disassembled for the heap globals) on
 * a hostile Go binary.
 *
 * A Go binary is megabytes; mutating one byte at random finds nothing in
 * the places that matter. So the input is a patch to a real Go binary
 * built by a real toolchain (FUZZ_GO_BASES, a colon-separated list that
 * tests/fuzz/run takes from the Go matrix of the main build: plain and
 * stripped builds of the oldest and newest releases):
 *   byte 0        which base;
 *   then records  {region u8, offset u24 (little endian), op u8, value u8}
 *                 region: .gopclntab, .go.buildinfo, .noptrdata,
 *                 .go.module, .data, .text, the ELF and section headers,
 *                 .rodata, the whole file; the offset wraps in it;
 *                 op: set, xor, add, or set an aligned 8-byte word to a
 *                 small integer (lengths and counts).
 * The patched binary is written to a file and opened as a target would
 * be; then PCs across .text are symbolized.
 * Invariants: go_target_open returns 0 or a negative errno; a target has a
 * version, a layout source, a globals source; every frame has a function
 * name and a file; at most GO_MAX_INLINE_DEPTH inlined frames per PC (a
 * sane binary has a few; a hostile inline tree must not loop).
 */
#include "tests/fuzz/fuzz_common.h"

#include <gelf.h>
#include <libelf.h>

#include "symbolize/go/goroutines.h"

enum { MAX_BASES = 8, NREGIONS = 9 };

struct base {
	uint8_t *bytes;
	size_t len;
	uint64_t text_addr, text_size;
	struct {
		size_t off, len;
	} region[NREGIONS];
};

static struct base bases[MAX_BASES];
static size_t nbases;
static char path[300];
static uint8_t *scratch;
static size_t scratch_len;

static void find_regions(struct base *b)
{
	static const char *const names[] = {".gopclntab", ".go.buildinfo", ".noptrdata", ".go.module", ".data",
					    ".text", NULL, ".rodata", NULL};
	Elf *e = elf_memory((char *)b->bytes, b->len);
	size_t shstrndx;
	FUZZ_CHECK(e && elf_getshdrstrndx(e, &shstrndx) == 0);
	GElf_Ehdr eh;
	FUZZ_CHECK(gelf_getehdr(e, &eh));
	for (Elf_Scn *s = elf_nextscn(e, NULL); s; s = elf_nextscn(e, s)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(s, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		const char *n = elf_strptr(e, shstrndx, sh.sh_name);
		for (int i = 0; n && i < NREGIONS; i++)
			if (names[i] && !strcmp(n, names[i]) && sh.sh_offset + sh.sh_size <= b->len) {
				b->region[i].off = sh.sh_offset;
				b->region[i].len = sh.sh_size;
			}
		if (n && !strcmp(n, ".text")) {
			b->text_addr = sh.sh_addr;
			b->text_size = sh.sh_size;
		}
	}
	/* the ELF header and the section header table */
	b->region[6].off = 0;
	b->region[6].len = 64;
	if (eh.e_shoff && eh.e_shoff < b->len) {
		b->region[6].off = eh.e_shoff;
		b->region[6].len = b->len - eh.e_shoff;
	}
	b->region[8].off = 0;
	b->region[8].len = b->len;
	elf_end(e);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	elf_version(EV_CURRENT);
	const char *list = getenv("FUZZ_GO_BASES");
	if (!list || !*list) {
		fprintf(stderr, "fuzz_go_binary: FUZZ_GO_BASES is not set (tests/fuzz/run sets it from the "
				"Go matrix of the main build)\n");
		abort();
	}
	char *copy = strdup(list);
	for (char *save = NULL, *p = strtok_r(copy, ":", &save); p && nbases < MAX_BASES;
	     p = strtok_r(NULL, ":", &save)) {
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
			fprintf(stderr, "fuzz_go_binary: cannot read %s\n", p);
			abort();
		}
		struct base *b = &bases[nbases++];
		b->len = (size_t)st.st_size;
		b->bytes = malloc(b->len);
		FUZZ_CHECK(b->bytes && read(fd, b->bytes, b->len) == (ssize_t)b->len);
		close(fd);
		find_regions(b);
		if (b->len > scratch_len)
			scratch_len = b->len;
	}
	free(copy);
	FUZZ_CHECK(nbases > 0);
	scratch = malloc(scratch_len);
	FUZZ_CHECK(scratch);
	snprintf(path, sizeof(path), "%s/go-binary", fz_dir());
	return 0;
}

static int check_frame(void *ctx, const struct go_frame *f)
{
	size_t *n = ctx;
	FUZZ_CHECK(f->function && f->file);
	volatile size_t len = strlen(f->function) + strlen(f->file);
	(void)len;
	FUZZ_CHECK(++*n <= GO_MAX_INLINE_DEPTH + 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const struct base *b = &bases[data[0] % nbases];
	memcpy(scratch, b->bytes, b->len);
	for (size_t i = 1; i + 6 <= size; i += 6) {
		const uint8_t *r = data + i;
		size_t reg = r[0] % NREGIONS;
		if (!b->region[reg].len)
			continue;
		size_t off = b->region[reg].off + ((size_t)r[1] | (size_t)r[2] << 8 | (size_t)r[3] << 16) %
							  b->region[reg].len;
		uint8_t *p = scratch + off;
		switch (r[4] % 4) {
		case 0: *p = r[5]; break;
		case 1: *p ^= r[5]; break;
		case 2: *p += r[5]; break;
		case 3: {
			size_t w = off & ~(size_t)7;
			if (w + 8 <= b->len) {
				uint64_t v = r[5];
				memcpy(scratch + w, &v, 8);
			}
			break;
		}
		}
	}
	fz_write_file(path, scratch, b->len);

	struct go_target *t = NULL;
	int r = go_target_open(0, path, &t);
	FUZZ_CHECK(r <= 0);
	if (r < 0) {
		FUZZ_CHECK(t == NULL);
		return 0;
	}
	FUZZ_CHECK(go_target_version(t) && go_target_layout_source(t) && go_target_globals_source(t) &&
		   go_target_heap_globals_source(t));
	volatile bool can = go_target_can_list_goroutines(t);
	(void)can;
	const char *why = go_target_goroutines_unreadable_because(t);
	FUZZ_CHECK(!why || strlen(why) > 0);
	char buf[200];
	go_target_check_layout_table(t, buf, sizeof(buf));
	go_target_check_heap_globals(t, buf, sizeof(buf));
	/* PCs across .text: runtime, library and main code */
	for (uint64_t k = 0; b->text_size && k < 48; k++) {
		size_t n = 0;
		uint64_t pc = b->text_addr + (b->text_size / 48) * k + (k * 7919) % 64;
		int got = go_target_symbolize_pc(t, pc, check_frame, &n);
		FUZZ_CHECK(got >= 0 && (size_t)got == n);
	}
	go_target_free(t);
	return 0;
}
