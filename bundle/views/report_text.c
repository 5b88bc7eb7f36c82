/* report_text: see report_text.h. Reads only the JSON document, so the
 * text and --json outputs cannot disagree. */
#include "bundle/views/report_text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/views/report_model.h"
#include "bundle/text.h"

struct style {
	const char *bold, *dim, *red, *yellow, *green, *cyan, *off;
};

static const cJSON *get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *str(const cJSON *o, const char *k, const char *def)
{
	const cJSON *v = get(o, k);
	return cJSON_IsString(v) ? v->valuestring : def;
}

static double num(const cJSON *o, const char *k, double def)
{
	const cJSON *v = get(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

void format_profile_value(double v, const char *unit, char *out, size_t out_size)
{
	if (unit && strcmp(unit, "nanoseconds") == 0) {
		double s = v / 1e9;
		if (s == 0)
			snprintf(out, out_size, "0");
		else if (fabs(s) >= 1)
			snprintf(out, out_size, "%.2fs", s);
		else
			snprintf(out, out_size, "%.0fms", s * 1e3);
	} else if (unit && strcmp(unit, "bytes") == 0 && fabs(v) >= 1024) {
		static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
		double x = v / 1024;
		size_t u = 0;
		while (fabs(x) >= 1024 && u + 1 < sizeof(units) / sizeof(units[0]))
			x /= 1024, u++;
		snprintf(out, out_size, "%.1f%s", x, units[u]);
	} else {
		snprintf(out, out_size, "%.0f", v);
	}
}

/* What the CPU profile holds, as the capture's summary line said it: the
 * engine, the samples against what the target's CPU time asks for, and a
 * warning below 90 %, so a thin profile is not read as a full one. */
static void print_cpu_line(const cJSON *c, FILE *out, const struct style *st)
{
	const cJSON *cpu = get(c, "cpu");
	if (!cpu || !get(c, "cpu_engine"))
		return;
	double got = num(cpu, "samples", 0), want = num(cpu, "samples_expected", 0);
	double share = want > 0 ? 100.0 * got / want : 100.0;
	const cJSON *perf = get(cpu, "perf");
	fprintf(out, "cpu       engine %s: %.0f samples for %.2f s of target CPU (%s%.0f%%%s of the %.0f it asks for)",
		str(c, "cpu_engine", "?"), got, num(cpu, "target_cpu_s", 0),
		share < 90 ? st->yellow : "", share, share < 90 ? st->off : "", want);
	if (perf)
		fprintf(out, ", %.0f lost, %.0f throttled", num(perf, "lost", 0), num(perf, "throttled", 0));
	fputc('\n', out);
	if (get(c, "cpu_engine_fallback"))
		fprintf(out, "          %sperf events refused (%s): CPU samples from ptrace stops%s\n",
			st->yellow, str(c, "cpu_engine_fallback", ""), st->off);
	const cJSON *wg = perf ? get(perf, "weighed_to_schedstat") : NULL;
	double sampled = wg ? num(wg, "sampled_s", 0) : 0, weighed = wg ? num(wg, "weighed_s", 0) : 0;
	if (sampled > 0 && fabs(weighed - sampled) >= 0.01 * sampled)
		fprintf(out, "          weighed to the threads' schedstat: %.2f s sampled, %.2f s counted by "
			"the kernel (%+.0f%%)\n", sampled, weighed, 100.0 * (weighed - sampled) / sampled);
	if (share < 90 && want >= num(c, "frequency_hz", 0))
		fprintf(out, "          %sonly %.0f%% of the CPU samples were taken: %s%s\n", st->yellow, share,
			sampled > 0 ? "the totals are weighed, the shares rest on fewer samples"
				    : "read the shares, not the totals",
			st->off);
}

static void print_header(const cJSON *doc, FILE *out, const struct style *st)
{
	const cJSON *t = get(doc, "target");
	fprintf(out, "%sdiag-attach report%s %s\n", st->bold, st->off, str(doc, "bundle", ""));
	if (cJSON_IsArray(t)) {
		/* A bundle of several processes: one line each, the name
		 * the user knows, its pid and how its capture went. */
		fprintf(out, "target    %s%d processes%s\n", st->bold, cJSON_GetArraySize(t), st->off);
		const cJSON *e;
		cJSON_ArrayForEach(e, t)
		{
			const cJSON *pc = get(e, "capture");
			const cJSON *cpu = pc ? get(pc, "cpu") : NULL;
			fprintf(out, "          %s%s%s (pid %.0f) %s", st->bold, str(e, "comm", "?"), st->off,
				num(e, "pid", 0), str(e, "exe", ""));
			if (cpu)
				fprintf(out, ", %.2f s CPU", num(cpu, "target_cpu_s", 0));
			if (cJSON_IsTrue(get(e, "target_exited")))
				fprintf(out, ", exited");
			fputc('\n', out);
		}
	} else if (t) {
		/* The name the user knows (comm, and argv[0] when it says
		 * more: Debian's redis-server is a link to redis-check-rdb),
		 * then the executable it resolved to. */
		const cJSON *argv = get(t, "argv");
		const cJSON *a0 = cJSON_IsArray(argv) ? cJSON_GetArrayItem(argv, 0) : NULL;
		const char *arg0 = cJSON_IsString(a0) ? a0->valuestring : NULL;
		fprintf(out, "target    %s%s%s (pid %.0f)", st->bold, str(t, "comm", "?"), st->off,
			num(t, "pid", 0));
		if (arg0 && arg0[0] && strcmp(arg0, str(t, "exe", "")) != 0)
			fprintf(out, " %s ->", arg0);
		fprintf(out, " %s\n", str(t, "exe", ""));
		if (get(t, "build_id"))
			fprintf(out, "          build-id %s\n", str(t, "build_id", ""));
	}
	if (get(doc, "target_exited") && cJSON_IsTrue(get(doc, "target_exited")))
		fprintf(out, "          %sthe target exited during the capture%s\n", st->yellow,
			st->off);
	const cJSON *c = get(doc, "capture");
	fprintf(out, "capture   %s .. %s", str(doc, "started_at", "?"), str(doc, "ended_at", "?"));
	if (c) {
		fprintf(out, " (%.1f s), %s mode, %.0f Hz asked, %.1f Hz achieved",
			num(c, "duration_s", 0), str(doc, "mode", "?"), num(c, "frequency_hz", 0),
			num(c, "achieved_hz", 0));
		if (get(c, "ended_by"))
			fprintf(out, ", ended by %s", str(c, "ended_by", ""));
		fputc('\n', out);
		print_cpu_line(c, out, st);
		if (num(c, "missed_ticks", 0) || num(c, "failed_ticks", 0))
			fprintf(out, "          %.0f ticks, %.0f missed, %.0f failed\n",
				num(c, "ticks", 0), num(c, "missed_ticks", 0),
				num(c, "failed_ticks", 0));
	} else {
		fprintf(out, ", %s mode\n", str(doc, "mode", "?"));
	}
	const cJSON *p = get(doc, "pause");
	if (p && get(p, "stops")) {
		double p99 = num(p, "p99_us", 0), mx = num(p, "max_us", 0);
		fprintf(out, "pause     %.0f stops: p50 %.0f us, p99 %s%.0f us%s, max %.0f us\n",
			num(p, "stops", 0), num(p, "p50_us", 0), p99 > 10000 ? st->yellow : "", p99,
			p99 > 10000 ? st->off : "", mx);
		const cJSON *pt = get(p, "per_thread");
		if (pt && get(pt, "p50_us"))
			fprintf(out, "          each thread held p50 %.0f us, p99 %.0f us, max %.0f us\n",
				num(pt, "p50_us", 0), num(pt, "p99_us", 0), num(pt, "max_us", 0));
	} else if (p && get(p, "process_hold_us")) {
		fprintf(out,
			"pause     %.0f threads held together for %.0f us (longest thread %.0f "
			"us)\n",
			num(p, "threads", 0), num(p, "process_hold_us", 0),
			num(p, "thread_hold_max_us", 0));
	}
}

static void print_table(const char *title, const cJSON *pj, FILE *out, const struct style *st,
			size_t top)
{
	const char *unit = str(pj, "unit", "");
	char tot[32];
	format_profile_value(num(pj, "total", 0), unit, tot, sizeof(tot));
	fprintf(out, "\n%s%s%s  %.0f %s, %s\n", st->bold, title, st->off, num(pj, "samples", 0),
		str(pj, "counts", "samples"), tot);
	static const char *const lists[] = {"top_flat", "top_cum"};
	static const char *const heads[] = {"by flat (self)", "by cumulative (self + callees)"};
	for (size_t l = 0; l < 2; l++) {
		const cJSON *a = get(pj, lists[l]);
		if (!cJSON_GetArraySize(a))
			continue;
		fprintf(out, "  %s%s%s\n", st->dim, heads[l], st->off);
		fprintf(out, "  %9s %6s %9s %6s  %s\n", "flat", "flat%", "cum", "cum%", "function");
		size_t i = 0;
		const cJSON *e;
		cJSON_ArrayForEach(e, a)
		{
			if (i++ >= top)
				break;
			char fl[32], cu[32];
			format_profile_value(num(e, "flat", 0), unit, fl, sizeof(fl));
			format_profile_value(num(e, "cum", 0), unit, cu, sizeof(cu));
			double fp = num(e, "flat_pct", 0);
			const char *hot = fp >= 20 ? st->red : "";
			fprintf(out, "  %9s %s%5.1f%%%s %9s %5.1f%%  %s%s%s\n", fl, hot, fp,
				*hot ? st->off : "", cu, num(e, "cum_pct", 0), *hot ? st->bold : "",
				str(e, "function", "?"), *hot ? st->off : "");
		}
	}
}

/* "a <- b <- c", at most max frames, the rest as "<- ...". */
static void print_stack(const cJSON *stack, FILE *out, size_t max)
{
	size_t i = 0, n = (size_t)cJSON_GetArraySize(stack);
	const cJSON *f;
	cJSON_ArrayForEach(f, stack)
	{
		if (i == max) {
			fprintf(out, " <- ... (%zu more)", n - max);
			break;
		}
		fprintf(out, "%s%s", i ? " <- " : "", cJSON_IsString(f) ? f->valuestring : "?");
		i++;
	}
	if (!n)
		fputs("(no stack)", out);
}

static void print_threads(const cJSON *doc, FILE *out, const struct style *st)
{
	const cJSON *groups = get(doc, "thread_groups");
	if (!groups)
		return;
	fprintf(out, "\n%sTHREADS%s  %.0f in %d group(s) with identical stacks\n", st->bold,
		st->off, num(doc, "threads", 0), cJSON_GetArraySize(groups));
	/* Who waits on whom before the groups: a deadlock is the answer. */
	const cJSON *w;
	cJSON_ArrayForEach(w, get(doc, "waits"))
	{
		bool deadlock = cJSON_IsString(w) && strncmp(w->valuestring, "DEADLOCK", 8) == 0;
		fprintf(out, "  %s%s%s\n", deadlock ? st->red : "", cJSON_IsString(w) ? w->valuestring : "?",
			deadlock ? st->off : "");
	}
	const cJSON *g;
	cJSON_ArrayForEach(g, groups)
	{
		double n = num(g, "count", 0);
		fprintf(out, "  %s%3.0f %s%s", st->bold, n, n == 1 ? "thread " : "threads",
			st->off);
		const cJSON *s;
		fputs("  [", out);
		int first = 1;
		cJSON_ArrayForEach(s, get(g, "states"))
		{
			const char *col = strcmp(s->string, "R") == 0	? st->green
					  : strcmp(s->string, "D") == 0 ? st->red
									: "";
			fprintf(out, "%s%s%s%s", first ? "" : " ", col, s->string,
				*col ? st->off : "");
			if (s->valuedouble != n)
				fprintf(out, "x%.0f", s->valuedouble);
			first = 0;
		}
		fputc(']', out);
		if (get(g, "syscall"))
			fprintf(out, " in %s%s()%s", st->cyan, str(g, "syscall", ""), st->off);
		if (get(g, "wchan"))
			fprintf(out, " wchan %s%s%s", st->cyan, str(g, "wchan", ""), st->off);
		if (get(g, "waits"))
			fprintf(out, "\n        %s", str(g, "waits", ""));
		fputs("\n        ", out);
		if (cJSON_GetArraySize(get(g, "stack")) == 0)
			fputs("(no stack: threads.txt says why)", out);
		else
			print_stack(get(g, "stack"), out, 10);
		fprintf(out, "\n        %s", st->dim);
		size_t i = 0;
		const cJSON *t;
		cJSON_ArrayForEach(t, get(g, "threads"))
		{
			if (i == 8) {
				fprintf(out, " ... (%d more)",
					cJSON_GetArraySize(get(g, "threads")) - 8);
				break;
			}
			fprintf(out, "%s%s/%.0f", i ? ", " : "", str(t, "comm", ""),
				num(t, "tid", 0));
			i++;
		}
		fprintf(out, "%s\n", st->off);
	}
}

static void print_goroutines(const cJSON *doc, FILE *out, const struct style *st)
{
	const cJSON *groups = get(doc, "goroutine_groups");
	if (!groups)
		return;
	fprintf(out, "\n%sGOROUTINES%s  %.0f in %d group(s) by stack and wait reason\n", st->bold,
		st->off, num(doc, "goroutines", 0), cJSON_GetArraySize(groups));
	const cJSON *g;
	cJSON_ArrayForEach(g, groups)
	{
		fprintf(out, "  %s%4.0f%s [%s%s%s] ", st->bold, num(g, "count", 0), st->off,
			st->cyan, str(g, "reason", "?"), st->off);
		print_stack(get(g, "stack"), out, 6);
		fputc('\n', out);
	}
}

static void print_counters(const cJSON *doc, FILE *out, const struct style *st)
{
	const cJSON *counters = get(doc, "counters");
	const cJSON *tl = get(doc, "timeline");
	if (!counters || !tl)
		return;
	const cJSON *ts = get(tl, "t");
	size_t n = (size_t)cJSON_GetArraySize(ts);
	double *t = calloc(n + 1, sizeof(*t)), *v = calloc(n + 1, sizeof(*v));
	if (!t || !v) {
		free(t);
		free(v);
		return;
	}
	size_t i = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, ts) t[i++] = e->valuedouble;
	fprintf(out, "\n%sTIMELINE%s  %zu samples\n", st->bold, st->off, n);
	const cJSON *c;
	cJSON_ArrayForEach(c, counters)
	{
		const char *name = str(c, "name", "?");
		const cJSON *series = get(get(tl, "series"), name);
		i = 0;
		cJSON_ArrayForEach(e, series)
		{
			if (i < n)
				v[i++] = cJSON_IsNumber(e) ? e->valuedouble : NAN;
		}
		bool cum = cJSON_IsTrue(get(c, "cumulative"));
		char spark[256], first[32], last[32], slope[48];
		sparkline(v, t, i, cum, 24, spark, sizeof(spark));
		format_counter_value(name, num(c, "first", NAN), first, sizeof(first));
		format_counter_value(name, num(c, "last", NAN), last, sizeof(last));
		double sl = num(c, "slope_per_s", 0);
		format_counter_value(name, sl, slope, sizeof(slope));
		const char *col =
			!cum && sl > 0 && num(c, "last", 0) > num(c, "first", 0) ? st->yellow : "";
		/* printf pads by bytes; a block character is three. */
		size_t cells = 0;
		for (const char *q = spark; *q; q++)
			cells += ((unsigned char)*q & 0xC0) != 0x80;
		fprintf(out, "  %-28s %s%s%s%*s  %10s -> %-10s %s%s%s/s%s%s\n", name, col, spark,
			*col ? st->off : "", (int)(cells < 24 ? 24 - cells : 0), "", first, last,
			col, sl > 0 ? "+" : "", slope, *col ? st->off : "",
			cum ? "  (sparkline: rate)" : "");
	}
	free(t);
	free(v);
}

/* No finding: say which watched counters grew anyway, and the rule they
 * stayed below, so that a steady slow leak is not read as no leak. */
static void print_growth_below_rule(const cJSON *doc, FILE *out)
{
	const cJSON *th = get(get(doc, "leak_watch"), "thresholds");
	const cJSON *c;
	cJSON_ArrayForEach(c, get(doc, "counters"))
	{
		const char *name = str(c, "name", "");
		const cJSON *rule = get(th, name);
		double first = num(c, "first", NAN), last = num(c, "last", NAN);
		double delta = num(rule, "min_delta", NAN), slope = num(c, "slope_per_s", NAN);
		if (!rule || !(last - first > delta / 16) || !(slope > 0))
			continue;
		char grew[32], rate[32], floor_delta[32], floor_slope[32];
		format_counter_value(name, last - first, grew, sizeof(grew));
		format_counter_value(name, slope, rate, sizeof(rate));
		format_counter_value(name, delta, floor_delta, sizeof(floor_delta));
		format_counter_value(name, num(rule, "min_slope_per_s", 0), floor_slope, sizeof(floor_slope));
		fprintf(out, "  %s grew %s at %s/s: below the leak rule (a rise of %s at >= %s/s", name, grew,
			rate, floor_delta, floor_slope);
		if (num(rule, "min_span_s", 0) > 0)
			fprintf(out, " over >= %.0f s, still rising at the end", num(rule, "min_span_s", 0));
		fputs("; --leak-threshold lowers it)\n", out);
	}
}

static void print_findings(const cJSON *doc, FILE *out, const struct style *st)
{
	const cJSON *f = get(doc, "findings");
	const cJSON *lw = get(doc, "leak_watch");
	bool on = lw && cJSON_IsTrue(get(lw, "enabled"));
	fprintf(out, "\n%sLEAK FINDINGS%s", st->bold, st->off);
	if (!cJSON_GetArraySize(f)) {
		fprintf(out, "  none%s\n",
			on ? " (leak watch was on)" : " (leak watch was off: --leak-watch)");
		if (on)
			print_growth_below_rule(doc, out);
		return;
	}
	fputc('\n', out);
	const cJSON *e;
	cJSON_ArrayForEach(e, f)
	{
		const char *name = str(e, "counter", "?");
		char a[32], b[32], sl[32];
		format_counter_value(name, num(e, "first", NAN), a, sizeof(a));
		format_counter_value(name, num(e, "last", NAN), b, sizeof(b));
		format_counter_value(name, num(e, "slope_per_s", NAN), sl, sizeof(sl));
		fprintf(out, "  %s%s is leaking%s: +%s/s, %s -> %s over %.0f samples (r2 %.3f)\n",
			st->red, name, st->off, sl, a, b, num(e, "samples", 0), num(e, "r2", NAN));
		fprintf(out, "        window %s .. %s\n", str(e, "window_start", "?"),
			str(e, "window_end", "?"));
		const cJSON *d = get(e, "dumps");
		if (cJSON_GetArraySize(d)) {
			fputs("        evidence:", out);
			const cJSON *x;
			cJSON_ArrayForEach(x, d)
				fprintf(out, " %s", cJSON_IsString(x) ? x->valuestring : "?");
			fputc('\n', out);
		}
	}
}

static void print_report_escaped(const cJSON *doc, FILE *out, bool color, size_t top)
{
	static const struct style plain = {"", "", "", "", "", "", ""};
	static const struct style ansi = {"\033[1m",  "\033[2m",  "\033[31m", "\033[33m",
					  "\033[32m", "\033[36m", "\033[0m"};
	const struct style *st = color ? &ansi : &plain;
	print_header(doc, out, st);
	/* Warnings come first: they say what the tables below lack. */
	const cJSON *w;
	cJSON_ArrayForEach(w, get(doc, "warnings"))
	{
		if (cJSON_IsString(w))
			fprintf(out, "%swarning:%s %s\n", st->yellow, st->off, w->valuestring);
	}
	const cJSON *profiles = get(doc, "profiles");
	if (get(profiles, "cpu"))
		print_table("CPU", get(profiles, "cpu"), out, st, top);
	if (get(profiles, "wall"))
		print_table("WALL", get(profiles, "wall"), out, st, top);
	/* A Go program's own profiles, read from its runtime */
	if (get(profiles, "block"))
		print_table("BLOCK (Go: where goroutines waited, by delay)", get(profiles, "block"), out, st,
			    top);
	if (get(profiles, "mutex"))
		print_table("MUTEX (Go: contended locks, by delay)", get(profiles, "mutex"), out, st, top);
	if (get(profiles, "threadcreate"))
		print_table(get(doc, "goroutine_groups") ? "THREADCREATE (Go: where threads were created)"
							 : "THREADCREATE (where threads and processes were created)",
			    get(profiles, "threadcreate"),
			    out, st, top);
	/* Page faults name the code that first touched new memory: where the
	 * process grew, not always where it allocated what it keeps. */
	if (get(profiles, "growth"))
		print_table("GROWTH (where new memory was first touched: page faults, by bytes)",
			    get(profiles, "growth"), out, st, top);
	print_threads(doc, out, st);
	print_goroutines(doc, out, st);
	print_counters(doc, out, st);
	print_findings(doc, out, st);
}

void report_print_text(const cJSON *doc, FILE *out, bool color, size_t top)
{
	/* Every string in the document came from a target or a bundle:
	 * escaped (bundle/text.h) before any of it meets the terminal. */
	cJSON *safe = escaped_json_copy(doc);
	if (!safe) {
		fputs("diag-attach: out of memory\n", out);
		return;
	}
	print_report_escaped(safe, out, color, top);
	cJSON_Delete(safe);
}
