/*
 * Reading commands on bundles from real captures: report (text, --json,
 * --html in headless Chromium), export (collapsed, speedscope), pem/unpem,
 * diff, and their usage errors and exit statuses.
 *
 * Targets and what the tests expect of them (see their header comments):
 *   burner 2   CPU in spin_units <- burn_heavy/burn_light, one thread in
 *              sleep_forever, one in lock_forever (mutex: futex wait).
 *   demo       two threads in compute_checksum (one group of 2), one in
 *              wait_for_job (condvar), one in flush_to_disk (mutex).
 *   leak/leak_fds RATE   opens RATE descriptors per second, never closes.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* A fresh directory in dir, and b = dir/b: where a test's bundle goes. */
static void bundle_tmpdir(char dir[static 256], char b[static 300])
{
	make_tmpdir(dir, 256);
	snprintf(b, 300, "%s/b", dir);
}

/* Capture target (with one argument, or none) for dur into out; with
 * --leak-watch and a timeline every leak_interval unless that is NULL. */
static void capture(const char *target, const char *arg, const char *dur, const char *out,
		    const char *leak_interval)
{
	const char *argv[] = {target_path(target), arg, NULL};
	struct target t = target_start(argv, arg ? "ready" : NULL);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result r;
	const char *args_lw[] = {
		"-p", pid,  "-d", dur,	"-i", leak_interval, "--leak-watch", "--leak-window",
		"8",  "-o", out,  "-q", NULL};
	const char *args[] = {"-p", pid, "-d", dur, "-o", out, "-q", NULL};
	tool_run(&r, leak_interval ? args_lw : args);
	target_kill(&t);
	cr_assert_eq(r.exit_code, 0, "capture of %s: exit %d: %s", target, r.exit_code, r.err);
}

static cJSON *report_json(const char *bundle)
{
	static struct tool_result r;
	const char *args[] = {"report", "--json", bundle, NULL};
	tool_run_ok(&r, args);
	cJSON *d = cJSON_Parse(r.out);
	cr_assert(d, "report --json output does not parse: %.300s", r.out);
	return d;
}

static const cJSON *group_with(const cJSON *groups, const char *fn)
{
	const cJSON *g;
	cJSON_ArrayForEach(g, groups)
	{
		const cJSON *f;
		cJSON_ArrayForEach(f, cJSON_GetObjectItem(g, "stack"))
		{
			if (cJSON_IsString(f) && strcmp(f->valuestring, fn) == 0)
				return g;
		}
	}
	return NULL;
}

Test(report, burner_text_and_json)
{
	char dir[256], b[300];
	bundle_tmpdir(dir, b);
	capture("burner", "2", "3s", b, NULL);

	struct tool_result r;
	const char *args[] = {"report", b, NULL};
	tool_run_ok(&r, args);
	cr_expect(strstr(r.out, "\033[") == NULL, "colour on a pipe");
	const char *cpu = find_line(r.out, "CPU");
	cr_assert(cpu, "no CPU section:\n%s", r.out);
	/* The hottest leaf comes first in the flat table. */
	const char *hdr = find_line(cpu, "function");
	cr_assert(hdr);
	const char *first = strchr(hdr, '\n') + 1;
	cr_expect(first && strstr(first, "spin_units") &&
			  strstr(first, "spin_units") < strchr(first, '\n'),
		  "spin_units is not the top flat function:\n%s", r.out);
	cr_expect(find_line(r.out, "WALL"), "no WALL section");
	cr_expect(find_line(r.out, "lock_forever"), "no lock_forever group:\n%s", r.out);
	cr_expect(find_line(r.out, "sleep_forever"), "no sleep_forever group");
	cr_expect(find_line(r.out, "wchan"), "no wait channel shown");
	cr_expect(find_line(r.out, "TIMELINE"), "no timeline");
	cr_expect(find_line(r.out, "LEAK FINDINGS"), "no findings section");

	cJSON *d = report_json(b);
	const cJSON *top = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(d, "profiles"), "cpu"), "top_flat");
	cr_assert(cJSON_GetArraySize(top) > 0);
	cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(top, 0), "function")->valuestring,
			 "spin_units");
	const cJSON *groups = cJSON_GetObjectItem(d, "thread_groups");
	const cJSON *lock = group_with(groups, "lock_forever");
	cr_assert(lock, "no lock_forever thread group");
	const cJSON *th = cJSON_GetArrayItem(cJSON_GetObjectItem(lock, "threads"), 0);
	cr_expect_str_eq(cJSON_GetObjectItem(th, "state")->valuestring, "S");
	cr_expect_str_eq(cJSON_GetObjectItem(th, "comm")->valuestring, "locker");
	cr_expect(group_with(groups, "sleep_forever"), "no sleep_forever thread group");
	cr_expect(cJSON_GetArraySize(cJSON_GetObjectItem(d, "counters")) > 5, "counters missing");
	cJSON_Delete(d);
	rm_rf(dir);
}

Test(report, demo_groups_identical_stacks)
{
	char dir[256], b[300];
	bundle_tmpdir(dir, b);
	capture("demo", NULL, "2s", b, NULL);
	cJSON *d = report_json(b);
	const cJSON *groups = cJSON_GetObjectItem(d, "thread_groups");
	const cJSON *hot = group_with(groups, "compute_checksum");
	cr_assert(hot, "no compute_checksum group");
	cr_expect_eq(cJSON_GetObjectItem(hot, "count")->valueint, 2,
		     "the two cpu-workers are not one group");
	const cJSON *cond = group_with(groups, "wait_for_job");
	cr_assert(cond, "no wait_for_job group");
	cr_expect_str_eq(cJSON_GetObjectItem(cond, "syscall")->valuestring, "futex");
	cr_expect(group_with(groups, "flush_to_disk"), "no flush_to_disk group");
	cJSON_Delete(d);

	struct tool_result r;
	const char *args[] = {"report", "--color=always", b, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 0);
	cr_expect(strstr(r.out, "\033["), "--color=always gave no colour");
	rm_rf(dir);
}

static long count_lines_sum(const char *text, long *lines)
{
	long sum = 0;
	*lines = 0;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *sp = memrchr(p, ' ', n);
		cr_assert(sp, "collapsed line without a count: %.*s", (int)n, p);
		sum += strtol(sp + 1, NULL, 10);
		(*lines)++;
		p += n + (nl ? 1 : 0);
	}
	return sum;
}

Test(report, export_formats)
{
	char dir[256], b[300];
	bundle_tmpdir(dir, b);
	capture("burner", "2", "2s", b, NULL);
	cJSON *d = report_json(b);
	double cpu_samples =
		cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "profiles"), "cpu"),
				    "samples")
			->valuedouble;
	double wall_samples =
		cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "profiles"), "wall"),
				    "samples")
			->valuedouble;
	cJSON_Delete(d);

	struct tool_result r;
	long lines;
	const char *a1[] = {"export", "--format", "collapsed", b, NULL};
	tool_run_ok(&r, a1);
	cr_expect_eq((double)count_lines_sum(r.out, &lines), cpu_samples,
		     "collapsed cpu lines do not sum to the samples");
	cr_expect(lines > 0 && strstr(r.out, "burn_heavy;spin_units "),
		  "no burn_heavy;spin_units stack:\n%s", r.out);

	const char *a2[] = {"export", "-f",	      "collapsed", "--profile",
			    "wall",   "--per-thread", b,	   NULL};
	tool_run_ok(&r, a2);
	cr_expect_eq((double)count_lines_sum(r.out, &lines), wall_samples);
	cr_expect(strstr(r.out, "locker/"), "per-thread prefix missing");

	const char *a3[] = {"export", "--format", "speedscope", "--profile", "cpu", b, NULL};
	tool_run_ok(&r, a3);
	cJSON *s = cJSON_Parse(r.out);
	cr_assert(s, "speedscope output does not parse");
	cr_expect_str_eq(cJSON_GetObjectItem(s, "$schema")->valuestring,
			 "https://www.speedscope.app/file-format-schema.json");
	const cJSON *frames = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "shared"), "frames");
	cr_assert(cJSON_IsArray(frames) && cJSON_GetArraySize(frames) > 0);
	const cJSON *profiles = cJSON_GetObjectItem(s, "profiles");
	cr_assert(cJSON_GetArraySize(profiles) > 0);
	const cJSON *p;
	double weight = 0;
	cJSON_ArrayForEach(p, profiles)
	{
		cr_expect_str_eq(cJSON_GetObjectItem(p, "type")->valuestring, "sampled");
		cr_expect(cJSON_IsString(cJSON_GetObjectItem(p, "name")));
		cr_expect_str_eq(cJSON_GetObjectItem(p, "unit")->valuestring, "nanoseconds");
		cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(p, "startValue")));
		cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(p, "endValue")));
		const cJSON *samples = cJSON_GetObjectItem(p, "samples"),
			    *weights = cJSON_GetObjectItem(p, "weights");
		cr_assert_eq(cJSON_GetArraySize(samples), cJSON_GetArraySize(weights));
		const cJSON *st, *w;
		cJSON_ArrayForEach(st, samples)
		{
			const cJSON *ix;
			cJSON_ArrayForEach(ix, st) cr_assert(
				ix->valueint >= 0 && ix->valueint < cJSON_GetArraySize(frames));
		}
		cJSON_ArrayForEach(w, weights) weight += w->valuedouble;
	}
	cr_expect(weight > 0);
	cJSON_Delete(s);

	const char *bad[] = {"export", "--format", "png", b, NULL};
	tool_run(&r, bad);
	cr_expect_eq(r.exit_code, 2, "unknown format: exit %d", r.exit_code);
	const char *nogo[] = {"export", "--profile", "goroutine", b, NULL};
	tool_run(&r, nogo);
	cr_expect_eq(r.exit_code, 2, "missing profile: exit %d", r.exit_code);
	cr_expect(strstr(r.err, "cpu.pprof"), "hint does not list the profiles: %s", r.err);
	rm_rf(dir);
}

static void expect_same_tree(const char *a, const char *b, const char *rel)
{
	char pa[1024], pb[1024];
	snprintf(pa, sizeof(pa), "%s%s", a, rel);
	DIR *d = opendir(pa);
	cr_assert(d, "cannot open %s", pa);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char sub[512];
		snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name);
		snprintf(pa, sizeof(pa), "%s%s", a, sub);
		snprintf(pb, sizeof(pb), "%s%s", b, sub);
		struct stat st;
		cr_assert_eq(stat(pa, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			expect_same_tree(a, b, sub);
			continue;
		}
		size_t la, lb;
		char *xa = read_file(pa, &la), *xb = read_file(pb, &lb);
		cr_assert(xa && xb, "%s missing after unpem", sub);
		cr_expect(la == lb && memcmp(xa, xb, la) == 0, "%s differs after unpem", sub);
		free(xa);
		free(xb);
	}
	closedir(d);
}

Test(report, pem_round_trip)
{
	char dir[256], b[300], pem[300], mangled[300], out1[300], out2[300], out3[300];
	bundle_tmpdir(dir, b);
	snprintf(pem, sizeof(pem), "%s/b.pem", dir);
	snprintf(mangled, sizeof(mangled), "%s/log.txt", dir);
	snprintf(out1, sizeof(out1), "%s/r1", dir);
	snprintf(out2, sizeof(out2), "%s/r2", dir);
	snprintf(out3, sizeof(out3), "%s/r3", dir);
	/* With leak-watch so there are members in subdirectories too. */
	capture("leak/leak_fds", "20", "4s", b, "200ms");

	struct tool_result r;
	const char *a1[] = {"pem", "-o", pem, b, NULL};
	tool_run_ok(&r, a1);
	const char *a2[] = {"unpem", "-o", out1, pem, NULL};
	tool_run_ok(&r, a2);
	expect_same_tree(b, out1, "");
	expect_same_tree(out1, b, "");
	expect_verified(out1, "rebuilt bundle");

	/* Through a "log pipeline": a timestamp prefix on every line, CRLF,
	 * unrelated lines before and after. */
	char *text = read_file(pem, NULL);
	cr_assert(text);
	FILE *f = fopen(mangled, "w");
	cr_assert(f);
	fputs("2026-01-01T00:00:00Z app starting\n", f);
	int n = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		fprintf(f, "2026-01-01T00:00:%02dZ stdout F %s\r\n", n++ % 60, line);
	fputs("2026-01-01T00:01:00Z app exiting\n", f);
	fclose(f);
	free(text);
	const char *a3[] = {"unpem", "-o", out2, mangled, NULL};
	tool_run_ok(&r, a3);
	expect_same_tree(b, out2, "");

	/* A changed character is caught, and nothing is presented as a bundle. */
	text = read_file(pem, NULL);
	char *body = strstr(text, "\n\n");
	cr_assert(body);
	body[5] = body[5] == 'A' ? 'B' : 'A';
	f = fopen(mangled, "w");
	fputs(text, f);
	fclose(f);
	free(text);
	const char *a4[] = {"unpem", "-o", out3, mangled, NULL};
	tool_run(&r, a4);
	cr_expect_eq(r.exit_code, 1, "damaged pem: exit %d", r.exit_code);
	char mpath[400];
	snprintf(mpath, sizeof(mpath), "%s/manifest.json", out3);
	cr_expect(access(mpath, F_OK) != 0, "a manifest was written from damaged input");

	/* An existing non-empty output directory is refused. */
	tool_run(&r, a2);
	cr_expect_eq(r.exit_code, 9, "unpem into a full dir: exit %d", r.exit_code);

	/* A symlinked output directory is not followed, even to an empty
	 * directory: unpem writes as the bundle writer does. */
	char empty[300], link[300];
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	cr_assert_eq(mkdir(empty, 0700), 0);
	cr_assert_eq(symlink(empty, link), 0);
	const char *a5[] = {"unpem", "-o", link, pem, NULL};
	tool_run(&r, a5);
	cr_expect_eq(r.exit_code, 9, "unpem into a symlinked dir: exit %d", r.exit_code);
	cr_expect(strstr(r.err, "symbolic link"), "no symlink message: %s", r.err);
	snprintf(mpath, sizeof(mpath), "%s/manifest.json", empty);
	cr_expect(access(mpath, F_OK) != 0, "unpem wrote through a symlinked output dir");
	rm_rf(dir);
}

Test(report, diff_names_leaking_counter)
{
	char dir[256], a[300], b[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(a, sizeof(a), "%s/quiet", dir);
	snprintf(b, sizeof(b), "%s/leaky", dir);
	capture("leak/leak_fds", "0.01", "3s", a, "250ms");
	capture("leak/leak_fds", "25", "4s", b, "250ms");
	struct tool_result r;
	const char *args[] = {"diff", a, b, NULL};
	tool_run_ok(&r, args);
	const char *l = find_line(r.out, "open_fds");
	cr_assert(l, "open_fds not in diff:\n%s", r.out);
	const char *eol = strchr(l, '\n');
	const char *mark = strstr(l, "in B");
	cr_expect(mark && (!eol || mark < eol), "open_fds not flagged as growing in B:\n%s", r.out);

	const char *aj[] = {"diff", "--json", a, b, NULL};
	tool_run_ok(&r, aj);
	cJSON *d = cJSON_Parse(r.out);
	cr_assert(d, "diff --json does not parse");
	const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "counters"), 0);
	cr_expect_str_eq(cJSON_GetObjectItem(first, "name")->valuestring, "open_fds");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(first, "growing_in_b")));
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(d, "counters"))
	{
		if (strcmp(cJSON_GetObjectItem(c, "name")->valuestring, "threads") == 0)
			cr_expect(!cJSON_IsTrue(cJSON_GetObjectItem(c, "growing_in_b")),
				  "threads flagged");
	}
	cJSON_Delete(d);

	/* The leaking bundle's own report names the finding. */
	const char *rep[] = {"report", b, NULL};
	tool_run(&r, rep);
	cr_expect(find_line(r.out, "open_fds is leaking"), "report misses the finding:\n%s", r.out);
	rm_rf(dir);
}

static const char *find_chromium(void)
{
	static char path[512];
	static const char *const names[] = {"chromium", "chromium-browser", "google-chrome"};
	const char *envp = getenv("PATH");
	if (!envp)
		return NULL;
	for (size_t i = 0; i < 3; i++) {
		char *copy = strdup(envp), *save = NULL;
		for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
			snprintf(path, sizeof(path), "%s/%s", d, names[i]);
			if (access(path, X_OK) == 0) {
				free(copy);
				return path;
			}
		}
		free(copy);
	}
	return NULL;
}

/* Chromium's DOM of url (after its scripts ran) into a malloc'd string. */
static char *chromium_dom(const char *chromium, const char *dir, const char *url, int n)
{
	char cmd[2048], dom[300];
	snprintf(dom, sizeof(dom), "%s/dom%d.html", dir, n);
	snprintf(cmd, sizeof(cmd),
		 "timeout 120 '%s' --headless --no-sandbox --disable-gpu --no-first-run "
		 "--disable-background-networking --disable-component-update --disable-sync "
		 "--user-data-dir='%s/profile-dom%d' --dump-dom '%s' > '%s' 2>/dev/null",
		 chromium, dir, n, url, dom);
	cr_assert_eq(system(cmd), 0, "chromium --dump-dom %s failed", url);
	char *d = read_file(dom, NULL);
	cr_assert(d);
	return d;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The text of the element with id (<tag id="id" ...>TEXT<), in a DOM dump. */
static void element_text(const char *dom, const char *id, char *out, size_t size)
{
	char needle[64];
	snprintf(needle, sizeof(needle), "id=\"%s\"", id);
	const char *p = strstr(dom, needle);
	out[0] = '\0';
	if (p && (p = strchr(p, '>')))
		snprintf(out, size, "%.*s", (int)strcspn(p + 1, "<"), p + 1);
}

Test(report, html_in_headless_chromium, .timeout = 300)
{
	const char *chromium = find_chromium();
	if (!chromium)
		cr_skip_test("chromium not installed (Debian package 'chromium')");
	char dir[256], b[300], html[300];
	bundle_tmpdir(dir, b);
	snprintf(html, sizeof(html), "%s/report.html", dir);
	capture("leak/leak_fds", "25", "4s", b, "200ms");
	struct tool_result r;
	const char *args[] = {"report", "--html", html, b, NULL};
	tool_run_ok(&r, args);
	char *page = read_file(html, NULL);
	cr_assert(page);
	/* Self-contained: nothing to fetch. */
	cr_expect(strstr(page, "src=\"http") == NULL && strstr(page, "href=\"http") == NULL &&
			  strstr(page, "@import") == NULL,
		  "the page refers to the network");
	free(page);

	char cmd[2048], dom[300], errp[300], shot[300];
	snprintf(dom, sizeof(dom), "%s/dom.html", dir);
	snprintf(errp, sizeof(errp), "%s/chromium.err", dir);
	snprintf(shot, sizeof(shot), "%s/shot.png", dir);
	const char *flags = "--headless --no-sandbox --disable-gpu --no-first-run "
			    "--disable-background-networking "
			    "--disable-component-update --disable-sync";
	snprintf(cmd, sizeof(cmd),
		 "timeout 120 '%s' %s --user-data-dir='%s/profile1' --enable-logging=stderr --v=0 "
		 "--dump-dom 'file://%s' > '%s' 2> '%s'",
		 chromium, flags, dir, html, dom, errp);
	int st = system(cmd);
	cr_assert_eq(st, 0, "chromium --dump-dom failed (%d)", st);
	char *d = read_file(dom, NULL), *err = read_file(errp, NULL);
	cr_assert(d && err);
	cr_expect(strstr(d, "data-rendered=\"1\""), "the script did not finish rendering");
	cr_expect(strstr(d, "data-errors=\"1\"") == NULL, "the page reported script errors");
	const char *flame = strstr(d, "id=\"flame-svg\"");
	cr_expect(flame, "no flame graph in the DOM");
	cr_expect(flame && strstr(flame, "<rect"), "the flame graph has no frames");
	cr_expect(strstr(d, "class=\"chart-svg\""), "no timeline chart in the DOM");
	cr_expect(strstr(d, "<polyline"), "the charts have no lines");
	cr_expect(strstr(d, "data-counter=\"open_fds\""), "no open_fds chart");
	cr_expect(strstr(d, "class=\"finding\""), "the leak finding is not marked on a chart");
	cr_expect(strstr(d, "id=\"thread-groups\""), "no thread groups table");
	/* Charts as a person reads them: a time axis, running totals as rates
	 * (CPU as % of a core), the counters that never moved in one line. */
	cr_expect(strstr(d, "class=\"axis\""), "no time axis on the charts");
	cr_expect(strstr(d, "data-drawn=\"rate\""), "no running total drawn as a rate");
	cr_expect(strstr(d, "as % of a core"), "CPU is not drawn as %% of a core");
	const char *still = strstr(d, "class=\"unchanged\"");
	cr_expect(still && strstr(still, "fd_limit"), "no unchanged line naming fd_limit");
	const char *first_chart = strstr(d, "data-counter=\"");
	cr_expect(first_chart && strncmp(first_chart, "data-counter=\"open_fds\"", 23) == 0,
		  "the leaking counter's chart is not the first: %.60s", first_chart ? first_chart : "");
	/* Console errors: Chromium logs them as CONSOLE lines. */
	for (const char *l = err; (l = strstr(l, "CONSOLE")); l++) {
		const char *eol = strchr(l, '\n');
		cr_expect(!(strstr(l, "Uncaught") && (!eol || strstr(l, "Uncaught") < eol)) &&
				  !(strstr(l, "rror") && (!eol || strstr(l, "rror") < eol)),
			  "console error: %.200s", l);
	}
	free(d);
	free(err);

	/* An invalid regular expression in the search box says so. */
	char url[700];
	snprintf(url, sizeof(url), "file://%s#search=(", html);
	char *bad = chromium_dom(chromium, dir, url, 9);
	cr_expect(strstr(bad, "not a regular expression: ("), "an invalid search is not reported");
	free(bad);

	snprintf(cmd, sizeof(cmd),
		 "timeout 120 '%s' %s --user-data-dir='%s/profile2' --window-size=1280,1600 "
		 "--screenshot='%s' 'file://%s' > /dev/null 2>&1",
		 chromium, flags, dir, shot, html);
	st = system(cmd);
	cr_assert_eq(st, 0, "chromium --screenshot failed (%d)", st);
	size_t len = 0;
	char *png = read_file(shot, &len);
	cr_assert(png && len > 1000, "no screenshot");
	cr_expect(memcmp(png, "\x89PNG", 4) == 0, "the screenshot is not a PNG");
	free(png);
	rm_rf(dir);
}

/* A 2 s CPU capture of the burner in a fresh dir's bundle b, exported
 * as the flame graph dir/cpu.svg (samples). */
static void burner_svg(char dir[static 256], char b[static 300], char svg[static 300])
{
	bundle_tmpdir(dir, b);
	snprintf(svg, 300, "%s/cpu.svg", dir);
	capture("burner", "2", "2s", b, NULL);
	struct tool_result r;
	const char *ex[] = {"export", "--format", "svg", "--value", "samples", "-o", svg, b, NULL};
	tool_run_ok(&r, ex);
}

/* The id ("fN") of the first box of the flame graph text file that
 * names function. */
static void first_box_of(const char *file, const char *function, char *id, size_t size)
{
	char title[128];
	snprintf(title, sizeof(title), "<title>%s\n", function);
	const char *g = strstr(file, title);
	cr_assert(g, "no %s box", function);
	while (g > file && strncmp(g, "id=\"f", 5) != 0)
		g--;
	snprintf(id, size, "%.*s", (int)strcspn(g + 4, "\""), g + 4);
}

/* export --format svg, opened in headless Chromium: the script runs; one
 * box per call path of the collapsed export, plus the root; a box opened
 * as #zoom=ID fills the width with the boxes beside it hidden; #search=
 * colours what matches and gives its share; a bad regular expression
 * says so. */
Test(report, svg_flame_graph_in_headless_chromium, .timeout = 300)
{
	const char *chromium = find_chromium();
	if (!chromium)
		cr_skip_test("chromium not installed (Debian package 'chromium')");
	char dir[256], b[300], svg[300];
	burner_svg(dir, b, svg);
	struct tool_result r;
	const char *col[] = {"export", "--format", "collapsed", "--value", "samples", b, NULL};
	tool_run_ok(&r, col);
	/* Distinct call paths: every prefix of every collapsed line. */
	size_t paths = 0;
	char **seen = calloc(100000, sizeof(*seen));
	for (const char *l = r.out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t len = strcspn(l, "\n");
		const char *sp = memrchr(l, ' ', len);
		cr_assert(sp, "collapsed line without a value: %.100s", l);
		for (const char *semi = l; semi && semi <= sp;) {
			const char *end = memchr(semi, ';', (size_t)(sp - semi));
			size_t plen = (size_t)((end ? end : sp) - l);
			bool dup = false;
			for (size_t i = 0; i < paths && !dup; i++)
				dup = strlen(seen[i]) == plen && strncmp(seen[i], l, plen) == 0;
			if (!dup && paths < 100000)
				seen[paths++] = strndup(l, plen);
			semi = end ? end + 1 : NULL;
		}
	}
	for (size_t i = 0; i < paths; i++)
		free(seen[i]);
	free(seen);
	char *file = read_file(svg, NULL);
	cr_assert(file);
	cr_expect(strstr(file, "src=\"http") == NULL && strstr(file, "href=") == NULL,
		  "the SVG refers to something outside it");
	size_t boxes = count_of(file, "<g class=\"f\"");
	cr_expect_eq(boxes, paths + 1, "%zu boxes for %zu call paths (and the root)", boxes, paths);
	/* The first spin_units box. */
	char id[32];
	first_box_of(file, "spin_units", id, sizeof(id));

	char url[700];
	snprintf(url, sizeof(url), "file://%s", svg);
	char *d = chromium_dom(chromium, dir, url, 1);
	cr_expect(strstr(d, "data-rendered=\"1\""), "the script did not run:\n%.300s", d);
	cr_expect_eq(count_of(d, "<g class=\"f\""), boxes, "Chromium shows another number of boxes");
	free(d);

	snprintf(url, sizeof(url), "file://%s#zoom=%s", svg, id);
	d = chromium_dom(chromium, dir, url, 2);
	char want[64];
	snprintf(want, sizeof(want), "id=\"%s\"", id);
	const char *box = strstr(d, want);
	cr_assert(box, "box %s missing after zoom", id);
	const char *w = strstr(box, "width=\"");
	cr_expect(w && strncmp(w, "width=\"1180\"", 12) == 0, "zoomed box is %.20s wide, not 1180", w);
	cr_expect_geq(count_of(d, "class=\"f hide\""), 1, "nothing beside %s was hidden by the zoom", id);
	cr_expect_geq(count_of(d, "class=\"f parent\""), 1, "no caller of %s was kept below it", id);
	free(d);

	snprintf(url, sizeof(url), "file://%s#search=spin_u", svg);
	d = chromium_dom(chromium, dir, url, 3);
	char matched[200];
	element_text(d, "matched", matched, sizeof(matched));
	cr_expect(strncmp(matched, "Matched: ", 9) == 0 && strncmp(matched, "Matched: 0.0%", 13) != 0,
		  "search for spin_u: '%s'", matched);
	cr_expect(strstr(d, "rgb(230,0,230)"), "no box coloured by the search");
	free(d);

	snprintf(url, sizeof(url), "file://%s#search=(", svg);
	d = chromium_dom(chromium, dir, url, 4);
	element_text(d, "matched", matched, sizeof(matched));
	cr_expect(strstr(matched, "Not a regular expression"), "a bad search says '%s'", matched);
	free(d);
	free(file);
	rm_rf(dir);
}

/* The same flame graph as a person uses it: playwright-core (npm, installed
 * by setup.sh) drives Chromium, clicks a spin_units frame with the mouse and
 * then "Reset Zoom": the frame fills the width with the boxes beside it
 * hidden, and the reset brings every box back at its own width. */
Test(report, svg_flame_graph_zooms_on_a_mouse_click, .timeout = 300)
{
	const char *chromium = find_chromium();
	if (!chromium)
		cr_skip_test("chromium not installed (Debian package 'chromium')");
	const char *browser_dir = getenv("DIAG_BROWSER_DIR");
	cr_assert(browser_dir, "DIAG_BROWSER_DIR is not set (meson test sets it)");
	char driver[600];
	snprintf(driver, sizeof(driver), "%s/node_modules/playwright-core", browser_dir);
	cr_assert(access(driver, R_OK) == 0, "%s is missing: ./setup.sh test installs it", driver);
	char dir[256], b[300], svg[300];
	burner_svg(dir, b, svg);
	char *file = read_file(svg, NULL);
	cr_assert(file);
	size_t boxes = count_of(file, "<g class=\"f\"");
	char id[32];
	first_box_of(file, "spin_units", id, sizeof(id));
	free(file);

	char cmd[1600], out[4096];
	snprintf(cmd, sizeof(cmd), "HOME='%s' node '%s/svg_click.mjs' '%s' '%s' '%s' 2>&1", dir, browser_dir,
		 chromium, svg, id);
	int st = shell_output(cmd, out, sizeof(out));
	cr_assert_eq(st, 0, "the browser driver failed (%d): %s", st, out);
	cJSON *res = cJSON_Parse(out);
	cr_assert(res, "not JSON: %s", out);
	double shown = cJSON_GetNumberValue(cJSON_GetObjectItem(res, "boxes"));
	double before = cJSON_GetNumberValue(cJSON_GetObjectItem(res, "before"));
	double after = cJSON_GetNumberValue(cJSON_GetObjectItem(res, "after"));
	double hidden = cJSON_GetNumberValue(cJSON_GetObjectItem(res, "hidden"));
	double reset = cJSON_GetNumberValue(cJSON_GetObjectItem(res, "reset"));
	double hidden_after = cJSON_GetNumberValue(cJSON_GetObjectItem(res, "hiddenAfterReset"));
	cr_expect_eq(shown, (double)boxes, "Chromium shows %.0f boxes, the file has %zu", shown, boxes);
	cr_expect(before > 0 && before < 1180, "%s is %.2f wide before the click", id, before);
	cr_expect(fabs(after - 1180) < 0.5, "%s is %.2f wide after the click, not 1180", id, after);
	cr_expect_geq(hidden, 1, "nothing beside %s was hidden by the click", id);
	cr_expect(fabs(reset - before) < 0.5, "after Reset Zoom %s is %.2f wide, was %.2f", id, reset, before);
	cr_expect_eq(hidden_after, 0, "%.0f boxes still hidden after Reset Zoom", hidden_after);
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(res, "errors")), 0, "script errors: %s", out);
	cJSON_Delete(res);
	rm_rf(dir);
}

/* A capture's -o ending in .svg or .speedscope.json writes that file and
 * no bundle: no directory of that name, nothing left in TMPDIR (where the
 * bundle it is made from lives); "-o -" is refused before anything is
 * captured or created, and so is a file that cannot be written. */
Test(report, capture_to_one_file, .timeout = 120)
{
	char dir[256], tmp[300], svg[300], ss[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	cr_assert_eq(mkdir(tmp, 0700), 0);
	snprintf(svg, sizeof(svg), "%s/out.svg", dir);
	snprintf(ss, sizeof(ss), "%s/out.speedscope.json", dir);
	const char *argv[] = {target_path("burner"), "1", NULL};
	struct target t = target_start(argv, "ready");
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	setenv("TMPDIR", tmp, 1);
	struct tool_result r;
	const char *a1[] = {"-p", pid, "-d", "1s", "-q", "-o", svg, NULL};
	tool_run_ok(&r, a1);
	cr_expect(strstr(r.out, svg), "stdout does not name the file: %s", r.out);
	struct stat st;
	cr_expect(stat(svg, &st) == 0 && S_ISREG(st.st_mode), "%s is not a file", svg);
	char *file = read_file(svg, NULL);
	cr_expect(file && strstr(file, "<svg") && strstr(file, "spin_units"), "not a flame graph of the burner");
	free(file);
	const char *a2[] = {"-p", pid, "--snapshot", "-q", "-o", ss, NULL};
	tool_run_ok(&r, a2);
	file = read_file(ss, NULL);
	cJSON *doc = file ? cJSON_Parse(file) : NULL;
	cr_expect(doc && cJSON_GetObjectItem(doc, "profiles"), "not a speedscope file");
	cJSON_Delete(doc);
	free(file);
	DIR *d = opendir(tmp);
	struct dirent *e;
	while ((e = readdir(d)))
		cr_expect(e->d_name[0] == '.', "left in TMPDIR: %s", e->d_name);
	closedir(d);

	cr_assert_eq(chdir(dir), 0);
	const char *a3[] = {"-p", pid, "-d", "1s", "-q", "-o", "-", NULL};
	tool_run(&r, a3);
	cr_expect_eq(r.exit_code, 2, "-o -: exit %d", r.exit_code);
	cr_expect(access("-", F_OK) != 0, "-o - made a directory named -");
	/* An hour's capture: refused first, or the test times out. */
	const char *a4[] = {"-p", pid, "-d", "1h", "-q", "-o", "/nonexistent/x.svg", NULL};
	tool_run(&r, a4);
	cr_expect_eq(r.exit_code, 10, "an unwritable file: exit %d: %s", r.exit_code, r.err);
	unsetenv("TMPDIR");
	target_kill(&t);
	rm_rf(dir);
}

Test(report, usage_and_damage)
{
	struct tool_result r;
	static const char *const cmds[] = {"report", "export", "pem", "unpem", "diff"};
	for (size_t i = 0; i < 5; i++) {
		const char *h[] = {cmds[i], "--help", NULL};
		tool_run(&r, h);
		cr_expect_eq(r.exit_code, 0, "%s --help: exit %d", cmds[i], r.exit_code);
		cr_expect(strstr(r.out, "Exit status:"), "%s --help has no exit statuses", cmds[i]);
		const char *bad[] = {cmds[i], "--no-such-option", NULL};
		tool_run(&r, bad);
		cr_expect_eq(r.exit_code, 2, "%s with a bad option: exit %d", cmds[i], r.exit_code);
	}
	char dir[256];
	make_tmpdir(dir, sizeof(dir));
	const char *nb[] = {"report", dir, NULL};
	tool_run(&r, nb);
	cr_expect_eq(r.exit_code, 1, "report of a non-bundle: exit %d", r.exit_code);
	cr_expect(strstr(r.err, "not a bundle"), "%s", r.err);
	/* A directory that does not exist is said to be that, not a bundle
	 * without a manifest. */
	char missing[300];
	snprintf(missing, sizeof(missing), "%s/none", dir);
	const char *nd[] = {"report", missing, NULL};
	tool_run(&r, nd);
	cr_expect_eq(r.exit_code, 1, "report of a missing directory: exit %d", r.exit_code);
	cr_expect(strstr(r.err, "no such directory") && !strstr(r.err, "manifest"), "%s", r.err);
	const char *vd[] = {"verify", missing, NULL};
	tool_run(&r, vd);
	cr_expect(strstr(r.err, "no such directory"), "verify: %s", r.err);

	/* A damaged member: the report still prints, with a warning, exit 1. */
	char b[300], path[400];
	snprintf(b, sizeof(b), "%s/b", dir);
	capture("demo", NULL, "1s", b, NULL);
	snprintf(path, sizeof(path), "%s/threads.txt", b);
	FILE *f = fopen(path, "a");
	cr_assert(f);
	fputs("tampered\n", f);
	fclose(f);
	const char *dm[] = {"report", b, NULL};
	tool_run(&r, dm);
	cr_expect_eq(r.exit_code, 1, "report of a damaged bundle: exit %d", r.exit_code);
	cr_expect(strstr(r.err, "threads.txt"), "the damaged member is not named: %s", r.err);
	cr_expect(find_line(r.out, "compute_checksum"), "no report printed for a damaged bundle");
	const char *pm[] = {"pem", b, NULL};
	tool_run(&r, pm);
	cr_expect_eq(r.exit_code, 1, "pem of a damaged bundle: exit %d", r.exit_code);
	rm_rf(dir);
}

/* Go fixture (tests/targets/go/fixture/main.go): five identical goroutines
 * parked in "<-c7" (main.main.func17) must form one group of 5 with wait
 * reason "chan receive"; one goroutine sleeps in time.Sleep. */
Test(report, go_goroutine_groups)
{
	const char *fx = getenv("DIAG_GO_FIXTURE");
	if (!fx || access(fx, X_OK) != 0)
		cr_skip_test("Go fixture not built (no go on PATH)");
	const char *argv[] = {fx, NULL};
	struct target_run run;
	run_begin(&run, argv, "pid", "b");
	const char *b = run.out;
	struct tool_result r;
	const char *args[] = {"-p", run.pid, "--snapshot", "-o", b, "-q", NULL};
	tool_run(&r, args);
	target_kill(&run.t);
	cr_assert_eq(r.exit_code, 0, "capture: %s", r.err);
	if (!path_exists(b, "goroutine.txt"))
		cr_skip_test("this build does not capture goroutines");
	cJSON *d = report_json(b);
	const cJSON *groups = cJSON_GetObjectItem(d, "goroutine_groups");
	cr_assert(cJSON_GetArraySize(groups) > 0, "no goroutine groups");
	const cJSON *g = cJSON_GetArrayItem(groups, 0);
	cr_expect_eq(cJSON_GetObjectItem(g, "count")->valueint, 5,
		     "largest group is not the 5 identical goroutines");
	cr_expect_str_eq(cJSON_GetObjectItem(g, "reason")->valuestring, "chan receive");
	cr_expect(group_with(groups, "time.Sleep"), "no time.Sleep goroutine");
	cJSON_Delete(d);
	const char *rep[] = {"report", b, NULL};
	tool_run(&r, rep);
	cr_expect(find_line(r.out, "GOROUTINES"), "no goroutine section:\n%s", r.out);
	rm_rf(run.dir);
}
