/* attach/perf's switch records (perf_sampler_options.switch_records)
 * against the kernel's own count of a thread's context switches in
 * /proc/PID/status: a child sleeps a known number of times while its
 * events are open, and every switch out of a CPU is one record, preempted
 * ones flagged as such. Needs perf events (root, or perf_event_paranoid
 * low enough); skipped where they are refused. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach/perf.h"

#define SLEEPS 300

/* voluntary and nonvoluntary context switches of pid's main thread. */
static void switches_of(pid_t pid, long *voluntary, long *nonvoluntary)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	cr_assert(f, "open %s", path);
	*voluntary = *nonvoluntary = -1;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "voluntary_ctxt_switches: %ld", voluntary);
		sscanf(line, "nonvoluntary_ctxt_switches: %ld", nonvoluntary);
	}
	fclose(f);
	cr_assert(*voluntary >= 0 && *nonvoluntary >= 0, "no switch counts in %s", path);
}

/* The child's state letter in /proc/PID/stat. */
static char state_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

struct counts {
	pid_t tid;
	long in, out, preempted, cpu_samples;
};

static int count(void *arg, const struct perf_sample *s)
{
	struct counts *c = arg;
	if (!s->switch_record) {
		c->cpu_samples++;
		return 0;
	}
	if (s->tid != c->tid)
		return 0;
	if (!s->out)
		c->in++;
	else if (s->preempt)
		c->preempted++;
	else
		c->out++;
	return 0;
}

/* A forked child, blocked until told to go, with switch records open on
 * it. */
struct run {
	pid_t child;
	int go[2], done[2];
	struct perf_sampler *ps;
};

/* Fork the child, which runs work on "go", then says "done" and blocks
 * until the end; open its events once it is asleep in its first read (no
 * switch before "go"). Skips the test where perf events are refused. */
static void start_child(struct run *run, void (*work)(void))
{
	cr_assert_eq(pipe(run->go), 0);
	cr_assert_eq(pipe(run->done), 0);
	run->child = fork();
	cr_assert(run->child >= 0);
	if (run->child == 0) {
		char c;
		if (read(run->go[0], &c, 1) != 1)
			_exit(1);
		work();
		if (write(run->done[1], "d", 1) != 1)
			_exit(1);
		(void)!read(run->go[0], &c, 1); /* blocked until the parent ends it */
		_exit(0);
	}
	for (int i = 0; i < 1000 && state_of(run->child) != 'S'; i++)
		usleep(1000);
	struct perf_sampler_options o = {
		.period_ns = 1000000000ull, /* a CPU sample a second of its CPU: none here */
		.stack_bytes = 64,
		.switch_records = true,
	};
	int r = perf_sampler_open(run->child, &o, &run->ps);
	if (r == -EACCES || r == -EPERM || r == -ENOSYS || r == -ENOENT || r == -EOPNOTSUPP) {
		kill(run->child, SIGKILL);
		waitpid(run->child, NULL, 0);
		cr_skip_test("perf events refused here (%s)", strerror(-r));
	}
	cr_assert_eq(r, 0, "perf_sampler_open: %s", strerror(-r));
}

/* Let the child work; once it is back asleep, its /proc switch counts
 * over the work (voluntary, not), the records drained into k, and the
 * sampler's stats. Ends the child. */
static void measure(struct run *run, struct counts *k, long *vol, long *invol,
		    struct perf_sampler_stats *st)
{
	long v0, n0, v1, n1;
	switches_of(run->child, &v0, &n0);
	cr_assert_eq(write(run->go[1], "g", 1), 1);
	char c;
	cr_assert_eq(read(run->done[0], &c, 1), 1);
	/* Back in its blocking read: asleep, its counts final for now. */
	for (int i = 0; i < 1000 && state_of(run->child) != 'S'; i++)
		usleep(1000);
	usleep(20000);
	switches_of(run->child, &v1, &n1);
	*k = (struct counts){.tid = run->child};
	perf_sampler_drain(run->ps, count, k);
	perf_sampler_stats(run->ps, st);
	perf_sampler_free(run->ps);
	cr_assert_eq(write(run->go[1], "e", 1), 1);
	waitpid(run->child, NULL, 0);
	*vol = v1 - v0;
	*invol = n1 - n0;
	cr_log_info("/proc: %ld voluntary, %ld not; records: %ld to sleep, %ld preempted, %ld in",
		    *vol, *invol, k->out, k->preempted, k->in);
}

static void nap_300_times(void)
{
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < SLEEPS; i++)
		nanosleep(&ms, NULL);
}

Test(attach_perf_switch, one_record_per_switch_as_proc_counts_them)
{
	struct run run;
	start_child(&run, nap_300_times);
	struct counts k;
	long vol, invol;
	struct perf_sampler_stats st;
	measure(&run, &k, &vol, &invol, &st);

	cr_assert(!st.switch_records_refused, "this kernel has no switch records");
	cr_expect_geq(vol, SLEEPS, "/proc counted %ld voluntary switches for %d sleeps", vol, SLEEPS);
	cr_expect(labs(k.out - vol) <= 2, "%ld switch-outs to sleep recorded, /proc counted %ld",
		  k.out, vol);
	cr_expect(labs(k.preempted - invol) <= 2, "%ld preempted recorded, /proc counted %ld",
		  k.preempted, invol);
	cr_expect(labs(k.in - (k.out + k.preempted)) <= 2, "%ld in, %ld out", k.in,
		  k.out + k.preempted);
	cr_expect_eq((long)st.switch_records_out, k.out + k.preempted);
}

/* Spin for ms on CPU 0 (pinned there). */
static void spin_on_cpu0(long ms)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

static void spin_300_ms(void)
{
	spin_on_cpu0(300);
}

Test(attach_perf_switch, preemptions_flagged_as_proc_counts_them)
{
	struct run run;
	start_child(&run, spin_300_ms);
	/* A rival on the same CPU for longer than the child spins: the
	 * scheduler preempts the child while it is runnable, again and
	 * again. */
	pid_t rival = fork();
	cr_assert(rival >= 0);
	if (rival == 0) {
		spin_on_cpu0(500);
		_exit(0);
	}
	struct counts k;
	long vol, invol;
	struct perf_sampler_stats st;
	measure(&run, &k, &vol, &invol, &st);
	waitpid(rival, NULL, 0);

	cr_expect_geq(invol, 10, "the rival preempted the child %ld times only", invol);
	cr_expect(labs(k.preempted - invol) <= 2, "%ld preempted recorded, /proc counted %ld",
		  k.preempted, invol);
	cr_expect(labs(k.out - vol) <= 2, "%ld switch-outs to sleep recorded, /proc counted %ld",
		  k.out, vol);
}
