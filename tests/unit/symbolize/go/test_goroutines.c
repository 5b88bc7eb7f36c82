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
#include "gotest.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

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

struct capture_result {
	char *ours2, *ours1, *theirs2, *theirs1;
	struct go_capture_stats stats;
	size_t nsamples;
};

static void free_result(struct capture_result *r)
{
	free(r->ours2);
	free(r->ours1);
	free(r->theirs2);
	free(r->theirs1);
}

/* Stop every thread of pid, snapshot its goroutines, release it: what
 * go_capture returned. */
static int capture_stopped(struct go_target *t, pid_t pid, struct go_snapshot **ret)
{
	struct stopper st;
	cr_assert_eq(stopper_stop(&st, pid), 0);
	int r = go_capture(t, stopper_read, (void *)(intptr_t)pid, st.regs, st.n, NULL, ret);
	stopper_release(&st);
	return r;
}

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
	struct child c;
	struct go_target *t = gotest_start(&c, exe, envp);
	cr_assert_str_eq(go_target_version(t), "go1.19.8");
	cr_assert(go_target_can_list_goroutines(t));

	struct go_snapshot *s = NULL;
	int r = capture_stopped(t, c.pid, &s);
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
	snprintf(p2, sizeof(p2), "dump2 %s/go-%s-theirs2.txt", gotest_outdir(), name);
	snprintf(p1, sizeof(p1), "dump1 %s/go-%s-theirs1.txt", gotest_outdir(), name);
	cr_assert_eq(child_cmd(&c, p2 ), 0);
	cr_assert_eq(child_cmd(&c, p1), 0);
	res->theirs2 = gotest_slurp(p2 + 6);
	res->theirs1 = gotest_slurp(p1 + 6);
	cr_assert(res->theirs2 && res->theirs1);
	char op[512];
	snprintf(op, sizeof(op), "%s/go-%s-ours2.txt", gotest_outdir(), name);
	spit(op, res->ours2);
	snprintf(op, sizeof(op), "%s/go-%s-ours1.txt", gotest_outdir(), name);
	spit(op, res->ours1);
	gotest_quit(&c);
	go_target_free(t);
}

static void check_debug2(const char *name, const char *exe)
{
	struct capture_result res;
	char *envp[] = {NULL};
	snapshot_fixture(name, exe, envp, &res);
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
	free_result(&res);
}

Test(go_goroutines, debug2_identical, .timeout = 60)
{
	check_debug2("d2", GO_FIXTURE);
}

/* PIE: every symbol and pclntab address moves by the load bias */
Test(go_goroutines, debug2_identical_pie, .timeout = 60)
{
	check_debug2("d2pie", GO_FIXTURE_PIE);
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
	free_result(&res);
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
	free_result(&res);
}

/* A goroutine on a CPU is [running] with its real stack from the thread's
 * registers (Go's own dump would say [runnable] after stopping the world). */
Test(go_goroutines, running_from_registers, .timeout = 60)
{
	char *envp[] = {"BUSY=1", NULL};
	struct child c;
	struct go_target *t = gotest_start(&c, GO_FIXTURE, envp);
	bool seen = false;
	for (int attempt = 0; attempt < 20 && !seen; attempt++) {
		struct go_snapshot *s;
		cr_assert_eq(capture_stopped(t, c.pid, &s), 0);
		char *text = NULL;
		size_t len;
		FILE *m = open_memstream(&text, &len);
		cr_assert_eq(go_snapshot_write_debug2(s, m), 0);
		fclose(m);
		/* the busy loop is the generic main.Spin, printed as the
		 * runtime prints it: a [running] block whose first frame is
		 * main.Spin[...] */
		for (char *p = text; (p = strstr(p, " [running]:\n")) != NULL; p++)
			if (!strncmp(p + strlen(" [running]:\n"), "main.Spin[", 10))
				seen = true;
		free(text);
		go_snapshot_free(s);
		usleep(10000);
	}
	cr_assert(seen, "the busy goroutine was never seen [running] on its thread");
	cr_assert_eq(child_cmd(&c, "num"), 0, "target still answers");
	child_kill(&c);
	go_target_free(t);
}

/* go_read_counters agrees with runtime.NumGoroutine(). */
Test(go_goroutines, counters, .timeout = 60)
{
	char *envp[] = {"IDLE=100", NULL};
	struct child c;
	struct go_target *t = gotest_start(&c, GO_FIXTURE, envp);
	char reply[64];
	int64_t n = 0, heap = 0;
	cr_assert_eq(go_read_counters(t, stopper_read, (void *)(intptr_t)c.pid, &n, &heap), 0);
	cr_assert_eq(child_cmd_reply(&c, "num", reply, sizeof(reply)), 0);
	cr_assert_eq(n, atoll(reply), "ours %lld, NumGoroutine %s", (long long)n, reply);
	/* the fixture has a few hundred KiB live; anything sane will do */
	cr_assert(heap > 64 * 1024 && heap < 1024 * 1024 * 1024, "heap_live %lld", (long long)heap);
	child_kill(&c);
	go_target_free(t);
}

/* Threads of a stripped Go binary symbolize from .gopclntab alone. */
static int first_name(void *ctx, const struct go_frame *f)
{
	snprintf(ctx, 256, "%s", f->function);
	return 0;
}

Test(go_goroutines, stripped_thread_pcs, .timeout = 60)
{
	char *envp[] = {NULL};
	struct child c;
	struct go_target *t = gotest_start(&c, GO_FIXTURE_STRIPPED, envp);
	struct go_snapshot *s = NULL;
	struct stopper st;
	cr_assert_eq(stopper_stop(&st, c.pid), 0);
	cr_assert_eq(go_capture(t, stopper_read, (void *)(intptr_t)c.pid, st.regs, st.n, NULL, &s), -ENOTSUP);
	size_t nthreads = st.n;
	stopper_release(&st);
	size_t named = 0;
	for (size_t i = 0; i < nthreads; i++) {
		char name[256] = "";
		/* threads sit in runtime.futex / epollwait / syscall.Syscall6 */
		if (go_target_symbolize_pc(t, st.regs[i].pc, first_name, name) > 0)
			named += strchr(name, '.') != NULL;
	}
	cr_assert_gt(named, 0, "no thread PC named from .gopclntab");
	cr_log_info("%zu of %zu thread PCs named", named, nthreads);
	child_kill(&c);
	go_target_free(t);
}

/* runtime.allgs and allm found in memory (symbolize/go/globals.c), as a
 * stripped binary needs them, against the .symtab of the plain build of
 * every Go release installed, and of the PIE fixture (load bias); then the
 * stripped build of each release lists its goroutines with them. */
static void check_globals(const char *plain, const char *stripped)
{
	char *envp[] = {NULL};
	struct child c;
	struct go_target *t = gotest_start(&c, plain, envp);
	char why[200] = "";
	cr_expect_eq(go_target_check_globals(t, c.pid, stopper_read, (void *)(intptr_t)c.pid, why, sizeof(why)),
		     1, "%s: %s", plain, why[0] ? why : "no .symtab");
	child_kill(&c);
	go_target_free(t);
	if (!stripped)
		return;
	t = gotest_start(&c, stripped, envp);
	cr_expect_str_eq(go_target_globals_source(t), "none");
	int r = go_target_find_globals(t, c.pid, stopper_read, (void *)(intptr_t)c.pid);
	cr_expect_eq(r, 0, "%s: %s", stripped, strerror(-r));
	cr_expect_str_eq(go_target_globals_source(t), "memory", "%s", stripped);
	struct stopper st;
	cr_assert_eq(stopper_stop(&st, c.pid), 0);
	struct go_snapshot *s = NULL;
	r = go_capture(t, stopper_read, (void *)(intptr_t)c.pid, st.regs, st.n, NULL, &s);
	stopper_release(&st);
	cr_expect_eq(r, 0, "%s: go_capture: %s", stripped, strerror(-r));
	struct go_capture_stats stats = {0};
	if (s)
		go_snapshot_stats(s, &stats);
	/* the fixture starts 500+ goroutines before it says its pid */
	cr_expect_gt(stats.allglen, 20, "%s: %zu goroutines", stripped, stats.allglen);
	go_snapshot_free(s);
	child_kill(&c);
	go_target_free(t);
}

Test(go_goroutines, globals_found_in_memory, .timeout = 120)
{
	check_globals(GO_FIXTURE_PIE, NULL);
	static struct gotest_release rel[16];
	size_t n = gotest_matrix(rel, 16);
	for (size_t i = 0; i < n; i++)
		check_globals(rel[i].plain, rel[i].stripped);
}

/* ---- debug=0: Go's goroutine.pprof against our samples ---- */

#include <zlib.h>

enum { MAXN = 4096 };
struct prof {
	char *strs[MAXN * 4];
	size_t nstrs;
	uint64_t fn_id[MAXN], fn_name[MAXN];
	size_t nfn;
	uint64_t loc_id[MAXN];
	char loc_names[MAXN][1024];
	size_t nloc;
};

static const char *fn_name(struct prof *p, uint64_t id)
{
	for (size_t i = 0; i < p->nfn; i++)
		if (p->fn_id[i] == id && p->fn_name[i] < p->nstrs)
			return p->strs[p->fn_name[i]];
	return "?";
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Go's debug=0 file -> one "count|frames|labels" string per sample. */
static size_t go_profile_samples(const char *path, char **out, size_t max)
{
	static uint8_t raw[1 << 22];
	gzFile gz = gzopen(path, "rb");
	cr_assert(gz);
	int n = gzread(gz, raw, sizeof(raw));
	gzclose(gz);
	cr_assert_gt(n, 0);
	static struct prof P;
	memset(&P, 0, sizeof(P));
	struct pb top = {raw, raw + n}, sub, s2;
	uint64_t v;
	int f;
	/* pass 1: strings, functions, locations */
	while ((f = pb_next(&top, &v, &sub)) != 0) {
		if (f == 6 && P.nstrs < MAXN * 4)
			P.strs[P.nstrs++] = strndup((const char *)sub.p, (size_t)(sub.end - sub.p));
		if (f == 5 && P.nfn < MAXN) {
			while ((f = pb_next(&sub, &v, &s2)) != 0) {
				if (f == 1) P.fn_id[P.nfn] = v;
				if (f == 2) P.fn_name[P.nfn] = v;
			}
			P.nfn++;
		}
	}
	top = (struct pb){raw, raw + n};
	while ((f = pb_next(&top, &v, &sub)) != 0) {
		if (f != 4 || P.nloc >= MAXN)
			continue;
		char *names = P.loc_names[P.nloc];
		names[0] = 0;
		while ((f = pb_next(&sub, &v, &s2)) != 0) {
			if (f == 1)
				P.loc_id[P.nloc] = v;
			if (f == 4) {
				uint64_t lv;
				struct pb s3;
				int g;
				while ((g = pb_next(&s2, &lv, &s3)) != 0)
					if (g == 1)
						snprintf(names + strlen(names), 1024 - strlen(names), "%s;", fn_name(&P, lv));
			}
		}
		P.nloc++;
	}
	/* pass 2: samples */
	size_t ns = 0;
	top = (struct pb){raw, raw + n};
	while ((f = pb_next(&top, &v, &sub)) != 0 && ns < max) {
		if (f != 2)
			continue;
		char frames[8192] = "", *labels[64];
		size_t nl = 0;
		uint64_t count = 0;
		while ((f = pb_next(&sub, &v, &s2)) != 0) {
			if (f == 1 || f == 2) {
				/* packed or not */
				uint64_t ids[256];
				size_t k = 0;
				if (s2.p && s2.p < s2.end && sub.p > s2.p) {
					while (s2.p < s2.end && k < 256)
						ids[k++] = pb_varint(&s2);
				} else {
					ids[k++] = v;
				}
				for (size_t i = 0; i < k; i++) {
					if (f == 2)
						count = ids[i];
					for (size_t j = 0; f == 1 && j < P.nloc; j++)
						if (P.loc_id[j] == ids[i])
							snprintf(frames + strlen(frames), sizeof(frames) - strlen(frames), "%s", P.loc_names[j]);
				}
				s2 = (struct pb){0};
			} else if (f == 3 && nl < 64) {
				uint64_t lv, key = 0, str = 0;
				struct pb s3;
				int g;
				while ((g = pb_next(&s2, &lv, &s3)) != 0) {
					if (g == 1) key = lv;
					if (g == 2) str = lv;
				}
				if (asprintf(&labels[nl], "%s=%s", P.strs[key], P.strs[str]) > 0)
					nl++;
			}
		}
		qsort(labels, nl, sizeof(char *), cmp_cstr);
		char lab[2048] = "";
		for (size_t i = 0; i < nl; i++) {
			snprintf(lab + strlen(lab), sizeof(lab) - strlen(lab), "%s,", labels[i]);
			free(labels[i]);
		}
		if (asprintf(&out[ns], "%llu|%s|%s", (unsigned long long)count, frames, lab) > 0)
			ns++;
	}
	for (size_t i = 0; i < P.nstrs; i++)
		free(P.strs[i]);
	return ns;
}

struct ours0 {
	struct go_target *t;
	char **out;
	size_t n;
};

static int our_sample(void *ctx, const struct go_sample *s)
{
	struct ours0 *o = ctx;
	char frames[8192] = "";
	for (size_t i = 0; i < s->nlocs; i++)
		go_target_symbolize_pc(o->t, s->locs[i], gotest_add_name, frames);
	char lab[2048] = "";
	char *labels[64];
	size_t nl = 0;
	for (size_t i = 0; i < s->nlabels && nl < 64; i++)
		if (asprintf(&labels[nl], "%s=%s", s->labels[i].key, s->labels[i].value) > 0)
			nl++;
	qsort(labels, nl, sizeof(char *), cmp_cstr);
	for (size_t i = 0; i < nl; i++) {
		snprintf(lab + strlen(lab), sizeof(lab) - strlen(lab), "%s,", labels[i]);
		free(labels[i]);
	}
	if (asprintf(&o->out[o->n], "%zu|%s|%s", s->count, frames, lab) > 0)
		o->n++;
	return 0;
}

Test(go_goroutines, debug0_samples_match, .timeout = 60)
{
	char *envp[] = {NULL};
	struct child c;
	struct go_target *t = gotest_start(&c, GO_FIXTURE, envp);
	char path[512];
	struct go_snapshot *s;
	cr_assert_eq(capture_stopped(t, c.pid, &s), 0);
	static char *ours[MAXN], *theirs[MAXN];
	struct ours0 o = {t, ours, 0};
	cr_assert_eq(go_snapshot_foreach_sample(s, our_sample, &o), 0);
	snprintf(path, sizeof(path), "dump0 %s/go-d0-theirs.pb.gz", gotest_outdir());
	cr_assert_eq(child_cmd(&c, path), 0);
	size_t nt = go_profile_samples(path + 6, theirs, MAXN);
	static char *all_o[MAXN], *all_t[MAXN];
	size_t n_all_o = o.n, n_all_t = nt;
	memcpy(all_o, ours, o.n * sizeof(char *));
	memcpy(all_t, theirs, nt * sizeof(char *));
	/* drop the main goroutine's sample on both sides (it dumps / reads stdin) */
	size_t no = 0, k = 0;
	for (size_t i = 0; i < o.n; i++)
		if (!strstr(ours[i], ";main.main;"))
			ours[no++] = ours[i];
	for (size_t i = 0; i < nt; i++)
		if (!strstr(theirs[i], ";main.main;"))
			theirs[k++] = theirs[i];
	nt = k;
	qsort(ours, no, sizeof(char *), cmp_cstr);
	qsort(theirs, nt, sizeof(char *), cmp_cstr);
	cr_assert_geq(nt, 20);
	cr_assert_eq(no, nt);
	for (size_t i = 0; i < nt; i++)
		cr_expect_str_eq(ours[i], theirs[i]);
	bool labelled = false, inl = false;
	for (size_t i = 0; i < nt; i++) {
		labelled |= strstr(theirs[i], "|k=v\"q,worker=1,") != NULL;
		/* an inlined call grouped into one Location with its caller */
		inl |= strstr(theirs[i], "sync.(*Mutex).Lock;main.main.func") != NULL;
	}
	cr_assert(labelled && inl, "labels or inline frames missing from the comparison");
	for (size_t i = 0; i < n_all_o; i++)
		free(all_o[i]);
	for (size_t i = 0; i < n_all_t; i++)
		free(all_t[i]);
	go_snapshot_free(s);
	child_kill(&c);
	go_target_free(t);
}

/* ---- runtime.allglen is the target's to forge (issue 54) ----
 *
 * A hostile runtime says 1,000,000 goroutines; a reader that trusted it
 * read a million pointers past allgs, a million "g structs", and took
 * gigabytes and the target's time. The fixture's allglen (and allgs'
 * header) are written here while it is stopped, and put back before it
 * runs again. */

/* The link-time address of a symbol of the (non-PIE) fixture, from nm. */
static uint64_t symbol_addr(const char *exe, const char *name)
{
	char cmd[600], line[256];
	snprintf(cmd, sizeof(cmd), "nm '%s'", exe);
	FILE *p = popen(cmd, "r");
	cr_assert(p, "nm");
	uint64_t addr = 0;
	while (!addr && fgets(line, sizeof(line), p)) {
		char sym[200];
		unsigned long long a;
		char type;
		if (sscanf(line, "%llx %c %199s", &a, &type, sym) == 3 && strcmp(sym, name) == 0)
			addr = a;
	}
	pclose(p);
	cr_assert(addr, "%s not in nm %s", name, exe);
	return addr;
}

static void poke(pid_t pid, uint64_t addr, uint64_t value)
{
	struct iovec l = {&value, 8}, r = {(void *)(uintptr_t)addr, 8};
	cr_assert_eq(process_vm_writev(pid, &l, 1, &r, 1, 0), 8, "process_vm_writev");
}

static uint64_t peek(pid_t pid, uint64_t addr)
{
	uint64_t v = 0;
	struct iovec l = {&v, 8}, r = {(void *)(uintptr_t)addr, 8};
	cr_assert_eq(process_vm_readv(pid, &l, 1, &r, 1, 0), 8, "process_vm_readv");
	return v;
}

/* One capture of the stopped fixture with allglen (and, with hdr_too, the
 * len and cap of allgs) set to forged, then put back. */
static int capture_forged(struct go_target *t, struct child *c, uint64_t forged, bool hdr_too,
			  const struct go_capture_limits *lim, struct go_snapshot **ret, size_t *ret_hint)
{
	uint64_t allglen = symbol_addr(GO_FIXTURE, "runtime.allglen");
	uint64_t allgs = symbol_addr(GO_FIXTURE, "runtime.allgs");
	struct stopper st;
	cr_assert_eq(stopper_stop(&st, c->pid), 0);
	uint64_t old[3] = {peek(c->pid, allglen), peek(c->pid, allgs + 8), peek(c->pid, allgs + 16)};
	if (forged) {
		poke(c->pid, allglen, forged);
		if (hdr_too) {
			poke(c->pid, allgs + 8, forged);
			poke(c->pid, allgs + 16, forged);
		}
	}
	if (ret_hint)
		*ret_hint = go_capture_heap_hint(t, stopper_read, (void *)(intptr_t)c->pid);
	int r = go_capture(t, stopper_read, (void *)(intptr_t)c->pid, st.regs, st.n, lim, ret);
	poke(c->pid, allglen, old[0]);
	poke(c->pid, allgs + 8, old[1]);
	poke(c->pid, allgs + 16, old[2]);
	stopper_release(&st);
	return r;
}

static size_t user_goroutines(struct go_snapshot *s)
{
	FILE *null = fopen("/dev/null", "w");
	cr_assert(null);
	cr_assert_eq(go_snapshot_write_debug2(s, null), 0); /* unwinds; counts user ones */
	fclose(null);
	struct go_capture_stats st;
	go_snapshot_stats(s, &st);
	return st.user_goroutines;
}

/* allglen past len(allgs): read len(allgs), the same goroutines as an
 * honest capture, said as forged; the heap hint stays within the budget. */
Test(go_goroutines, forged_allglen_read_as_allgs_says, .timeout = 60)
{
	struct child c;
	struct go_target *t = gotest_start(&c, GO_FIXTURE, NULL);
	struct go_snapshot *honest = NULL, *s = NULL;
	cr_assert_eq(capture_forged(t, &c, 0, false, NULL, &honest, NULL), 0);
	size_t hint = 0;
	int r = capture_forged(t, &c, 1000000, false, NULL, &s, &hint);
	cr_assert_eq(r, 0, "go_capture: %s", strerror(-r));
	struct go_capture_stats a, b;
	go_snapshot_stats(honest, &a);
	go_snapshot_stats(s, &b);
	cr_expect_eq(a.cut, GO_CUT_NONE);
	cr_expect_eq(b.cut, GO_CUT_ALLGS);
	cr_expect_eq(b.allglen_claimed, 1000000);
	cr_expect_eq(b.allgs_len, (int64_t)a.allglen);
	cr_expect_eq(b.allglen, a.allglen);
	cr_expect_eq(user_goroutines(s), user_goroutines(honest));
	cr_expect_leq(hint, GO_CAPTURE_BUDGET_BYTES, "heap hint %zu for a forged allglen", hint);
	go_snapshot_free(honest);
	go_snapshot_free(s);
	gotest_quit(&c);
	go_target_free(t);
}

/* allgs' header forged as well: what the budget allows is read, and no
 * more, whatever lies past the real array. */
Test(go_goroutines, forged_allgs_read_within_the_budget, .timeout = 60)
{
	struct child c;
	struct go_target *t = gotest_start(&c, GO_FIXTURE, NULL);
	struct go_snapshot *s = NULL;
	const struct go_capture_limits small = {.max_bytes = 64 * 1024};
	int r = capture_forged(t, &c, 1000000, true, &small, &s, NULL);
	cr_assert_eq(r, 0, "go_capture: %s", strerror(-r));
	struct go_capture_stats st;
	go_snapshot_stats(s, &st);
	cr_expect_eq(st.cut, GO_CUT_LIMIT);
	cr_expect_gt(st.read_limit, 0);
	cr_expect_lt(st.read_limit, 100, "64 KiB allows %zu goroutines", st.read_limit);
	cr_expect_leq(st.allglen, st.read_limit);
	go_snapshot_free(s);
	/* The default budget: a bounded read, whatever follows the array. */
	r = capture_forged(t, &c, 1000000, true, NULL, &s, NULL);
	cr_assert_eq(r, 0, "go_capture: %s", strerror(-r));
	go_snapshot_stats(s, &st);
	cr_expect(st.cut == GO_CUT_LIMIT || st.cut == GO_CUT_UNREADABLE, "cut %d", (int)st.cut);
	cr_expect_leq(st.allglen, st.read_limit);
	cr_expect_lt(st.read_limit, 1000000);
	fprintf(stderr, "forged allgs: read %zu of 1,000,000 (limit %zu) in %.1f ms\n", st.allglen,
		st.read_limit, st.pause_ns / 1e6);
	go_snapshot_free(s);
	gotest_quit(&c);
	go_target_free(t);
}

/* A deadline already past: the first batch of g structs is read (all of a
 * small program's), then nothing more: its stacks print "stack
 * unavailable", and the capture says the deadline cut it. */
Test(go_goroutines, deadline_cuts_the_read_not_the_capture, .timeout = 120)
{
	struct child c;
	char *envp[] = {"IDLE=20000", NULL};
	struct go_target *t = gotest_start(&c, GO_FIXTURE, envp);
	struct go_snapshot *s = NULL;
	const struct go_capture_limits late = {.deadline_ns = 1};
	int r = capture_forged(t, &c, 0, false, &late, &s, NULL);
	cr_assert_eq(r, 0, "go_capture: %s", strerror(-r));
	struct go_capture_stats st;
	go_snapshot_stats(s, &st);
	cr_expect_eq(st.cut, GO_CUT_DEADLINE);
	cr_expect_gt(st.allglen_claimed, 20000);
	cr_expect_eq(st.allglen, 16384, "read %zu g structs after the deadline", st.allglen);
	cr_expect_gt(st.stacks_past_deadline, 0);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	cr_assert_eq(go_snapshot_write_debug2(s, m), 0);
	fclose(m);
	cr_expect(strstr(text, "stack unavailable"), "no goroutine without its stack");
	free(text);
	go_snapshot_free(s);
	gotest_quit(&c);
	go_target_free(t);
}
