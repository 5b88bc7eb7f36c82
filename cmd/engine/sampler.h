/*
 * sampler: the sampled capture. CPU samples (perf events, or ptrace stops
 * weighted by schedstat), wall-clock ticks, the /proc timeline and its leak
 * watchdog, then a final consistent capture and the profiles written; or,
 * for a live view, each window's samples handed over (engine.h,
 * capture_options.live) and nothing written.
 */
#ifndef DIAG_CMD_ENGINE_SAMPLER_H
#define DIAG_CMD_ENGINE_SAMPLER_H

#include "cmd/engine/internal.h"

/* The sampled capture (sampler.c). 0 or -errno (stage set). */
int sampler_run(struct capture_session *s);

#endif
