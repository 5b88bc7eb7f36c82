/*
 * The timeline and the leak watchdog through the CLI, against real targets
 * that leak fds, threads, children and memory (tests/targets/leak), and one
 * that churns the same resources without leaking. Each leaking target fires
 * its counter with a thread snapshot taken at that moment; the churner fires
 * nothing.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

struct leak_run {
	char dir[256];
	char out[300];
	cJSON *manifest;
};

static void capture(struct leak_run *r, const char *const *target_argv, const char *duration,
		    const char *interval)
{
	struct target t = target_start(target_argv, "ready");
	make_tmpdir(r->dir, sizeof(r->dir));
	snprintf(r->out, sizeof(r->out), "%s/b", r->dir);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result res;
	const char *args[] = {"-p", pid, "-o", r->out, "-i", interval, "--leak-watch",
			      "-d", duration, "-F", "49", "-q", NULL};
	tool_run(&res, args);
	cr_assert_eq(res.exit_code, 0, "exit %d: %s", res.exit_code, res.err);
	char why[256];
	cr_expect(target_healthy(t.pid, false, why, sizeof(why)), "%s", why);
	target_kill(&t);

	expect_verified(r->out, NULL);
	r->manifest = manifest_need(r->out);
}

static void finish(struct leak_run *r)
{
	cJSON_Delete(r->manifest);
	rm_rf(r->dir);
}

/* The finding for counter, with its dump files present; NULL if none. */
static cJSON *finding(struct leak_run *r, const char *counter)
{
	cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(r->manifest, "findings"))
	{
		if (strcmp(cJSON_GetObjectItem(f, "counter")->valuestring, counter) != 0)
			continue;
		cJSON *d;
		bool threads = false, window = false;
		cJSON_ArrayForEach(d, cJSON_GetObjectItem(f, "dumps"))
		{
			char path[600];
			snprintf(path, sizeof(path), "%s/%s", r->out, d->valuestring);
			struct stat st;
			cr_expect(stat(path, &st) == 0 && st.st_size > 0, "dump %s missing", path);
			threads |= strstr(d->valuestring, "threads.txt") != NULL;
			window |= strstr(d->valuestring, "window.jsonl") != NULL;
		}
		cr_expect(threads && window, "finding for %s lacks its thread snapshot or window",
			  counter);
		cr_expect_gt(cJSON_GetObjectItem(f, "slope_per_s")->valuedouble, 0);
		return f;
	}
	return NULL;
}

/* The text of f's evidence member whose name ends in member (fds.txt,
 * new_threads.txt...), listed in its dumps; NULL if none. */
static char *evidence(struct leak_run *r, const cJSON *f, const char *member)
{
	const cJSON *d;
	cJSON_ArrayForEach(d, cJSON_GetObjectItem(f, "dumps"))
	{
		size_t n = strlen(d->valuestring), m = strlen(member);
		if (n >= m && strcmp(d->valuestring + n - m, member) == 0)
			return read_in(r->out, d->valuestring);
	}
	return NULL;
}

/* The first group line after the line starting with heading: "COUNT  WHAT". */
static const char *first_group_after(const char *text, const char *heading, long *count)
{
	const char *h = strstr(text, heading);
	const char *l = h ? strchr(h, '\n') : NULL;
	if (!l)
		return NULL;
	*count = strtol(l + 1, NULL, 10);
	const char *what = l + 1;
	while (*what == ' ' || (*what >= '0' && *what <= '9'))
		what++;
	return what;
}

static size_t nfindings(struct leak_run *r)
{
	return (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(r->manifest, "findings"));
}

Test(leak, fds_fire_with_snapshot)
{
	const char *argv[] = {target_path("leak/leak_fds"), "4", NULL};
	struct leak_run r;
	capture(&r, argv, "15s", "250ms");
	cJSON *f = finding(&r, "open_fds");
	cr_expect(f, "no open_fds finding");
	if (f) {
		double slope = cJSON_GetObjectItem(f, "slope_per_s")->valuedouble;
		cr_expect(slope > 3 && slope < 5, "slope %.2f/s, want ~4", slope);
		/* The evidence names what leaked: /dev/null, opened again and
		 * again, is what the newest descriptors are. */
		char *fds = evidence(&r, f, "fds.txt");
		cr_assert(fds, "no fds.txt in the finding's dumps");
		long n = 0;
		const char *what = first_group_after(fds, "The ", &n);
		cr_expect(what && strncmp(what, "file /dev/null", 14) == 0,
			  "the newest descriptors are not named /dev/null:\n%s", fds);
		double added = cJSON_GetObjectItem(f, "last")->valuedouble -
			       cJSON_GetObjectItem(f, "first")->valuedouble;
		cr_expect_geq((double)n, 0.9 * added, "%ld of %.0f new descriptors are /dev/null:\n%s", n,
			      added, fds);
		free(fds);
	}
	/* The timeline is there, one line per interval, with fds by type. */
	char *tl = read_in(r.out, "runtime.jsonl");
	cr_assert(tl);
	size_t lines = 0;
	for (const char *p = tl; (p = strchr(p, '\n')); p++)
		lines++;
	cr_expect(lines >= 50 && lines <= 64, "%zu timeline lines for 15 s at 250 ms", lines);
	cr_expect(strstr(tl, "\"fds_by_type\":{"), "no fds_by_type");
	free(tl);
	finish(&r);
}

/* Capture argv for dur at 250 ms intervals: a finding for counter, with its
 * dumps, must be in the bundle. */
static void expect_finding(const char *const *argv, const char *dur, const char *counter)
{
	struct leak_run r;
	capture(&r, argv, dur, "250ms");
	cr_expect(finding(&r, counter), "no %s finding", counter);
	finish(&r);
}

/* A finding for counter whose evidence member lists at least 0.8 times the
 * finding's growth as new, each line holding comm; returns the text. */
static char *expect_newcomers(struct leak_run *r, const char *counter, const char *member,
			      const char *comm)
{
	cJSON *f = finding(r, counter);
	cr_assert(f, "no %s finding", counter);
	char *text = evidence(r, f, member);
	cr_assert(text, "no %s in the %s finding's dumps", member, counter);
	double added = cJSON_GetObjectItem(f, "last")->valuedouble -
		       cJSON_GetObjectItem(f, "first")->valuedouble;
	size_t listed = 0;
	char needle[64];
	snprintf(needle, sizeof(needle), "\"%s\"  started ", comm);
	for (const char *p = text; (p = strstr(p, needle)); p++)
		listed++;
	cr_expect_geq((double)listed, 0.8 * added, "%zu listed for %.0f added:\n%s", listed, added, text);
	return text;
}

/* The new threads, by name, with their stacks grouped. */
Test(leak, threads_fire)
{
	/* One thread every 10 s: the default rule promises a finding within
	 * a minute (a rise of 4 over a window of at least 30 s). */
	const char *argv[] = {target_path("leak/leak_threads"), "0.1", NULL};
	struct leak_run r;
	capture(&r, argv, "58s", "250ms");
	char *text = expect_newcomers(&r, "threads", "new_threads.txt", "leak_threads");
	cr_expect(strstr(text, "Their stacks, grouped"), "no stacks for the new threads:\n%s", text);
	cr_expect(strstr(text, "start_thread"), "the new threads' stacks are not unwound:\n%s", text);
	free(text);
	finish(&r);
}

/* The new children, by name (zombies keep theirs; their argv is gone). */
Test(leak, children_fire)
{
	const char *argv[] = {target_path("leak/leak_children"), "4", "zombie", NULL};
	struct leak_run r;
	capture(&r, argv, "8s", "250ms");
	free(expect_newcomers(&r, "child_procs", "new_children.txt", "leak_children"));
	finish(&r);
}

/* Issue 54: a child's argv is its own words and may hold secrets:
 * new_children.txt lists it redacted (under a word that names mysql, as
 * "sudo mysql -pX" would), and escaped, as the manifest's argv is. */
Test(leak, children_argv_redacted)
{
	const char *argv[] = {target_path("leak/leak_children"), "4", "sleep", "--", "mysql", "\x1b[2J",
			      "postgres://app:S3cr3tPW@db/x", "-pHUNTER2secret", NULL};
	struct leak_run r;
	capture(&r, argv, "8s", "250ms");
	char *text = expect_newcomers(&r, "child_procs", "new_children.txt", "leak_children");
	cr_expect(strstr(text, " sleep -- mysql \\x1b[2J postgres://app:[REDACTED]@db/x -p[REDACTED]\n"),
		  "the children's argv are not listed redacted:\n%s", text);
	cr_expect(!strstr(text, "HUNTER2secret") && !strstr(text, "S3cr3tPW") && !strchr(text, '\x1b'),
		  "a secret or a raw control in new_children.txt:\n%s", text);
	free(text);
	char *m = read_in(r.out, "manifest.json");
	cr_assert(m);
	cr_expect(!strstr(m, "HUNTER2secret") && !strstr(m, "S3cr3tPW"), "a secret in the manifest");
	free(m);
	finish(&r);
}

/* Leaked TCP connections are named as such, with the address they go to:
 * in fds.txt and in the manifest's finding. */
Test(leak, tcp_sockets_are_named)
{
	const char *argv[] = {target_path("leak/leak_fds"), "8", "tcp", NULL};
	struct leak_run r;
	capture(&r, argv, "8s", "250ms");
	cJSON *f = finding(&r, "open_fds");
	cr_assert(f, "no open_fds finding");
	char *fds = evidence(&r, f, "fds.txt");
	cr_assert(fds, "no fds.txt");
	long n = 0;
	const char *what = first_group_after(fds, "The ", &n);
	cr_expect(what && strncmp(what, "socket tcp ESTABLISHED to 127.0.0.1:", 36) == 0,
		  "the newest descriptors are not named as TCP connections:\n%s", fds);
	cr_expect(strstr(fds, "socket tcp LISTEN on 127.0.0.1:"), "the listener is not named:\n%s", fds);
	const cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "new_fds"), 0);
	const char *gw = cJSON_GetStringValue(cJSON_GetObjectItem(g, "what"));
	cr_expect(gw && strncmp(gw, "socket tcp ESTABLISHED", 22) == 0, "manifest new_fds: %s",
		  gw ? gw : "(none)");
	free(fds);
	finish(&r);
}

Test(leak, rss_fires)
{
	/* 1 MiB/s: the default rule promises a finding within a minute. */
	const char *argv[] = {target_path("leak/leak_rss"), "1", NULL};
	expect_finding(argv, "58s", "rss_bytes");
}

Test(leak, churn_fires_nothing)
{
	const char *argv[] = {target_path("leak/churn"), "20", NULL};
	struct leak_run r;
	capture(&r, argv, "15s", "250ms");
	cr_expect_eq(nfindings(&r), 0, "churn fired: %s",
		     cJSON_Print(cJSON_GetObjectItem(r.manifest, "findings")));
	finish(&r);
}

/* RssAnon of pid in KiB, or -1. */
static long rss_anon_kib(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strstr(buf, "RssAnon:");
	return p ? atol(p + 8) : -1;
}

/* --growth against the kernel's own count: growth.pprof's bytes are the
 * target's RssAnon growth over the capture (within 25 %), all of it under
 * the function that touches the new pages. */
Test(leak, growth_profile_matches_rss_and_names_the_toucher)
{
	const char *argv[] = {target_path("leak/leak_rss"), "4", NULL};
	struct target t = target_start(argv, "ready");
	char dir[256], out[300], pid[16];
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/b", dir);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	long before = rss_anon_kib(t.pid);
	const char *args[] = {"-p", pid, "-o", out, "--growth", "-d", "5s", "-q", NULL};
	struct tool_result *res = malloc(sizeof(*res));
	tool_run(res, args);
	long after = rss_anon_kib(t.pid);
	cr_assert_eq(res->exit_code, 0, "exit %d: %s", res->exit_code, res->err);
	target_kill(&t);
	expect_verified(out, NULL);
	cr_assert(path_exists(out, "growth.pprof"), "no growth.pprof");
	cJSON *m = manifest_need(out);
	const cJSON *pf = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "capture"), "cpu"), "perf"),
		"page_faults");
	cr_assert(pf, "the manifest has no capture.cpu.perf.page_faults");
	double got = cJSON_GetNumberValue(cJSON_GetObjectItem(pf, "bytes"));
	double truth = (double)(after - before) * 1024;
	cr_assert_gt(truth, 8e6, "leak_rss grew only %.0f bytes", truth);
	cr_assert(got >= 0.75 * truth && got <= 1.25 * truth,
		  "growth.pprof holds %.0f bytes, RssAnon grew %.0f", got, truth);
	const char *rargs[] = {"report", "--json", out, NULL};
	tool_run(res, rargs);
	cJSON *rep = cJSON_Parse(res->out);
	cr_assert(rep, "report --json printed no JSON");
	const cJSON *growth = cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "profiles"), "growth");
	cr_assert(growth, "report has no growth profile");
	const cJSON *e;
	double touch = -1;
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(growth, "top_cum"))
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "function")) ?: "", "touch_new") == 0)
			touch = cJSON_GetNumberValue(cJSON_GetObjectItem(e, "cum_pct"));
	cr_assert_geq(touch, 95, "touch_new holds %.1f %% of the growth", touch);
	cJSON_Delete(rep);
	cJSON_Delete(m);
	free(res);
	rm_rf(dir);
}

/* Threads of pid now. */
static long task_count(pid_t pid)
{
	char cmd[64], out[32];
	snprintf(cmd, sizeof(cmd), "ls /proc/%d/task | wc -l", (int)pid);
	shell_output(cmd, out, sizeof(out));
	return atol(out);
}

/* --growth also records where threads are created (the kernel's
 * sched_process_fork, in the creating thread): as many as /proc saw
 * appear, each under the program's own call to pthread_create. */
Test(leak, threadcreate_counts_new_threads_under_their_creator)
{
	const char *argv[] = {target_path("leak/leak_threads"), "4", NULL};
	struct target t = target_start(argv, "ready");
	char dir[256], out[300], pid[16];
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/b", dir);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	const char *args[] = {"-p", pid, "-o", out, "--growth", "-d", "3s", "-q", NULL};
	struct tool_result *res = malloc(sizeof(*res));
	long before = task_count(t.pid);
	tool_run(res, args);
	long after = task_count(t.pid);
	cr_assert_eq(res->exit_code, 0, "exit %d: %s", res->exit_code, res->err);
	target_kill(&t);
	cJSON *m = manifest_need(out);
	const cJSON *forks = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "capture"), "cpu"), "perf"), "forks");
	cr_assert(forks, "no capture.cpu.perf.forks in the manifest");
	if (cJSON_GetObjectItem(forks, "refused"))
		cr_skip_test("the kernel refused sched_process_fork: %s",
			     cJSON_GetStringValue(cJSON_GetObjectItem(forks, "refused")));
	double n = cJSON_GetNumberValue(cJSON_GetObjectItem(forks, "samples"));
	/* The tool's own start and end are inside the capture's window, a
	 * thread or two either side of /proc's counts. */
	cr_assert(n >= (double)(after - before) - 2 && n <= (double)(after - before) + 2,
		  "%.0f threads created by the samples, /proc saw %ld appear", n, after - before);
	const char *rargs[] = {"report", "--json", "--top", "40", out, NULL};
	tool_run(res, rargs);
	cJSON *rep = cJSON_Parse(res->out);
	cr_assert(rep, "report --json printed no JSON");
	const cJSON *tc = cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "profiles"), "threadcreate");
	cr_assert(tc, "report has no threadcreate profile");
	bool tick = false, create = false;
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(tc, "top_cum"))
	{
		const char *fn = cJSON_GetStringValue(cJSON_GetObjectItem(e, "function")) ?: "";
		double pct = cJSON_GetNumberValue(cJSON_GetObjectItem(e, "cum_pct"));
		tick = tick || (strcmp(fn, "tick") == 0 && pct >= 95);
		create = create || (strstr(fn, "pthread_create") && pct >= 95);
	}
	cr_assert(tick && create, "the creations are not under tick <- pthread_create: %s", cJSON_Print(tc));
	cJSON_Delete(rep);
	cJSON_Delete(m);
	free(res);
	rm_rf(dir);
}

/* --growth asks for what only perf events give: without them (the ptrace
 * CPU engine, -F 0), the capture says in one line that growth.pprof and
 * threadcreate.pprof were not written and why, at its end, in the
 * manifest and in the report, instead of leaving two members missing. */
Test(leak, growth_without_perf_events_says_so, .timeout = 90)
{
	const char *argv[] = {target_path("burner"), "1", NULL};
	struct target t = target_start(argv, "ready");
	char pid[16], dir[256], out[300];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	make_tmpdir(dir, sizeof(dir));
	struct tool_result *res = malloc(sizeof(*res));
	cr_assert(res);
	static const char *const why[] = {"--cpu-engine ptrace does not open them", "-F 0 turns off"};
	for (int k = 0; k < 2; k++) {
		snprintf(out, sizeof(out), "%s/b%d", dir, k);
		const char *ptrace[] = {"-p", pid, "-d", "1s", "--growth", "--cpu-engine", "ptrace", "-o", out, NULL};
		const char *nohz[] = {"-p", pid, "-d", "1s", "--growth", "-F", "0", "-o", out, NULL};
		tool_run(res, k ? nohz : ptrace);
		cr_assert_eq(res->exit_code, 0, "exit %d: %s", res->exit_code, res->err);
		cr_expect(strstr(res->err, "warning: growth.pprof and threadcreate.pprof not written") &&
				  strstr(res->err, why[k]),
			  "no warning that names why:\n%s", res->err);
		cr_expect(!path_exists(out, "growth.pprof"), "growth.pprof written anyway");
		cJSON *m = manifest_need(out);
		const char *said = cJSON_GetStringValue(
			cJSON_GetObjectItem(cJSON_GetObjectItem(m, "capture"), "growth_not_recorded"));
		cr_expect(said && strstr(said, why[k]), "manifest: %s", said ? said : "(nothing)");
		cJSON_Delete(m);
		const char *report[] = {"report", out, NULL};
		tool_run(res, report);
		cr_expect(strstr(res->out, "growth.pprof and threadcreate.pprof not written"),
			  "the report is silent:\n%s", res->out);
	}
	free(res);
	target_kill(&t);
	rm_rf(dir);
}
