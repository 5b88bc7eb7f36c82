/*
 * member_read: the one way a finished bundle's members are opened and read
 * (reader, verify, and through the reader pem, report, diff, export and
 * merge).
 *
 * The bundle's owner may be someone other than the user reading it (root
 * running pem on a user's bundle), and may change the tree while we read:
 * swap a member's directory for a symlink to /etc between a verification
 * and a read (renameat2 RENAME_EXCHANGE, timed by inotify). So a member is
 * opened below the bundle's directory fd with no symlink followed at any
 * component, in one openat2 call, and its bytes are hashed as they are
 * read: what a caller gets is exactly what was compared to the manifest.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bundle/internal.h"
#include "bundle/reader.h"

void bundle_digest_init(struct bundle_digest *d)
{
	sha256_init(&d->ctx);
	d->bytes = 0;
}

void bundle_digest_update(struct bundle_digest *d, const void *data, size_t len)
{
	sha256_update(&d->ctx, len, data);
	d->bytes += len;
}

static int hex_value(char c)
{
	return c >= '0' && c <= '9' ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

bool bundle_digest_matches(struct bundle_digest *d, const struct bundle_member_want *want)
{
	uint8_t got[SHA256_DIGEST_SIZE];
	sha256_digest(&d->ctx, sizeof(got), got);
	const char *w = want->sha256;
	if (d->bytes != want->bytes || !w || strlen(w) != 2 * sizeof(got))
		return false;
	for (size_t i = 0; i < sizeof(got); i++) {
		int hi = hex_value(w[2 * i]), lo = hex_value(w[2 * i + 1]);
		if (hi < 0 || lo < 0 || got[i] != (uint8_t)(hi << 4 | lo))
			return false;
	}
	return true;
}

/* O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR: say ELOOP
 * when name, in dirfd, is one, as openat2 does. Only the error's words
 * depend on this second look; the open already refused. */
static int dir_error(int dirfd, const char *name, int e)
{
	struct stat st;
	if (e == -ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		return -ELOOP;
	return e;
}

int bundle_open_dir_nofollow(int dirfd, const char *path)
{
	int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? fd : dir_error(dirfd, path, -errno);
}

/* Before openat2 (Linux 5.6): each directory opened O_NOFOLLOW, then the
 * leaf, each relative to the last. The same guarantee, one component at
 * a time. */
static int open_walking(int dirfd, const char *name)
{
	char comp[NAME_MAX + 1];
	const char *c = name;
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	for (;;) {
		size_t n = strcspn(c, "/");
		if (n > NAME_MAX) {
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(comp, c, n);
		comp[n] = '\0';
		if (c[n] != '/')
			break;
		int sub = bundle_open_dir_nofollow(fd, comp);
		close(fd);
		if (sub < 0)
			return sub;
		fd = sub;
		c += n + 1;
	}
	int leaf = openat(fd, comp, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int e = leaf < 0 ? -errno : 0;
	close(fd);
	return leaf < 0 ? e : leaf;
}

int bundle_member_open(int dirfd, const char *name, struct stat *ret_st)
{
	/* O_NONBLOCK: a FIFO planted under a member's name must not hang
	 * the open (it fails the regular-file check below instead). */
	struct open_how how = {
		.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	int fd = -1, e = 0;
	/* EAGAIN: the kernel saw a rename race during a RESOLVE_BENEATH
	 * lookup and asks for a retry; a few are enough, more is a loop
	 * someone is driving. */
	for (int tries = 0; tries < 8; tries++) {
		fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
		e = fd < 0 ? -errno : 0;
		if (e != -EAGAIN && e != -EINTR)
			break;
	}
	if (e == -ENOSYS) {
		fd = open_walking(dirfd, name);
		e = fd < 0 ? fd : 0;
	}
	if (e < 0)
		return e;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		e = -errno;
		close(fd);
		return e;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (ret_st)
		*ret_st = st;
	return fd;
}

int bundle_read_fd(int fd, size_t size_hint, size_t max_len, struct bundle_digest *d, char **ret,
		   size_t *ret_len)
{
	/* The size is a first guess only: the file may be growing. */
	size_t cap = (size_hint < max_len ? size_hint : max_len) + 1, n = 0;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n + 1 >= cap) {
			if (n > max_len || cap > SIZE_MAX / 2) {
				free(buf);
				return n > max_len ? -EFBIG : -ENOMEM;
			}
			/* Room for one byte past max_len, which is enough to
			 * know the file is too big, and the NUL. */
			size_t nc = cap * 2;
			if (max_len < SIZE_MAX - 2 && nc > max_len + 2)
				nc = max_len + 2;
			char *nb = realloc(buf, nc);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap = nc;
		}
		ssize_t k = read(fd, buf + n, cap - n - 1);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			int e = -errno;
			free(buf);
			return e;
		}
		if (k == 0)
			break;
		if (d)
			bundle_digest_update(d, buf + n, (size_t)k);
		n += (size_t)k;
	}
	if (n > max_len) {
		free(buf);
		return -EFBIG;
	}
	buf[n] = '\0';
	*ret = buf;
	*ret_len = n;
	return 0;
}

int bundle_member_read(int dirfd, const char *name, size_t max_len,
		       const struct bundle_member_want *want, char **ret, size_t *ret_len)
{
	struct stat st;
	int fd = bundle_member_open(dirfd, name, &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > max_len) {
		close(fd);
		return -EFBIG;
	}
	struct bundle_digest d;
	bundle_digest_init(&d);
	char *buf;
	size_t len;
	int e = bundle_read_fd(fd, (size_t)st.st_size, max_len, &d, &buf, &len);
	close(fd);
	if (e < 0)
		return e;
	/* The hash of the very bytes handed out: a file changed after a
	 * verification, or while we read it, is refused here. */
	if (want && !bundle_digest_matches(&d, want)) {
		free(buf);
		return BUNDLE_ALTERED;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}
