/*
 * Python frames from outside (issue 20), against the interpreter's own
 * account: tests/targets/python/fixture.py run by Debian's /usr/bin/python3
 * (3.11), whose faulthandler writes every thread's traceback on SIGUSR1,
 * sent right after our snapshot. The sleeping and blocked threads do not
 * move between the two; the busy one only within leaf's loop.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* Debian's; DIAG_PYTHON names another CPython to run the same tests with
 * (3.12 and 3.13 builds were checked this way; Debian 12 has none). */
#define PYTHON	    (getenv("DIAG_PYTHON") ? getenv("DIAG_PYTHON") : "/usr/bin/python3")
#define MAX_FRAMES  64
#define MAX_THREADS 16

struct py_frame_seen {
	char function[128], file[256];
	int line;
};

struct py_stack_seen {
	int n;
	struct py_frame_seen f[MAX_FRAMES];
};

struct python_run {
	struct target t;
	char dir[256], traceback[300], pid[16];
};

static bool python_ready(void)
{
	return access(PYTHON, X_OK) == 0 && getenv("DIAG_PY_FIXTURE");
}

static void python_start(struct python_run *r)
{
	make_tmpdir(r->dir, sizeof(r->dir));
	snprintf(r->traceback, sizeof(r->traceback), "%s/traceback.txt", r->dir);
	const char *argv[] = {PYTHON, getenv("DIAG_PY_FIXTURE"), r->traceback, NULL};
	r->t = target_start(argv, "ready");
	snprintf(r->pid, sizeof(r->pid), "%d", (int)r->t.pid);
}

static void python_stop(struct python_run *r)
{
	target_kill(&r->t);
	rm_rf(r->dir);
}

/* faulthandler's text: "Thread 0x... (most recent call first):" (or
 * "Current thread ...") then '  File "F", line N in FUNC' lines. */
static int parse_faulthandler(const char *text, struct py_stack_seen *out, int max)
{
	int n = -1;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, "Thread 0x", 9) == 0 || strncmp(l, "Current thread 0x", 17) == 0) {
			if (n + 1 == max)
				break;
			out[++n].n = 0;
			continue;
		}
		struct py_frame_seen f = {0};
		if (n >= 0 && out[n].n < MAX_FRAMES &&
		    sscanf(l, "  File \"%255[^\"]\", line %d in %127s", f.file, &f.line,
			   f.function) == 3)
			out[n].f[out[n].n++] = f;
	}
	return n + 1;
}

/* The Python frames (module "python") of each thread of a dump --json. */
static int python_stacks_of_dump(const char *json, struct py_stack_seen *out, int max)
{
	cJSON *d = cJSON_Parse(json);
	cr_assert(d, "dump --json is not JSON: %.300s", json);
	int n = 0;
	cJSON *g;
	cJSON_ArrayForEach(g, cJSON_GetObjectItem(d, "groups"))
	{
		struct py_stack_seen s = {0};
		cJSON *fr;
		cJSON_ArrayForEach(fr, cJSON_GetObjectItem(g, "frames"))
		{
			const char *module =
				cJSON_GetStringValue(cJSON_GetObjectItem(fr, "module"));
			if (!module || strcmp(module, "python") != 0 || s.n == MAX_FRAMES)
				continue;
			struct py_frame_seen *f = &s.f[s.n++];
			snprintf(f->function, sizeof(f->function), "%s",
				 cJSON_GetStringValue(cJSON_GetObjectItem(fr, "function")));
			snprintf(f->file, sizeof(f->file), "%s",
				 cJSON_GetStringValue(cJSON_GetObjectItem(fr, "file")));
			f->line = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(fr, "line"));
		}
		/* One entry per thread of the group: identical stacks. */
		int threads = cJSON_GetArraySize(cJSON_GetObjectItem(g, "threads"));
		for (int i = 0; i < threads && n < max; i++)
			out[n++] = s;
	}
	cJSON_Delete(d);
	return n;
}

/* The interpreter's own account (faulthandler, on SIGUSR1), taken now. */
static char *interpreters_traceback(struct python_run *r)
{
	kill(r->t.pid, SIGUSR1);
	char *fh = NULL;
	for (int i = 0; i < 200; i++) {
		free(fh);
		fh = read_file(r->traceback, NULL);
		if (fh && strstr(fh, "in <module>"))
			break;
		sleep_ms(10);
	}
	cr_assert(fh && strstr(fh, "in <module>"), "faulthandler wrote no traceback: %s",
		  fh ? fh : "");
	return fh;
}

/* The Python frames of each thread of a threads.txt: under each "Thread "
 * header, the frame lines of module python,
 * "#N 0xPC  FUNCTION  (FILE:LINE)  python". */
static int python_stacks_of_threads_txt(const char *text, struct py_stack_seen *out, int max)
{
	int n = -1;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t len = strcspn(l, "\n");
		if (strncmp(l, "Thread ", 7) == 0) {
			if (n + 1 == max)
				break;
			out[++n].n = 0;
			continue;
		}
		if (n < 0 || l[0] != '#' || len < 9 || memcmp(l + len - 8, "  python", 8) != 0 ||
		    out[n].n == MAX_FRAMES)
			continue;
		char line[1024];
		snprintf(line, sizeof(line), "%.*s", (int)(len - 8), l);
		char *fn = strstr(line, " 0x");
		fn = fn ? strstr(fn + 1, "  ") : NULL;
		char *paren = fn ? strstr(fn + 2, "  (") : NULL;
		char *colon = paren ? strrchr(paren, ':') : NULL;
		if (!colon)
			continue;
		struct py_frame_seen *f = &out[n].f[out[n].n++];
		*paren = '\0';
		*colon = '\0';
		snprintf(f->function, sizeof(f->function), "%s", fn + 2);
		snprintf(f->file, sizeof(f->file), "%s", paren + 3);
		f->line = atoi(colon + 1);
	}
	return n + 1;
}

/* "Thread.run" (ours, co_qualname) against faulthandler's "run" (co_name). */
static bool same_function(const char *qualname, const char *name)
{
	const char *dot = strrchr(qualname, '.');
	return strcmp(qualname, name) == 0 || (dot && strcmp(dot + 1, name) == 0);
}

static char *describe(const struct py_stack_seen *s, char *buf, size_t size)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int i = 0; i < s->n && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s%s:%d", i ? " <- " : "",
				      s->f[i].function, s->f[i].line);
	return buf;
}

/* Does our stack match faulthandler's (function, file and line of every
 * frame, innermost first; the busy thread's innermost line anywhere in
 * leaf's loop)? */
static bool stacks_match(const struct py_stack_seen *ours, const struct py_stack_seen *theirs)
{
	if (ours->n != theirs->n)
		return false;
	for (int i = 0; i < ours->n; i++) {
		const struct py_frame_seen *a = &ours->f[i], *b = &theirs->f[i];
		if (!same_function(a->function, b->function) || strcmp(a->file, b->file) != 0)
			return false;
		bool moving = i == 0 && strcmp(b->function, "leaf") == 0;
		if (moving ? (a->line < 19 || a->line > 23) : a->line != b->line)
			return false;
	}
	return true;
}

Test(python, dump_matches_the_interpreters_own_traceback, .timeout = 120)
{
	if (!python_ready())
		cr_skip_test("no %s or DIAG_PY_FIXTURE", PYTHON);
	struct python_run r;
	python_start(&r);
	struct tool_result *res = malloc(sizeof(*res));
	cr_assert(res);
	const char *dump[] = {"dump", "-p", r.pid, "--json", NULL};
	tool_run_ok(res, dump);
	/* The interpreter's own account, right after ours. */
	char *fh = interpreters_traceback(&r);

	struct py_stack_seen theirs[MAX_THREADS], ours[MAX_THREADS];
	int ntheirs = parse_faulthandler(fh, theirs, MAX_THREADS);
	int nours = python_stacks_of_dump(res->out, ours, MAX_THREADS);
	cr_expect_eq(ntheirs, 4, "faulthandler listed %d threads: %s", ntheirs, fh);
	char a[2048];
	for (int i = 0; i < ntheirs; i++) {
		bool found = false;
		for (int k = 0; k < nours && !found; k++)
			found = stacks_match(&ours[k], &theirs[i]);
		cr_expect(found,
			  "the interpreter's thread %s is in no thread of the dump; ours:\n%s",
			  describe(&theirs[i], a, sizeof(a)), res->out);
	}
	/* Merged with the native frames: the busy thread's Python frames sit
	 * on the native ones that run them, down to start_thread. */
	cr_expect(strstr(res->out, "\"leaf\""), "no leaf frame");
	cr_expect(strstr(res->out, "start_thread"), "no native frame below the Python ones");
	/* The GIL: the busy thread has it (no other thread asks for it: they
	 * sleep or wait with it released), and only one thread can. */
	int holders = 0;
	for (const char *h = res->out; (h = strstr(h, "\"holds_gil\"")); h++)
		holders++;
	cr_expect_eq(holders, 1, "%d threads hold the GIL: %s", holders, res->out);
	cr_expect(strstr(res->out, "_PyEval_EvalFrameDefault") == NULL,
		  "an evaluation-loop frame was left in place of its Python frames");
	free(fh);
	free(res);
	python_stop(&r);
}

Test(python, snapshot_bundle_has_python_frames_and_pprof_reads_them, .timeout = 120)
{
	if (!python_ready())
		cr_skip_test("no %s or DIAG_PY_FIXTURE", PYTHON);
	struct python_run r;
	python_start(&r);
	char out[400];
	snprintf(out, sizeof(out), "%s/b", r.dir);
	struct tool_result *res = malloc(sizeof(*res));
	cr_assert(res);
	const char *snap[] = {"-p", r.pid, "--snapshot", "-o", out, NULL};
	tool_run_ok(res, snap);
	expect_verified(out, "python snapshot");
	expect_member_has(out, "threads.txt", "leaf  (", "no leaf frame in threads.txt");
	expect_member_has(out, "threads.txt", "fixture.py:", "no fixture file:line in threads.txt");
	expect_member_has(out, "threads.txt", "sleeper  (",
			  "the sleeping thread has no Python frame");
	expect_member_has(out, "threads.txt", "[holds the GIL]",
			  "no thread labelled as the GIL's holder");
	/* threads.txt against the interpreter's own traceback, thread by
	 * thread, as the dump is. */
	char *fh = interpreters_traceback(&r);
	char *txt = read_in(out, "threads.txt");
	cr_assert(txt);
	struct py_stack_seen theirs[MAX_THREADS], ours[MAX_THREADS];
	int ntheirs = parse_faulthandler(fh, theirs, MAX_THREADS);
	int nours = python_stacks_of_threads_txt(txt, ours, MAX_THREADS);
	cr_expect_eq(ntheirs, 4, "faulthandler listed %d threads: %s", ntheirs, fh);
	char a[2048];
	for (int i = 0; i < ntheirs; i++) {
		bool found = false;
		for (int k = 0; k < nours && !found; k++)
			found = stacks_match(&ours[k], &theirs[i]);
		cr_expect(found, "the interpreter's thread %s is in no thread of threads.txt:\n%s",
			  describe(&theirs[i], a, sizeof(a)), txt);
	}
	free(txt);
	free(fh);
	cJSON *m = manifest_load(out);
	cJSON *py = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "target"), "python");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(py, "frames_readable")),
		  "manifest target.python: %s", py ? cJSON_PrintUnformatted(py) : "absent");
	if (!getenv("DIAG_PYTHON"))
		cr_expect(strncmp(cJSON_GetStringValue(cJSON_GetObjectItem(py, "version")) ?: "",
				  "3.11.", 5) == 0);
	cJSON_Delete(m);
	if (have_go()) {
		char file[500], text[65536], err[4096];
		snprintf(file, sizeof(file), "%s/threads.pprof", out);
		int rc = go_pprof("-traces", file, text, sizeof(text), err, sizeof(err));
		cr_expect_eq(rc, 0, "go tool pprof: %s", err);
		cr_expect(strstr(text, "leaf") && strstr(text, "middle") && strstr(text, "outer"),
			  "pprof -traces lacks the busy chain: %.2000s", text);
		cr_expect(strstr(err, "warning") == NULL, "go tool pprof warned: %s", err);
	}
	free(res);
	python_stop(&r);
}

/* Sampling (no stop at the ticks): the CPU profile's hottest function is
 * the Python one that burns it, and the wall-clock profile shows the
 * sleeping and blocked threads at their Python lines. */
Test(python, sampled_profiles_name_python_functions, .timeout = 180)
{
	if (!python_ready())
		cr_skip_test("no %s or DIAG_PY_FIXTURE", PYTHON);
	if (!have_go())
		cr_skip_test("no go tool pprof to read the profiles");
	struct python_run r;
	python_start(&r);
	char out[400];
	snprintf(out, sizeof(out), "%s/b", r.dir);
	struct tool_result *res = malloc(sizeof(*res));
	cr_assert(res);
	const char *capture[] = {"-p", r.pid, "-d", "3s", "-o", out, NULL};
	tool_run_ok(res, capture);
	expect_verified(out, "python capture");

	static char text[1 << 16];
	char file[500], err[4096];
	snprintf(file, sizeof(file), "%s/cpu.pprof", out);
	cr_assert_eq(go_pprof("-top", file, text, sizeof(text), err, sizeof(err)), 0, "%s", err);
	/* The first row under the header "flat flat% sum% cum cum%". */
	const char *row = strstr(text, "cum%\n");
	cr_assert(row, "no table: %s", text);
	row += 5;
	char first[4096];
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(row, "\n"), row);
	cr_expect(strstr(first, " leaf"), "the hottest function is not leaf: %s\n%s", first, text);
	cr_expect(strstr(err, "warning") == NULL, "go tool pprof warned on cpu.pprof: %s", err);

	snprintf(file, sizeof(file), "%s/wall.pprof", out);
	cr_assert_eq(
		go_pprof("-top -lines -nodecount=200", file, text, sizeof(text), err, sizeof(err)),
		0, "%s", err);
	cr_expect(strstr(err, "warning") == NULL, "go tool pprof warned on wall.pprof: %s", err);
	cr_expect(strstr(text, "sleeper ") && strstr(text, "fixture.py:35"),
		  "the sleeping thread is not at its Python line: %s", text);
	cr_expect(strstr(text, "blocked ") && strstr(text, "fixture.py:39"),
		  "the blocked thread is not at its Python line: %s", text);

	cJSON *m = manifest_load(out);
	cJSON *py = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "capture"), "python");
	double merged = cJSON_GetNumberValue(cJSON_GetObjectItem(py, "samples_with_python_frames"));
	double odd = cJSON_GetNumberValue(cJSON_GetObjectItem(py, "samples_inconsistent"));
	cr_expect(merged > 100, "capture.python: %s", py ? cJSON_PrintUnformatted(py) : "absent");
	cr_expect(odd <= merged * 0.2, "%.0f inconsistent samples against %.0f merged", odd,
		  merged);
	cJSON_Delete(m);
	free(res);
	python_stop(&r);
}

/* A program called python3 without the interpreter's symbols (as a static,
 * stripped build would be): the manifest says why there are no Python
 * frames, and the capture goes on. */
Test(python, a_python_without_its_symbols_says_why, .timeout = 60)
{
	char dir[256], exe[300], out[300], pid[16];
	make_tmpdir(dir, sizeof(dir));
	snprintf(exe, sizeof(exe), "%s/python3", dir);
	snprintf(out, sizeof(out), "%s/b", dir);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "cp /bin/sleep '%s'", exe);
	cr_assert_eq(sh(cmd), 0);
	/* The shell says ready, then becomes the program (same pid). */
	const char *argv[] = {"/bin/sh", "-c", "echo ready; exec \"$0\" 60", exe, NULL};
	struct target t = target_start(argv, "ready");
	sleep_ms(100);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result *res = malloc(sizeof(*res));
	cr_assert(res);
	const char *snap[] = {"-p", pid, "--snapshot", "-o", out, NULL};
	tool_run_ok(res, snap);
	cJSON *m = manifest_load(out);
	cJSON *py = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "target"), "python");
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(py, "frames_readable")), "target.python: %s",
		  py ? cJSON_PrintUnformatted(py) : "absent");
	const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(py, "why"));
	cr_expect(why && strstr(why, "_PyRuntime"), "why: %s", why ? why : "(none)");
	cJSON_Delete(m);
	free(res);
	target_kill(&t);
	rm_rf(dir);
}

/* A read of the frames that kills the worker (as a hostile interpreter's
 * memory might): the capture goes on, its native stacks unwound by a new
 * worker, and the manifest says Python frames were given up. */
Test(python, a_read_that_kills_the_worker_is_not_retried, .timeout = 120)
{
	if (!python_ready())
		cr_skip_test("no %s or DIAG_PY_FIXTURE", PYTHON);
	struct python_run r;
	python_start(&r);
	char out[400];
	snprintf(out, sizeof(out), "%s/b", r.dir);
	struct tool_result *res = malloc(sizeof(*res));
	cr_assert(res);
	setenv("DIAG_ATTACH_TEST_PYTHON_READ_CRASH", "1", 1);
	const char *capture[] = {"-p", r.pid, "-d", "2s", "-o", out, NULL};
	tool_run_ok(res, capture);
	unsetenv("DIAG_ATTACH_TEST_PYTHON_READ_CRASH");
	expect_verified(out, "python capture without its frames");
	cJSON *m = manifest_load(out);
	cJSON *py = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "capture"), "python");
	const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(py, "gave_up"));
	cr_expect(why, "capture.python: %s", py ? cJSON_PrintUnformatted(py) : "absent");
	cr_expect_leq(cJSON_GetNumberValue(cJSON_GetObjectItem(py, "reads")), 1,
		      "reads went on after the worker was lost");
	/* Native stacks still unwound down to the thread's start. */
	expect_member_has(out, "threads.txt", "start_thread",
			  "no native stack after the worker was lost");
	cr_expect_gt(number_at(m, "capture", "cpu_samples"), 50,
		     "CPU samples lost with the worker");
	cJSON_Delete(m);
	free(res);
	python_stop(&r);
}

/* The rows of top's last refresh, in order: the function of each, and its
 * SELF% and TOTAL%. */
static int top_rows(const char *out, char names[][128], double *self, double *total, int max)
{
	const char *last = out, *p;
	while ((p = strstr(last + 1, "diag-attach top")))
		last = p;
	int n = 0;
	for (const char *l = last; l && *l && n < max; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		double self_s, total_s;
		int used = 0;
		if (sscanf(l, "%lf%% %lf%% %lfs %lfs %n", &self[n], &total[n], &self_s, &total_s, &used) != 4 ||
		    !used)
			continue;
		size_t len = strcspn(l + used, "\n");
		snprintf(names[n], 128, "%.*s", (int)(len < 127 ? len : 127), l + used);
		n++;
	}
	return n;
}

/* top on a CPython, quiet and with both cores kept busy: its hottest row
 * is the function the interpreter's own traceback has the busy thread in
 * (leaf), and the busy thread's callers (middle, outer) are on every
 * sample of the only thread that runs, as they are in faulthandler's
 * account; where `dump` names leaf, top used to show
 * _PyEval_EvalFrameDefault. */
Test(python, top_shows_the_hot_python_function_first, .timeout = 120)
{
	if (!python_ready())
		cr_skip_test("no %s or DIAG_PY_FIXTURE", PYTHON);
	struct python_run r;
	python_start(&r);
	struct tool_result *res = malloc(sizeof(*res));
	cr_assert(res);
	for (int loaded = 0; loaded < 2; loaded++) {
		pid_t l[2];
		if (loaded)
			loaders_start(l);
		const char *top[] = {"top", "-p", r.pid, "-n", "3", NULL};
		tool_run_ok(res, top);
		if (loaded)
			loaders_stop(l);
		char *fh = interpreters_traceback(&r);
		struct py_stack_seen theirs[MAX_THREADS];
		int ntheirs = parse_faulthandler(fh, theirs, MAX_THREADS);
		const char *hot = NULL;
		for (int i = 0; i < ntheirs; i++)
			for (int k = 0; k < theirs[i].n; k++)
				if (strcmp(theirs[i].f[k].function, "outer") == 0)
					hot = theirs[i].f[0].function;
		cr_assert(hot, "faulthandler has no thread in outer:\n%s", fh);
		char names[20][128];
		double self[20], total[20];
		int n = top_rows(res->out, names, self, total, 20);
		cr_assert_geq(n, 3, "top printed %d rows:\n%s", n, res->out);
		cr_expect_str_eq(names[0], hot, "%s top row %s, the interpreter is in %s:\n%s",
				 loaded ? "loaded:" : "quiet:", names[0], hot, res->out);
		for (const char *const *fn = (const char *const[]){"middle", "outer", NULL}; *fn; fn++) {
			double t = -1;
			for (int i = 0; i < n; i++)
				if (strcmp(names[i], *fn) == 0)
					t = total[i];
			cr_expect_geq(t, 90.0, "%s: TOTAL%% %.1f:\n%s", *fn, t, res->out);
		}
		cr_expect_null(strstr(res->out, "frames not shown"), "%s", res->out);
		free(fh);
	}
	free(res);
	python_stop(&r);
}

/* A CPython whose frames cannot be read is said so on top's screen, with
 * the reason, not left to look like a C program. */
Test(python, top_says_when_python_frames_are_not_shown, .timeout = 60)
{
	char py[512];
	if (shell_output("ls -d /root/.pyenv/versions/3.10*/bin/python3 2>/dev/null | head -1", py,
			 sizeof(py)) != 0 || !py[0] || !getenv("DIAG_PY_FIXTURE"))
		cr_skip_test("no CPython 3.10 from pyenv on this machine");
	py[strcspn(py, "\n")] = '\0';
	char dir[256], tb[300], pid[16];
	make_tmpdir(dir, sizeof(dir));
	snprintf(tb, sizeof(tb), "%s/traceback.txt", dir);
	const char *argv[] = {py, getenv("DIAG_PY_FIXTURE"), tb, NULL};
	struct target t = target_start(argv, "ready");
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result *res = malloc(sizeof(*res));
	cr_assert(res);
	const char *top[] = {"top", "-p", pid, "-n", "1", NULL};
	tool_run_ok(res, top);
	cr_expect(strstr(res->out, "\nPython") && strstr(res->out, "frames not shown: "),
		  "top is silent about the Python frames it does not show:\n%s", res->out);
	free(res);
	target_kill(&t);
	rm_rf(dir);
}
