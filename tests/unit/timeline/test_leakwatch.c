/* SPDX-License-Identifier: MIT */
/*
 * The leak fitter on synthetic series with an injected clock: nothing here
 * sleeps, an hour of samples takes milliseconds.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "timeline/leakwatch.h"

#define MIB (1024.0 * 1024.0)

/* xorshift64*: deterministic noise, the same on every run. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static void rng_seed(uint64_t s)
{
	rng_state = s ? s : 1;
}

static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* Integer jitter uniform in [-a, a]. */
static int64_t jitter(int64_t a)
{
	return (int64_t)(rng_next() % (uint64_t)(2 * a + 1)) - a;
}

static const char *const names[] = { "open_fds", "threads", "rss_bytes", "child_procs" };
enum { FDS, THREADS, RSS, CHILDREN, NC };

/* A series: value of counter at time t (seconds). */
typedef int64_t (*series_fn)(double t, uint64_t i);

struct run {
	size_t fires;
	struct leakwatch_finding first, last;
	double first_t;  /* time of the sample that produced `first` */
	uint64_t first_i;
};

/*
 * Feed `counter` from fn (others -1: unknown, so they cannot fire) at the
 * given interval for duration seconds. Collects findings for that counter.
 */
static struct run drive(struct leakwatch *lw, int counter, series_fn fn,
			double interval, double duration)
{
	struct run r = { 0 };
	struct leakwatch_finding out[NC];
	uint64_t i = 0;

	for (double t = 0; t <= duration + 1e-9; t += interval, i++) {
		int64_t v[NC] = { -1, -1, -1, -1 };
		size_t n;

		v[counter] = fn(t, i);
		cr_assert_eq(leakwatch_feed(lw, 1000.0 + t, v, out, NC, &n), 0);
		for (size_t k = 0; k < n; k++) {
			cr_assert_eq(out[k].counter_index, (size_t)counter,
				     "%s fired but only %s was fed", out[k].counter,
				     names[counter]);
			if (r.fires == 0) {
				r.first = out[k];
				r.first_t = t;
				r.first_i = i;
			}
			r.last = out[k];
			r.fires++;
		}
	}
	return r;
}

static struct leakwatch *new_default(bool repeat)
{
	struct leakwatch_config cfg;
	struct leakwatch *lw = NULL;

	leakwatch_config_init(&cfg);
	cfg.repeat = repeat;
	cr_assert_eq(leakwatch_new(&cfg, names, NC, &lw), 0);
	return lw;
}

/* drive() on a fresh leakwatch in repeat mode, the jitter seeded with
 * seed; the leakwatch is freed before returning (the run's numbers are
 * copies). */
static struct run drive_repeat(uint64_t seed, int counter, series_fn fn, double interval,
			       double duration)
{
	struct leakwatch *lw = new_default(true);

	rng_seed(seed);
	struct run r = drive(lw, counter, fn, interval, duration);
	leakwatch_free(lw);
	return r;
}

/* ---- leaks that must fire ---- */

static int64_t fast_fd_leak(double t, uint64_t i)
{
	return 40 + (int64_t)(2 * t); /* 2 fds a second */
}

Test(leakwatch, fast_leak_fires_within_12_samples)
{
	struct leakwatch *lw = new_default(false);
	struct run r = drive(lw, FDS, fast_fd_leak, 1.0, 120);

	cr_assert_eq(r.fires, 1, "fires once without repeat (got %zu)", r.fires);
	cr_assert_leq(r.first_i, 11, "fired at sample %" PRIu64, r.first_i);
	cr_assert_float_eq(r.first.slope_per_s, 2.0, 1e-9);
	cr_assert_geq(r.first.delta, 16);
	cr_assert_eq(r.first.window_end_seq, r.first_i);
	cr_assert_eq(r.first.window_end_seq - r.first.window_start_seq + 1, r.first.n_samples);
	cr_assert_float_eq(r.first.tau, 1.0, 1e-9);
	cr_assert_float_eq(r.first.r2, 1.0, 1e-9);
	cr_assert_float_eq(r.first.first, 40, 1e-9);
	cr_assert_str_eq(r.first.counter, "open_fds");
	cr_assert(leakwatch_fired(lw, FDS));
	leakwatch_free(lw);
}

static int64_t slow_fd_leak_noisy(double t, uint64_t i)
{
	/* One fd every 5 s, the count jittering by up to 2 either way. */
	return 30 + (int64_t)(t / 5) + jitter(2);
}

Test(leakwatch, slow_fd_leak_under_noise_fires_within_300s)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct leakwatch *lw = new_default(false);
		struct run r;

		rng_seed(seed);
		r = drive(lw, FDS, slow_fd_leak_noisy, 1.0, 600);
		cr_assert_eq(r.fires, 1, "seed %" PRIu64 ": fires %zu", seed, r.fires);
		cr_assert_leq(r.first_t, 300, "seed %" PRIu64 ": fired at %.0f s", seed, r.first_t);
		cr_assert_float_eq(r.first.slope_per_s, 0.2, 0.06, "seed %" PRIu64 ": slope %f",
				   seed, r.first.slope_per_s);
		leakwatch_free(lw);
	}
}

/* GC-like sawtooth: ramps from -5 to +5 MiB over 10 s, then drops. */
static double sawtooth_mib(double t)
{
	double phase = fmod(t, 10.0) / 10.0;

	return -5 + 10 * phase;
}

static int64_t rss_leak_sawtooth(double t, uint64_t i)
{
	return (int64_t)((300 + t + sawtooth_mib(t)) * MIB);
}

Test(leakwatch, slow_rss_leak_under_sawtooth_fires_within_300s)
{
	struct leakwatch *lw = new_default(false);
	struct run r = drive(lw, RSS, rss_leak_sawtooth, 1.0, 600);

	cr_assert_eq(r.fires, 1);
	cr_assert_leq(r.first_t, 300, "fired at %.0f s", r.first_t);
	cr_assert_float_eq(r.first.slope_per_s / MIB, 1.0, 0.2, "slope %f MiB/s",
			   r.first.slope_per_s / MIB);
	cr_assert_geq(r.first.delta, 16 * MIB);
	leakwatch_free(lw);
}

/* The defaults against the rule the watchdog promises (leakwatch.h):
 * a 1 MiB/s RSS leak and a thread every 10 s fire within a minute, at 1 s
 * and at 250 ms; a fill that stops within 20 s and a pool grown on demand
 * never do. RSS carries 200 KiB of allocator noise. */
static int64_t rss_1mib(double t, uint64_t i)
{
	return (int64_t)(40 * MIB + t * MIB) + jitter(200 * 1024);
}

Test(leakwatch, rss_1mib_per_s_fires_within_a_minute)
{
	static const double intervals[] = {1.0, 0.25};
	for (size_t k = 0; k < 2; k++) {
		struct leakwatch *lw = new_default(false);
		rng_seed(7);
		struct run r = drive(lw, RSS, rss_1mib, intervals[k], 120);
		cr_assert_eq(r.fires, 1, "at %.2f s: %zu findings", intervals[k], r.fires);
		cr_assert_leq(r.first_t, 60, "at %.2f s: fired at %.0f s", intervals[k], r.first_t);
		leakwatch_free(lw);
	}
}

static int64_t rss_fill_20s(double t, uint64_t i)
{
	double filled = t < 20 ? t : 20;
	return (int64_t)(40 * MIB + filled * 5 * MIB) + jitter(200 * 1024);
}

Test(leakwatch, rss_fill_that_stops_within_20s_never_fires)
{
	static const double intervals[] = {1.0, 0.25};
	for (size_t k = 0; k < 2; k++) {
		struct leakwatch *lw = new_default(false);
		rng_seed(11);
		struct run r = drive(lw, RSS, rss_fill_20s, intervals[k], 600);
		cr_assert_eq(r.fires, 0, "at %.2f s: a 100 MiB fill over 20 s fired at %.0f s", intervals[k],
			     r.first_t);
		leakwatch_free(lw);
	}
}

static int64_t thread_every_10s(double t, uint64_t i)
{
	return 5 + (int64_t)(t / 10);
}

Test(leakwatch, a_thread_every_10s_fires_within_a_minute)
{
	struct leakwatch *lw = new_default(false);
	struct run r = drive(lw, THREADS, thread_every_10s, 1.0, 120);
	cr_assert_eq(r.fires, 1);
	cr_assert_leq(r.first_t, 60, "fired at %.0f s", r.first_t);
	leakwatch_free(lw);
}

static int64_t pool_grown_then_kept(double t, uint64_t i)
{
	return 5 + (t < 20 ? (int64_t)(t / 2.5) : 8); /* 8 workers over 20 s */
}

Test(leakwatch, a_pool_grown_on_demand_then_kept_never_fires)
{
	struct leakwatch *lw = new_default(false);
	struct run r = drive(lw, THREADS, pool_grown_then_kept, 1.0, 600);
	cr_assert_eq(r.fires, 0, "fired at %.0f s", r.first_t);
	leakwatch_free(lw);
}

static int64_t child_leak(double t, uint64_t i)
{
	return 1 + (int64_t)(t / 3); /* one unreaped child every 3 s */
}

Test(leakwatch, child_leak_fires_on_small_rise)
{
	struct leakwatch *lw = new_default(false);
	struct run r = drive(lw, CHILDREN, child_leak, 1.0, 120);

	cr_assert_eq(r.fires, 1);
	cr_assert_leq(r.first_t, 24);
	leakwatch_free(lw);
}

/* ---- shapes that must not fire ---- */

static int64_t rss_sawtooth_flat(double t, uint64_t i)
{
	return (int64_t)((300 + sawtooth_mib(t)) * MIB);
}

static int64_t fd_sawtooth_flat(double t, uint64_t i)
{
	/* Opens 15 over 15 s (under the floor of 16), closes them at once. */
	return 50 + (int64_t)fmod(t, 16.0) + jitter(1);
}

Test(leakwatch, sawtooth_with_flat_baseline_never_fires)
{
	struct leakwatch *lw = new_default(true);
	struct run r;

	r = drive(lw, RSS, rss_sawtooth_flat, 1.0, 3600);
	cr_assert_eq(r.fires, 0, "rss sawtooth fired %zu times, first at %.0f s", r.fires, r.first_t);
	leakwatch_free(lw);

	lw = new_default(true);
	rng_seed(7);
	r = drive(lw, FDS, fd_sawtooth_flat, 1.0, 3600);
	cr_assert_eq(r.fires, 0, "fd sawtooth fired %zu times, first at %.0f s", r.fires, r.first_t);
	leakwatch_free(lw);
}

/* From 20, rises by height over 30 s, falls back over 3 s, rests 27 s;
 * period 60 s. */
static int64_t fan_out_by(double t, double height)
{
	double ph = fmod(t, 60.0);
	double up = ph < 30 ? ph / 30 : ph < 33 ? 1 - (ph - 30) / 3 : 0;

	return 20 + (int64_t)(height * up) + jitter(1);
}

/* A fan-out of 100. */
static int64_t fan_out(double t, uint64_t i)
{
	return fan_out_by(t, 100);
}

/*
 * The first rise of this fan-out clears both floors (rise 16, 0.05/s) in
 * five samples and keeps rising for thirty: while it rises it is a fast
 * leak by every measure a 12-sample detector can apply, and it fires (see
 * leakwatch.h). What must not happen is firing again on the rises that only
 * climb back to where the counter has already been: repeat mode is on, so
 * any such firing would be counted.
 */
Test(leakwatch, fan_out_and_return_never_fires_after_first_rise)
{
	struct run r = drive_repeat(3, FDS, fan_out, 1.0, 3600);

	cr_assert_leq(r.last.window_end_time - 1000.0, 30.0,
		      "fired %zu times, last at %.0f s: a repeat rise fired", r.fires,
		      r.last.window_end_time - 1000.0);
}

/* Same pattern under the floors the seed had in mind (a fan-out's transient
 * population below the rise floor): never fires at all. */
static int64_t small_fan_out(double t, uint64_t i)
{
	return fan_out_by(t, 14);
}

Test(leakwatch, fan_out_under_floor_never_fires)
{
	struct run r = drive_repeat(4, FDS, small_fan_out, 1.0, 3600);

	cr_assert_eq(r.fires, 0);
}

/* The fan-out pattern after a rest at baseline with the counter already at
 * its working-set peak earlier in the run (a warm process): never fires. */
static int64_t warm_fan_out(double t, uint64_t i)
{
	if (t < 5)
		return 120; /* the peak, seen before */
	if (t < 65)
		return 20 + jitter(1);
	return fan_out(t - 65, i);
}

Test(leakwatch, fan_out_in_a_warm_process_never_fires)
{
	struct run r = drive_repeat(5, FDS, warm_fan_out, 1.0, 3600);

	cr_assert_eq(r.fires, 0, "fired %zu times, first at %.0f s", r.fires, r.first_t);
}

static int64_t one_off_step(double t, uint64_t i)
{
	return t < 600 ? 50 : 250;
}

static int64_t one_off_step_noisy(double t, uint64_t i)
{
	return (t < 600 ? 50 : 250) + jitter(2);
}

Test(leakwatch, one_off_step_never_fires)
{
	struct leakwatch *lw = new_default(true);
	struct run r = drive(lw, FDS, one_off_step, 1.0, 3600);

	cr_assert_eq(r.fires, 0, "clean step fired at %.0f s", r.first_t);
	leakwatch_free(lw);

	for (uint64_t seed = 1; seed <= 20; seed++) {
		r = drive_repeat(seed, FDS, one_off_step_noisy, 1.0, 1800);
		cr_assert_eq(r.fires, 0, "seed %" PRIu64 ": noisy step fired at %.0f s", seed,
			     r.first_t);
	}
}

static int64_t flat_noise(double t, uint64_t i)
{
	return 100 + jitter(8);
}

Test(leakwatch, noise_around_a_flat_line_never_fires)
{
	struct run r = drive_repeat(11, FDS, flat_noise, 1.0, 3600);

	cr_assert_eq(r.fires, 0, "fired at %.0f s", r.first_t);
}

/* ---- gaps, unwatched counters, repeat ---- */

static int64_t leak_with_gaps_until_200(double t, uint64_t i)
{
	if (t < 200 && i % 10 == 9)
		return -1; /* unknown every tenth sample */
	return 40 + (int64_t)(2 * t);
}

Test(leakwatch, unknown_samples_restart_the_window)
{
	struct leakwatch *lw = new_default(false);
	struct run r = drive(lw, FDS, leak_with_gaps_until_200, 1.0, 300);

	/* Runs of 9 never fill the 12-sample window, so nothing fires while
	 * the gaps last; after them a fresh window fires within 12 samples. */
	cr_assert_eq(r.fires, 1);
	cr_assert_geq(r.first_t, 200);
	cr_assert_leq(r.first_t, 200 + 12);
	cr_assert_geq(r.first.window_start_seq, 200, "the window bridged a gap");
	leakwatch_free(lw);
}

Test(leakwatch, counter_without_threshold_never_fires)
{
	static const struct leakwatch_threshold only_fds[] = { { "open_fds", 0.05, 16, 0 } };
	struct leakwatch_config cfg;
	struct leakwatch *lw = NULL;
	struct run r;

	leakwatch_config_init(&cfg);
	cfg.thresholds = only_fds;
	cfg.n_thresholds = 1;
	cr_assert_eq(leakwatch_new(&cfg, names, NC, &lw), 0);
	cr_assert(leakwatch_watched(lw, FDS));
	cr_assert_not(leakwatch_watched(lw, THREADS));
	r = drive(lw, THREADS, fast_fd_leak, 1.0, 600);
	cr_assert_eq(r.fires, 0);
	cr_assert_not(leakwatch_fired(lw, THREADS));
	leakwatch_free(lw);
}

Test(leakwatch, repeat_fires_again_on_fresh_windows)
{
	struct leakwatch *lw = new_default(true);
	struct leakwatch_finding out[NC], prev = { 0 };
	size_t fires = 0;

	for (uint64_t i = 0; i < 120; i++) {
		int64_t v[NC] = { 40 + (int64_t)(2 * i), -1, -1, -1 };
		size_t n;

		cr_assert_eq(leakwatch_feed(lw, (double)i, v, out, NC, &n), 0);
		if (n == 0)
			continue;
		if (fires > 0)
			cr_assert_gt(out[0].window_start_seq, prev.window_end_seq,
				     "second finding overlaps the first");
		prev = out[0];
		fires++;
	}
	/* Each finding needs a fresh 12-sample window: 120 / 12. */
	cr_assert_eq(fires, 10, "fires %zu", fires);
	leakwatch_free(lw);
}

/* ---- interval independence ---- */

static int64_t leak_4_per_s_noisy(double t, uint64_t i)
{
	return 100 + (int64_t)(4 * t) + jitter(1);
}

Test(leakwatch, slope_is_per_second_whatever_the_interval)
{
	struct leakwatch *lw;
	struct run fast, slow;

	rng_seed(21);
	lw = new_default(false);
	fast = drive(lw, FDS, leak_4_per_s_noisy, 0.25, 120);
	leakwatch_free(lw);
	rng_seed(21);
	lw = new_default(false);
	slow = drive(lw, FDS, leak_4_per_s_noisy, 1.0, 120);
	leakwatch_free(lw);

	cr_assert_eq(fast.fires, 1);
	cr_assert_eq(slow.fires, 1);
	cr_assert_float_eq(fast.first.slope_per_s, 4.0, 0.4, "250 ms: %f/s", fast.first.slope_per_s);
	cr_assert_float_eq(slow.first.slope_per_s, 4.0, 0.4, "1 s: %f/s", slow.first.slope_per_s);
	/* Both fire within a few seconds of leak time. */
	cr_assert_leq(fast.first_t, 12);
	cr_assert_leq(slow.first_t, 12);
}

Test(leakwatch, long_windows_are_subsampled_but_still_fit)
{
	/* max_window 1000 at 250 ms covers 250 s; a 0.1/s leak needs 160 s. */
	struct leakwatch_config cfg;
	struct leakwatch *lw = NULL;
	struct leakwatch_finding out[NC];
	size_t fired_at = 0;

	leakwatch_config_init(&cfg);
	cfg.max_window = 1000;
	cr_assert_eq(leakwatch_new(&cfg, names, NC, &lw), 0);
	cr_assert_eq(leakwatch_max_window(lw), 1000);
	rng_seed(5);
	for (size_t i = 0; i < 1200 && !fired_at; i++) {
		double t = 0.25 * (double)i;
		int64_t v[NC] = { 10 + (int64_t)(0.1 * t) + jitter(1), -1, -1, -1 };
		size_t n;

		cr_assert_eq(leakwatch_feed(lw, t, v, out, NC, &n), 0);
		if (n) {
			fired_at = i;
			cr_assert_float_eq(out[0].slope_per_s, 0.1, 0.03);
			cr_assert_gt(out[0].n_samples, LEAKWATCH_MAX_FIT_POINTS);
		}
	}
	cr_assert_neq(fired_at, 0, "a 0.1/s leak never fired over 300 s");
	leakwatch_free(lw);
}

/* ---- API edges ---- */

Test(leakwatch, time_must_move_forward)
{
	struct leakwatch *lw = new_default(false);
	struct leakwatch_finding out[NC];
	int64_t v[NC] = { 1, 1, 1, 1 };
	size_t n = 99;

	cr_assert_eq(leakwatch_feed(lw, 10, v, out, NC, &n), 0);
	cr_assert_eq(leakwatch_feed(lw, 10, v, out, NC, &n), -EINVAL);
	cr_assert_eq(n, 0);
	cr_assert_eq(leakwatch_feed(lw, 9, v, out, NC, &n), -EINVAL);
	cr_assert_eq(leakwatch_feed(lw, NAN, v, out, NC, &n), -EINVAL);
	cr_assert_eq(leakwatch_feed(lw, 11, v, out, NC, &n), 0);
	leakwatch_free(lw);
}

Test(leakwatch, config_validation)
{
	struct leakwatch_config cfg;
	struct leakwatch *lw = NULL;

	leakwatch_config_init(&cfg);
	cfg.window = 3;
	cr_assert_eq(leakwatch_new(&cfg, names, NC, &lw), -EINVAL);
	leakwatch_config_init(&cfg);
	cfg.window = 12;
	cfg.max_window = 11;
	cr_assert_eq(leakwatch_new(&cfg, names, NC, &lw), -EINVAL);
	cr_assert_eq(leakwatch_new(NULL, names, NC, &lw), 0);
	cr_assert_eq(leakwatch_max_window(lw), 16 * LEAKWATCH_DEFAULT_WINDOW);
	leakwatch_free(lw);
	leakwatch_free(NULL);
}

Test(leakwatch, threshold_parse)
{
	struct leakwatch_threshold th;

	cr_assert_eq(leakwatch_threshold_parse("rss_bytes=16K:64M", &th), 0);
	cr_assert_str_eq(th.name, "rss_bytes");
	cr_assert_float_eq(th.min_slope_per_s, 16384, 1e-9);
	cr_assert_float_eq(th.min_delta, 64 * MIB, 1e-9);
	cr_assert_eq(leakwatch_threshold_parse("open_fds=0.5:8", &th), 0);
	cr_assert_str_eq(th.name, "open_fds");
	cr_assert_float_eq(th.min_slope_per_s, 0.5, 1e-12);
	cr_assert_float_eq(th.min_delta, 8, 1e-12);

	memset(&th, 0x5a, sizeof(th));
	cr_assert_eq(leakwatch_threshold_parse("open_fds", &th), -EINVAL);
	cr_assert_eq(leakwatch_threshold_parse("=1:2", &th), -EINVAL);
	cr_assert_eq(leakwatch_threshold_parse("x=1", &th), -EINVAL);
	cr_assert_eq(leakwatch_threshold_parse("x=1:", &th), -EINVAL);
	cr_assert_eq(leakwatch_threshold_parse("x=a:2", &th), -EINVAL);
	cr_assert_eq(leakwatch_threshold_parse("x=1:2Q", &th), -EINVAL);
	cr_assert_eq(leakwatch_threshold_parse("x=-1:2", &th), -EINVAL);
	cr_assert_eq((unsigned char)th.name[0], 0x5a, "ret touched on failure");
}

Test(leakwatch, override_after_defaults_wins)
{
	size_t nd;
	const struct leakwatch_threshold *d = leakwatch_default_thresholds(&nd);
	struct leakwatch_threshold th[16];
	struct leakwatch_config cfg;
	struct leakwatch *lw = NULL;
	struct run r;

	cr_assert_lt(nd, 16);
	memcpy(th, d, nd * sizeof(*d));
	/* Raise the fd rise floor above what the fast leak reaches in 2 min. */
	cr_assert_eq(leakwatch_threshold_parse("open_fds=0.05:1000", &th[nd]), 0);
	leakwatch_config_init(&cfg);
	cfg.thresholds = th;
	cfg.n_thresholds = nd + 1;
	cr_assert_eq(leakwatch_new(&cfg, names, NC, &lw), 0);
	r = drive(lw, FDS, fast_fd_leak, 1.0, 120);
	cr_assert_eq(r.fires, 0);
	leakwatch_free(lw);
}

Test(leakwatch, set_span)
{
	struct leakwatch_config cfg;

	leakwatch_config_init(&cfg);
	cr_assert_eq(leakwatch_config_set_span(&cfg, 1.0, LEAKWATCH_DEFAULT_SPAN_S), 0);
	cr_assert_eq(cfg.max_window, 241);
	leakwatch_config_init(&cfg);
	cr_assert_eq(leakwatch_config_set_span(&cfg, 0.25, 240), 0);
	cr_assert_eq(cfg.max_window, 961);
	leakwatch_config_init(&cfg);
	cr_assert_eq(leakwatch_config_set_span(&cfg, 10, 240), 0);
	cr_assert_eq(cfg.max_window, 16 * LEAKWATCH_DEFAULT_WINDOW, "never lowered");
	cr_assert_eq(leakwatch_config_set_span(&cfg, 0, 240), -EINVAL);
	cr_assert_eq(leakwatch_config_set_span(&cfg, 1, -1), -EINVAL);
}

/* With the span set for 250 ms, the slow fd leak is seen at that interval
 * too, within the same few minutes as at 1 s. */
Test(leakwatch, slow_leak_at_short_interval_with_span)
{
	struct leakwatch_config cfg;
	struct leakwatch *lw = NULL;
	struct run r;

	leakwatch_config_init(&cfg);
	cr_assert_eq(leakwatch_config_set_span(&cfg, 0.25, LEAKWATCH_DEFAULT_SPAN_S), 0);
	cr_assert_eq(leakwatch_new(&cfg, names, NC, &lw), 0);
	rng_seed(9);
	r = drive(lw, FDS, slow_fd_leak_noisy, 0.25, 400);
	cr_assert_eq(r.fires, 1);
	cr_assert_leq(r.first_t, 300, "fired at %.0f s", r.first_t);
	cr_assert_float_eq(r.first.slope_per_s, 0.2, 0.06);
	leakwatch_free(lw);
}
