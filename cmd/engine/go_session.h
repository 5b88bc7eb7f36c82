/*
 * go_session: the Go part of a capture. For a Go target, read every goroutine
 * while the threads are held (attach's while_held hook), then write
 * goroutine.txt (the runtime's own debug=2 text), goroutine.pprof (its
 * debug=0 profile) and heap.pprof, feed the timeline's goroutine and heap
 * counters, and name Go functions that the ELF/DWARF symbolizer cannot
 * (stripped binaries). The binary and the runtime's memory are parsed by
 * the sandboxed Go worker (symbolize/worker/go_serve.h), never here: this
 * is the client that checks its answers and writes them.
 */
#ifndef DIAG_CMD_ENGINE_GO_SESSION_H
#define DIAG_CMD_ENGINE_GO_SESSION_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "attach/attach.h"
#include "bundle/bundle.h"
#include "symbolize/symbolize.h"
#include "symbolize/worker/interp.h"
#include "symbolize/worker/symtab.h"

struct go_session;

/* NULL when in's target is not a Go program, or there is no sandboxed
 * worker to read it (a Go binary is never parsed in this process). in must
 * outlive the session. ns_pid: the target's pid in its own pid namespace
 * (0 if unknown), to find the runtime's globals of a stripped binary by
 * its main thread. */
struct go_session *go_session_open(struct interp *in, pid_t ns_pid);
void go_session_free(struct go_session *g);

/* Add "go" to the manifest's target object: {version,
 * goroutines_readable, layouts, globals, heap_globals, parsed_in} and, when
 * goroutines cannot be read, goroutines_unreadable_because. */
void go_session_describe(struct go_session *g, cJSON *target);

/* Arm opts so the next capture also copies the goroutines. */
void go_session_arm(struct go_session *g, struct attach_options *opts);

/* Right after the armed capture released the target: copy the stacks of
 * the parked goroutines, which the pause left out (go_capture_parked()).
 * The sooner it runs, the fewer goroutines wake before their copy. */
void go_session_released(struct go_session *g);

/* After the release: write <prefix>goroutine.txt and goroutine.pprof from
 * the goroutines copied during the last armed capture. 0 when there was
 * nothing to write; -errno on a bundle write error. */
int go_session_write(struct go_session *g, struct bundle *b, const char *prefix,
		     const struct symtab *st, cJSON *manifest_go);

/* The one line for the user about the last capture's goroutines, when
 * they were cut short (a forged runtime.allglen, the budget, the time the
 * target could be held) or lost: the manifest's goroutine_capture.warning
 * or .error, the worker's text (print it escaped). NULL when there is
 * nothing to say. Owned by g, valid until the next capture. */
const char *go_session_warning(const struct go_session *g);

/* For diag-attach dump: the goroutines copied during the last armed
 * capture, as the runtime's own debug=2 dump prints them, to f under a
 * heading; returns how many (0: none, or g NULL), -ENOMEM. */
long go_session_print(struct go_session *g, FILE *f);

/* For diag-attach dump --json: the same goroutines as "goroutines" in
 * doc, one entry per distinct (stack, labels) in the runtime's order:
 * {count, labels {k: v}, frames [{function, file, line, inlined}]}, and
 * "goroutines_total" (the runtime's own left out, as in the text). Nothing
 * when g is NULL or listed none. 0 or -ENOMEM. */
int go_session_json(struct go_session *g, cJSON *doc);

/* Cheap counters for the timeline (-1 when unknown). */
void go_session_counters(struct go_session *g, int64_t *goroutines, int64_t *heap_live);

/* Name the addresses of st that the ELF/DWARF symbolizer could not (a
 * stripped Go binary) from the runtime's own tables, once, right after
 * symbolization: the writers then read names from st alone. 0 or -ENOMEM;
 * g NULL is a no-op. */
int go_session_name_unnamed(struct go_session *g, struct symtab *st);

#endif
