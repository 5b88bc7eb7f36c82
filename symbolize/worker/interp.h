/*
 * interp: interpretation of captures (unwinding and symbolization) in a
 * separate, sandboxed worker process.
 *
 * libunwind and ELF/DWARF parsers have crashed on hostile files mapped by a
 * target (../shared/research/reliability.md 1.8). The process that holds
 * the target's threads must survive that, so all parsing of the target's
 * binaries happens in a forked worker that has no ptrace rights (seccomp),
 * no new privileges, no core dumps, and dies with us. It is fed the
 * captured registers and stack bytes over a socket and answers with program
 * counters and symbols (two such workers: one unwinds, one symbolizes, so
 * that loading debug info never holds up a tick). If it crashes or hangs, the samples in flight are
 * lost (counted), it is restarted, and the capture goes on; a stack it
 * could not unwind keeps its leaf PC so the sample still counts.
 *
 * Each worker is sandboxed (sandbox.h: no privilege, its own namespaces,
 * an allowlist filter) and reaches the target's files only through a
 * broker it starts first (broker.h); what the kernel shows of that for a
 * live worker goes into the manifest (interpretation.sandbox).
 *
 * When the worker cannot be started at all (fork refused), interpretation
 * runs in this process, which the manifest records.
 */
#ifndef DIAG_SYMBOLIZE_WORKER_INTERP_H
#define DIAG_SYMBOLIZE_WORKER_INTERP_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "attach/attach.h"
#include "symbolize/arrays.h"
#include "symbolize/python/pyframes.h"
#include "symbolize/unwind/unwind.h"
#include "symbolize/worker/symtab.h"

/* The unwound stack of one captured thread (parallel to pc->threads):
 * pcs[0] is the exact PC, later entries return addresses. */
struct unwound_stack {
	uint64_t pcs[UNWIND_MAX_FRAMES_DEFAULT];
	size_t n;
	bool truncated;
};

struct interp;

/* Start interpretation for pid. 0 or -ENOMEM. */
int interp_new(pid_t pid, const struct symbolize_options *opts, struct interp **ret);
void interp_free(struct interp *in);

/* Unwind every captured thread of pc into stacks[0..pc->nthreads). Never
 * fails: a lost worker leaves leaf-only, truncated stacks (counted). Must
 * run while the target is alive (unwind tables are read from it). */
void interp_unwind(struct interp *in, const struct process_capture *pc,
		   struct unwound_stack *stacks);

/* Load the target's modules for maps_text now, while the target is alive,
 * so that symbolization still works after it exits. */
void interp_prepare(struct interp *in, const char *maps_text, size_t maps_len);

/* Resolve addrs (already adjusted: return address - 1 for callers) against
 * maps_text. *ret always receives a table (possibly without frames when
 * the worker was lost). 0 or -ENOMEM. */
int interp_symbolize(struct interp *in, const char *maps_text, size_t maps_len,
		     const uint64_t *addrs, size_t n, struct symtab **ret);

/* Start resolving addrs in the background (the symbolization worker keeps
 * what it finds), without waiting: the capture goes on, and a later
 * interp_symbolize of the same addresses is mostly cache hits. Returns
 * false, sending nothing, while an earlier warm-up is still running. */
bool interp_warm(struct interp *in, const char *maps_text, size_t maps_len, const uint64_t *addrs,
		 size_t n);
/* Is a warm-up still running? */
bool interp_warm_busy(struct interp *in);

/* A CPython target's interpreter and, with frames, every thread's Python
 * stack, read by the unwinding worker from the target's memory (never in
 * this process: without a sandbox, status is -ECHILD).
 * status: 0; -ENOENT not a CPython (no python module); -ENODATA a python
 * module without _PyRuntime in its symbols (a stripped static build);
 * -ENOTSUP a version without a layout (hexversion says which when known,
 * 0 before 3.11); -ECHILD no worker; -EBADMSG a reply that made no sense;
 * another -errno from reading its memory. stacks (status 0 with frames) is
 * the caller's to py_stacks_free. Returns 0, or -ENOMEM. */
struct interp_python {
	int status;
	uint32_t hexversion;
	uint64_t eval_start, eval_end; /* _PyEval_EvalFrameDefault, 0 if not found */
	struct py_stacks *stacks;
};
int interp_python(struct interp *in, const char *maps_text, size_t maps_len, bool frames,
		  struct interp_python *ret);

/* A Go target's requests (go_serve.h: the kinds, their bodies and
 * replies), answered by a third worker started on first use and kept at
 * the tool's own priority (some run while every thread is held). *reply is
 * malloc'd (the caller frees it, also when empty). 0; -ECHILD without a
 * sandbox (a Go binary is never parsed in this process) or after too many
 * restarts; -ETIMEDOUT, -EPIPE, ...: the worker was lost (crashed, hung or
 * answered nonsense) and is restarted by the next request. */
int interp_go_call(struct interp *in, uint8_t kind, const struct byte_buf *body, uint8_t **reply,
		   size_t *reply_len, unsigned timeout_ms);

/* The same, but only to a worker already running (-ECHILD if there is
 * none): for the requests made while every thread is held, which must not
 * wait for a new worker to parse the binary. */
int interp_go_call_running(struct interp *in, uint8_t kind, const struct byte_buf *body, uint8_t **reply,
			   size_t *reply_len, unsigned timeout_ms);

/* The target is not a Go program: the Go worker (if started) is stopped,
 * so that it costs nothing for the rest of the capture. Not a loss. */
void interp_go_done(struct interp *in);

/* While a capture stops no one: both workers yield to the target
 * (attach/tool_priority.h: a worker woken by a request runs after, not
 * before, a target thread that woke with it; keep_pace when the sampler
 * falls behind). interp_normal_priority puts both back before the final
 * symbolization. */
void interp_yield_to_target(struct interp *in, bool keep_pace);
void interp_normal_priority(struct interp *in);

/* The unwinding workers' CPU time so far, as of their last reply (each
 * reply carries it: no system call here), 0 if unknown: what a tick costs
 * beyond the tool's own CPU. */
uint64_t interp_unwinder_cpu_ns(struct interp *in);

/* What was lost to workers that died (a crash on a hostile or odd file):
 * stacks kept as their leaf only, and symbol batches whose frames are
 * only module+0xOFF. Each is a warning for the user, never silent. */
struct interp_losses {
	uint64_t worker_restarts, stacks_lost, symbol_batches_lost;
	/* Workers that their sandbox's filter stopped (sandbox.h), and the
	 * last call it stopped (-1: none). */
	uint64_t denied;
	int32_t denied_syscall;
};
void interp_losses(const struct interp *in, struct interp_losses *ret);

/* {worker_cpu_ms, sandboxed, sandbox {uid, cap_eff, no_new_privs, seccomp,
 * namespaces, ...}, worker_restarts, stacks_lost, symbol_batches_lost,
 * symbols}: worker_cpu_ms is the live workers' CPU so far, which the tool's own
 * rusage lacks (they are not waited for at the end). */
void interp_describe(const struct interp *in, cJSON *o);

#endif
