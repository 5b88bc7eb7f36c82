/* SPDX-License-Identifier: MIT */
/* Private to symbolize/go: shared between target.c, pclntab.c, capture.c
 * and traceback.c. Nothing outside this folder includes it. */
#ifndef DIAG_SYMBOLIZE_GO_INTERNAL_H
#define DIAG_SYMBOLIZE_GO_INTERNAL_H

#include "goroutines.h"

#include <gelf.h>
#include <libelf.h>

/* Run-time status values (runtime2.go); 0-9 stable from Go 1.0; 1.26 added
 * _Gleaked (a goroutine the leak detector found) and _Gdeadextra (the g
 * of a cgo extra M waiting for a callback: dead to every dump). */
enum {
	G_IDLE = 0, G_RUNNABLE = 1, G_RUNNING = 2, G_SYSCALL = 3, G_WAITING = 4,
	G_DEAD = 6, G_COPYSTACK = 8, G_PREEMPTED = 9, G_LEAKED = 10, G_DEADEXTRA = 11,
	G_SCAN = 0x1000,
};

/* funcFlag bits (symtab.go, 1.17+). */
enum { FUNCFLAG_TOPFRAME = 1, FUNCFLAG_SPWRITE = 2, FUNCFLAG_ASM = 4 };

/* FUNCDATA / PCDATA indices: stable from 1.18 to tip. */
enum { PCDATA_INLTREE = 2, PCDATA_ARGLIVE = 3, FUNCDATA_INLTREE = 3, FUNCDATA_ARGINFO = 5, FUNCDATA_ARGLIVE = 6 };

/* Field offsets, from DWARF (or the 1.19 table). -1 = absent. */
/* Words of m.createstack, every release. */
#define GO_CREATESTACK 32

struct go_layout {
	int g_stack_lo, g_stack_hi, g_m, g_sched_sp, g_sched_pc, g_sched_bp;
	int g_syscallsp, g_syscallpc, g_atomicstatus, g_goid, g_waitsince, g_waitreason;
	int g_lockedm, g_gopc, g_startpc, g_labels, g_parentgoid;
	size_t g_read;  /* bytes of g to copy: covers every field above */
	int m_procid, m_curg, m_alllink, m_vdsosp, m_vdsopc;
	int m_createstack;  /* [32]uintptr: callers() of the M's creation */
	size_t m_read;
	int md_gofunc, md_text;     /* runtime.moduledata */
	/* runtime.NumGoroutine(): sched.gFree.n, sched.ngsys, p.gFree.n */
	int sched_gfree_n, sched_ngsys, p_gfree_n;
	int gc_heaplive;  /* runtime.gcControllerState.heapLive (1.18+) */
};

/* Heap-profile bucket layouts (mprof.go), from DWARF or the 1.19 table;
 * used by heap.c. -1 = absent. */
struct go_heap_layout {
	int bucket_size;            /* sizeof(runtime.bucket): the stack follows it */
	int b_allnext, b_typ, b_size, b_nstk;
	int mr_active, mr_future;   /* runtime.memRecord */
	int cyc_size;               /* sizeof(runtime.memRecordCycle) */
	/* alloc_bytes/free_bytes are absent in a 2026 development snapshot of
	 * the runtime (recipe §4.3): bytes = count * bucket.size there */
	int cyc_allocs, cyc_frees, cyc_alloc_bytes, cyc_free_bytes;
};

/* The built-in layouts of Go release 1.minor (layouts.c): true and *L,
 * *H set if there is a row for it. */
bool go_layout_for_version(int minor, struct go_layout *L, struct go_heap_layout *H);

/* A decoded runtime._func (the fields we use). */
struct go_func {
	const uint8_t *raw;  /* the _func in the file image */
	uint64_t entry;      /* link-time address */
	int32_t nameoff;
	uint32_t pcsp, pcfile, pcln, npcdata, cu_offset;
	int32_t start_line;
	uint8_t funcid, flag, nfuncdata;
};

struct go_load {
	uint64_t vaddr, offset, filesz;
};

struct go_target {
	int fd;
	const uint8_t *map;
	size_t map_len;
	Elf *elf;
	char version[32];
	int minor;  /* 19 for go1.19.x */
	uint64_t bias;
	struct go_load loads[16];
	size_t nloads;

	/* pclntab (all pointers into the file image) */
	const uint8_t *pcln;
	size_t pcln_len;
	uint64_t pcln_addr; /* link-time address of the pcHeader */
	uint32_t magic;
	uint64_t nfunc, text_start;
	const uint8_t *funcnametab, *cutab, *filetab, *pctab, *ftab;
	size_t funcnametab_len, cutab_len, filetab_len, pctab_len, ftab_len;
	uint64_t gofunc;      /* link address of go.func.*, 0 if unknown */
	size_t func_size;     /* sizeof(_func): 40 (1.18/19) or 44 (1.20+) */
	size_t inl_size;      /* sizeof(inlinedCall): 20 or 16 */
	int fid_wrapper, fid_gopanic, fid_sigpanic, fid_panicwrap, fid_asyncpreempt, fid_debugcall;

	/* runtime globals (link addresses, 0 if absent) */
	uint64_t sym_allglen, sym_allgptr, sym_allgs, sym_allm, sym_fingrunning, sym_fingstatus;
	uint64_t sym_sched, sym_allp, sym_gccontroller;
	/* where allgs/allglen/allm came from: "symtab", "memory" (globals.c,
	 * for a binary without .symtab) or "none"; globals_error is why the
	 * search in memory failed (0 if it did not) */
	const char *globals_source;
	int globals_error;
	/* where mbuckets, mProfCycle and MemProfileRate came from: "symtab",
	 * "disasm" (globals.c) or "none" */
	const char *heap_globals_source;
	/* heap profile (heap.c): mProfCycle is 1.19+; 1.18 has mProf.cycle */
	uint64_t sym_mbuckets, sym_mprofcycle, sym_mprof, sym_memprofilerate, sym_disablememprof;
	/* block and mutex profiles (contention.c): the bucket lists, the
	 * rates, and runtime.ticks.val (cputicks per second, 0 until the
	 * runtime measured it), from .symtab or the code (globals.c; ticks.val
	 * always from the code: .symtab names only the struct) */
	uint64_t sym_bbuckets, sym_xbuckets, sym_blockrate, sym_mutexrate, sym_ticksval;
	uint64_t sym_ticks; /* .symtab only: the tests check sym_ticksval against it */
	const char *contention_globals_source;
	char **waitreasons;
	size_t nwaitreasons;
	struct go_layout L;
	bool have_layout;
	const char *layout_source; /* "dwarf", "table" (layouts.c) or "none" */
	struct go_heap_layout HL;
	bool have_heap_layout;
};

/* globals.c: the heap profile's globals of a binary without .symtab,
 * from the instructions of the runtime functions that read them. */
void go_heap_globals_from_code(struct go_target *t);
/* The same for the block and mutex profiles' globals (and always
 * runtime.ticks.val): sets contention_globals_source. */
void go_contention_globals_from_code(struct go_target *t);

/* image.c: file image bytes at a link-time address, or NULL if not
 * backed by the file (every length bounds-checked against the mapping). */
const uint8_t *go_file_at(const struct go_target *t, uint64_t addr, size_t len);
/* image.c: the section called name, its header in *ret_shdr; NULL if none. */
Elf_Scn *go_find_section(Elf *elf, const char *name, GElf_Shdr *ret_shdr);

/* pclntab.c */
int go_pclntab_init(struct go_target *t);
bool go_findfunc(const struct go_target *t, uint64_t linkpc, struct go_func *ret);
/* The link-time [entry, end) of the function called name. */
bool go_func_by_name(const struct go_target *t, const char *name, uint64_t *ret_entry, uint64_t *ret_end);
int32_t go_pcvalue(const struct go_target *t, const struct go_func *f, uint32_t off, uint64_t linkpc);
int32_t go_pcdata(const struct go_target *t, const struct go_func *f, uint32_t table, uint64_t linkpc);
uint64_t go_funcdata(const struct go_target *t, const struct go_func *f, uint8_t idx);
const char *go_funcname_off(const struct go_target *t, int32_t nameoff);
const char *go_funcname(const struct go_target *t, const struct go_func *f);
const char *go_funcline(const struct go_target *t, const struct go_func *f, uint64_t linkpc, int *ret_line);
/* Link address of funcdata idx, 0 if none. */
/* One inlinedCall: returns false if ix is out of range. */
struct go_inl {
	uint8_t funcid;
	int32_t nameoff, parent_pc, start_line;
};
bool go_inltree_at(const struct go_target *t, uint64_t tree, int32_t ix, struct go_inl *ret);
/* Appends the name as the runtime prints it (the [...] rule) to buf. */
void go_print_name(const char *name, char *buf, size_t len);

/* ---- snapshot ---- */

/* One physical frame found by the unwinder (link-time pc). */
struct go_pframe {
	uint64_t pc, sp, fp;
	bool trap;  /* pc is not a return address: innermost trap PC, or after sigpanic */
};

struct go_labelset {
	uint64_t ptr;            /* g.labels value, the interning key */
	struct go_label *labels; /* sorted as Go's labelMap.String() */
	size_t n;
	char *text;              /* "{\"k\":\"v\", ...}" as debug=1 prints it */
};

struct go_g {
	uint64_t addr, goid, gopc, startpc, lockedm, labels, m, parent_goid;
	int64_t waitsince;
	uint64_t sched_pc, sched_sp, syscall_pc, syscall_sp, stack_lo, stack_hi;
	uint32_t status;
	uint8_t waitreason;
	bool readable;  /* the g struct itself was read */
	bool user;      /* not dead, not a system goroutine: shown by Go's dumps */
	/* where unwinding starts (run-time addresses) */
	bool have_start, start_trap;
	uint64_t start_pc, start_sp;
	/* the copy of [start_sp, copy_end) */
	size_t copy_off, copy_len;
	bool copy_ok, truncated;
	bool deferred;  /* stack left for go_capture_parked() */
	int labelset;   /* index into snapshot lsets, -1 if none */
	/* after unwinding */
	struct go_pframe *frames;
	size_t nframes;
	uint64_t *pcs;  /* Go's pcbuf (run-time addresses) */
	size_t npcs;
	uint64_t *locs; /* pprof Location addresses (run-time) */
	size_t nlocs;
};

struct go_snapshot {
	struct go_target *t;
	struct go_g *gs;
	size_t ngs;
	uint8_t *arena;
	size_t arena_len;
	struct go_labelset *lsets;
	size_t nlsets;
	int64_t nanotime;  /* CLOCK_MONOTONIC at capture = the target's nanotime() */
	bool fing_running;
	/* Each M's createstack (GO_CREATESTACK words, 0-padded), in allm order:
	 * the threadcreate profile. */
	uint64_t *createstacks;
	size_t ncreatestacks;
	struct go_capture_stats stats;
	bool unwound;
	bool deferred_pending; /* go_capture_parked() still to run */
};

/* A stack of return PCs (link-time) as runtime/pprof's profileBuilder
 * makes Locations of it (appendLocsForStack, after
 * expandFinalInlineFrame): the run-time address of each Location, into
 * out, which has room for n + 1000. Returns how many. heap.c. */
size_t go_pprof_locations(const struct go_target *t, const uint64_t *stk, size_t n, uint64_t *out);

/* A double read from the target (a count, a scaled value) as int64,
 * saturating where C's conversion would be undefined; NaN is 0. heap.c. */
int64_t go_clamp_to_int64(double v);

/* little-endian readers */
static inline uint64_t go_u64(const void *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, 8);
	return v;
}
static inline uint32_t go_u32(const void *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, 4);
	return v;
}

#endif
