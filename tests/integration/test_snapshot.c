/*
 * Snapshot integration tests: attach to real targets parked at known call
 * chains (tests/targets/c/chains.c) in every build variant, and check the
 * frames in threads.txt and threads.pprof, the bundle's integrity, and that
 * the target is left running.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "pprof_read.h"
#include "pprof_check.h"

/* Expected chains, innermost first (below libc's read). */
static const char *const chain_a[] = {"park_here", "level_three", "level_two", "level_one",
				      "thread_a_main"};
static const char *const chain_b[] = {"park_here", "inlined_step", "middle_b", "thread_b_main"};

/* The block of threads.txt for the thread named name. */
static char *thread_block(const char *text, const char *name)
{
	char hdr[64];
	snprintf(hdr, sizeof(hdr), "\"%s\" (state", name);
	const char *start = strstr(text, hdr);
	if (!start)
		return NULL;
	const char *end = strstr(start, "\n\n");
	size_t len = end ? (size_t)(end - start) : strlen(start);
	return strndup(start, len);
}

/* Each expected function appears, in order, each on a frame line with a
 * chains.c file:line; the inlined one is marked [inlined]. */
static void check_text_chain(const char *block, const char *const *want, size_t n,
			     const char *inlined)
{
	const char *p = block;
	for (size_t i = 0; i < n; i++) {
		char needle[96];
		snprintf(needle, sizeof(needle), "  %s", want[i]);
		const char *line = NULL;
		for (const char *q = p; (q = strstr(q, needle)) != NULL; q++) {
			char c = q[strlen(needle)];
			if (c == '+' || c == ' ') {
				line = q;
				break;
			}
		}
		cr_assert(line, "frame %s missing (or out of order) in:\n%s", want[i], block);
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char *l = strndup(line, len);
		cr_expect(strstr(l, "chains.c:"), "frame %s has no file:line: %s", want[i], l);
		if (inlined && strcmp(want[i], inlined) == 0)
			cr_expect(strstr(l, "[inlined]"), "frame %s not marked inlined: %s", want[i], l);
		free(l);
		p = line + len;
	}
}

static const Perftools__Profiles__Sample *sample_for(const Perftools__Profiles__Profile *p,
						     const char *comm)
{
	for (size_t i = 0; i < p->n_sample; i++) {
		const char *c = sample_str_label(p, p->sample[i], "thread_comm");
		if (c && strcmp(c, comm) == 0)
			return p->sample[i];
	}
	return NULL;
}

static void snapshot_variant(const char *target_name)
{
	const char *argv[] = {target_path(target_name), NULL};
	struct target_run g;
	run_begin(&g, argv, "ready", "bundle");

	struct tool_result r;
	const char *args[] = {"-p", g.pid, "--snapshot", "-o", g.out, "--annotate", "case=snapshot",
			      NULL};
	tool_run(&r, args);
	cr_assert_eq(r.exit_code, 0, "%s: exit %d: %s", target_name, r.exit_code, r.err);

	char why[256];
	cr_expect(target_healthy(g.t.pid, false, why, sizeof(why)), "%s", why);

	char path[400];
	char *text = read_in(g.out, "threads.txt");
	cr_assert(text, "no threads.txt");
	char *a = thread_block(text, "parker-a");
	char *b = thread_block(text, "parker-b");
	char *rec = thread_block(text, "recurser");
	cr_assert(a && b && rec, "threads missing in:\n%s", text);
	check_text_chain(a, chain_a, 5, NULL);
	check_text_chain(b, chain_b, 4, "inlined_step");
	int depth = 0;
	for (const char *q = rec; (q = strstr(q, "  recurse+")) != NULL; q++)
		depth++;
	cr_expect_geq(depth, 42, "recursion shows %d frames, want >= 42:\n%s", depth, rec);
	cr_expect(strstr(a, "in syscall: read"), "blocked syscall not shown:\n%s", a);
	/* The main thread comes first. */
	cr_expect(strstr(text, "Thread ") && strncmp(strstr(text, "Thread "), "Thread ", 7) == 0);
	char main_hdr[64];
	snprintf(main_hdr, sizeof(main_hdr), "Thread %d ", (int)g.t.pid);
	cr_expect(strstr(text, main_hdr) == strstr(text, "Thread "), "main thread not first");
	free(a);
	free(b);
	free(rec);
	free(text);

	snprintf(path, sizeof(path), "%s/threads.pprof", g.out);
	Perftools__Profiles__Profile *p = NULL;
	cr_assert_eq(pprof_read_file(path, &p), 0, "threads.pprof does not decode");
	cr_expect_eq(p->n_sample, 4);
	const Perftools__Profiles__Sample *sa = sample_for(p, "parker-a");
	const Perftools__Profiles__Sample *sb = sample_for(p, "parker-b");
	cr_assert(sa && sb, "samples for parker-a/b missing");
	cr_expect(frames_contain_run(p, sa, chain_a, 5), "pprof chain of parker-a wrong");
	cr_expect(frames_contain_run(p, sb, chain_b, 4), "pprof chain of parker-b wrong");
	cr_expect_gt(sample_num_label(p, sa, "tid"), 0);
	cr_expect_str_eq(sample_str_label(p, sa, "state"), "S");
	cr_expect_geq(p->n_mapping, 1);
	const char *first_map = pprof_str(p, p->mapping[0]->filename);
	cr_expect(first_map && strstr(first_map, target_name), "first mapping is %s", first_map);
	cr_expect(p->mapping[0]->has_functions && p->mapping[0]->has_line_numbers);
	perftools__profiles__profile__free_unpacked(p, NULL);

	if (have_go()) {
		char pout[65536], perr[65536];
		int st = go_pprof("-traces", path, pout, sizeof(pout), perr, sizeof(perr));
		cr_expect_eq(st, 0, "go tool pprof failed: %s", perr);
		cr_expect(strstr(pout, "level_three"), "go tool pprof -traces lacks frames:\n%s", pout);
		cr_expect(strstr(perr, "arning") == NULL, "go tool pprof warned: %s", perr);
	}

	/* verify holds, then catches a tampered member. */
	const char *vargs[] = {"verify", g.out, NULL};
	tool_run(&r, vargs);
	cr_expect_eq(r.exit_code, 0, "verify: %s %s", r.out, r.err);
	snprintf(path, sizeof(path), "%s/threads.txt", g.out);
	FILE *f = fopen(path, "r+b");
	cr_assert(f);
	int c = fgetc(f);
	fseek(f, 0, SEEK_SET);
	fputc(c ^ 1, f);
	fclose(f);
	tool_run(&r, vargs);
	cr_expect_eq(r.exit_code, 1, "verify missed tampering");
	cr_expect(strstr(r.out, "threads.txt"), "verify did not name the member: %s", r.out);

	run_end(&g);
}

Test(snapshot, frame_pointers_non_pie) { snapshot_variant("chains_fp"); }
Test(snapshot, omit_frame_pointer_pie) { snapshot_variant("chains_nofp"); }
Test(snapshot, pie_with_frame_pointers) { snapshot_variant("chains_pie"); }
Test(snapshot, stripped_with_debuglink) { snapshot_variant("chains_stripped"); }

/* A program that maps its own text a second time, executable (node
 * does): the thread running in the copy is named through the file's one
 * module, and the worker survives (libdwfl freed the first module of an
 * ET_EXEC reported twice, and the symbolizer died on it: every frame of
 * the process came out unnamed). */
static void mapped_twice_variant(const char *target_name)
{
	const char *argv[] = {target_path(target_name), NULL};
	struct target_run g;
	run_begin(&g, argv, "ready", "bundle");
	struct tool_result r;
	const char *args[] = {"-p", g.pid, "--snapshot", "-o", g.out, NULL};
	tool_run_ok(&r, args);
	char *text = read_in(g.out, "threads.txt");
	cr_assert(text, "no threads.txt");
	char *alias = thread_block(text, "alias");
	cr_assert(alias, "no alias thread in:\n%s", text);
	/* Frame 0 runs in the copy (mmap's high addresses), frame 1 in the
	 * file's own mapping: both named, with file:line. */
	const char *f0 = strstr(alias, "#0 ");
	cr_assert(f0, "no frame in:\n%s", alias);
	/* mmap's region: 0x7e.. to 0x7f.. as ASLR places it (0x7f only was
	 * wrong one run in a few dozen), well above the PIE's 0x55../0x56... */
	unsigned long long pc0 = strtoull(f0 + 5, NULL, 16);
	cr_expect(pc0 >= 0x700000000000ull, "frame 0 not in the second mapping:\n%s", alias);
	static const char *const chain[] = {"spin_in_alias", "alias_thread_main"};
	for (size_t i = 0; i < 2; i++) {
		char needle[64];
		snprintf(needle, sizeof(needle), "  %s+", chain[i]);
		const char *at = strstr(alias, needle);
		cr_expect(at, "%s not named in:\n%s", chain[i], alias);
		const char *eol = at ? strchr(at, '\n') : NULL;
		char *l = at ? strndup(at, eol ? (size_t)(eol - at) : strlen(at)) : NULL;
		cr_expect(l && strstr(l, "mapped_twice.c:"), "%s without file:line: %s", chain[i], l);
		free(l);
	}
	char main_hdr[64];
	snprintf(main_hdr, sizeof(main_hdr), "Thread %d ", (int)g.t.pid);
	char *main_block = strstr(text, main_hdr);
	cr_expect(main_block && strstr(main_block, "  main+"), "main thread unnamed:\n%s", text);
	cJSON *m = manifest_need(g.out);
	cr_expect_eq(number_at(m, "interpretation", "worker_restarts"), 0);
	cr_expect_eq(number_at(m, "interpretation", "symbol_batches_lost"), 0);
	cJSON_Delete(m);
	free(alias);
	free(text);
	run_end(&g);
}

Test(snapshot, text_mapped_twice_exec) { mapped_twice_variant("mapped_twice_exec"); }
Test(snapshot, text_mapped_twice_pie) { mapped_twice_variant("mapped_twice_pie"); }

/* The symbolizing worker dies on every batch (a file that kills libdw,
 * as node's did): the loss is said on stderr, first in report and in its
 * JSON, and every frame still reads module+0xOFF, in threads.txt and as
 * the pprof function name. */
Test(snapshot, a_lost_symbol_worker_is_said_and_frames_keep_module_offsets)
{
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target_run g;
	run_begin(&g, argv, "ready", "bundle");
	struct tool_result r;
	const char *args[] = {"-p", g.pid, "--snapshot", "-q", "-o", g.out, NULL};
	setenv("DIAG_ATTACH_TEST_SYMBOLS_CRASH", "1", 1);
	tool_run(&r, args);
	unsetenv("DIAG_ATTACH_TEST_SYMBOLS_CRASH");
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "warning: an interpretation worker died") &&
			  strstr(r.err, "1 symbol batch(es) lost"),
		  "no warning on stderr (even with -q): %s", r.err);
	char *text = read_in(g.out, "threads.txt");
	cr_assert(text);
	char *a = thread_block(text, "parker-a");
	cr_assert(a, "no parker-a in:\n%s", text);
	cr_expect(strstr(a, "  chains_fp+0x") && strstr(a, "  libc.so.6+0x"),
		  "frames without module+0xOFF:\n%s", a);
	cr_expect_null(strstr(a, "??"), "a frame reads ?? although its module is known:\n%s", a);
	free(a);
	free(text);

	const char *rargs[] = {"report", g.out, NULL};
	tool_run(&r, rargs);
	cr_expect_eq(r.exit_code, 0, "report: %s", r.err);
	const char *w = strstr(r.out, "warning: an interpretation worker died");
	const char *threads = strstr(r.out, "THREADS");
	cr_expect(w && threads && w < threads, "the loss is not said at the top of report:\n%s",
		  r.out);
	const char *jargs[] = {"report", "--json", g.out, NULL};
	tool_run(&r, jargs);
	cr_expect(strstr(r.out, "\"warnings\"") &&
			  strstr(r.out, "an interpretation worker died"),
		  "no JSON warning:\n%.2000s", r.out);

	char path[400];
	snprintf(path, sizeof(path), "%s/threads.pprof", g.out);
	Perftools__Profiles__Profile *p = NULL;
	cr_assert_eq(pprof_read_file(path, &p), 0);
	size_t named_by_offset = 0;
	for (size_t i = 0; i < p->n_function; i++) {
		const char *name = pprof_str(p, p->function[i]->name);
		named_by_offset += name && strncmp(name, "chains_fp+0x", 12) == 0;
	}
	cr_expect_geq(named_by_offset, 3, "pprof functions not named module+0xOFF");
	for (size_t i = 0; i < p->n_mapping; i++)
		cr_expect(p->mapping[i]->has_functions, "mapping %zu invites pprof to rename it", i);
	perftools__profiles__profile__free_unpacked(p, NULL);
	expect_verified(g.out, "bundle with a lost batch");
	run_end(&g);
}

/* The frame of thread `thread` whose function starts with `prefix`, as
 * the whole function text up to its "+0x" offset (malloc'd), or NULL. */
static char *function_of(const char *text, const char *thread, const char *prefix)
{
	char *block = thread_block(text, thread);
	char needle[128];
	snprintf(needle, sizeof(needle), "  %s", prefix);
	const char *at = block ? strstr(block, needle) : NULL;
	char *out = NULL;
	if (at) {
		at += 2;
		const char *end = strstr(at, "+0x");
		const char *eol = strchr(at, '\n');
		if (!end || (eol && eol < end))
			end = strstr(at, "  ");
		out = strndup(at, end ? (size_t)(end - at) : strlen(at));
	}
	free(block);
	return out;
}

/* C++ functions are named as c++filt prints their symbol (scopes,
 * template arguments, parameters), not by their DWARF short name: two
 * overloads are two functions, in threads.txt as in pprof. */
Test(snapshot, cpp_functions_have_their_qualified_names)
{
	const char *argv[] = {target_path("cpp_names"), NULL};
	struct target_run g;
	run_begin(&g, argv, "ready", "bundle");
	struct tool_result r;
	const char *args[] = {"-p", g.pid, "--snapshot", "-q", "-o", g.out, NULL};
	tool_run_ok(&r, args);
	char *text = read_in(g.out, "threads.txt");
	cr_assert(text);
	static const struct {
		const char *thread, *prefix, *want;
	} cases[] = {
		{"ovl-int", "shop::Worker::park", "shop::Worker::park(int)"},
		{"ovl-double", "shop::Worker::park", "shop::Worker::park(double)"},
		{"template", "shop::Shelf", "shop::Shelf<long>::hold(long)"},
		{"lambda", "std::thread::_State_impl<",
		 "std::thread::_State_impl<std::thread::_Invoker<std::tuple<main::{lambda()#4}> > "
		 ">::_M_run()"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *fn = function_of(text, cases[i].thread, cases[i].prefix);
		cr_expect(fn && strcmp(fn, cases[i].want) == 0, "%s: got %s, want %s in:\n%s",
			  cases[i].thread, fn ? fn : "(none)", cases[i].want, text);
		free(fn);
	}
	free(text);
	char path[400];
	snprintf(path, sizeof(path), "%s/threads.pprof", g.out);
	Perftools__Profiles__Profile *p = NULL;
	cr_assert_eq(pprof_read_file(path, &p), 0);
	size_t park_int = 0, park_double = 0;
	for (size_t i = 0; i < p->n_function; i++) {
		const char *name = pprof_str(p, p->function[i]->name);
		park_int += name && strcmp(name, "shop::Worker::park(int)") == 0;
		park_double += name && strcmp(name, "shop::Worker::park(double)") == 0;
	}
	cr_expect(park_int == 1 && park_double == 1,
		  "the overloads are not one pprof function each (%zu, %zu)", park_int, park_double);
	perftools__profiles__profile__free_unpacked(p, NULL);
	run_end(&g);
}

Test(snapshot, stopped_target_stays_stopped)
{
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target_run g;
	run_begin(&g, argv, "ready", "b");
	kill(g.t.pid, SIGSTOP);
	/* Wait until every thread shows T. */
	for (int i = 0; i < 200; i++) {
		char why[128];
		if (!target_healthy(g.t.pid, false, why, sizeof(why)))
			break;
		usleep(5000);
	}
	struct tool_result r;
	const char *args[] = {"-p", g.pid, "--snapshot", "-o", g.out, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 0, "%s", r.err);
	char why[256];
	cr_expect(target_healthy(g.t.pid, true, why, sizeof(why)), "%s", why);
	/* Still stopped: every thread in T. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)g.t.pid);
	char *st = read_file(path, NULL);
	cr_expect(st && strstr(st, "State:\tT"), "target no longer stopped:\n%s", st);
	free(st);
	kill(g.t.pid, SIGCONT);
	run_end(&g);
}

/* Run upstream pprof's -traces on file with PPROF_BINARY_PATH set; stdout
 * and stderr together into out. Returns the exit status. */
static int upstream_pprof_traces(const char *pprof, const char *binary_path, const char *file,
				 char *out, size_t out_size)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd),
		 "HOME=/nonexistent PPROF_BINARY_PATH='%s' '%s' -symbolize=local -traces '%s' 2>&1",
		 binary_path, pprof, file);
	return shell_output(cmd, out, out_size);
}

Test(snapshot, with_binaries_copies_modules_by_build_id)
{
	/* The target runs from a copy that the test then takes away, with its
	 * debuglink file, as if the bundle had been carried to another host. */
	char dir[256], out[300], pid[16], bin[300], dbg[320], cmd[1024];
	make_tmpdir(dir, sizeof(dir));
	snprintf(bin, sizeof(bin), "%s/chains_stripped", dir);
	snprintf(dbg, sizeof(dbg), "%s.debug", bin);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s.debug' '%s/'", target_path("chains_stripped"),
		 target_path("chains_stripped"), dir);
	cr_assert_eq(system(cmd), 0);
	const char *argv[] = {bin, NULL};
	struct target t = target_start(argv, "ready");
	snprintf(out, sizeof(out), "%s/b", dir);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result r;
	const char *args[] = {"-p", pid, "--snapshot", "--with-binaries=64M", "-o", out, NULL};
	tool_run_ok(&r, args);
	char path[600];
	char *m = read_in(out, "manifest.json");
	cr_assert(m);
	/* The stripped ELF that ran, and its debuglink file next to it. */
	const char *bid = strstr(m, "\"build_id\":\t\"");
	cr_assert(bid, "no build id in manifest");
	char build_id[41] = {0};
	memcpy(build_id, bid + 13, 40);
	free(m);
	snprintf(path, sizeof(path), "%s/binaries/%s/chains_stripped", out, build_id);
	cr_expect(access(path, R_OK) == 0, "%s missing", path);
	snprintf(path, sizeof(path), "%s/binaries/%s/chains_stripped.debug", out, build_id);
	cr_expect(access(path, R_OK) == 0, "%s missing", path);
	/* Every copied file is a hashed member. */
	expect_verified(out, NULL);

	/* Symbolized from the bundle alone: the executable and its debug file
	 * are gone, the profile is stripped down to raw addresses, and pprof
	 * must find names and lines in binaries/<build_id>/. A search path
	 * without the copies is the control that shows the names come from
	 * them. */
	target_kill(&t);
	cr_assert_eq(unlink(bin), 0);
	cr_assert_eq(unlink(dbg), 0);
	const char *pprof = getenv("DIAG_PPROF_UPSTREAM");
	if (pprof && access(pprof, X_OK) == 0) {
		char pf[600], raw[600], bins[600], empty[600];
		snprintf(pf, sizeof(pf), "%s/threads.pprof", out);
		snprintf(raw, sizeof(raw), "%s/raw.pprof", dir);
		snprintf(bins, sizeof(bins), "%s/binaries", out);
		snprintf(empty, sizeof(empty), "%s/empty", dir);
		cr_assert_eq(mkdir(empty, 0700), 0);
		cr_assert_eq(pprof_write_unsymbolized(pf, raw), 0);
		static char text[65536];
		int rc = upstream_pprof_traces(pprof, empty, raw, text, sizeof(text));
		cr_expect_eq(rc, 0, "pprof: %s", text);
		cr_expect(!strstr(text, "level_three"), "control symbolized without the copies:\n%s",
			  text);
		rc = upstream_pprof_traces(pprof, bins, raw, text, sizeof(text));
		cr_expect_eq(rc, 0, "pprof: %s", text);
		cr_expect(!strstr(text, "mismatch"), "pprof rejected a copy:\n%s", text);
		const char *a = find_line(text, "park_here");
		const char *b = a ? find_line(a, "level_three") : NULL;
		const char *c = b ? find_line(b, "thread_a_main") : NULL;
		cr_expect(c, "stack not symbolized from binaries/:\n%s", text);
	} else {
		cr_log_warn("upstream pprof not built (golang-github-google-pprof-dev missing): "
			    "re-symbolization from binaries/ not checked");
	}

	/* A cap too small for anything copies nothing, and says why. */
	const char *argv2[] = {target_path("chains_stripped"), NULL};
	t = target_start(argv2, "ready");
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	char out2[300];
	snprintf(out2, sizeof(out2), "%s/c", dir);
	const char *args2[] = {"-p", pid, "--snapshot", "--with-binaries=1K", "-o", out2, NULL};
	tool_run_ok(&r, args2);
	m = read_in(out2, "manifest.json");
	cr_expect(m && strstr(m, "over --with-binaries cap"), "cap not reported");
	free(m);
	target_kill(&t);
	rm_rf(dir);
}

/* --symbols names: the same chain by function name from the symbol table
 * (the inlined step has no symbol of its own, so it is absent), no
 * file:line anywhere, no symbol version suffixes, and the manifest says
 * which kind of symbols the bundle has. */
Test(snapshot, names_only_symbols)
{
	const char *argv[] = {target_path("chains_stripped"), NULL};
	struct target_run g;
	run_begin(&g, argv, "ready", "b");
	struct tool_result r;
	const char *args[] = {"-p", g.pid, "--snapshot", "--symbols=names", "-o", g.out, NULL};
	tool_run_ok(&r, args);
	char *text = read_in(g.out, "threads.txt");
	cr_assert(text);
	char *a = thread_block(text, "parker-a");
	cr_assert(a, "no parker-a in:\n%s", text);
	const char *p = a;
	for (size_t i = 0; i < sizeof(chain_a) / sizeof(chain_a[0]); i++) {
		char needle[96];
		snprintf(needle, sizeof(needle), "  %s+0x", chain_a[i]);
		p = strstr(p, needle);
		cr_assert(p, "frame %s missing or g.out of order:\n%s", chain_a[i], a);
	}
	cr_expect(!strstr(text, ".c:"), "file:line resolved with --symbols=names:\n%s", text);
	cr_expect(!strstr(text, "[inlined]"), "inline frame with --symbols=names");
	cr_expect(!strstr(text, "@@"), "symbol version suffix left in:\n%s", text);
	free(a);
	free(text);
	char *m = read_in(g.out, "manifest.json");
	cr_expect(m && strstr(m, "\"symbols\":\t\"names\""), "manifest does not say names");
	free(m);
	expect_verified(g.out, NULL);
	run_end(&g);
}
