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

Test(leak, threads_fire)
{
	const char *argv[] = {target_path("leak/leak_threads"), "8", NULL};
	expect_finding(argv, "8s", "threads");
}

Test(leak, children_fire)
{
	const char *argv[] = {target_path("leak/leak_children"), "4", "zombie", NULL};
	expect_finding(argv, "8s", "child_procs");
}

Test(leak, rss_fires)
{
	const char *argv[] = {target_path("leak/leak_rss"), "32", NULL};
	expect_finding(argv, "8s", "rss_bytes");
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
