/*
 * dump_out: a snapshot for a terminal or a script (diag-attach dump):
 * every thread of one capture, grouped by identical stack, the biggest
 * group first, as text or as one JSON document. It reads only the
 * capture, its unwound stacks and their symbols; it writes nothing but f.
 */
#ifndef DIAG_CMD_ENGINE_DUMP_OUT_H
#define DIAG_CMD_ENGINE_DUMP_OUT_H

#include <stdbool.h>
#include <stdio.h>

#include "attach/attach.h"
#include "symbolize/worker/interp.h"
#include "symbolize/worker/symtab.h"

struct go_session;
struct dump_meta {
	const char *exe;       /* the target's executable path, or NULL */
	const char *comm;      /* the process's name, or NULL */
	size_t interrupted;    /* threads stopped while blocked in a syscall */
	pid_t gil_holder;      /* a CPython thread that held the GIL, 0: none */
	struct go_session *go; /* a Go target's goroutines, for --json; may be NULL */
};

/* Print pc's threads grouped by stack: text (names escaped, as in
 * threads.txt) or, with json, one JSON object (see diag-attach(1), dump).
 * 0, -ENOMEM, or a write error of f (dump_flush_error). */
/* Flush f: 0, -EPIPE (the reader is gone), -ENOSPC/-EDQUOT, or -EIO. */
int dump_flush_error(FILE *f);

int dump_write(FILE *f, bool json, const struct process_capture *pc,
	       const struct unwound_stack *stacks, const struct symtab *st,
	       const struct dump_meta *meta);

#endif
