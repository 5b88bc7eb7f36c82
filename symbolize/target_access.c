/* The dispatch behind target_access.h: direct, or through the broker a
 * sandboxed worker installed. */
#include "symbolize/target_access.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/internal.h"

static struct target_broker broker;
static bool have_broker;

void target_access_use_broker(const struct target_broker *b)
{
	broker = *b;
	have_broker = true;
}

const struct target_broker *target_access_broker(void)
{
	return have_broker ? &broker : NULL;
}

int target_open_mapped(int rootfd, pid_t pid, const struct maps_entry *e)
{
	if (have_broker)
		return broker.open_mapped(broker.arg, e);
	return sym_open_mapped_direct(rootfd, pid, e);
}

int target_open_debug(int rootfd, bool in_target_root, const char *path)
{
	if (have_broker)
		return broker.open_debug(broker.arg, in_target_root, path);
	return sym_open_debug_direct(in_target_root ? rootfd : AT_FDCWD, in_target_root, path);
}

int target_open_file(pid_t pid, enum target_file which)
{
	if (have_broker)
		return broker.open_file(broker.arg, which);
	char path[64];
	int fd;
	switch (which) {
	case TARGET_FILE_EXE:
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		break;
	case TARGET_FILE_AUXV:
		snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		break;
	case TARGET_FILE_PERFMAP: {
		fd = perfmap_open(pid, NULL);
		if (fd < 0)
			return fd;
		char why[128];
		int r = perfmap_check(fd, pid, why, sizeof(why));
		if (r < 0) {
			close(fd);
			return r;
		}
		return fd;
	}
	default:
		return -EINVAL;
	}
	return fd < 0 ? -errno : fd;
}

bool target_foreign_root(pid_t pid)
{
	if (have_broker)
		return broker.foreign_root;
	char path[64];
	struct stat ours, theirs;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	return stat(path, &theirs) == 0 && stat("/", &ours) == 0 &&
	       (theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino);
}

/* process_vm_readv and preadv both take at most IOV_MAX iovecs a call. */
#define MAX_IOV 1024

int target_read_ranges(pid_t pid, const struct iovec *local, const struct iovec *remote, size_t n)
{
	if (have_broker) {
		/* /proc/PID/mem reads one contiguous range a call: a range
		 * each. (A pread costs about what an iovec of
		 * process_vm_readv does: both walk the target's page tables
		 * and copy.) */
		for (size_t i = 0; i < n; i++) {
			size_t done = 0;
			while (done < local[i].iov_len) {
				ssize_t got = pread(broker.mem_fd, (uint8_t *)local[i].iov_base + done,
						    local[i].iov_len - done,
						    (off_t)((uintptr_t)remote[i].iov_base + done));
				if (got < 0 && errno == EINTR)
					continue;
				if (got < 0)
					return errno == EIO ? -EFAULT : -errno;
				if (got == 0)
					return -EFAULT;
				done += (size_t)got;
			}
		}
		return 0;
	}
	size_t done = 0;
	while (done < n) {
		size_t k = n - done < MAX_IOV ? n - done : MAX_IOV;
		size_t want = 0;
		for (size_t i = 0; i < k; i++)
			want += local[done + i].iov_len;
		ssize_t got = process_vm_readv(pid, local + done, k, remote + done, k, 0);
		if (got < 0)
			return -errno;
		if ((size_t)got != want)
			return -EFAULT;
		done += k;
	}
	return 0;
}

int target_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	return target_read_ranges(pid, &local, &remote, 1);
}
