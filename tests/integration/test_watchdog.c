/*
 * Issue 54 item 2: a capture that the watchdog ends still leaves a bundle
 * that says so. The tool holds the target past --watchdog (made to, with
 * $DIAG_ATTACH_TEST_HOLD_MS); the watchdog SIGKILLs it (exit 137), which
 * releases the target, and then runs the tool's executable once more
 * (__watchdog-epilogue): the bundle directory gets a manifest that lists
 * what was written and says capture.ended_by "watchdog", it verifies, and
 * one line on the tool's standard error says what happened. It used to be
 * exit 137 and a directory without a manifest, with no word.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* Run the tool with args (a capture of t into out) held 1.5 s a capture
 * under a 300 ms watchdog; its standard error into err. */
static int run_killed(const char *const *args, char *err, size_t size)
{
	char dir[256], errp[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(errp, sizeof(errp), "%s/err", dir);
	FILE *f = fopen(errp, "w"); /* tool_spawn opens it, not creates it */
	cr_assert(f);
	fclose(f);
	setenv("DIAG_ATTACH_TEST_HOLD_MS", "1500", 1);
	pid_t pid = tool_spawn(args, NULL, errp);
	unsetenv("DIAG_ATTACH_TEST_HOLD_MS");
	int code = tool_wait(pid, 60000);
	/* The epilogue writes a moment after the kill: its line is the
	 * sign it is done. */
	char *text = NULL;
	for (uint64_t t0 = now_ms(); now_ms() - t0 < 10000; sleep_ms(20)) {
		free(text);
		text = read_file(errp, NULL);
		if (text && strstr(text, "the watchdog killed"))
			break;
	}
	snprintf(err, size, "%s", text ? text : "");
	free(text);
	rm_rf(dir);
	return code;
}

static void expect_salvaged(const char *out, const char *err, pid_t target, const char *member)
{
	char said[128];
	snprintf(said, sizeof(said), "diag-attach: the watchdog killed diag-attach after it held pid %d",
		 (int)target);
	cr_expect(strstr(err, said), "no line from the epilogue: %s", err);
	cr_expect(strstr(err, "(--watchdog 300)"), "%s", err);
	cJSON *m = manifest_need(out);
	cJSON *cap = cJSON_GetObjectItem(m, "capture");
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cap, "ended_by")), "watchdog");
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(cap, "complete")));
	cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(cap, "watchdog_ms")), 300);
	cr_expect_geq(cJSON_GetNumberValue(cJSON_GetObjectItem(cap, "held_ms")), 300);
	cr_expect_eq(number_at(m, "target", "pid"), (double)target);
	cr_expect(cJSON_GetStringValue(cJSON_GetObjectItem(m, "bundle_id")), "no bundle_id");
	if (member) {
		bool listed = false;
		cJSON *e;
		cJSON_ArrayForEach(e, cJSON_GetObjectItem(m, "members"))
			listed |= strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")), member) == 0;
		cr_expect(listed, "%s not listed", member);
	}
	cJSON_Delete(m);
	expect_verified(out, "a bundle the watchdog ended");
	char why[256];
	cr_expect(target_healthy(target, false, why, sizeof(why)), "%s", why);
}

Test(watchdog, ended_snapshot_has_a_manifest_that_says_so, .timeout = 120)
{
	struct target_run g;
	run_begin(&g, (const char *[]){target_path("demo"), NULL}, NULL, "b");
	char err[4096];
	int code = run_killed((const char *[]){"-p", g.pid, "--snapshot", "--watchdog", "300", "-o",
					       g.out, NULL},
			      err, sizeof(err));
	cr_expect_eq(code, -1, "the tool was not killed: exit %d: %s", code, err);
	expect_salvaged(g.out, err, g.t.pid, NULL);
	run_end(&g);
}

/* A sampling capture: the timeline written so far is kept, and listed. */
Test(watchdog, ended_sampling_keeps_what_was_written, .timeout = 120)
{
	struct target_run g;
	run_begin(&g, (const char *[]){target_path("demo"), NULL}, NULL, "b");
	char err[4096];
	int code = run_killed((const char *[]){"-p", g.pid, "-d", "1s", "-q", "--watchdog", "300",
					       "-o", g.out, NULL},
			      err, sizeof(err));
	cr_expect_eq(code, -1, "the tool was not killed: exit %d: %s", code, err);
	expect_salvaged(g.out, err, g.t.pid, "runtime.jsonl");
	run_end(&g);
}
