/*
 * Launch mode: diag-attach [options] -- CMD ARGS... starts the command,
 * captures it until it exits, and exits as it did (as strace does); our
 * own refusals before it starts keep our statuses.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static cJSON *launched_of(const char *bundle)
{
	cJSON *m = manifest_need(bundle);
	cJSON *l = cJSON_DetachItemFromObject(m, "launched");
	cJSON_Delete(m);
	cr_assert(l, "no launched object in %s's manifest", bundle);
	return l;
}

/* A busy shell loop that exits 7: our exit status is 7, the bundle is
 * whole and says so, and its CPU profile has the shell's samples. */
Test(launch, exit_status_is_the_commands, .timeout = 120)
{
	char dir[256], b[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(b, sizeof(b), "%s/b", dir);
	struct tool_result r;
	const char *args[] = {"-q", "-o", b, "--", "bash", "-c",
			      "end=$((SECONDS+3)); while [ $SECONDS -lt $end ]; do :; done; exit 7", NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 7, "exit %d, not the command's 7: %s", r.exit_code, r.err);
	cr_expect(strstr(r.out, b), "the bundle's path is not on stdout: %s", r.out);
	expect_verified(b, "launch");
	cJSON *l = launched_of(b);
	cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(l, "exit_status")), 7);
	const char *argv0 = cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "argv"), 0));
	cr_expect(argv0 && strcmp(argv0, "bash") == 0, "argv[0] %s", argv0 ? argv0 : "(none)");
	cJSON_Delete(l);
	cJSON *m = manifest_need(b);
	cr_expect_gt(number_at(m, "capture", "cpu_samples"), 20, "the busy loop was hardly sampled");
	cJSON_Delete(m);
	rm_rf(dir);
}

/* Sampled from its first instruction: the command is held stopped from
 * its exec until the capture is in place, so the CPU samples cover what
 * the command itself says it used (bash's times builtin, printed on the
 * stdout we share), not what is left after our start-up. */
Test(launch, sampled_from_the_start, .timeout = 120)
{
	char dir[256], b[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(b, sizeof(b), "%s/b", dir);
	struct tool_result r;
	const char *args[] = {"-q", "-o", b, "--", "bash", "-c",
			      "for ((i = 0; i < 300000; i++)); do :; done; times", NULL};
	tool_run(&r, args);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	/* times: "0m0.01s 0m0.00s" (the shell), then its children's line. */
	int um, sm;
	double us, ss;
	const char *line = strstr(r.out, "m");
	cr_assert(line && sscanf(line - 1, "%dm%lfs %dm%lfs", &um, &us, &sm, &ss) == 4,
		  "no times line in: %s", r.out);
	double used = um * 60 + us + sm * 60 + ss;
	cJSON *m = manifest_need(b);
	double sampled = number_at(m, "capture", "cpu_samples") / 99.0;
	cJSON_Delete(m);
	fprintf(stderr, "launch: bash used %.2f s, %.2f s sampled\n", used, sampled);
	cr_expect_geq(used, 0.3, "the loop took only %.2f s of CPU: too short to tell", used);
	cr_expect(sampled >= 0.85 * used, "%.2f s sampled of the %.2f s the command used", sampled, used);
	rm_rf(dir);
}

/* Killed by a signal: 128 + its number, as a shell says; an -o file works
 * in launch mode too. */
Test(launch, killed_by_a_signal, .timeout = 60)
{
	char dir[256], svg[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(svg, sizeof(svg), "%s/out.svg", dir);
	struct tool_result r;
	const char *args[] = {"-q", "-o", svg, "--", "sh", "-c", "sleep 1; kill -TERM $$", NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 128 + 15, "exit %d after SIGTERM: %s", r.exit_code, r.err);
	cr_expect_eq(access(svg, F_OK), 0, "no %s", svg);
	rm_rf(dir);
}

/* -d shorter than the command: the bundle is written when -d ends, says
 * the command was still running, and we still exit as the command does. */
Test(launch, duration_ends_before_the_command, .timeout = 60)
{
	char dir[256], b[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(b, sizeof(b), "%s/b", dir);
	struct tool_result r;
	const char *args[] = {"-q", "-d", "1s", "-o", b, "--", "sh", "-c", "sleep 3; exit 4", NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 4, "exit %d: %s", r.exit_code, r.err);
	cJSON *l = launched_of(b);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(l, "running_when_the_capture_ended")),
		  "the manifest does not say the command outlived the capture");
	cJSON_Delete(l);
	rm_rf(dir);
}

/* Refused before anything starts: our statuses, and nothing created. */
Test(launch, refusals_keep_our_statuses, .timeout = 60)
{
	char dir[256], b[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(b, sizeof(b), "%s/b", dir);
	struct tool_result r;
	const char *none[] = {"-q", "-o", b, "--", "/nonexistent/command", NULL};
	tool_run(&r, none);
	/* The statuses a shell gives: 127 not found, 126 not executable. */
	cr_expect_eq(r.exit_code, 127, "a command that does not exist: exit %d", r.exit_code);
	cr_expect(strstr(r.err, "cannot run '/nonexistent/command': command not found"), "%s", r.err);
	cr_expect_neq(access(b, F_OK), 0, "a bundle directory was made for a command that never ran");
	char plain[300];
	snprintf(plain, sizeof(plain), "%s/plain-file", dir);
	FILE *pf = fopen(plain, "w");
	cr_assert(pf);
	fclose(pf);
	const char *noexec[] = {"-q", "-o", b, "--", plain, NULL};
	tool_run(&r, noexec);
	cr_expect_eq(r.exit_code, 126, "a file that is not executable: exit %d", r.exit_code);
	cr_expect(strstr(r.err, "Permission denied"), "%s", r.err);
	cr_expect_neq(access(b, F_OK), 0, "a bundle directory was made for a command that never ran");
	const char *both[] = {"-p", "1", "--", "true", NULL};
	tool_run(&r, both);
	cr_expect_eq(r.exit_code, 2, "-p and a command: exit %d", r.exit_code);
	/* A bad -o is found before the command is started: it never runs. */
	char marker[300], cmd[400];
	snprintf(marker, sizeof(marker), "%s/ran", dir);
	snprintf(cmd, sizeof(cmd), "touch %s", marker);
	const char *bad_out[] = {"-o", "-", "--", "sh", "-c", cmd, NULL};
	tool_run(&r, bad_out);
	cr_expect_eq(r.exit_code, 2, "-o -: exit %d", r.exit_code);
	cr_expect_neq(access(marker, F_OK), 0, "the command ran although -o was refused");
	/* A directory that is not empty: exit 9, and the command never ran. */
	char full[300], file[400];
	snprintf(full, sizeof(full), "%s/full", dir);
	cr_assert_eq(mkdir(full, 0700), 0);
	snprintf(file, sizeof(file), "%s/x", full);
	FILE *f = fopen(file, "w");
	cr_assert(f);
	fclose(f);
	const char *not_empty[] = {"-o", full, "--", "sh", "-c", cmd, NULL};
	tool_run(&r, not_empty);
	cr_expect_eq(r.exit_code, 9, "-o a non-empty directory: exit %d: %s", r.exit_code, r.err);
	cr_expect_neq(access(marker, F_OK), 0, "the command ran although -o was refused");
	rm_rf(dir);
}

/* Under nohup the command keeps SIGHUP ignored, as `nohup CMD` would give
 * it; started normally it gets the default, and a SIGHUP ends it. The
 * shell reports which: a SIGHUP to itself either kills it (129) or is
 * ignored and it exits 3. */
Test(launch, sighup_as_nohup_left_it, .timeout = 60)
{
	const char *script = "kill -HUP $$; exit 3";
	char dir[256], b[300], b2[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(b2, sizeof(b2), "%s/b2", dir);
	struct tool_result r;
	const char *args[] = {"-q", "-o", b, "--", "sh", "-c", script, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 128 + SIGHUP, "started normally: exit %d, not killed by SIGHUP: %s",
		     r.exit_code, r.err);
	const char *nohup_args[] = {"-q", "-o", b2, "--", "sh", "-c", script, NULL};
	pid_t p = tool_spawn_nohup(nohup_args, "/dev/null", "/dev/null");
	int code = tool_wait(p, 60000);
	cr_expect_eq(code, 3, "under nohup: exit %d, the command did not keep SIGHUP ignored", code);
	expect_verified(b2, "launch under nohup");
	rm_rf(dir);
}
