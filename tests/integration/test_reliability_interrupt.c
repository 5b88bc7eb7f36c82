/*
 * Reliability, part C: the tool interrupted (reliability.md section 4,
 * C1-C3, C7). SIGINT/SIGTERM/SIGHUP at random moments, also inside a hold
 * window ($DIAG_ATTACH_TEST_HOLD_MS), and a SIGHUP under nohup; SIGKILL
 * mid-sample; a SIGSTOPped sampler under the watchdog; two diag-attach on
 * one process.
 * $DIAG_REL_LOOPS repeats the racy ones.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "rel_shared.h"

/* The output is either absent, a directory without manifest (abandoned:
 * the tool said so with exit 12), or a bundle that verifies. */
static void expect_output_sane(const char *out, int code, const char *ctx)
{
	if (!path_exists(out, NULL))
		return;
	if (!path_exists(out, "manifest.json")) {
		cr_expect(code != 0, "%s: exit 0 but no manifest in %s", ctx, out);
		return;
	}
	expect_verified(out, ctx);
}

/* For a tool that does not exit in time: each thread's state, wait
 * channel, syscall and user stack, for the failure message (a criterion
 * worker's stderr does not reach the CI log). */
static void dump_threads(pid_t pid, char *out, size_t out_size)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "for t in /proc/%d/task/*; do echo \"${t##*/} $(cut -d' ' -f3 $t/stat) "
		 "$(cat $t/comm) $(cat $t/wchan) $(cut -d' ' -f1 $t/syscall)\"; done; "
		 "eu-stack -p %d 2>&1 | grep -E '^(TID| *#[0-9] )' | head -60",
		 (int)pid, (int)pid);
	shell_output(cmd, out, out_size);
}

/* The promise (issue 7): out within 2 s of the signal (6 s under the
 * sanitizers, which are 2-3x slower at everything: 3.3 s seen). What is
 * not ours to promise is the disk: the bundle's fsyncs wait for the
 * journal, and on a shared disk one commit was seen to take 9 s. Time the
 * tool spends waiting on it (the leader in D, or in fsync/fdatasync) past
 * the promise is allowed, up to DISK_WAIT_MAX_MS, and reported. */
#if defined(__SANITIZE_ADDRESS__)
#define EXIT_PROMISE_MS 6000
#else
#define EXIT_PROMISE_MS 2000
#endif
#define DISK_GRACE_MS 1000
#define DISK_WAIT_MAX_MS 30000

/* Is pid's leader waiting on the disk right now? */
static bool waiting_on_disk(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	char *sc = read_file(path, NULL);
	long nr = sc && sc[0] >= '0' && sc[0] <= '9' ? atol(sc) : -1;
	free(sc);
	return proc_state(pid) == 'D' || nr == 74 /* fsync */ || nr == 75 /* fdatasync */;
}

/* C1: a stop signal at a random moment (half the runs with every capture
 * holding the target 20 ms, so many land inside a hold window): the tool
 * exits within 2 s with a bundle (0) or an abandoned directory (12), and
 * the target is healthy. One target per signal, reused across runs. */
static void interrupt_loop(int sig, int loops)
{
	struct rel_target rt;
	rel_start_spin2(&rt);
	unsigned seed = (unsigned)getpid() ^ (unsigned)now_ms();
	fprintf(stderr, "c1 signal %d: seed %u, %d runs\n", sig, seed, loops);
	uint64_t worst = 0;
	for (int it = 0; it < loops; it++) {
		char dir[256], out[300], ctx[64];
		snprintf(ctx, sizeof(ctx), "signal %d run %d", sig, it);
		make_tmpdir(dir, sizeof(dir));
		snprintf(out, sizeof(out), "%s/b", dir);
		bool hold = it % 2 == 1;
		if (hold)
			setenv("DIAG_ATTACH_TEST_HOLD_MS", "20", 1);
		const char *args[] = {"-p", rt.pid, "-F", "999", "-o", out, "-q", NULL};
		pid_t tool = tool_spawn(args, "/dev/null", "/dev/null");
		unsetenv("DIAG_ATTACH_TEST_HOLD_MS");
		usleep((useconds_t)(rand_r(&seed) % 800) * 1000u);
		kill(tool, sig);
		uint64_t t0 = now_ms();
		int st = 0, code;
		pid_t w;
		uint64_t limit = EXIT_PROMISE_MS, disk_ms = 0, last_disk = 0;
		while ((w = waitpid(tool, &st, WNOHANG)) == 0) {
			uint64_t el = now_ms() - t0;
			bool disk = el >= limit - DISK_GRACE_MS && waiting_on_disk(tool);
			if (disk) {
				if (last_disk)
					disk_ms += el - last_disk;
				last_disk = el;
				if (el + DISK_GRACE_MS > limit)
					limit = el + DISK_GRACE_MS;
			} else {
				last_disk = 0;
			}
			if (el >= limit || el >= DISK_WAIT_MAX_MS)
				break;
			usleep(1000);
		}
		bool died_before_start = false;
		char where[4096] = "";
		if (w == 0) {
			dump_threads(tool, where, sizeof(where)); /* still running: say where */
			code = tool_wait(tool, 3000);
		} else {
			code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			/* A signal that lands before the program has installed its
			 * handlers (between exec and main) kills it: unavoidable,
			 * and harmless as long as it had not touched anything yet. */
			died_before_start = WIFSIGNALED(st) && WTERMSIG(st) == sig &&
					    access(out, F_OK) != 0;
			if (died_before_start)
				code = 0;
		}
		uint64_t took = now_ms() - t0;
		if (took > worst)
			worst = took;
		if (took > EXIT_PROMISE_MS)
			fprintf(stderr, "%s: out after %llu ms, ~%llu ms of them waiting on the disk\n", ctx,
				(unsigned long long)took, (unsigned long long)disk_ms);
		cr_expect(code != -2 && took <= limit, "%s: tool took %llu ms to exit (code %d)\n%s", ctx,
			  (unsigned long long)took, code, where);
		cr_expect(code == 0 || code == 12, "%s: exit code %d", ctx, code);
		if (!died_before_start)
			expect_output_sane(out, code, ctx);
		expect_healthy(&rt, NULL, ctx);
		rm_rf(dir);
	}
	fprintf(stderr, "c1 signal %d: slowest exit %llu ms\n", sig, (unsigned long long)worst);
	rel_stop(&rt);
}

Test(reliability_interrupt, c1_sigint_random, .timeout = 600)
{
	interrupt_loop(SIGINT, rel_loops(6));
}

Test(reliability_interrupt, c1_sigterm_random, .timeout = 600)
{
	interrupt_loop(SIGTERM, rel_loops(6));
}

Test(reliability_interrupt, c1_sighup_random, .timeout = 600)
{
	interrupt_loop(SIGHUP, rel_loops(6));
}

/* C1 under nohup: a SIGHUP ignored when the tool started stays ignored
 * (the operator asked for the capture to outlive the terminal), and
 * SIGTERM still ends the capture with a bundle. */
Test(reliability_interrupt, c1_sighup_ignored_under_nohup, .timeout = 120)
{
	struct rel_target rt;
	rel_start_spin2(&rt);
	char dir[256], out[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/b", dir);
	const char *args[] = {"-p", rt.pid, "-F", "99", "-q", "-o", out, NULL};
	pid_t p = tool_spawn_nohup(args, "/dev/null", "/dev/null");
	/* Once while it attaches and once while it samples. */
	sleep_ms(300);
	kill(p, SIGHUP);
	sleep_ms(500);
	kill(p, SIGHUP);
	sleep_ms(500);
	int st = 0;
	pid_t w = waitpid(p, &st, WNOHANG);
	cr_expect_eq(w, 0, "the tool ended on a SIGHUP it was started ignoring (status 0x%x)", st);
	int code = 0;
	if (w == 0) {
		kill(p, SIGTERM);
		code = tool_wait(p, EXIT_PROMISE_MS + DISK_WAIT_MAX_MS);
		cr_expect_eq(code, 0, "exit %d after SIGTERM", code);
	}
	if (w == 0 && code == 0)
		expect_verified(out, "under nohup");
	expect_healthy(&rt, NULL, "under nohup");
	rm_rf(dir);
	rel_stop(&rt);
}

/* C2: SIGKILL of the tool mid-capture (each capture holds the target 5 ms,
 * so most kills land inside a window): within 100 ms no thread is traced
 * or in a ptrace-stop, and no final bundle lacks its manifest. */
Test(reliability_interrupt, c2_sigkill_mid_sample, .timeout = 600)
{
	struct rel_target rt;
	rel_start_spin2(&rt);
	int loops = rel_loops(10);
	unsigned seed = (unsigned)getpid() ^ (unsigned)now_ms();
	fprintf(stderr, "c2: seed %u, %d runs\n", seed, loops);
	uint64_t worst = 0;
	for (int it = 0; it < loops; it++) {
		char dir[256], out[300], ctx[64];
		snprintf(ctx, sizeof(ctx), "run %d", it);
		make_tmpdir(dir, sizeof(dir));
		snprintf(out, sizeof(out), "%s/b", dir);
		setenv("DIAG_ATTACH_TEST_HOLD_MS", "5", 1);
		const char *args[] = {"-p", rt.pid, "-F", "999", "-o", out, "-q", NULL};
		pid_t tool = tool_spawn(args, "/dev/null", "/dev/null");
		unsetenv("DIAG_ATTACH_TEST_HOLD_MS");
		usleep(100000 + (useconds_t)(rand_r(&seed) % 400) * 1000u);
		kill(tool, SIGKILL);
		int st;
		waitpid(tool, &st, 0);
		uint64_t t0 = now_ms();
		while (traced_threads(rt.t.pid) && now_ms() - t0 < 1000)
			usleep(500);
		uint64_t took = now_ms() - t0;
		if (took > worst)
			worst = took;
		cr_expect(took <= 100, "%s: target still traced %llu ms after SIGKILL", ctx,
			  (unsigned long long)took);
		expect_output_sane(out, -1, ctx);
		expect_healthy(&rt, NULL, ctx);
		rm_rf(dir);
	}
	fprintf(stderr, "c2: worst release after SIGKILL %llu ms\n", (unsigned long long)worst);
	rel_stop(&rt);
}

/* C3: the sampler is SIGSTOPped inside a hold window; the watchdog
 * (attach_watchdog_start, 500 ms) SIGKILLs it, so the target's threads are
 * released within about a second, not when someone sends SIGCONT. Driven
 * through rel_driver, which holds the target at a rate of its own. At 4
 * holds a second the watchdog keeps looking every 50 ms; at 1 a second it
 * has gone to sleep (ten looks found no new hold) by the time the next
 * hold opens, and that hold must wake it. */
Test(reliability_interrupt, c3_stopped_sampler_watchdog, .timeout = 600)
{
	REL_REPEAT(it, 4) {
		struct rel_target rt;
		rel_start_spin2(&rt);
		const char *holds_per_s = it % 2 ? "4" : "1";
		const char *dargv[] = {target_path("reliability/rel_driver"), rt.pid, "20000", holds_per_s,
				       "watchdog=500", "hold=100", NULL};
		char errlog[] = "/tmp/diag-c3-driver-XXXXXX";
		int errfd = mkstemp(errlog);
		cr_assert(errfd >= 0);
		close(errfd);
		struct target drv = target_start_logged(dargv, "started", errlog);
		usleep(300000 + (useconds_t)(rand() % 300) * 1000u);
		/* Stop it while it holds the target. A SIGSTOP that lands just
		 * after a release (the test itself may be descheduled between
		 * seeing the hold and sending the signal) leaves nothing for the
		 * watchdog to do: seen from the frozen driver, no target thread
		 * is in a ptrace-stop then, so let it go on and try again. */
		bool held = false;
		for (uint64_t t0 = now_ms(); !held && now_ms() - t0 < 10000;) {
			if (!ptrace_stopped_threads(rt.t.pid)) {
				usleep(200);
				continue;
			}
			kill(drv.pid, SIGSTOP);
			for (uint64_t s0 = now_ms(); now_ms() - s0 < 1000; usleep(200))
				if (strchr("TZ?", proc_state(drv.pid)))
					break;
			held = ptrace_stopped_threads(rt.t.pid) > 0 || proc_state(drv.pid) != 'T';
			if (!held)
				kill(drv.pid, SIGCONT);
		}
		cr_expect(held, "run %d: never caught the driver inside a hold in 10 s", it);
		atomic_store(&rt.sh->max_gap_ns, 0);
		uint64_t t0 = now_ms();
		int st = 0;
		pid_t r;
		while ((r = waitpid(drv.pid, &st, WNOHANG)) == 0 && now_ms() - t0 < 5000)
			usleep(1000);
		uint64_t took = now_ms() - t0;
		if (r == 0) {
			kill(drv.pid, SIGKILL);
			kill(drv.pid, SIGCONT);
			waitpid(drv.pid, &st, 0);
		}
		drv.pid = 0;
		target_kill(&drv);
		size_t errlen = 0;
		char *err = read_file(errlog, &errlen);
		unlink(errlog);
		/* The end of what the driver printed (a sanitizer report, say). */
		const char *tail = err ? (errlen > 1500 ? err + errlen - 1500 : err) : "";
		cr_expect(r != 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
			  "run %d: stopped sampler not killed by the watchdog (status %#x after %llu ms); "
			  "driver stderr: %s",
			  it, st, (unsigned long long)took, tail);
		free(err);
		cr_expect(took < 1500, "run %d: watchdog took %llu ms", it, (unsigned long long)took);
		/* Let the probe thread run once after the kill, so the gap that
		 * spans it is recorded. */
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		uint64_t killed_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
		for (uint64_t w0 = now_ms(); atomic_load(&rt.sh->probe_last_ns) < killed_ns &&
					     now_ms() - w0 < 2000;)
			usleep(1000);
		uint64_t gap = atomic_load(&rt.sh->max_gap_ns);
		fprintf(stderr, "c3 run %d: sampler killed after %llu ms, target max gap %.0f ms\n", it,
			(unsigned long long)took, (double)gap / 1e6);
		cr_expect(gap < 1000000000ull, "target frozen %.0f ms", (double)gap / 1e6);
		expect_healthy(&rt, NULL, "c3");
		rel_stop(&rt);
	}
}

/* C7: a second diag-attach on a process that one is capturing is refused
 * with exit 7 naming the first; the first is unaffected. */
Test(reliability_interrupt, c7_second_tool_refused, .timeout = 600)
{
	struct rel_target rt;
	rel_start_spin2(&rt);
	char dir[256], out[300], out2[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/first", dir);
	snprintf(out2, sizeof(out2), "%s/second", dir);
	/* The first runs until we SIGINT it, however many loops we do. */
	const char *args[] = {"-p", rt.pid, "-F", "200", "-o", out, "-q", NULL};
	pid_t first = tool_spawn(args, "/dev/null", "/dev/null");
	usleep(500000);
	for (int i = 0; i < rel_loops(3); i++) {
		rm_rf(out2);
		struct tool_result r;
		const char *args2[] = {"-p", rt.pid, "-d", "1s", "-o", out2, "-q", NULL};
		tool_run(&r, args2);
		cr_expect_eq(r.exit_code, 7, "second tool exit %d: %s", r.exit_code, r.err);
		char want[64];
		snprintf(want, sizeof(want), "already traced by pid %d (diag-attach)", (int)first);
		cr_expect(strstr(r.err, want), "second tool said: %s", r.err);
		cr_expect(!path_exists(out2, NULL), "the refused tool left %s behind", out2);
		const char *args3[] = {"-p", rt.pid, "--snapshot", "-o", out2, "-q", NULL};
		tool_run(&r, args3);
		cr_expect_eq(r.exit_code, 7, "second snapshot exit %d: %s", r.exit_code, r.err);
	}
	kill(first, SIGINT);
	cr_expect_eq(tool_wait(first, 10000), 0);
	cJSON *m = manifest_load(out);
	cr_expect(number_at(m, "capture", "failed_ticks") == 0,
		  "the first capture lost ticks to the second");
	cJSON_Delete(m);
	expect_healthy(&rt, NULL, "c7");
	rel_stop(&rt);
	rm_rf(dir);
}
