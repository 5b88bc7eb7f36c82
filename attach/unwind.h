/*
 * unwind: turn a captured thread (registers + stack copy) into an array of
 * program counters, after the target has been released.
 *
 * Uses libunwind's remote interface with our own accessors: registers come
 * from the capture, stack memory from the stack copy (never from the live
 * stack, which has moved on), and everything else (unwind tables, text)
 * from the live process with process_vm_readv; those are read-only
 * mappings that do not change. Unwind tables are located with libunwind-ptrace's
 * _UPT_find_proc_info, which reads /proc/PID/maps and the mapped ELF files
 * but never ptraces (we never hand it a stopped thread, and every write or
 * resume accessor is refused). When CFI runs out, a frame-pointer walk over
 * the stack copy continues; a stack that still ended early is "truncated".
 */
#ifndef DIAG_UNWIND_H
#define DIAG_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/attach.h"

#define UNWIND_MAX_FRAMES_DEFAULT 256

struct unwinder;

/* One unwinder per target process; it caches unwind tables per module
 * across threads and captures. maps_text is the capture's maps snapshot
 * (copied). Returns 0 or -errno. */
int unwinder_new(pid_t pid, const char *maps_text, size_t maps_len, struct unwinder **ret);
void unwinder_free(struct unwinder *u);

/* Replace the maps snapshot (a later capture saw new mappings). */
int unwinder_update_maps(struct unwinder *u, const char *maps_text, size_t maps_len);

/* Unwind tc into pcs[0..*ret_n): pcs[0] is the exact PC of the innermost
 * frame, later entries are return addresses as found on the stack (callers
 * subtract 1 to land inside the call instruction). *ret_truncated is set
 * when the walk stopped before reaching the outermost frame. Returns 0 or
 * -errno (-EINVAL for a thread without captured registers). */
int unwinder_unwind(struct unwinder *u, const struct thread_capture *tc, uint64_t *pcs,
		    size_t max, size_t *ret_n, bool *ret_truncated);

#endif
