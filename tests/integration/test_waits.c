/*
 * Who waits on whom (issue 55): glibc mutexes of every kind, rwlocks,
 * condition variables, semaphores and pthread_join in the waits fixture,
 * each owner checked against gdb's reading of the same lock (and against
 * the program's own account of which thread took which lock); a deadlock
 * printed first, before any stack, in dump, dump --json and threads.txt;
 * also with both cores kept busy. Real programs: a shell pipeline's other
 * end, and redis-cli's blocked read of its socket against ss.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* The fixture's "TRUTH k=v ..." line, after "ready". */
struct truth {
	char line[1024];
};

static struct target start_waits(const char *mode, struct truth *tr)
{
	const char *args[] = {mode, NULL};
	struct target t = target_start_args("waits", args, "ready");
	wait_for_line(t.stdout_fd, "TRUTH", tr->line, sizeof(tr->line));
	return t;
}

static long truth_of(const struct truth *tr, const char *key)
{
	char needle[64];
	snprintf(needle, sizeof(needle), " %s=", key);
	const char *p = strstr(tr->line, needle);
	cr_assert(p, "the fixture said nothing of %s: %s", key, tr->line);
	return atol(p + strlen(needle));
}

static bool have_gdb(void)
{
	return access("/usr/bin/gdb", X_OK) == 0;
}

/* gdb's value of expr in pid (it attaches, prints, detaches). */
static long gdb_value(pid_t pid, const char *expr)
{
	char cmd[512], out[8192];
	snprintf(cmd, sizeof(cmd), "gdb -nx -p %d -batch -ex 'p %s' 2>/dev/null | grep '^\\$1 = '",
		 (int)pid, expr);
	cr_assert_eq(shell_output(cmd, out, sizeof(out)), 0, "gdb printed no value of %s", expr);
	return atol(out + 5);
}

static cJSON *dump_json(pid_t pid)
{
	static struct tool_result r;
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	const char *args[] = {"dump", "-p", p, "--json", NULL};
	tool_run(&r, args);
	cr_assert_eq(r.exit_code, 0, "dump --json: %s", r.err);
	cJSON *d = cJSON_Parse(r.out);
	cr_assert(d, "dump --json printed no JSON");
	return d;
}

static void dump_text(pid_t pid, struct tool_result *r)
{
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	const char *args[] = {"dump", "-p", p, NULL};
	tool_run(r, args);
	cr_assert_eq(r->exit_code, 0, "dump: %s", r->err);
}

/* The thread tid's object in a dump --json. */
static const cJSON *json_thread(const cJSON *d, long tid)
{
	const cJSON *g, *t;
	cJSON_ArrayForEach(g, cJSON_GetObjectItem(d, "groups"))
		cJSON_ArrayForEach(t, cJSON_GetObjectItem(g, "threads"))
			if ((long)cJSON_GetNumberValue(cJSON_GetObjectItem(t, "tid")) == tid)
				return t;
	cr_assert_fail("thread %ld is not in the dump", tid);
	return NULL;
}

static const cJSON *waits_for(const cJSON *d, long tid)
{
	const cJSON *w = cJSON_GetObjectItem(json_thread(d, tid), "waits_for");
	cr_assert(w, "thread %ld waits for nothing in the dump", tid);
	return w;
}

static void expect_wait(const cJSON *d, long tid, const char *kind, const char *name, long owner)
{
	const cJSON *w = waits_for(d, tid);
	const char *k = cJSON_GetStringValue(cJSON_GetObjectItem(w, "kind"));
	cr_assert(k && strcmp(k, kind) == 0, "thread %ld waits for %s, not %s", tid, k ? k : "?", kind);
	if (name) {
		const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(w, "name"));
		cr_assert(n && strcmp(n, name) == 0, "thread %ld's %s is named %s, not %s", tid, kind,
			  n ? n : "nothing", name);
	}
	long got = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(w, "owner_tid"));
	cr_assert_eq(got, owner, "thread %ld's %s: owner %ld, the truth is %ld (%s)", tid, kind, got, owner,
		     cJSON_GetStringValue(cJSON_GetObjectItem(w, "owner_unknown")) ?: "");
}

/* Threads of pid named comm, in tid order. */
static size_t threads_named(pid_t pid, const char *comm, long *out, size_t max)
{
	char cmd[256], buf[4096];
	snprintf(cmd, sizeof(cmd), "grep -lx '%s' /proc/%d/task/*/comm | cut -d/ -f5 | sort -n", comm,
		 (int)pid);
	shell_output(cmd, buf, sizeof(buf));
	size_t n = 0;
	for (char *p = strtok(buf, "\n"); p && n < max; p = strtok(NULL, "\n"))
		out[n++] = atol(p);
	return n;
}

static void check_deadlock(void)
{
	struct truth tr;
	struct target t = start_waits("deadlock", &tr);
	long t1 = truth_of(&tr, "t1"), t2 = truth_of(&tr, "t2");
	struct tool_result *r = malloc(sizeof(*r));
	dump_text(t.pid, r);
	char want[256];
	snprintf(want, sizeof(want),
		 "DEADLOCK: thread %ld (t1) waits for mutex lock_b (0x", t1);
	const char *at = strstr(r->out, want);
	cr_assert(at, "no deadlock line naming t1 and lock_b:\n%s", r->out);
	cr_assert(at < strstr(r->out, "#0 "), "the deadlock is not printed before the stacks");
	snprintf(want, sizeof(want), "held by %ld (t2), which waits for mutex lock_a (0x", t2);
	cr_assert(strstr(at, want), "the deadlock line does not go on to t2 and lock_a:\n%s", r->out);
	snprintf(want, sizeof(want), "held by %ld (t1)\n", t1);
	cr_assert(strstr(at, want), "the cycle does not close on t1:\n%s", r->out);

	cJSON *d = dump_json(t.pid);
	const cJSON *dl = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "deadlocks"), 0);
	cr_assert(dl, "dump --json has no deadlock");
	const cJSON *tids = cJSON_GetObjectItem(dl, "threads");
	cr_assert_eq(cJSON_GetArraySize(tids), 2);
	expect_wait(d, t1, "mutex", "lock_b", t2);
	expect_wait(d, t2, "mutex", "lock_a", t1);
	if (have_gdb()) {
		cr_assert_eq(gdb_value(t.pid, "lock_a.__data.__owner"), t1, "gdb reads another owner of lock_a");
		cr_assert_eq(gdb_value(t.pid, "lock_b.__data.__owner"), t2, "gdb reads another owner of lock_b");
	}
	cJSON_Delete(d);
	free(r);
	target_kill(&t);
}

Test(waits, a_deadlock_is_printed_first_with_owners_as_gdb_reads_them)
{
	check_deadlock();
	if (!have_gdb())
		cr_log_warn("gdb absent: owners checked against the program's own account only");
}

Test(waits, a_deadlock_on_a_machine_kept_busy)
{
	pid_t load[2];
	loaders_start(load);
	check_deadlock();
	loaders_stop(load);
}

Test(waits, a_convoy_names_the_holder_its_pipe_and_how_long_it_slept)
{
	struct truth tr;
	struct target t = start_waits("convoy", &tr);
	long holder = truth_of(&tr, "holder"), fd = truth_of(&tr, "holder_fd");
	long main_tid = truth_of(&tr, "main"), write_fd = truth_of(&tr, "pipe_write_fd");
	long asleep_ms = truth_of(&tr, "holder_asleep_ms");
	struct steal_mark steal;
	steal_mark(&steal);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	long before_ms = ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	cJSON *d = dump_json(t.pid);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	long after_ms = ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	long waiters[3];
	cr_assert_eq(threads_named(t.pid, "waiter", waiters, 3), 3);
	for (int i = 0; i < 3; i++)
		expect_wait(d, waiters[i], "mutex", "cfg_lock", holder);
	const cJSON *hw = waits_for(d, holder);
	cr_assert_eq((long)cJSON_GetNumberValue(cJSON_GetObjectItem(hw, "fd")), fd);
	/* A lower bound of the time since it went to sleep (this is the
	 * first stop it sees): never more than that, and (the host stealing
	 * little) not far below it. */
	double not_run = cJSON_GetNumberValue(cJSON_GetObjectItem(json_thread(d, holder), "not_run_for_ms"));
	cr_assert(not_run == not_run, "no not_run_for_ms for the holder");
	cr_assert_leq(not_run, after_ms - asleep_ms + 5, "not run for %.0f ms, but asleep only %ld ms", not_run,
		      after_ms - asleep_ms);
	double share = steal_share_since(&steal);
	if (share <= STEAL_SKIP_SHARE)
		cr_assert_geq(not_run, 0.5 * (double)(before_ms - asleep_ms) - 50,
			      "not run for %.0f ms, asleep since %ld ms",
			      not_run, before_ms - asleep_ms);
	struct tool_result *r = malloc(sizeof(*r));
	dump_text(t.pid, r);
	char want[256];
	snprintf(want, sizeof(want), "3 threads wait for mutex cfg_lock (0x");
	cr_assert(strstr(r->out, want), "no line for the three waiters:\n%s", r->out);
	snprintf(want, sizeof(want),
		 "held by %ld (holder), which has not run for >= ", holder);
	cr_assert(strstr(r->out, want), "the holder is not named with its time:\n%s", r->out);
	snprintf(want, sizeof(want),
		 "waits for read on fd %ld: pipe, read end; other end held by pid %ld (waits) fd %ld",
		 fd, main_tid, write_fd);
	cr_assert(strstr(r->out, want), "the holder's read is not resolved to the pipe (%s):\n%s", want,
		  r->out);

	if (have_gdb())
		cr_assert_eq(gdb_value(t.pid, "cfg_lock.__data.__owner"), holder);
	cJSON_Delete(d);
	free(r);
	target_kill(&t);
}

Test(waits, rwlocks_name_the_writer_or_count_the_readers)
{
	struct truth tr;
	struct target t = start_waits("rwlock", &tr);
	long writer = truth_of(&tr, "writer"), reader, wwaiter;
	cr_assert_eq(threads_named(t.pid, "reader", &reader, 1), 1);
	cr_assert_eq(threads_named(t.pid, "wwaiter", &wwaiter, 1), 1);
	cJSON *d = dump_json(t.pid);
	expect_wait(d, reader, "rwlock_read", "rw_w", writer);
	const cJSON *w = waits_for(d, wwaiter);
	cr_assert_eq((long)cJSON_GetNumberValue(cJSON_GetObjectItem(w, "held_by_readers")), 2,
		     "rw_r is held by two readers");
	if (have_gdb()) {
		cr_assert_eq(gdb_value(t.pid, "rw_w.__data.__cur_writer"), writer);
		cr_assert_eq(gdb_value(t.pid, "rw_r.__data.__readers >> 3"), 2);
	}
	cJSON_Delete(d);
	target_kill(&t);
}

Test(waits, every_mutex_kind_a_condvar_a_semaphore_and_a_join)
{
	struct truth tr;
	struct target t = start_waits("kinds", &tr);
	cJSON *d = dump_json(t.pid);
	static const char *const kinds[] = {"recursive", "errorcheck", "pi", "robust"};
	for (int i = 0; i < 4; i++) {
		char key[32], comm[32], var[32], expr[96];
		snprintf(key, sizeof(key), "own_%s", kinds[i]);
		snprintf(comm, sizeof(comm), "wait-%s", kinds[i]);
		snprintf(var, sizeof(var), "m_%s", kinds[i]);
		long owner = truth_of(&tr, key), waiter;
		cr_assert_eq(threads_named(t.pid, comm, &waiter, 1), 1);
		expect_wait(d, waiter, "mutex", var, owner);
		if (have_gdb()) {
			/* PI and robust mutexes keep the owner in the lock word. */
			if (i >= 2)
				snprintf(expr, sizeof(expr), "%s.__data.__lock & 0x3fffffff", var);
			else
				snprintf(expr, sizeof(expr), "%s.__data.__owner", var);
			cr_assert_eq(gdb_value(t.pid, expr), owner, "gdb: %s", expr);
		}
	}
	long cond = truth_of(&tr, "cond"), main_tid = truth_of(&tr, "main"), sem;
	cr_assert_eq(threads_named(t.pid, "sem", &sem, 1), 1);
	const cJSON *w = waits_for(d, cond);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(w, "kind")), "condvar");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(w, "name")), "cv");
	cr_assert_null(cJSON_GetObjectItem(w, "owner_tid"), "a condition variable has no owner");
	w = waits_for(d, sem);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(w, "kind")), "semaphore");
	cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(w, "value")), 0);
	expect_wait(d, main_tid, "thread_exit", NULL, cond);
	cJSON_Delete(d);
	target_kill(&t);
}

Test(waits, a_snapshot_bundle_says_it_in_threads_txt)
{
	struct truth tr;
	struct target t = start_waits("deadlock", &tr);
	char dir[256], p[16];
	make_tmpdir(dir, sizeof(dir));
	snprintf(p, sizeof(p), "%d", (int)t.pid);
	char out[300];
	snprintf(out, sizeof(out), "%s/b", dir);
	const char *args[] = {"-p", p, "--snapshot", "-q", "-o", out, NULL};
	struct tool_result *r = malloc(sizeof(*r));
	tool_run_ok(r, args);
	char *txt = read_in(out, "threads.txt");
	char want[128];
	snprintf(want, sizeof(want), "DEADLOCK: thread %ld (t1) waits for mutex lock_b", truth_of(&tr, "t1"));
	cr_assert(strstr(txt, want), "threads.txt has no deadlock line:\n%s", txt);
	cr_assert(strstr(txt, "    waits for mutex lock_a"), "threads.txt has no per-thread wait");
	free(txt);
	/* report reads it back: the deadlock before the groups, each
	 * group's wait. */
	const char *rargs[] = {"report", "--json", out, NULL};
	tool_run_ok(r, rargs);
	cJSON *rep = cJSON_Parse(r->out);
	cr_assert(rep, "report --json printed no JSON");
	const char *first = cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "waits"), 0));
	cr_assert(first && strstr(first, want), "report's waits do not begin with the deadlock: %s",
		  first ? first : "(none)");
	const cJSON *g;
	size_t with_waits = 0;
	cJSON_ArrayForEach(g, cJSON_GetObjectItem(rep, "thread_groups"))
		with_waits += cJSON_GetObjectItem(g, "waits") != NULL;
	cr_assert_geq(with_waits, 2, "report's groups do not carry t1's and t2's waits");
	cJSON_Delete(rep);
	const char *targs[] = {"report", out, NULL};
	tool_run_ok(r, targs);
	cr_assert(strstr(r->out, want), "the text report has no deadlock line:\n%s", r->out);
	free(r);
	rm_rf(dir);
	target_kill(&t);
}

/* A pipeline nobody here wrote: `sleep | cat`. cat's read of its stdin is
 * a pipe whose other end sleep holds as its stdout. */
Test(waits, a_pipelines_other_end_is_the_other_process)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t sleeper = fork();
	if (sleeper == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execlp("sleep", "sleep", "600", (char *)NULL);
		_exit(127);
	}
	pid_t cat = fork();
	if (cat == 0) {
		dup2(fds[0], 0);
		close(fds[0]);
		close(fds[1]);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execlp("cat", "cat", (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	close(fds[1]);
	sleep_ms(500);
	struct tool_result *r = malloc(sizeof(*r));
	dump_text(cat, r);
	char want[160];
	snprintf(want, sizeof(want),
		 "waits for read on fd 0: pipe, read end; other end held by pid %d (sleep) fd 1",
		 (int)sleeper);
	cr_assert(strstr(r->out, want), "cat's read is not resolved to sleep's end (%s):\n%s", want, r->out);
	kill(sleeper, SIGKILL);
	kill(cat, SIGKILL);
	waitpid(sleeper, NULL, 0);
	waitpid(cat, NULL, 0);
	free(r);
}

/* redis-cli blocked on a reply (BLPOP): its socket as ss sees it. */
Test(waits, redis_clis_blocked_read_is_the_socket_ss_shows)
{
	if (access("/usr/bin/redis-server", X_OK) != 0 || access("/usr/bin/redis-cli", X_OK) != 0)
		cr_skip_test("no /usr/bin/redis-server or redis-cli (Debian's redis-tools)");
	if (access("/usr/bin/ss", X_OK) != 0 && access("/bin/ss", X_OK) != 0)
		cr_skip_test("no ss (iproute2)");
	char dir[256], line[512];
	make_tmpdir(dir, sizeof(dir));
	const char *srv[] = {"/usr/bin/redis-server", "--port", "6391", "--bind", "127.0.0.1", "--save",
			     "", "--appendonly", "no", "--dir", dir, NULL};
	struct target s = target_start(srv, NULL);
	wait_for_line(s.stdout_fd, "to accept connections", line, sizeof(line));
	const char *cli[] = {"/usr/bin/redis-cli", "-p", "6391", "BLPOP", "diag-nokey", "0", NULL};
	pid_t c = fork();
	if (c == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execv(cli[0], (char *const *)cli);
		_exit(127);
	}
	sleep_ms(700);
	char cmd[256], ss_out[2048];
	snprintf(cmd, sizeof(cmd), "ss -tnpH state established '( dport = :6391 )' | grep 'pid=%d,'", (int)c);
	cr_assert_eq(shell_output(cmd, ss_out, sizeof(ss_out)), 0, "ss shows no connection of redis-cli");
	/* "0 0 127.0.0.1:PORT 127.0.0.1:6391 users:(("redis-cli",pid=N,fd=F))" */
	char local[64], peer[64];
	int fd = -1;
	cr_assert_eq(sscanf(ss_out, "%*s %*s %63s %63s", local, peer), 2, "ss: %s", ss_out);
	const char *f = strstr(ss_out, ",fd=");
	cr_assert(f);
	fd = atoi(f + 4);
	cJSON *d = dump_json(c);
	const cJSON *w = waits_for(d, c);
	cr_assert_eq((long)cJSON_GetNumberValue(cJSON_GetObjectItem(w, "fd")), fd);
	const cJSON *is = cJSON_GetObjectItem(w, "fd_is");
	cr_assert(is, "the socket was not described");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(is, "proto")), "tcp");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(is, "local")), local);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(is, "peer")), peer);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(is, "state")), "ESTABLISHED");
	cJSON_Delete(d);
	/* The server's main thread waits in epoll_wait: its set watches the
	 * listening socket ss names. */
	snprintf(cmd, sizeof(cmd), "ss -tlnpH '( sport = :6391 )' | grep -o 'pid=%d,fd=[0-9]*' | head -1",
		 (int)s.pid);
	cr_assert_eq(shell_output(cmd, ss_out, sizeof(ss_out)), 0, "ss shows no listener of redis-server");
	int listen_fd = atoi(strstr(ss_out, "fd=") + 3);
	d = dump_json(s.pid);
	const cJSON *ew = waits_for(d, s.pid);
	const cJSON *set = cJSON_GetObjectItem(ew, "fd_is");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(set, "is")), "epoll",
			 "redis-server's main thread does not wait on an epoll set");
	bool watched = false;
	const cJSON *wfd;
	cJSON_ArrayForEach(wfd, cJSON_GetObjectItem(set, "watched"))
		watched = watched || (int)cJSON_GetNumberValue(wfd) == listen_fd;
	cr_assert(watched, "the epoll set does not watch the listening fd %d", listen_fd);
	cJSON_Delete(d);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	target_kill(&s);
	rm_rf(dir);
}

/* The same over a unix socket: its peer (sock_diag) is the server's
 * descriptor, as ss -xp pairs them. */
Test(waits, redis_clis_unix_socket_peer_is_the_servers_descriptor)
{
	if (access("/usr/bin/redis-server", X_OK) != 0 || access("/usr/bin/redis-cli", X_OK) != 0)
		cr_skip_test("no /usr/bin/redis-server or redis-cli (Debian's redis-tools)");
	if (access("/usr/bin/ss", X_OK) != 0 && access("/bin/ss", X_OK) != 0)
		cr_skip_test("no ss (iproute2)");
	char dir[256], sock[300], line[512];
	make_tmpdir(dir, sizeof(dir));
	snprintf(sock, sizeof(sock), "%s/r.sock", dir);
	const char *srv[] = {"/usr/bin/redis-server", "--port", "0", "--unixsocket", sock, "--save", "",
			     "--appendonly", "no", "--dir", dir, NULL};
	struct target s = target_start(srv, NULL);
	wait_for_line(s.stdout_fd, "to accept connections", line, sizeof(line));
	const char *cli[] = {"/usr/bin/redis-cli", "-s", sock, "BLPOP", "diag-nokey", "0", NULL};
	pid_t c = fork();
	if (c == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execv(cli[0], (char *const *)cli);
		_exit(127);
	}
	sleep_ms(700);
	/* ss: the server's line names the client's inode as its peer. */
	char cmd[512], ss_out[2048];
	snprintf(cmd, sizeof(cmd),
		 "ss -xpH | awk '/pid=%d,/ {print $6}' | while read ino; do ss -xpH | awk -v i=$ino "
		 "'$8 == i && /pid=%d,/ {print $0}'; done",
		 (int)c, (int)s.pid);
	cr_assert_eq(shell_output(cmd, ss_out, sizeof(ss_out)), 0);
	const char *f = strstr(ss_out, ",fd=");
	cr_assert(f, "ss pairs no server descriptor with redis-cli's socket: %s", ss_out);
	int server_fd = atoi(f + 4);
	cJSON *d = dump_json(c);
	const cJSON *is = cJSON_GetObjectItem(waits_for(d, c), "fd_is");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(is, "proto")), "unix");
	const cJSON *held = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(is, "peer"), "held_by"), 0);
	cr_assert(held, "no holder of the peer");
	cr_assert_eq((long)cJSON_GetNumberValue(cJSON_GetObjectItem(held, "pid")), (long)s.pid);
	cr_assert_eq((long)cJSON_GetNumberValue(cJSON_GetObjectItem(held, "fd")), server_fd);
	cJSON_Delete(d);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	target_kill(&s);
	rm_rf(dir);
}

/* A sleep that a first dump's stop interrupted continues in
 * restart_syscall: the second dump names that call and the function it
 * continues (issue 52's "in 219  wchan do_syscall_64"), and the time since
 * it last ran starts from the first dump's stop. */
Test(waits, a_sleep_a_stop_restarted_is_named_and_resolved)
{
	const char *argv[] = {"/bin/sh", "-c", "echo ready; exec sleep 600", NULL};
	struct target t = target_start(argv, "ready");
	sleep_ms(300);
	struct tool_result *r = malloc(sizeof(*r));
	dump_text(t.pid, r);
	cr_assert(strstr(r->out, "in clock_nanosleep") && strstr(r->out, "waits for the end of a sleep of 10m00s"),
		  "the first dump does not name the sleep:\n%s", r->out);
	dump_text(t.pid, r);
	cr_assert(strstr(r->out, "in restart_syscall"), "the second dump does not name restart_syscall:\n%s",
		  r->out);
	cr_assert(strstr(r->out, "waits for the rest of a call a stop interrupted (restart_syscall, in ") &&
			  strstr(r->out, "clock_nanosleep)"),
		  "restart_syscall is not resolved to the sleep it continues:\n%s", r->out);
	free(r);
	target_kill(&t);
}

/* Never silent: a mutex whose owner field names a thread that exited
 * holding it (gdb's __owner says the same tid) is said to be so, the tid
 * named, in the text and in --json; no owner is made up. */
Test(waits, a_lock_whose_owner_exited_says_owner_unknown_and_why)
{
	struct truth tr;
	struct target t = start_waits("orphan", &tr);
	long quitter = truth_of(&tr, "quitter"), orphaned = truth_of(&tr, "orphaned");
	if (have_gdb())
		cr_expect_eq(gdb_value(t.pid, "lost_lock.__data.__owner"), quitter,
			     "gdb's owner of lost_lock is not the thread that exited");
	cJSON *d = dump_json(t.pid);
	const cJSON *w = waits_for(d, orphaned);
	cr_expect(!cJSON_GetObjectItem(w, "owner_tid"), "an owner was named for a lock its owner left");
	const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(w, "owner_unknown"));
	char want[160];
	snprintf(want, sizeof(want), "names thread %ld, not a thread of this process", quitter);
	cr_expect(why && strstr(why, want), "owner_unknown: %s", why ? why : "(none)");
	cJSON_Delete(d);
	struct tool_result *r = malloc(sizeof(*r));
	cr_assert(r);
	dump_text(t.pid, r);
	cr_expect(strstr(r->out, "owner unknown: the mutex names thread") && strstr(r->out, "lost_lock"),
		  "the text does not say the owner is unknown and why:\n%s", r->out);
	free(r);
	target_kill(&t);
}
