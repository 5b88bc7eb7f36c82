/* The runtime globals goroutine listing needs (runtime.allgs, runtime.allm)
 * when the binary has no .symtab (-ldflags=-s): found in the running
 * target's .bss by what they point to, never guessed from one pattern.
 *
 *   allgs  a slice {ptr, len, cap} whose first element is the goroutine of
 *          runtime.main: the runtime creates it first (rt0_go → newproc),
 *          so allgs[0].goid is 1, and no element is ever removed;
 *   allm   the head of the M list: following m.alllink from it ends at m0,
 *          whose procid is the main thread's, the target's pid; every other
 *          pointer to an M in .bss (sched.midle, g0.m, ...) starts a suffix
 *          of the same list, so the longest chain is allm.
 *
 * Both checks use only the g and m layouts (DWARF or the release's row), so
 * they hold for every release those cover.
 *
 * The heap profile's globals hold numbers, not pointers one could
 * recognise, so they are read from the code instead: in every release
 * from 1.19 to 1.27 the first load from a RIP-relative address in
 *   runtime.mProf_FlushLocked  is  runtime.mbuckets,
 *   runtime.mProf_Flush        is  runtime.mProfCycle,
 *   runtime.allocmcache        is  runtime.MemProfileRate (nextSample, inlined),
 * and the only one in
 *   runtime.isSystemGoroutine  is  runtime.fingStatus (1.20 on; a uint32
 *                              whose fingRunningFinalizer bit says the
 *                              finalizer goroutine runs user code and is
 *                              listed) or runtime.fingRunning (1.19, a bool,
 *                              loaded with MOVZX).
 * The block and mutex profiles' the same way: the first load in
 *   runtime.blockProfileInternal (1.23 on) or BlockProfile  is  runtime.bbuckets,
 *   runtime.mutexProfileInternal (1.23 on) or MutexProfile  is  runtime.xbuckets,
 *   runtime.blockevent                                     is  runtime.blockprofilerate,
 *   runtime.mutexevent (1.27) or sync.event (its linkname)  is  runtime.mutexprofilerate,
 *   runtime.ticksPerSecond (1.22 on) or tickspersecond     is  runtime.ticks.val
 * (the fast path: the value once measured; ticks.val moved from +16 to +8
 * in 1.21 and to +24 in 1.22, and no DWARF is needed to follow it).
 * The tests compare all of them with the .symtab of a plain build of each
 * release. */
#include "internal.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum {
	BSS_MAX = 64 << 20,      /* a larger .bss is not a Go binary we know */
	READ_PIECE = 64 << 10,   /* one range of the .bss copy */
	MAX_GS = 1 << 24,        /* go_capture refuses more anyway */
	MAX_MS = 100000,
	PID_MAX_LIMIT = 4194304, /* kernel/pid.c: PID_MAX_LIMIT on 64-bit */
};

/* The .bss and what its words point to are the target's to write: a
 * hostile one could make the search read without end (millions of words
 * pointing into a long M list). Real programs need some ten thousand
 * reads; past READ_BUDGET the search gives up. */
enum { READ_BUDGET = 1 << 21 };

struct reader {
	go_read_mem_fn read;
	void *ctx;
	size_t left;
};

static int rd_ranges(struct reader *r, struct go_mem_range *rg, size_t n)
{
	if (r->left == 0)
		return -E2BIG;
	r->left--;
	return r->read(r->ctx, rg, n);
}

static int rd(struct reader *r, uint64_t addr, void *buf, size_t len)
{
	struct go_mem_range one = {addr, buf, len};
	return rd_ranges(r, &one, 1);
}

/* The target's .bss as it is now, in *ret (run-time address *ret_addr). */
static int copy_bss(const struct go_target *t, struct reader *r, uint8_t **ret, uint64_t *ret_addr,
		    size_t *ret_len)
{
	GElf_Shdr sh;
	if (!go_find_section(t->elf, ".bss", &sh) || sh.sh_size == 0)
		return -ENOENT;
	if (sh.sh_size > BSS_MAX || sh.sh_addr % 8)
		return -EINVAL;
	size_t len = (size_t)sh.sh_size & ~(size_t)7;
	uint8_t *buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	uint64_t base = sh.sh_addr + t->bias;
	for (size_t off = 0; off < len; off += READ_PIECE) {
		size_t n = len - off < READ_PIECE ? len - off : READ_PIECE;
		int e = rd(r, base + off, buf + off, n);
		if (e < 0) {
			free(buf);
			return e;
		}
	}
	*ret = buf;
	*ret_addr = base;
	*ret_len = len;
	return 0;
}

static bool status_valid(uint32_t st)
{
	st &= ~(uint32_t)G_SCAN;
	return st <= G_DEADEXTRA && st != 5 /* _Gmoribund_unused */;
}

/* Is there a g at addr with a plausible stack and status, and goid
 * want_goid (0: any positive goid)? */
static bool is_g(const struct go_target *t, struct reader *r, uint64_t addr, uint64_t want_goid)
{
	const struct go_layout *L = &t->L;
	if (!addr || addr % 8)
		return false;
	uint8_t g[4096];
	if (L->g_read > sizeof(g) || rd(r, addr, g, L->g_read) != 0)
		return false;
	uint64_t goid = go_u64(g + L->g_goid);
	uint64_t lo = go_u64(g + L->g_stack_lo), hi = go_u64(g + L->g_stack_hi);
	uint32_t st = go_u32(g + L->g_atomicstatus);
	if (!status_valid(st) || (want_goid ? goid != want_goid : goid == 0))
		return false;
	/* a dead g may have given its stack back (lo == hi == 0) */
	return (lo == 0 && hi == 0) || (lo < hi && hi - lo <= (1ull << 30));
}

/* allgs: the slice with the most elements whose first is goroutine 1 and
 * whose last is a g. Returns its run-time address, 0 if none. */
static uint64_t find_allgs(const struct go_target *t, struct reader *r, const uint8_t *bss,
			   uint64_t base, size_t len)
{
	uint64_t best = 0, best_len = 0;
	for (size_t off = 0; off + 24 <= len; off += 8) {
		uint64_t p = go_u64(bss + off), n = go_u64(bss + off + 8), cap = go_u64(bss + off + 16);
		if (!p || p % 8 || n == 0 || n > cap || cap > MAX_GS || n <= best_len)
			continue;
		uint64_t first, last;
		if (rd(r, p, &first, 8) != 0 || rd(r, p + 8 * (n - 1), &last, 8) != 0)
			continue;
		if (!is_g(t, r, first, 1) || !is_g(t, r, last, 0))
			continue;
		best = base + off;
		best_len = n;
	}
	return best;
}

/* The length of the M list from m, if it ends at an M whose procid is
 * pid (m0, the main thread's; any M if pid is 0); 0 otherwise. Words of
 * .bss that are not Ms can make a cycle (a list head pointing at itself):
 * Brent's check stops those early. */
static size_t m_chain(const struct go_target *t, struct reader *r, uint64_t m, pid_t pid)
{
	const struct go_layout *L = &t->L;
	size_t n = 0, power = 1;
	uint64_t procid = 0, mark = m;
	while (m) {
		if (m % 8 || ++n > MAX_MS)
			return 0;
		struct go_mem_range two[2] = {{m + (uint64_t)L->m_procid, &procid, 8},
					      {m + (uint64_t)L->m_alllink, &m, 8}};
		if (rd_ranges(r, two, 2) != 0 || procid > PID_MAX_LIMIT || m == mark)
			return 0;
		if (n == power) {
			power *= 2;
			mark = m;
		}
	}
	return procid != 0 && (pid <= 0 || procid == (uint64_t)pid) ? n : 0;
}

static uint64_t find_allm(const struct go_target *t, struct reader *r, const uint8_t *bss, size_t len,
			  pid_t pid, uint64_t base)
{
	uint64_t best = 0;
	size_t best_n = 0;
	for (size_t off = 0; off + 8 <= len; off += 8) {
		uint64_t p = go_u64(bss + off);
		/* user-space pointers only; most words of .bss are not */
		if (p < 0x10000 || p >= (1ull << 47) || p % 8)
			continue;
		size_t n = m_chain(t, r, p, pid);
		if (n > best_n) {
			best_n = n;
			best = base + off;
		}
	}
	return best;
}

enum { FUNC_MAX = 64 << 10 }; /* the functions above are a few hundred bytes */

/* The link-time address the first MOV (or MOVZX, with zero_extend; or
 * LEA, with lea) of function fn loads from, when that is RIP-relative; 0
 * if fn is absent or has no such load. */
static uint64_t first_rip_ref(const struct go_target *t, csh cs, const char *fn, bool zero_extend,
			      bool lea)
{
	uint64_t entry, end;
	if (!go_func_by_name(t, fn, &entry, &end) || end - entry > FUNC_MAX)
		return 0;
	const uint8_t *code = go_file_at(t, entry, (size_t)(end - entry));
	if (!code)
		return 0;
	cs_insn *insn = cs_malloc(cs);
	if (!insn)
		return 0;
	size_t size = (size_t)(end - entry);
	uint64_t pc = entry, found = 0;
	while (!found && cs_disasm_iter(cs, &code, &size, &pc, insn)) {
		bool load = lea ? insn->id == X86_INS_LEA
				: insn->id == X86_INS_MOV || (zero_extend && insn->id == X86_INS_MOVZX);
		if (!load || !insn->detail || insn->detail->x86.op_count != 2)
			continue;
		const cs_x86_op *src = &insn->detail->x86.operands[1];
		if (src->type == X86_OP_MEM && src->mem.base == X86_REG_RIP && src->mem.index == X86_REG_INVALID)
			found = insn->address + insn->size + (uint64_t)src->mem.disp;
	}
	cs_free(insn, 1);
	return found;
}

static uint64_t first_rip_load(const struct go_target *t, csh cs, const char *fn, bool zero_extend)
{
	return first_rip_ref(t, cs, fn, zero_extend, false);
}

struct heap_globals {
	uint64_t mbuckets, mprofcycle, memprofilerate;
	uint64_t fing; /* fingStatus, or fingRunning before 1.20; not needed for the heap */
	uint64_t gccontroller; /* the timeline's live heap; not needed for the profile */
};

static bool heap_globals_scan(const struct go_target *t, struct heap_globals *ret)
{
	memset(ret, 0, sizeof(*ret));
	csh cs;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return false;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	ret->mbuckets = first_rip_load(t, cs, "runtime.mProf_FlushLocked", false);
	ret->mprofcycle = first_rip_load(t, cs, "runtime.mProf_Flush", false);
	ret->memprofilerate = first_rip_load(t, cs, "runtime.allocmcache", false);
	ret->fing = first_rip_load(t, cs, "runtime.isSystemGoroutine", true);
	/* gcTrigger.test's gcController.heapLive.Load() >= trigger: its only
	 * address taken (LEA) is &gcController, 1.19-1.27 */
	ret->gccontroller = first_rip_ref(t, cs, "runtime.gcTrigger.test", false, true);
	cs_close(&cs);
	return ret->mbuckets && ret->mprofcycle && ret->memprofilerate;
}

void go_heap_globals_from_code(struct go_target *t)
{
	struct heap_globals h;
	bool have_fing = t->sym_fingrunning || t->sym_fingstatus;
	if ((!have_fing || !t->sym_gccontroller) && t->minor >= 19) {
		/* Without it the finalizer goroutine is taken as idle: hidden
		 * from the dump even while it runs a finalizer. */
		heap_globals_scan(t, &h);
		if (!have_fing && t->minor == 19)
			t->sym_fingrunning = h.fing;
		else if (!have_fing)
			t->sym_fingstatus = h.fing;
		/* and the timeline's live heap (heapLive, from the layout) */
		if (!t->sym_gccontroller)
			t->sym_gccontroller = h.gccontroller;
	}
	if (t->sym_mbuckets || t->sym_mprofcycle || t->sym_mprof || t->sym_memprofilerate) {
		t->heap_globals_source = "symtab";
		return;
	}
	/* 1.18 kept the cycle in mProf.cycle, under a lock: not this layout */
	if (t->minor < 19 || !heap_globals_scan(t, &h)) {
		t->heap_globals_source = "none";
		return;
	}
	t->sym_mbuckets = h.mbuckets;
	t->sym_mprofcycle = h.mprofcycle;
	t->sym_memprofilerate = h.memprofilerate;
	t->heap_globals_source = "disasm";
}

struct contention_globals {
	uint64_t bbuckets, xbuckets, blockrate, mutexrate, ticksval;
};

/* The first of the functions that exists and has a RIP-relative load. */
static uint64_t first_rip_load_of(const struct go_target *t, csh cs, const char *a, const char *b)
{
	uint64_t found = first_rip_load(t, cs, a, false);
	return found || !b ? found : first_rip_load(t, cs, b, false);
}

static void contention_scan(const struct go_target *t, struct contention_globals *ret)
{
	memset(ret, 0, sizeof(*ret));
	csh cs;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	ret->bbuckets = first_rip_load_of(t, cs, "runtime.blockProfileInternal", "runtime.BlockProfile");
	ret->xbuckets = first_rip_load_of(t, cs, "runtime.mutexProfileInternal", "runtime.MutexProfile");
	ret->blockrate = first_rip_load_of(t, cs, "runtime.blockevent", NULL);
	ret->mutexrate = first_rip_load_of(t, cs, "runtime.mutexevent", "sync.event");
	ret->ticksval = first_rip_load_of(t, cs, "runtime.ticksPerSecond", "runtime.tickspersecond");
	cs_close(&cs);
}

void go_contention_globals_from_code(struct go_target *t)
{
	struct contention_globals c;
	contention_scan(t, &c);
	t->sym_ticksval = c.ticksval;
	if (t->sym_bbuckets || t->sym_xbuckets) {
		t->contention_globals_source = "symtab";
		return;
	}
	if (t->minor < 19 || !c.bbuckets || !c.xbuckets || !c.blockrate || !c.mutexrate) {
		t->contention_globals_source = "none";
		return;
	}
	t->sym_bbuckets = c.bbuckets;
	t->sym_xbuckets = c.xbuckets;
	t->sym_blockrate = c.blockrate;
	t->sym_mutexrate = c.mutexrate;
	t->contention_globals_source = "disasm";
}

/* The block and mutex globals from the code against .symtab's; ticks.val
 * inside runtime.ticks. 1, or 0 and why. */
static int check_contention_globals(const struct go_target *t, char *why, size_t size)
{
	struct contention_globals c;
	contention_scan(t, &c);
	if (c.bbuckets != t->sym_bbuckets || c.xbuckets != t->sym_xbuckets ||
	    c.blockrate != t->sym_blockrate || c.mutexrate != t->sym_mutexrate ||
	    !t->sym_ticks || c.ticksval < t->sym_ticks || c.ticksval >= t->sym_ticks + 64) {
		snprintf(why, size, "go1.%d: bbuckets %#llx (symtab %#llx), xbuckets %#llx (%#llx), "
			 "blockprofilerate %#llx (%#llx), mutexprofilerate %#llx (%#llx), ticks.val %#llx "
			 "(ticks %#llx)", t->minor, (unsigned long long)c.bbuckets,
			 (unsigned long long)t->sym_bbuckets, (unsigned long long)c.xbuckets,
			 (unsigned long long)t->sym_xbuckets, (unsigned long long)c.blockrate,
			 (unsigned long long)t->sym_blockrate, (unsigned long long)c.mutexrate,
			 (unsigned long long)t->sym_mutexrate, (unsigned long long)c.ticksval,
			 (unsigned long long)t->sym_ticks);
		return 0;
	}
	return 1;
}

int go_target_check_heap_globals(const struct go_target *t, char *why, size_t size)
{
	if (!t->sym_mbuckets || !t->sym_mprofcycle || !t->sym_memprofilerate ||
	    strcmp(t->heap_globals_source, "symtab") != 0)
		return -ENOENT;
	struct heap_globals h;
	heap_globals_scan(t, &h);
	uint64_t fing = t->minor == 19 ? t->sym_fingrunning : t->sym_fingstatus;
	if (h.fing != fing || h.gccontroller != t->sym_gccontroller) {
		snprintf(why, size, "go1.%d: finalizer state %#llx (symtab %#llx), gcController %#llx (%#llx)",
			 t->minor, (unsigned long long)h.fing, (unsigned long long)fing,
			 (unsigned long long)h.gccontroller, (unsigned long long)t->sym_gccontroller);
		return 0;
	}
	if (h.mbuckets != t->sym_mbuckets || h.mprofcycle != t->sym_mprofcycle ||
	    h.memprofilerate != t->sym_memprofilerate) {
		snprintf(why, size, "go1.%d: mbuckets %#llx (symtab %#llx), mProfCycle %#llx (%#llx), "
			 "MemProfileRate %#llx (%#llx)", t->minor, (unsigned long long)h.mbuckets,
			 (unsigned long long)t->sym_mbuckets, (unsigned long long)h.mprofcycle,
			 (unsigned long long)t->sym_mprofcycle, (unsigned long long)h.memprofilerate,
			 (unsigned long long)t->sym_memprofilerate);
		return 0;
	}
	return check_contention_globals(t, why, size);
}

struct found {
	uint64_t allgs, allm; /* link-time addresses, 0 if not found */
};

static int scan(const struct go_target *t, pid_t pid, go_read_mem_fn read, void *ctx, struct found *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!t->have_layout || t->L.g_goid < 0 || t->L.g_stack_lo < 0 || t->L.g_stack_hi < 0 ||
	    t->L.g_atomicstatus < 0 || t->L.m_procid < 0 || t->L.m_alllink < 0)
		return -ENOTSUP;
	struct reader r = {read, ctx, READ_BUDGET};
	uint8_t *bss = NULL;
	uint64_t base = 0;
	size_t len = 0;
	int e = copy_bss(t, &r, &bss, &base, &len);
	if (e < 0)
		return e;
	uint64_t allgs = find_allgs(t, &r, bss, base, len);
	uint64_t allm = find_allm(t, &r, bss, len, pid, base);
	free(bss);
	if (r.left == 0)
		return -E2BIG;
	if (!allgs || !allm)
		return -ENOENT;
	ret->allgs = allgs - t->bias;
	ret->allm = allm - t->bias;
	return 0;
}

int go_target_find_globals(struct go_target *t, pid_t pid, go_read_mem_fn read, void *read_ctx)
{
	if (t->sym_allgs && t->sym_allglen && t->sym_allm)
		return 0;
	struct found f;
	int e = scan(t, pid, read, read_ctx, &f);
	t->globals_error = e;
	if (e < 0)
		return e;
	t->sym_allgs = f.allgs;
	/* len(allgs): what runtime.allglen holds, outside allgadd */
	t->sym_allglen = f.allgs + 8;
	t->sym_allgptr = 0;
	t->sym_allm = f.allm;
	t->globals_source = "memory";
	return 0;
}

int go_target_check_globals(const struct go_target *t, pid_t pid, go_read_mem_fn read, void *read_ctx,
			    char *why, size_t size)
{
	if (!t->sym_allgs || !t->sym_allm || strcmp(t->globals_source, "symtab") != 0)
		return -ENOENT;
	struct found f;
	int e = scan(t, pid, read, read_ctx, &f);
	if (e < 0) {
		snprintf(why, size, "go1.%d: not found in memory (%s)", t->minor, strerror(-e));
		return 0;
	}
	if (f.allgs != t->sym_allgs || f.allm != t->sym_allm) {
		snprintf(why, size, "go1.%d: allgs %#llx (symtab %#llx), allm %#llx (symtab %#llx)", t->minor,
			 (unsigned long long)f.allgs, (unsigned long long)t->sym_allgs,
			 (unsigned long long)f.allm, (unsigned long long)t->sym_allm);
		return 0;
	}
	return 1;
}
