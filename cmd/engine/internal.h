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
int capture_fail(struct capture_session *s, enum capture_stage stage, int err);

/* One consistent capture: every thread held at once (from base, with wait
 * channels, nothing skipped, nothing released early), the goroutine list
 * copied while held for a Go target and its parked goroutines right after
 * the release, and the threads left late by the deadline settled before
 * anything slow happens, so none sits stopped while we symbolize. pc must
 * be zeroed or released. 0 or -errno from attach_capture (pc then holds
 * what the capture reached, to be released by the caller). */
int capture_consistent(struct capture_session *s, const struct attach_options *base,
		       struct process_capture *pc);

/* Add the pause statistics of a set of per-stop hold times to o. */
void capture_pause_stats_json(cJSON *o, uint64_t *holds_ns, size_t n);

/* The sampled capture (sampler.c). 0 or -errno (stage set). */
int sampler_run(struct capture_session *s);

#endif
