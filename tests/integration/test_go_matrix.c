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

/* Is Debian's Go v toolchain (golang-V-go) installed? */
static bool go_installed(const char *v, char *go, size_t size)
{
	snprintf(go, size, "/usr/lib/go-%s/bin/go", v);
	return access(go, X_OK) == 0;
}

/* The fixture of version v (kind "" or "-stripped"); skips when the
 * toolchain is not installed, fails when it is and the fixture was not
 * built. */
static const char *matrix_fixture(const char *v, const char *kind, char *buf, size_t size)
{
	const char *dir = getenv("DIAG_GO_MATRIX_DIR");
	char go[64];
	if (!go_installed(v, go, sizeof(go)))
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

/* ---- the other Go members (issue 17), against the program's own ---- */

/* One sample of a profile: its stack as "function:line;..." (leaf first,
 * inlined frames included) and its first two values, summed over the
 * samples of the same key. */
struct keyed {
	char key[2048];
	int64_t v[2];
};

static size_t keyed_samples(const Perftools__Profiles__Profile *p, struct keyed *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *smp = p->sample[i];
		char key[2048] = "";
		size_t len = 0;
		for (size_t k = 0; k < smp->n_location_id; k++) {
			const Perftools__Profiles__Location *loc = pprof_location(p, smp->location_id[k]);
			for (size_t j = 0; loc && j < loc->n_line; j++) {
				const Perftools__Profiles__Function *f = pprof_function(p, loc->line[j]->function_id);
				const char *name = f ? pprof_str(p, f->name) : "?";
				/* Go 1.23-1.27's own threadcreate profile keeps the
				 * zero words after a creation stack as PC 0 frames
				 * with no name (profilerecord.StackRecord is not cut
				 * at the first 0, as StackRecord.Stack() was): the
				 * same stack, padded */
				if (name && !*name)
					continue;
				int w = snprintf(key + len, sizeof(key) - len, "%s:%lld;", name ? name : "?",
						 (long long)loc->line[j]->line);
				if (w > 0 && (size_t)w < sizeof(key) - len)
					len += (size_t)w;
			}
		}
		size_t at = 0;
		while (at < n && strcmp(out[at].key, key) != 0)
			at++;
		if (at == n) {
			if (n == max)
				continue;
			snprintf(out[n].key, sizeof(out[n].key), "%s", key);
			out[n].v[0] = out[n].v[1] = 0;
			n++;
		}
		for (size_t k = 0; k < 2 && k < smp->n_value; k++)
			out[at].v[k] += smp->value[k];
	}
	return n;
}

static const struct keyed *find_key(const struct keyed *ks, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ks[i].key, key))
			return &ks[i];
	return NULL;
}

/* Ours and the program's own profile of name (the fixture writes it right
 * after our snapshot), decoded; NULL (and a failed expectation) if either
 * is missing. */
static bool both_profiles(struct target_run *g, const char *v, const char *kind, const char *name,
			  Perftools__Profiles__Profile **ours, Perftools__Profiles__Profile **theirs)
{
	char path[400], cmd[600];
	snprintf(path, sizeof(path), "%s/theirs-%s.pprof", g->dir, name);
	snprintf(cmd, sizeof(cmd), "profile %s %s", name, path);
	go_fixture_command(&g->t, cmd);
	*ours = *theirs = NULL;
	cr_expect_eq(pprof_read_file(path, theirs), 0, "Go %s%s: the program's own %s profile", v, kind, name);
	snprintf(path, sizeof(path), "%s/%s.pprof", g->out, name);
	cr_expect_eq(pprof_read_file(path, ours), 0, "Go %s%s: no %s.pprof", v, kind, name);
	return *ours && *theirs;
}

static void free_profiles(Perftools__Profiles__Profile *a, Perftools__Profiles__Profile *b)
{
	if (a)
		perftools__profiles__profile__free_unpacked(a, NULL);
	if (b)
		perftools__profiles__profile__free_unpacked(b, NULL);
}

/* block and mutex: the fixture records its events before it is ready and
 * none after, so every stack of ours through main.* is in the program's
 * profile with the same count of contentions and the same delay (CPU
 * ticks converted with the same rate, to 1 %), and every one of its
 * stacks through events_fn is in ours. The runtime's own lock contention
 * (1.22+: runtime._LostContendedRuntimeLock, runtime.unlock) goes on
 * between the two reads: there, the program's counts are at least ours. */
static void contention_matches(struct target_run *g, const char *v, const char *kind, const char *name,
			       const char *events_fn)
{
	Perftools__Profiles__Profile *ours, *theirs;
	if (!both_profiles(g, v, kind, name, &ours, &theirs)) {
		free_profiles(ours, theirs);
		return;
	}
	cr_expect_str_eq(pprof_str(ours, ours->sample_type[1]->type), "delay");
	cr_expect_str_eq(pprof_str(ours, ours->sample_type[1]->unit), "nanoseconds");
	static struct keyed a[512], b[512];
	size_t na = keyed_samples(ours, a, 512), nb = keyed_samples(theirs, b, 512);
	/* The fixture's events wait 3 x 5 ms (main.go), whatever any clock
	 * says. The runtime converts CPU ticks with a rate it measures once
	 * (runtime.ticksPerSecond); on these VMs that rate was once measured
	 * some 700,000x too high, and the program's own profile said 21 ns
	 * for the 15.6 ms we reported (CI of 1de18fb, Go 1.25 under ASan).
	 * A program that puts its own events under 10 ms is no reference for
	 * delays: ours are held to the waits themselves instead. */
	int64_t our_wait = 0, their_wait = 0;
	for (size_t i = 0; i < na; i++)
		our_wait += strstr(a[i].key, events_fn) ? a[i].v[1] : 0;
	for (size_t i = 0; i < nb; i++)
		their_wait += strstr(b[i].key, events_fn) ? b[i].v[1] : 0;
	bool their_clock_sane = their_wait >= 10000000;
	if (!their_clock_sane) {
		cr_log_warn("Go %s%s %s: the program's own profile puts its 3 x 5 ms of waits at %lld ns "
			    "(its tick rate is off); ours: %lld ns\n",
			    v, kind, name, (long long)their_wait, (long long)our_wait);
		cr_expect(our_wait >= 14000000 && our_wait <= 1000000000,
			  "Go %s%s %s: %lld ns of waits through %s, the fixture waits 3 x 5 ms", v, kind,
			  name, (long long)our_wait, events_fn);
	}
	bool events = false;
	for (size_t i = 0; i < na; i++) {
		events |= strstr(a[i].key, events_fn) != NULL;
		const struct keyed *t = find_key(b, nb, a[i].key);
		cr_expect(t, "Go %s%s %s: our stack %s is not in the program's profile", v, kind, name, a[i].key);
		if (!t)
			continue;
		if (!strstr(a[i].key, "main.")) {
			cr_expect_leq(a[i].v[0], t->v[0], "Go %s%s %s: %lld contentions at %s, the program says %lld",
				      v, kind, name, (long long)a[i].v[0], a[i].key, (long long)t->v[0]);
			continue;
		}
		cr_expect_eq(a[i].v[0], t->v[0], "Go %s%s %s: %lld contentions at %s, the program says %lld", v,
			     kind, name, (long long)a[i].v[0], a[i].key, (long long)t->v[0]);
		double d = (double)a[i].v[1] - (double)t->v[1];
		cr_expect(!their_clock_sane || d * d <= 1e-4 * (double)t->v[1] * (double)t->v[1] + 4,
			  "Go %s%s %s: delay %lld ns at %s, the program says %lld", v, kind, name,
			  (long long)a[i].v[1], a[i].key, (long long)t->v[1]);
	}
	cr_expect(events, "Go %s%s %s: no stack through %s", v, kind, name, events_fn);
	for (size_t i = 0; i < nb; i++)
		if (strstr(b[i].key, events_fn))
			cr_expect(find_key(a, na, b[i].key), "Go %s%s %s: the program's %s is not in ours", v,
				  kind, name, b[i].key);
	free_profiles(ours, theirs);
}

/* threadcreate: every M we saw was created where the program says, and it
 * counts at least as many there (an M may be started after our read). */
static void threadcreate_matches(struct target_run *g, const char *v, const char *kind)
{
	Perftools__Profiles__Profile *ours, *theirs;
	if (!both_profiles(g, v, kind, "threadcreate", &ours, &theirs)) {
		free_profiles(ours, theirs);
		return;
	}
	static struct keyed a[512], b[512];
	size_t na = keyed_samples(ours, a, 512), nb = keyed_samples(theirs, b, 512);
	int64_t total = 0;
	for (size_t i = 0; i < na; i++) {
		total += a[i].v[0];
		const struct keyed *t = find_key(b, nb, a[i].key);
		cr_expect(t && t->v[0] >= a[i].v[0], "Go %s%s threadcreate: %lld Ms from %s, the program says %lld",
			  v, kind, (long long)a[i].v[0], a[i].key, t ? (long long)t->v[0] : 0LL);
	}
	cr_expect_geq(total, 2, "Go %s%s: only %lld Ms in threadcreate.pprof", v, kind, (long long)total);
	free_profiles(ours, theirs);
}

/* allocs: Go's own shape (the heap's four values, alloc_space shown by
 * default), and every stack of ours is in the program's (buckets are
 * never freed). */
static void allocs_matches(struct target_run *g, const char *v, const char *kind)
{
	Perftools__Profiles__Profile *ours, *theirs;
	if (!both_profiles(g, v, kind, "allocs", &ours, &theirs)) {
		free_profiles(ours, theirs);
		return;
	}
	cr_expect_str_eq(pprof_str(ours, ours->default_sample_type), "alloc_space");
	cr_expect_str_eq(pprof_str(theirs, theirs->default_sample_type), "alloc_space");
	cr_expect_eq(ours->n_sample_type, theirs->n_sample_type);
	static struct keyed a[4096], b[4096];
	size_t na = keyed_samples(ours, a, 4096), nb = keyed_samples(theirs, b, 4096);
	size_t missing = 0;
	const char *first_missing = "";
	for (size_t i = 0; i < na; i++)
		if (!find_key(b, nb, a[i].key) && missing++ == 0)
			first_missing = a[i].key;
	cr_expect_eq(missing, 0, "Go %s%s allocs: %zu stacks not in the program's profile, the first: %s", v,
		     kind, missing, first_missing);
	free_profiles(ours, theirs);
}

/* goroutine.labels.txt against the program's debug=1 dump: the same
 * total, and every record (goroutines grouped by stack, with their
 * labels) the same text, but for goroutine 1's (main.main, writing the
 * dump). */
static void labels_text_matches(struct target_run *g, const char *v, const char *kind)
{
	char theirs_path[300], cmd[400];
	snprintf(theirs_path, sizeof(theirs_path), "%s/theirs1.txt", g->dir);
	snprintf(cmd, sizeof(cmd), "dump1 %s", theirs_path);
	go_fixture_command(&g->t, cmd);
	char *ours = read_in(g->out, "goroutine.labels.txt");
	char *theirs = read_file(theirs_path, NULL);
	cr_assert(ours, "Go %s%s: no goroutine.labels.txt", v, kind);
	cr_assert(theirs);
	cr_expect(strstr(ours, "# labels: {"), "Go %s%s: no labels in goroutine.labels.txt", v, kind);
	size_t first = strcspn(theirs, "\n") + 1;
	cr_expect(strncmp(ours, theirs, first) == 0, "Go %s%s: %.*s, the program: %.*s", v, kind,
		  (int)strcspn(ours, "\n"), ours, (int)first - 1, theirs);
	size_t differ = 0;
	for (char *rec = strstr(theirs, "\n\n"); rec; ) {
		rec += 2;
		char *end = strstr(rec, "\n\n");
		size_t len = end ? (size_t)(end - rec) + 1 : strlen(rec);
		char save = rec[len];
		rec[len] = '\0';
		if (*rec && !strstr(rec, "main.main")) {
			const char *at = strstr(ours, rec);
			if (!at && differ++ == 0)
				cr_log_error("Go %s%s: the program's record\n%s\nis not in goroutine.labels.txt", v,
					     kind, rec);
		}
		rec[len] = save;
		rec = end;
	}
	cr_expect_eq(differ, 0, "Go %s%s: %zu debug=1 records differ", v, kind, differ);
	free(ours);
	free(theirs);
}

/* Every goroutine of the runtime's own dump, its labels, the version,
 * every thread named; layouts from DWARF or, for a build without it (-w,
 * -s -w), from the built-in row of its release; runtime.allgs and allm
 * from .symtab or, stripped (-s), found in the target's memory. */
static void goroutines_match(const char *v, const char *kind, const char *layouts, const char *globals)
{
	char path[512];
	matrix_fixture(v, kind, path, sizeof(path));
	/* Every allocation in the heap profile, from the first init on, so
	 * allocs.pprof is compared on all of the fixture's stacks (generic
	 * functions' among them) and not on the few the default 512 KiB rate
	 * happens to pick in a run. */
	setenv("GODEBUG", "memprofilerate=1", 1);
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
		/* From Go 1.25 a release ships no pprof binary: `go tool pprof`
		 * compiles it first (two minutes here, past the test's
		 * timeout). Those releases' profiles are read by upstream pprof
		 * (Debian's golang-github-google-pprof-dev, built in tests/lib),
		 * the code cmd/pprof vendors. */
		char shipped[256];
		snprintf(shipped, sizeof(shipped), "/usr/lib/go-%s/pkg/tool/linux_amd64/pprof", v);
		const char *upstream = getenv("DIAG_PPROF_UPSTREAM");
		bool use_upstream = access(shipped, X_OK) != 0 && upstream && access(upstream, X_OK) == 0;
		if (use_upstream)
			fprintf(stderr, "Go %s ships no pprof binary: profiles read by %s\n", v, upstream);
		static const char *const members[] = {"goroutine.pprof", "heap.pprof", "allocs.pprof",
						      "block.pprof", "mutex.pprof", "threadcreate.pprof"};
		for (size_t i = 0; i < 6; i++) {
			static char out[1 << 16], err[4096];
			snprintf(pp, sizeof(pp), "%s/%s", g.out, members[i]);
			int rc = use_upstream ? upstream_pprof_raw(upstream, pp, out, sizeof(out), err, sizeof(err))
					      : go_pprof("-raw", pp, out, sizeof(out), err, sizeof(err));
			cr_expect_eq(rc, 0, "Go %s%s: go tool pprof -raw %s: %s", v, kind, members[i], err);
			cr_expect(!strstr(err, "arning"), "Go %s%s: go tool pprof warns on %s: %s", v, kind,
				  members[i], err);
		}
	}
	/* the rest of the design's Go members, each against the program's
	 * own profile of the same moment (issue 17) */
	src = cJSON_GetStringValue(cJSON_GetObjectItem(go, "contention_globals"));
	cr_expect(src && strcmp(src, heap_globals) == 0, "Go %s%s: block/mutex globals from %s, not %s", v,
		  kind, src ? src : "(not said)", heap_globals);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(go, "block_profile"), "enabled")),
		  "Go %s%s: block profile not read", v, kind);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(go, "mutex_profile"), "enabled")),
		  "Go %s%s: mutex profile not read", v, kind);
	cJSON_Delete(m);
	labels_text_matches(&g, v, kind);
	contention_matches(&g, v, kind, "block", "main.blockEvents");
	contention_matches(&g, v, kind, "mutex", "main.mutexEvents");
	threadcreate_matches(&g, v, kind);
	allocs_matches(&g, v, kind);
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

/* The name of the generic function the BUSY fixture spins in, in bundle
 * dir's member (cpu.pprof, wall.pprof; name_size bytes; "" when no sample
 * has it). */
static void spin_name_in_profile(const char *dir, const char *member, char *name, size_t name_size)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", dir, member);
	Perftools__Profiles__Profile *p = NULL;
	cr_assert_eq(pprof_read_file(path, &p), 0, "cannot read %s", path);
	name[0] = '\0';
	for (size_t i = 0; i < p->n_sample && !name[0]; i++) {
		const char *names[256];
		int nf = pprof_sample_frames(p, p->sample[i], names, 256);
		for (int k = 0; k < nf && !name[0]; k++)
			if (names[k] && strncmp(names[k], "main.Spin[", 10) == 0)
				snprintf(name, name_size, "%s", names[k]);
	}
	perftools__profiles__profile__free_unpacked(p, NULL);
}

/* A thread running a generic function is named by its symbol, shapes and
 * all (main.Spin[go.shape.int]), whether the binary is stripped or not:
 * the ELF symbol of the unstripped build, which perf shows and
 * runtime/pprof's CPU profile writes (from 1.21 on). A stripped build's
 * name comes from pclntab, which also holds the printed form
 * (main.Spin[...]) that tracebacks show; that one is not what a profiler
 * shows for the same code unstripped. */
Test(go_matrix, generic_names_alike_stripped_or_not, .timeout = 240)
{
	static const char *const versions[] = {"1.21", "1.22", "1.23", "1.24", "1.25", "1.26", "1.27"};
	static const char *const kinds[] = {"", "-stripped", "-stripped-pie"};
	int tried = 0;
	setenv("BUSY", "1", 1);
	for (size_t vi = 0; vi < sizeof(versions) / sizeof(versions[0]); vi++) {
		char go[64];
		if (!go_installed(versions[vi], go, sizeof(go)))
			continue;
		tried++;
		char symbol[256] = "";
		for (size_t ki = 0; ki < sizeof(kinds) / sizeof(kinds[0]); ki++) {
			char path[512], cmd[700], name[256];
			matrix_fixture(versions[vi], kinds[ki], path, sizeof(path));
			if (ki == 0) {
				/* the ground truth: the unstripped build's symbol table */
				snprintf(cmd, sizeof(cmd), "nm '%s' | grep -o ' main\\.Spin\\[.*' | head -1",
					 path);
				cr_assert_geq(shell_output(cmd, symbol, sizeof(symbol)), 0);
				symbol[strcspn(symbol, "\n")] = '\0';
				cr_assert(symbol[0], "Go %s: no main.Spin[...] symbol in %s", versions[vi],
					  path);
				memmove(symbol, symbol + 1, strlen(symbol)); /* the space */
			}
			const char *argv[] = {path, NULL};
			struct target_run g;
			run_begin(&g, argv, "pid", "b");
			struct tool_result r;
			const char *args[] = {"-q", "-p", g.pid, "-d", "700ms", "-o", g.out, NULL};
			tool_run_ok(&r, args);
			spin_name_in_profile(g.out, "cpu.pprof", name, sizeof(name));
			cr_expect_str_eq(name, symbol, "Go %s%s: cpu.pprof names the spinning generic '%s'",
					 versions[vi], kinds[ki], name);
			/* Stacks read from stopped threads name it alike. The
			 * final snapshot is one instant, at which the spinning
			 * goroutine may be off its thread (preempted, a GC
			 * stop: seen once under the sanitizers on a loaded
			 * box); the wall profile's ticks see it. */
			char *threads = read_in(g.out, "threads.txt");
			if (!threads || !strstr(threads, symbol)) {
				spin_name_in_profile(g.out, "wall.pprof", name, sizeof(name));
				cr_expect_str_eq(name, symbol,
						 "Go %s%s: neither threads.txt nor wall.pprof in %s "
						 "(wall.pprof: '%s'):\n%s",
						 versions[vi], kinds[ki], symbol, name,
						 threads ? threads : "(none)");
			}
			free(threads);
			run_end(&g);
		}
	}
	unsetenv("BUSY");
	if (!tried)
		cr_skip_test("no Go toolchain of 1.21 or later: setup.sh installs them");
}
