/*
 * CPU profiles against outside ground truth, on a quiet machine and on one
 * whose two cores other processes keep busy (tests/targets/c/cpu_window.c):
 *
 *  - totals: cpu.pprof's CPU time against the kernel's own accounting of
 *    the target (wait4() rusage of a target whose whole life we capture),
 *    within 10 %, for both engines (perf events, and ptrace stops weighted
 *    by schedstat);
 *  - kernel frames: a thread writing into a pipe shows the kernel's write
 *    path above write(), as perf report does;
 *  - placement: the leaf functions' shares agree with `perf record -e
 *    cpu-clock --call-graph dwarf` of the same workload, run before and
 *    after ours, within 5 points;
 *  - yield: an always-running thread on a saturated machine gets at least
 *    95 % of the CPU samples perf gets, both counted against the thread's
 *    own CPU seconds times the rate.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "pprof_read.h"

#define HZ 99
#define MAX_THREADS 16

struct window {
	uint64_t target_cpu_ns;          /* the kernel's account of the whole target */
	pid_t tids[MAX_THREADS];         /* the workers, as they report themselves */
	uint64_t thread_cpu_ns[MAX_THREADS];
	size_t nthreads;
	char dir[512];                   /* the bundle (ours) or perf.data (perf's) */
	char err[16384];                 /* our stderr */
};

/* Remove the temporary directory a window made (its bundle or perf.data). */
static void rm_window(const struct window *w)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s", w->dir);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	rm_rf(dir);
}

/* Read the workers' "tid TID cpu_ns N" lines until `expected` came: the
 * work is over, the workers are parked. */
static void read_reports(struct target *t, struct window *w, size_t expected)
{
	char line[128];
	size_t len = 0;
	uint64_t give_up = now_ms() + 60000;
	while (w->nthreads < expected) {
		cr_assert(now_ms() < give_up, "cpu_window reported %zu of %zu workers", w->nthreads, expected);
		char c;
		ssize_t n = read(t->stdout_fd, &c, 1);
		cr_assert_eq(n, 1, "cpu_window closed its stdout");
		if (c != '\n') {
			if (len < sizeof(line) - 1)
				line[len++] = c;
			continue;
		}
		line[len] = '\0';
		len = 0;
		long tid;
		unsigned long long ns;
		if (sscanf(line, "tid %ld cpu_ns %llu", &tid, &ns) == 2 && w->nthreads < MAX_THREADS) {
			w->tids[w->nthreads] = (pid_t)tid;
			w->thread_cpu_ns[w->nthreads++] = ns;
		}
	}
}

/* Tell the parked target to exit; its rusage is the ground truth. */
static void end_target(struct target *t, struct window *w)
{
	cr_assert_eq(write(t->stdin_fd, "stop\n", 5), 5);
	int status;
	struct rusage ru;
	cr_assert_eq(wait4(t->pid, &status, 0, &ru), t->pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "cpu_window failed: status %d", status);
	w->target_cpu_ns = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
			   ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
	close(t->stdout_fd);
	close(t->stdin_fd);
}

static size_t workers_of(const char *mode, int n)
{
	return strcmp(mode, "pipe") == 0 ? 2 : (size_t)n;
}

static struct target start_window(const char *mode, int n, int burn_ms)
{
	char ns[16], ms[16];
	snprintf(ns, sizeof(ns), "%d", n);
	snprintf(ms, sizeof(ms), "%d", burn_ms);
	const char *argv[] = {target_path("cpu_window"), mode, ns, ms, NULL};
	return target_start(argv, "ready");
}

static void go(struct target *t)
{
	cr_assert_eq(write(t->stdin_fd, "go\n", 3), 3);
}

/* Our capture of a whole cpu_window run: the tool is sampling (its
 * timeline has a first line) before the work starts, and ends when the
 * target exits. */
static void run_ours(const char *mode, int n, int burn_ms, int hz, const char *const *extra,
		     struct window *w)
{
	memset(w, 0, sizeof(*w));
	struct target t = start_window(mode, n, burn_ms);
	char tmp[256], pid[16], errp[300], outp[300];
	make_tmpdir(tmp, sizeof(tmp));
	snprintf(w->dir, sizeof(w->dir), "%s/b", tmp);
	snprintf(errp, sizeof(errp), "%s/err", tmp);
	snprintf(outp, sizeof(outp), "%s/out", tmp);
	/* tool_spawn opens them without O_CREAT. */
	fclose(fopen(errp, "w"));
	fclose(fopen(outp, "w"));
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	char hzs[16];
	snprintf(hzs, sizeof(hzs), "%d", hz);
	const char *args[18] = {"-p", pid, "-d", "60s", "-F", hzs, "-o", w->dir};
	size_t na = 8;
	for (size_t i = 0; extra && extra[i] && na < 17; i++)
		args[na++] = extra[i];
	args[na] = NULL;
	pid_t tool = tool_spawn(args, outp, errp);
	char timeline[600];
	snprintf(timeline, sizeof(timeline), "%s/runtime.jsonl", w->dir);
	uint64_t give_up = now_ms() + 10000;
	size_t len = 0;
	char *tl = NULL;
	while (now_ms() < give_up) {
		free(tl);
		tl = read_file(timeline, &len);
		if (tl && len > 0)
			break;
		sleep_ms(20);
	}
	free(tl);
	cr_assert_gt(len, 0, "the capture did not start sampling within 10 s");
	sleep_ms(200);
	go(&t);
	read_reports(&t, w, workers_of(mode, n));
	/* A tick or two with the workers parked, then stop: the capture
	 * window holds the whole burst, and the final capture sees each
	 * worker after its last CPU time. */
	sleep_ms(300);
	kill(tool, SIGINT);
	int code = tool_wait(tool, 30000);
	end_target(&t, w);
	char *err = read_file(errp, NULL);
	snprintf(w->err, sizeof(w->err), "%s", err ? err : "");
	free(err);
	cr_assert_eq(code, 0, "diag-attach exit %d: %s", code, w->err);
}

/* perf's record of the same workload (perf ends when the target exits). */
static void run_perf(const char *mode, int n, int burn_ms, int hz, struct window *w)
{
	cr_assert(have_program("perf"), "perf is missing (setup.sh installs linux-perf)");
	memset(w, 0, sizeof(*w));
	struct target t = start_window(mode, n, burn_ms);
	char tmp[256];
	make_tmpdir(tmp, sizeof(tmp));
	snprintf(w->dir, sizeof(w->dir), "%s/perf.data", tmp);
	pid_t perf = perf_record_start(t.pid, hz, "dwarf", w->dir);
	go(&t);
	read_reports(&t, w, workers_of(mode, n));
	end_target(&t, w);
	int status = 0;
	cr_assert_eq(waitpid(perf, &status, 0), perf);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "perf record failed: %d", status);
}

static int64_t sample_tid(const Perftools__Profiles__Profile *p, const Perftools__Profiles__Sample *s)
{
	for (size_t k = 0; k < s->n_label; k++) {
		const char *key = pprof_str(p, s->label[k]->key);
		if (key && strcmp(key, "tid") == 0)
			return s->label[k]->num;
	}
	return -1;
}

/* cpu.pprof: total CPU nanoseconds, samples of one tid (-1: all), and the
 * leaf functions' shares of the CPU time. */
static Perftools__Profiles__Profile *load_cpu(const struct window *w)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/cpu.pprof", w->dir);
	Perftools__Profiles__Profile *p = NULL;
	cr_assert_eq(pprof_read_file(path, &p), 0, "cannot read %s", path);
	cr_assert_eq(p->n_sample_type, 2);
	return p;
}

static double our_total_ns(const Perftools__Profiles__Profile *p)
{
	double total = 0;
	for (size_t i = 0; i < p->n_sample; i++)
		total += (double)p->sample[i]->value[1];
	return total;
}

static uint64_t our_samples(const Perftools__Profiles__Profile *p, pid_t tid)
{
	uint64_t n = 0;
	for (size_t i = 0; i < p->n_sample; i++)
		if (tid < 0 || sample_tid(p, p->sample[i]) == tid)
			n += (uint64_t)p->sample[i]->value[0];
	return n;
}

static void our_leaf_shares(const Perftools__Profiles__Profile *p, struct shares *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < p->n_sample; i++) {
		const char *names[1];
		int nf = pprof_sample_frames(p, p->sample[i], names, 1);
		shares_add(s, nf > 0 && names[0] ? names[0] : "?", (double)p->sample[i]->value[1]);
	}
}

static void perf_leaf_shares(const struct window *w, struct shares *s)
{
	perf_report_leaf_shares(w->dir, s);
}

/* perf's samples of one thread ("--sort pid" is per thread: "tid:comm"). */
static uint64_t perf_samples(const struct window *w, pid_t tid)
{
	char cmd[1024], out[65536];
	snprintf(cmd, sizeof(cmd),
		 "perf report -i %s --stdio --no-children -g none --sort pid -F sample,pid 2>/dev/null",
		 w->dir);
	cr_assert_eq(shell_output(cmd, out, sizeof(out)), 0, "perf report failed");
	uint64_t total = 0;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long n;
		long t;
		if (line[0] != '#' && sscanf(line, " %llu %ld:", &n, &t) == 2 && t == (long)tid)
			total += n;
	}
	return total;
}

static uint64_t worker_cpu_ns(const struct window *w, pid_t *ret_tid)
{
	cr_assert_geq(w->nthreads, 1);
	*ret_tid = w->tids[0];
	return w->thread_cpu_ns[0];
}

/* ---- totals ---- */

static void expect_total_matches(const char *engine, bool loaded)
{
	pid_t l[2];
	if (loaded)
		loaders_start(l);
	const char *extra[] = {"--cpu-engine", engine, NULL};
	struct window w;
	run_ours("spin", 2, 2500, HZ, extra, &w);
	if (loaded)
		loaders_stop(l);
	Perftools__Profiles__Profile *p = load_cpu(&w);
	double ours = our_total_ns(p), truth = (double)w.target_cpu_ns;
	cr_expect(fabs(ours - truth) <= 0.10 * truth,
		  "%s engine%s: cpu.pprof holds %.3f s, the kernel counted %.3f s (%+.1f %%)", engine,
		  loaded ? " (loaded)" : "", ours / 1e9, truth / 1e9, 100.0 * (ours - truth) / truth);
	cJSON *m = manifest_load(w.dir);
	const cJSON *cap = cJSON_GetObjectItem(m, "capture");
	const cJSON *eng = cJSON_GetObjectItem(cap, "cpu_engine");
	cr_expect(cJSON_IsString(eng) && strcmp(eng->valuestring, engine) == 0, "engine recorded: %s",
		  cJSON_IsString(eng) ? eng->valuestring : "none");
	cr_expect(strstr(w.err, "cpu engine ") != NULL, "no summary line on stderr: %s", w.err);
	cJSON_Delete(m);
	perftools__profiles__profile__free_unpacked(p, NULL);
	rm_window(&w);
}

/* Each engine, on a quiet machine and then with both cores loaded. */
Test(cpu_truth, totals_both_engines_quiet_and_loaded, .timeout = 300)
{
	static const char *const engines[] = {"perf", "ptrace"};
	for (size_t i = 0; i < 2; i++)
		for (int loaded = 0; loaded < 2; loaded++)
			expect_total_matches(engines[i], loaded);
}

/* --cpu-events: per-cpu (the default for one process) samples the
 * loaders too, and keeps only the target's samples; per-thread samples
 * the target's threads alone. Either adds up to the kernel's account of
 * the target (rusage) on a machine both of whose cores other processes
 * keep busy, and the manifest names the layout. */
static void expect_layout_total_matches(const char *layout, const char *recorded)
{
	pid_t l[2];
	loaders_start(l);
	const char *extra[] = {"--cpu-events", layout, NULL};
	struct window w;
	run_ours("spin", 2, 2500, HZ, extra, &w);
	loaders_stop(l);
	Perftools__Profiles__Profile *p = load_cpu(&w);
	double ours = our_total_ns(p), truth = (double)w.target_cpu_ns;
	cr_expect(fabs(ours - truth) <= 0.10 * truth,
		  "%s events (loaded): cpu.pprof holds %.3f s, the kernel counted %.3f s (%+.1f %%)",
		  layout, ours / 1e9, truth / 1e9, 100.0 * (ours - truth) / truth);
	cJSON *m = manifest_load(w.dir);
	const cJSON *perf = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(m, "capture"), "cpu"), "perf");
	const cJSON *kind = cJSON_GetObjectItem(perf, "cpu_clock_events");
	cr_expect(cJSON_IsString(kind) && strcmp(kind->valuestring, recorded) == 0,
		  "--cpu-events %s: cpu_clock_events recorded: %s", layout,
		  cJSON_IsString(kind) ? kind->valuestring : "none");
	cJSON_Delete(m);
	perftools__profiles__profile__free_unpacked(p, NULL);
	rm_window(&w);
}

Test(cpu_truth, both_event_layouts_total_on_a_loaded_machine, .timeout = 240)
{
	expect_layout_total_matches("auto", "per_cpu");
	expect_layout_total_matches("per-thread", "per_thread");
}

/* perf's samples, all threads, as the CPU time they stand for. */
static double perf_sampled_ns(const struct window *w)
{
	char cmd[1024], out[262144];
	snprintf(cmd, sizeof(cmd), "perf script -i %s -F period 2>/dev/null", w->dir);
	cr_assert_eq(shell_output(cmd, out, sizeof(out)), 0, "perf script failed");
	double ns = 0;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
		ns += strtod(line, NULL);
	return ns;
}

static double our_thread_ns(const Perftools__Profiles__Profile *p, pid_t tid)
{
	double ns = 0;
	for (size_t i = 0; i < p->n_sample; i++)
		if (sample_tid(p, p->sample[i]) == tid)
			ns += (double)p->sample[i]->value[1];
	return ns;
}

/* Two threads passing bytes through a pipe switch tens of thousands of
 * times a second; with both cores busy, the kernel's cpu-clock timer
 * then delivers samples for only 80-92 % of their CPU time, to perf
 * record as to us. Each thread's total in cpu.pprof is still its own CPU
 * time, weighed to its schedstat (the manifest says so). */
Test(cpu_truth, switching_threads_keep_their_cpu_time_on_a_loaded_machine, .timeout = 180)
{
	pid_t l[2];
	loaders_start(l);
	struct window ours, perf;
	run_ours("pipe", 1, 2000, HZ, NULL, &ours);
	run_perf("pipe", 1, 2000, HZ, &perf);
	loaders_stop(l);
	double perf_share = perf_sampled_ns(&perf) / (double)perf.target_cpu_ns;
	cr_log_info("perf record's samples stood for %.1f %% of the target's CPU time", 100 * perf_share);
	Perftools__Profiles__Profile *p = load_cpu(&ours);
	double total = our_total_ns(p), truth = (double)ours.target_cpu_ns;
	cr_expect(fabs(total - truth) <= 0.10 * truth, "cpu.pprof %.3f s, the kernel counted %.3f s (perf: %.1f %%)",
		  total / 1e9, truth / 1e9, 100 * perf_share);
	for (size_t i = 0; i < ours.nthreads; i++) {
		double mine = our_thread_ns(p, ours.tids[i]), t = (double)ours.thread_cpu_ns[i];
		cr_expect(fabs(mine - t) <= 0.10 * t, "thread %d: %.3f s in cpu.pprof, it counted %.3f s",
			  (int)ours.tids[i], mine / 1e9, t / 1e9);
	}
	cJSON *m = manifest_load(ours.dir);
	const cJSON *wg = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "capture"), "cpu"), "perf"),
		"weighed_to_schedstat");
	cr_expect(cJSON_IsObject(wg), "the manifest does not say how cpu.pprof was weighed");
	const cJSON *threads = cJSON_GetObjectItem(wg, "threads");
	cr_expect(cJSON_IsNumber(threads) && threads->valuedouble >= 2, "both workers weighed by their schedstat");
	cJSON_Delete(m);
	perftools__profiles__profile__free_unpacked(p, NULL);
	rm_window(&ours);
	rm_window(&perf);
}

/* ---- kernel frames ---- */

/* CPU time in stacks where a kernel function whose name holds kfn sits
 * above pipe_writer (the kernel's write path on top of the user stack). */
static double kernel_write_path_ns(const Perftools__Profiles__Profile *p, const char *kfn)
{
	double ns = 0;
	for (size_t i = 0; i < p->n_sample; i++) {
		const char *names[512];
		int nf = pprof_sample_frames(p, p->sample[i], names, 512);
		int k = -1, writer = -1;
		for (int j = 0; j < nf; j++) {
			/* By part of the name: pipe_write is anon_pipe_write since 6.16. */
			if (names[j] && strstr(names[j], kfn) && k < 0)
				k = j;
			if (names[j] && strcmp(names[j], "pipe_writer") == 0)
				writer = j;
		}
		if (k >= 0 && writer > k)
			ns += (double)p->sample[i]->value[1];
	}
	return ns;
}

Test(cpu_truth, kernel_frames_above_write, .timeout = 120)
{
	struct window w;
	run_ours("pipe", 1, 1500, HZ, NULL, &w);
	Perftools__Profiles__Profile *p = load_cpu(&w);
	double total = our_total_ns(p);
	double vfs = kernel_write_path_ns(p, "vfs_write"), pw = kernel_write_path_ns(p, "pipe_write");
	cr_expect_eq(kernel_write_path_ns(p, "vfs_write_does_not_exist"), 0);
	cr_expect_gt(vfs, 0.2 * total, "vfs_write above pipe_writer: %.0f of %.0f ns", vfs, total);
	cr_expect_gt(pw, 0.1 * total, "pipe_write above pipe_writer: %.0f of %.0f ns", pw, total);
	perftools__profiles__profile__free_unpacked(p, NULL);
	rm_window(&w);

	/* Without kernel frames the kernel time is still there (at write). */
	const char *extra[] = {"--no-kernel-frames", NULL};
	run_ours("pipe", 1, 1500, HZ, extra, &w);
	p = load_cpu(&w);
	total = our_total_ns(p);
	cr_expect_eq(kernel_write_path_ns(p, "vfs_write"), 0, "kernel frames despite --no-kernel-frames");
	cr_expect(fabs(total - (double)w.target_cpu_ns) <= 0.10 * (double)w.target_cpu_ns,
		  "--no-kernel-frames: %.3f s in the profile, %.3f s counted", total / 1e9,
		  (double)w.target_cpu_ns / 1e9);
	perftools__profiles__profile__free_unpacked(p, NULL);
	rm_window(&w);
}

/* ---- placement ---- */

Test(cpu_truth, placement_matches_perf, .timeout = 180)
{
	/* Threads that work 2 ms and sleep 8 ms in poll: where a stop-the-
	 * thread sampler mostly finds them asleep. */
	struct window before, ours, after;
	/* At 499 Hz: a few thousand samples, so that 5 points is well
	 * outside the sampling noise of either profiler. */
	run_perf("duty", 2, 3000, 499, &before);
	run_ours("duty", 2, 3000, 499, NULL, &ours);
	run_perf("duty", 2, 3000, 499, &after);
	struct shares sb, so, sa;
	perf_leaf_shares(&before, &sb);
	perf_leaf_shares(&after, &sa);
	Perftools__Profiles__Profile *p = load_cpu(&ours);
	our_leaf_shares(p, &so);
	/* Every function perf gives 5 % or more, in either run. */
	size_t checked = 0;
	for (int pass = 0; pass < 2; pass++) {
		const struct shares *ref = pass ? &sa : &sb;
		for (size_t i = 0; i < ref->n; i++) {
			double pb = shares_pct(&sb, ref->name[i]), pa = shares_pct(&sa, ref->name[i]);
			if (pb < 5 && pa < 5)
				continue;
			double perf_mean = (pb + pa) / 2, mine = shares_pct(&so, ref->name[i]);
			cr_expect(fabs(mine - perf_mean) <= 5.0,
				  "%s: ours %.1f %%, perf %.1f %% (before %.1f, after %.1f)", ref->name[i], mine,
				  perf_mean, pb, pa);
			checked++;
		}
	}
	cr_expect_geq(checked, 1, "perf gave no function 5 %% or more");
	cr_expect_gt(shares_pct(&so, "duty_work"), 30.0, "duty_work: %.1f %%", shares_pct(&so, "duty_work"));
	perftools__profiles__profile__free_unpacked(p, NULL);
	rm_window(&ours);
	rm_window(&before);
	rm_window(&after);
}

/* ---- yield ---- */

Test(cpu_truth, yield_on_a_saturated_machine, .timeout = 180)
{
	pid_t l[2];
	loaders_start(l);
	struct window ours, perf;
	struct steal_mark stolen;
	steal_mark(&stolen);
	run_ours("spin", 1, 3000, HZ, NULL, &ours);
	run_perf("spin", 1, 3000, HZ, &perf);
	loaders_stop(l);
	/* cpu-clock counts the time the host took as the thread's, the
	 * kernel's accounting does not: yields then pass 100 %, each run's
	 * by its own window's steal. */
	double share = steal_share_since(&stolen);
	if (share > STEAL_SKIP_SHARE) {
		rm_window(&ours);
		rm_window(&perf);
		skip_if_stolen(share, "sample yields against perf's");
	}
	pid_t our_tid, perf_tid;
	double our_cpu_s = (double)worker_cpu_ns(&ours, &our_tid) / 1e9;
	double perf_cpu_s = (double)worker_cpu_ns(&perf, &perf_tid) / 1e9;
	Perftools__Profiles__Profile *p = load_cpu(&ours);
	double our_yield = (double)our_samples(p, our_tid) / (our_cpu_s * HZ);
	double perf_yield = (double)perf_samples(&perf, perf_tid) / (perf_cpu_s * HZ);
	cr_expect_gt(perf_yield, 0.5, "perf itself got %.0f %% of the samples", 100 * perf_yield);
	cr_expect_geq(our_yield, 0.95 * perf_yield,
		      "ours %.1f %% of the samples the thread's %.2f s ask for, perf %.1f %% of its %.2f s",
		      100 * our_yield, our_cpu_s, 100 * perf_yield, perf_cpu_s);
	perftools__profiles__profile__free_unpacked(p, NULL);
	rm_window(&ours);
	rm_window(&perf);
}

/* ---- the fallback ---- */

/* An unprivileged user with kernel.perf_event_paranoid >= 2 may not
 * sample kernel time: perf events are refused, the capture falls back to
 * ptrace stops and says so, and --cpu-engine perf fails with exit 15. */
Test(cpu_truth, fallback_when_perf_events_are_refused, .timeout = 120)
{
	char paranoid[16] = "";
	shell_output("cat /proc/sys/kernel/perf_event_paranoid", paranoid, sizeof(paranoid));
	if (geteuid() != 0 || atoi(paranoid) < 2)
		cr_skip_test("needs root to drop to nobody, and perf_event_paranoid >= 2 (it is %s)",
			     paranoid);
	if (!can_exec_as(65534, 65534, target_path("cpu_window")))
		cr_skip_test("nobody cannot execute the build tree");
	const char *argv[] = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			      target_path("cpu_window"), "spin", "1", "60000", NULL};
	struct target t = target_start(argv, "ready");
	go(&t);
	char tmp[256], out[300], pid[16];
	make_tmpdir(tmp, sizeof(tmp));
	cr_assert_eq(chmod(tmp, 0777), 0);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);

	snprintf(out, sizeof(out), "%s/auto", tmp);
	struct tool_result r;
	const char *args[] = {"-p", pid, "-d", "2s", "-o", out, NULL};
	tool_run_as(&r, 65534, 65534, args);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "perf events refused") && strstr(r.err, "cpu engine ptrace"),
		  "stderr does not say it fell back: %s", r.err);
	cJSON *m = manifest_load(out);
	const cJSON *cap = cJSON_GetObjectItem(m, "capture");
	const cJSON *eng = cJSON_GetObjectItem(cap, "cpu_engine");
	cr_expect(cJSON_IsString(eng) && strcmp(eng->valuestring, "ptrace") == 0);
	cr_expect(cJSON_IsString(cJSON_GetObjectItem(cap, "cpu_engine_fallback")));
	cJSON_Delete(m);
	/* report says it too, at the top */
	const char *rargs[] = {"report", out, NULL};
	tool_run(&r, rargs);
	cr_expect(strstr(r.out, "cpu       engine ptrace") && strstr(r.out, "perf events refused"),
		  "report: %s", r.out);

	snprintf(out, sizeof(out), "%s/forced", tmp);
	const char *fargs[] = {"-p", pid, "-d", "1s", "--cpu-engine", "perf", "-o", out, NULL};
	tool_run_as(&r, 65534, 65534, fargs);
	cr_expect_eq(r.exit_code, 15, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "perf events") != NULL, "%s", r.err);
	cr_expect(!path_exists(out, "manifest.json"), "a bundle despite the refusal");
	target_kill(&t);
	rm_rf(tmp);
}

/* ---- the vdso ---- */

/* Stacks caught inside the vdso keep their callers (its CFI is read from
 * the target's memory): in cpu.pprof, and in snapshots. */
Test(cpu_truth, callers_kept_through_the_vdso, .timeout = 120)
{
	struct window w;
	run_ours("clock", 1, 1500, HZ, NULL, &w);
	Perftools__Profiles__Profile *p = load_cpu(&w);
	double in_vdso = 0, whole = 0;
	for (size_t i = 0; i < p->n_sample; i++) {
		const char *names[256];
		int nf = pprof_sample_frames(p, p->sample[i], names, 256);
		if (nf <= 0 || !names[0] || !strstr(names[0], "vdso"))
			continue;
		double v = (double)p->sample[i]->value[1];
		in_vdso += v;
		bool loop = false, start = false;
		for (int j = 1; j < nf; j++) {
			loop |= names[j] && strcmp(names[j], "clock_loop") == 0;
			start |= names[j] && strcmp(names[j], "start_thread") == 0;
		}
		if (loop && start)
			whole += v;
	}
	cr_expect_gt(in_vdso, 0.2 * our_total_ns(p), "little time in the vdso: %.0f of %.0f ns", in_vdso,
		     our_total_ns(p));
	cr_expect_geq(whole, 0.95 * in_vdso,
		      "only %.0f of the %.0f ns in the vdso reach clock_loop and start_thread", whole,
		      in_vdso);
	perftools__profiles__profile__free_unpacked(p, NULL);
	rm_window(&w);

	/* Snapshots: the thread is in the vdso most of the time; each stack
	 * that is must go on to start_thread. */
	struct target t = start_window("clock", 1, 3000);
	go(&t);
	char tmp[256], pid[16];
	make_tmpdir(tmp, sizeof(tmp));
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	int in = 0, through = 0;
	for (int k = 0; k < 8; k++) {
		char out[300], txt[400];
		snprintf(out, sizeof(out), "%s/s%d", tmp, k);
		const char *args[] = {"-p", pid, "--snapshot", "-q", "-o", out, NULL};
		struct tool_result r;
		tool_run(&r, args);
		cr_assert_eq(r.exit_code, 0, "snapshot: %s", r.err);
		snprintf(txt, sizeof(txt), "%s/threads.txt", out);
		char *text = read_file(txt, NULL);
		cr_assert(text);
		/* The clock thread's block: from "clock_loop"'s thread header on. */
		const char *v = strstr(text, "__vdso_clock_gettime");
		if (v) {
			in++;
			const char *end = strstr(v, "\n\n");
			const char *st = strstr(v, "start_thread");
			const char *cl = strstr(v, "clock_loop");
			if (st && cl && (!end || (st < end && cl < end)))
				through++;
		}
		free(text);
	}
	cr_expect_gt(in, 0, "no snapshot caught the thread in the vdso");
	cr_expect_eq(through, in, "%d of %d stacks in the vdso lost their callers", in - through, in);
	end_target(&t, &w);
	rm_rf(tmp);
}

/* ---- a leaf at its ret, a tail call ---- */

/* Samples of cpu_window MODE whose leaf is one of leaves (innermost
 * first): each must go on with loop_fn, main_fn and start_thread. */
static void expect_leaves_keep_callers(const char *mode, const char *const *leaves,
				       const char *loop_fn, const char *main_fn)
{
	struct window w;
	run_ours(mode, 1, 1500, 999, NULL, &w);
	Perftools__Profiles__Profile *p = load_cpu(&w);
	double in_leaf = 0, whole = 0;
	for (size_t i = 0; i < p->n_sample; i++) {
		const char *names[256];
		int nf = pprof_sample_frames(p, p->sample[i], names, 256);
		bool leaf = false;
		for (size_t k = 0; nf >= 1 && names[0] && leaves[k]; k++)
			leaf |= strcmp(names[0], leaves[k]) == 0;
		if (!leaf)
			continue;
		double v = (double)p->sample[i]->value[0];
		in_leaf += v;
		/* start_thread's caller too, glibc's clone: the frame chain
		 * alone ends at start_thread, which keeps no frame pointer. */
		bool start = false;
		for (int j = 2; j + 1 < nf; j++)
			start |= names[j] && strcmp(names[j], "start_thread") == 0 && names[j + 1] &&
				 strstr(names[j + 1], "clone");
		if (nf >= 3 && names[1] && strcmp(names[1], loop_fn) == 0 && names[2] &&
		    strcmp(names[2], main_fn) == 0 && start)
			whole += v;
	}
	cr_expect_gt(in_leaf, 100, "only %.0f samples in %s", in_leaf, leaves[0]);
	cr_expect_eq(whole, in_leaf,
		     "%.0f of the %.0f samples in %s lost %s, %s, start_thread or its clone",
		     in_leaf - whole, in_leaf, leaves[0], loop_fn, main_fn);
	perftools__profiles__profile__free_unpacked(p, NULL);
	rm_window(&w);
}

/* A CPU sample caught on a leaf's ret, after 'pop %rbp': the kernel's
 * stack copy starts at SP, and the CFI there still puts the caller's rbp
 * at CFA-16, below it. The unwind must still name the leaf's caller
 * (the frame chain alone skips it: rbp already holds the caller's). */
Test(cpu_truth, leaf_at_its_ret_keeps_its_caller, .timeout = 120)
{
	const char *leaves[] = {"leaf_step", NULL};
	expect_leaves_keep_callers("leaf", leaves, "leaf_loop", "leaf_main");
}

/* The same below a tail call's 'pop %rbp; jmp *%rax' (postgres's hottest
 * truncated unwinds: 3-12 in 4000 samples of a busy backend): on the
 * jmp, tail_hop's caller is tail_loop; once jumped, tail_land's is too. */
Test(cpu_truth, tail_call_keeps_its_caller, .timeout = 120)
{
	const char *leaves[] = {"tail_hop", "tail_land", NULL};
	expect_leaves_keep_callers("tail", leaves, "tail_loop", "tail_main");
}

/* ---- descriptors ---- */

/* One event per thread and CPU: under a low descriptor limit the threads
 * past the budget go without one, are counted and said, and the bundle
 * (which needs descriptors of its own) is still written whole. */
Test(cpu_truth, threads_past_the_descriptor_budget_are_counted, .timeout = 120)
{
	struct target t = start_window("spin", 16, 60000);
	go(&t);
	sleep_ms(300);
	char tmp[256], cmd[1024], out[4096];
	make_tmpdir(tmp, sizeof(tmp));
	/* 80 descriptors: 64 kept for the capture, 2 per thread on 2 CPUs. */
	const char *tool = getenv("DIAG_ATTACH");
	cr_assert(tool, "DIAG_ATTACH not set (run through meson test)");
	snprintf(cmd, sizeof(cmd), "prlimit --nofile=80:80 %s -p %d -d 2s -o %s/b 2>&1", tool,
		 (int)t.pid, tmp);
	int rc = shell_output(cmd, out, sizeof(out));
	cr_expect_eq(rc, 0, "exit %d: %s", rc, out);
	cr_expect(strstr(out, "got no perf event") != NULL, "not said: %s", out);
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/b", tmp);
	expect_verified(dir, NULL);
	cJSON *m = manifest_load(dir);
	const cJSON *perf = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(m, "capture"), "cpu"), "perf");
	double without = cJSON_GetNumberValue(cJSON_GetObjectItem(perf, "threads_without_event"));
	double followed = cJSON_GetNumberValue(cJSON_GetObjectItem(perf, "threads_followed"));
	cr_expect(without > 0 && followed > 0 && without + followed == 17,
		  "%.0f threads without an event, %.0f followed (17 in all)", without, followed);
	cJSON_Delete(m);
	target_kill(&t);
	rm_rf(tmp);
}
