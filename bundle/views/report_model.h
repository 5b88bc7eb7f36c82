/*
 * report_model: what the reading commands (report, report --html, diff)
 * compute from a bundle, with no output of its own: function tables with
 * flat and cumulative shares, threads grouped by identical stack (pt-pmp),
 * goroutines grouped by stack and wait reason, per-counter statistics and
 * the whole report as one JSON document that the text, --json and HTML
 * renderers all share, so they can never disagree.
 *
 * Functions return 0 or a negative errno and never print. Results are
 * owned by the caller and released with the matching _release/_free.
 * Strings inside results point into the bundle_reader they were built
 * from unless noted: keep the reader alive while using them.
 */
#ifndef DIAG_BUNDLE_VIEWS_REPORT_MODEL_H
#define DIAG_BUNDLE_VIEWS_REPORT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "bundle/reader.h"
#include "bundle/strmap.h"

/* ---- functions by flat and cumulative share ---- */

struct fn_share {
	const char *name;
	int64_t flat; /* value where this function is the leaf */
	int64_t cum;  /* value of samples with it anywhere on the stack (once per sample) */
};

struct fn_table {
	size_t value_index; /* which sample value is summed (the last one: time) */
	const char *unit;   /* its unit, e.g. "nanoseconds" */
	int64_t total;	    /* sum of that value over all samples */
	int64_t samples;    /* sum of value[0] (sample counts) */
	struct fn_share *fns;
	size_t nfns; /* sorted by flat, then cum, then name */
	struct strmap by_name; /* name -> index in fns, for fn_table_find */
};

/* Build from p, counting only samples of thread tid (tid < 0: all).
 * Release with fn_table_release. */
int fn_table_build(const struct bundle_profile *p, int64_t tid, struct fn_table *ret);
void fn_table_release(struct fn_table *t);
/* The entry for name, or NULL. O(1): the table is hashed by name. */
const struct fn_share *fn_table_find(const struct fn_table *t, const char *name);

/* ---- threads grouped by identical stack ---- */

struct thread_member {
	int64_t tid;
	const char *comm;  /* may be NULL */
	const char *state; /* may be NULL */
	char *syscall;	   /* from threads.txt, owned; NULL if not in a syscall */
	char *wchan;	   /* from threads.txt, owned; NULL if unknown */
	char *waits;	   /* from threads.txt (thread_waits.h), owned; NULL if none */
};

struct thread_group {
	const struct bundle_frame *frames; /* leaf first, from the first member */
	size_t nframes;
	struct thread_member *threads;
	size_t nthreads;
	char *key; /* function names joined by ';' root first, owned */
};

/* Group the threads of a snapshot profile (prefix + "threads.pprof", with
 * state/wchan from prefix + "threads.txt" when present). prefix is "" for
 * the bundle's own snapshot or e.g. "leak/open_fds-1/". Groups are sorted
 * by size, largest first. Free with thread_groups_free. */
int thread_groups_build(struct bundle_reader *r, const char *prefix, struct thread_group **ret,
			size_t *ret_n);
void thread_groups_free(struct thread_group *g, size_t n);

/* ---- goroutines (Go targets: goroutine.txt, pprof debug=2 format) ---- */

struct goroutine_group {
	char *reason;  /* "chan receive", "select", "syscall" ... (durations dropped) */
	char **frames; /* function names, leaf first */
	size_t nframes;
	size_t count;
	char *key; /* reason + stack, for matching across bundles */
};

/* Parse a debug=2 goroutine dump and group it. Strings are owned by the
 * groups. Sorted by count, largest first. */
int goroutine_groups_parse(const char *text, struct goroutine_group **ret, size_t *ret_n);
void goroutine_groups_free(struct goroutine_group *g, size_t n);

/* ---- timeline counters ---- */

struct counter_stat {
	double first, last, min, max;
	double slope_per_s; /* least squares over the valid points */
	double span_s;	    /* time from first to last valid point */
	bool cumulative;    /* a running total (CPU time, faults...): its rate is what matters */
};

void counter_stat_compute(const struct bundle_timeline *tl, const struct bundle_counter *c,
			  struct counter_stat *ret);

/* Sparkline of v (n points) in UTF-8 block characters, resampled to at
 * most width cells. as_rate plots the per-second difference instead (for
 * running totals; t gives the times). NAN points are blanks. */
void sparkline(const double *v, const double *t, size_t n, bool as_rate, size_t width, char *out,
	       size_t out_size);

/* Human value for a counter: "1.6 MiB" for *_bytes, "2.15 s" for *_ns,
 * "47" otherwise. */
void format_counter_value(const char *name, double v, char *out, size_t out_size);

/* ---- the report document ---- */

struct report_options {
	size_t top;	 /* functions per table (0: 15) */
	bool with_flame; /* add "flame": every sample's stack (for HTML) */
};

/* The report as JSON (layout in doc/diag-attach.1 and report.c's --help).
 * Missing members are not errors: the section is absent and a line is
 * added to "warnings"; a member that is present but cannot be decoded is
 * a warning too. A member past one of the reader's caps is not: the
 * report is not made and BUNDLE_PAST_CAP returned (bundle_reader_refusal
 * says which member and cap). Otherwise returns 0 or -ENOMEM. Caller
 * frees *ret with cJSON_Delete. */
int report_build_json(struct bundle_reader *r, const struct report_options *opt, cJSON **ret);

#endif
