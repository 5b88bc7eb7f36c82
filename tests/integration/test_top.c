/*
 * diag-attach top, driven as a person would: in tmux, read the screen with
 * capture-pane, quit with q, and check the target was released.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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

/* The sum of every thread's schedstat on-CPU time. */
static uint64_t process_cpu_ns(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	cr_assert(d);
	uint64_t sum = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			sum += schedstat_ns(pid, (pid_t)atoi(e->d_name));
	closedir(d);
	return sum;
}

/* The last refresh's row for key (a substring of the row's name). */
static const char *last_row(const char *out, const char *key)
{
	const char *found = NULL;
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *nl = strchr(l, '\n');
		const char *k = strstr(l, key);
		if (k && (!nl || k < nl) && strchr(l, '%'))
			found = l;
	}
	return found;
}

/* Rows by function and source line, sorted by time, and the times are CPU
 * time: the burner's two spinning threads, with two loaders keeping both
 * cores busy, are runnable at nearly every tick but run about half the
 * time; the total time top gives the thread entry (start_thread) is what
 * the kernel counted for the process while top ran (schedstat), not the
 * ticks that found them runnable. */
Test(top, times_are_cpu_time_by_line, .timeout = 60)
{
	pid_t l[2];
	loaders_start(l);
	const char *argv[] = {target_path("burner"), "2", NULL};
	struct target t = target_start(argv, "ready");
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	uint64_t cpu0 = process_cpu_ns(t.pid), t0 = now_ms();
	struct tool_result r;
	const char *args[] = {"top", "-p", pid, "-n", "4", "--lines", "--sort", "total-time", NULL};
	tool_run(&r, args);
	uint64_t cpu1 = process_cpu_ns(t.pid), t1 = now_ms();
	loaders_stop(l);
	cr_assert_eq(r.exit_code, 0, "top: exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.out, "*TOTAL_TIME") && strstr(r.out, "FUNCTION (FILE:LINE)"),
		  "no sort mark or line header:\n%s", r.out);
	const char *row = last_row(r.out, "spin_units (burner.c:");
	cr_expect(row, "no spin_units row with its line:\n%s", r.out);
	row = last_row(r.out, "start_thread");
	cr_assert(row, "no start_thread row:\n%s", r.out);
	double self_pct, total_pct, self_s, total_s;
	cr_assert_eq(sscanf(row, "%lf%% %lf%% %lfs %lfs", &self_pct, &total_pct, &self_s, &total_s), 4,
		     "row: %.120s", row);
	double truth = (double)(cpu1 - cpu0) / 1e9;
	fprintf(stderr, "top: start_thread total %.2f s; the kernel: %.2f s of CPU in %.1f s\n", total_s,
		truth, (double)(t1 - t0) / 1e3);
	/* Below: top's start-up, before the first sample of each thread. */
	cr_expect(total_s >= 0.7 * truth && total_s <= 1.05 * truth,
		  "top counts %.2f s of CPU, the kernel %.2f s:\n%s", total_s, truth, r.out);
	target_kill(&t);
}

/* The threads view lists every thread of the process, busiest first. */
Test(top, threads_view_lists_every_thread_busiest_first, .timeout = 60)
{
	const char *argv[] = {target_path("burner"), "1", NULL};
	struct target t = target_start(argv, "ready");
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result r;
	const char *args[] = {"top", "-p", pid, "-n", "2", "--threads", NULL};
	tool_run(&r, args);
	cr_assert_eq(r.exit_code, 0, "top: exit %d: %s", r.exit_code, r.err);
	const char *last = r.out, *p;
	while ((p = strstr(last + 1, "diag-attach top")))
		last = p;
	cr_expect_null(strstr(last, "SELF%"), "the threads view shows functions:\n%s", last);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)t.pid);
	DIR *d = opendir(path);
	cr_assert(d);
	struct dirent *e;
	size_t tasks = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		tasks++;
		char needle[32];
		snprintf(needle, sizeof(needle), "\n%8d ", atoi(e->d_name));
		cr_expect(strstr(last, needle), "thread %s missing from the threads view:\n%s", e->d_name,
			  last);
	}
	closedir(d);
	double prev = 1e9;
	size_t rows = 0;
	for (const char *l = last; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		int tid;
		char comm[64], state;
		double pct;
		if (sscanf(l, "%d %63s %c %lf%%", &tid, comm, &state, &pct) != 4)
			continue;
		rows++;
		cr_expect_leq(pct, prev, "threads not sorted by CPU%%:\n%s", last);
		prev = pct;
	}
	cr_expect_eq(rows, tasks, "%zu rows for %zu threads:\n%s", rows, tasks, last);
	target_kill(&t);
}

/* ---- against perf (issue 48) ---- */

/* The rows of top's last refresh (SELF%, TOTAL%, SELF_TIME, TOTAL_TIME
 * and the function) into shares by self time; returns the CPU time its
 * header says it sampled since it started. */
static double top_self_times(const char *out, struct shares *s)
{
	memset(s, 0, sizeof(*s));
	const char *last = out, *p;
	while ((p = strstr(last + 1, "diag-attach top")))
		last = p;
	const char *since = strstr(last, "s CPU since start");
	cr_assert(since, "no CPU total in the header:\n%s", last);
	while (since > last && since[-1] != ' ')
		since--;
	double root = strtod(since, NULL);
	for (const char *l = last; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		double self_pct, total_pct, self_s, total_s;
		int used = 0;
		if (sscanf(l, "%lf%% %lf%% %lfs %lfs %n", &self_pct, &total_pct, &self_s, &total_s, &used) != 4)
			continue;
		char name[256];
		size_t len = strcspn(l + used, "\n");
		snprintf(name, sizeof(name), "%.*s", (int)(len < 255 ? len : 255), l + used);
		shares_add(s, name, self_s);
	}
	return root;
}

/* Polls the target's threads for a ptrace stop until killed; exits with
 * how many polls found one (at most 255). */
static pid_t stop_watcher_start(pid_t pid)
{
	pid_t w = fork();
	cr_assert(w >= 0);
	if (w == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int seen = 0;
		for (uint64_t end = now_ms() + 60000; now_ms() < end; usleep(1000))
			if (ptrace_stopped_threads(pid) > 0 && seen < 255)
				seen++;
		_exit(seen);
	}
	return w;
}

static int stop_watcher_end(pid_t w)
{
	kill(w, SIGTERM);
	int status = 0;
	waitpid(w, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

/* top and `perf record -e cpu-clock -g -p` side by side on the same busy
 * program (a thread writing into a pipe, another reading it: user code
 * and the kernel's pipe paths), quiet and with both cores kept busy:
 * every function perf gives 5 % or more of the self samples, top gives
 * within 5 points of it. Meanwhile no thread of the target is ever seen
 * in a ptrace stop (/proc, every millisecond), and top says "no stops". */
static void top_against_perf(bool loaded)
{
	if (!have_program("perf"))
		cr_skip_test("perf is missing (setup.sh installs linux-perf)");
	pid_t l[2];
	if (loaded)
		loaders_start(l);
	const char *argv[] = {target_path("cpu_window"), "pipe", "1", "60000", NULL};
	struct target t = target_start(argv, "ready");
	cr_assert_eq(write(t.stdin_fd, "go\n", 3), 3);
	char dir[256], data[300], pid[16];
	make_tmpdir(dir, sizeof(dir));
	snprintf(data, sizeof(data), "%s/perf.data", dir);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	pid_t perf = perf_record_start(t.pid, -499, "fp", data);
	pid_t watcher = stop_watcher_start(t.pid);
	struct tool_result r;
	const char *args[] = {"top", "-p", pid, "-F", "499", "-n", "5", "--sort", "self-time", NULL};
	tool_run(&r, args);
	int stops_seen = stop_watcher_end(watcher);
	kill(perf, SIGINT);
	int status = 0;
	cr_assert_eq(waitpid(perf, &status, 0), perf);
	if (loaded)
		loaders_stop(l);
	cr_assert_eq(r.exit_code, 0, "top: exit %d: %s", r.exit_code, r.err);
	cr_expect_eq(stops_seen, 0, "a thread of the target was seen in a ptrace stop %d times", stops_seen);
	cr_expect_null(strstr(r.out, " stops, longest"), "top stopped threads:\n%s", r.out);

	struct shares perf_s, top_s;
	perf_report_leaf_shares(data, &perf_s);
	double root = top_self_times(r.out, &top_s);
	cr_assert_gt(root, 0, "no rows:\n%s", r.out);
	top_s.total = root; /* rows beyond the 20 shown count too */
	size_t checked = 0;
	for (size_t i = 0; i < perf_s.n; i++) {
		double want = shares_pct(&perf_s, perf_s.name[i]);
		if (want < 5)
			continue;
		double got = shares_pct(&top_s, perf_s.name[i]);
		fprintf(stderr, "top%s: %s %.1f %% (perf %.1f %%)\n", loaded ? " loaded" : "", perf_s.name[i],
			got, want);
		cr_expect(fabs(got - want) <= 5.0, "%s: top %.1f %%, perf %.1f %%\n%s", perf_s.name[i], got,
			  want, r.out);
		checked++;
	}
	cr_expect_geq(checked, 2, "perf gave fewer than two functions 5 %% or more");
	target_kill(&t);
	rm_rf(dir);
}

Test(top, matches_perf_record, .timeout = 90)
{
	top_against_perf(false);
}

Test(top, matches_perf_record_loaded, .timeout = 90)
{
	top_against_perf(true);
}
