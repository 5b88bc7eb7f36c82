/*
 * The Go fixture (tests/targets/go/fixture/main.go) built by every Go
 * toolchain Debian carries, 1.19 and 1.21 to 1.27 (setup.sh installs them
 * under /usr/lib/go-1.NN), plain, without DWARF (-ldflags=-w: struct
 * layouts from the built-in row of the release, symbolize/go/layouts.c),
 * stripped (-ldflags=-s -w), stripped PIE (-buildmode=pie) and stripped
 * static (CGO_ENABLED=0; the others link runtime/cgo, as the fixture
 * imports net).
 *
 * Ground truth: the runtime's own goroutine dump (the fixture writes its
 * debug=2 dump on request, right after our snapshot) and `go version`.
 * Plain and -w: every goroutine the runtime lists is in goroutine.txt,
 * labels in goroutine.pprof, the version in the manifest, every thread
 * frame named, and the manifest says where the layouts came from.
 * Stripped (-s -w) the same: thread frames named from .gopclntab (Go 1.26
 * moved moduledata into .go.module and zeroed pcHeader.textStart), the
 * version from .go.buildinfo, runtime.allgs and allm found in the
 * target's memory (symbolize/go/globals.c).
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "pprof_check.h"

/* The fixture of version v (kind "" or "-stripped"); skips when the
 * toolchain is not installed, fails when it is and the fixture was not
 * built. */
static const char *matrix_fixture(const char *v, const char *kind, char *buf, size_t size)
{
	const char *dir = getenv("DIAG_GO_MATRIX_DIR");
	char go[64];
	snprintf(go, sizeof(go), "/usr/lib/go-%s/bin/go", v);
	if (access(go, X_OK) != 0)
		cr_skip_test("no Go %s toolchain (%s): setup.sh installs golang-%s-go", v, go, v);
	cr_assert(dir, "DIAG_GO_MATRIX_DIR not set");
	snprintf(buf, size, "%s/go-matrix-%s%s", dir, v, kind);
	cr_assert(access(buf, X_OK) == 0, "%s is installed but %s was not built", go, buf);
	return buf;
}

/* Snapshot the fixture into g->out. */
static void snapshot(struct target_run *g, const char *path)
{
	const char *argv[] = {path, NULL};
	run_begin(g, argv, "pid", "b");
	struct tool_result r;
	const char *args[] = {"-q", "-p", g->pid, "--snapshot", "-o", g->out, NULL};
	tool_run_ok(&r, args);
}

/* The manifest's Go version is the toolchain's: "go1.21.13" for "1.21". */
static const cJSON *expect_version(const cJSON *m, const char *v)
{
	const cJSON *go = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "target"), "go");
	cr_assert(go, "no target.go in the manifest");
	const char *got = cJSON_GetStringValue(cJSON_GetObjectItem(go, "version"));
	char want[32];
	snprintf(want, sizeof(want), "go%s", v);
	size_t n = strlen(want);
	cr_expect(got && strncmp(got, want, n) == 0 && (got[n] == '.' || got[n] == '\0'),
		  "target.go.version %s, built by %s", got ? got : "(none)", want);
	return go;
}

/* Every frame of threads.txt is named: none reads BINARY+0xOFF, but in a
 * thread inside a cgo call (runtime.asmcgocall below it), whose C frames
 * (cgo.go's block_in_c and cgo's wrapper) a stripped binary has no name
 * for, as for eu-stack. */
static void expect_threads_named(const char *out, const char *path)
{
	char *txt = read_in(out, "threads.txt");
	cr_assert(txt);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char unnamed[600];
	snprintf(unnamed, sizeof(unnamed), "%s+0x", base);
	for (char *th = strstr(txt, "\nThread "); th; ) {
		char *next = strstr(th + 1, "\nThread ");
		if (next)
			*next = '\0';
		const char *u = strstr(th, unnamed);
		cr_expect(!u || strstr(th, "runtime.asmcgocall"),
			  "an unnamed frame of %s outside a cgo call: %.120s", base, u ? u : "");
		if (next)
			*next = '\n';
		th = next;
	}
	cr_expect(strstr(txt, "runtime."), "no runtime frame in:\n%.1500s", txt);
	free(txt);
}

/* The text of goroutine goid in a debug=2 dump ("goroutine N [" to the
 * blank line), its length in *len; NULL if absent. */
static const char *goroutine_block(const char *dump, long goid, size_t *len)
{
	char head[48];
	int n = snprintf(head, sizeof(head), "goroutine %ld [", goid);
	for (const char *p = dump; (p = strstr(p, head)); p += n) {
		if (p != dump && p[-1] != '\n')
			continue;
		const char *end = strstr(p, "\n\n");
		*len = end ? (size_t)(end - p) + 1 : strlen(p);
		return p;
	}
	return NULL;
}

/* Every goroutine of the runtime's own dump, its labels, the version,
 * every thread named; layouts from DWARF or, for a build without it (-w,
 * -s -w), from the built-in row of its release; runtime.allgs and allm
 * from .symtab or, stripped (-s), found in the target's memory. */
static void goroutines_match(const char *v, const char *kind, const char *layouts, const char *globals)
{
	char path[512];
	matrix_fixture(v, kind, path, sizeof(path));
	struct target_run g;
	snapshot(&g, path);
	char theirs[300], cmd[400];
	snprintf(theirs, sizeof(theirs), "%s/theirs.txt", g.dir);
	snprintf(cmd, sizeof(cmd), "dump2 %s", theirs);
	go_fixture_command(&g.t, cmd);
	char *ours = read_in(g.out, "goroutine.txt");
	char *their = read_file(theirs, NULL);
	cr_assert(ours, "Go %s: no goroutine.txt", v);
	cr_assert(their);
	static long a[4096], b[4096];
	size_t na = go_goroutine_ids(ours, a, 4096), nb = go_goroutine_ids(their, b, 4096);
	cr_expect_geq(nb, 20, "the runtime lists only %zu goroutines", nb);
	size_t missing = 0;
	for (size_t i = 0; i < nb; i++) {
		bool found = false;
		for (size_t k = 0; k < na && !found; k++)
			found = a[k] == b[i];
		missing += !found;
	}
	cr_expect_eq(missing, 0, "Go %s: %zu of the runtime's %zu goroutines missing (we list %zu)", v,
		     missing, nb, na);
	cr_expect_eq(na, nb, "Go %s%s: we list %zu goroutines, the runtime %zu", v, kind, na, nb);
	/* Every goroutine but 1 (the one writing the runtime's dump) sits
	 * still between our snapshot and the dump: its block is the same text
	 * (status and wait reason, frames, arguments, files, offsets). */
	size_t differ = 0;
	for (size_t i = 0; i < nb; i++) {
		if (b[i] == 1)
			continue;
		size_t lo, lt;
		const char *o = goroutine_block(ours, b[i], &lo), *t = goroutine_block(their, b[i], &lt);
		if (o && t && (lo != lt || memcmp(o, t, lo) != 0)) {
			if (differ++ == 0)
				cr_log_error("Go %s%s: goroutine %ld\n--- ours\n%.*s--- runtime's\n%.*s", v, kind,
					     b[i], (int)lo, o, (int)lt, t);
		}
	}
	cr_expect_eq(differ, 0, "Go %s%s: %zu goroutines differ from the runtime's dump", v, kind, differ);
	free(ours);
	free(their);
	char pp[400];
	snprintf(pp, sizeof(pp), "%s/goroutine.pprof", g.out);
	Perftools__Profiles__Profile *p = NULL;
	cr_assert_eq(pprof_read_file(pp, &p), 0);
	bool labelled = false;
	for (size_t i = 0; i < p->n_sample; i++)
		labelled |= p->sample[i]->n_label > 0;
	perftools__profiles__profile__free_unpacked(p, NULL);
	cr_expect(labelled, "Go %s: no pprof labels in goroutine.pprof", v);
	cJSON *m = manifest_need(g.out);
	const cJSON *go = expect_version(m, v);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(go, "goroutines_readable")));
	const char *src = cJSON_GetStringValue(cJSON_GetObjectItem(go, "layouts"));
	cr_expect(src && strcmp(src, layouts) == 0, "Go %s%s: layouts from %s, not %s", v, kind,
		  src ? src : "(not said)", layouts);
	src = cJSON_GetStringValue(cJSON_GetObjectItem(go, "globals"));
	cr_expect(src && strcmp(src, globals) == 0, "Go %s%s: runtime globals from %s, not %s", v, kind,
		  src ? src : "(not said)", globals);
	/* the heap profile's globals: from .symtab, or stripped from the
	 * runtime's instructions; the profile is written either way */
	const char *heap_globals = strcmp(globals, "memory") == 0 ? "disasm" : "symtab";
	src = cJSON_GetStringValue(cJSON_GetObjectItem(go, "heap_globals"));
	cr_expect(src && strcmp(src, heap_globals) == 0, "Go %s%s: heap globals from %s, not %s", v, kind,
		  src ? src : "(not said)", heap_globals);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(go, "heap_profile"), "enabled")),
		  "Go %s%s: no heap profile", v, kind);
	snprintf(pp, sizeof(pp), "%s/heap.pprof", g.out);
	p = NULL;
	cr_expect_eq(pprof_read_file(pp, &p), 0, "Go %s%s: heap.pprof unreadable", v, kind);
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	/* and that release's own go tool pprof reads both profiles without a
	 * word of warning (plain and stripped builds: the others write the
	 * same profiles) */
	if (!strcmp(kind, "") || !strcmp(kind, "-stripped")) {
		char path_env[4096];
		snprintf(path_env, sizeof(path_env), "/usr/lib/go-%s/bin:%s", v, getenv("PATH") ? getenv("PATH") : "");
		setenv("PATH", path_env, 1);
		static const char *const members[] = {"goroutine.pprof", "heap.pprof"};
		for (size_t i = 0; i < 2; i++) {
			static char out[1 << 16], err[4096];
			snprintf(pp, sizeof(pp), "%s/%s", g.out, members[i]);
			int rc = go_pprof("-raw", pp, out, sizeof(out), err, sizeof(err));
			cr_expect_eq(rc, 0, "Go %s%s: go tool pprof -raw %s: %s", v, kind, members[i], err);
			cr_expect(!strstr(err, "arning"), "Go %s%s: go tool pprof warns on %s: %s", v, kind,
				  members[i], err);
		}
	}
	cJSON_Delete(m);
	expect_threads_named(g.out, path);
	run_end(&g);
}

#define GO_MATRIX(tag, v)                                                                          \
	Test(go_matrix, plain_##tag, .timeout = 120) { goroutines_match(v, "", "dwarf", "symtab"); } \
	Test(go_matrix, nodwarf_##tag, .timeout = 120)                                             \
	{                                                                                          \
		goroutines_match(v, "-nodwarf", "table", "symtab");                                \
	}                                                                                          \
	Test(go_matrix, stripped_##tag, .timeout = 120)                                            \
	{                                                                                          \
		goroutines_match(v, "-stripped", "table", "memory");                               \
	}                                                                                          \
	Test(go_matrix, stripped_pie_##tag, .timeout = 120)                                        \
	{                                                                                          \
		goroutines_match(v, "-stripped-pie", "table", "memory");                           \
	}                                                                                          \
	Test(go_matrix, stripped_static_##tag, .timeout = 120)                                     \
	{                                                                                          \
		goroutines_match(v, "-stripped-static", "table", "memory");                        \
	}

GO_MATRIX(go1_19, "1.19")
GO_MATRIX(go1_21, "1.21")
GO_MATRIX(go1_22, "1.22")
GO_MATRIX(go1_23, "1.23")
GO_MATRIX(go1_24, "1.24")
GO_MATRIX(go1_25, "1.25")
GO_MATRIX(go1_26, "1.26")
GO_MATRIX(go1_27, "1.27")
