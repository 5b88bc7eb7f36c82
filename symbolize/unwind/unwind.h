/*
 * unwind: turn a captured thread (registers + stack copy) into an array of
 * program counters, after the target has been released.
 *
 * Uses libunwind's remote interface with our own accessors, and libunwind
 * never opens a file or reads /proc itself:
 *
 *  - registers come from the capture, stack memory from the stack copy
 *    (never from the live stack, which has moved on);
 *  - unwind tables: for the executable mapping holding a PC, the caller's
 *    opener (struct unwind_opener) hands us a descriptor of the mapped
 *    file, once per module. We read the ELF and program headers and the
 *    .eh_frame_hdr and .eh_frame bytes from it (every offset bounds
 *    checked: the file is the target's, so possibly hostile), close it,
 *    and give libunwind a remote table (dwarf_search_unwind_table) whose
 *    bytes our memory accessor serves from that copy;
 *  - any other memory (text, the vdso, JIT code) is read from the live
 *    process (symbolize/target_access.h: process_vm_readv, or a sandboxed
 *    worker's /proc/PID/mem): read-only mappings that do not change.
 *
 * A module the opener refuses, or whose headers or table are unusable, has
 * no tables: its frames are walked by frame pointers. When CFI runs out, a
 * frame-pointer walk over the stack copy continues; a stack that still
 * ended early is "truncated". Nothing here ptraces: every write or resume
 * accessor is refused.
 *
 * An unwinder is not thread-safe (libunwind's accessors reach it through a
 * static pointer): one per thread of control.
 */
#ifndef DIAG_UNWIND_H
#define DIAG_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/attach.h"

#define UNWIND_MAX_FRAMES_DEFAULT 256

/* One executable, file-backed line of the maps text: a module whose unwind
 * tables the unwinder wants. */
struct unwind_module {
	uint64_t start, limit, offset; /* as in the line */
	const char *maps_line;         /* the whole line, without '\n', not NUL-terminated */
	size_t maps_line_len;
};

/* How the unwinder gets at a module's file. open returns a readable
 * descriptor of exactly the file the target has mapped at m (the callee
 * checks that: same device and inode, no symlink or FIFO followed, a
 * regular file), or -errno to refuse it. The unwinder takes ownership of
 * the descriptor and closes it before returning; it also checks that it is
 * a regular file. open is called at most once per module while the module
 * stays in the maps (a refusal is remembered too), so it may be slow. */
struct unwind_opener {
	int (*open)(void *arg, const struct unwind_module *m);
	void *arg;
};

struct unwinder;

/* One unwinder per target process; it caches unwind tables per module
 * across threads and captures. maps_text is the capture's maps snapshot
 * (not kept). opener may be NULL: then no module has tables, and every
 * stack is walked by frame pointers; otherwise *opener is copied, and its
 * arg must outlive the unwinder. Returns 0 or -errno. */
int unwinder_new(pid_t pid, const char *maps_text, size_t maps_len,
		 const struct unwind_opener *opener, struct unwinder **ret);
void unwinder_free(struct unwinder *u);

/* Replace the maps snapshot (a later capture saw new mappings). Tables of
 * modules whose maps line is unchanged are kept; the others are dropped
 * and opened again on first need. Returns 0 or -ENOMEM. */
int unwinder_update_maps(struct unwinder *u, const char *maps_text, size_t maps_len);

/* Unwind tc into pcs[0..*ret_n): pcs[0] is the exact PC of the innermost
 * frame, later entries are return addresses as found on the stack (callers
 * subtract 1 to land inside the call instruction). *ret_truncated is set
 * when the walk stopped before reaching the outermost frame. Returns 0 or
 * -errno (-EINVAL for a thread without captured registers). */
int unwinder_unwind(struct unwinder *u, const struct thread_capture *tc, uint64_t *pcs,
		    size_t max, size_t *ret_n, bool *ret_truncated);

/* On by default: steps through a caller's PC seen before take the
 * register rules held for it (step_cache.h) instead of libunwind's
 * unw_step, with the same result. Off: every step is unw_step, the
 * reference the tests compare the cache with. */
void unwinder_use_step_cache(struct unwinder *u, bool on);

#endif
