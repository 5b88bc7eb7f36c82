/*
 * The EINTR rule (README, --help): a sampling capture, its final capture
 * included, never interrupts a thread blocked in a system call; a snapshot
 * interrupts each such thread once (as eu-stack and gdb do) unless
 * --no-interrupt-blocked, and the manifest says how many. Ground truth:
 * the target's own count of the EINTRs its epoll_wait, semtimedop,
 * sigtimedwait and recv with SO_RCVTIMEO returned
 * (tests/targets/c/eintr_counter.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define NCALLS 4

static void eintr_counts(struct target *t, long out[NCALLS])
{
	cr_assert_eq(write(t->stdin_fd, "?\n", 2), 2);
	char line[128];
	size_t len = 0;
	for (;;) {
		char c;
		cr_assert_eq(read(t->stdout_fd, &c, 1), 1, "eintr_counter closed its stdout");
		if (c == '\n')
			break;
		if (len < sizeof(line) - 1)
			line[len++] = c;
	}
	line[len] = '\0';
	cr_assert_eq(sscanf(line, "eintr %ld %ld %ld %ld", &out[0], &out[1], &out[2], &out[3]), NCALLS,
		     "%s", line);
}

struct run {
	struct target t;
	char dir[256], out[300], pid[16];
	long before[NCALLS], after[NCALLS];
};

static void run_tool(struct run *r, const char *const *extra)
{
	const char *argv[] = {target_path("eintr_counter"), NULL};
	r->t = target_start(argv, "ready");
	make_tmpdir(r->dir, sizeof(r->dir));
	snprintf(r->out, sizeof(r->out), "%s/b", r->dir);
	snprintf(r->pid, sizeof(r->pid), "%d", (int)r->t.pid);
	eintr_counts(&r->t, r->before);
	const char *args[16] = {"-p", r->pid, "-q", "-o", r->out};
	size_t n = 5;
	for (size_t i = 0; extra[i] && n < 15; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	struct tool_result res;
	tool_run(&res, args);
	cr_assert_eq(res.exit_code, 0, "exit %d: %s", res.exit_code, res.err);
	eintr_counts(&r->t, r->after);
}

static void run_end_target(struct run *r)
{
	/* EOF: it removes its semaphore and exits. */
	close(r->t.stdin_fd);
	r->t.stdin_fd = -1;
	sleep_ms(50);
	target_kill(&r->t);
	rm_rf(r->dir);
}

static const char *const names[NCALLS] = {"epoll_wait", "semtimedop", "sigtimedwait",
					  "recv (SO_RCVTIMEO)"};

Test(eintr, sampling_interrupts_no_blocked_thread, .timeout = 60)
{
	struct run r;
	const char *extra[] = {"-d", "5s", NULL};
	run_tool(&r, extra);
	for (int i = 0; i < NCALLS; i++)
		cr_expect_eq(r.after[i] - r.before[i], 0, "%s returned EINTR %ld times during sampling",
			     names[i], r.after[i] - r.before[i]);
	cJSON *m = manifest_load(r.out);
	cJSON *nib = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "capture"), "no_interrupt_blocked");
	cr_expect(cJSON_IsTrue(nib), "the manifest does not record the rule");
	cJSON_Delete(m);
	run_end_target(&r);
}

Test(eintr, snapshot_interrupts_each_blocked_thread_once, .timeout = 60)
{
	struct run r;
	const char *extra[] = {"--snapshot", NULL};
	run_tool(&r, extra);
	for (int i = 0; i < NCALLS; i++)
		cr_expect_eq(r.after[i] - r.before[i], 1, "%s returned EINTR %ld times for one snapshot",
			     names[i], r.after[i] - r.before[i]);
	cJSON *m = manifest_load(r.out);
	double n = number_at(m, "pause", "threads_interrupted_in_syscall");
	/* The four, not main asleep in a pipe's read(2), which restarts. */
	cr_expect_eq(n, NCALLS, "manifest: %.0f threads interrupted in a syscall, not %d", n, NCALLS);
	cJSON_Delete(m);
	run_end_target(&r);

	const char *quiet[] = {"--snapshot", "--no-interrupt-blocked", NULL};
	run_tool(&r, quiet);
	for (int i = 0; i < NCALLS; i++)
		cr_expect_eq(r.after[i] - r.before[i], 0,
			     "%s returned EINTR %ld times for a --no-interrupt-blocked snapshot", names[i],
			     r.after[i] - r.before[i]);
	m = manifest_load(r.out);
	cr_expect_eq(number_at(m, "pause", "threads_interrupted_in_syscall"), 0);
	cr_expect_geq(number_at(m, "pause", "threads_read_without_stop"), NCALLS);
	cJSON_Delete(m);
	run_end_target(&r);
}
