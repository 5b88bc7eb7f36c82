/*
 * pause_stats: how long the target stood still, over hours of sampling in
 * bounded memory: the exact count, total and maximum of the holds, and
 * percentiles from a uniform reservoir of PAUSE_RESERVOIR of them.
 */
#ifndef DIAG_CMD_ENGINE_PAUSE_STATS_H
#define DIAG_CMD_ENGINE_PAUSE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define PAUSE_RESERVOIR 65536

/* reservoir: room for PAUSE_RESERVOIR (the caller's); rng: any odd seed. */
struct pause_stats {
	uint64_t *reservoir;
	size_t n;
	uint64_t seen;
	uint64_t max_ns;
	uint64_t total_ns; /* every hold added up: the time the target stood still */
	uint64_t rng;
	uint64_t window_max_ns; /* the longest since a live view's last refresh */
};

/* One hold of ns. */
void pause_stats_add(struct pause_stats *p, uint64_t ns);

/* {stops, p50_us, p99_us, max_us, total_us} into o (the reservoir is
 * sorted in place). */
void pause_stats_json(cJSON *o, struct pause_stats *p);

#endif
