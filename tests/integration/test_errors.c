/*
 * Bad input: each refusal gets one clear line, its own exit status, no
 * bundle directory, and an untouched target.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static void expect_refusal(const char *pid, int code, const char *msg_part)
{
	char dir[256], out[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/bundle", dir);
	struct tool_result r;
	const char *args[] = {"-p", pid, "--snapshot", "-o", out, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, code, "pid %s: exit %d, want %d: %s", pid, r.exit_code, code, r.err);
	cr_expect(strstr(r.err, msg_part), "message lacks '%s': %s", msg_part, r.err);
	cr_expect(strncmp(r.err, "diag-attach: ", 13) == 0, "message format: %s", r.err);
	struct stat st;
	cr_expect(stat(out, &st) != 0, "a bundle directory was left behind");
	rm_rf(dir);
}

Test(errors, nonexistent_pid)
{
	/* pid_max is at most 4194304: this one cannot exist. */
	expect_refusal("4194305", 3, "no such process");
}

Test(errors, kernel_thread)
{
	expect_refusal("2", 5, "kernel thread");
}

Test(errors, zombie)
{
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	/* Let it exit but do not reap it. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
	for (int i = 0; i < 500; i++) {
		char *st = read_file(path, NULL);
		bool z = st && strstr(st, ") Z ");
		free(st);
		if (z)
			break;
		usleep(2000);
	}
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)child);
	expect_refusal(pid, 4, "zombie");
	waitpid(child, NULL, 0);
}

Test(errors, already_traced)
{
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target t = target_start(argv, "ready");
	cr_assert(ptrace(PTRACE_SEIZE, t.pid, 0, 0) == 0);
	char pid[16], want[64];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	snprintf(want, sizeof(want), "already traced by pid %d", (int)getpid());
	expect_refusal(pid, 7, want);
	ptrace(PTRACE_DETACH, t.pid, 0, 0);
	target_kill(&t);
}

Test(errors, non_empty_output_dir)
{
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target t = target_start(argv, "ready");
	char dir[256], pid[16], junk[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(junk, sizeof(junk), "%s/something", dir);
	FILE *f = fopen(junk, "w");
	fputs("x", f);
	fclose(f);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result r;
	const char *args[] = {"-p", pid, "--snapshot", "-o", dir, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 9, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "not empty"), "%s", r.err);
	char manifest[300];
	snprintf(manifest, sizeof(manifest), "%s/manifest.json", dir);
	struct stat st;
	cr_expect(stat(manifest, &st) != 0, "a manifest was written into a foreign directory");
	char why[256];
	cr_expect(target_healthy(t.pid, false, why, sizeof(why)), "%s", why);
	target_kill(&t);
	rm_rf(dir);
}

Test(errors, symlink_output_refused)
{
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target t = target_start(argv, "ready");
	char dir[256], link[300], real[300], pid[16];
	make_tmpdir(dir, sizeof(dir));
	snprintf(real, sizeof(real), "%s/real", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	mkdir(real, 0700);
	cr_assert(symlink(real, link) == 0);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result r;
	const char *args[] = {"-p", pid, "--snapshot", "-o", link, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 9, "exit %d: %s", r.exit_code, r.err);
	target_kill(&t);
	rm_rf(dir);
}

Test(errors, usage)
{
	struct tool_result r;
	const char *a1[] = {"--snapshot", NULL};
	tool_run(&r, a1);
	cr_expect_eq(r.exit_code, 2, "%s", r.err);
	const char *a2[] = {"-p", "abc", NULL};
	tool_run(&r, a2);
	cr_expect_eq(r.exit_code, 2, "%s", r.err);
	const char *a3[] = {"-p", "1", "-d", "soon", NULL};
	tool_run(&r, a3);
	cr_expect_eq(r.exit_code, 2, "%s", r.err);
	const char *a4[] = {"verify", NULL};
	tool_run(&r, a4);
	cr_expect_eq(r.exit_code, 2, "%s", r.err);
	const char *a5[] = {"--help", NULL};
	tool_run(&r, a5);
	cr_expect_eq(r.exit_code, 0);
	cr_expect(strstr(r.out, "Exit status:"), "help lacks exit statuses");
}

Test(errors, verify_not_a_bundle)
{
	char dir[256];
	make_tmpdir(dir, sizeof(dir));
	struct tool_result r;
	const char *args[] = {"verify", dir, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 1, "%s", r.err);
	cr_expect(strstr(r.err, "no manifest"), "%s", r.err);
	rm_rf(dir);
}
