/* diff_text: see diff_text.h. */
#include "bundle/views/diff_text.h"

#include <math.h>
#include <string.h>

#include "bundle/views/report_model.h"
#include "bundle/text.h"

/* A key of the side's target; of a bundle of several processes (target
 * a list), the first process's, which is the one given or launched. */
static const char *tstr(const cJSON *side_obj, const char *k)
{
	const cJSON *target = cJSON_GetObjectItemCaseSensitive(side_obj, "target");
	if (cJSON_IsArray(target))
		target = cJSON_GetArrayItem(target, 0);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(target, k);
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

/* One side's first, last and slope of counter name, formatted as the
 * report formats counters; "-" for a side that lacks the counter. */
static void side_values(const char *name, const cJSON *x, char first[32], char last[32],
			char slope[32])
{
	char *outs[] = {first, last, slope};
	static const char *const keys[] = {"first", "last", "slope_per_s"};
	for (size_t i = 0; i < 3; i++) {
		if (x)
			format_counter_value(
				name, cJSON_GetObjectItemCaseSensitive(x, keys[i])->valuedouble,
				outs[i], 32);
		else
			snprintf(outs[i], 32, "-");
	}
}

static void print_diff_escaped(const cJSON *d, FILE *out, bool color)
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
		char a1[32], a2[32], b1[32], b2[32], s1[32], s2[32];
		side_values(name, xa, a1, a2, s1);
		side_values(name, xb, b1, b2, s2);
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

void diff_print_text(const cJSON *d, FILE *out, bool color)
{
	/* Every string in the document came from a target or a bundle:
	 * escaped (bundle/text.h) before any of it meets the terminal. */
	cJSON *safe = escaped_json_copy(d);
	if (!safe) {
		fputs("diag-attach: out of memory\n", out);
		return;
	}
	print_diff_escaped(safe, out, color);
	cJSON_Delete(safe);
}

