/*
 * go_serve: a Go target's runtime, read in the sandboxed worker.
 *
 * A Go binary's ELF, DWARF, .gopclntab, buildinfo and moduledata, and the
 * runtime's memory (g structs, stacks, labels, heap buckets) are all the
 * target's to forge. None of it is parsed in the process that holds the
 * target's threads: a third interpretation worker (interp_go_call) keeps
 * the parsed binary and the last goroutine capture, and answers these
 * requests. It reads the target's memory itself (process_vm_readv), also
 * while the tool holds every thread (GO_REQ_HELD), so it is never lowered
 * in priority. The tracer gets back only bytes it writes to the bundle as
 * they are, manifest JSON it copies with limits (go_json_copy), numbers,
 * and frames it checks (go_names_decode).
 *
 * Every request body starts with u32 ns_pid (the target's pid in its own
 * namespace, to find a stripped binary's globals by its main thread): a
 * worker restarted after a crash opens the target again on its first
 * request, so a lost worker costs that capture, not the session.
 *
 *   GO_REQ_OPEN      -> i32 status (0 a Go program; -ENOTSUP not one;
 *                       -errno), u32 goroutines listable, u32 len, the
 *                       manifest's target.go object as JSON
 *   GO_REQ_ARM       -> empty (the worker faults in the heap the next
 *                       capture will fill while every thread is held)
 *   GO_REQ_HELD      u32 ms, u32 n, n x {u32 tid, u64 pc, sp, fp, fs_base}
 *                    -> i32 goroutine capture status, i32 heap status
 *                       (called while every thread is held: copies only,
 *                       and stops after ms, 0: no limit, leaving out what
 *                       it has not read; the tracer releases the target
 *                       soon after, answered or not)
 *   GO_REQ_RELEASED  -> empty (the parked goroutines' stacks copied)
 *   GO_REQ_WRITE     the symbol table (symtab_encode), for the profiles'
 *                    mappings -> u32 len + JSON {goroutine_capture,
 *                       heap_profile, block_profile, mutex_profile}, then
 *                       the members to write, each {u32 len + name, u32 len
 *                       + bytes}: goroutine.txt, goroutine.labels.txt,
 *                       goroutine.pprof, threadcreate.pprof, heap.pprof,
 *                       allocs.pprof, block.pprof, mutex.pprof (the
 *                       profiles gzipped pprof), those there are
 *   GO_REQ_DUMP_TEXT -> u64 goroutines shown, u64 the runtime's own left
 *                       out, u32 len, the debug=2 text (all 0: none)
 *   GO_REQ_DUMP_JSON -> u32 len, JSON {goroutines_total, goroutines} (len 0:
 *                       none)
 *   GO_REQ_COUNTERS  -> i64 goroutines, i64 heap live bytes (-1 unknown)
 *   GO_REQ_NAMES     u32 n, n x u64 address -> go_names_decode's format
 */
#ifndef DIAG_SYMBOLIZE_WORKER_GO_SERVE_H
#define DIAG_SYMBOLIZE_WORKER_GO_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "symbolize/symbolize.h"
#include "symbolize/worker/wire.h"

enum go_request {
	GO_REQ_OPEN = 'g',
	GO_REQ_ARM = 'a',
	GO_REQ_HELD = 'h',
	GO_REQ_RELEASED = 'r',
	GO_REQ_WRITE = 'o',
	GO_REQ_DUMP_TEXT = 'd',
	GO_REQ_DUMP_JSON = 'j',
	GO_REQ_COUNTERS = 'c',
	GO_REQ_NAMES = 'n',
};

/* Limits of what the tracer accepts back. */
#define GO_NAMES_MAX_FRAMES 64     /* frames per address (inlined ones included) */
#define GO_NAMES_MAX_STRING 4096   /* bytes of a function or file name */
#define GO_JSON_MAX_STRING 1024    /* bytes of a string copied into the manifest */

/* ---- worker side ---- */

struct go_served;

/* Is kind a Go request? */
bool go_serve_handles(uint8_t kind);

/* Answer one request into out. *state is the worker's Go state (NULL at
 * first; opened on demand). Never fails: what went wrong is in the reply. */
void go_serve(struct go_served **state, pid_t pid, uint8_t kind, struct cursor *c,
	      struct byte_buf *out);

/* ---- tracer side ---- */

/* The frames a GO_REQ_NAMES reply gives one address, as go_names_decode
 * keeps them (strings owned by the go_names). */
struct go_names;

/* Decode a GO_REQ_NAMES reply for n addresses, checking every count and
 * length. 0; -EBADMSG malformed; -ENOMEM. The caller frees *ret. */
int go_names_decode(const uint8_t *reply, size_t len, const uint64_t *addrs, size_t n,
		    struct go_names **ret);
void go_names_free(struct go_names *names);

/* Up to max frames of addr (innermost first), valid until go_names_free;
 * 0 if the reply named none. */
size_t go_names_frames(const struct go_names *names, uint64_t addr, struct sym_frame *out,
		       size_t max);

/* Copy into dst the members of the JSON object text (from the worker)
 * whose values are scalars or objects of scalars, a string longer than
 * GO_JSON_MAX_STRING clipped, at most 64 members per object: the worker may
 * be confused, the manifest must stay the manifest. 0, -EBADMSG (not a
 * JSON object), -ENOMEM. */
int go_json_copy(cJSON *dst, const char *text, size_t len);

#endif
