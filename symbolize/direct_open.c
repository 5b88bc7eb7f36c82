/*
 * direct_open: opening a target's files with our own rights, under the
 * rules that keep the target from steering us. What target_access.h does
 * when it is direct, and what a broker does for a sandboxed worker (so
 * nothing here goes through target_access.h: it is the bottom).
 *
 * The paths in /proc/PID/maps are the target's view and are under its
 * control (think of a container, or a process that renames and replaces
 * its own binaries), so we never follow them blindly:
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
 *
 * A JIT's /tmp/perf-PID.map is anyone's to create: it is opened without
 * following a link or blocking, and trusted only as perf trusts it.
 */
#include "symbolize/direct_open.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "symbolize/internal.h"

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

int perfmap_check(int fd, pid_t pid, char *why, size_t why_size)
{
	struct stat st, proc;
	char path[32];

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (fstat(fd, &st) < 0 || stat(path, &proc) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_size, "not a regular file");
		return -EPERM;
	}
	if (st.st_uid != 0 && st.st_uid != proc.st_uid) {
		snprintf(why, why_size, "owned by uid %u, neither root nor the target's uid %u",
			 (unsigned)st.st_uid, (unsigned)proc.st_uid);
		return -EPERM;
	}
	if (st.st_mode & S_IWOTH) {
		snprintf(why, why_size, "writable by anyone (mode %04o)", (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int perfmap_open(pid_t pid, char path[64])
{
	char own[64];
	if (!path)
		path = own;
	snprintf(path, 64, "/tmp/perf-%d.map", (int)pid);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}
