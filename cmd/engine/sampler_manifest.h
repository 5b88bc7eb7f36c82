/*
 * sampler_manifest: what a sampled capture writes about itself into the
 * manifest (mode, capture, pause, target_exited; doc/bundle-format.md
 * names every key) and into the summary its caller prints.
 */
#ifndef DIAG_CMD_ENGINE_SAMPLER_MANIFEST_H
#define DIAG_CMD_ENGINE_SAMPLER_MANIFEST_H

#include <stdint.h>

#include "cmd/engine/sampler_state.h"

/* After the capture ran for duration ns and its members were written:
 * its account into sp's session (manifest and summary). */
void sampler_describe(struct sampler *sp, uint64_t duration);

#endif
