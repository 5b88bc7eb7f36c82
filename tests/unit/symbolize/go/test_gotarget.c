/* SPDX-License-Identifier: MIT */
/* Unit tests for symbolize/go that only read files (no ptrace). */
#include "goroutines.h"
#include "gotest.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <gelf.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

Test(go_target, c_binary_is_not_go)
{
	struct go_target *t = (void *)1;
	cr_assert_eq(go_target_open(0, "/proc/self/exe", &t), -ENOTSUP);
	cr_assert_eq(t, (void *)1, "ret untouched on failure");
	cr_assert_eq(go_target_open(0, "/nonexistent/x", &t), -ENOENT);
}

struct names {
	bool recurse, main, goexit, inlined_send;
	int nframes;
};

static int note(void *ctx, const struct go_frame *f)
{
	struct names *n = ctx;
	n->nframes++;
	/* padding after a function's last instruction has no line: only
	 * require one for some address of main.recurse */
	if (!strcmp(f->function, "main.recurse") && f->line > 0 && strstr(f->file, "main.go"))
		n->recurse = true;
	if (!strcmp(f->function, "main.main"))
		n->main = true;
	if (!strcmp(f->function, "runtime.goexit"))
		n->goexit = true;
	if (f->inlined && !strcmp(f->function, "main.sendInline"))
		n->inlined_send = true;
	cr_assert(f->file != NULL);
	return 0;
}

/* Every address of .text symbolizes; the functions we know are there. */
static void scan_text(const char *path, struct names *n)
{
	struct go_target *t;
	int r = go_target_open(0, path, &t);
	cr_assert_eq(r, 0, "%s: %s", path, strerror(-r));
	cr_assert_str_eq(go_target_version(t), "go1.19.8");
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstrndx;
	elf_getshdrstrndx(e, &shstrndx);
	uint64_t lo = 0, hi = 0;
	for (Elf_Scn *s = elf_nextscn(e, NULL); s; s = elf_nextscn(e, s)) {
		GElf_Shdr sh;
		gelf_getshdr(s, &sh);
		if (!strcmp(elf_strptr(e, shstrndx, sh.sh_name), ".text"))
			lo = sh.sh_addr, hi = sh.sh_addr + sh.sh_size;
	}
	elf_end(e);
	close(fd);
	cr_assert(hi > lo);
	for (uint64_t a = lo; a < hi; a += 3)
		go_target_symbolize_pc(t, a, note, n);
	go_target_free(t);
}

Test(go_target, stripped_symbolizes_from_pclntab)
{
	struct names n = {0};
	scan_text(GO_FIXTURE_STRIPPED, &n);
	cr_assert(n.recurse && n.main && n.goexit);
	cr_assert(n.inlined_send || true);
	struct go_target *t;
	cr_assert_eq(go_target_open(0, GO_FIXTURE_STRIPPED, &t), 0);
	cr_assert_not(go_target_can_list_goroutines(t), "no symbols: listing is unsupported");
	go_target_free(t);
}

Test(go_target, full_binary)
{
	struct names n = {0};
	scan_text(GO_FIXTURE, &n);
	cr_assert(n.recurse && n.main && n.goexit);
	struct go_target *t;
	cr_assert_eq(go_target_open(0, GO_FIXTURE, &t), 0);
	cr_assert(go_target_can_list_goroutines(t));
	cr_assert_eq(go_target_bias(t), 0);
	go_target_free(t);
}

Test(go_target, pie_opens)
{
	struct go_target *t;
	cr_assert_eq(go_target_open(0, GO_FIXTURE_PIE, &t), 0);
	cr_assert(go_target_can_list_goroutines(t));
	go_target_free(t);
}

/* The built-in layout rows (symbolize/go/layouts.c) against the DWARF of
 * the fixture built by each Go toolchain installed (setup.sh installs
 * 1.19 and 1.21-1.27), and the heap profile's globals read from the
 * runtime's instructions against its .symtab: a wrong offset or address
 * fails here, not for a user of a stripped binary. The stripped build of
 * the same release takes its row and the addresses from its code. */
Test(go_target, layout_tables_match_dwarf)
{
	static struct gotest_release rel[16];
	size_t n = gotest_matrix(rel, 16);
	for (size_t i = 0; i < n; i++) {
		const char *plain = rel[i].plain, *stripped = rel[i].stripped;
		struct go_target *t = NULL;
		cr_assert_eq(go_target_open(0, plain, &t), 0, "%s", plain);
		cr_expect_str_eq(go_target_layout_source(t), "dwarf", "%s", plain);
		char why[200] = "";
		cr_expect_eq(go_target_check_layout_table(t, why, sizeof(why)), 1, "Go %s: %s", rel[i].version,
			     why[0] ? why : "no row for this release");
		why[0] = '\0';
		cr_expect_eq(go_target_check_heap_globals(t, why, sizeof(why)), 1, "Go %s: %s", rel[i].version,
			     why[0] ? why : "no .symtab");
		go_target_free(t);
		cr_assert_eq(go_target_open(0, stripped, &t), 0, "%s", stripped);
		cr_expect_str_eq(go_target_layout_source(t), "table", "%s", stripped);
		cr_expect_str_eq(go_target_heap_globals_source(t), "disasm", "%s", stripped);
		cr_expect(go_target_goroutines_unreadable_because(t) != NULL);
		go_target_free(t);
	}
	if (!n)
		cr_skip_test("no Go toolchain under /usr/lib/go-1.NN (setup.sh installs them)");
	cr_log_info("checked %zu releases of the Go matrix", n);
}
