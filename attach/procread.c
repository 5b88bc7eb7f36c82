/* Small /proc helpers that attach/ exports to its users. */
#include "attach/attach.h"
#include "attach/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *attach_syscall_name(long nr)
{
	/* The syscalls a stuck thread is usually found in. */
	static const struct {
		long nr;
		const char *name;
	} table[] = {
		{SYS_read, "read"}, {SYS_write, "write"}, {SYS_poll, "poll"},
		{SYS_select, "select"}, {SYS_pselect6, "pselect6"}, {SYS_ppoll, "ppoll"},
		{SYS_nanosleep, "nanosleep"}, {SYS_clock_nanosleep, "clock_nanosleep"},
		{SYS_futex, "futex"}, {SYS_epoll_wait, "epoll_wait"},
		{SYS_epoll_pwait, "epoll_pwait"}, {SYS_accept, "accept"}, {SYS_accept4, "accept4"},
		{SYS_connect, "connect"}, {SYS_recvfrom, "recvfrom"}, {SYS_recvmsg, "recvmsg"},
		{SYS_sendto, "sendto"}, {SYS_sendmsg, "sendmsg"}, {SYS_wait4, "wait4"},
		{SYS_waitid, "waitid"}, {SYS_pause, "pause"}, {SYS_rt_sigsuspend, "rt_sigsuspend"},
		{SYS_rt_sigtimedwait, "rt_sigtimedwait"}, {SYS_semop, "semop"},
		{SYS_semtimedop, "semtimedop"}, {SYS_msgrcv, "msgrcv"}, {SYS_flock, "flock"},
		{SYS_fcntl, "fcntl"}, {SYS_ioctl, "ioctl"}, {SYS_openat, "openat"},
		{SYS_pread64, "pread64"}, {SYS_pwrite64, "pwrite64"}, {SYS_readv, "readv"},
		{SYS_writev, "writev"}, {SYS_fsync, "fsync"}, {SYS_fdatasync, "fdatasync"},
		{SYS_sched_yield, "sched_yield"}, {SYS_io_getevents, "io_getevents"},
		{SYS_io_uring_enter, "io_uring_enter"}, {SYS_sync, "sync"}, {SYS_vfork, "vfork"},
		{SYS_clone, "clone"}, {SYS_clone3, "clone3"}, {SYS_execve, "execve"},
		{SYS_exit_group, "exit_group"}, {SYS_mmap, "mmap"}, {SYS_munmap, "munmap"},
		{SYS_restart_syscall, "restart_syscall"}, {SYS_epoll_pwait2, "epoll_pwait2"},
		{SYS_recvmmsg, "recvmmsg"}, {SYS_sendmmsg, "sendmmsg"},
		{SYS_preadv, "preadv"}, {SYS_pwritev, "pwritev"}, {SYS_sendfile, "sendfile"},
		{SYS_splice, "splice"}, {SYS_msgsnd, "msgsnd"},
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].nr == nr)
			return table[i].name;
	return NULL;
}

size_t attach_read_small_file_at(int dirfd, const char *path, char *buf, size_t size)
{
	ssize_t n = procfs_read_at(dirfd, path, buf, size);
	return n > 0 ? (size_t)n : 0;
}

int attach_target_cpu_ns(const struct attach_target *t, uint64_t *ret)
{
	char buf[1024];
	ssize_t n = procfs_read_at(t->proc_dirfd, "stat", buf, sizeof(buf));
	if (n <= 0)
		return n < 0 ? (int)n : -EIO;
	struct procfs_stat st;
	int r = procfs_parse_stat(buf, &st);
	if (r < 0)
		return r;
	long hz = sysconf(_SC_CLK_TCK);
	*ret = (st.utime + st.stime) * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
	return 0;
}

int attach_machine_cpu_ticks(uint64_t *all, uint64_t *stolen)
{
	char buf[512];
	ssize_t n = procfs_read_at(AT_FDCWD, "/proc/stat", buf, sizeof(buf));
	if (n <= 0)
		return n < 0 ? (int)n : -EIO;
	/* cpu user nice system idle iowait irq softirq steal ... */
	unsigned long long v[8];
	if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) != 8)
		return -EINVAL;
	*all = 0;
	for (int i = 0; i < 8; i++)
		*all += v[i];
	*stolen = v[7];
	return 0;
}

int attach_threads_cpu_ns(const struct attach_target *t, struct thread_cpu **ret, size_t *n)
{
	*ret = NULL;
	*n = 0;
	/* A directory stream of our own: the target's task dirfd is shared. */
	int fd = openat(t->task_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -ESRCH;
	}
	struct thread_cpu *v = NULL;
	size_t used = 0, cap = 0;
	int r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end, path[64], buf[128];
		long tid = strtol(e->d_name, &end, 10);
		if (*end || tid <= 0)
			continue;
		snprintf(path, sizeof(path), "%ld/schedstat", tid);
		if (procfs_read_at(t->task_dirfd, path, buf, sizeof(buf)) <= 0)
			continue;
		if (used == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			struct thread_cpu *nv = realloc(v, ncap * sizeof(*v));
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
			cap = ncap;
		}
		v[used++] = (struct thread_cpu){.tid = (pid_t)tid, .ns = strtoull(buf, NULL, 10)};
	}
	closedir(d);
	if (r == 0 && used == 0)
		r = -ESRCH;
	if (r < 0) {
		free(v);
		return r;
	}
	*ret = v;
	*n = used;
	return 0;
}
