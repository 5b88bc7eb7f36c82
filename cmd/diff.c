/* diag-attach diff A B: two bundles of the same program compared. Builds
 * one JSON document (printed as is with --json) from report_model's
 * tables, then renders it as text. */
#include "diff.h"
#include "timeline/leakwatch.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle/reader.h"
#include "cmd/cli/exit_codes.h"
#include "report.h"
#include "bundle/read/report_model.h"
#include "bundle/read/report_text.h"
#include "cmd/cli/util.h"

static void usage(FILE *out)
{
	fputs("Usage:\n"
	      " diag-attach diff [options] A B\n\n"
	      "Compare two bundles of the same program (A before, B after): timeline\n"
	      "counters whose level or growth rate changed, with those that grow in B\n"
	      "(a leak finding, or a slope above the leak-watch floor) first; functions\n"
	      "whose share of CPU or wall time moved most; thread and goroutine groups\n"
	      "that appeared or grew.\n\n"
	      "Options:\n"
	      " -j, --json               print the comparison as one JSON object\n"
	      " -n, --top N              functions per table (default 10)\n"
	      "     --color[=WHEN]       auto (default), always, never\n"
	      " -h, --help               display this help\n\n"
	      "Exit status:\n"
	      "  0  compared (whatever the differences)\n"
	      "  1  A or B is not a bundle (no or malformed manifest.json)\n"
	      "  2  usage error\n"
	      " 11  internal error (out of memory)\n\n"
	      "See diag-attach(1).\n",
	      out);
}

/* Leak-watch floors when neither manifest has them: the capture's own
 * defaults. */
static double default_floor(const char *name)
{
	static const struct {
		const char *name;
		double slope;
	} floors[] = {
		{"rss_bytes", 16384},  {"threads", 0.05},   {"open_fds", 0.05},
		{"child_procs", 0.01}, {"goroutines", 0.2}, {"heap_live_bytes", 16384},
	};
	for (size_t i = 0; i < sizeof(floors) / sizeof(floors[0]); i++)
		if (strcmp(floors[i].name, name) == 0)
			return floors[i].slope;
	return NAN;
}

/* A leak-watch floor recorded in B's manifest, else A's; NULL if neither
 * has one for this counter. */
static const cJSON *manifest_floor(const cJSON *ma, const cJSON *mb, const char *name,
				   const char *field)
{
	const cJSON *ms[] = {mb, ma};
	for (size_t i = 0; i < 2; i++) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(ms[i], "leak_watch"),
				"thresholds"),
			name);
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, field);
		if (cJSON_IsNumber(v))
			return v;
	}
	return NULL;
}

static double floor_for(const cJSON *ma, const cJSON *mb, const char *name)
{
	const cJSON *v = manifest_floor(ma, mb, name, "min_slope_per_s");
	return v ? v->valuedouble : default_floor(name);
}

/* The rise a counter must make to count as growing: the bundle's own
 * leak-watch floor, else the watchdog's default, else none. Without it a
 * process that is merely warming up (RSS +1 MiB in 4 s) reads as leaking. */
static double rise_floor_for(const cJSON *ma, const cJSON *mb, const char *name)
{
	const cJSON *v = manifest_floor(ma, mb, name, "min_delta");
	if (v)
		return v->valuedouble;
	size_t n;
	const struct leakwatch_threshold *def = leakwatch_default_thresholds(&n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(def[i].name, name) == 0)
			return def[i].min_delta;
	return 0;
}

static bool has_finding(const cJSON *m, const char *name)
{
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(m, "findings"))
	{
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(f, "counter");
		if (cJSON_IsString(c) && strcmp(c->valuestring, name) == 0)
			return true;
	}
	return false;
}

static const struct bundle_counter *find_counter(const struct bundle_timeline *tl, const char *name)
{
	for (size_t i = 0; tl && i < tl->ncounters; i++)
		if (strcmp(tl->counters[i].name, name) == 0)
			return &tl->counters[i];
	return NULL;
}

static void add_stat(cJSON *o, const char *key, const struct bundle_timeline *tl,
		     const struct bundle_counter *c, struct counter_stat *ret)
{
	if (!c) {
		ret->slope_per_s = NAN;
		return;
	}
	counter_stat_compute(tl, c, ret);
	cJSON *s = cJSON_AddObjectToObject(o, key);
	cJSON_AddNumberToObject(s, "first", ret->first);
	cJSON_AddNumberToObject(s, "last", ret->last);
	cJSON_AddNumberToObject(s, "slope_per_s",
				fabs(ret->slope_per_s) < 1e-12 ? 0 : ret->slope_per_s);
}

static cJSON *diff_counters(struct bundle_reader *a, struct bundle_reader *b)
{
	const struct bundle_timeline *ta = NULL, *tb = NULL;
	if (bundle_reader_timeline(a, &ta) < 0)
		ta = NULL;
	if (bundle_reader_timeline(b, &tb) < 0)
		tb = NULL;
	cJSON *arr = cJSON_CreateArray();
	const cJSON *ma = bundle_reader_manifest(a), *mb = bundle_reader_manifest(b);
	/* B's counters in order, then A's that B lacks. */
	const struct bundle_timeline *order[] = {tb, ta};
	for (size_t pass = 0; pass < 2; pass++) {
		const struct bundle_timeline *tl = order[pass];
		for (size_t i = 0; tl && i < tl->ncounters; i++) {
			const char *name = tl->counters[i].name;
			if (pass == 1 && find_counter(tb, name))
				continue;
			const struct bundle_counter *ca = find_counter(ta, name),
						    *cb = find_counter(tb, name);
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", name);
			struct counter_stat sa = {0}, sb = {0};
			add_stat(o, "a", ta, ca, &sa);
			add_stat(o, "b", tb, cb, &sb);
			double fl = floor_for(ma, mb, name);
			double rise = rise_floor_for(ma, mb, name);
			bool grows_b = cb && !isnan(fl) && sb.slope_per_s > fl && sb.last > sb.first &&
				       sb.last - sb.first >= rise;
			bool grows_a = ca && !isnan(fl) && sa.slope_per_s > fl && sa.last > sa.first &&
				       sa.last - sa.first >= rise;
			bool leak_b = has_finding(mb, name) || (grows_b && !grows_a);
			bool leak_a = has_finding(ma, name);
			/* A counter only one side has (a snapshot has none) is
			 * news only if it moved there. */
			bool changed =
				ca && cb ? sa.first != sb.first || sa.last != sb.last ||
						   fabs(sa.slope_per_s - sb.slope_per_s) > 1e-9
				: ca ? sa.first != sa.last
				     : sb.first != sb.last;
			cJSON_AddBoolToObject(o, "growing_in_b", leak_b);
			cJSON_AddBoolToObject(o, "finding_in_a", leak_a);
			cJSON_AddBoolToObject(o, "finding_in_b", has_finding(mb, name));
			cJSON_AddBoolToObject(o, "changed", changed);
			cJSON_AddBoolToObject(o, "cumulative", (ca ? sa : sb).cumulative);
			if (!isnan(fl))
				cJSON_AddNumberToObject(o, "leak_floor_per_s", fl);
			cJSON_AddItemToArray(arr, o);
		}
	}
	/* Growing-in-B first, keeping the counter order otherwise. */
	cJSON *sorted = cJSON_CreateArray();
	for (int want = 1; want >= 0; want--) {
		const cJSON *o;
		cJSON_ArrayForEach(o, arr)
		{
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "growing_in_b")) ==
			    want)
				cJSON_AddItemToArray(sorted, cJSON_Duplicate(o, true));
		}
	}
	cJSON_Delete(arr);
	return sorted;
}

struct moved {
	const char *name;
	double fa, fb, ca, cb; /* flat and cum shares in percent */
};

static int cmp_moved(const void *x, const void *y)
{
	const struct moved *a = x, *b = y;
	double da = fmax(fabs(a->fb - a->fa), fabs(a->cb - a->ca));
	double db = fmax(fabs(b->fb - b->fa), fabs(b->cb - b->ca));
	return da < db ? 1 : da > db ? -1 : strcmp(a->name, b->name);
}

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0;
}

static cJSON *diff_functions(struct bundle_reader *a, struct bundle_reader *b, const char *member,
			     size_t top)
{
	const struct bundle_profile *pa, *pb;
	if (!bundle_reader_has(a, member) || !bundle_reader_has(b, member) ||
	    bundle_reader_profile(a, member, &pa) < 0 || bundle_reader_profile(b, member, &pb) < 0)
		return NULL;
	struct fn_table ta, tb;
	if (fn_table_build(pa, -1, &ta) < 0)
		return NULL;
	if (fn_table_build(pb, -1, &tb) < 0) {
		fn_table_release(&ta);
		return NULL;
	}
	/* With no samples on one side every share "moves" by 100 points;
	 * that says nothing, so list nothing. */
	struct moved *mv =
		ta.samples && tb.samples ? calloc(ta.nfns + tb.nfns + 1, sizeof(*mv)) : NULL;
	size_t n = 0;
	cJSON *arr = cJSON_CreateArray();
	if (mv) {
		for (size_t i = 0; i < tb.nfns; i++) {
			const struct fn_share *x = fn_table_find(&ta, tb.fns[i].name);
			mv[n++] = (struct moved){tb.fns[i].name, x ? pct(x->flat, ta.total) : 0,
						 pct(tb.fns[i].flat, tb.total),
						 x ? pct(x->cum, ta.total) : 0,
						 pct(tb.fns[i].cum, tb.total)};
		}
		for (size_t i = 0; i < ta.nfns; i++)
			if (!fn_table_find(&tb, ta.fns[i].name))
				mv[n++] = (struct moved){ta.fns[i].name,
							 pct(ta.fns[i].flat, ta.total), 0,
							 pct(ta.fns[i].cum, ta.total), 0};
		qsort(mv, n, sizeof(*mv), cmp_moved);
		for (size_t i = 0; i < n && i < top; i++) {
			if (fmax(fabs(mv[i].fb - mv[i].fa), fabs(mv[i].cb - mv[i].ca)) < 0.5)
				break; /* below half a point is sampling noise */
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "function", mv[i].name);
			cJSON_AddNumberToObject(o, "flat_pct_a", mv[i].fa);
			cJSON_AddNumberToObject(o, "flat_pct_b", mv[i].fb);
			cJSON_AddNumberToObject(o, "cum_pct_a", mv[i].ca);
			cJSON_AddNumberToObject(o, "cum_pct_b", mv[i].cb);
			cJSON_AddItemToArray(arr, o);
		}
		free(mv);
	}
	cJSON *res = cJSON_CreateObject();
	cJSON_AddNumberToObject(res, "samples_a", (double)ta.samples);
	cJSON_AddNumberToObject(res, "samples_b", (double)tb.samples);
	cJSON_AddItemToObject(res, "moved", arr);
	fn_table_release(&ta);
	fn_table_release(&tb);
	return res;
}

/* A group whose count went from a to b: {"a", "b", "change"}, change
 * being "appeared", "grew" or "gone"; the caller adds the rest (reason,
 * stack). */
static cJSON *change_new(size_t a, size_t b)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "a", (double)a);
	cJSON_AddNumberToObject(o, "b", (double)b);
	cJSON_AddStringToObject(o, "change", b == 0 ? "gone" : a ? "grew" : "appeared");
	return o;
}

static cJSON *diff_threads(struct bundle_reader *a, struct bundle_reader *b)
{
	struct thread_group *ga = NULL, *gb = NULL;
	size_t na = 0, nb = 0;
	if (thread_groups_build(a, "", &ga, &na) < 0)
		na = 0;
	if (thread_groups_build(b, "", &gb, &nb) < 0) {
		thread_groups_free(ga, na);
		return NULL;
	}
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < nb; i++) {
		size_t ca = 0;
		for (size_t k = 0; k < na; k++)
			if (strcmp(ga[k].key, gb[i].key) == 0)
				ca = ga[k].nthreads;
		if (gb[i].nthreads <= ca)
			continue;
		cJSON *o = change_new(ca, gb[i].nthreads);
		cJSON *s = cJSON_AddArrayToObject(o, "stack");
		for (size_t k = 0; k < gb[i].nframes; k++)
			cJSON_AddItemToArray(s, cJSON_CreateString(gb[i].frames[k].function));
		cJSON_AddItemToArray(arr, o);
	}
	for (size_t k = 0; k < na; k++) {
		bool in_b = false;
		for (size_t i = 0; i < nb; i++)
			in_b |= strcmp(ga[k].key, gb[i].key) == 0;
		if (in_b)
			continue;
		cJSON *o = change_new(ga[k].nthreads, 0);
		cJSON *s = cJSON_AddArrayToObject(o, "stack");
		for (size_t f = 0; f < ga[k].nframes; f++)
			cJSON_AddItemToArray(s, cJSON_CreateString(ga[k].frames[f].function));
		cJSON_AddItemToArray(arr, o);
	}
	thread_groups_free(ga, na);
	thread_groups_free(gb, nb);
	return arr;
}

static int load_goroutines(struct bundle_reader *r, struct goroutine_group **g, size_t *n)
{
	char *txt;
	size_t len;
	*g = NULL;
	*n = 0;
	if (!bundle_reader_has(r, "goroutine.txt") ||
	    bundle_reader_read(r, "goroutine.txt", &txt, &len) < 0)
		return -ENOENT;
	int e = goroutine_groups_parse(txt, g, n);
	free(txt);
	return e;
}

static cJSON *diff_goroutines(struct bundle_reader *a, struct bundle_reader *b)
{
	struct goroutine_group *ga, *gb;
	size_t na, nb;
	int ea = load_goroutines(a, &ga, &na), eb = load_goroutines(b, &gb, &nb);
	if (ea < 0 && eb < 0)
		return NULL;
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < nb; i++) {
		size_t ca = 0;
		for (size_t k = 0; k < na; k++)
			if (strcmp(ga[k].key, gb[i].key) == 0)
				ca = ga[k].count;
		if (gb[i].count <= ca)
			continue;
		cJSON *o = change_new(ca, gb[i].count);
		cJSON_AddStringToObject(o, "reason", gb[i].reason);
		cJSON *s = cJSON_AddArrayToObject(o, "stack");
		for (size_t k = 0; k < gb[i].nframes; k++)
			cJSON_AddItemToArray(s, cJSON_CreateString(gb[i].frames[k]));
		cJSON_AddItemToArray(arr, o);
	}
	goroutine_groups_free(ga, na);
	goroutine_groups_free(gb, nb);
	return arr;
}

static cJSON *side(const struct bundle_reader *r)
{
	const cJSON *m = bundle_reader_manifest(r);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "bundle", bundle_reader_dir(r));
	static const char *const keys[] = {"bundle_id", "started_at", "ended_at", "mode", "target"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const cJSON *it = cJSON_GetObjectItemCaseSensitive(m, keys[i]);
		if (it)
			cJSON_AddItemToObject(o, keys[i], cJSON_Duplicate(it, true));
	}
	return o;
}

static const char *tstr(const cJSON *side_obj, const char *k)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(side_obj, "target"), k);
	return cJSON_IsString(t) ? t->valuestring : NULL;
}

static void print_stack(const cJSON *stack, FILE *out)
{
	size_t i = 0;
	const cJSON *f;
	cJSON_ArrayForEach(f, stack)
	{
		if (i == 8) {
			fputs(" <- ...", out);
			break;
		}
		fprintf(out, "%s%s", i++ ? " <- " : "", cJSON_IsString(f) ? f->valuestring : "?");
	}
}

static void print_text(const cJSON *d, FILE *out, bool color)
{
	const char *bold = color ? "\033[1m" : "", *red = color ? "\033[31m" : "",
		   *green = color ? "\033[32m" : "", *off = color ? "\033[0m" : "";
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(d, "a"),
		    *b = cJSON_GetObjectItemCaseSensitive(d, "b");
	const cJSON *sa = cJSON_GetObjectItemCaseSensitive(a, "started_at"),
		    *sb = cJSON_GetObjectItemCaseSensitive(b, "started_at");
	fprintf(out, "%sdiag-attach diff%s\n  A  %s  %s (%s)\n  B  %s  %s (%s)\n", bold, off,
		cJSON_GetObjectItemCaseSensitive(a, "bundle")->valuestring,
		tstr(a, "comm") ? tstr(a, "comm") : "?", cJSON_IsString(sa) ? sa->valuestring : "?",
		cJSON_GetObjectItemCaseSensitive(b, "bundle")->valuestring,
		tstr(b, "comm") ? tstr(b, "comm") : "?",
		cJSON_IsString(sb) ? sb->valuestring : "?");
	const char *ba = tstr(a, "build_id"), *bb = tstr(b, "build_id");
	if (ba && bb && strcmp(ba, bb) != 0)
		fprintf(out, "  %snote:%s different builds (build-id %.12s vs %.12s)\n", red, off,
			ba, bb);

	fprintf(out, "\n%sCOUNTERS%s  (level A first -> last | B first -> last | slope A -> B)\n",
		bold, off);
	const cJSON *c;
	size_t shown = 0;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(d, "counters"))
	{
		const char *name = cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring;
		bool grow = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "growing_in_b"));
		if (!grow && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "changed")))
			continue;
		const cJSON *xa = cJSON_GetObjectItemCaseSensitive(c, "a"),
			    *xb = cJSON_GetObjectItemCaseSensitive(c, "b");
		char a1[32] = "-", a2[32] = "-", b1[32] = "-", b2[32] = "-", s1[32] = "-",
		     s2[32] = "-";
		if (xa) {
			format_counter_value(
				name, cJSON_GetObjectItemCaseSensitive(xa, "first")->valuedouble,
				a1, sizeof(a1));
			format_counter_value(
				name, cJSON_GetObjectItemCaseSensitive(xa, "last")->valuedouble, a2,
				sizeof(a2));
			format_counter_value(
				name,
				cJSON_GetObjectItemCaseSensitive(xa, "slope_per_s")->valuedouble,
				s1, sizeof(s1));
		}
		if (xb) {
			format_counter_value(
				name, cJSON_GetObjectItemCaseSensitive(xb, "first")->valuedouble,
				b1, sizeof(b1));
			format_counter_value(
				name, cJSON_GetObjectItemCaseSensitive(xb, "last")->valuedouble, b2,
				sizeof(b2));
			format_counter_value(
				name,
				cJSON_GetObjectItemCaseSensitive(xb, "slope_per_s")->valuedouble,
				s2, sizeof(s2));
		}
		fprintf(out, "  %s%-28s%s %10s -> %-10s | %10s -> %-10s | %s/s -> %s/s%s%s%s\n",
			grow ? red : "", name, grow ? off : "", a1, a2, b1, b2, s1, s2,
			grow ? red : "",
			grow ? (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "finding_in_b"))
					? "  LEAKING in B (finding)"
					: "  GROWING in B")
			     : "",
			grow ? off : "");
		shown++;
	}
	if (!shown)
		fputs("  no counter changed\n", out);

	static const char *const kinds[] = {"cpu", "wall"};
	for (size_t k = 0; k < 2; k++) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(d, "functions"), kinds[k]);
		if (!f)
			continue;
		fprintf(out, "\n%s%s%s share moved (flat%% A -> B, cum%% A -> B)\n", bold,
			k ? "WALL" : "CPU", off);
		const cJSON *m;
		size_t n = 0;
		cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(f, "moved"))
		{
			double fa = cJSON_GetObjectItemCaseSensitive(m, "flat_pct_a")->valuedouble;
			double fb = cJSON_GetObjectItemCaseSensitive(m, "flat_pct_b")->valuedouble;
			double ca = cJSON_GetObjectItemCaseSensitive(m, "cum_pct_a")->valuedouble;
			double cb = cJSON_GetObjectItemCaseSensitive(m, "cum_pct_b")->valuedouble;
			const char *col = fmax(fb - fa, cb - ca) > 0 ? red : green;
			fprintf(out, "  %s%5.1f%% -> %5.1f%%   %5.1f%% -> %5.1f%%%s  %s\n", col, fa,
				fb, ca, cb, off,
				cJSON_GetObjectItemCaseSensitive(m, "function")->valuestring);
			n++;
		}
		double na = cJSON_GetObjectItemCaseSensitive(f, "samples_a")->valuedouble;
		double nb = cJSON_GetObjectItemCaseSensitive(f, "samples_b")->valuedouble;
		if (!na || !nb)
			fprintf(out, "  not compared: %s has no samples\n", !na ? "A" : "B");
		else if (!n)
			fputs("  no function moved by half a point or more\n", out);
	}
	static const char *const gkeys[] = {"thread_groups", "goroutine_groups"};
	static const char *const gtitles[] = {"THREAD GROUPS", "GOROUTINE GROUPS"};
	for (size_t k = 0; k < 2; k++) {
		const cJSON *arr = cJSON_GetObjectItemCaseSensitive(d, gkeys[k]);
		if (!arr)
			continue;
		fprintf(out, "\n%s%s%s that appeared, grew or went away\n", bold, gtitles[k], off);
		const cJSON *g;
		size_t n = 0;
		cJSON_ArrayForEach(g, arr)
		{
			const cJSON *reason = cJSON_GetObjectItemCaseSensitive(g, "reason");
			fprintf(out, "  %-8s %3.0f -> %-3.0f %s%s%s",
				cJSON_GetObjectItemCaseSensitive(g, "change")->valuestring,
				cJSON_GetObjectItemCaseSensitive(g, "a")->valuedouble,
				cJSON_GetObjectItemCaseSensitive(g, "b")->valuedouble,
				reason ? "[" : "", reason ? reason->valuestring : "",
				reason ? "] " : "");
			print_stack(cJSON_GetObjectItemCaseSensitive(g, "stack"), out);
			fputc('\n', out);
			n++;
		}
		if (!n)
			fputs("  none\n", out);
	}
}

int cmd_diff(int argc, char **argv)
{
	enum { OPT_COLOR = 256 };
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"top", required_argument, NULL, 'n'},
		{"color", optional_argument, NULL, OPT_COLOR},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false;
	long top = 10;
	int color = -1, c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "jn:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'n': {
			char *end;
			top = strtol(optarg, &end, 10);
			if (*end || top <= 0) {
				die_message("invalid --top '%s': a positive number", optarg);
				return EXIT_USAGE;
			}
			break;
		}
		case OPT_COLOR:
			color = !optarg || strcmp(optarg, "always") == 0 ? 1
				: strcmp(optarg, "never") == 0		 ? 0
				: strcmp(optarg, "auto") == 0		 ? -1
									 : -2;
			if (color == -2) {
				die_message("invalid --color '%s': auto, always or never", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			fputs("Try 'diag-attach diff --help' for more information.\n", stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		die_message("usage: diag-attach diff [--json] A B");
		return EXIT_USAGE;
	}
	struct bundle_reader *a, *b;
	int rc = report_open_bundle(argv[optind], &a);
	if (rc != EXIT_OK)
		return rc;
	rc = report_open_bundle(argv[optind + 1], &b);
	if (rc != EXIT_OK) {
		bundle_reader_free(a);
		return rc;
	}
	cJSON *d = cJSON_CreateObject();
	cJSON_AddItemToObject(d, "a", side(a));
	cJSON_AddItemToObject(d, "b", side(b));
	cJSON_AddItemToObject(d, "counters", diff_counters(a, b));
	cJSON *fns = cJSON_AddObjectToObject(d, "functions");
	cJSON *f = diff_functions(a, b, "cpu.pprof", (size_t)top);
	if (f)
		cJSON_AddItemToObject(fns, "cpu", f);
	f = diff_functions(a, b, "wall.pprof", (size_t)top);
	if (f)
		cJSON_AddItemToObject(fns, "wall", f);
	cJSON *t = diff_threads(a, b);
	if (t)
		cJSON_AddItemToObject(d, "thread_groups", t);
	t = diff_goroutines(a, b);
	if (t)
		cJSON_AddItemToObject(d, "goroutine_groups", t);
	char *s = json ? cJSON_Print(d) : NULL;
	if (json && !s) {
		rc = EXIT_INTERNAL;
		die_message("out of memory");
	} else if (json) {
		puts(s);
	} else {
		print_text(d, stdout,
			   color == 1 ||
				   (color == -1 && isatty(STDOUT_FILENO) && !getenv("NO_COLOR")));
	}
	free(s);
	cJSON_Delete(d);
	bundle_reader_free(a);
	bundle_reader_free(b);
	return rc;
}
