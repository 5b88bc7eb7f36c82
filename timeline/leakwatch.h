/* SPDX-License-Identifier: MIT */
#ifndef DIAG_TIMELINE_LEAKWATCH_H
#define DIAG_TIMELINE_LEAKWATCH_H

/*
 * leakwatch: decide, one sample at a time, that a counter is leaking.
 *
 * Pure arithmetic: no I/O, no clock, no allocation after leakwatch_new().
 * The caller feeds a time in seconds (any monotonic origin; the tests inject
 * it) and one value per registered counter; leakwatch answers with zero or
 * more findings. Everything about *where* the values come from (/proc, a Go
 * runtime) and what to do on a finding (dump threads, write the window) is
 * the caller's.
 *
 * What counts as a leak
 * ---------------------
 * A counter leaks when, over some recent window of its samples, all of
 * these hold:
 *
 *   1. slope: the Theil-Sen slope (median of all pairwise slopes, in units
 *      per second of the injected clock) is >= min_slope_per_s and > 0.
 *      Per-second slopes make thresholds independent of the interval.
 *   2. rise: slope * window duration >= min_delta, and the raw range of the
 *      window is >= min_delta too (a cheap pre-check that skips flat
 *      counters without fitting anything). Both floors are the seed's
 *      MinSlope/MinDelta, with the slope per second instead of per sample.
 *   3. consistency: Kendall's tau-a (concordant minus discordant pairs over
 *      all pairs, ties count against) is >= min_tau (default 0.6). A clean
 *      one-off step scores at most about 0.5 whatever the window, which is
 *      what keeps a step from firing; a leak under noise scores 0.7-0.95
 *      once the window is long enough for the trend to dominate the noise.
 *   4. new ground: the fitted value at the window's end exceeds by at least
 *      min_delta every sample retained from *before* the window. This is
 *      what keeps a repeating fan-out or a large GC sawtooth from firing on
 *      its second and later rises: each rise only climbs back to where the
 *      counter has already been. (A leak riding on top of the pattern fires
 *      once its peaks clear the old peaks by min_delta.)
 *   5. spread: no single sample-to-sample rise is more than half the
 *      window's range. A step is one jump; a leak, even a bursty one, is
 *      many. This backs up rule 3, because noise on the flat sides of a
 *      step can lift a short window's tau over the floor.
 * *   6. still growing (counters with a min_span_s): the window spans at
 *      least min_span_s seconds, and its last third reaches a new high,
 *      above everything in its first two thirds by min_delta / 8. A
 *      program whose memory or threads fill up and then stay (an
 *      allocator's warm-up, a cache filled for 20 s, a pool grown on
 *      demand) does not fire once it stops; a leak keeps making new
 *      highs. With the default windows (12, 24, 48... samples) a 30 s
 *      span is first reached by the 48-sample window at 1 s or 250 ms.
 *
 * Windows are the last N, 2N, 4N, ... samples of the counter's unbroken run,
 * up to max_window (default 16N = 192 samples). A fast leak fires as soon as
 * the shortest full window clears the floors (12 samples by default); a slow
 * or noisy one fires when a longer window has gathered enough rise and
 * enough tau. The finding reports the longest window that passed, which is
 * the strongest evidence available at that moment.
 *
 * Limits the caller should know:
 *  - The longest window is counted in samples, so its span in seconds is
 *    max_window * interval. The effective slope floor is therefore
 *    max(min_slope_per_s, min_delta / span): at 1 s and 192 samples, an fd
 *    leak must be >= 16/191 s ~ 0.084/s to be seen. Rather than lower the
 *    floors, give the longest window a span in seconds with
 *    leakwatch_config_set_span() (4 minutes by default), which matters
 *    most at short intervals: 192 samples at 250 ms are only 48 s.
 *  - The first rise of a fan-out that clears both floors within the
 *    shortest window is, while it rises, indistinguishable from a fast leak
 *    and will fire: no detector that fires within 12 samples can know the
 *    counter will come back. Later rises to the same level do not (rule 4).
 *    The defaults are chosen above ordinary transient populations.
 *  - Rule 4 remembers only max_window samples, so after a long quiet spell a
 *    repeat of an old transient is judged afresh.
 *
 * Cost: per watched counter and sample, O(L) for the range check of each
 * window, and only for windows that pass it, O(M^2) pairs plus a linear-time
 * selection, where M is the window length capped at LEAKWATCH_MAX_FIT_POINTS
 * by even subsampling. A flat counter costs a few hundred compares; the
 * worst case (every window of every counter fitted) is about 20k pairs per
 * counter, well under a millisecond. bench/timeline measures it.
 *
 * Out of memory: leakwatch_new() fails with -ENOMEM; nothing later allocates.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Windows longer than this are fitted on an evenly spaced subset of this
 * many samples, which bounds the pair count at M(M-1)/2 = 8128. */
#define LEAKWATCH_MAX_FIT_POINTS 128

/* Shortest window when the config leaves it 0 (the seed's DefaultWindow). */
#define LEAKWATCH_DEFAULT_WINDOW 12
/* Below this a fit means nothing: three points admit any slope. */
#define LEAKWATCH_MIN_WINDOW 4
/* Default Kendall tau-a floor; see rule 3 above. */
#define LEAKWATCH_DEFAULT_MIN_TAU 0.6

#define LEAKWATCH_NAME_MAX 48

/* The floors one counter must clear, by counter name. */
struct leakwatch_threshold {
	char name[LEAKWATCH_NAME_MAX];
	double min_slope_per_s;
	double min_delta;
	double min_span_s; /* rule 6; 0: the rule is off */
};

struct leakwatch_config {
	/* Shortest window in samples; 0 means LEAKWATCH_DEFAULT_WINDOW; below
	 * LEAKWATCH_MIN_WINDOW is -EINVAL. */
	size_t window;
	/* Longest window in samples (also the memory kept per counter); 0
	 * means 16 * window. Must be >= window. */
	size_t max_window;
	/* Fire again after a finding. Off: each counter fires at most once.
	 * On: it fires again only on a fresh window that starts after the last
	 * finding's window ended (history is kept, so rule 4 still compares
	 * against everything seen before): a leak that keeps going fires
	 * about once per shortest window's worth of further growth. */
	bool repeat;
	/* Kendall tau-a floor; 0 means LEAKWATCH_DEFAULT_MIN_TAU. */
	double min_tau;
	/* Thresholds by counter name; NULL means leakwatch_default_thresholds().
	 * A non-NULL table is used as given: counters it does not name are
	 * accepted by leakwatch_feed() and never fire. When a name appears more
	 * than once the last entry wins, so a caller can append overrides to a
	 * copy of the defaults. Copied by leakwatch_new(). */
	const struct leakwatch_threshold *thresholds;
	size_t n_thresholds;
};

/*
 * The built-in floors (rise, slope, and for rule 6 the shortest span):
 *   open_fds        16,     0.05/s   (3 a minute; a fan-out of a few
 *                                     descriptors per child stays below 16;
 *                                     1 fd/s fires in about 16 s)
 *   threads          4,     0.05/s, 30 s (1 thread / 10 s fires within a
 *                                     minute; a pool grown on demand that
 *                                     then stays does not)
 *   child_procs      4,     0.01/s   (nothing legitimately keeps 4 unreaped
 *                                     children; slope floor is 1 per 100 s)
 *   rss_bytes       16 MiB, 256 KiB/s, 30 s (1 MiB/s fires within a
 *                                     minute; a fill that stops within 20 s
 *                                     and a GC sawtooth do not)
 *   heap_live_bytes 64 MiB, 16 KiB/s
 *   goroutines      64,     0.2/s
 * Returns a static table; *ret_n receives its length.
 */
const struct leakwatch_threshold *leakwatch_default_thresholds(size_t *ret_n);

/* Fill cfg with the defaults above (window 12, max_window 192, no repeat). */
void leakwatch_config_init(struct leakwatch_config *cfg);

/* How far back the longest window should reach, in seconds, for slow leaks
 * to be seen (1 fd / 5 s needs 80 s to rise by 16; 4 minutes leaves room
 * for noise). */
#define LEAKWATCH_DEFAULT_SPAN_S 240.0

/*
 * Raise cfg->max_window so the longest window spans at least span_s
 * seconds at interval_s between samples (never lowering it below 16 *
 * window). Call after setting cfg->window. At 1 s and the default span this
 * is 240 samples; at 250 ms, 960 (fitted on 128-point subsets, so the cost
 * per sample grows with the number of window lengths, not their size).
 * Returns 0, or -EINVAL if interval_s or span_s is not positive.
 */
int leakwatch_config_set_span(struct leakwatch_config *cfg, double interval_s, double span_s);

/*
 * Parse "NAME=SLOPE_PER_S:MIN_DELTA" (the --leak-threshold syntax) into
 * *ret. SLOPE and DELTA are decimal numbers and may carry a binary suffix
 * K, M or G (KiB, MiB, GiB: "rss_bytes=16K:64M"). Returns 0, or -EINVAL
 * on a malformed spec or a name of LEAKWATCH_NAME_MAX bytes or more (ret
 * untouched).
 */
int leakwatch_threshold_parse(const char *spec, struct leakwatch_threshold *ret);

/* One firing. Times are the caller's injected clock. */
struct leakwatch_finding {
	const char *counter;      /* registered name, borrowed from leakwatch_new */
	size_t counter_index;     /* its index in the names passed to _new */
	double slope_per_s;       /* Theil-Sen slope */
	double delta;             /* fitted rise: slope_per_s * (end - start) */
	double first, last;       /* the window's first and last raw values */
	double window_start_time, window_end_time;
	/* Sequence numbers of the window's first and last samples, counting
	 * leakwatch_feed() calls from 0 (including rejected and gap samples),
	 * so a caller that keeps its own ring of the last leakwatch_max_window()
	 * samples can dump exactly the ones fitted. */
	uint64_t window_start_seq, window_end_seq;
	size_t n_samples;         /* samples in the window (end - start + 1) */
	double tau;               /* Kendall tau-a, the goodness rule 3 uses */
	double r2;                /* least-squares R^2, reported, not used */
};

struct leakwatch;

/*
 * Build a watchdog over n counters named names[0..n-1] (borrowed: they must
 * outlive it). Counters with no threshold in cfg are accepted and ignored.
 * cfg NULL means leakwatch_config_init() defaults. A threshold naming a
 * counter not in names is ignored (the caller may register Go counters only
 * for Go targets). Returns 0 and *ret, -EINVAL on a bad config, -ENOMEM.
 * The caller frees *ret with leakwatch_free().
 */
int leakwatch_new(const struct leakwatch_config *cfg, const char *const *names,
		  size_t n, struct leakwatch **ret);

/* NULL is a no-op. */
void leakwatch_free(struct leakwatch *lw);

/*
 * Feed one sample: t in seconds, values[i] for counter names[i]. A negative
 * value means unknown (the timeline's -1) and restarts that counter's run:
 * a gap is never bridged, so no fit spans it.
 *
 * Up to cap findings are written to out[]; the count goes to *ret_n. cap >=
 * the number of counters never truncates. A counter whose finding did not
 * fit in out[] is treated as not having fired (it fires on the next sample).
 *
 * Returns 0, or -EINVAL if t is not after the previous sample's time (the
 * sample is dropped, nothing changes but the sequence number) or is not
 * finite.
 */
int leakwatch_feed(struct leakwatch *lw, double t, const int64_t *values,
		   struct leakwatch_finding *out, size_t cap, size_t *ret_n);

/* Longest window in samples: how many recent samples a caller must keep to
 * dump any finding's window. */
size_t leakwatch_max_window(const struct leakwatch *lw);

/* Whether counter i has a threshold (is watched), and whether it has fired. */
bool leakwatch_watched(const struct leakwatch *lw, size_t i);
bool leakwatch_fired(const struct leakwatch *lw, size_t i);

#endif
