/* SPDX-License-Identifier: MIT */
/*
 * Integration tests for symbolize/go against tests/targets/go/fixture:
 * our snapshot of a stopped Go process must print what the process itself
 * prints for pprof.Lookup("goroutine").WriteTo(w, 2) and (w, 1) right
 * after (recipe §16.3). Expected differences, excluded here:
 *   - goroutine 1: it makes the reference dump ([running] in Go's,
 *     [syscall] reading stdin in ours);
 * Everything else must be byte-identical, argument values included.
 */
#include "goroutines.h"
#include "stopper.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char tmp[65536];
	size_t n;
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		fwrite(tmp, 1, n, m);
	fclose(f);
	fclose(m);
	return buf;
}

static void spit(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(s, f);
		fclose(f);
	}
}

/* Splits a debug=2 dump into blocks "goroutine N [...". */
struct block {
	long goid;
	char *text;
};

static size_t split_blocks(char *s, struct block *out, size_t max)
{
	size_t n = 0;
	char *p = s;
	while (p && *p && n < max) {
		char *next = strstr(p, "\n\ngoroutine ");
		if (next)
			next[1] = 0; /* keep one '\n' ending the block */
		out[n].goid = strtol(p + strlen("goroutine "), NULL, 10);
		out[n].text = p;
		n++;
		p = next ? next + 2 : NULL;
	}
	return n;
}

static const char *outdir(void)
{
	const char *d = getenv("GO_TEST_OUTDIR");
	return d ? d : "/tmp";
}

struct capture_result {
	char *ours2, *ours1, *theirs2, *theirs1;
	struct go_capture_stats stats;
	size_t nsamples;
};

static int count_sample(void *ctx, const struct go_sample *s)
{
	size_t *n = ctx;
	*n += s->count;
	cr_assert(s->nlocs > 0);
	return 0;
}

/* name: distinguishes the files of tests that run in parallel */
static void snapshot_fixture(const char *name, const char *exe, char *const envp[], struct capture_result *res)
{
	char *argv[] = {(char *)exe, NULL};
	struct child c = {0};
	cr_assert_eq(child_spawn(&c, argv, envp), 0, "cannot start %s", exe);
	char path[256];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)c.pid);
	struct go_target *t = NULL;
	int r = go_target_open(c.pid, path, &t);
	cr_assert_eq(r, 0, "go_target_open: %s", strerror(-r));
	cr_assert_str_eq(go_target_version(t), "go1.19.8");
	cr_assert(go_target_can_list_goroutines(t));

	struct stopper st;
	cr_assert_eq(stopper_stop(&st, c.pid), 0);
	struct go_snapshot *s = NULL;
	r = go_capture(t, stopper_read, (void *)(intptr_t)c.pid, st.regs, st.n, NULL, &s);
	stopper_release(&st);
	cr_assert_eq(r, 0, "go_capture: %s", strerror(-r));

	size_t len;
	FILE *m = open_memstream(&res->ours2, &len);
	cr_assert_eq(go_snapshot_write_debug2(s, m), 0);
	fclose(m);
	m = open_memstream(&res->ours1, &len);
	cr_assert_eq(go_snapshot_write_debug1(s, m), 0);
	fclose(m);
	go_snapshot_stats(s, &res->stats);
	res->nsamples = 0;
	cr_assert_eq(go_snapshot_foreach_sample(s, count_sample, &res->nsamples), 0);
	go_snapshot_free(s);

	/* the target keeps running and answering */
	char p2[512], p1[512];
	snprintf(p2, sizeof(p2), "dump2 %s/go-%s-theirs2.txt", outdir(), name);
	snprintf(p1, sizeof(p1), "dump1 %s/go-%s-theirs1.txt", outdir(), name);
	cr_assert_eq(child_cmd(&c, p2 ), 0);
	cr_assert_eq(child_cmd(&c, p1), 0);
	res->theirs2 = slurp(p2 + 6);
	res->theirs1 = slurp(p1 + 6);
	cr_assert(res->theirs2 && res->theirs1);
	char op[512];
	snprintf(op, sizeof(op), "%s/go-%s-ours2.txt", outdir(), name);
	spit(op, res->ours2);
	snprintf(op, sizeof(op), "%s/go-%s-ours1.txt", outdir(), name);
	spit(op, res->ours1);
	cr_assert_eq(child_cmd(&c, "quit"), 0);
	int status;
	waitpid(c.pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fixture did not exit cleanly");
	c.pid = 0;
	child_kill(&c);
	go_target_free(t);
}

Test(go_goroutines, debug2_identical, .timeout = 60)
{
	struct capture_result res;
	char *envp[] = {NULL};
	snapshot_fixture("d2", GO_FIXTURE, envp, &res);
	static struct block ours[4096], theirs[4096];
	size_t no = split_blocks(res.ours2, ours, 4096), nt = split_blocks(res.theirs2, theirs, 4096);
	cr_assert_geq(nt, 30);
	cr_assert_eq(no, nt, "ours has %zu goroutines, Go's %zu", no, nt);
	size_t same = 0;
	for (size_t i = 0; i < nt; i++) {
		if (theirs[i].goid == 1)
			continue;
		bool found = false;
		for (size_t k = 0; k < no; k++) {
			if (ours[k].goid != theirs[i].goid)
				continue;
			found = true;
			cr_expect_str_eq(ours[k].text, theirs[i].text, "goroutine %ld differs", theirs[i].goid);
			same += strcmp(ours[k].text, theirs[i].text) == 0;
		}
		cr_expect(found, "goroutine %ld missing from ours", theirs[i].goid);
	}
	cr_log_info("%zu of %zu goroutine blocks identical", same, nt - 1);
	cr_assert_eq(same, nt - 1);
	cr_assert_eq(res.nsamples, res.stats.user_goroutines);
	/* goroutine 1 is ours too, blocked reading stdin */
	bool main_ok = false;
	for (size_t k = 0; k < no; k++)
		if (ours[k].goid == 1)
			main_ok = strstr(ours[k].text, "goroutine 1 [syscall]:\nsyscall.Syscall(") != NULL &&
				  strstr(ours[k].text, "main.main()") != NULL;
	cr_assert(main_ok, "goroutine 1 should be [syscall] in read from stdin");
}

/* debug=1 records: "count @ pcs\n[# labels: ...\n]#\t...\n\n" */
static size_t split_records(char *s, char **out, size_t max)
{
	size_t n = 0;
	char *p = strchr(s, '\n'); /* skip "goroutine profile: total N" */
	while (p && *++p && n < max) {
		char *end = strstr(p, "\n\n");
		if (end)
			end[1] = 0;
		/* the main goroutine's record differs by design */
		if (!strstr(p, "\tmain.main+0x"))
			out[n++] = p;
		p = end ? end + 1 : NULL;
	}
	return n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

Test(go_goroutines, debug1_identical, .timeout = 60)
{
	struct capture_result res;
	char *envp[] = {NULL};
	snapshot_fixture("d1", GO_FIXTURE, envp, &res);
	/* the labelled goroutines are there (checked before splitting in place) */
	cr_assert(strstr(res.ours1, "# labels: {\"k\":\"v\\\"q\", \"worker\":\"1\"}") != NULL);
	/* same total line */
	cr_assert_eq(strncmp(res.ours1, res.theirs1, strcspn(res.theirs1, "\n") + 1), 0);
	static char *ours[4096], *theirs[4096];
	size_t no = split_records(res.ours1, ours, 4096), nt = split_records(res.theirs1, theirs, 4096);
	cr_assert_geq(nt, 20);
	qsort(ours, no, sizeof(char *), cmp_str);
	qsort(theirs, nt, sizeof(char *), cmp_str);
	cr_assert_eq(no, nt);
	for (size_t i = 0; i < nt; i++)
		cr_expect_str_eq(ours[i], theirs[i]);
}

Test(go_goroutines, ten_thousand_idle, .timeout = 120)
{
	struct capture_result res;
	char *envp[] = {"IDLE=10000", NULL};
	snapshot_fixture("10k", GO_FIXTURE, envp, &res);
	cr_assert_geq(res.stats.user_goroutines, 10030);
	/* tests never assert on time; report it */
	cr_log_info("go_capture of %zu goroutines: %.3f ms, %zu read calls, %zu bytes", res.stats.goroutines,
		    res.stats.pause_ns / 1e6, res.stats.read_calls, res.stats.bytes_read);
	fprintf(stderr, "go_capture of %zu goroutines: %.3f ms, %zu read calls, %zu bytes\n", res.stats.goroutines,
		res.stats.pause_ns / 1e6, res.stats.read_calls, res.stats.bytes_read);
	cr_assert(strstr(res.ours1, "\n10000 @ ") != NULL, "the 10,000 identical goroutines are one record");
}
