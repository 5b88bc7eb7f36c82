/*
 * diag-attach top, driven as a person would: in tmux, read the screen with
 * capture-pane, quit with q, and check the target was released.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* Every 100 ms, up to tries times, capture the tmux session's pane into
 * the file screen: true once it shows want (and want2, unless NULL). */
static bool screen_shows(const char *session, const char *screen, int tries, const char *want,
			 const char *want2)
{
	for (int i = 0; i < tries; i++) {
		usleep(100000);
		char cmd[1024];
		snprintf(cmd, sizeof(cmd), "tmux capture-pane -p -t %s > %s", session, screen);
		sh(cmd);
		char *text = read_file(screen, NULL);
		bool seen = text && strstr(text, want) && (!want2 || strstr(text, want2));
		free(text);
		if (seen)
			return true;
	}
	return false;
}

Test(top, live_view_in_tmux_quits_on_q)
{
	if (!have_program("tmux"))
		cr_skip_test("tmux not installed");
	const char *argv[] = {target_path("burner"), "1", NULL};
	struct target t = target_start(argv, "ready");
	char session[64], cmd[2048];
	snprintf(session, sizeof(session), "diagtop%d", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "tmux new-session -d -s %s -x 120 -y 50 '%s top -p %d; echo TOP-EXIT=$?; sleep 30'",
		 session, getenv("DIAG_ATTACH"), (int)t.pid);
	cr_assert_eq(sh(cmd), 0, "tmux did not start");

	/* Wait for a refresh that names the hot function. */
	char screen[300];
	snprintf(screen, sizeof(screen), "/tmp/%s.screen", session);
	bool hot = screen_shows(session, screen, 100, "spin_units", "SELF%");
	cr_expect(hot, "top never showed spin_units");

	snprintf(cmd, sizeof(cmd), "tmux send-keys -t %s q", session);
	sh(cmd);
	bool exited = screen_shows(session, screen, 50, "TOP-EXIT=0", NULL);
	cr_expect(exited, "top did not quit with exit 0 on q");
	char why[256];
	cr_expect(target_healthy(t.pid, false, why, sizeof(why)), "%s", why);
	snprintf(cmd, sizeof(cmd), "tmux kill-session -t %s 2>/dev/null; rm -f %s", session, screen);
	sh(cmd);
	target_kill(&t);
}

static uint64_t schedstat_ns(pid_t pid, pid_t tid)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	char *text = read_file(path, NULL);
	cr_assert(text, "no %s", path);
	uint64_t ns = strtoull(text, NULL, 10);
	free(text);
	return ns;
}

/* A thread held to about 20 % of a core by its own sleeps (2 ms of work,
 * 8 ms in poll), while two loaders keep both cores busy: it waits for a
 * CPU after each wake-up, so it is found runnable far more often than it
 * runs. top's CPU% is what the kernel counted (its schedstat over the
 * same seconds, within 5 points), not the share of samples that found it
 * runnable. */
Test(top, cpu_percent_is_the_kernels_count, .timeout = 60)
{
	pid_t l[2];
	loaders_start(l);
	const char *argv[] = {target_path("cpu_window"), "duty", "1", "60000", NULL};
	struct target t = target_start(argv, "ready");
	cr_assert_eq(write(t.stdin_fd, "go\n", 3), 3);
	usleep(300000);
	pid_t worker = other_thread_of(t.pid);
	cr_assert(worker > 0, "cpu_window started no worker");

	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	uint64_t cpu0 = schedstat_ns(t.pid, worker), t0 = now_ms();
	struct tool_result r;
	const char *args[] = {"top", "-p", pid, "-n", "4", NULL};
	tool_run(&r, args);
	uint64_t cpu1 = schedstat_ns(t.pid, worker), t1 = now_ms();
	loaders_stop(l);
	cr_assert_eq(r.exit_code, 0, "top: exit %d: %s", r.exit_code, r.err);
	double truth = (double)(cpu1 - cpu0) / 1e6 / (double)(t1 - t0) * 100;

	/* The worker's line of each refresh: TID THREAD STATE CPU% NOW-IN. */
	double sum = 0;
	int n = 0;
	for (const char *line = r.out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		int tid;
		char comm[64], state;
		double pct;
		if (sscanf(line, "%d %63s %c %lf%%", &tid, comm, &state, &pct) == 4 && tid == worker) {
			sum += pct;
			n++;
		}
	}
	cr_assert_geq(n, 3, "top printed the worker in %d refreshes:\n%s", n, r.out);
	double shown = sum / n;
	fprintf(stderr, "top: worker at %.1f %% (kernel: %.1f %%) over %d refreshes\n", shown, truth, n);
	cr_expect(shown >= truth - 5 && shown <= truth + 5, "top shows %.1f %%, the kernel counted %.1f %%",
		  shown, truth);
	target_kill(&t);
}
