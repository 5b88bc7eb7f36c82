/*
 * Reliability, part A: the capture must not change what the target sees of
 * signals and job control (reliability.md section 4, A1-A8). Every test ends
 * with the health oracle (rel_healthy). Racy tests repeat $DIAG_REL_LOOPS
 * times (default small enough for CI; run with DIAG_REL_LOOPS=20 for the
 * acceptance run).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "rel_shared.h"

#define SIGBIT(s) (1ull << (s))

static bool wait_all_stopped(pid_t pid, unsigned ms)
{
	for (uint64_t until = now_ms() + ms; now_ms() < until; usleep(1000)) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		char *st = read_file(path, NULL);
		char *p = st ? strrchr(st, ')') : NULL;
		bool stopped = p && p[2] == 'T';
		free(st);
		if (stopped)
			return true;
	}
	return false;
}

/* rel_target spin 3, stopped with SIGSTOP before anything else. */
static void start_stopped(struct rel_target *rt)
{
	const char *args[] = {"spin", "3", NULL};
	rel_start(rt, args);
	kill(rt->t.pid, SIGSTOP);
	cr_assert(wait_all_stopped(rt->t.pid, 2000));
}

/* sig to the target at a random moment 0.3-1 s into a 1.5 s capture at
 * 1 kHz; the capture ends well (exit 0, a bundle that verifies). */
static void signal_mid_capture(struct rel_target *rt, int sig)
{
	struct capture c;
	capture_start(&c, rt->t.pid, "1500ms", "1000");
	sleep_ms(300 + (unsigned)(rand() % 700));
	kill(rt->t.pid, sig);
	free(capture_finish(&c, 10000));
	rm_rf(c.dir);
}

/* The target is stopped after the tool exited (H with expect_stopped: no
 * SIGCONT either), and the SIGCONT we send then resumes it. */
static void expect_stopped_then_resumes(struct rel_target *rt)
{
	struct health stopped = {.expect_stopped = true};
	expect_healthy(rt, &stopped, NULL);
	kill(rt->t.pid, SIGCONT);
	struct health resumed = {.sent_mask = SIGBIT(SIGCONT)};
	expect_healthy(rt, &resumed, NULL);
}

/* A1: 10,000 queued SIGRTMIN with sequence numbers during a 1 kHz capture:
 * all arrive, in order. */
Test(reliability_signals, a1_rt_signals_in_order, .timeout = 600)
{
	REL_REPEAT(it, 2) {
		struct rel_target rt;
		const char *args[] = {"signals", NULL};
		struct capture c;
		rel_capture_start(&rt, &c, args, "4s", "1000");
		sleep_ms(300);
		for (int seq = 1; seq <= 10000; seq++) {
			union sigval v = {.sival_int = seq};
			while (sigqueue(rt.t.pid, SIGRTMIN, v) < 0) {
				cr_assert_eq(errno, EAGAIN, "sigqueue: %s", strerror(errno));
				usleep(100);
			}
			if (seq % 50 == 0)
				sleep_ms(10); /* spread over ~2 s of the capture */
		}
		for (uint64_t until = now_ms() + 5000;
		     atomic_load(&rt.sh->rt_received) < 10000 && now_ms() < until;)
			usleep(1000);
		free(capture_finish(&c, capture_end_ms(4000, 1000, 2)));
		cr_expect_eq(atomic_load(&rt.sh->rt_received), 10000, "iteration %d: received %llu of 10000",
			     it, (unsigned long long)atomic_load(&rt.sh->rt_received));
		cr_expect_eq(atomic_load(&rt.sh->rt_out_of_order), 0, "iteration %d: %llu out of order", it,
			     (unsigned long long)atomic_load(&rt.sh->rt_out_of_order));
		struct health h = {.sent_mask = SIGBIT(SIGRTMIN)};
		rel_capture_done(&rt, &c, &h);
	}
}

/* A2: SIGUSR1 ping-pong, 2,000 round trips during a capture, each acked
 * within 100 ms, each with our pid and uid as sender. */
Test(reliability_signals, a2_sigusr1_ping_pong, .timeout = 600)
{
	REL_REPEAT(it, 2) {
		struct rel_target rt;
		const char *args[] = {"signals", NULL};
		rel_start(&rt, args);
		atomic_store(&rt.sh->usr1_sender, getpid());
		struct capture c;
		capture_start(&c, rt.t.pid, "3s", "1000");
		sleep_ms(300);
		uint64_t worst = 0;
		for (uint64_t i = 1; i <= 2000; i++) {
			uint64_t t0 = now_ms();
			cr_assert_eq(kill(rt.t.pid, SIGUSR1), 0);
			while (atomic_load(&rt.sh->usr1_acks) < i) {
				cr_assert(now_ms() - t0 <= 100, "iteration %d: ping %llu not acked within 100 ms",
					  it, (unsigned long long)i);
				usleep(20);
			}
			if (now_ms() - t0 > worst)
				worst = now_ms() - t0;
		}
		free(capture_finish(&c, capture_end_ms(3000, 1000, 2)));
		cr_expect_eq(atomic_load(&rt.sh->usr1_bad_sender), 0, "wrong si_pid/si_uid/si_code");
		cr_log_info("a2: worst ack %llu ms", (unsigned long long)worst);
		struct health h = {.sent_mask = SIGBIT(SIGUSR1)};
		rel_capture_done(&rt, &c, &h);
	}
}

/* A3: a stopped target stays stopped through a whole capture, receives no
 * SIGCONT, and resumes when we send one. */
Test(reliability_signals, a3_pre_stopped_stays_stopped, .timeout = 600)
{
	REL_REPEAT(it, 2) {
		struct rel_target rt;
		start_stopped(&rt);
		struct capture c;
		capture_start(&c, rt.t.pid, "2s", "500");
		free(capture_finish(&c, 10000));
		cr_expect_eq(atomic_load(&rt.sh->signals[SIGCONT]), 0, "SIGCONT leaked to a stopped target");
		expect_stopped_then_resumes(&rt);
		rel_stop(&rt);
		rm_rf(c.dir);
	}
}

/* A4: a stop signal sent mid-capture takes effect (the target is stopped
 * after the tool exits), for SIGSTOP and the three job-control stops. */
static void stop_mid_capture(int sig, int loops)
{
	for (int it = 0; it < loops; it++) {
		struct rel_target rt;
		const char *args[] = {"spin", "3", NULL};
		rel_start(&rt, args);
		signal_mid_capture(&rt, sig);
		cr_expect(wait_all_stopped(rt.t.pid, 1000), "signal %d mid-capture did not stop the target", sig);
		expect_stopped_then_resumes(&rt);
		rel_stop(&rt);
	}
}

Test(reliability_signals, a4_sigstop_mid_capture, .timeout = 600)
{
	stop_mid_capture(SIGSTOP, rel_loops(2));
}

Test(reliability_signals, a4_sigtstp_ttin_ttou_mid_capture, .timeout = 600)
{
	stop_mid_capture(SIGTSTP, rel_loops(1));
	stop_mid_capture(SIGTTIN, rel_loops(1));
	stop_mid_capture(SIGTTOU, rel_loops(1));
}

/* A5: SIGCONT sent mid-capture to a stopped target resumes it; its
 * handler runs exactly once. */
Test(reliability_signals, a5_sigcont_mid_capture, .timeout = 600)
{
	REL_REPEAT(it, 2) {
		struct rel_target rt;
		start_stopped(&rt);
		signal_mid_capture(&rt, SIGCONT);
		struct health h = {.sent_mask = SIGBIT(SIGCONT)};
		expect_healthy(&rt, &h, NULL);
		cr_expect_eq(atomic_load(&rt.sh->signals[SIGCONT]), 1, "SIGCONT handler ran %llu times",
			     (unsigned long long)atomic_load(&rt.sh->signals[SIGCONT]));
		rel_stop(&rt);
	}
}

/* A6: SIGTSTP with a handler: the handler runs, the target keeps running. */
Test(reliability_signals, a6_sigtstp_handler_runs, .timeout = 600)
{
	REL_REPEAT(it, 2) {
		struct rel_target rt;
		const char *args[] = {"spin", "3", "tstp", NULL};
		rel_start(&rt, args);
		signal_mid_capture(&rt, SIGTSTP);
		cr_expect_eq(atomic_load(&rt.sh->tstp_handled), 1);
		struct health h = {.sent_mask = SIGBIT(SIGTSTP)};
		expect_healthy(&rt, &h, NULL);
		rel_stop(&rt);
	}
}

/* A7: the target's real parent, doing job control with
 * waitpid(WUNTRACED | WCONTINUED), sees no stop or continue event from a
 * capture. */
Test(reliability_signals, a7_job_control_parent_sees_nothing, .timeout = 600)
{
	struct rel_target rt;
	rel_shm_create(&rt);
	int ready[2], events[2];
	cr_assert(pipe2(ready, O_CLOEXEC) == 0 && pipe2(events, O_CLOEXEC) == 0);
	pid_t parent = fork();
	cr_assert(parent >= 0);
	if (parent == 0) {
		pid_t child = fork();
		if (child == 0) {
			dup2(ready[1], STDOUT_FILENO);
			const char *argv[] = {target_path("reliability/rel_target"), "spin", "3", NULL};
			execv(argv[0], (char *const *)argv);
			_exit(127);
		}
		if (write(events[1], &child, sizeof(child)) != sizeof(child))
			_exit(1);
		for (;;) {
			int st;
			pid_t r = waitpid(child, &st, WUNTRACED | WCONTINUED);
			if (r < 0 && errno == EINTR)
				continue;
			char ev = r < 0 ? 'E' : WIFSTOPPED(st) ? 'S' : WIFCONTINUED(st) ? 'C' : 'X';
			if (write(events[1], &ev, 1) != 1 || ev == 'X' || ev == 'E')
				_exit(0);
		}
	}
	close(ready[1]);
	close(events[1]);
	pid_t child;
	cr_assert_eq(read(events[0], &child, sizeof(child)), (ssize_t)sizeof(child));
	char line[64];
	ssize_t n = 0;
	while (n < (ssize_t)sizeof(line) - 1 && read(ready[0], line + n, 1) == 1 && line[n] != '\n')
		n++;
	rt.t.pid = child;
	rt.t.stdout_fd = ready[0];

	struct capture c;
	capture_start(&c, child, "3s", "1000");
	free(capture_finish(&c, capture_end_ms(3000, 1000, 3)));
	fcntl(events[0], F_SETFL, O_NONBLOCK);
	char ev;
	ssize_t got = read(events[0], &ev, 1);
	cr_expect(got < 0 && errno == EAGAIN, "job-control parent saw event '%c'", got == 1 ? ev : '?');
	expect_healthy(&rt, NULL, NULL);

	kill(child, SIGKILL);
	fcntl(events[0], F_SETFL, 0);
	cr_expect_eq(read(events[0], &ev, 1), 1);
	cr_expect_eq(ev, 'X', "parent saw '%c' before the exit", ev);
	int st;
	waitpid(parent, &st, 0);
	rt.t.pid = 0;
	close(events[0]);
	rel_stop(&rt);
	rm_rf(c.dir);
}

static const char *const blocked_names[REL_NBLOCKED] = {
	"epoll_wait(-1)", "epoll_wait(100s)", "sigtimedwait", "semop",
	"read(pipe)",     "poll(-1)",         "nanosleep",    "futex"};

/* A8: what stopping does to threads blocked in system calls. read, poll,
 * nanosleep and futex restart transparently: never EINTR. epoll_wait,
 * sigtimedwait and semop return EINTR (documented in attach.h), at most
 * once per sample. With options.no_interrupt_blocked (rel_driver nib)
 * nobody sees EINTR and the blocked threads are sampled from /proc. */
Test(reliability_signals, a8_blocked_syscalls_eintr, .timeout = 600)
{
	struct rel_target rt;
	const char *args[] = {"blocked", NULL};
	struct capture c;
	rel_capture_start(&rt, &c, args, "2s", "99");
	free(capture_finish(&c, 10000));
	uint64_t eintr[REL_NBLOCKED];
	for (int i = 0; i < REL_NBLOCKED; i++) {
		eintr[i] = atomic_load(&rt.sh->eintr[i]);
		cr_log_info("a8 (stopping): %-16s EINTR %llu", blocked_names[i], (unsigned long long)eintr[i]);
		fprintf(stderr, "a8 (stopping, 2 s at 99 Hz): %-16s EINTR %llu\n", blocked_names[i],
			(unsigned long long)eintr[i]);
	}
	cr_expect_eq(eintr[REL_READ] + eintr[REL_POLL] + eintr[REL_NANOSLEEP] + eintr[REL_FUTEX], 0,
		     "a restartable call returned EINTR");
	/* 2 s at 99 Hz, plus the final snapshot. */
	for (int i = REL_EPOLL_INF; i <= REL_SEMOP; i++)
		cr_expect(eintr[i] <= 2 * 99 + 20, "%s: %llu EINTR for ~200 samples", blocked_names[i],
			  (unsigned long long)eintr[i]);
	cr_expect_eq(atomic_load(&rt.sh->unexpected_returns), 0);
	expect_healthy(&rt, NULL, NULL);
	rm_rf(c.dir);

	/* Same through attach.h with no_interrupt_blocked. */
	uint64_t before[REL_NBLOCKED];
	for (int i = 0; i < REL_NBLOCKED; i++)
		before[i] = atomic_load(&rt.sh->eintr[i]);
	const char *dargv[] = {target_path("reliability/rel_driver"), rt.pid, "2000", "99", "nib",
			       NULL};
	struct target drv = target_start(dargv, "started");
	int st;
	cr_assert_eq(waitpid(drv.pid, &st, 0), drv.pid);
	drv.pid = 0;
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rel_driver status %#x", st);
	static char report[65536];
	ssize_t n, len = 0;
	while ((n = read(drv.stdout_fd, report + len, sizeof(report) - 1 - (size_t)len)) > 0)
		len += n;
	report[len] = '\0';
	target_kill(&drv);
	for (int i = 0; i < REL_NBLOCKED; i++) {
		uint64_t d = atomic_load(&rt.sh->eintr[i]) - before[i];
		fprintf(stderr, "a8 (no_interrupt_blocked): %-16s EINTR %llu\n", blocked_names[i],
			(unsigned long long)d);
		cr_expect_eq(d, 0, "%s: EINTR under no_interrupt_blocked", blocked_names[i]);
		char key[64];
		snprintf(key, sizeof(key), "tid=%d ", (int)atomic_load(&rt.sh->blocked_tid[i]));
		const char *line = strstr(report, key);
		cr_expect(line, "thread %s never sampled: %s", blocked_names[i], report);
		if (line) {
			unsigned long samples = 0, stopped = 0, not_stopped = 0;
			sscanf(line + strlen(key), "samples=%lu stopped=%lu not_stopped=%lu", &samples,
			       &stopped, &not_stopped);
			cr_expect(samples > 100 && not_stopped > 100 && stopped <= samples / 10,
				  "%s: samples %lu stopped %lu not_stopped %lu", blocked_names[i], samples,
				  stopped, not_stopped);
		}
	}
	expect_healthy(&rt, NULL, NULL);
	rel_stop(&rt);
}
