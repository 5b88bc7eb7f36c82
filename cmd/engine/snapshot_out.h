/*
 * snapshot_out: write a thread snapshot (threads.txt + threads.pprof) from
 * a process capture, after the target has been released.
 */
#ifndef DIAG_CMD_ENGINE_SNAPSHOT_OUT_H
#define DIAG_CMD_ENGINE_SNAPSHOT_OUT_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "attach/attach.h"
#include "bundle/bundle.h"
#include "symbolize/worker/interp.h"
#include "symbolize/worker/symtab.h"

/* Write the stacks, named from st (a Go target's unnamed PCs already
 * named in st by go_session_name_unnamed; meta->main_named_by_go says so
 * in the profile's mapping), as <prefix>threads.txt and
 * <prefix>threads.pprof into b. prefix is "" or a subdirectory like
 * "leak/open_fds-1/". meta->last_tick: pc is a sampling tick's capture, kept
 * because the target exited before a final one could hold it (the header
 * then says so, not "held at once"). Returns 0 or -errno (a write error
 * from the bundle is passed through). */
struct go_session;
struct snapshot_meta {
	bool main_named_by_go;
	bool last_tick;
	const char *exe_path, *invoked_as; /* as in struct profile_spec */
	pid_t gil_holder; /* a CPython thread that held the GIL, 0: none */
};
int snapshot_write(struct bundle *b, const char *prefix, const struct process_capture *pc,
		   const struct unwound_stack *stacks, const struct symtab *st,
		   const struct snapshot_meta *meta);

/* Everything after a capture: unwind pc (in the worker) unless stacks is
 * given (already unwound, e.g. while the target was alive), resolve the
 * symbols, write threads.* (and goroutine.* when go is armed) under prefix.
 * A CPython's frames (py, may be NULL) go into stacks it unwinds itself;
 * given stacks must have been merged already (py_session_merge).
 * The main module's build-id goes into target_json when it is not NULL.
 * With ret_st, the symbol table is handed to the caller (who frees it);
 * with ret_truncated, how many threads' stacks stopped before their
 * outermost frame.
 * Returns 0 or -errno (bundle write errors passed through). */
struct py_session;
int snapshot_finish(struct bundle *b, const char *prefix, const struct process_capture *pc,
		    const struct unwound_stack *stacks, struct interp *in, struct go_session *go,
		    struct py_session *py, cJSON *target_json, struct symtab **ret_st,
		    size_t *ret_truncated);

/* Why a thread of a capture has no stack (st->n == 0), for threads.txt;
 * NULL when it has one. The label is the same reason as the no_stack
 * label of its threads.pprof sample: late, not_seen or unwound_empty. */
const char *snapshot_no_stack_reason(const struct thread_capture *tc,
				     const struct unwound_stack *st);
const char *snapshot_no_stack_label(const struct thread_capture *tc);

/* Resolve the symbols of every frame of stacks (in the worker), and name
 * what a Go target's own tables can (go may be NULL) and a CPython's frames
 * (py, may be NULL). 0 or -errno; the
 * caller frees *ret_st. */
int snapshot_symbolize(const struct process_capture *pc, const struct unwound_stack *stacks,
		       struct interp *in, struct go_session *go, struct py_session *py,
		       struct symtab **ret_st);

/* Print one stack as threads.txt does: a "#N 0xPC  function+0xOFF  (file:line)
 * [inlined]  module" line per frame (inline frames get their own), names
 * escaped, and a last line when unwinding stopped early. */
void snapshot_print_stack(FILE *f, const struct unwound_stack *stack, const struct symtab *st);

/* Add every address snapshot_write will look up to set. 0 or -ENOMEM. */
int snapshot_collect(const struct process_capture *pc, const struct unwound_stack *stacks,
		     struct addrset *set);

#endif
