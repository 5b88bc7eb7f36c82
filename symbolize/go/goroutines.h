/* SPDX-License-Identifier: MIT */
#ifndef DIAG_SYMBOLIZE_GO_GOROUTINES_H
#define DIAG_SYMBOLIZE_GO_GOROUTINES_H

/*
 * gosym: every goroutine of a Go process, read from outside.
 *
 * Life cycle (see shared/research/go-goroutines.md for the why):
 *
 *   go_target_open()      while the target still runs: parse the executable
 *                         (ELF symbols, DWARF struct layouts, .gopclntab).
 *   go_capture()          while ALL threads of the target are ptrace-stopped:
 *                         copy the g structs, each live stack and the pprof
 *                         labels through the caller's read callback. Nothing
 *                         expensive is interpreted here; it is the pause.
 *   go_snapshot_unwind()  after the target was released: walk each copied
 *                         stack with the runtime's own pcsp tables.
 *   go_snapshot_write_debug2() / _write_debug1() / _foreach_sample()
 *                         the text of pprof.Lookup("goroutine").WriteTo(w, 2)
 *                         and (w, 1), and the aggregated samples that make
 *                         goroutine.pprof (debug=0).
 *
 * Addresses: every address in this interface is a run-time address in the
 * target (load bias included), except where a comment says otherwise.
 *
 * Errors: functions return 0 (or a count) on success and a negative errno
 * on failure; they never print. Out of memory gives -ENOMEM and leaves the
 * objects consistent (callers may free them).
 *
 * Threads: a go_target is read-only after go_target_open() and
 * go_target_set_bias(), so several threads may symbolize with it at once.
 * A go_snapshot belongs to one thread at a time.
 *
 * Versions: written for linux/amd64, Go 1.18 and later (pclntab magic
 * 0xfffffff0 / 0xfffffff1); tested against 1.19 and 1.21-1.27. Structure
 * layouts come from DWARF, else from a built-in row per release
 * (layouts.c); runtime globals from .symtab, else from the target's memory
 * (go_target_find_globals) and the runtime's code (globals.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct go_target;
struct go_snapshot;

/* ---- target ------------------------------------------------------------ */

/*
 * Opens the executable at exe_path (e.g. "/proc/PID/exe", which works even
 * when the file was deleted) and, if pid > 0, reads /proc/PID/maps to find
 * the load bias of a PIE. pid == 0 means "file only, bias 0" (unit tests,
 * offline symbolization); go_target_set_bias() can set it later.
 *
 * Returns 0 and *ret; -ENOTSUP if the file is not a Go executable or its
 * pclntab format is older than Go 1.18; -ENOENT/-EACCES/... from open(2);
 * -EINVAL on a malformed file. The caller frees *ret with go_target_free().
 * A stripped binary (-s -w) opens fine: symbolization works, and
 * goroutine listing once go_target_find_globals() found runtime.allgs
 * and allm (go_target_can_list_goroutines() says so).
 */
/* exe_path NULL: pid's own executable, opened through
 * symbolize/target_access.h (a sandboxed worker's broker). */
int go_target_open(pid_t pid, const char *exe_path, struct go_target **ret);

/* Frees the target; NULL is a no-op. Snapshots taken from it must be freed first. */
void go_target_free(struct go_target *t);

/* The Go version string, e.g. "go1.19.8"; never NULL ("go1.x?" when only
 * the pclntab era is known). Owned by t. */
const char *go_target_version(const struct go_target *t);

/* Sets the load bias (run-time address minus link-time address); 0 for
 * non-PIE executables. go_target_open(pid > 0) already did this. */
void go_target_set_bias(struct go_target *t, uint64_t bias);
uint64_t go_target_bias(const struct go_target *t);

/* True if the target has what go_capture() needs: the runtime's globals
 * (.symtab, or go_target_find_globals()) and the g/m layouts (DWARF, or
 * the built-in row of its release). */
bool go_target_can_list_goroutines(const struct go_target *t);

/* Where the heap profile's runtime globals (mbuckets, mProfCycle,
 * MemProfileRate) came from: "symtab", "disasm" (the instructions of the
 * runtime functions that read them, for a binary without .symtab) or
 * "none". Static. */
const char *go_target_heap_globals_source(const struct go_target *t);

/* For the tests: on a binary with .symtab, do the instructions give the
 * addresses .symtab gives (the three above, the finalizer goroutine's
 * state, runtime.fingStatus or fingRunning, and the block and mutex
 * profiles' bbuckets, xbuckets, their rates and runtime.ticks.val)? 1 yes; 0 no, and why says what they gave;
 * -ENOENT when there is no .symtab to compare with. */
int go_target_check_heap_globals(const struct go_target *t, char *why, size_t size);

/* Where the struct layouts came from: "dwarf", "table" (a built-in row of
 * its Go release, for a binary without DWARF) or "none". Static. */
const char *go_target_layout_source(const struct go_target *t);

/* Why goroutines cannot be listed, in words for the manifest, or NULL if
 * they can. Static. */
const char *go_target_goroutines_unreadable_because(const struct go_target *t);

/* For the tests: does the layout the target's DWARF gives equal the
 * built-in row of its Go release? 1 yes; 0 no, and why names the first
 * field that differs; -ENOENT when there is no DWARF layout or no row. */
int go_target_check_layout_table(const struct go_target *t, char *why, size_t size);

/* One logical frame: a function, or a call inlined into it. */
struct go_frame {
	const char *function;  /* as the runtime prints it ("main.F[...]"); valid during the callback */
	/* The full symbol name, shape arguments kept ("main.F[go.shape.int]"):
	 * the Function name of runtime/pprof's profiles from 1.21 on
	 * (runtime_FrameSymbolName); 1.19 and 1.20 store the printed form.
	 * Owned by t. */
	const char *symbol_name;
	const char *file;      /* "?" if unknown; owned by t (valid until go_target_free) */
	int line;              /* 0 if unknown */
	int start_line;        /* line of the func keyword; 0 before Go 1.20 */
	uint64_t entry;        /* run-time entry of the physical function */
	bool inlined;          /* true for all but the last (outermost) frame */
	/* A compiler-generated wrapper (a go statement's gowrapN, a method
	 * value's -fm...) that runtime.CallersFrames leaves out, so runtime/pprof
	 * never shows it: a profile writer skips it to match Go's own. */
	bool pprof_elided;
};

/* Return non-zero to stop; that value is then returned by the caller. */
typedef int (*go_frame_fn)(void *ctx, const struct go_frame *frame);

/*
 * Symbolizes addr exactly (no "-1" for return addresses: pass the address
 * of the call instruction, e.g. return address - 1, as for any PC-to-line
 * lookup), expanding inlined calls: cb is called innermost first, the
 * physical function last. Works from .gopclntab alone, so stripped Go
 * binaries symbolize too. Returns the number of frames (0: addr is not in
 * Go code), or cb's non-zero return value.
 */
int go_target_symbolize_pc(const struct go_target *t, uint64_t addr, go_frame_fn cb, void *ctx);

/* At most this many inlined frames per PC (then the physical one). */
#define GO_MAX_INLINE_DEPTH 128

/* ---- capture (inside the pause) ---------------------------------------- */

/* One contiguous range of target memory to copy into buf. */
struct go_mem_range {
	uint64_t addr;
	void *buf;
	size_t len;
};

/* The most ranges go_capture() passes in one call (IOV_MAX). */
#define GO_READ_MAX_RANGES 1024

/*
 * Reads every range completely (process_vm_readv with one iovec pair per
 * range is the intended implementation; split as the kernel requires).
 * Returns 0 when all ranges were read in full, a negative errno otherwise;
 * on failure go_capture() retries the ranges one by one, so a callback may
 * be simple and all-or-nothing.
 */
typedef int (*go_read_mem_fn)(void *ctx, const struct go_mem_range *ranges, size_t n);

/*
 * A binary without .symtab (-ldflags=-s): finds runtime.allgs and
 * runtime.allm in the running target's memory (its .bss, read through
 * read), checked by what they point to (symbolize/go/globals.c). ns_pid is
 * the target's pid in its own pid namespace (what its threads' gettid()
 * returns; 0 if unknown: one check less). Call it after go_target_open()
 * and before the first go_capture(); the target may be running. A no-op
 * returning 0 when .symtab gave them. 0: goroutines can be listed (if the
 * layouts are known); -ENOENT not found; -ENOTSUP no layout to check them
 * with; -E2BIG the search read more than any real program needs (a
 * hostile .bss) and gave up; -EIO/-EFAULT/... from read.
 */
int go_target_find_globals(struct go_target *t, pid_t ns_pid, go_read_mem_fn read, void *read_ctx);

/* Where runtime.allgs and allm came from: "symtab", "memory" (found by
 * go_target_find_globals()) or "none". */
const char *go_target_globals_source(const struct go_target *t);

/* For the tests: on a binary with .symtab, does the search in memory find
 * the addresses .symtab gives? 1 yes; 0 no, and why says what it found;
 * -ENOENT when there is no .symtab to compare with. */
int go_target_check_globals(const struct go_target *t, pid_t ns_pid, go_read_mem_fn read, void *read_ctx,
			    char *why, size_t size);

/* One stopped OS thread of the target. */
struct go_thread_regs {
	pid_t tid;
	uint64_t pc;       /* rip */
	uint64_t sp;       /* rsp */
	uint64_t fp;       /* rbp */
	uint64_t fs_base;  /* TLS base; kept for TLS-based g lookup, unused on 1.19 */
};

/* What one capture may take of the worker's memory for its goroutines:
 * the g structs copied and their bookkeeping, and the stacks copied, each
 * up to this. runtime.allglen is the target's to forge (a hostile one says
 * 1,000,000 and costs a reader that trusts it gigabytes and seconds of
 * the target held): the goroutines read are what this budget allows
 * (about 200,000 g structs of Go 1.19), whatever the target says.
 * go_capture_heap_hint() stays within it too. */
#define GO_CAPTURE_BUDGET_BYTES (256u << 20)

/* Caps on what one capture copies; all can be raised by the caller. */
struct go_capture_limits {
	size_t max_stack_bytes;   /* per goroutine, from sp upwards; default 64 KiB */
	/* The most goroutines read, default 10,000,000; the budget below
	 * usually binds first. More in runtime.allglen is not an error: the
	 * first ones are read, and stats.cut says why not all. */
	size_t max_goroutines;
	size_t max_labels;        /* label pairs per goroutine; default 1000 */
	/* Bytes of memory for the g structs (with their bookkeeping) and,
	 * apart, for the stacks copied; default GO_CAPTURE_BUDGET_BYTES. */
	size_t max_bytes;
	/* CLOCK_MONOTONIC time by which go_capture() returns, 0: none. Past
	 * it, goroutines not yet read are left out and stacks not yet copied
	 * print "stack unavailable" (stats.cut = GO_CUT_DEADLINE): a slow
	 * read costs goroutines, never the hold of the caller, who may have
	 * a watchdog behind it. */
	uint64_t deadline_ns;
	/* Leave the stacks of parked goroutines (_Gwaiting) for
	 * go_capture_parked() after the target is released. Pinning each
	 * stack's pages is most of a large capture (about 2 us per goroutine:
	 * 20 ms of pause for 10,000), and a parked goroutine's stack cannot
	 * change until something wakes it. */
	bool defer_parked_stacks;
};

/*
 * Copies the goroutine state of the stopped target. Every thread of the
 * target must be stopped; threads lists their registers (nthreads may be 0:
 * running goroutines then print "stack unavailable"). limits may be NULL.
 * The snapshot keeps a pointer to t (free the snapshot first).
 *
 * Cost: a handful of read batches: the counters, allgs, the g structs
 * (~400 bytes each), the M list, one range per live stack, and the label
 * maps (one chain of small reads per distinct label set).
 *
 * Returns 0 and *ret; -ENOTSUP if !go_target_can_list_goroutines(t);
 * -EIO/-EFAULT if the runtime globals cannot be read; -ENOMEM. A
 * runtime.allglen past what limits allow, or past len(runtime.allgs)
 * (which it always equals in a real runtime), is no error: the goroutines
 * that fit are read and stats.cut says why the rest were not.
 * Goroutines whose g or stack cannot be read are kept and printed as
 * "stack unavailable" rather than failing the capture.
 */
int go_capture(struct go_target *t, go_read_mem_fn read, void *read_ctx,
	       const struct go_thread_regs *threads, size_t nthreads,
	       const struct go_capture_limits *limits, struct go_snapshot **ret);

/*
 * An upper estimate, from allglen read now (the target need not be
 * stopped) and never more than GO_CAPTURE_BUDGET_BYTES, of the heap
 * memory the next go_capture() allocates; 0 if it cannot be read. Fresh pages cost a fault each inside the pause (a few
 * microseconds apiece on a virtual machine, ~10 ms for 10,000 goroutines),
 * so a caller can fault this much heap in before it stops the target.
 */
size_t go_capture_heap_hint(struct go_target *t, go_read_mem_fn read, void *read_ctx);

/*
 * With limits.defer_parked_stacks: copies the stacks go_capture() left,
 * with the target running again, then reads each of those g structs once
 * more. A goroutine whose status, saved sp/pc or stack bounds changed in
 * between (it was woken, ran, or its stack moved) keeps no stack: it prints
 * "stack unavailable" and counts in stats.stacks_changed, rather than show
 * a stack from after the snapshot or a torn one. The one case this check
 * cannot see is a goroutine that woke, ran and parked again at the very
 * same sp and pc within that window; its callers are then almost surely
 * the same, since only they put that pc at that depth. Returns 0 or
 * -ENOMEM; a no-op without deferred stacks.
 */
int go_capture_parked(struct go_snapshot *s, go_read_mem_fn read, void *read_ctx);

/* Why a capture read fewer goroutines than runtime.allglen says. */
enum go_capture_cut {
	GO_CUT_NONE = 0,
	GO_CUT_ALLGS,      /* allglen is past len (or cap) of runtime.allgs: forged */
	GO_CUT_LIMIT,      /* past max_goroutines or the max_bytes budget */
	GO_CUT_UNREADABLE, /* the array of g pointers ends before allglen (unmapped) */
	GO_CUT_DEADLINE,   /* deadline_ns passed */
};

/* Figures about one capture, for the manifest and benchmarks. */
struct go_capture_stats {
	uint64_t pause_ns;        /* wall time spent inside go_capture() */
	/* The entries of allgs examined: g structs, dead ones included
	 * (allglen_claimed, unless cut). */
	size_t allglen;
	size_t allglen_claimed;   /* runtime.allglen as read */
	int64_t allgs_len;        /* len(runtime.allgs), -1 unknown */
	size_t read_limit;        /* the most goroutines max_goroutines and max_bytes allow */
	enum go_capture_cut cut;  /* why allglen < allglen_claimed, the first reason */
	size_t stacks_over_budget; /* stacks not copied: max_bytes of stacks reached */
	size_t stacks_past_deadline; /* stacks not copied: deadline_ns passed */
	size_t goroutines;        /* live ones (not _Gdead), system ones included */
	size_t user_goroutines;   /* the ones Go's own dump shows */
	size_t read_calls;        /* calls of the read callback */
	size_t bytes_read;
	size_t stacks_truncated;  /* stacks longer than max_stack_bytes */
	size_t unreadable;        /* g structs or stacks whose read failed, g structs
				   * whose status no runtime has (not a g) */
	size_t stacks_deferred;   /* parked stacks left for go_capture_parked() */
	size_t stacks_changed;    /* of those, goroutines that ran before the copy */
	uint64_t parked_ns;       /* wall time of go_capture_parked() */
};
void go_snapshot_stats(const struct go_snapshot *s, struct go_capture_stats *ret);

void go_snapshot_free(struct go_snapshot *s);

/* ---- after release ----------------------------------------------------- */

/* Unwinds every goroutine from its copied stack. Idempotent; the writers
 * below call it when needed. Returns 0 or -ENOMEM. */
int go_snapshot_unwind(struct go_snapshot *s);

/*
 * Writes the text of pprof.Lookup("goroutine").WriteTo(w, 2) (that is,
 * runtime.Stack(buf, true)) as of the capture: goroutines in allgs order,
 * system goroutines left out, wait minutes computed against the capture
 * time. Goroutines that were on a CPU print [running] with the stack from
 * their thread's registers. Returns 0, -EIO on a write error, or -ENOMEM.
 */
int go_snapshot_write_debug2(struct go_snapshot *s, FILE *out);

/* Writes the text of WriteTo(w, 1): counts per distinct stack and label
 * set, tab-aligned as Go's text/tabwriter does. Returns as above. */
int go_snapshot_write_debug1(struct go_snapshot *s, FILE *out);

struct go_label {
	const char *key;
	const char *value;
};

/*
 * One aggregated goroutine stack, as goroutine.pprof (debug=0) has it.
 *   locs:   one address per physical frame, innermost first, with
 *           runtime.goexit dropped. Each is the address to symbolize
 *           as is (return address - 1, or the trap PC), i.e. the pprof
 *           Location.address; go_target_symbolize_pc(locs[i]) gives its
 *           Location lines (inline frames innermost first).
 *   pcs:    the runtime's own PC list for this stack (return addresses,
 *           inline levels expanded, goexit included), what Go keys on.
 *   labels: sorted as Go's debug=1 prints them; has_labels is true when
 *           the goroutine had a label set, even an empty one.
 * Everything is owned by the snapshot and valid until it is freed.
 */
struct go_sample {
	size_t count;
	const uint64_t *locs;
	size_t nlocs;
	const uint64_t *pcs;
	size_t npcs;
	const struct go_label *labels;
	size_t nlabels;
	bool has_labels;
};

typedef int (*go_sample_fn)(void *ctx, const struct go_sample *sample);

/* Calls cb for each distinct (stack, labels) in Go's order (count
 * descending, then key). Returns 0, -ENOMEM, or cb's non-zero return. */
int go_snapshot_foreach_sample(struct go_snapshot *s, go_sample_fn cb, void *ctx);

/* ---- cheap counters (timeline) ------------------------------------------ */

/*
 * Reads the number of goroutines the way runtime.NumGoroutine() counts
 * them, without stopping the target (a racy but consistent-enough read of
 * allglen and the free lists), in two batched reads. heap_live is the
 * runtime's gcController.heapLive (bytes live after the last GC plus those
 * allocated since), -1 when the layout is unknown (no DWARF). Without
 * DWARF the goroutine count falls back to allglen (dead ones included).
 * Either output pointer may be NULL. Returns 0, -ENOTSUP (no symbols), -EIO.
 */
int go_read_counters(struct go_target *t, go_read_mem_fn read, void *read_ctx,
		     int64_t *ret_goroutines, int64_t *ret_heap_live);

#endif
