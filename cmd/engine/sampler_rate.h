/*
 * sampler_rate: how fast a sampled capture may go. Its own cost per tick
 * and the target's pauses are judged as it runs: a tick that costs more
 * than half its period, or holds that take the target's time past its
 * budget, lengthen the period (recorded in capture.rate_adaptations), and
 * it comes back when they are cheap again. And while nothing of the
 * target is held, the tool yields its CPU gently, keeping pace only when
 * its ticks start late.
 */
#ifndef DIAG_CMD_ENGINE_SAMPLER_RATE_H
#define DIAG_CMD_ENGINE_SAMPLER_RATE_H

#include <stdint.h>

#include "cmd/engine/sampler_state.h"

/* After a tick that cost cost_ns of ours and held the target hold_ns, at
 * at_ns into the capture: sp->period_ns set for the next. */
void sampler_adapt_rate(struct sampler *sp, uint64_t cost_ns, uint64_t hold_ns, uint64_t at_ns);

/* At a wake lateness_ns after it was due (perf engine): keep pace or
 * yield (tool_priority.h). */
void sampler_keep_pace(struct sampler *sp, uint64_t lateness_ns);

#endif
