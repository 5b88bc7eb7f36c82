/*
 * The bundle format's one document (doc/bundle-format.md) against real
 * bundles of every kind (issue 48): a snapshot, a sampled capture with the
 * leak watch and growth, a leak found with its evidence, a Go and a
 * CPython target, several processes, a launched command, binaries copied,
 * annotations and the environment. tests/layout/check_manifest.py fails on
 * a manifest key the document does not name (or of another type) and on a
 * member no row matches: a key written without being documented fails here.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define MAX_BUNDLES 12

struct bundles {
	char root[256];
	char dir[MAX_BUNDLES][300];
	size_t n;
};

/* Capture target argv (started here until it prints ready, and killed;
 * NULL: args name their targets) with args (PID stands for its pid) into
 * a new bundle. */
static void make_bundle(struct bundles *b, const char *const *argv, const char *ready,
			const char *const *args)
{
	cr_assert_lt(b->n, MAX_BUNDLES);
	char *out = b->dir[b->n];
	char root[256];
	snprintf(root, sizeof(root), "%s", b->root);
	snprintf(out, sizeof(b->dir[0]), "%s/b%zu", root, b->n);
	struct target t = {0};
	char pid[16] = "";
	if (argv) {
		t = target_start(argv, ready);
		snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	}
	/* -o first: after "--" everything is the launched command's. */
	const char *full[32] = {"-o", out, "-q"};
	size_t k = 3;
	for (size_t i = 0; args[i] && k < 31; i++)
		full[k++] = strcmp(args[i], "PID") == 0 ? pid : args[i];
	full[k] = NULL;
	struct tool_result *r = malloc(sizeof(*r));
	cr_assert(r);
	tool_run(r, full);
	cr_assert_eq(r->exit_code, 0, "%s: exit %d: %s", args[0], r->exit_code, r->err);
	free(r);
	if (argv)
		target_kill(&t);
	b->n++;
}

Test(manifest_schema, every_kind_of_bundle_matches_the_document, .timeout = 300)
{
	const char *root = getenv("DIAG_SOURCE_ROOT");
	cr_assert(root, "DIAG_SOURCE_ROOT not set (run through meson test)");
	struct bundles b = {.n = 0};
	make_tmpdir(b.root, sizeof(b.root));
	const char *burner[] = {target_path("burner"), "1", NULL};

	const char *snap[] = {"-p", "PID", "--snapshot", "--annotate", "ticket=OPS-1", "--record-environ",
			      "--with-binaries", NULL};
	make_bundle(&b, burner, "ready", snap);
	const char *sampled[] = {"-p", "PID", "-d", "2s", "-i", "250ms", "--leak-watch", NULL};
	make_bundle(&b, burner, "ready", sampled);
	const char *ptrace[] = {"-p", "PID", "-d", "1s", "--cpu-engine", "ptrace", "--growth", NULL};
	make_bundle(&b, burner, "ready", ptrace);
	const char *leak_fds[] = {target_path("leak/leak_fds"), "20", NULL};
	const char *fast_leak[] = {"-p", "PID", "-d", "6s", "-i", "250ms", "--leak-watch", "-F", "49", NULL};
	make_bundle(&b, leak_fds, "ready", fast_leak);
	const char *launch[] = {"-d", "1s", "--", "/bin/sleep", "3", NULL};
	make_bundle(&b, NULL, "ready", launch);
	const char *t2[] = {target_path("burner"), "1", NULL};
	struct target other = target_start(t2, "ready");
	char group_pids[64];
	const char *group[] = {"-p", group_pids, "-d", "1s", NULL};
	/* Two processes: the started one and this other. */
	struct target first = target_start(burner, "ready");
	snprintf(group_pids, sizeof(group_pids), "%d,%d", (int)first.pid, (int)other.pid);
	make_bundle(&b, NULL, "ready", group);
	target_kill(&first);
	target_kill(&other);
	const char *py = getenv("DIAG_PY_FIXTURE");
	if (py && access("/usr/bin/python3", X_OK) == 0) {
		char tb[300];
		snprintf(tb, sizeof(tb), "%s/tb.txt", b.root);
		const char *python[] = {"/usr/bin/python3", py, tb, NULL};
		const char *py_args[] = {"-p", "PID", "-d", "1s", NULL};
		make_bundle(&b, python, "ready", py_args);
	}
	const char *go = getenv("DIAG_GO_FIXTURE");
	if (go && *go) {
		const char *gargv[] = {go, NULL};
		const char *g_snap[] = {"-p", "PID", "--snapshot", NULL};
		make_bundle(&b, gargv, "pid", g_snap);
		const char *g_args[] = {"-p", "PID", "-d", "1s", "--leak-watch", NULL};
		make_bundle(&b, gargv, "pid", g_args);
	}

	char cmd[8192];
	int len = snprintf(cmd, sizeof(cmd), "python3 %s/tests/layout/check_manifest.py %s/doc/bundle-format.md",
			   root, root);
	for (size_t i = 0; i < b.n; i++)
		len += snprintf(cmd + len, sizeof(cmd) - (size_t)len, " %s", b.dir[i]);
	char *out = malloc(65536);
	cr_assert(out);
	int rc = shell_output(cmd, out, 65536);
	fprintf(stderr, "%s", out);
	cr_expect_eq(rc, 0, "bundles the document does not describe:\n%s", out);
	free(out);
	rm_rf(b.root);
}
