/*
 * py_session: the Python part of a capture. For a CPython target, read every
 * thread's Python frames (in the unwinding worker, from the interpreter's
 * memory) while the threads are held, and put them where each thread's
 * native stack shows the evaluation loop, as py-spy dump --native does:
 * each _PyEval_EvalFrameDefault frame is replaced by the Python frames it
 * was running, innermost first. Python frames are given synthetic program
 * counters (outside any address a process can map) that
 * py_session_name_unnamed names in the symbol table, so threads.txt, the
 * pprof profiles, report and the flame graphs show them with no change.
 */
#ifndef DIAG_CMD_ENGINE_PY_SESSION_H
#define DIAG_CMD_ENGINE_PY_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "attach/attach.h"
#include "symbolize/worker/interp.h"
#include "symbolize/worker/symtab.h"

struct py_session;

/* NULL when t is not a CPython (or on ENOMEM); a CPython whose frames
 * cannot be read still gets a session, which says why in the manifest. */
struct py_session *py_session_open(const struct attach_target *t, struct interp *in);
void py_session_free(struct py_session *p);

/* Add {version, frames_readable[, why]} as "python" to the manifest's
 * target object. */
void py_session_describe(const struct py_session *p, cJSON *target);

/* Arm opts so the next capture reads the Python frames while it holds the
 * threads (nothing when they cannot be read). */
void py_session_arm(struct py_session *p, struct attach_options *opts);

/* Put the Python frames of the last armed capture into the unwound stacks
 * of pc (in place; a stack that would grow past its capacity is cut and
 * marked truncated). Frames of a thread the capture did not read are left
 * alone. Returns how many threads got Python frames. */
size_t py_session_merge(struct py_session *p, const struct process_capture *pc,
			struct unwound_stack *stacks);

/* Sampling, where nothing is held: read every thread's Python frames now
 * (as py-spy --nonblocking does), for py_session_amend to put into the
 * samples taken since the last read. 0, or -ENOMEM; a failed read is
 * counted, not returned. */
int py_session_refresh(struct py_session *p, const char *maps_text, size_t maps_len);

/* Put the frames of the last read into one sample's unwound stack of tid,
 * only when they fit it: the thread's current frame did not change during
 * the read, and the sample's evaluation-loop frames are as many as the
 * runs of Python frames read. Otherwise the sample keeps its native
 * frames and is counted as inconsistent. A stack that already has Python
 * frames (reused from an earlier tick) is left alone. p may be NULL. */
void py_session_amend(struct py_session *p, pid_t tid, struct unwound_stack *stack);

/* The sampling counters as "python" in the manifest's capture object:
 * reads, failed reads, samples given Python frames, samples whose frames
 * could not be read consistently, and gave_up when a read lost the worker
 * (reading then stops for the session: the worker's restarts are few and
 * the capture's unwinding needs them). Nothing when p is NULL. */
void py_session_sampling_json(const struct py_session *p, cJSON *capture);

/* Name the synthetic program counters of Python frames in st. 0 or
 * -ENOMEM. p may be NULL. */
int py_session_name_unnamed(struct py_session *p, struct symtab *st);

/* Whether pc is the synthetic program counter of a Python frame (printed
 * without an offset, in module "python"). */
bool py_pc_is_python(uint64_t pc);

/* The thread that held the GIL at the last read, 0 if none did (it was
 * released: every thread waiting or in C code that lets go of it) or p
 * is NULL. */
pid_t py_session_gil_holder(const struct py_session *p);

#endif
