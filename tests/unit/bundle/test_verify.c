/* bundle_verify: intact bundles pass; every kind of tampering is named. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "tmpdir.h"

struct problems {
	int n;
	char text[16][256];
};

static void record(void *ctx, const char *member, const char *problem)
{
	struct problems *p = ctx;

	cr_assert_lt(p->n, 16);
	snprintf(p->text[p->n++], sizeof(p->text[0]), "%s: %s", member, problem);
}

static bool has(const struct problems *p, const char *text)
{
	int count = 0;

	for (int i = 0; i < p->n; i++)
		count += strcmp(p->text[i], text) == 0;
	return count == 1;
}

static void dump(const struct problems *p)
{
	for (int i = 0; i < p->n; i++)
		cr_log_info("problem: %s", p->text[i]);
}

static char *make_bundle(char *dir, size_t size)
{
	char *tmp = tmpdir_make();
	struct bundle *b;
	struct bundle_stream *s;

	tmpdir_join(dir, size, tmp, "b");
	cr_assert_eq(bundle_create(dir, &b), 0);
	cr_assert_eq(bundle_write_member(b, "a.txt", "aaaa", 4), 0);
	cr_assert_eq(bundle_write_member(b, "b.txt", "bbbb", 4), 0);
	cr_assert_eq(bundle_write_member(b, "c.txt", "cccc", 4), 0);
	cr_assert_eq(bundle_write_member(b, "leak/open_fds-1/threads.txt", "t", 1), 0);
	cr_assert_eq(bundle_stream_open(b, "runtime.jsonl", &s), 0);
	cr_assert_eq(bundle_stream_append(s, "{}\n", 3), 0);
	cr_assert_eq(bundle_finalize(b, cJSON_CreateObject()), 0);
	return tmp;
}

Test(verify, intact)
{
	char dir[4096];
	char *tmp = make_bundle(dir, sizeof(dir));
	struct problems p = { 0 };

	cr_assert_eq(bundle_verify(dir, record, &p), 0);
	cr_assert_eq(p.n, 0);
	tmpdir_remove(tmp);
}

Test(verify, tampering_is_named)
{
	char dir[4096], path[4096];
	char *tmp = make_bundle(dir, sizeof(dir));
	struct problems p = { 0 };
	FILE *f;

	/* flip a byte, same size */
	f = fopen(tmpdir_join(path, sizeof(path), dir, "a.txt"), "r+");
	cr_assert_not_null(f);
	fputc('A', f);
	fclose(f);
	/* grow */
	f = fopen(tmpdir_join(path, sizeof(path), dir, "b.txt"), "a");
	fputc('b', f);
	fclose(f);
	/* delete, including inside a subdirectory */
	cr_assert_eq(unlink(tmpdir_join(path, sizeof(path), dir, "c.txt")), 0);
	cr_assert_eq(unlink(tmpdir_join(path, sizeof(path), dir, "leak/open_fds-1/threads.txt")), 0);
	/* add files, at the top, in a subdirectory, a leftover temp, a symlink */
	tmpdir_write_file(tmpdir_join(path, sizeof(path), dir, "extra.txt"), "x");
	tmpdir_write_file(tmpdir_join(path, sizeof(path), dir, "leak/open_fds-1/extra"), "x");
	tmpdir_write_file(tmpdir_join(path, sizeof(path), dir, "z.pb.gz.tmp"), "x");
	cr_assert_eq(mkdir(tmpdir_join(path, sizeof(path), dir, "new"), 0700), 0);
	tmpdir_write_file(tmpdir_join(path, sizeof(path), dir, "new/deep"), "x");
	cr_assert_eq(symlink("/etc", tmpdir_join(path, sizeof(path), dir, "etc-link")), 0);

	cr_assert_eq(bundle_verify(dir, record, &p), 1);
	dump(&p);
	cr_assert(has(&p, "a.txt: sha256 mismatch"));
	cr_assert(has(&p, "b.txt: size mismatch"));
	cr_assert(has(&p, "c.txt: missing"));
	cr_assert(has(&p, "leak/open_fds-1/threads.txt: missing"));
	cr_assert(has(&p, "extra.txt: not listed in manifest"));
	cr_assert(has(&p, "leak/open_fds-1/extra: not listed in manifest"));
	cr_assert(has(&p, "z.pb.gz.tmp: not listed in manifest"));
	cr_assert(has(&p, "new/deep: not listed in manifest"));
	cr_assert(has(&p, "etc-link: not listed in manifest"));
	cr_assert_eq(p.n, 9);
	/* a NULL callback is allowed: the verdict alone */
	cr_assert_eq(bundle_verify(dir, NULL, NULL), 1);
	tmpdir_remove(tmp);
}

Test(verify, stream_tampering)
{
	char dir[4096], path[4096];
	char *tmp = make_bundle(dir, sizeof(dir));
	struct problems p = { 0 };

	tmpdir_write_file(tmpdir_join(path, sizeof(path), dir, "runtime.jsonl"), "[]\n");
	cr_assert_eq(bundle_verify(dir, record, &p), 1);
	dump(&p);
	cr_assert(has(&p, "runtime.jsonl: sha256 mismatch"));
	cr_assert_eq(p.n, 1);
	tmpdir_remove(tmp);
}

Test(verify, manifest_errors)
{
	char dir[4096], path[4096];
	char *tmp = make_bundle(dir, sizeof(dir));
	struct problems p = { 0 };

	tmpdir_join(path, sizeof(path), dir, "manifest.json");
	tmpdir_write_file(path, "{ not json");
	cr_assert_eq(bundle_verify(dir, record, &p), -EBADMSG);
	tmpdir_write_file(path, "{\"members\": {}}");
	cr_assert_eq(bundle_verify(dir, record, &p), -EBADMSG);
	tmpdir_write_file(path, "{\"members\": [{\"name\": \"a.txt\", \"bytes\": 4}]}");
	cr_assert_eq(bundle_verify(dir, record, &p), -EBADMSG);
	tmpdir_write_file(path, "[]");
	cr_assert_eq(bundle_verify(dir, record, &p), -EBADMSG);
	cr_assert_eq(p.n, 0);
	unlink(path);
	cr_assert_eq(bundle_verify(dir, record, &p), -ENOENT);
	cr_assert_eq(bundle_verify("/nonexistent/diag", record, &p), -ENOENT);
	tmpdir_remove(tmp);
}

Test(verify, hostile_member_names)
{
	char *tmp = tmpdir_make(), path[4096];
	struct problems p = { 0 };

	tmpdir_write_file(tmpdir_join(path, sizeof(path), tmp, "manifest.json"),
			  "{\"members\": [{\"name\": \"../../etc/passwd\", \"bytes\": 1, "
			  "\"sha256\": \"00\"}, {\"name\": \"/etc/passwd\", \"bytes\": 1, "
			  "\"sha256\": \"00\"}]}");
	cr_assert_eq(bundle_verify(tmp, record, &p), 1);
	dump(&p);
	cr_assert(has(&p, "../../etc/passwd: invalid name"));
	cr_assert(has(&p, "/etc/passwd: invalid name"));
	cr_assert_eq(p.n, 2);
	tmpdir_remove(tmp);
}
