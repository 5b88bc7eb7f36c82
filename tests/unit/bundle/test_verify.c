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

/* A bundle from make_bundle, with a path buffer and the problems
 * bundle_verify reports: what the tampering tests start from. */
struct made {
	char dir[4096], path[4096];
	char *tmp; /* tmpdir_remove() it */
	struct problems p;
};

static void make_checked_bundle(struct made *m)
{
	memset(m, 0, sizeof(*m));
	m->tmp = make_bundle(m->dir, sizeof(m->dir));
}

Test(verify, intact)
{
	struct made m;

	make_checked_bundle(&m);
	cr_assert_eq(bundle_verify(m.dir, record, &m.p), 0);
	cr_assert_eq(m.p.n, 0);
	tmpdir_remove(m.tmp);
}

/* Issue 18 item 10: what "intact" vouches for is counted, so verify can
 * say it: the five members the manifest lists, each re-hashed. */
Test(verify, listed_counts_what_was_checked)
{
	struct made m;
	size_t members = 99;

	make_checked_bundle(&m);
	cr_assert_eq(bundle_verify_listed(m.dir, record, &m.p, &members), 0);
	cr_expect_eq(members, 5);
	/* Still counted when something is wrong, and NULL is fine. */
	tmpdir_join(m.path, sizeof(m.path), m.dir, "b.txt");
	cr_assert_eq(unlink(m.path), 0);
	members = 99;
	cr_assert_eq(bundle_verify_listed(m.dir, record, &m.p, &members), 1);
	cr_expect_eq(members, 5);
	cr_assert_eq(bundle_verify_listed(m.dir, NULL, NULL, NULL), 1);
	/* No manifest: nothing vouched for, *ret_members untouched. */
	tmpdir_join(m.path, sizeof(m.path), m.dir, "manifest.json");
	cr_assert_eq(unlink(m.path), 0);
	members = 99;
	cr_assert_eq(bundle_verify_listed(m.dir, NULL, NULL, &members), -ENOENT);
	cr_expect_eq(members, 99);
	tmpdir_remove(m.tmp);
}

Test(verify, tampering_is_named)
{
	struct made m;
	FILE *f;

	make_checked_bundle(&m);
	/* flip a byte, same size */
	f = fopen(tmpdir_join(m.path, sizeof(m.path), m.dir, "a.txt"), "r+");
	cr_assert_not_null(f);
	fputc('A', f);
	fclose(f);
	/* grow */
	f = fopen(tmpdir_join(m.path, sizeof(m.path), m.dir, "b.txt"), "a");
	fputc('b', f);
	fclose(f);
	/* delete, including inside a subdirectory */
	cr_assert_eq(unlink(tmpdir_join(m.path, sizeof(m.path), m.dir, "c.txt")), 0);
	cr_assert_eq(unlink(tmpdir_join(m.path, sizeof(m.path), m.dir, "leak/open_fds-1/threads.txt")),
		     0);
	/* add files, at the top, in a subdirectory, a leftover temp, a symlink */
	tmpdir_write_file(tmpdir_join(m.path, sizeof(m.path), m.dir, "extra.txt"), "x");
	tmpdir_write_file(tmpdir_join(m.path, sizeof(m.path), m.dir, "leak/open_fds-1/extra"), "x");
	tmpdir_write_file(tmpdir_join(m.path, sizeof(m.path), m.dir, "z.pb.gz.tmp"), "x");
	cr_assert_eq(mkdir(tmpdir_join(m.path, sizeof(m.path), m.dir, "new"), 0700), 0);
	tmpdir_write_file(tmpdir_join(m.path, sizeof(m.path), m.dir, "new/deep"), "x");
	cr_assert_eq(symlink("/etc", tmpdir_join(m.path, sizeof(m.path), m.dir, "etc-link")), 0);

	cr_assert_eq(bundle_verify(m.dir, record, &m.p), 1);
	dump(&m.p);
	cr_assert(has(&m.p, "a.txt: sha256 mismatch"));
	cr_assert(has(&m.p, "b.txt: size mismatch"));
	cr_assert(has(&m.p, "c.txt: missing"));
	cr_assert(has(&m.p, "leak/open_fds-1/threads.txt: missing"));
	cr_assert(has(&m.p, "extra.txt: not listed in manifest"));
	cr_assert(has(&m.p, "leak/open_fds-1/extra: not listed in manifest"));
	cr_assert(has(&m.p, "z.pb.gz.tmp: not listed in manifest"));
	cr_assert(has(&m.p, "new/deep: not listed in manifest"));
	cr_assert(has(&m.p, "etc-link: not listed in manifest"));
	cr_assert_eq(m.p.n, 9);
	/* a NULL callback is allowed: the verdict alone */
	cr_assert_eq(bundle_verify(m.dir, NULL, NULL), 1);
	tmpdir_remove(m.tmp);
}

Test(verify, stream_tampering)
{
	struct made m;

	make_checked_bundle(&m);
	tmpdir_write_file(tmpdir_join(m.path, sizeof(m.path), m.dir, "runtime.jsonl"), "[]\n");
	cr_assert_eq(bundle_verify(m.dir, record, &m.p), 1);
	dump(&m.p);
	cr_assert(has(&m.p, "runtime.jsonl: sha256 mismatch"));
	cr_assert_eq(m.p.n, 1);
	tmpdir_remove(m.tmp);
}

Test(verify, manifest_errors)
{
	struct made m;

	make_checked_bundle(&m);
	tmpdir_join(m.path, sizeof(m.path), m.dir, "manifest.json");
	tmpdir_write_file(m.path, "{ not json");
	cr_assert_eq(bundle_verify(m.dir, record, &m.p), -EBADMSG);
	tmpdir_write_file(m.path, "{\"members\": {}}");
	cr_assert_eq(bundle_verify(m.dir, record, &m.p), -EBADMSG);
	tmpdir_write_file(m.path, "{\"members\": [{\"name\": \"a.txt\", \"bytes\": 4}]}");
	cr_assert_eq(bundle_verify(m.dir, record, &m.p), -EBADMSG);
	tmpdir_write_file(m.path, "[]");
	cr_assert_eq(bundle_verify(m.dir, record, &m.p), -EBADMSG);
	cr_assert_eq(m.p.n, 0);
	unlink(m.path);
	cr_assert_eq(bundle_verify(m.dir, record, &m.p), -ENOENT);
	cr_assert_eq(bundle_verify("/nonexistent/diag", record, &m.p), -ENOENT);
	tmpdir_remove(m.tmp);
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
