/*
 * The symbolizer against this very process: pid = getpid(), maps from
 * /proc/self/maps. Built with -g. Expected results are the source lines
 * recorded below with __LINE__ next to the code they describe.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/direct_open.h"
#include "symbolize/symbolize.h"

static volatile int plain_line, inl_line, call_line;

/* Returns an address inside its caller: the return address. noipa keeps
 * GCC from specialising or merging it. */
__attribute__((noinline, noipa)) static void *get_ra(void)
{
	return __builtin_return_address(0);
}

static const int plain_decl_line = __LINE__ + 1;
__attribute__((noinline)) static void *sym_plain_fn(void)
{
	void *r = get_ra(); plain_line = __LINE__;
	__asm__ volatile("" ::: "memory");
	return r;
}

static const int inl_decl_line = __LINE__ + 1;
static inline __attribute__((always_inline)) void *sym_inl_fn(void)
{
	void *r = get_ra(); inl_line = __LINE__;
	return r;
}

__attribute__((noinline)) static void *sym_outer_fn(void)
{
	void *r = sym_inl_fn(); call_line = __LINE__;
	__asm__ volatile("" ::: "memory");
	return r;
}

static char *read_self_maps(size_t *ret_len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	size_t cap = 1 << 16, len = 0, n;
	char *buf = malloc(cap);

	cr_assert_not_null(f);
	while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (len == cap - 1)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	*ret_len = len;
	return buf;
}

static struct symbolizer *self_symbolizer(void)
{
	struct symbolizer *s = NULL;
	size_t len;
	char *text = read_self_maps(&len);
	int r = symbolizer_new(getpid(), text, len, NULL, &s);

	cr_assert_eq(r, 0, "symbolizer_new: %s", strerror(-r));
	free(text);
	return s;
}

static const struct sym_location *lookup(struct symbolizer *s, uintptr_t pc)
{
	const struct sym_location *loc = NULL;
	int r = symbolizer_lookup(s, pc, &loc);

	cr_assert_eq(r, 0, "lookup: %s", strerror(-r));
	cr_assert_not_null(loc);
	cr_assert_eq(loc->pc, pc);
	return loc;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = s ? strlen(s) : 0, m = strlen(suffix);

	return s && n >= m && strcmp(s + n - m, suffix) == 0;
}

static const struct sym_module *module_of(struct symbolizer *s, uintptr_t pc)
{
	const struct sym_module *mods;
	size_t n = symbolizer_modules(s, &mods);

	for (size_t i = 0; i < n; i++)
		if (pc >= mods[i].start && pc < mods[i].limit)
			return &mods[i];
	return NULL;
}

/* cr_assert that f is function fn, in this file, at line, offset bytes
 * past the function's entry. */
static void assert_frame(const struct sym_frame *f, const char *fn, int line, uint64_t offset)
{
	cr_assert_str_eq(f->function, fn);
	cr_assert(ends_with(f->file, "test_symbolizer.c"), "file %s", f->file);
	cr_assert_eq(f->line, line, "line %d want %d", f->line, line);
	cr_assert_eq(f->function_offset, offset);
}

Test(symbolizer, function_entry)
{
	struct symbolizer *s = self_symbolizer();
	uintptr_t pc = (uintptr_t)sym_plain_fn;
	const struct sym_location *loc = lookup(s, pc);

	cr_assert_geq(loc->nframes, 1);
	/* GCC puts the prologue on the line of the opening brace. */
	assert_frame(&loc->frames[0], "sym_plain_fn", plain_decl_line + 1, 0);
	cr_assert_eq(loc->frames[0].function_start_line, plain_decl_line);
	cr_assert(!loc->frames[0].inlined);
	cr_assert_not_null(loc->module);
	cr_assert_eq(loc->module_offset, pc - loc->module->start + loc->module->offset);
	symbolizer_free(s);
}

Test(symbolizer, return_address)
{
	uintptr_t ra = (uintptr_t)sym_plain_fn();
	struct symbolizer *s = self_symbolizer();
	/* A return address belongs to the instruction after the call; -1 is
	 * the call itself, as every unwinder-side symbolizer does. */
	const struct sym_location *loc = lookup(s, ra - 1);

	cr_assert_eq(loc->nframes, 1);
	assert_frame(&loc->frames[0], "sym_plain_fn", plain_line, ra - 1 - (uintptr_t)sym_plain_fn);
	cr_assert_eq(loc->frames[0].function_start_line, plain_decl_line);
	symbolizer_free(s);
}

Test(symbolizer, inline_chain)
{
	uintptr_t ra = (uintptr_t)sym_outer_fn();
	struct symbolizer *s = self_symbolizer();
	const struct sym_location *loc = lookup(s, ra - 1);

	cr_assert_eq(loc->nframes, 2);
	assert_frame(&loc->frames[0], "sym_inl_fn", inl_line, 0);
	cr_assert(loc->frames[0].inlined);
	cr_assert_eq(loc->frames[0].function_start_line, inl_decl_line);

	assert_frame(&loc->frames[1], "sym_outer_fn", call_line, ra - 1 - (uintptr_t)sym_outer_fn);
	cr_assert(!loc->frames[1].inlined);
	symbolizer_free(s);
}

Test(symbolizer, libc_function)
{
	void *getpid_addr = dlsym(RTLD_DEFAULT, "getpid");
	struct symbolizer *s;
	const struct sym_location *loc;

	cr_assert_not_null(getpid_addr);
	s = self_symbolizer();
	loc = lookup(s, (uintptr_t)getpid_addr);
	cr_assert_geq(loc->nframes, 1);
	cr_assert_not_null(loc->frames[loc->nframes - 1].function);
	cr_assert(strstr(loc->frames[loc->nframes - 1].function, "getpid"), "got %s",
		  loc->frames[loc->nframes - 1].function);
	cr_assert_not_null(loc->module);
	cr_assert(strstr(loc->module->path, "libc"), "module %s", loc->module->path);
	cr_assert(loc->module->has_functions);
	symbolizer_free(s);
}

Test(symbolizer, unmapped_and_anonymous)
{
	struct symbolizer *s = self_symbolizer();
	const struct sym_location *loc = lookup(s, 0x10);
	void *heap = malloc(64);

	cr_assert_eq(loc->nframes, 0);
	cr_assert_null(loc->module);
	cr_assert_null(loc->frames);
	/* .bss of the test: not code, so no function, but the object that
	 * covers it (a lock a thread sleeps on is named so). */
	loc = lookup(s, (uintptr_t)&plain_line + 1);
	cr_assert_eq(loc->nframes, 1);
	cr_assert_str_eq(loc->frames[0].function, "plain_line");
	cr_assert_eq(loc->frames[0].function_offset, 1);
	cr_assert_null(loc->frames[0].file);
	cr_assert_null(loc->module);
	free(heap);
	symbolizer_free(s);
}

Test(symbolizer, cache_hit)
{
	struct symbolizer *s = self_symbolizer();
	const struct sym_location *a = lookup(s, (uintptr_t)sym_plain_fn), *b;
	uint64_t hits, misses;

	symbolizer_cache_stats(s, &hits, &misses);
	cr_assert_eq(hits, 0);
	cr_assert_eq(misses, 1);
	b = lookup(s, (uintptr_t)sym_plain_fn);
	cr_assert_eq(a, b);
	symbolizer_cache_stats(s, &hits, &misses);
	cr_assert_eq(hits, 1);
	cr_assert_eq(misses, 1);
	/* Many distinct PCs (forces the table to grow), then all hit. */
	for (uintptr_t pc = 0x1000; pc < 0x1000 + 5000; pc++)
		lookup(s, pc);
	for (uintptr_t pc = 0x1000; pc < 0x1000 + 5000; pc++)
		lookup(s, pc);
	symbolizer_cache_stats(s, &hits, &misses);
	cr_assert_eq(misses, 5001);
	cr_assert_eq(hits, 5001);
	cr_assert_eq(lookup(s, (uintptr_t)sym_plain_fn), a);
	symbolizer_free(s);
}

static bool is_lower_hex(const char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

Test(symbolizer, modules_and_build_ids)
{
	struct symbolizer *s = self_symbolizer();
	const struct sym_module *mods, *self_mod;
	size_t n = symbolizer_modules(s, &mods);
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	bool saw_vdso = false;

	cr_assert_gt(len, 0);
	exe[len] = '\0';
	cr_assert_gt(n, 2);
	self_mod = module_of(s, (uintptr_t)sym_plain_fn);
	cr_assert_not_null(self_mod);
	cr_assert_str_eq(self_mod->path, exe);
	cr_assert_eq(strlen(self_mod->build_id), 40, "build id '%s'", self_mod->build_id);
	cr_assert(is_lower_hex(self_mod->build_id));
	cr_assert_str_eq(symbolizer_main_build_id(s), self_mod->build_id);
	/* Nothing looked up yet: nothing claimed. */
	cr_assert(!self_mod->has_functions && !self_mod->has_filenames && !self_mod->has_line_numbers);
	lookup(s, (uintptr_t)sym_plain_fn);
	cr_assert(self_mod->has_functions && self_mod->has_filenames && self_mod->has_line_numbers);

	for (size_t i = 0; i < n; i++) {
		cr_assert(mods[i].path[0] == '/' || strcmp(mods[i].path, "[vdso]") == 0, "%s", mods[i].path);
		cr_assert_lt(mods[i].start, mods[i].limit);
		cr_assert(is_lower_hex(mods[i].build_id));
		if (i > 0)
			cr_assert_lt(mods[i - 1].start, mods[i].start);
		if (strcmp(mods[i].path, "[vdso]") == 0) {
			saw_vdso = true;
			cr_assert_gt(strlen(mods[i].build_id), 0);
		}
	}
	cr_assert(saw_vdso);
	symbolizer_free(s);
}

/* lazy_modules: only the main executable is opened up front; a module is
 * opened (and gets its build-id) when a PC in it is looked up, and names
 * it exactly as the eager symbolizer does. */
Test(symbolizer, lazy_modules_open_on_first_lookup)
{
	size_t len;
	char *text = read_self_maps(&len);
	struct symbolize_options lazy = {.lazy_modules = true};
	struct symbolizer *s = NULL, *eager = self_symbolizer();
	cr_assert_eq(symbolizer_new(getpid(), text, len, &lazy, &s), 0);
	free(text);

	const struct sym_module *self_mod = module_of(s, (uintptr_t)sym_plain_fn);
	cr_assert_eq(strlen(self_mod->build_id), 40, "main build id '%s'", self_mod->build_id);
	cr_assert_str_eq(symbolizer_main_build_id(s), symbolizer_main_build_id(eager));
	cr_assert_eq(symbolizer_loaded_modules(s), 1, "%zu modules opened before any lookup",
		     symbolizer_loaded_modules(s));
	void *getpid_addr = dlsym(RTLD_DEFAULT, "getpid");
	const struct sym_module *libc = module_of(s, (uintptr_t)getpid_addr);
	cr_assert_not_null(libc);
	cr_assert_str_eq(libc->build_id, "", "libc has a build-id before any lookup in it");

	const uintptr_t pcs[] = {(uintptr_t)getpid_addr, (uintptr_t)sym_plain_fn,
				 (uintptr_t)sym_outer_fn() - 1};
	for (size_t i = 0; i < sizeof(pcs) / sizeof(pcs[0]); i++) {
		const struct sym_location *a = lookup(s, pcs[i]), *b = lookup(eager, pcs[i]);
		cr_assert_eq(a->nframes, b->nframes, "pc %zu: %zu frames, eager %zu", i, a->nframes,
			     b->nframes);
		for (size_t k = 0; k < a->nframes; k++) {
			cr_assert_str_eq(a->frames[k].function, b->frames[k].function);
			cr_assert_eq(a->frames[k].line, b->frames[k].line);
		}
	}
	cr_assert_eq(strlen(libc->build_id), 40, "libc's build-id after a lookup: '%s'", libc->build_id);
	cr_assert_str_eq(libc->build_id, module_of(eager, (uintptr_t)getpid_addr)->build_id);
	cr_assert_eq(symbolizer_loaded_modules(s), 2);
	symbolizer_free(s);
	symbolizer_free(eager);
}

Test(symbolizer, vdso_symbol)
{
	/* The vdso exports clock_gettime as __vdso_clock_gettime; find it via
	 * the vdso image's own dynamic symbols using the dynamic linker. */
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *fn;
	struct symbolizer *s;
	const struct sym_location *loc;

	if (!h)
		cr_skip_test("vdso not reachable through dlopen");
	fn = dlsym(h, "__vdso_clock_gettime");
	if (!fn)
		cr_skip_test("no __vdso_clock_gettime");
	s = self_symbolizer();
	loc = lookup(s, (uintptr_t)fn);
	cr_assert_not_null(loc->module);
	cr_assert_str_eq(loc->module->path, "[vdso]");
	cr_assert_geq(loc->nframes, 1);
	cr_assert(strstr(loc->frames[loc->nframes - 1].function, "clock_gettime"), "got %s",
		  loc->frames[loc->nframes - 1].function);
	symbolizer_free(s);
}

Test(symbolizer, stripped_library_with_debuglink)
{
	void *h = dlopen(SYMTEST_STRIPPED, RTLD_NOW | RTLD_LOCAL);
	void *fn, *hidden;
	const int *line;
	void *(*hidden_addr)(void);
	struct symbolizer *s;
	const struct sym_location *loc;

	cr_assert_not_null(h, "dlopen: %s", dlerror());
	fn = dlsym(h, "symtest_func");
	line = dlsym(h, "symtest_func_line");
	hidden_addr = (void *(*)(void))(uintptr_t)dlsym(h, "symtest_hidden_addr");
	cr_assert(fn && line && hidden_addr);
	hidden = hidden_addr();

	s = self_symbolizer();
	loc = lookup(s, (uintptr_t)fn);
	cr_assert_eq(loc->nframes, 1);
	cr_assert_str_eq(loc->frames[0].function, "symtest_func");
	cr_assert(ends_with(loc->frames[0].file, "symtest_lib.c"), "file %s", loc->frames[0].file);
	cr_assert_eq(loc->frames[0].line, *line);
	cr_assert_eq(loc->frames[0].function_start_line, *line);
	cr_assert(ends_with(loc->module->path, "libsymtest-stripped.so"));
	cr_assert(loc->module->has_line_numbers);

	/* Only the debug file knows this one's name. */
	loc = lookup(s, (uintptr_t)hidden);
	cr_assert_eq(loc->nframes, 1);
	cr_assert_str_eq(loc->frames[0].function, "symtest_hidden");
	cr_assert(ends_with(loc->frames[0].file, "symtest_lib.c"));
	symbolizer_free(s);
	dlclose(h);
}

/* A library deleted after loading is reachable only via map_files. */
Test(symbolizer, deleted_library)
{
	char path[] = "/tmp/symtest-deleted-XXXXXX";
	int out = mkstemp(path), in = open(SYMTEST_UNSTRIPPED, O_RDONLY);
	char buf[65536];
	ssize_t n;
	void *h, *fn;
	struct symbolizer *s;
	const struct sym_location *loc;

	cr_assert(out >= 0 && in >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	unlink(path);
	cr_assert_not_null(h, "dlopen: %s", dlerror());
	fn = dlsym(h, "symtest_func");

	s = self_symbolizer();
	loc = lookup(s, (uintptr_t)fn);
	cr_assert_not_null(loc->module);
	cr_assert_str_eq(loc->module->path, path);
	cr_assert_eq(loc->nframes, 1);
	cr_assert_str_eq(loc->frames[0].function, "symtest_func");
	cr_assert(ends_with(loc->frames[0].file, "symtest_lib.c"));
	cr_assert_gt(strlen(loc->module->build_id), 0);
	symbolizer_free(s);
	dlclose(h);
}

static char *replace_all(const char *text, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to), n = 0;
	char *out, *o;

	for (const char *p = strstr(text, from); p; p = strstr(p + fl, from))
		n++;
	out = o = malloc(strlen(text) + n * tl + 1);
	for (const char *p = text, *q; ; p = q + fl) {
		q = strstr(p, from);
		if (!q) {
			strcpy(o, p);
			break;
		}
		memcpy(o, p, (size_t)(q - p));
		o += q - p;
		memcpy(o, to, tl);
		o += tl;
	}
	return out;
}

/* The path in maps now names a different file (replaced binary, or an
 * overlayfs view): dev/inode differ, so the mapped file must come from
 * /proc/PID/map_files, not from the path. */
Test(symbolizer, replaced_file_uses_map_files)
{
	void *h = dlopen(SYMTEST_UNSTRIPPED, RTLD_NOW | RTLD_LOCAL);
	char exe[4096], *text, *forged;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t len;
	void *fn;
	struct symbolizer *s;
	const struct sym_location *loc;

	cr_assert_not_null(h);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	fn = dlsym(h, "symtest_func");
	text = read_self_maps(&len);
	text[len] = '\0';
	forged = replace_all(text, SYMTEST_UNSTRIPPED, exe);
	cr_assert_eq(symbolizer_new(getpid(), forged, strlen(forged), NULL, &s), 0);
	loc = lookup(s, (uintptr_t)fn);
	cr_assert_str_eq(loc->module->path, exe);
	cr_assert_eq(loc->nframes, 1);
	cr_assert_str_eq(loc->frames[0].function, "symtest_func");
	symbolizer_free(s);
	free(text);
	free(forged);
	dlclose(h);
}

static void *map_exec_file(const void *data, size_t len, char *path)
{
	int fd = mkstemp(path);
	void *p;

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	p = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	cr_assert_neq(p, MAP_FAILED, "mmap: %s", strerror(errno));
	close(fd);
	return p;
}

static void check_corrupt(const void *data, size_t len)
{
	char path[] = "/tmp/symtest-corrupt-XXXXXX";
	void *p = map_exec_file(data, len, path);
	struct symbolizer *s = self_symbolizer();
	const struct sym_location *loc = lookup(s, (uintptr_t)p + 100);

	cr_assert_eq(loc->nframes, 0);
	cr_assert_not_null(loc->module);
	cr_assert_str_eq(loc->module->path, path);
	cr_assert_str_eq(loc->module->build_id, "");
	cr_assert(!loc->module->has_functions);
	symbolizer_free(s);
	munmap(p, 8192);
	unlink(path);
}

Test(symbolizer, corrupt_random_bytes)
{
	unsigned char junk[8192];
	unsigned x = 12345;

	for (size_t i = 0; i < sizeof(junk); i++) {
		x = x * 1103515245 + 12345;
		junk[i] = (unsigned char)(x >> 16);
	}
	check_corrupt(junk, sizeof(junk));
	/* Random bytes behind a valid ELF identification. */
	memcpy(junk, "\177ELF\2\1\1", 7);
	check_corrupt(junk, sizeof(junk));
}

Test(symbolizer, corrupt_truncated_header)
{
	unsigned char hdr[64];
	int fd = open("/proc/self/exe", O_RDONLY);

	/* Our own ELF header alone: program and section headers point past
	 * the end of the file. */
	cr_assert_eq(read(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	close(fd);
	check_corrupt(hdr, sizeof(hdr));
	check_corrupt(hdr, 20);
}

/* The first 8 KiB of our own executable: a valid header, program headers
 * and build-id note, but the section headers lie past the end. libelf would
 * read them from beyond the mapping (elfutils 0.188 crashed that way in
 * dwfl_module_build_id); it is refused before libdwfl sees it, so not even
 * the build-id, which is inside, is taken from it. */
Test(symbolizer, section_headers_past_the_end)
{
	static unsigned char head[8192];
	int fd = open("/proc/self/exe", O_RDONLY);

	cr_assert_eq(read(fd, head, sizeof(head)), (ssize_t)sizeof(head));
	close(fd);
	check_corrupt(head, sizeof(head));
}

Test(symbolizer, jit_perf_map)
{
	char path[64];
	void *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FILE *f;
	struct symbolizer *s;
	const struct sym_location *loc;

	cr_assert_neq(code, MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "%lx 40 jit_old\n", (unsigned long)(uintptr_t)code + 0x100);
	fprintf(f, "%lx 80 jit_first\n", (unsigned long)(uintptr_t)code);
	fprintf(f, "0x%lx 0x20 jit_second thing\n", (unsigned long)(uintptr_t)code + 0x100);
	fclose(f);
	cr_assert_eq(chmod(path, 0644), 0); /* whatever the umask: not writable by others */

	s = self_symbolizer();
	loc = lookup(s, (uintptr_t)code + 0x10);
	cr_assert_eq(loc->nframes, 1);
	cr_assert_str_eq(loc->frames[0].function, "jit_first");
	cr_assert_eq(loc->frames[0].function_offset, 0x10);
	cr_assert_null(loc->module);
	loc = lookup(s, (uintptr_t)code + 0x108);
	cr_assert_eq(loc->nframes, 1);
	cr_assert_str_eq(loc->frames[0].function, "jit_second thing");
	cr_assert_eq(loc->frames[0].function_offset, 8);
	loc = lookup(s, (uintptr_t)code + 0x130); /* past jit_second, inside jit_old */
	cr_assert_str_eq(loc->frames[0].function, "jit_old");
	loc = lookup(s, (uintptr_t)code + 0x200);
	cr_assert_eq(loc->nframes, 0);
	symbolizer_free(s);
	unlink(path);
	munmap(code, 4096);
}

/* A JIT map another user wrote, or one anyone may rewrite, names nothing
 * (any local user can create /tmp/perf-PID.map for a root process); the
 * reason is given. perf takes a map only from its own user or root. */
Test(symbolizer, jit_perf_map_of_another_user_is_refused)
{
	char path[64], why[128];
	void *code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(code, MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "%lx 80 forged\n", (unsigned long)(uintptr_t)code);
	fclose(f);
	cr_assert_eq(chmod(path, 0644), 0);
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_expect_eq(perfmap_check(fd, getpid(), why, sizeof(why)), 0, "our own map refused: %s", why);

	cr_assert_eq(chown(path, 65534, 65534), 0);
	cr_expect_eq(perfmap_check(fd, getpid(), why, sizeof(why)), -EPERM);
	cr_expect(strstr(why, "owned by uid 65534"), "%s", why);
	struct symbolizer *s = self_symbolizer();
	const struct sym_location *loc = lookup(s, (uintptr_t)code + 0x10);
	cr_expect_eq(loc->nframes, 0, "a map of uid 65534 named a frame of ours");
	symbolizer_free(s);

	cr_assert_eq(chown(path, 0, 0), 0);
	cr_assert_eq(chmod(path, 0666), 0);
	cr_expect_eq(perfmap_check(fd, getpid(), why, sizeof(why)), -EPERM);
	cr_expect(strstr(why, "writable by anyone"), "%s", why);
	s = self_symbolizer();
	loc = lookup(s, (uintptr_t)code + 0x10);
	cr_expect_eq(loc->nframes, 0, "a world-writable map named a frame");
	symbolizer_free(s);
	close(fd);
	unlink(path);
	munmap(code, 4096);
}

Test(symbolizer, bad_arguments)
{
	struct symbolizer *s = NULL;

	cr_assert_eq(symbolizer_new(0, "", 0, NULL, &s), -EINVAL);
	cr_assert_eq(symbolizer_new(getpid(), "junk\n", 5, NULL, &s), -EINVAL);
	cr_assert_null(s);
	symbolizer_free(NULL);
}

Test(symbolizer, debuginfod_disabled_by_default)
{
	struct symbolizer *s;

	setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
	s = self_symbolizer();
	cr_assert_null(getenv("DEBUGINFOD_URLS"));
	symbolizer_free(s);
}
