/*
 * What the capture engine's files share. Not part of the interface: only
 * cmd/engine/ (and its unit tests) include this.
 */
#ifndef DIAG_CMD_ENGINE_INTERNAL_H
#define DIAG_CMD_ENGINE_INTERNAL_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "attach/attach.h"
#include "bundle/bundle.h"
#include "cmd/engine/engine.h"
#include "symbolize/symbolize.h"

struct go_session;
struct py_session;
struct interp;

/* State shared by the snapshot and sampling paths. */
struct capture_session {
	const struct capture_options *opt;
	struct attach_target target;
	struct bundle *bundle;
	cJSON *manifest;
	uint64_t started_wall_ns;
	struct symbolize_options symopt;
	struct go_session *go;     /* NULL unless the target is a Go program */
	struct py_session *py;     /* NULL unless the target is a CPython */
	struct interp *interp;     /* unwinding and symbols (sandboxed worker) */
	enum capture_stage stage;  /* where the last failure happened */
	struct capture_summary summary;
	bool target_exited;
};

uint64_t realtime_ns(void);
uint64_t monotonic_ns(void);

/* Fail at stage: records it in s and returns err (a negative errno). */
static inline int capture_fail(struct capture_session *s, enum capture_stage stage, int err)
{
	s->stage = stage;
	return err;
}

#endif
