/* SPDX-License-Identifier: MIT */
/*
 * The leak fitter. See leakwatch.h for the rules; this file is their
 * arithmetic. Per watched counter we keep a ring of (time, value, seq) of the
 * longest window; on each sample we try each window length, cheapest checks
 * first, and report the longest window that passes every rule.
 */
#include "timeline/leakwatch.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

static const struct leakwatch_threshold default_thresholds[] = {
	{ "open_fds", 0.05, 16, 0 },
	{ "threads", 0.05, 4, 30 },
	{ "child_procs", 0.01, 4, 0 },
	{ "rss_bytes", 256 * 1024.0, 16 * MIB, 30 },
	{ "heap_live_bytes", 16 * 1024.0, 64 * MIB, 0 },
	{ "goroutines", 0.2, 64, 0 },
};

/* A single sample-to-sample rise larger than this share of the window's
 * range makes the window a step, not a trend (rule 5 in the code below; it
 * backs up the tau floor, which noise on the flat sides of a step can lift
 * above 0.6 in short windows). */
#define MAX_JUMP_SHARE 0.5

struct counter {
	const char *name;
	bool watched;
	bool fired;
	struct leakwatch_threshold th;
	/* Ring of the counter's current unbroken run. */
	double *t, *v;
	uint64_t *seq;
	size_t head;   /* next slot to write */
	size_t count;  /* valid entries, <= cap */
	/* In repeat mode, windows must start at or after this sequence number,
	 * so a second finding never reuses the first one's evidence. */
	uint64_t min_start_seq;
};

struct leakwatch {
	size_t n;
	struct counter *c;
	size_t cap;        /* max_window */
	size_t *windows;   /* ascending window lengths */
	size_t n_windows;
	bool *ok;          /* per window: passed window_stats() this sample */
	bool repeat;
	double min_tau;
	uint64_t seq;      /* next sequence number */
	double last_t;
	bool have_t;
	/* Scratch for one fit, sized for LEAKWATCH_MAX_FIT_POINTS. */
	double *ft, *fv, *pairs, *resid;
};

const struct leakwatch_threshold *leakwatch_default_thresholds(size_t *ret_n)
{
	*ret_n = sizeof(default_thresholds) / sizeof(default_thresholds[0]);
	return default_thresholds;
}

void leakwatch_config_init(struct leakwatch_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->window = LEAKWATCH_DEFAULT_WINDOW;
	cfg->max_window = 16 * LEAKWATCH_DEFAULT_WINDOW;
	cfg->min_tau = LEAKWATCH_DEFAULT_MIN_TAU;
}

int leakwatch_config_set_span(struct leakwatch_config *cfg, double interval_s, double span_s)
{
	size_t w = cfg->window ? cfg->window : LEAKWATCH_DEFAULT_WINDOW;
	double want;

	if (!(interval_s > 0) || !(span_s > 0) || !isfinite(span_s / interval_s))
		return -EINVAL;
	/* +1: a window of k samples spans k - 1 intervals. */
	want = ceil(span_s / interval_s) + 1;
	if (want > 1e7)
		return -EINVAL; /* a ring of 10 million samples is a typo */
	if (cfg->max_window < 16 * w)
		cfg->max_window = 16 * w;
	if (want > (double)cfg->max_window)
		cfg->max_window = (size_t)want;
	return 0;
}

static int parse_scaled(const char *s, const char *end, double *ret)
{
	char buf[64];
	size_t len = (size_t)(end - s);
	char *e;
	double x, mul = 1;

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	x = strtod(buf, &e);
	if (e == buf || errno)
		return -EINVAL;
	switch (*e) {
	case '\0': break;
	case 'k': case 'K': mul = 1024.0; e++; break;
	case 'm': case 'M': mul = MIB; e++; break;
	case 'g': case 'G': mul = 1024.0 * MIB; e++; break;
	default: return -EINVAL;
	}
	if (*e != '\0' || !isfinite(x) || x < 0)
		return -EINVAL;
	*ret = x * mul;
	return 0;
}

int leakwatch_threshold_parse(const char *spec, struct leakwatch_threshold *ret)
{
	const char *eq = strchr(spec, '=');
	const char *colon;
	double slope, delta;

	if (!eq || eq == spec)
		return -EINVAL;
	colon = strchr(eq + 1, ':');
	if (!colon)
		return -EINVAL;
	if (parse_scaled(eq + 1, colon, &slope) < 0 ||
	    parse_scaled(colon + 1, colon + 1 + strlen(colon + 1), &delta) < 0)
		return -EINVAL;
	if ((size_t)(eq - spec) >= sizeof(ret->name))
		return -EINVAL;
	memset(ret->name, 0, sizeof(ret->name));
	memcpy(ret->name, spec, (size_t)(eq - spec));
	ret->min_slope_per_s = slope;
	ret->min_delta = delta;
	ret->min_span_s = 0; /* an override is the whole rule: no span */
	return 0;
}

void leakwatch_free(struct leakwatch *lw)
{
	if (!lw)
		return;
	if (lw->c) {
		for (size_t i = 0; i < lw->n; i++) {
			free(lw->c[i].t);
			free(lw->c[i].v);
			free(lw->c[i].seq);
		}
	}
	free(lw->c);
	free(lw->windows);
	free(lw->ok);
	free(lw->ft);
	free(lw->fv);
	free(lw->pairs);
	free(lw->resid);
	free(lw);
}

int leakwatch_new(const struct leakwatch_config *cfg, const char *const *names,
		  size_t n, struct leakwatch **ret)
{
	struct leakwatch_config defcfg;
	const struct leakwatch_threshold *th;
	size_t n_th, w, maxw, m = LEAKWATCH_MAX_FIT_POINTS;
	struct leakwatch *lw;

	if (!cfg) {
		leakwatch_config_init(&defcfg);
		cfg = &defcfg;
	}
	w = cfg->window ? cfg->window : LEAKWATCH_DEFAULT_WINDOW;
	maxw = cfg->max_window ? cfg->max_window : 16 * w;
	if (w < LEAKWATCH_MIN_WINDOW || maxw < w || (n && !names))
		return -EINVAL;
	if (cfg->min_tau < 0 || cfg->min_tau > 1)
		return -EINVAL;
	if (cfg->thresholds) {
		th = cfg->thresholds;
		n_th = cfg->n_thresholds;
	} else {
		th = leakwatch_default_thresholds(&n_th);
	}

	lw = calloc(1, sizeof(*lw));
	if (!lw)
		return -ENOMEM;
	lw->n = n;
	lw->cap = maxw;
	lw->repeat = cfg->repeat;
	lw->min_tau = cfg->min_tau > 0 ? cfg->min_tau : LEAKWATCH_DEFAULT_MIN_TAU;
	lw->c = calloc(n ? n : 1, sizeof(*lw->c));
	/* N, 2N, 4N, ... and max_window itself if it is not on that ladder. */
	lw->windows = calloc(8 * sizeof(size_t) + 1, sizeof(size_t));
	lw->ok = calloc(8 * sizeof(size_t) + 1, sizeof(bool));
	lw->ft = malloc(m * sizeof(double));
	lw->fv = malloc(m * sizeof(double));
	lw->resid = malloc(m * sizeof(double));
	lw->pairs = malloc(m * (m - 1) / 2 * sizeof(double));
	if (!lw->c || !lw->windows || !lw->ok || !lw->ft || !lw->fv || !lw->resid || !lw->pairs)
		goto oom;
	for (size_t l = w; l <= maxw; l *= 2) {
		lw->windows[lw->n_windows++] = l;
		if (l > maxw / 2)
			break;
	}
	if (lw->windows[lw->n_windows - 1] != maxw)
		lw->windows[lw->n_windows++] = maxw;

	for (size_t i = 0; i < n; i++) {
		struct counter *c = &lw->c[i];

		c->name = names[i];
		for (size_t k = 0; k < n_th; k++) {
			if (names[i] && strcmp(th[k].name, names[i]) == 0) {
				/* Last one wins, so a --leak-threshold given after
				 * the defaults overrides them. */
				c->th = th[k];
				c->watched = true;
			}
		}
		if (!c->watched)
			continue;
		if (!(c->th.min_slope_per_s >= 0) || !(c->th.min_delta >= 0)) {
			leakwatch_free(lw);
			return -EINVAL;
		}
		c->t = malloc(maxw * sizeof(double));
		c->v = malloc(maxw * sizeof(double));
		c->seq = malloc(maxw * sizeof(uint64_t));
		if (!c->t || !c->v || !c->seq)
			goto oom;
	}
	*ret = lw;
	return 0;
oom:
	leakwatch_free(lw);
	return -ENOMEM;
}

size_t leakwatch_max_window(const struct leakwatch *lw)
{
	return lw->cap;
}

bool leakwatch_watched(const struct leakwatch *lw, size_t i)
{
	return i < lw->n && lw->c[i].watched;
}

bool leakwatch_fired(const struct leakwatch *lw, size_t i)
{
	return i < lw->n && lw->c[i].fired;
}

/* Ring index of the k-th oldest entry of the run (k = 0 is the oldest). */
static size_t ring_at(const struct leakwatch *lw, const struct counter *c, size_t k)
{
	return (c->head + lw->cap - c->count + k) % lw->cap;
}

static void swap_d(double *a, double *b)
{
	double x = *a;
	*a = *b;
	*b = x;
}

/* The k-th smallest of a[0..n-1] (0-based), reordering a. Hoare selection
 * with a median-of-three pivot: linear on average, and the pair slopes of
 * a real series are far from the adversarial orderings. */
static double select_kth(double *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (hi > lo) {
		size_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
		double pivot;

		if (a[mid] < a[lo]) swap_d(&a[mid], &a[lo]);
		if (a[hi] < a[lo]) swap_d(&a[hi], &a[lo]);
		if (a[hi] < a[mid]) swap_d(&a[hi], &a[mid]);
		pivot = a[mid];
		while (i <= j) {
			while (a[i] < pivot) i++;
			while (a[j] > pivot) j--;
			if (i <= j) {
				swap_d(&a[i], &a[j]);
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return a[k];
	}
	return a[k];
}

static double median(double *a, size_t n)
{
	double hi = select_kth(a, n, n / 2), lo;

	if (n % 2)
		return hi;
	/* After selection everything below n/2 is <= hi; its maximum is the
	 * lower middle. */
	lo = a[0];
	for (size_t i = 1; i < n / 2; i++)
		if (a[i] > lo)
			lo = a[i];
	return (lo + hi) / 2;
}

/*
 * Rules 2 (raw range) and 5 (spread) for every window length at once, in
 * one pass from the newest sample back: ok[w] says whether window w passed.
 * This is all a flat counter ever costs, so it walks the ring directly
 * rather than through ring_at()'s division.
 */
static void window_stats(const struct leakwatch *lw, const struct counter *c, bool *ok)
{
	size_t r = (c->head + lw->cap - 1) % lw->cap, len = 1, w = 0;
	double vmin = c->v[r], vmax = vmin, maxjump = 0, next = vmin;

	for (size_t k = 0; k < lw->n_windows; k++)
		ok[k] = false;
	while (w < lw->n_windows && lw->windows[w] <= c->count) {
		if (len == lw->windows[w]) {
			double range = vmax - vmin;

			ok[w++] = range > 0 && range >= c->th.min_delta &&
				  maxjump <= MAX_JUMP_SHARE * range;
			continue;
		}
		r = r ? r - 1 : lw->cap - 1;
		len++;
		{
			double x = c->v[r];

			if (x < vmin) vmin = x;
			if (x > vmax) vmax = x;
			if (next - x > maxjump) maxjump = next - x;
			next = x;
		}
	}
}

struct fit {
	size_t len;
	double slope, delta, tau, r2;
	double t0, t1, v0, v1;
	uint64_t seq0, seq1;
};

/*
 * Try the last len samples of c, which have already passed rules 2 (raw
 * range) and 5 (spread) in window_stats(). Returns true and fills *f when
 * every other rule holds too. Cheapest first: tau (one pass over the pairs,
 * which also stores the slopes), then the median slope, the fitted rise,
 * and new ground.
 */
static bool try_window(struct leakwatch *lw, struct counter *c, size_t len, struct fit *f)
{
	const struct leakwatch_threshold *th = &c->th;
	size_t first = c->count - len, m, np = 0;
	long conc = 0, disc = 0;
	double slope, tau, intercept, fitted_end, duration;

	/* Gather the fit points, evenly subsampled past the cap; the first and
	 * last sample are always included so the duration is exact. */
	m = len <= LEAKWATCH_MAX_FIT_POINTS ? len : LEAKWATCH_MAX_FIT_POINTS;
	for (size_t j = 0; j < m; j++) {
		size_t k = first + (m == len ? j : (j * (len - 1) + (m - 1) / 2) / (m - 1));
		size_t r = ring_at(lw, c, k);

		lw->ft[j] = c->t[r];
		lw->fv[j] = c->v[r];
	}

	/* Rule 3: Kendall tau-a, and the pairwise slopes for rule 1. Times are
	 * strictly increasing (leakwatch_feed enforces it), so dt > 0. */
	for (size_t i = 0; i < m; i++) {
		for (size_t j = i + 1; j < m; j++) {
			double dv = lw->fv[j] - lw->fv[i];

			conc += dv > 0;
			disc += dv < 0;
			lw->pairs[np++] = dv / (lw->ft[j] - lw->ft[i]);
		}
	}
	tau = (double)(conc - disc) / (double)np;
	if (tau < lw->min_tau)
		return false;

	/* Rule 1: Theil-Sen slope. */
	slope = median(lw->pairs, np);
	if (!(slope > 0) || slope < th->min_slope_per_s)
		return false;

	/* Rule 2: fitted rise. */
	duration = lw->ft[m - 1] - lw->ft[0];
	if (slope * duration < th->min_delta)
		return false;

	/* Rule 6: a long enough window whose last third makes a new high. */
	if (th->min_span_s > 0) {
		if (duration < th->min_span_s)
			return false;
		size_t cut = first + (2 * len) / 3;
		double early = -INFINITY, late = -INFINITY;
		for (size_t k = first; k < c->count; k++) {
			double x = c->v[ring_at(lw, c, k)];
			if (k < cut && x > early)
				early = x;
			if (k >= cut && x > late)
				late = x;
		}
		if (!(late - early >= th->min_delta / 8))
			return false;
	}

	/* Rule 4: new ground. The intercept is the median residual, the usual
	 * companion of the Theil-Sen slope; times are taken relative to the
	 * window start so the products stay small. */
	for (size_t j = 0; j < m; j++)
		lw->resid[j] = lw->fv[j] - slope * (lw->ft[j] - lw->ft[0]);
	intercept = median(lw->resid, m);
	fitted_end = intercept + slope * duration;
	for (size_t k = 0; k < first; k++) {
		if (fitted_end - c->v[ring_at(lw, c, k)] < th->min_delta)
			return false;
	}

	/* Least-squares R^2, for the report only. */
	{
		double mt = 0, mv = 0, stt = 0, svv = 0, stv = 0;

		for (size_t j = 0; j < m; j++) {
			mt += lw->ft[j];
			mv += lw->fv[j];
		}
		mt /= (double)m;
		mv /= (double)m;
		for (size_t j = 0; j < m; j++) {
			double dt = lw->ft[j] - mt, dv = lw->fv[j] - mv;

			stt += dt * dt;
			svv += dv * dv;
			stv += dt * dv;
		}
		f->r2 = (stt > 0 && svv > 0) ? stv * stv / (stt * svv) : 0;
	}

	f->len = len;
	f->slope = slope;
	f->delta = slope * duration;
	f->tau = tau;
	f->t0 = c->t[ring_at(lw, c, first)];
	f->t1 = c->t[ring_at(lw, c, c->count - 1)];
	f->v0 = c->v[ring_at(lw, c, first)];
	f->v1 = c->v[ring_at(lw, c, c->count - 1)];
	f->seq0 = c->seq[ring_at(lw, c, first)];
	f->seq1 = c->seq[ring_at(lw, c, c->count - 1)];
	return true;
}

int leakwatch_feed(struct leakwatch *lw, double t, const int64_t *values,
		   struct leakwatch_finding *out, size_t cap, size_t *ret_n)
{
	uint64_t seq = lw->seq++;
	size_t nout = 0;

	*ret_n = 0;
	if (!isfinite(t) || (lw->have_t && !(t > lw->last_t)))
		return -EINVAL;
	lw->last_t = t;
	lw->have_t = true;

	for (size_t i = 0; i < lw->n; i++) {
		struct counter *c = &lw->c[i];
		struct fit best = { 0 }, f;
		bool found = false;

		if (!c->watched || (c->fired && !lw->repeat))
			continue;
		if (values[i] < 0) {
			/* Unknown: the run ends here; no fit may bridge it. */
			c->count = 0;
			continue;
		}
		c->t[c->head] = t;
		c->v[c->head] = (double)values[i];
		c->seq[c->head] = seq;
		c->head = (c->head + 1) % lw->cap;
		if (c->count < lw->cap)
			c->count++;

		window_stats(lw, c, lw->ok);
		for (size_t w = 0; w < lw->n_windows; w++) {
			size_t len = lw->windows[w];

			if (len > c->count)
				break;
			if (!lw->ok[w])
				continue;
			/* Repeat mode: no overlap with the previous finding. */
			if (c->seq[ring_at(lw, c, c->count - len)] < c->min_start_seq)
				break;
			if (try_window(lw, c, len, &f)) {
				best = f;
				found = true;
			}
		}
		if (!found || nout >= cap)
			continue;

		out[nout++] = (struct leakwatch_finding){
			.counter = c->name,
			.counter_index = i,
			.slope_per_s = best.slope,
			.delta = best.delta,
			.first = best.v0,
			.last = best.v1,
			.window_start_time = best.t0,
			.window_end_time = best.t1,
			.window_start_seq = best.seq0,
			.window_end_seq = best.seq1,
			.n_samples = best.len,
			.tau = best.tau,
			.r2 = best.r2,
		};
		c->fired = true;
		c->min_start_seq = seq + 1;
	}
	*ret_n = nout;
	return 0;
}
