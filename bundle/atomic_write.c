/* Durable, atomic member writes relative to the bundle's directory fd. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/internal.h"

int bundle_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENOSPC;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

/* ".<12 hex>.tmp": what a temporary adds to its member's leaf name. */
#define TMP_SUFFIX_MAX 18

int bundle_open_temp(int dirfd, const char *leaf, mode_t mode, char *tmp, size_t size)
{
	/* A random name created with O_EXCL: never a file, FIFO or link
	 * someone planted under a name they could guess (a FIFO would block
	 * our open forever); a taken name is tried again. */
	for (int attempt = 0; attempt < 16; attempt++) {
		unsigned char rnd[6];
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return -EIO;
		if (snprintf(tmp, size, "%s.%02x%02x%02x%02x%02x%02x.tmp", leaf, rnd[0], rnd[1],
			     rnd[2], rnd[3], rnd[4], rnd[5]) >= (int)size)
			return -ENAMETOOLONG;
		int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

bool bundle_name_valid(const char *name)
{
	const char *c = name;

	if (!name || !*name || *name == '/' || strlen(name) >= PATH_MAX)
		return false;
	if (strcmp(name, BUNDLE_MANIFEST) == 0 || ends_with(name, ".tmp"))
		return false;
	while (*c) {
		size_t n = strcspn(c, "/");
		if (n == 0 || n >= NAME_MAX - TMP_SUFFIX_MAX)
			return false;
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		if (*c == '/') {
			c++;
			if (!*c)
				return false; /* trailing slash */
		}
	}
	return true;
}

int bundle_open_parent(int rootfd, const char *name, bool create, const char **ret_leaf)
{
	char comp[NAME_MAX + 1];
	const char *c = name;
	int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	for (;;) {
		size_t n = strcspn(c, "/");
		if (c[n] != '/')
			break;
		if (n > NAME_MAX) {
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(comp, c, n);
		comp[n] = '\0';
		bool made = false;
		if (create) {
			if (mkdirat(fd, comp, 0700) == 0)
				made = true;
			else if (errno != EEXIST) {
				int r = -errno;
				close(fd);
				return r;
			}
		}
		int sub = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int err = errno;
		/* A new directory entry is only durable once its parent is
		 * synced. Best effort: the member's own fsync reports real
		 * I/O errors. */
		if (made)
			(void)fsync(fd);
		close(fd);
		if (sub < 0)
			return -err;
		fd = sub;
		c += n + 1;
	}
	*ret_leaf = c;
	return fd;
}

static int write_renamed(int dirfd, const char *leaf, const void *data, size_t len, bool sync)
{
	char tmp[NAME_MAX + 1];
	int fd, r;

	fd = bundle_open_temp(dirfd, leaf, 0600, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	/* Exactly 0600 whatever the umask: readable by the owner, not a
	 * surprise 0400 that a later tool cannot rewrite. */
	(void)fchmod(fd, 0600);
	r = bundle_write_all(fd, data, len);
	if (r == 0 && sync && fsync(fd) < 0)
		r = -errno;
	/* Unsynced: the write-back starts now, so that the fsyncs at the end
	 * find it done (and a file system out of space can say so here). */
	if (r == 0 && !sync && len &&
	    sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE) < 0 && errno != ESPIPE &&
	    errno != EINVAL && errno != ENOSYS)
		r = -errno;
	/* close() can be where NFS reports a failed write-back. */
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dirfd, tmp, dirfd, leaf) < 0)
		r = -errno;
	if (r < 0)
		(void)unlinkat(dirfd, tmp, 0);
	return r;
}

int bundle_atomic_write_at(int dirfd, const char *leaf, const void *data, size_t len)
{
	return write_renamed(dirfd, leaf, data, len, true);
}

int bundle_write_unsynced_at(int dirfd, const char *leaf, const void *data, size_t len)
{
	return write_renamed(dirfd, leaf, data, len, false);
}
