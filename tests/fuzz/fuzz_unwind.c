/*
 * fuzz_unwind: attach/unwind.h on a synthetic capture of the fuzzer's own
 * process: registers and a stack copy from the input, this process's real
 * maps and real code (so libunwind parses real .eh_frame tables, read by
 * the unwinder from our own files through a trivial opener, and the
 * frame-pointer fallback walks hostile stack words).
 *
 * The stack bytes are a target's memory: any value at all. rbp in
 * particular is a general-purpose register in code built without frame
 * pointers, so the fallback walk must survive every 64-bit value.
 *
 * ASLR would make raw addresses in a corpus meaningless from one run to
 * the next, so input words can be relative: a stack word (and rip, rbp)
 * whose top 16 bits are 0xc0de becomes an address inside one of our
 * executable mappings (byte 5 picks the mapping, the low 40 bits the
 * offset), and 0x57ac becomes stack_start + the low 16 bits. Every other
 * value is used as is.
 *
 * Input: stack copy from the front (up to 64 KiB); from the tail: how rip,
 * rsp, rbp and stack_start are chosen, the other registers, max frames.
 * Invariants: unwinder_unwind returns 0, at most max frames, pcs[0] is
 * rip, the same frames with the step cache as without it; -EINVAL for a
 * thread without registers or max == 0; no crash.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "tests/fuzz/fuzz_common.h"

#include "symbolize/unwind/unwind.h"

#define MAX_STACK (64u << 10)
#define MAX_EXEC  64

struct region {
	uint64_t start, len;
};

static struct unwinder *uw;
static struct region exec_maps[MAX_EXEC];
static size_t nexec;

/* Our own files: trusted, opened by the path in the line, as the gate
 * would after its checks. */
static int open_own(void *arg, const struct unwind_module *m)
{
	char path[4096];
	const char *slash = memchr(m->maps_line, '/', m->maps_line_len);
	size_t n = slash ? m->maps_line_len - (size_t)(slash - m->maps_line) : 0;
	int fd;

	(void)arg;
	if (!n || n >= sizeof(path))
		return -ENOENT;
	memcpy(path, slash, n);
	path[n] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const struct unwind_opener opener = {.open = open_own};
	static char maps[1 << 20];
	size_t len = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	(void)argc;
	(void)argv;
	FUZZ_CHECK(fd >= 0);
	while ((n = read(fd, maps + len, sizeof(maps) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	maps[len] = '\0';
	for (char *p = maps; *p && nexec < MAX_EXEC;) {
		unsigned long long s, e;
		char perms[5];
		char *nl = strchr(p, '\n');

		if (sscanf(p, "%llx-%llx %4s", &s, &e, perms) == 3 && perms[2] == 'x' &&
		    memchr(p, '/', nl ? (size_t)(nl - p) : strlen(p)))
			exec_maps[nexec++] = (struct region){s, e - s};
		p = nl ? nl + 1 : p + strlen(p);
	}
	FUZZ_CHECK(nexec > 0);
	/* Live reads (addresses outside the stack copy and the tables) go to
	 * a stopped fork of ours: the same layout, frozen, as a target held
	 * for a capture is, so that the same input reads the same words
	 * every time (our own heap and stack change under us). */
	pid_t fuzzer = getpid();
	pid_t frozen = fork();
	FUZZ_CHECK(frozen >= 0);
	if (frozen == 0) {
		/* Gone with us, even if we died before this line. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != fuzzer)
			_exit(0);
		for (;;)
			raise(SIGSTOP);
	}
	FUZZ_CHECK(unwinder_new(frozen, maps, len, &opener, &uw) == 0);
	return 0;
}

static uint64_t relocate(uint64_t w, uint64_t stack_start)
{
	switch (w >> 48) {
	case 0xc0de: {
		const struct region *r = &exec_maps[((w >> 40) & 0xff) % nexec];

		return r->start + (w & 0xffffffffffull) % r->len;
	}
	case 0x57ac:
		return stack_start + (w & 0xffff);
	default:
		return w;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = fz_init(data, size);
	struct thread_capture tc;
	uint64_t pcs[UNWIND_MAX_FRAMES_DEFAULT];
	size_t max, n = 0, stack_len;
	bool truncated;
	uint8_t *stack;
	int r;

	memset(&tc, 0, sizeof(tc));
	tc.tid = getpid();
	tc.outcome = THREAD_CAPTURED;
	/* Unmapped here, 8-aligned, or anything. */
	tc.stack_start = fz_bool(&f) ? 0x7e0000100000ull + (fz_u32(&f) & ~7u) : fz_u64(&f);
	tc.regs.rip = relocate(fz_u64(&f), tc.stack_start);
	tc.regs.rbp = relocate(fz_u64(&f), tc.stack_start);
	tc.regs.rsp = fz_bool(&f) ? tc.stack_start : relocate(fz_u64(&f), tc.stack_start);
	tc.regs.rbx = fz_u64(&f);
	tc.regs.r12 = fz_u64(&f);
	tc.regs.r13 = fz_u64(&f);
	tc.regs.r14 = fz_u64(&f);
	tc.regs.r15 = fz_u64(&f);
	max = (size_t)fz_range(&f, 0, UNWIND_MAX_FRAMES_DEFAULT);

	/* The rest (the front of the input) is the stack copy. */
	stack_len = f.n < MAX_STACK ? f.n : MAX_STACK;
	stack = malloc(stack_len ? stack_len : 1);
	FUZZ_CHECK(stack != NULL);
	memcpy(stack, data, stack_len);
	for (size_t i = 0; i + 8 <= stack_len; i += 8) {
		uint64_t w;

		memcpy(&w, stack + i, 8);
		w = relocate(w, tc.stack_start);
		memcpy(stack + i, &w, 8);
	}
	tc.stack = stack;
	tc.stack_len = stack_len;
	tc.stack_cap = stack_len;

	r = unwinder_unwind(uw, &tc, pcs, max, &n, &truncated);
	if (max == 0) {
		FUZZ_CHECK(r == -EINVAL);
	} else {
		FUZZ_CHECK(r == 0);
		FUZZ_CHECK(n >= 1 && n <= max);
		FUZZ_CHECK(pcs[0] == tc.regs.rip);
		/* The step cache (kept from earlier inputs, and filled by this
		 * one) walks as unw_step alone does. */
		uint64_t ref[UNWIND_MAX_FRAMES_DEFAULT];
		size_t ref_n = 0;
		bool ref_truncated;
		unwinder_use_step_cache(uw, false);
		FUZZ_CHECK(unwinder_unwind(uw, &tc, ref, max, &ref_n, &ref_truncated) == 0);
		unwinder_use_step_cache(uw, true);
		FUZZ_CHECK(ref_n == n && ref_truncated == truncated);
		FUZZ_CHECK(memcmp(ref, pcs, n * sizeof(pcs[0])) == 0);
	}

	tc.outcome = THREAD_LATE;
	FUZZ_CHECK(unwinder_unwind(uw, &tc, pcs, UNWIND_MAX_FRAMES_DEFAULT, &n, &truncated) ==
		   -EINVAL);
	free(stack);
	return 0;
}
