/* The hold: one consistent capture of every thread at once, and the
 * statistics of how long holds lasted. */
#include "cmd/engine/hold.h"

#include <stdlib.h>

#include "cmd/engine/go_session.h"
#include "cmd/engine/py_session.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void capture_pause_stats_json(cJSON *o, uint64_t *holds_ns, size_t n)
{
	cJSON_AddNumberToObject(o, "stops", (double)n);
	if (n == 0)
		return;
	qsort(holds_ns, n, sizeof(*holds_ns), cmp_u64);
	size_t p99 = (n * 99 + 99) / 100;
	if (p99 >= n)
		p99 = n - 1;
	cJSON_AddNumberToObject(o, "p50_us", (double)holds_ns[n / 2] / 1000.0);
	cJSON_AddNumberToObject(o, "p99_us", (double)holds_ns[p99] / 1000.0);
	cJSON_AddNumberToObject(o, "max_us", (double)holds_ns[n - 1] / 1000.0);
}

int capture_consistent(struct capture_session *s, const struct attach_options *base,
		       struct process_capture *pc)
{
	struct attach_options ao = *base;
	ao.read_wait_details = true;
	ao.skip_idle = false;
	ao.release_each = false;
	/* Consistent means every thread held at once (the EINTR-prone ones
	 * excepted, when base says so): the sampling ticks' no_stop is not. */
	ao.no_stop = false;
	ao.moment_known = NULL;
	if (s->go)
		go_session_arm(s->go, &ao);
	if (s->py)
		py_session_arm(s->py, &ao);
	int r = attach_capture(&s->target, &ao, pc);
	if (s->go)
		go_session_released(s->go);
	/* Late threads must not sit stopped while we unwind and symbolize. */
	attach_settle_late(ao.stop_timeout_ms);
	capture_trace_phase("captured and released");
	return r;
}
