/*
 * Opening the target's files. The paths in /proc/PID/maps are the target's
 * view and are under its control (think of a container, or a process that
 * renames and replaces its own binaries), so we never follow them blindly:
 *
 *  - resolution is confined to the target's root with openat2(RESOLVE_IN_ROOT)
 *    on /proc/PID/root, so ".." and absolute symlinks cannot leave it, and
 *    magic links (/proc/self/fd/N style) are refused;
 *  - the final component must not be a symlink and must be a regular file
 *    (O_NONBLOCK keeps a FIFO planted there from blocking us before the
 *    S_ISREG check);
 *  - the file must be the one that is mapped (same device and inode),
 *    otherwise it was replaced since and we take the mapped one from
 *    /proc/PID/map_files, which is also the only way to a deleted file.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "symbolize/internal.h"
#include "symbolize/target_access.h"

static int check_regular(int fd, const struct maps_entry *e, bool want_identity)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > SYM_MAX_FILE_SIZE)
		return -EFBIG;
	if (want_identity && (st.st_ino != e->inode ||
			      major(st.st_dev) != e->dev_major || minor(st.st_dev) != e->dev_minor))
		return -ESTALE;
	return 0;
}

static int open_in_root(int rootfd, const struct maps_entry *e)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd, r;

	if (rootfd < 0)
		return -EBADF;
	fd = (int)syscall(SYS_openat2, rootfd, e->path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	r = check_regular(fd, e, true);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

static int open_map_files(pid_t pid, const struct maps_entry *e)
{
	char path[96];
	int fd, r;

	/* The kernel names these "%lx-%lx": lowercase hex, no 0x, no padding. */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)e->start, (unsigned long long)e->limit);
	/* A magic link by design, so no O_NOFOLLOW; the kernel hands us the
	 * very file of that VMA. Needs CAP_CHECKPOINT_RESTORE or
	 * CAP_SYS_ADMIN over the target. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = check_regular(fd, e, false);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int sym_open_mapped_direct(int rootfd, pid_t pid, const struct maps_entry *e)
{
	int fd = -ENOENT;

	if (!e->deleted) {
		fd = open_in_root(rootfd, e);
		if (fd >= 0)
			return fd;
	}
	int fd2 = open_map_files(pid, e);
	return fd2 >= 0 ? fd2 : fd;
}

int sym_open_mapped(int rootfd, pid_t pid, const struct maps_entry *e)
{
	return target_open_mapped(rootfd, pid, e);
}

int symbolize_open_mapped(int rootfd, pid_t pid, const struct maps_entry *e)
{
	return target_open_mapped(rootfd, pid, e);
}

int sym_open_debug_direct(int dirfd, bool in_root, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC,
		.resolve =
			in_root ? RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS : RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > SYM_MAX_FILE_SIZE) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int sym_read_vdso(pid_t pid, const struct maps_entry *e, void **ret_buf, size_t *ret_len)
{
	size_t len = (size_t)(e->limit - e->start);
	void *buf;
	int r;

	/* A few pages in practice; refuse anything that is clearly not one. */
	if (len == 0 || len > (64u << 20))
		return -EINVAL;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	/* The target runs on, but the vdso is immutable text: no tearing. */
	r = target_read(pid, e->start, buf, len);
	if (r < 0) {
		free(buf);
		return r == -EFAULT ? -EIO : r;
	}
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}
