/* attach/'s /proc readers and parsers, on files and texts of our own: no
 * target needed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/attach.h"
#include "attach/procfs.h"

static char *temp_file_with(const char *content, size_t len)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/diag-procread-XXXXXX");
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, content, len), (ssize_t)len);
	close(fd);
	return path;
}

Test(attach_procread, small_file_is_nul_terminated_and_capped)
{
	char *path = temp_file_with("0123456789", 10);
	char buf[6];
	memset(buf, 'x', sizeof(buf));
	cr_expect_eq(attach_read_small_file_at(AT_FDCWD, path, buf, sizeof(buf)), 5);
	cr_expect_str_eq(buf, "01234");
	char whole[64];
	cr_expect_eq(attach_read_small_file_at(AT_FDCWD, path, whole, sizeof(whole)), 10);
	cr_expect_str_eq(whole, "0123456789");
	unlink(path);
}

Test(attach_procread, missing_or_empty_file_reads_as_nothing)
{
	char buf[16];
	cr_expect_eq(attach_read_small_file_at(AT_FDCWD, "/nonexistent/diag", buf, sizeof(buf)), 0);
	char *path = temp_file_with("", 0);
	cr_expect_eq(attach_read_small_file_at(AT_FDCWD, path, buf, sizeof(buf)), 0);
	unlink(path);
	cr_expect_eq(attach_read_small_file_at(AT_FDCWD, "/proc/self/stat", buf, 0), 0);
}

Test(attach_procread, own_proc_status_through_a_dirfd)
{
	int dirfd = open("/proc/self", O_RDONLY | O_DIRECTORY);
	cr_assert(dirfd >= 0);
	char buf[8192];
	cr_assert_gt(attach_read_small_file_at(dirfd, "status", buf, sizeof(buf)), 0);
	long pid = 0;
	cr_expect_eq(procfs_status_field(buf, "Pid", &pid), 0);
	cr_expect_eq(pid, (long)getpid());
	long v;
	cr_expect_eq(procfs_status_field(buf, "NoSuchKey", &v), -ENOENT);
	close(dirfd);
}

Test(attach_procread, syscall_names)
{
	cr_expect_str_eq(attach_syscall_name(SYS_read), "read");
	cr_expect_str_eq(attach_syscall_name(SYS_epoll_wait), "epoll_wait");
	cr_expect_str_eq(attach_syscall_name(SYS_futex), "futex");
	cr_expect_null(attach_syscall_name(-1));
	cr_expect_null(attach_syscall_name(100000));
}

Test(attach_procread, stat_with_a_hostile_comm)
{
	/* A thread may name itself ") R 1 2": fields come after the LAST ')'. */
	const char *text = "1234 (evil) R 1 2) S 77 1234 1234 0 -1 4194560 100 0 0 0 "
			   "11 22 0 0 20 0 1 0 333 4096 100 18446744073709551615\n";
	struct procfs_stat st;
	cr_assert_eq(procfs_parse_stat(text, &st), 0);
	cr_expect_str_eq(st.comm, "evil) R 1 2");
	cr_expect_eq(st.state, 'S');
	cr_expect_eq(st.ppid, 77);
	cr_expect_eq(st.utime, 11);
	cr_expect_eq(st.stime, 22);
	cr_expect_eq(st.starttime, 333);
	cr_expect_eq(st.vsize, 4096);
	cr_expect_lt(procfs_parse_stat("1234 (no closing paren S 1", &st), 0);
}
