/*
 * snapshot_out: write a thread snapshot (threads.txt + threads.pprof) from
 * a process capture, after the target has been released.
 */
#ifndef DIAG_CMD_SNAPSHOT_OUT_H
#define DIAG_CMD_SNAPSHOT_OUT_H

#include "attach/attach.h"
#include "bundle/bundle.h"
#include "symbolize/symbolize.h"
#include "attach/unwind.h"

/* The unwound stack of one captured thread (parallel to pc->threads). */
struct unwound_stack {
	uint64_t pcs[UNWIND_MAX_FRAMES_DEFAULT];
	size_t n;
	bool truncated;
};

/* Unwind every captured thread of pc into stacks[0..pc->nthreads). Must run
 * while the target is alive (unwind tables are read from it). */
void snapshot_unwind(const struct process_capture *pc, struct unwinder *uw,
		     struct unwound_stack *stacks);

/* Symbolize the stacks (names the symbolizer lacks come from go, if not
 * NULL) and write <prefix>threads.txt and
 * <prefix>threads.pprof into b. prefix is "" or a subdirectory like
 * "leak/open_fds-1/". Returns 0 or -errno (a write error from the bundle is
 * passed through). */
struct go_session;
int snapshot_write(struct bundle *b, const char *prefix, const struct process_capture *pc,
		   const struct unwound_stack *stacks, struct symbolizer *sym,
		   struct go_session *go);

#endif
