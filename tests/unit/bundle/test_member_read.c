/*
 * Race-free member reads (issue 54): the reader opens every member below
 * the bundle's directory with no symlink followed at any component, never
 * blocks on a FIFO, and hands out only bytes whose size and sha256 are the
 * manifest's. Bundles are made by the bundle writer, then changed the way
 * a hostile owner would change them after a verification: a directory
 * swapped for a symlink, a member rewritten, a FIFO planted. The
 * openat2-less fallback is run for real, with openat2 made ENOSYS by a
 * seccomp filter in the test's own process.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/views/output_file.h"
#include "bundle/reader.h"
#include "tmpdir.h"

#define HONEST "honest bytes\n"
#define TIMELINE                                                                                   \
	"{\"t\":\"2026-01-01T00:00:00Z\",\"rss_bytes\":100}\n"                                     \
	"{\"t\":\"2026-01-01T00:00:01Z\",\"rss_bytes\":200}\n"

struct made {
	char *tmp;
	char dir[512], path[1024], other[1024];
};

/* A bundle with x/shadow, a.txt and a timeline, written by the writer. */
static void make(struct made *m)
{
	struct bundle *b;
	struct bundle_stream *s;
	memset(m, 0, sizeof(*m));
	m->tmp = tmpdir_make();
	tmpdir_join(m->dir, sizeof(m->dir), m->tmp, "b");
	cr_assert_eq(bundle_create(m->dir, &b), 0);
	cr_assert_eq(bundle_write_member(b, "x/shadow", HONEST, strlen(HONEST)), 0);
	cr_assert_eq(bundle_write_member(b, "a.txt", "aaaa", 4), 0);
	cr_assert_eq(bundle_stream_open(b, "runtime.jsonl", &s), 0);
	cr_assert_eq(bundle_stream_append(s, TIMELINE, strlen(TIMELINE)), 0);
	cr_assert_eq(bundle_finalize(b, cJSON_CreateObject()), 0);
	cr_assert_eq(bundle_verify(m->dir, NULL, NULL), 0);
}

static const char *at(struct made *m, const char *name)
{
	return tmpdir_join(m->path, sizeof(m->path), m->dir, name);
}

/* A directory beside the bundle holding shadow = SECRET, as /etc would. */
static const char *secret_dir(struct made *m)
{
	tmpdir_join(m->other, sizeof(m->other), m->tmp, "etc");
	cr_assert_eq(mkdir(m->other, 0700), 0);
	char p[1100];
	snprintf(p, sizeof(p), "%s/shadow", m->other);
	tmpdir_write_file(p, "SECRET\n");
	return m->other;
}

static void expect_failure(struct bundle_reader *r, const char *member, int e)
{
	const struct bundle_read_failure *f = bundle_reader_failure(r);
	cr_assert(f, "no failure noted");
	cr_expect_str_eq(f->member, member);
	cr_expect_eq(f->error, e, "noted error %d, want %d", f->error, e);
}

Test(member_read, honest_bundle_reads)
{
	struct made m;
	struct bundle_reader *r;
	char *d;
	size_t n;
	make(&m);
	cr_assert_eq(bundle_reader_open(m.dir, &r), 0);
	cr_assert_eq(bundle_reader_read(r, "x/shadow", &d, &n), 0);
	cr_expect_eq(n, strlen(HONEST));
	cr_expect_str_eq(d, HONEST);
	free(d);
	const struct bundle_timeline *tl;
	cr_assert_eq(bundle_reader_timeline(r, &tl), 0);
	cr_expect_eq(tl->npoints, 2);
	cr_expect_null(bundle_reader_failure(r));
	cr_expect_eq(bundle_reader_verify(r, BUNDLE_VERIFY_ALL, NULL, NULL, NULL), 0);
	bundle_reader_free(r);
	tmpdir_remove(m.tmp);
}

/* The attack of issue 54, without the timing: after the reader opened the
 * bundle (and after a verification), x becomes a symlink to a directory
 * holding another "shadow". No component is followed. */
static void swapped_dir_is_refused(void)
{
	struct made m;
	struct bundle_reader *r;
	char *d = NULL;
	size_t n;
	make(&m);
	cr_assert_eq(bundle_reader_open(m.dir, &r), 0);
	cr_assert_eq(bundle_reader_verify(r, BUNDLE_VERIFY_ALL, NULL, NULL, NULL), 0);
	char moved[1100];
	snprintf(moved, sizeof(moved), "%s/x.honest", m.tmp);
	cr_assert_eq(rename(at(&m, "x"), moved), 0);
	cr_assert_eq(symlink(secret_dir(&m), at(&m, "x")), 0);
	cr_expect_eq(bundle_reader_read(r, "x/shadow", &d, &n), -ELOOP);
	cr_expect_null(d);
	expect_failure(r, "x/shadow", -ELOOP);
	/* A symlink as the member itself, to a file with the right bytes:
	 * refused all the same. */
	char honest[1100];
	snprintf(honest, sizeof(honest), "%s/honest.txt", m.tmp);
	tmpdir_write_file(honest, "aaaa");
	cr_assert_eq(unlink(at(&m, "a.txt")), 0);
	cr_assert_eq(symlink(honest, at(&m, "a.txt")), 0);
	cr_expect_eq(bundle_reader_read(r, "a.txt", &d, &n), -ELOOP);
	bundle_reader_free(r);
	tmpdir_remove(m.tmp);
}

Test(member_read, symlinked_directory_or_leaf_is_refused)
{
	swapped_dir_is_refused();
}

/* A directory swapped for another real one (no link anywhere) whose
 * "shadow" has other bytes: the hash of what was read decides. */
Test(member_read, altered_bytes_are_refused)
{
	struct made m;
	struct bundle_reader *r;
	char *d = NULL;
	size_t n;
	make(&m);
	cr_assert_eq(bundle_reader_open(m.dir, &r), 0);
	tmpdir_write_file(at(&m, "x/shadow"), "HONEST bytes\n"); /* same size */
	cr_expect_eq(bundle_reader_read(r, "x/shadow", &d, &n), BUNDLE_ALTERED);
	cr_expect_null(d);
	expect_failure(r, "x/shadow", BUNDLE_ALTERED);
	tmpdir_write_file(at(&m, "a.txt"), "aaaaa"); /* longer */
	cr_expect_eq(bundle_reader_read(r, "a.txt", &d, &n), BUNDLE_ALTERED);
	/* The first failure stays the one told. */
	expect_failure(r, "x/shadow", BUNDLE_ALTERED);
	bundle_reader_free(r);
	tmpdir_remove(m.tmp);
}

/* The timeline is parsed as it streams: nothing of an altered one is kept,
 * and asking again starts from nothing (same answer, no stale points). */
Test(member_read, altered_timeline_is_dropped)
{
	struct made m;
	struct bundle_reader *r;
	const struct bundle_timeline *tl = NULL;
	make(&m);
	cr_assert_eq(bundle_reader_open(m.dir, &r), 0);
	tmpdir_write_file(at(&m, "runtime.jsonl"),
			  "{\"t\":\"2026-01-01T00:00:00Z\",\"rss_bytes\":999}\n"
			  "{\"t\":\"2026-01-01T00:00:01Z\",\"rss_bytes\":200}\n");
	cr_expect_eq(bundle_reader_timeline(r, &tl), BUNDLE_ALTERED);
	cr_expect_null(tl);
	cr_expect_eq(bundle_reader_timeline(r, &tl), BUNDLE_ALTERED);
	bundle_reader_free(r);
	/* Put back, it reads again, from a fresh reader. */
	tmpdir_write_file(at(&m, "runtime.jsonl"), TIMELINE);
	cr_assert_eq(bundle_reader_open(m.dir, &r), 0);
	cr_assert_eq(bundle_reader_timeline(r, &tl), 0);
	cr_expect_eq(tl->npoints, 2);
	bundle_reader_free(r);
	tmpdir_remove(m.tmp);
}

/* A FIFO under a member's name fails at once (O_NONBLOCK, then not a
 * regular file), for the reader and for verify; criterion's timeout
 * catches a hang. */
Test(member_read, planted_fifo_does_not_block, .timeout = 10)
{
	struct made m;
	struct bundle_reader *r;
	char *d;
	size_t n;
	make(&m);
	cr_assert_eq(unlink(at(&m, "x/shadow")), 0);
	cr_assert_eq(mkfifo(at(&m, "x/shadow"), 0600), 0);
	cr_assert_eq(unlink(at(&m, "runtime.jsonl")), 0);
	cr_assert_eq(mkfifo(at(&m, "runtime.jsonl"), 0600), 0);
	cr_assert_eq(bundle_reader_open(m.dir, &r), 0);
	cr_expect_eq(bundle_reader_read(r, "x/shadow", &d, &n), -EINVAL);
	const struct bundle_timeline *tl;
	cr_expect_eq(bundle_reader_timeline(r, &tl), -EINVAL);
	cr_expect_eq(bundle_reader_verify(r, BUNDLE_VERIFY_ALL, NULL, NULL, NULL), 1);
	bundle_reader_free(r);
	cr_expect_eq(bundle_verify(m.dir, NULL, NULL), 1);
	/* And the manifest itself. */
	cr_assert_eq(unlink(at(&m, "manifest.json")), 0);
	cr_assert_eq(mkfifo(at(&m, "manifest.json"), 0600), 0);
	cr_expect_eq(bundle_reader_open(m.dir, &r), -EBADMSG);
	tmpdir_remove(m.tmp);
}

/* Only listed members can be read (there is nothing to check another
 * against); manifest.json is the text that was parsed, whatever the file
 * holds now. */
Test(member_read, unlisted_and_manifest)
{
	struct made m;
	struct bundle_reader *r;
	char *d;
	size_t n;
	make(&m);
	cr_assert_eq(bundle_reader_open(m.dir, &r), 0);
	tmpdir_write_file(at(&m, "extra.txt"), "x");
	cr_expect_eq(bundle_reader_read(r, "extra.txt", &d, &n), -ENOENT);
	cr_expect_null(bundle_reader_failure(r), "an unlisted name is no failure of the bundle");
	cr_expect_eq(bundle_reader_verify(r, BUNDLE_VERIFY_UNLISTED, NULL, NULL, NULL), 1);
	size_t len;
	char *before = tmpdir_read_file(at(&m, "manifest.json"), &len);
	tmpdir_write_file(at(&m, "manifest.json"), "{\"members\":[]}");
	cr_assert_eq(bundle_reader_read(r, "manifest.json", &d, &n), 0);
	cr_expect_eq(n, len);
	cr_expect(memcmp(d, before, len) == 0, "manifest.json is not the text that was parsed");
	free(d);
	free(before);
	bundle_reader_free(r);
	tmpdir_remove(m.tmp);
}

/* The bundle directory is opened once, and not through a symlink. */
Test(member_read, symlinked_bundle_dir_is_refused)
{
	struct made m;
	struct bundle_reader *r;
	make(&m);
	char link[1100];
	snprintf(link, sizeof(link), "%s/link", m.tmp);
	cr_assert_eq(symlink(m.dir, link), 0);
	cr_expect_eq(bundle_reader_open(link, &r), -ELOOP);
	cr_expect_eq(bundle_verify(link, NULL, NULL), -ELOOP);
	tmpdir_remove(m.tmp);
}

/* verify names a link on a member's path as what it is. */
static void record(void *ctx, const char *member, const char *problem)
{
	char *seen = ctx;
	size_t used = strlen(seen);
	snprintf(seen + used, 256 - used, "%s: %s;", member, problem);
}

Test(member_read, verify_names_the_link)
{
	struct made m;
	make(&m);
	char moved[1100];
	snprintf(moved, sizeof(moved), "%s/x.honest", m.tmp);
	cr_assert_eq(rename(at(&m, "x"), moved), 0);
	cr_assert_eq(symlink(moved, at(&m, "x")), 0);
	char seen[256] = "";
	cr_expect_eq(bundle_verify(m.dir, record, seen), 1);
	cr_expect_str_eq(seen, "x/shadow: symbolic link in its path;x: not listed in manifest;");
	tmpdir_remove(m.tmp);
}

/* Kernels without openat2 (before 5.6): the component-wise walk gives the
 * same answers. openat2 is made ENOSYS for this test's process only. */
static void no_openat2(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		cr_skip_test("no seccomp filters here: %s", strerror(errno));
	cr_assert_eq(syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0), -1);
	cr_assert_eq(errno, ENOSYS);
}

Test(member_read, fallback_without_openat2)
{
	no_openat2();
	struct made m;
	struct bundle_reader *r;
	char *d;
	size_t n;
	make(&m);
	cr_assert_eq(bundle_reader_open(m.dir, &r), 0);
	cr_assert_eq(bundle_reader_read(r, "x/shadow", &d, &n), 0);
	cr_expect_str_eq(d, HONEST);
	free(d);
	bundle_reader_free(r);
	tmpdir_remove(m.tmp);
	swapped_dir_is_refused();
}

/* Single-file outputs are 0600, as members are, whatever the umask. */
Test(member_read, output_file_is_0600)
{
	char *tmp = tmpdir_make(), path[1024];
	tmpdir_join(path, sizeof(path), tmp, "out.html");
	mode_t old = umask(0);
	struct output_file of;
	cr_assert_eq(output_file_open(&of, path), 0);
	fputs("x", of.fp);
	cr_assert_eq(output_file_close(&of, 0), 0);
	umask(old);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0600, "mode %04o", st.st_mode & 07777);
	tmpdir_remove(tmp);
}
