/*
 * attach/unwind.h without ptrace: this process unwinds a stack it copied
 * of itself, through files handed over by a test opener, and survives
 * hostile modules (made-up ELF images in memfds, mapped at made-up
 * addresses in a made-up maps text).
 *
 * This file is built -fomit-frame-pointer: the chain level1 -> level2 ->
 * level3 -> capture can only be walked with the CFI the unwinder read from
 * the descriptor the opener gave it, never by frame pointers.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../../lib/elf_img.h"
#include "symbolize/unwind/unwind.h"

/* ---- a test opener that counts and may refuse ---- */

#define MAX_LINES 128

struct opener_state {
	bool refuse;
	int fixed_fd; /* >= 0: hand out a dup of this for every module */
	size_t calls;
	char *lines[MAX_LINES];
	size_t nlines;
	bool repeated; /* some line was asked for twice */
};

static int test_open(void *arg, const struct unwind_module *m)
{
	struct opener_state *s = arg;
	s->calls++;
	for (size_t i = 0; i < s->nlines; i++)
		if (strlen(s->lines[i]) == m->maps_line_len &&
		    memcmp(s->lines[i], m->maps_line, m->maps_line_len) == 0)
			s->repeated = true;
	if (s->nlines < MAX_LINES)
		s->lines[s->nlines++] = strndup(m->maps_line, m->maps_line_len);
	if (s->refuse)
		return -EPERM;
	if (s->fixed_fd >= 0)
		return dup(s->fixed_fd);
	const char *slash = memchr(m->maps_line, '/', m->maps_line_len);
	if (!slash)
		return -ENOENT;
	char *path = strndup(slash, m->maps_line_len - (size_t)(slash - m->maps_line));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	return fd >= 0 ? fd : -errno;
}

static void opener_release(struct opener_state *s)
{
	for (size_t i = 0; i < s->nlines; i++)
		free(s->lines[i]);
}

static char *self_maps(size_t *ret_len)
{
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap);
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	cr_assert(buf && fd >= 0);
	ssize_t n;
	while ((n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	*ret_len = len;
	return buf;
}

/* ---- a real chain in this process ---- */

#define STACK_COPY (256u << 10)

static struct thread_capture captured;
static uint64_t want[4]; /* return addresses: into level3, level2, level1, the test */

static uint64_t stack_limit(uint64_t sp)
{
	size_t len;
	char *maps = self_maps(&len);
	uint64_t limit = 0;
	for (char *p = maps; *p;) {
		unsigned long long s, e;
		if (sscanf(p, "%llx-%llx", &s, &e) == 2 && sp >= s && sp < e)
			limit = e;
		char *nl = strchr(p, '\n');
		p = nl ? nl + 1 : p + strlen(p);
	}
	free(maps);
	return limit;
}

/* Our callers' frames hold ASan redzones: copy them as raw bytes. */
__attribute__((no_sanitize("address"), noinline)) static void copy_raw(uint8_t *dst,
									 const volatile uint8_t *src,
									 size_t len)
{
	for (size_t i = 0; i < len; i++)
		dst[i] = src[i];
}

static __attribute__((noinline)) void capture(void)
{
	uint64_t rip, rsp;
	/* rip and rsp of the same instruction boundary, after the prologue:
	 * the CFI at rip describes this very rsp. */
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1" : "=r"(rip), "=r"(rsp));
	want[0] = (uint64_t)__builtin_return_address(0);
	memset(&captured.regs, 0, sizeof(captured.regs));
	captured.regs.rip = rip;
	captured.regs.rsp = rsp;
	/* Not a frame pointer in this file: garbage for the fallback. */
	captured.regs.rbp = 0x5a5a5a5a5a5a5a5aull;
	uint64_t limit = stack_limit(rsp);
	size_t len = limit - rsp < STACK_COPY ? (size_t)(limit - rsp) : STACK_COPY;
	captured.stack = malloc(len);
	cr_assert(captured.stack);
	/* Everything above rsp belongs to our callers and stays put while
	 * the copy runs below it. */
	copy_raw(captured.stack, (const volatile uint8_t *)(uintptr_t)rsp, len);
	captured.stack_start = rsp;
	captured.stack_len = len;
	captured.stack_cap = len;
	captured.outcome = THREAD_CAPTURED;
	captured.tid = getpid();
}

static __attribute__((noinline)) void level3(void)
{
	capture();
	want[1] = (uint64_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory"); /* no tail call */
}

static __attribute__((noinline)) void level2(void)
{
	level3();
	want[2] = (uint64_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void level1(void)
{
	level2();
	want[3] = (uint64_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

Test(unwind, cfi_from_opened_files)
{
	level1();
	size_t len;
	char *maps = self_maps(&len);
	struct opener_state os = {.fixed_fd = -1};
	struct unwind_opener op = {.open = test_open, .arg = &os};
	struct unwinder *u;
	cr_assert_eq(unwinder_new(getpid(), maps, len, &op, &u), 0);
	/* Rounds 1 and 2 step by the rules held from round 0 (the step
	 * cache), round 3 by unw_step alone: the same frames each time. */
	for (int round = 0; round < 4; round++) {
		unwinder_use_step_cache(u, round < 3);
		uint64_t pcs[UNWIND_MAX_FRAMES_DEFAULT];
		size_t n;
		bool truncated;
		cr_assert_eq(unwinder_unwind(u, &captured, pcs, UNWIND_MAX_FRAMES_DEFAULT, &n,
					     &truncated), 0);
		cr_assert_geq(n, 5, "only %zu frames", n);
		cr_expect_eq(pcs[0], captured.regs.rip);
		for (int i = 0; i < 4; i++)
			cr_expect_eq(pcs[i + 1], want[i], "round %d, frame %d: %#lx, want %#lx", round,
				     i + 1, (unsigned long)pcs[i + 1], (unsigned long)want[i]);
		/* Same modules, a maps text that changed elsewhere. */
		if (round == 1)
			cr_assert_eq(unwinder_update_maps(u, maps, len), 0);
	}
	cr_expect_gt(os.calls, 0);
	cr_expect(!os.repeated, "a module was opened twice");
	unwinder_free(u);
	opener_release(&os);
	free(maps);
	free(captured.stack);
}

Test(unwind, refused_files_mean_no_cfi)
{
	level1();
	size_t len;
	char *maps = self_maps(&len);
	struct opener_state os = {.refuse = true, .fixed_fd = -1};
	struct unwind_opener op = {.open = test_open, .arg = &os};
	struct unwinder *u;
	cr_assert_eq(unwinder_new(getpid(), maps, len, &op, &u), 0);
	uint64_t pcs[UNWIND_MAX_FRAMES_DEFAULT];
	size_t n;
	bool truncated;
	cr_assert_eq(unwinder_unwind(u, &captured, pcs, UNWIND_MAX_FRAMES_DEFAULT, &n, &truncated),
		     0);
	cr_expect_geq(n, 1);
	cr_expect_eq(pcs[0], captured.regs.rip);
	cr_expect_gt(os.calls, 0, "the opener was never asked");
	/* Without the tables, no frame past capture() is found by CFI. */
	cr_expect(n < 3 || pcs[2] != want[1], "CFI was used without an opened file");
	unwinder_free(u);
	opener_release(&os);
	free(maps);
	free(captured.stack);
}

/* ---- hostile modules ---- */

#define IMG 8192
#define TEXT_AT 0x10000000ull
#define HDR_OFF 0x800u

enum hostile {
	H_GOOD,          /* well-formed header, FDE offsets garbage */
	H_HDR_PAST_EOF,  /* PT_GNU_EH_FRAME beyond the file */
	H_HUGE_COUNT,    /* fde_count larger than the segment */
	H_INDIRECT,      /* eh_frame_ptr DW_EH_PE_indirect */
	H_TABLE_ENC,     /* a table encoding libunwind's remote lookup cannot read */
	H_WRITABLE,      /* the header in a writable segment */
	H_PHNUM,         /* e_phnum past the end of the file */
	H_PHOFF_WRAP,    /* e_phoff near 2^64 */
	H_WRAP_FILESZ,   /* p_offset + p_filesz wraps */
	H_FDE_INSIDE,    /* the FDE points at garbage inside the image */
	H_COUNT,
};

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void make_image(uint8_t *img, enum hostile h)
{
	memset(img, 0, IMG);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	elf_img_header(eh, 3);
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + eh->e_phoff);
	/* One r-x segment with everything, as old linkers laid files out. */
	ph[0] = (Elf64_Phdr){.p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0,
			     .p_vaddr = 0, .p_filesz = IMG, .p_memsz = IMG, .p_align = 4096};
	ph[1] = (Elf64_Phdr){.p_type = PT_GNU_EH_FRAME, .p_flags = PF_R, .p_offset = HDR_OFF,
			     .p_vaddr = HDR_OFF, .p_filesz = 12 + 8 * 4, .p_memsz = 12 + 8 * 4};
	ph[2] = (Elf64_Phdr){.p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = IMG,
			     .p_vaddr = 0x10000, .p_filesz = 0, .p_memsz = 4096};
	uint8_t *hdr = img + HDR_OFF;
	hdr[0] = 1;
	hdr[1] = 0x1b; /* eh_frame_ptr: pcrel sdata4 */
	hdr[2] = 0x03; /* fde_count: udata4 */
	hdr[3] = 0x3b; /* table: datarel sdata4 */
	put32(hdr + 4, 0x100);
	put32(hdr + 8, 4);
	for (int i = 0; i < 4; i++) {
		put32(hdr + 12 + 8 * i, (uint32_t)(0x1000 - HDR_OFF + 0x100 * i));
		put32(hdr + 16 + 8 * i, 0x7ffffff0u - (uint32_t)i); /* far away */
	}
	switch (h) {
	case H_GOOD: break;
	case H_HDR_PAST_EOF: ph[1].p_offset = ph[1].p_vaddr = IMG * 4; break;
	case H_HUGE_COUNT: put32(hdr + 8, 0xfffffff0u); break;
	case H_INDIRECT: hdr[1] = 0x9b; break;
	case H_TABLE_ENC: hdr[3] = 0x1b; break;
	case H_WRITABLE: ph[0].p_flags |= PF_W; break;
	case H_PHNUM: eh->e_phnum = 200; break;
	case H_PHOFF_WRAP: eh->e_phoff = ~(uint64_t)0 - 16; break;
	case H_WRAP_FILESZ: ph[0].p_filesz = ~(uint64_t)0 - 8; break;
	case H_FDE_INSIDE:
		for (int i = 0; i < 4; i++)
			put32(hdr + 16 + 8 * i, 0x40 + 4 * (uint32_t)i); /* into the header */
		memset(img + HDR_OFF + 0x40, 0xff, 64);
		break;
	case H_COUNT: break;
	}
}

Test(unwind, hostile_modules)
{
	static uint8_t img[IMG];
	uint8_t stack[512];
	memset(stack, 0x41, sizeof(stack));
	for (int h = 0; h < H_COUNT; h++) {
		make_image(img, (enum hostile)h);
		int mfd = memfd_create("hostile", MFD_CLOEXEC);
		cr_assert(mfd >= 0);
		cr_assert_eq(write(mfd, img, IMG), IMG);
		char maps[256];
		int len = snprintf(maps, sizeof(maps),
				   "%llx-%llx r-xp 00000000 00:01 1234 /hostile-%d.so\n",
				   TEXT_AT, TEXT_AT + IMG, h);
		struct opener_state os = {.fixed_fd = mfd};
		struct unwind_opener op = {.open = test_open, .arg = &os};
		struct unwinder *u;
		cr_assert_eq(unwinder_new(getpid(), maps, (size_t)len, &op, &u), 0);
		struct thread_capture tc = {.outcome = THREAD_CAPTURED, .tid = getpid()};
		tc.stack = stack;
		tc.stack_len = tc.stack_cap = sizeof(stack);
		tc.stack_start = 0x7e0000100000ull;
		tc.regs.rsp = tc.stack_start;
		tc.regs.rbp = tc.stack_start + 64;
		for (uint64_t ip = TEXT_AT + 0x1000; ip < TEXT_AT + 0x1400; ip += 0x80) {
			uint64_t pcs[16];
			size_t n;
			bool truncated;
			tc.regs.rip = ip;
			cr_assert_eq(unwinder_unwind(u, &tc, pcs, 16, &n, &truncated), 0,
				     "hostile %d", h);
			cr_expect(n >= 1 && pcs[0] == ip, "hostile %d", h);
		}
		cr_expect_eq(os.calls, 1, "hostile %d: opened %zu times", h, os.calls);
		unwinder_free(u);
		opener_release(&os);
		close(mfd);
	}
}

/* A module whose file is not a regular file is refused by the unwinder
 * too, whatever the opener says. */
Test(unwind, non_regular_refused)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	char maps[] = "10000000-10002000 r-xp 00000000 00:01 1234 /fifo.so\n";
	struct opener_state os = {.fixed_fd = p[0]};
	struct unwind_opener op = {.open = test_open, .arg = &os};
	struct unwinder *u;
	cr_assert_eq(unwinder_new(getpid(), maps, strlen(maps), &op, &u), 0);
	uint8_t stack[64] = {0};
	struct thread_capture tc = {.outcome = THREAD_CAPTURED, .stack = stack,
				    .stack_len = sizeof(stack), .stack_cap = sizeof(stack),
				    .stack_start = 0x7e0000100000ull};
	tc.regs.rip = 0x10001000;
	tc.regs.rsp = tc.stack_start;
	uint64_t pcs[8];
	size_t n;
	bool truncated;
	/* Would block forever in a read of the pipe if it were read. */
	cr_assert_eq(unwinder_unwind(u, &tc, pcs, 8, &n, &truncated), 0);
	cr_expect_eq(os.calls, 1);
	unwinder_free(u);
	opener_release(&os);
	close(p[0]);
	close(p[1]);
}

/* ---- whole files: the fuzz corpus's hostile ELFs, mutated copies of this
 * very test binary (real tables with bits flipped) ---- */

static void unwind_file_image(const uint8_t *img, size_t len, uint64_t map_off,
			      uint64_t map_len, uint64_t *seed)
{
	int mfd = memfd_create("image", MFD_CLOEXEC);
	cr_assert(mfd >= 0);
	cr_assert_eq(write(mfd, img, len), (ssize_t)len);
	char maps[256];
	int ml = snprintf(maps, sizeof(maps), "%llx-%llx r-xp %08llx 00:01 99 /image.so\n",
			  TEXT_AT, TEXT_AT + map_len, (unsigned long long)map_off);
	struct opener_state os = {.fixed_fd = mfd};
	struct unwind_opener op = {.open = test_open, .arg = &os};
	struct unwinder *u;
	cr_assert_eq(unwinder_new(getpid(), maps, (size_t)ml, &op, &u), 0);
	uint64_t stack[64];
	for (size_t i = 0; i < 64; i++) {
		*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
		/* Half of the words point back into the fake text. */
		stack[i] = (*seed >> 63) ? TEXT_AT + (*seed >> 20) % map_len : *seed;
	}
	struct thread_capture tc = {.outcome = THREAD_CAPTURED, .tid = getpid()};
	tc.stack = (uint8_t *)stack;
	tc.stack_len = tc.stack_cap = sizeof(stack);
	tc.stack_start = 0x7e0000100000ull;
	tc.regs.rsp = tc.stack_start;
	tc.regs.rbp = tc.stack_start + 16;
	for (int k = 0; k < 8; k++) {
		uint64_t pcs[32];
		size_t n;
		bool truncated;
		*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
		tc.regs.rip = TEXT_AT + (*seed >> 16) % map_len;
		cr_assert_eq(unwinder_unwind(u, &tc, pcs, 32, &n, &truncated), 0);
		cr_assert(n >= 1 && n <= 32 && pcs[0] == tc.regs.rip);
	}
	cr_expect_leq(os.calls, 1);
	unwinder_free(u);
	opener_release(&os);
	close(mfd);
}

static uint8_t *slurp(const char *path, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	off_t len = lseek(fd, 0, SEEK_END);
	uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
	if (buf && len > 0 && pread(fd, buf, (size_t)len, 0) != len) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*ret_len = len > 0 ? (size_t)len : 0;
	return buf;
}

Test(unwind, fuzz_corpus_elfs)
{
	static const char *const names[] = {
		"gen-hostile-1-bad-magic.elf", "gen-hostile-2-huge-counts.elf",
		"gen-hostile-3-wrapped-shoff.elf", "gen-hostile-4-random-shdrs.elf",
		"gen-hostile-5-bad-class.elf", "gen-tiny-g.so", "gen-tiny-nofp.so",
		"gen-valid-minimal.elf",
	};
	uint64_t seed = 1;
	size_t found = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[512];
		size_t len;
		snprintf(path, sizeof(path), "%s/%s", FUZZ_ELF_CORPUS, names[i]);
		uint8_t *img = slurp(path, &len);
		if (!img)
			continue;
		found++;
		/* As mapped at offset 0 and at 0x1000, as the targets do. */
		unwind_file_image(img, len, 0, 0x2000, &seed);
		unwind_file_image(img, len, 0x1000, 0x1000, &seed);
		free(img);
	}
	cr_expect_gt(found, 0, "no corpus under %s", FUZZ_ELF_CORPUS);
}

Test(unwind, mutated_self, .timeout = 120)
{
	size_t len;
	uint8_t *orig = slurp("/proc/self/exe", &len);
	cr_assert(orig && len > 4096);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)orig;
	cr_assert(eh->e_phoff + (size_t)eh->e_phnum * sizeof(Elf64_Phdr) <= len);
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(orig + eh->e_phoff);
	uint64_t text_off = 0, text_len = 0, hdr_off = 0, hdr_len = 0;
	for (size_t i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && !text_len) {
			text_off = ph[i].p_offset & ~0xfffull;
			text_len = (ph[i].p_filesz + (ph[i].p_offset & 0xfff) + 0xfff) & ~0xfffull;
		}
		if (ph[i].p_type == PT_GNU_EH_FRAME) {
			hdr_off = ph[i].p_offset;
			hdr_len = ph[i].p_filesz;
		}
	}
	cr_assert(text_len && hdr_len && hdr_off + hdr_len <= len);
	uint8_t *img = malloc(len);
	uint64_t seed = 0x5eed;
	for (int round = 0; round < 300; round++) {
		memcpy(img, orig, len);
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		unsigned flips = 1 + (unsigned)(seed >> 59);
		for (unsigned k = 0; k < flips; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t r = seed >> 11;
			size_t at;
			switch (r % 4) {
			case 0: at = (r >> 2) % 64; break;                          /* ELF header */
			case 1: at = eh->e_phoff + (r >> 2) % (eh->e_phnum * sizeof(Elf64_Phdr)); break;
			case 2: at = hdr_off + (r >> 2) % (hdr_len < 64 ? hdr_len : 64); break;
			default: at = hdr_off + (r >> 2) % (len - hdr_off); break; /* table, eh_frame, ... */
			}
			img[at] ^= (uint8_t)(1u << ((r >> 40) % 8));
		}
		unwind_file_image(img, len, text_off, text_len, &seed);
	}
	free(img);
	free(orig);
}
