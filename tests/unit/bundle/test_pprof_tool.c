/* The real consumer: `go tool pprof` must open what the builder writes,
 * without warnings. Skipped when Go is not installed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/profile.h"
#include "tmpdir.h"

static void write_profile(const char *path)
{
	static const struct profile_value_type types[2] = {
		{ "samples", "count" },
		{ "cpu", "nanoseconds" },
	};
	struct profile_builder *pb = profile_builder_new(
		types, 2, (struct profile_value_type){ "cpu", "nanoseconds" }, 10000000);
	struct profile_line inl[2] = {
		{ "inlined_leaf", NULL, "/src/a.c", 10, 12 },
		{ "worker_loop", NULL, "/src/a.c", 20, 25 },
	};
	struct profile_line mainl = { "main", NULL, "/src/main.c", 1, 3 };
	struct profile_label labels[2] = {
		{ .key = "thread_comm", .str = "worker" },
		{ .key = "tid", .num = 4242 },
	};
	uint64_t m, locs[2];
	int64_t values[2] = { 3, 30000000 };
	uint8_t *gz;
	size_t len;
	FILE *f;

	cr_assert_not_null(pb);
	profile_builder_set_time(pb, 1700000000000000000LL, 1000000000LL);
	cr_assert_eq(profile_builder_add_comment(pb, "diag-attach unit test"), 0);
	m = profile_builder_add_mapping(pb, 0x400000, 0x500000, 0, "/usr/bin/diag-test-target",
					"0123456789abcdef", true, true, true);
	locs[0] = profile_builder_add_location(pb, 0x401000, m, inl, 2);
	locs[1] = profile_builder_add_location(pb, 0x402000, m, &mainl, 1);
	cr_assert(locs[0] && locs[1]);
	cr_assert_eq(profile_builder_add_sample(pb, locs, 2, values, labels, 2), 0);
	cr_assert_eq(profile_builder_add_sample(pb, locs + 1, 1, values, NULL, 0), 0);
	cr_assert_eq(profile_builder_encode_gz(pb, &gz, &len), 0);
	profile_builder_free(pb);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(gz, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	free(gz);
}

Test(pprof_tool, go_tool_pprof_raw_opens_profile, .timeout = 120)
{
	char file[4096], out[4096], err[4096], cmd[16384];
	char *dir, *text, *errtext;

	if (system("command -v go >/dev/null 2>&1") != 0)
		cr_skip_test("go is not on PATH");
	/* `go` wants a cache directory; a test environment may have no HOME. */
	if (!getenv("HOME"))
		setenv("HOME", "/tmp", 1);
	dir = tmpdir_make();
	tmpdir_join(file, sizeof(file), dir, "cpu.pb.gz");
	tmpdir_join(out, sizeof(out), dir, "out.txt");
	tmpdir_join(err, sizeof(err), dir, "err.txt");
	write_profile(file);
	snprintf(cmd, sizeof(cmd), "go tool pprof -raw '%s' >'%s' 2>'%s'", file, out, err);
	int status = system(cmd);
	text = tmpdir_read_file(out, NULL);
	errtext = tmpdir_read_file(err, NULL);
	cr_assert_eq(status, 0, "go tool pprof failed (%d): %s", status, errtext);
	cr_assert_null(strcasestr(errtext, "warning"), "stderr: %s", errtext);
	/* -raw prints the decoded profile: our names must be in it */
	cr_assert_not_null(strstr(text, "inlined_leaf"), "%s", text);
	cr_assert_not_null(strstr(text, "worker_loop"), "%s", text);
	cr_assert_not_null(strstr(text, "thread_comm"), "%s", text);
	free(text);
	free(errtext);
	tmpdir_remove(dir);
}
