/* Clocks and the opt-in phase trace of the capture engine. */
#include "cmd/engine/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

void capture_trace_phase(const char *what)
{
	static int enabled = -1;
	static uint64_t first;
	if (enabled < 0)
		enabled = getenv("DIAG_ATTACH_TRACE") != NULL;
	if (!enabled)
		return;
	uint64_t now = monotonic_ns();
	if (!first)
		first = now;
	fprintf(stderr, "diag-attach: trace +%.1f ms %s\n", (double)(now - first) / 1e6, what);
}
