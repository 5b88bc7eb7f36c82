/* The sampled capture's rate governor (sampler_rate.h). */
#include "cmd/engine/sampler_rate.h"

#include "attach/tool_priority.h"

#define BUDGET_SHARE_HIGH 2 /* cost > period / 2: halve the rate */
#define BUDGET_SHARE_LOW 8  /* cost < period / 8: double it back */
/* Pause budget: the target may stand still at most 1/PAUSE_SHARE_MAX of
 * the time (5%), judged over windows of PAUSE_WINDOW_NS (and at once when
 * a window's budget is spent before its end, or when it stands still
 * longer than it runs). Past it the period becomes the
 * requested one doubled until the window's mean hold is 1/PAUSE_SHARE_TARGET
 * of it (2%); each window that stays under the budget lets it come back
 * down as far as its mean hold stays under 1/PAUSE_SHARE_BACK (3%). */
#define PAUSE_SHARE_MAX 20
#define PAUSE_SHARE_TARGET 50
#define PAUSE_SHARE_BACK 33
#define PAUSE_WINDOW_NS 1000000000ull
#define PAUSE_PERIOD_MAX_NS 10000000000ull
/* The first ticks warm caches (unwind tables, page cache) and fault in our
 * buffers: our cost is not judged on them (judge_pause has its own, shorter
 * warm-up for holds). */
#define WARMUP_TICKS 5
#define MAX_ADAPTATIONS_RECORDED 64

static uint64_t pause_floor_for(const struct sampler *sp, uint64_t mean_hold_ns, unsigned share)
{
	uint64_t want = mean_hold_ns * share, floor = sp->requested_period_ns;
	while (floor < want && floor < PAUSE_PERIOD_MAX_NS)
		floor *= 2;
	return floor;
}

/* The target feels our holds, not our cost: with hundreds of threads (each
 * must be scheduled to reach its stop) one hold can take tens of
 * milliseconds, and at the requested rate it would stand still most of the
 * time (py-spy #872). Judged on the time held per window rather than per
 * tick: on a busy machine holds alternate between microseconds and the stop
 * deadline, and what the target feels is their sum. */
static void judge_pause(struct sampler *sp, uint64_t hold_ns, uint64_t at_ns)
{
	uint64_t both = sp->prev_hold_ns < hold_ns ? sp->prev_hold_ns : hold_ns;
	sp->prev_hold_ns = hold_ns;
	if (sp->ticks >= 2 && both > sp->period_ns) {
		/* Stopped longer than it runs: no time to lose. */
		sp->win_mean_hold_ns = both;
		uint64_t floor = pause_floor_for(sp, both, PAUSE_SHARE_TARGET);
		if (floor > sp->pause_floor_ns)
			sp->pause_floor_ns = floor;
		sp->win_start_ns = at_ns;
		sp->win_hold_ns = sp->win_ticks = 0;
		return;
	}
	/* The first tick stops idle threads too (later ticks skip them): its
	 * hold says little about the next ones. Every later hold counts,
	 * warm-up or not: the target feels them all. */
	if (sp->ticks <= 1) {
		sp->win_start_ns = at_ns;
		return;
	}
	sp->win_hold_ns += hold_ns;
	sp->win_ticks++;
	uint64_t elapsed = at_ns - sp->win_start_ns;
	/* A window's whole budget already spent: act now, not at its end
	 * (two holds of 100 ms in the first 30 ms, say). Otherwise one hold
	 * alone is no measure of a share of time, unless the period is a
	 * window or longer: then hold / period is the share (and waiting for a
	 * second tick would keep a rate lowered in an emergency, 0.2 Hz say,
	 * low for twice its period after the holds got short again). */
	bool spent = sp->win_hold_ns > PAUSE_WINDOW_NS / PAUSE_SHARE_MAX;
	if (!spent && sp->win_ticks < 2 && sp->period_ns < PAUSE_WINDOW_NS)
		return;
	if (!spent && elapsed < PAUSE_WINDOW_NS)
		return;
	if (elapsed < PAUSE_WINDOW_NS)
		elapsed = PAUSE_WINDOW_NS;
	bool over = sp->win_hold_ns > elapsed / PAUSE_SHARE_MAX;
	sp->win_mean_hold_ns = sp->win_hold_ns / sp->win_ticks;
	uint64_t floor = pause_floor_for(sp, sp->win_mean_hold_ns,
					 over ? PAUSE_SHARE_TARGET : PAUSE_SHARE_BACK);
	if (over ? floor > sp->pause_floor_ns : floor < sp->pause_floor_ns)
		sp->pause_floor_ns = floor;
	sp->win_start_ns = at_ns;
	sp->win_hold_ns = 0;
	sp->win_ticks = 0;
}

void sampler_adapt_rate(struct sampler *sp, uint64_t cost_ns, uint64_t hold_ns, uint64_t at_ns)
{
	uint64_t p = sp->period_ns;
	judge_pause(sp, hold_ns, at_ns);
	/* Our own cost: when a tick takes more than half the period the rate
	 * halves (and recovers when cheap again). */
	uint64_t cp = sp->cost_period_ns ? sp->cost_period_ns : sp->requested_period_ns;
	if (sp->ticks > WARMUP_TICKS) {
		sp->tick_cost_ewma_ns = sp->tick_cost_ewma_ns
						? (sp->tick_cost_ewma_ns * 4 + cost_ns) / 5
						: cost_ns;
		if (sp->tick_cost_ewma_ns > cp / BUDGET_SHARE_HIGH && cp < 1000000000ull)
			cp *= 2;
		else if (sp->tick_cost_ewma_ns < cp / BUDGET_SHARE_LOW && cp > sp->requested_period_ns)
			cp = cp / 2 < sp->requested_period_ns ? sp->requested_period_ns : cp / 2;
		sp->cost_period_ns = cp;
	}
	sp->period_ns = cp > sp->pause_floor_ns ? cp : sp->pause_floor_ns;
	if (sp->period_ns == p)
		return;
	if (sp->adaptations && cJSON_GetArraySize(sp->adaptations) < MAX_ADAPTATIONS_RECORDED) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "at_s", (double)at_ns / 1e9);
		cJSON_AddNumberToObject(o, "hz", 1e9 / (double)sp->period_ns);
		cJSON_AddNumberToObject(o, "tick_cost_us", (double)sp->tick_cost_ewma_ns / 1000.0);
		cJSON_AddNumberToObject(o, "hold_us", (double)sp->win_mean_hold_ns / 1000.0);
		cJSON_AddItemToArray(sp->adaptations, o);
	}
}

/* We start keeping pace (the first ticks load the target's debug info,
 * our own work), yield gently once PACE_SETTLE_TICKS in a row start within
 * their period, and keep pace again the moment a tick is missed (our
 * gentle share of a saturated CPU no longer keeps up), until
 * PACE_ON_TIME_TICKS in a row are on time again (about 2 s at 99 Hz, then
 * 4, 8, 16 and at most 32 s after each further time). A
 * tick merely late is still taken, and a box as busy as two burners on
 * two cores makes some late at any weight. */
#define PACE_SETTLE_TICKS 20
#define PACE_ON_TIME_TICKS 200
void sampler_keep_pace(struct sampler *sp, uint64_t lateness_ns)
{
	if (lateness_ns >= sp->period_ns) {
		sp->ticks_on_time = 0;
		if (sp->keeping_pace)
			return;
		sp->keeping_pace = true;
		sp->pace_raised++;
	} else {
		/* Each time we had to keep pace again, twice as long before
		 * trying gently once more (up to 16 times as long). */
		unsigned need = PACE_SETTLE_TICKS;
		if (sp->pace_raised) {
			unsigned doublings = sp->pace_raised > 5 ? 4 : (unsigned)sp->pace_raised - 1;
			need = PACE_ON_TIME_TICKS << doublings;
		}
		if (!sp->keeping_pace || ++sp->ticks_on_time < need)
			return;
		sp->keeping_pace = false;
		sp->ticks_on_time = 0;
	}
	tool_priority_yield(0, sp->keeping_pace);
	interp_yield_to_target(sp->s->interp, sp->keeping_pace);
}
