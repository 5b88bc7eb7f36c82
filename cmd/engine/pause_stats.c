/* Pause statistics in bounded memory (pause_stats.h). */
#include "cmd/engine/pause_stats.h"

#include "cmd/engine/hold.h"

void pause_stats_add(struct pause_stats *p, uint64_t ns)
{
	p->seen++;
	p->total_ns += ns;
	if (ns > p->max_ns)
		p->max_ns = ns;
	if (ns > p->window_max_ns)
		p->window_max_ns = ns;
	if (p->n < PAUSE_RESERVOIR) {
		p->reservoir[p->n++] = ns;
		return;
	}
	/* xorshift: reservoir sampling needs uniform picks, not secrecy. */
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	uint64_t j = p->rng % p->seen;
	if (j < PAUSE_RESERVOIR)
		p->reservoir[j] = ns;
}

void pause_stats_json(cJSON *o, struct pause_stats *p)
{
	capture_pause_stats_json(o, p->reservoir, p->n);
	cJSON_ReplaceItemInObject(o, "stops", cJSON_CreateNumber((double)p->seen));
	if (p->seen)
		cJSON_ReplaceItemInObject(o, "max_us", cJSON_CreateNumber((double)p->max_ns / 1000.0));
	cJSON_AddNumberToObject(o, "total_us", (double)p->total_ns / 1000.0);
}
