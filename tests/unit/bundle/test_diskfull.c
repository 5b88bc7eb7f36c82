/* Write failures: the error comes back as -errno, temp files are removed,
 * and no manifest is ever left behind. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "tmpdir.h"

static bool exists(const char *dir, const char *name)
{
	char p[4096];

	return access(tmpdir_join(p, sizeof(p), dir, name), F_OK) == 0;
}

Test(diskfull, efbig_from_rlimit_fsize)
{
	char *tmp = tmpdir_make(), dir[4096], big[1000];
	struct rlimit rl = { 64, 64 };
	struct bundle *b;
	cJSON *m = cJSON_CreateObject();

	/* The default action of SIGXFSZ kills; ignored, write fails EFBIG. */
	signal(SIGXFSZ, SIG_IGN);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tmpdir_join(dir, sizeof(dir), tmp, "b");
	cr_assert_eq(bundle_create(dir, &b), 0);
	cr_assert_eq(bundle_write_member(b, "small.txt", "ok", 2), 0);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	cr_assert_eq(bundle_write_member(b, "big.bin", big, sizeof(big)), -EFBIG);
	cr_assert(!exists(dir, "big.bin"));
	cr_assert(!exists(dir, "big.bin.tmp"));
	/* the manifest itself does not fit */
	cJSON_AddStringToObject(m, "padding", big + 900);
	cr_assert_eq(bundle_finalize(b, m), -EFBIG);
	cr_assert(!exists(dir, "manifest.json"));
	cr_assert(!exists(dir, "manifest.json.tmp"));
	cr_assert(exists(dir, "small.txt"));
	cr_assert_eq(bundle_verify(dir, NULL, NULL), -ENOENT);
	rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
	setrlimit(RLIMIT_FSIZE, &rl);
	tmpdir_remove(tmp);
}

Test(diskfull, enospc_on_small_tmpfs)
{
	char *mnt, dir[4096], name[64], chunk[8192];
	struct bundle *b;
	struct bundle_stream *s;
	int r = 0, i;

	/* A private mount namespace (this test runs in its own process) so
	 * the tiny tmpfs is invisible to the rest of the system. */
	if (unshare(CLONE_NEWNS) < 0)
		cr_skip_test("unshare(CLONE_NEWNS): %s", strerror(errno));
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		cr_skip_test("make / private: %s", strerror(errno));
	mnt = tmpdir_make();
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=64k") < 0) {
		int e = errno;
		tmpdir_remove(mnt);
		cr_skip_test("mount tmpfs: %s", strerror(e));
	}

	memset(chunk, 'y', sizeof(chunk));
	tmpdir_join(dir, sizeof(dir), mnt, "b");
	cr_assert_eq(bundle_create(dir, &b), 0);
	cr_assert_eq(bundle_stream_open(b, "runtime.jsonl", &s), 0);
	for (i = 0; i < 64 && r == 0; i++) {
		snprintf(name, sizeof(name), "m%02d.bin", i);
		r = bundle_write_member(b, name, chunk, sizeof(chunk));
	}
	cr_assert_eq(r, -ENOSPC);
	cr_assert_gt(i, 1);
	cr_assert(!exists(dir, name), "%s left behind", name);
	snprintf(name, sizeof(name), "m%02d.bin.tmp", i - 1);
	cr_assert(!exists(dir, name), "%s left behind", name);
	/* fill whatever is left through the stream */
	for (r = 0, i = 0; i < 64 && r == 0; i++)
		r = bundle_stream_append(s, chunk, sizeof(chunk));
	cr_assert_eq(r, -ENOSPC);
	cr_assert_eq(bundle_finalize(b, cJSON_CreateObject()), -ENOSPC);
	cr_assert(!exists(dir, "manifest.json"));
	cr_assert(!exists(dir, "manifest.json.tmp"));
	umount(mnt);
	tmpdir_remove(mnt);
}
