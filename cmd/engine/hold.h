/*
 * hold: one consistent capture of the target (every thread held at once,
 * with the goroutines and Python frames read while held), used by the
 * snapshot, the sampler's final capture and the leak evidence; and the
 * pause statistics of a set of holds.
 */
#ifndef DIAG_CMD_ENGINE_HOLD_H
#define DIAG_CMD_ENGINE_HOLD_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "attach/attach.h"
#include "cmd/engine/internal.h"

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

#endif
