/*
 * diag-attach dump against a real program (Debian's redis-server with
 * four I/O threads, so that groups of identical stacks exist), checked
 * against the same process's --snapshot bundle (every thread, the same
 * frames) and its --json against its text. The target is idle between the
 * runs, so its threads rest at the same PCs.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define MAX_THREADS 64
#define MAX_FRAMES 128

/* One thread's frames: their addresses, an inline chain's repeats folded
 * into one, as both outputs print one line per inline frame. */
struct thread_frames {
	long tid;
	unsigned long long addr[MAX_FRAMES];
	size_t n;
};

static void add_addr(struct thread_frames *t, unsigned long long a)
{
	if (t->n && t->addr[t->n - 1] == a)
		return;
	cr_assert_lt(t->n, MAX_FRAMES);
	t->addr[t->n++] = a;
}

static struct thread_frames *find_tid(struct thread_frames *ts, size_t n, long tid)
{
	for (size_t i = 0; i < n; i++)
		if (ts[i].tid == tid)
			return &ts[i];
	return NULL;
}

/* threads.txt: "Thread TID ..." then "#N 0xADDR ..." lines. */
static size_t frames_of_threads_txt(const char *text, struct thread_frames *out)
{
	size_t n = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		long tid;
		unsigned long long a;
		if (sscanf(l, "Thread %ld ", &tid) == 1) {
			cr_assert_lt(n, MAX_THREADS);
			out[n++] = (struct thread_frames){.tid = tid};
		} else if (n && sscanf(l, "#%*u 0x%llx", &a) == 1) {
			add_addr(&out[n - 1], a);
		}
	}
	return n;
}

/* The dump's text: "N threads:" then a "    TID "comm" ..." line per
 * member, then the group's frames, which every member has. */
static size_t frames_of_dump_text(const char *text, struct thread_frames *out, size_t *ngroups)
{
	size_t n = 0, first_of_group = 0;
	*ngroups = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		long tid;
		unsigned long long a;
		char *rest;
		strtol(l, &rest, 10);
		if (*l >= '0' && *l <= '9' && (strncmp(rest, " thread:\n", 9) == 0 || strncmp(rest, " threads:\n", 10) == 0)) {
			first_of_group = n;
			(*ngroups)++;
		} else if (strncmp(l, "    ", 4) == 0 && sscanf(l, " %ld \"", &tid) == 1) {
			cr_assert_lt(n, MAX_THREADS);
			out[n++] = (struct thread_frames){.tid = tid};
		} else if (sscanf(l, "#%*u 0x%llx", &a) == 1) {
			for (size_t i = first_of_group; i < n; i++)
				add_addr(&out[i], a);
		}
	}
	return n;
}

static size_t frames_of_dump_json(const cJSON *doc, struct thread_frames *out)
{
	size_t n = 0;
	const cJSON *g;
	cJSON_ArrayForEach(g, cJSON_GetObjectItem(doc, "groups"))
	{
		size_t first = n;
		const cJSON *t;
		cJSON_ArrayForEach(t, cJSON_GetObjectItem(g, "threads"))
		{
			cr_assert_lt(n, MAX_THREADS);
			out[n++] = (struct thread_frames){
				.tid = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(t, "tid"))};
		}
		cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(g, "count")), (double)(n - first),
			     "a group's count is not its number of threads");
		const cJSON *f;
		cJSON_ArrayForEach(f, cJSON_GetObjectItem(g, "frames"))
		{
			const char *a = cJSON_GetStringValue(cJSON_GetObjectItem(f, "address"));
			cr_assert(a, "a frame without an address");
			for (size_t i = first; i < n; i++)
				add_addr(&out[i], strtoull(a, NULL, 16));
		}
	}
	return n;
}

static size_t task_count(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	cr_assert(d);
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Every thread of want is in got, once, with the same frames. */
static void expect_same_threads(const char *what, const struct thread_frames *want, size_t nwant,
				struct thread_frames *got, size_t ngot)
{
	cr_expect_eq(ngot, nwant, "%s: %zu threads, the snapshot has %zu", what, ngot, nwant);
	for (size_t i = 0; i < nwant; i++) {
		const struct thread_frames *g = find_tid(got, ngot, want[i].tid);
		cr_expect(g, "%s: thread %ld missing", what, want[i].tid);
		if (!g)
			continue;
		cr_expect(g->n == want[i].n && memcmp(g->addr, want[i].addr, g->n * sizeof(g->addr[0])) == 0,
			  "%s: thread %ld has %zu frames, not the snapshot's %zu (or other addresses)", what,
			  want[i].tid, g->n, want[i].n);
	}
}

struct redis {
	struct target t;
	char dir[256], pid[16];
};

static void redis_start(struct redis *r)
{
	if (access("/usr/bin/redis-server", X_OK) != 0)
		cr_skip_test("no /usr/bin/redis-server");
	make_tmpdir(r->dir, sizeof(r->dir));
	char sock[300], line[512];
	snprintf(sock, sizeof(sock), "%s/redis.sock", r->dir);
	const char *argv[] = {"/usr/bin/redis-server", "--port", "0", "--unixsocket", sock, "--save", "",
			      "--appendonly", "no", "--io-threads", "4", "--dir", r->dir, NULL};
	r->t = target_start(argv, NULL);
	wait_for_line(r->t.stdout_fd, "ready to accept connections", line, sizeof(line));
	sleep_ms(200);
	snprintf(r->pid, sizeof(r->pid), "%d", (int)r->t.pid);
}

static void redis_stop(struct redis *r)
{
	target_kill(&r->t);
	rm_rf(r->dir);
}

Test(dump, text_and_json_match_the_snapshot, .timeout = 120)
{
	struct redis rd;
	redis_start(&rd);
	size_t ntasks = task_count(rd.t.pid);

	char bundle[400];
	snprintf(bundle, sizeof(bundle), "%s/snap", rd.dir);
	struct tool_result r;
	const char *snap[] = {"-p", rd.pid, "--snapshot", "-q", "-o", bundle, NULL};
	tool_run_ok(&r, snap);
	char *txt = read_in(bundle, "threads.txt");
	cr_assert(txt);
	static struct thread_frames want[MAX_THREADS], got[MAX_THREADS];
	size_t nwant = frames_of_threads_txt(txt, want);
	cr_expect_eq(nwant, ntasks, "the snapshot has %zu threads, /proc %zu", nwant, ntasks);

	/* Text: every thread once, with the snapshot's frames; the biggest
	 * group (redis's three idle I/O threads, or its bio threads) first. */
	const char *text[] = {"dump", "-p", rd.pid, NULL};
	tool_run_ok(&r, text);
	cr_expect(strncmp(r.out, "Process ", 8) == 0, "dump text starts: %.200s", r.out);
	size_t ngroups;
	size_t ngot = frames_of_dump_text(r.out, got, &ngroups);
	expect_same_threads("dump text", want, nwant, got, ngot);
	cr_expect_lt(ngroups, ngot, "no two threads grouped (%zu groups, %zu threads):\n%s", ngroups, ngot, r.out);
	long first_count = atol(strstr(r.out, "\n\n") + 2);
	cr_expect_geq(first_count, 3, "the first group has %ld threads, not the biggest:\n%s",
		      first_count, r.out);
	cr_expect(strstr(r.out, "epoll_wait"), "the main loop's epoll_wait not shown:\n%s", r.out);
	cr_expect(strstr(r.out, "aeMain"), "redis's aeMain not named:\n%s", r.out);
	char text_copy[sizeof(r.out)];
	memcpy(text_copy, r.out, sizeof(r.out));

	/* JSON: parses, counts add up, the same threads and frames as the
	 * snapshot, and the same groups in the same order as the text. */
	const char *json[] = {"dump", "-p", rd.pid, "--json", NULL};
	tool_run_ok(&r, json);
	cJSON *doc = cJSON_Parse(r.out);
	cr_assert(doc, "dump --json is not JSON:\n%.500s", r.out);
	cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(doc, "pid")), (double)rd.t.pid);
	cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(doc, "threads")), (double)ntasks);
	cr_expect_eq((size_t)cJSON_GetArraySize(cJSON_GetObjectItem(doc, "groups")), ngroups,
		     "JSON and text group differently");
	ngot = frames_of_dump_json(doc, got);
	expect_same_threads("dump --json", want, nwant, got, ngot);
	/* Group k of the JSON is group k of the text: its first thread's
	 * tid heads the same block. */
	const cJSON *g;
	const char *at = text_copy;
	cJSON_ArrayForEach(g, cJSON_GetObjectItem(doc, "groups"))
	{
		const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(g, "threads"), 0);
		char head[64];
		snprintf(head, sizeof(head), "thread%s:\n    %.0f \"",
			 cJSON_GetNumberValue(cJSON_GetObjectItem(g, "count")) == 1 ? "" : "s",
			 cJSON_GetNumberValue(cJSON_GetObjectItem(t0, "tid")));
		const char *next = strstr(at, head);
		cr_expect(next, "JSON group of thread %.0f is not next in the text",
			  cJSON_GetNumberValue(cJSON_GetObjectItem(t0, "tid")));
		if (next)
			at = next + 1;
		const cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(g, "frames"), 0);
		const char *fn = cJSON_GetStringValue(cJSON_GetObjectItem(f0, "function"));
		if (fn)
			cr_expect(strstr(text_copy, fn), "JSON names %s, the text does not", fn);
	}
	cJSON_Delete(doc);
	free(txt);
	redis_stop(&rd);
}

/* No bundle without -o (nothing new in the working directory); with -o a
 * verified bundle, the dump still on stdout. */
Test(dump, bundle_only_with_output, .timeout = 120)
{
	struct redis rd;
	redis_start(&rd);
	char cwd[1024];
	cr_assert(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(chdir(rd.dir), 0);
	struct tool_result r;
	const char *plain[] = {"dump", "-p", rd.pid, "--symbols", "names", NULL};
	tool_run_ok(&r, plain);
	DIR *d = opendir(".");
	struct dirent *e;
	while ((e = readdir(d)))
		cr_expect(strncmp(e->d_name, "diag-", 5) != 0, "dump left %s behind", e->d_name);
	closedir(d);
	/* names: no file:line in any frame */
	cr_expect_null(strstr(r.out, ".c:"), "--symbols names printed a file:line:\n%s", r.out);
	cr_expect(strstr(r.out, "aeMain"), "names mode lost aeMain:\n%s", r.out);
	cr_assert_eq(chdir(cwd), 0);

	char bundle[400];
	snprintf(bundle, sizeof(bundle), "%s/b", rd.dir);
	const char *with[] = {"dump", "-p", rd.pid, "-o", bundle, NULL};
	tool_run_ok(&r, with);
	cr_expect(strncmp(r.out, "Process ", 8) == 0, "stdout is not the dump: %.200s", r.out);
	cr_expect(strstr(r.err, bundle), "stderr does not name the bundle: %s", r.err);
	expect_verified(bundle, "dump -o");
	redis_stop(&rd);
}

/* Sampling options are refused, not ignored; a failed print is an error. */
Test(dump, bad_input, .timeout = 60)
{
	struct redis rd;
	redis_start(&rd);
	struct tool_result r;
	const char *dur[] = {"dump", "-p", rd.pid, "-d", "5", NULL};
	tool_run(&r, dur);
	cr_expect_eq(r.exit_code, 2, "dump -d: exit %d", r.exit_code);
	cr_expect(strstr(r.err, "--duration"), "dump -d: %s", r.err);
	const char *later[] = {"dump", "-p", rd.pid, "--unwind-later", "0", NULL};
	tool_run(&r, later);
	cr_expect_eq(r.exit_code, 2, "dump --unwind-later: exit %d", r.exit_code);
	cr_expect(strstr(r.err, "--unwind-later"), "dump --unwind-later: %s", r.err);
	const char *json_capture[] = {"-p", rd.pid, "--json", NULL};
	tool_run(&r, json_capture);
	cr_expect_eq(r.exit_code, 2, "capture --json: exit %d", r.exit_code);
	const char *none[] = {"dump", NULL};
	tool_run(&r, none);
	cr_expect_eq(r.exit_code, 2, "dump without -p: exit %d", r.exit_code);

	char cmd[512], out[512];
	snprintf(cmd, sizeof(cmd), "%s dump -p %s 2>&1 >/dev/full; echo \"rc=$?\"", getenv("DIAG_ATTACH"),
		 rd.pid);
	shell_output(cmd, out, sizeof(out));
	cr_expect(strstr(out, "rc=10"), "dump to /dev/full: %s", out);
	cr_expect(strstr(out, "cannot print the dump"), "dump to /dev/full: %s", out);
	cr_expect(target_healthy(rd.t.pid, false, out, sizeof(out)), "target after the dumps: %s", out);
	redis_stop(&rd);
}
