/* SPDX-License-Identifier: MIT */
/*
 * bench_timeline [SECONDS_PER_ROW=0.3]
 *
 * What one timeline sample costs the capturing process, on targets of a
 * few shapes (open fds x threads), next to a baseline measured in the same
 * run on the same target: one pread of /proc/PID/stat, the least any /proc
 * sampler can do. The ratio is the figure to compare across machines; the
 * nanoseconds are this machine's.
 *
 * Columns:
 *   base ns    one pread of stat
 *   sample ns  proc_sampler_sample() without fd types (wall, per sample)
 *   cpu ns     the same, CPU time of this process (user + system)
 *   types ns   with PROC_SAMPLER_FD_TYPES (a readlink per fd)
 *   x base     sample ns / base ns, and types ns / base ns
 *
 * Then the leak watchdog: leakwatch_feed() on 6 watched counters, flat
 * (the common case: only the range check runs) and worst case (every
 * window of every counter fitted and rejected late), with the default
 * 192-sample longest window and with the 4-minute span at 250 ms that
 * leakwatch_config_set_span() gives (961 samples, 8 window lengths).
 *
 * Targets are children of this program, so it works under Yama
 * ptrace_scope=1 and needs no privileges; they die with it
 * (PR_SET_PDEATHSIG) and are killed and reaped after their row.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timeline/leakwatch.h"
#include "timeline/proc_sampler.h"

static double seconds_per_row = 0.3;

static double now(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *parked(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* A child holding about nfds open descriptors and nthreads threads. */
static pid_t spawn_target(int nfds, int nthreads)
{
	int ready[2];
	char ch;
	pid_t pid;

	if (pipe(ready) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct rlimit rl = { 4096, 4096 };
		pthread_attr_t attr;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ready[0]);
		setrlimit(RLIMIT_NOFILE, &rl);
		/* stdin/out/err and the ready pipe are already open. */
		for (int i = 4; i < nfds; i++)
			if (open("/dev/null", O_RDONLY) < 0)
				_exit(1);
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		for (int i = 1; i < nthreads; i++) {
			pthread_t th;

			if (pthread_create(&th, &attr, parked, NULL) != 0)
				_exit(1);
		}
		(void)!write(ready[1], "r", 1);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (read(ready[0], &ch, 1) != 1) {
		close(ready[0]);
		waitpid(pid, NULL, 0);
		return -1;
	}
	close(ready[0]);
	return pid;
}

struct cost {
	double wall_ns, cpu_ns;
};

/* Run fn until seconds_per_row has passed (at least 20 times). */
static struct cost measure(int (*fn)(void *), void *arg)
{
	double w0, c0, w1;
	long n = 0;
	struct cost c;

	for (int i = 0; i < 5; i++)
		fn(arg); /* warm caches and dentries */
	w0 = now(CLOCK_MONOTONIC);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	do {
		for (int i = 0; i < 10; i++, n++)
			if (fn(arg) < 0)
				return (struct cost){ -1, -1 };
		w1 = now(CLOCK_MONOTONIC);
	} while (w1 - w0 < seconds_per_row || n < 20);
	c.wall_ns = (w1 - w0) * 1e9 / (double)n;
	c.cpu_ns = (now(CLOCK_PROCESS_CPUTIME_ID) - c0) * 1e9 / (double)n;
	return c;
}

static int baseline_read(void *arg)
{
	static char buf[4096];
	int fd = *(int *)arg;

	return pread(fd, buf, sizeof(buf), 0) > 0 ? 0 : -1;
}

static int one_sample(void *arg)
{
	struct timeline_sample s;

	return proc_sampler_sample(arg, &s);
}

static int bench_row(int nfds, int nthreads)
{
	struct proc_sampler *plain = NULL, *typed = NULL;
	struct timeline_sample s;
	struct cost base, smp, typ;
	char path[64];
	int statfd, r = -1;
	pid_t pid = spawn_target(nfds, nthreads);

	if (pid < 0) {
		fprintf(stderr, "bench_timeline: cannot start a target with %d fds, %d threads\n",
			nfds, nthreads);
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	statfd = open(path, O_RDONLY | O_CLOEXEC);
	if (statfd < 0 || proc_sampler_open(pid, 0, &plain) < 0 ||
	    proc_sampler_open(pid, PROC_SAMPLER_FD_TYPES, &typed) < 0)
		goto out;
	base = measure(baseline_read, &statfd);
	smp = measure(one_sample, plain);
	typ = measure(one_sample, typed);
	if (base.wall_ns < 0 || smp.wall_ns < 0 || typ.wall_ns < 0 || one_sample(typed) < 0)
		goto out;
	proc_sampler_sample(typed, &s);
	printf("%6lld %7lld %9.0f %10.0f %9.0f %7.1fx %10.0f %7.1fx\n", (long long)s.open_fds,
	       (long long)s.threads, base.wall_ns, smp.wall_ns, smp.cpu_ns,
	       smp.wall_ns / base.wall_ns, typ.wall_ns, typ.wall_ns / base.wall_ns);
	r = 0;
out:
	if (statfd >= 0)
		close(statfd);
	proc_sampler_free(plain);
	proc_sampler_free(typed);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return r;
}

/* ---- leakwatch ---- */

struct lw_bench {
	struct leakwatch *lw;
	double t;
	int64_t v[6];
	int64_t step;
};

static int lw_feed(void *arg)
{
	struct lw_bench *b = arg;
	struct leakwatch_finding out[6];
	size_t n;

	b->t += 1;
	for (int i = 0; i < 6; i++)
		b->v[i] += b->step;
	return leakwatch_feed(b->lw, b->t, b->v, out, 6, &n);
}

static int bench_leakwatch(const char *label, int64_t step, double interval_s)
{
	static const char *const names[6] = { "c0", "c1", "c2", "c3", "c4", "c5" };
	/* Worst case: a perfect trend clears range, jump and tau, gets its
	 * median slope computed, and fails only the slope floor. */
	struct leakwatch_threshold th[6];
	struct leakwatch_config cfg;
	struct lw_bench b = { 0 };
	struct cost c;

	for (int i = 0; i < 6; i++) {
		snprintf(th[i].name, sizeof(th[i].name), "%s", names[i]);
		th[i].min_slope_per_s = 1e12;
		th[i].min_delta = 1;
	}
	leakwatch_config_init(&cfg);
	if (interval_s > 0)
		leakwatch_config_set_span(&cfg, interval_s, LEAKWATCH_DEFAULT_SPAN_S);
	cfg.thresholds = th;
	cfg.n_thresholds = 6;
	if (leakwatch_new(&cfg, names, 6, &b.lw) < 0)
		return -1;
	b.step = step;
	for (int i = 0; i < 6; i++)
		b.v[i] = 1000;
	/* Fill the longest window first so every window is evaluated. */
	for (size_t i = 0; i < leakwatch_max_window(b.lw); i++)
		lw_feed(&b);
	c = measure(lw_feed, &b);
	printf("  %-34s %9.0f ns/sample (%zu-sample windows up to %zu)\n", label, c.wall_ns,
	       (size_t)LEAKWATCH_DEFAULT_WINDOW, leakwatch_max_window(b.lw));
	leakwatch_free(b.lw);
	return 0;
}

int main(int argc, char **argv)
{
	static const int shapes[][2] = { { 1, 1 }, { 64, 1 }, { 1000, 1 },
					 { 1, 64 }, { 64, 64 }, { 1000, 64 } };
	int failed = 0;

	if (argc > 1) {
		seconds_per_row = strtod(argv[1], NULL);
		if (!(seconds_per_row > 0)) {
			fprintf(stderr, "usage: bench_timeline [SECONDS_PER_ROW]\n");
			return 2;
		}
	}
	printf("proc_sampler: cost of one sample vs one pread of /proc/PID/stat\n");
	printf("%6s %7s %9s %10s %9s %8s %10s %8s\n", "fds", "threads", "base ns", "sample ns",
	       "cpu ns", "x base", "types ns", "x base");
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		failed |= bench_row(shapes[i][0], shapes[i][1]) < 0;
	printf("\nleakwatch_feed, 6 watched counters:\n");
	failed |= bench_leakwatch("flat (range check only)", 0, 0) < 0;
	failed |= bench_leakwatch("worst case (every window fitted)", 1, 0) < 0;
	failed |= bench_leakwatch("flat, 4 min span at 250 ms", 0, 0.25) < 0;
	failed |= bench_leakwatch("worst case, 4 min span at 250 ms", 1, 0.25) < 0;
	return failed;
}
