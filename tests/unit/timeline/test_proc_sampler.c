/* SPDX-License-Identifier: MIT */
/*
 * proc_sampler on the test process itself (criterion runs each test in its
 * own process, so what we open and spawn here is ours alone) and on a few
 * processes whose counters are known: a missing pid, a kernel thread, a
 * process that exits under the sampler.
 */
#include <criterion/criterion.h>

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timeline/proc_sampler.h"

static struct timeline_sample sample_self(unsigned flags)
{
	struct proc_sampler *ps = NULL;
	struct timeline_sample s;

	cr_assert_eq(proc_sampler_open(getpid(), flags, &ps), 0);
	cr_assert_eq(proc_sampler_pid(ps), getpid());
	cr_assert_eq(proc_sampler_sample(ps, &s), 0);
	proc_sampler_free(ps);
	return s;
}

Test(proc_sampler, self_counters_are_plausible)
{
	struct timeline_sample s = sample_self(PROC_SAMPLER_FD_TYPES);

	cr_assert_gt(s.t_realtime_ns, 0);
	cr_assert_gt(s.t_monotonic_ns, 0);
	cr_assert_gt(s.rss_bytes, 0);
	cr_assert_geq(s.rss_anon_bytes, 0);
	cr_assert_geq(s.rss_file_bytes, 0);
	cr_assert_geq(s.vm_size_bytes, s.rss_bytes);
	cr_assert_geq(s.threads, 1);
	cr_assert_geq(s.open_fds, 3);
	cr_assert_eq(s.fds_socket + s.fds_pipe + s.fds_file + s.fds_anon_inode + s.fds_other,
		     s.open_fds);
	cr_assert_gt(s.fd_limit, 0);
	cr_assert_eq(s.child_procs, 0);
	cr_assert_eq(s.zombie_children, 0);
	cr_assert_geq(s.cpu_user_ns, 0);
	cr_assert_geq(s.cpu_sys_ns, 0);
	cr_assert_gt(s.minor_faults, 0);
	cr_assert_geq(s.major_faults, 0);
	cr_assert_geq(s.voluntary_ctxt_switches, 0);
	cr_assert_geq(s.nonvoluntary_ctxt_switches, 0);
	cr_assert_geq(s.io_read_bytes, 0);
	cr_assert_geq(s.io_write_bytes, 0);
	cr_assert_eq(s.goroutines, -1);
	cr_assert_eq(s.heap_live_bytes, -1);
}

Test(proc_sampler, fd_count_and_types_move)
{
	struct proc_sampler *ps = NULL;
	struct timeline_sample a, b, c;
	int pipes[10][2], socks[5][2], efd;

	cr_assert_eq(proc_sampler_open(getpid(), PROC_SAMPLER_FD_TYPES, &ps), 0);
	cr_assert_eq(proc_sampler_sample(ps, &a), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(pipe(pipes[i]), 0);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, socks[i]), 0);
	efd = eventfd(0, 0);
	cr_assert_geq(efd, 0);
	cr_assert_eq(proc_sampler_sample(ps, &b), 0);
	cr_assert_eq(b.open_fds - a.open_fds, 20 + 10 + 1);
	cr_assert_eq(b.fds_pipe - a.fds_pipe, 20);
	cr_assert_eq(b.fds_socket - a.fds_socket, 10);
	cr_assert_eq(b.fds_anon_inode - a.fds_anon_inode, 1);
	cr_assert_eq(b.fds_file, a.fds_file);

	for (int i = 0; i < 10; i++) {
		close(pipes[i][0]);
		close(pipes[i][1]);
	}
	cr_assert_eq(proc_sampler_sample(ps, &c), 0);
	cr_assert_eq(c.open_fds, b.open_fds - 20);
	proc_sampler_free(ps);

	/* Without the flag the count (by fstat size or getdents) agrees, and
	 * the types are unknown, not zero. */
	cr_assert_eq(proc_sampler_open(getpid(), 0, &ps), 0);
	cr_assert_eq(proc_sampler_sample(ps, &a), 0);
	cr_assert_eq(a.open_fds, c.open_fds);
	cr_assert_eq(a.fds_socket, -1);
	cr_assert_eq(a.fds_pipe, -1);
	cr_assert_eq(a.fds_file, -1);
	cr_assert_eq(a.fds_anon_inode, -1);
	cr_assert_eq(a.fds_other, -1);
	proc_sampler_free(ps);
}

static int gate[2] = { -1, -1 };

static void *blocked_thread(void *arg)
{
	char ch;

	(void)arg;
	/* Returns when the gate's write end is closed. */
	while (read(gate[0], &ch, 1) > 0)
		;
	return NULL;
}

Test(proc_sampler, threads_move)
{
	struct proc_sampler *ps = NULL;
	struct timeline_sample a, b, c;
	pthread_t th[5];

	cr_assert_eq(pipe(gate), 0);
	cr_assert_eq(proc_sampler_open(getpid(), 0, &ps), 0);
	cr_assert_eq(proc_sampler_sample(ps, &a), 0);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, blocked_thread, NULL), 0);
	cr_assert_eq(proc_sampler_sample(ps, &b), 0);
	cr_assert_eq(b.threads - a.threads, 5);
	close(gate[1]);
	for (int i = 0; i < 5; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(proc_sampler_sample(ps, &c), 0);
	cr_assert_eq(c.threads, a.threads);
	proc_sampler_free(ps);
}

/* Fork a child that exits at once, and wait until it is a zombie without
 * reaping it (WNOWAIT leaves it waitable). */
static pid_t make_zombie(void)
{
	siginfo_t si;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	return pid;
}

static void *fork_from_thread(void *arg)
{
	pid_t *ret = arg;

	/* The child belongs to this thread, which is how the kernel files it
	 * under task/TID/children. It sleeps until killed. */
	*ret = fork();
	if (*ret == 0) {
		/* Do not hold the gate open for the keeper thread's reader. */
		if (gate[1] >= 0)
			close(gate[1]);
		pause();
		_exit(0);
	}
	return NULL;
}

Test(proc_sampler, children_of_every_thread_and_zombies)
{
	struct proc_sampler *ps = NULL;
	struct timeline_sample a, b, c;
	pid_t z[3], sleeper = -1;
	pthread_t th;

	cr_assert_eq(proc_sampler_open(getpid(), 0, &ps), 0);
	cr_assert_eq(proc_sampler_sample(ps, &a), 0);
	for (int i = 0; i < 3; i++)
		z[i] = make_zombie();
	cr_assert_eq(pthread_create(&th, NULL, fork_from_thread, &sleeper), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_gt(sleeper, 0);

	cr_assert_eq(proc_sampler_sample(ps, &b), 0);
	/* The thread that forked the sleeper has exited; its children were
	 * handed to the main thread (the kernel reparents within the group),
	 * so all four are still counted. */
	cr_assert_eq(b.child_procs - a.child_procs, 4, "child_procs %lld -> %lld",
		     (long long)a.child_procs, (long long)b.child_procs);
	cr_assert_eq(b.zombie_children - a.zombie_children, 3);

	for (int i = 0; i < 3; i++)
		cr_assert_eq(waitpid(z[i], NULL, 0), z[i]);
	kill(sleeper, SIGKILL);
	cr_assert_eq(waitpid(sleeper, NULL, 0), sleeper);
	cr_assert_eq(proc_sampler_sample(ps, &c), 0);
	cr_assert_eq(c.child_procs, a.child_procs);
	cr_assert_eq(c.zombie_children, a.zombie_children);
	proc_sampler_free(ps);
}

Test(proc_sampler, children_of_a_live_non_main_thread)
{
	struct proc_sampler *ps = NULL;
	struct timeline_sample a, b;
	pid_t child = -1;

	/* fork_from_thread returns at once, so instead fork from a thread we
	 * keep alive: the child is listed under that thread's tid only. */
	cr_assert_eq(pipe(gate), 0);
	cr_assert_eq(proc_sampler_open(getpid(), 0, &ps), 0);
	cr_assert_eq(proc_sampler_sample(ps, &a), 0);
	{
		pthread_t th, keeper;

		cr_assert_eq(pthread_create(&keeper, NULL, blocked_thread, NULL), 0);
		cr_assert_eq(pthread_create(&th, NULL, fork_from_thread, &child), 0);
		cr_assert_eq(pthread_join(th, NULL), 0);
		cr_assert_eq(proc_sampler_sample(ps, &b), 0);
		cr_assert_eq(b.child_procs - a.child_procs, 1);
		close(gate[1]);
		pthread_join(keeper, NULL);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	proc_sampler_free(ps);
}

Test(proc_sampler, missing_pid_is_esrch)
{
	struct proc_sampler *ps = (struct proc_sampler *)0x1;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	/* Reaped: gone (pid reuse within this instant is not a worry). */
	cr_assert_eq(proc_sampler_open(pid, 0, &ps), -ESRCH);
	cr_assert_eq(ps, (struct proc_sampler *)0x1, "ret touched on failure");
	cr_assert_eq(proc_sampler_open(0, 0, &ps), -EINVAL);
	cr_assert_eq(proc_sampler_open(-5, 0, &ps), -EINVAL);
	cr_assert_eq(proc_sampler_open(getpid(), 0x80, &ps), -EINVAL);
	proc_sampler_free(NULL);
}

Test(proc_sampler, exit_under_the_sampler_is_esrch)
{
	struct proc_sampler *ps = NULL;
	struct timeline_sample s, untouched;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	cr_assert_eq(proc_sampler_open(pid, 0, &ps), 0);
	cr_assert_eq(proc_sampler_sample(ps, &s), 0);
	cr_assert_eq(s.threads, 1);

	kill(pid, SIGKILL);
	{
		siginfo_t si;

		cr_assert_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	}
	/* A zombie: exited, not reaped. */
	memset(&untouched, 0x77, sizeof(untouched));
	s = untouched;
	cr_assert_eq(proc_sampler_sample(ps, &s), -ESRCH);
	cr_assert_eq(memcmp(&s, &untouched, sizeof(s)), 0, "ret touched on failure");
	/* Reaped: the open files now fail with ESRCH themselves. */
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_assert_eq(proc_sampler_sample(ps, &s), -ESRCH);
	proc_sampler_free(ps);
}

Test(proc_sampler, comm_with_spaces_and_parens)
{
	struct timeline_sample s;

	/* stat's comm field is "(%s)" with no escaping; a name with ") " in
	 * it would shift every field if parsed from the first ')'. */
	cr_assert_eq(prctl(PR_SET_NAME, "a) b (c) 1 2"), 0);
	s = sample_self(0);
	cr_assert_gt(s.minor_faults, 0);
	cr_assert_geq(s.cpu_user_ns, 0);
	cr_assert_geq(s.cpu_sys_ns, 0);
	cr_assert_geq(s.threads, 1);
}

Test(proc_sampler, kernel_thread_memory_is_unknown_not_zero)
{
	struct proc_sampler *ps = NULL;
	struct timeline_sample s;

	/* kthreadd (pid 2) has no mm: status has no Vm or Rss lines. In a pid
	 * namespace without it, there is nothing to test. */
	if (proc_sampler_open(2, 0, &ps) != 0)
		cr_skip_test("no pid 2 in this pid namespace");
	cr_assert_eq(proc_sampler_sample(ps, &s), 0);
	proc_sampler_free(ps);
	if (s.threads < 0)
		cr_skip_test("pid 2 is not a kernel thread here");
	cr_assert_eq(s.rss_bytes, -1);
	cr_assert_eq(s.rss_anon_bytes, -1);
	cr_assert_eq(s.rss_file_bytes, -1);
	cr_assert_eq(s.vm_size_bytes, -1);
	cr_assert_geq(s.threads, 1);
}

Test(proc_sampler, other_users_process_reads_minus_one)
{
	struct proc_sampler *ps = NULL;
	struct timeline_sample s;
	pid_t target = getppid();

	/* Become nobody (criterion gave us a process of our own) and look at
	 * our parent, which still runs as the original user. Without root the
	 * parent is ours, so find nothing to test. */
	if (geteuid() != 0)
		cr_skip_test("needs root to drop to another uid");
	cr_assert_eq(setresgid(65534, 65534, 65534), 0);
	cr_assert_eq(setresuid(65534, 65534, 65534), 0);
	cr_assert_eq(proc_sampler_open(target, 0, &ps), 0);
	cr_assert_eq(proc_sampler_sample(ps, &s), 0);
	proc_sampler_free(ps);
	cr_assert_gt(s.rss_bytes, 0, "status is world-readable");
	cr_assert_geq(s.minor_faults, 0, "stat is world-readable");
	cr_assert_gt(s.fd_limit, 0, "limits file is world-readable");
	cr_assert_eq(s.open_fds, -1);
	cr_assert_eq(s.io_read_bytes, -1);
	cr_assert_eq(s.io_write_bytes, -1);
}

Test(proc_sampler, counter_names_round_trip)
{
	struct timeline_sample s;
	int64_t v[TIMELINE_COUNTER_COUNT];

	timeline_sample_init(&s);
	for (int c = 0; c < TIMELINE_COUNTER_COUNT; c++) {
		const char *name = timeline_counter_name((enum timeline_counter)c);

		cr_assert_not_null(name);
		cr_assert_eq(timeline_counter_lookup(name), c);
		cr_assert_eq(*timeline_sample_counter(&s, (enum timeline_counter)c), -1);
		*timeline_sample_counter(&s, (enum timeline_counter)c) = 1000 + c;
	}
	cr_assert_eq(s.rss_bytes, 1000 + TIMELINE_RSS_BYTES);
	cr_assert_eq(s.open_fds, 1000 + TIMELINE_OPEN_FDS);
	cr_assert_eq(s.heap_live_bytes, 1000 + TIMELINE_HEAP_LIVE_BYTES);
	timeline_sample_values(&s, v);
	for (int c = 0; c < TIMELINE_COUNTER_COUNT; c++)
		cr_assert_eq(v[c], 1000 + c);
	for (int c = 0; c < TIMELINE_COUNTER_COUNT; c++)
		cr_assert_str_eq(timeline_counter_names()[c],
				 timeline_counter_name((enum timeline_counter)c));
	cr_assert_str_eq(timeline_counter_names()[TIMELINE_OPEN_FDS], "open_fds");
	cr_assert_str_eq(timeline_counter_names()[TIMELINE_FDS_ANON_INODE], "fds_anon_inode");
	cr_assert_eq(timeline_counter_lookup("nope"), -ENOENT);
	cr_assert_null(timeline_counter_name(TIMELINE_COUNTER_COUNT));
	cr_assert_null(timeline_sample_counter(&s, TIMELINE_COUNTER_COUNT));
}

Test(proc_sampler, json_line)
{
	struct timeline_sample s;
	char buf[TIMELINE_JSON_MAX];
	cJSON *j, *fbt;
	int n;

	timeline_sample_init(&s);
	/* 2026-11-30T06:12:01.123Z */
	s.t_realtime_ns = 1796019121123456789LL;
	s.rss_bytes = 123456789012LL;
	s.open_fds = 42;
	s.fds_socket = 3;
	s.fds_other = 0;
	n = timeline_sample_format_json(&s, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq((size_t)n, strlen(buf));
	cr_assert_eq(buf[n - 1], '\n');
	cr_assert_null(memchr(buf, '\n', (size_t)n - 1), "one line");
	cr_assert(strncmp(buf, "{\"t\":\"2026-11-30T06:12:01.123Z\",\"rss_bytes\":123456789012,", 57) == 0,
		  "%s", buf);

	j = cJSON_Parse(buf);
	cr_assert_not_null(j, "not JSON: %s", buf);
	cr_assert_eq(cJSON_GetObjectItem(j, "open_fds")->valuedouble, 42);
	cr_assert_eq(cJSON_GetObjectItem(j, "threads")->valuedouble, -1);
	cr_assert_eq(cJSON_GetObjectItem(j, "goroutines")->valuedouble, -1);
	cr_assert_eq(cJSON_GetObjectItem(j, "io_write_bytes")->valuedouble, -1);
	cr_assert_null(cJSON_GetObjectItem(j, "fds_socket"));
	fbt = cJSON_GetObjectItem(j, "fds_by_type");
	cr_assert(cJSON_IsObject(fbt));
	cr_assert_eq(cJSON_GetObjectItem(fbt, "socket")->valuedouble, 3);
	cr_assert_eq(cJSON_GetObjectItem(fbt, "pipe")->valuedouble, -1);
	cr_assert_eq(cJSON_GetObjectItem(fbt, "other")->valuedouble, 0);
	cr_assert_eq(cJSON_GetArraySize(j), TIMELINE_COUNTER_COUNT + 1 - 4);
	cJSON_Delete(j);

	/* Too small: -ENOSPC, never a partial line reported as written. */
	cr_assert_eq(timeline_sample_format_json(&s, buf, 40), -ENOSPC);
	cr_assert_eq(timeline_sample_format_json(&s, buf, 0), -ENOSPC);
	cr_assert_eq(timeline_sample_format_json(&s, buf, (size_t)n), -ENOSPC);
	cr_assert_eq(timeline_sample_format_json(&s, buf, (size_t)n + 1), n);
}

Test(proc_sampler, json_of_a_real_sample_parses)
{
	struct timeline_sample s = sample_self(PROC_SAMPLER_FD_TYPES);
	char buf[TIMELINE_JSON_MAX];
	cJSON *j;

	cr_assert_gt(timeline_sample_format_json(&s, buf, sizeof(buf)), 0);
	j = cJSON_Parse(buf);
	cr_assert_not_null(j, "%s", buf);
	cr_assert_eq((int64_t)cJSON_GetObjectItem(j, "open_fds")->valuedouble, s.open_fds);
	cJSON_Delete(j);
}

static void *sleep_forever(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

Test(proc_sampler, leader_exited_but_threads_run_is_not_gone)
{
	struct proc_sampler *ps = NULL;
	struct timeline_sample s;
	int ready[2];
	char ch;
	pid_t pid;

	cr_assert_eq(pipe(ready), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pthread_t th;

		pthread_create(&th, NULL, sleep_forever, NULL);
		(void)!write(ready[1], "r", 1);
		pthread_exit(NULL); /* the leader becomes a zombie */
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &ch, 1), 1);
	cr_assert_eq(proc_sampler_open(pid, 0, &ps), 0);
	/* Wait for the leader to be a zombie (its exit is asynchronous). */
	bool zombie = false;
	for (int i = 0; i < 500 && !zombie; i++) {
		char path[64], buf[512];
		FILE *f;
		char *p = NULL;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f))
			p = strrchr(buf, ')');
		if (f)
			fclose(f);
		zombie = p && p[2] == 'Z';
		if (!zombie)
			usleep(10000);
	}
	cr_assert(zombie, "the leader never showed as a zombie");
	cr_assert_eq(proc_sampler_sample(ps, &s), 0);
	cr_assert_geq(s.threads, 1);

	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_assert_eq(proc_sampler_sample(ps, &s), -ESRCH);
	proc_sampler_free(ps);
}

/* vfork: a thousand page-table copies of a sanitized test binary are what
 * made this slow, and the child only exits. Its own function so the
 * caller's locals are not live across vfork. */
static pid_t spawn_exiting_child(void)
{
	pid_t pid = vfork();

	if (pid == 0)
		_exit(0);
	return pid;
}

Test(proc_sampler, children_list_longer_than_one_read)
{
	/* The kernel hands task/TID/children out about a page per read, and
	 * 1000 pids of 4-7 digits are 5-8 KB: numbers split across reads must
	 * be put together, and a short read is not the end. */
	enum { N = 1000 };
	static pid_t kids[N];
	struct proc_sampler *ps = NULL;
	struct timeline_sample s;
	int made = 0;

	for (; made < N; made++) {
		siginfo_t si;

		kids[made] = spawn_exiting_child();
		if (kids[made] < 0)
			break;
		cr_assert_eq(waitid(P_PID, (id_t)kids[made], &si, WEXITED | WNOWAIT), 0);
	}
	if (made < N / 2)
		cr_skip_test("could fork only %d children", made);
	cr_assert_eq(proc_sampler_open(getpid(), 0, &ps), 0);
	cr_assert_eq(proc_sampler_sample(ps, &s), 0);
	cr_assert_eq(s.child_procs, made);
	cr_assert_eq(s.zombie_children, made);
	proc_sampler_free(ps);
	for (int i = 0; i < made; i++)
		waitpid(kids[i], NULL, 0);
}
