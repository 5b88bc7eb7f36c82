/* Identifying a target and deciding whether we may capture it, without
 * touching it. */
#include "attach.h"
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define PF_KTHREAD 0x00200000UL
#define CAP_SYS_PTRACE_BIT 19

static int read_status(int dirfd, char *buf, size_t size)
{
	ssize_t n = procfs_read_at(dirfd, "status", buf, size);
	return n < 0 ? (int)n : 0;
}

static pid_t tracer_of(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (procfs_read_at(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return 0;
	long tp = 0;
	if (procfs_status_field(buf, "TracerPid", &tp) < 0)
		return 0;
	return (pid_t)tp;
}

int attach_thread_group(pid_t tid, pid_t *ret)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	ssize_t n = procfs_read_at(AT_FDCWD, path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	long tgid = 0;
	if (procfs_status_field(buf, "Tgid", &tgid) < 0 || tgid <= 0)
		return -EINVAL;
	*ret = (pid_t)tgid;
	return 0;
}

/* A leader seen as a zombie with one thread may be caught in the middle of a
 * non-leader exec (de_thread: the old leader is a zombie until the exec'ing
 * thread takes its pid, and /proc's stat and status are two reads on either
 * side of that swap). The pidfd says whether the whole thread group has
 * exited; without one (kernel < 5.3), read stat again a few times. */
static bool zombie_for_good(pid_t pid, uint64_t starttime)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd >= 0) {
		struct pollfd p = {.fd = pidfd, .events = POLLIN};
		int r = poll(&p, 1, 0);
		close(pidfd);
		if (r >= 0)
			return r > 0;
	} else if (errno == ESRCH) {
		return true;
	}
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 5; i++) {
		struct timespec pause = {.tv_nsec = 10 * 1000 * 1000};
		nanosleep(&pause, NULL);
		struct procfs_stat st;
		if (procfs_read_at(AT_FDCWD, path, buf, sizeof(buf)) < 0 || procfs_parse_stat(buf, &st) < 0 ||
		    st.starttime != starttime)
			return true;
		if (st.state != 'Z' && st.state != 'X')
			return false;
	}
	return true;
}

/* pid is us, or traces us (directly or through a chain): attaching would
 * deadlock both (strace #178). */
static bool in_own_tracer_chain(pid_t pid)
{
	if (pid == getpid())
		return true;
	pid_t p = tracer_of(getpid());
	for (int depth = 0; p > 0 && depth < 16; depth++) {
		if (p == pid)
			return true;
		p = tracer_of(p);
	}
	return false;
}

static int read_yama_scope(void)
{
	char buf[16];
	if (procfs_read_at(AT_FDCWD, "/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) < 0)
		return -1;
	return atoi(buf);
}

static bool have_cap_sys_ptrace(void)
{
	char buf[4096];
	if (procfs_read_at(AT_FDCWD, "/proc/self/status", buf, sizeof(buf)) < 0)
		return false;
	const char *p = strstr(buf, "CapEff:");
	if (!p)
		return false;
	unsigned long long caps = strtoull(p + 7, NULL, 16);
	return (caps >> CAP_SYS_PTRACE_BIT) & 1;
}

/* The capture lock: an abstract unix socket named after the target's pid
 * and start time. Two diag-attach on one process would fight over its
 * threads every sample (a SEIZE of a thread the other holds fails with
 * EPERM, and each would see the other's stops); the second one refuses
 * instead. An abstract name needs no file to clean up: the kernel drops it
 * when the holder exits, however it exits. A listening stream socket lets
 * the prober learn the holder's pid through SO_PEERCRED. Scope: the
 * network namespace, so tools in different containers do not see each
 * other's locks (they still cannot both hold a thread: EPERM). */
static socklen_t lock_address(pid_t pid, uint64_t starttime, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	int n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "diag-attach/%d/%llu", (int)pid,
			 (unsigned long long)starttime);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Who holds pid's capture lock: its pid, 0 if held but unknown (a full
 * backlog), -1 if nobody. */
static pid_t lock_holder(pid_t pid, uint64_t starttime)
{
	struct sockaddr_un sa;
	socklen_t len = lock_address(pid, starttime, &sa);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	pid_t holder = -1;
	if (connect(fd, (struct sockaddr *)&sa, len) == 0) {
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		holder = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0 ? cr.pid : 0;
	} else if (errno == EAGAIN) {
		holder = 0;
	}
	close(fd);
	return holder;
}

static int lock_take(pid_t pid, uint64_t starttime)
{
	struct sockaddr_un sa;
	socklen_t len = lock_address(pid, starttime, &sa);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, len) < 0) {
		int e = errno;
		close(fd);
		return e == EADDRINUSE ? -EBUSY : -e;
	}
	/* Never accepted: probes only need the connection to be queued. */
	if (listen(fd, 64) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/*
 * Is /proc the procfs of our own pid namespace? /proc/self resolves to our
 * pid as that procfs's namespace numbers it: our getpid() if it is ours,
 * our pid in an ancestor namespace if it is an ancestor's (a tool run by
 * `unshare -p -f` without --mount-proc), and nothing at all (ENOENT, while
 * the link itself exists) if it is a descendant's (a container's /proc
 * mounted on the host), where we are invisible. In both foreign cases the
 * pid the user gave and every /proc/PID we read name one process while
 * ptrace and pidfd_open, which take pids of our namespace, would act on
 * another one. Any other failure (no /proc at all) is left to the reads
 * that follow.
 */
static bool procfs_is_ours(void)
{
	char buf[32];
	ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);
	if (n < 0) {
		struct stat sb;
		return !(errno == ENOENT && lstat("/proc/self", &sb) == 0);
	}
	buf[n] = '\0';
	char *end;
	long self = strtol(buf, &end, 10);
	return *end == '\0' && self == (long)getpid();
}

/*
 * Has the process asked not to be inspected (PR_SET_DUMPABLE 0, a setuid
 * program, changed credentials)? The kernel hands every file of /proc/PID,
 * but not the directory itself (fs/proc/base.c task_dump_owner: the 0555
 * directories keep the effective ids so that stat(/proc/PID) still tells
 * the owner), to root when the process is not dumpable: "status" owned by
 * root while the process's effective uid (or gid) is not root means not
 * dumpable. A process running as root:root looks the same either way, and
 * every access check that could tell needs CAP_SYS_PTRACE against it
 * anyway: it reads as dumpable. status_st is an fstat of the status file
 * whose text is status.
 */
static bool status_says_dumpable(const struct stat *status_st, const char *status)
{
	unsigned long ruid, euid, rgid, egid;
	const char *u = strstr(status, "\nUid:"), *g = strstr(status, "\nGid:");
	if (!u || !g || sscanf(u + 5, "%lu %lu", &ruid, &euid) != 2 ||
	    sscanf(g + 5, "%lu %lu", &rgid, &egid) != 2)
		return true;
	return !((status_st->st_uid == 0 && euid != 0) || (status_st->st_gid == 0 && egid != 0));
}

/* The status file of the process at dirfd, with its owner (see
 * status_says_dumpable). Returns 0 or -errno. */
static int read_status_and_owner(int dirfd, char *buf, size_t size, struct stat *ret_st)
{
	int fd = openat(dirfd, "status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	int r = fstat(fd, ret_st) < 0 ? -errno : 0;
	while (r == 0 && off < size - 1) {
		ssize_t n = read(fd, buf + off, size - 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	buf[off] = '\0';
	return r;
}

int attach_target_probe(pid_t pid, struct attach_probe *ret)
{
	struct attach_probe pr = {.refusal = ATTACH_OK, .yama_scope = read_yama_scope(),
				  .have_cap_sys_ptrace = have_cap_sys_ptrace(), .dumpable = true};
	char path[64], buf[4096];

	/* First: every other answer below would come from the wrong /proc. */
	if (!procfs_is_ours()) {
		pr.refusal = ATTACH_FOREIGN_PROCFS;
		*ret = pr;
		return 0;
	}
	if (pid <= 0) {
		pr.refusal = ATTACH_NO_SUCH_PROCESS;
		*ret = pr;
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	int dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		pr.refusal = ATTACH_NO_SUCH_PROCESS;
		*ret = pr;
		return 0;
	}
	/* /proc/PID is a thread-group leader only; /proc/TID of a non-leader
	 * thread opens too, but its Tgid differs: the user gave a thread id. */
	struct procfs_stat st;
	struct stat status_st;
	if (procfs_read_at(dirfd, "stat", buf, sizeof(buf)) < 0 || procfs_parse_stat(buf, &st) < 0 ||
	    read_status_and_owner(dirfd, buf, sizeof(buf), &status_st) < 0) {
		close(dirfd);
		pr.refusal = ATTACH_NO_SUCH_PROCESS;
		*ret = pr;
		return 0;
	}
	pid_t holder = lock_holder(pid, st.starttime);
	long threads = 1, tracer = 0, uid = 0;
	procfs_status_field(buf, "Threads", &threads);
	procfs_status_field(buf, "TracerPid", &tracer);
	const char *u = strstr(buf, "\nUid:");
	if (u)
		uid = strtol(u + 5, NULL, 10);
	pr.target_uid = (uid_t)uid;
	pr.dumpable = status_says_dumpable(&status_st, buf);
	close(dirfd);

	if (st.flags & PF_KTHREAD)
		pr.refusal = ATTACH_KERNEL_THREAD;
	else if ((st.state == 'Z' || st.state == 'X') && threads <= 1 && zombie_for_good(pid, st.starttime))
		pr.refusal = ATTACH_ZOMBIE;
	else if (in_own_tracer_chain(pid))
		pr.refusal = ATTACH_SELF;
	else if (holder >= 0 && holder != getpid()) {
		pr.refusal = ATTACH_ALREADY_TRACED;
		pr.capture_locked = true;
		pr.tracer_pid = holder;
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)holder);
		if (holder > 0 &&
		    procfs_read_at(AT_FDCWD, path, pr.tracer_comm, sizeof(pr.tracer_comm)) > 0)
			pr.tracer_comm[strcspn(pr.tracer_comm, "\n")] = '\0';
		else
			snprintf(pr.tracer_comm, sizeof(pr.tracer_comm), "diag-attach");
	} else if (tracer != 0) {
		pr.refusal = ATTACH_ALREADY_TRACED;
		pr.tracer_pid = (pid_t)tracer;
		snprintf(path, sizeof(path), "/proc/%ld/comm", tracer);
		if (procfs_read_at(AT_FDCWD, path, pr.tracer_comm, sizeof(pr.tracer_comm)) > 0)
			pr.tracer_comm[strcspn(pr.tracer_comm, "\n")] = '\0';
	} else if (pr.yama_scope == 3)
		pr.refusal = ATTACH_NOT_PERMITTED;
	else if (!pr.have_cap_sys_ptrace && ((uid_t)uid != getuid() || !pr.dumpable))
		pr.refusal = ATTACH_NOT_PERMITTED;
	*ret = pr;
	return 0;
}

int attach_target_open(pid_t pid, struct attach_target *ret)
{
	struct attach_target t = {
		.pid = pid, .proc_dirfd = -1, .task_dirfd = -1, .pidfd = -1, .lock_fd = -1};
	char path[64], buf[4096];
	struct procfs_stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	t.proc_dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t.proc_dirfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	t.task_dirfd = openat(t.proc_dirfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ssize_t n = procfs_read_at(t.proc_dirfd, "stat", buf, sizeof(buf));
	if (t.task_dirfd < 0 || n < 0 || procfs_parse_stat(buf, &st) < 0) {
		int e = t.task_dirfd < 0 ? -errno : (n < 0 ? (int)n : -EINVAL);
		attach_target_close(&t);
		return e == -ENOENT ? -ESRCH : e;
	}
	t.starttime = st.starttime;
	snprintf(t.comm, sizeof(t.comm), "%s", st.comm);
	t.lock_fd = lock_take(pid, st.starttime);
	if (t.lock_fd < 0) {
		int e = t.lock_fd;
		attach_target_close(&t);
		return e;
	}
	/* pidfd pins identity against pid reuse; absent on kernels < 5.3. */
	t.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	*ret = t;
	return 0;
}

void attach_target_close(struct attach_target *t)
{
	if (t->proc_dirfd >= 0)
		close(t->proc_dirfd);
	if (t->task_dirfd >= 0)
		close(t->task_dirfd);
	if (t->pidfd >= 0)
		close(t->pidfd);
	if (t->lock_fd >= 0)
		close(t->lock_fd);
	t->proc_dirfd = t->task_dirfd = t->pidfd = t->lock_fd = -1;
}

bool attach_target_alive(const struct attach_target *t)
{
	/* The pidfd is the authority: it becomes readable when the whole
	 * thread group has exited, and only then. /proc alone misleads in the
	 * middle of a non-leader exec (the leader is a zombie, the exec'ing
	 * thread has not yet taken its pid) and after pthread_exit of main. */
	if (t->pidfd >= 0) {
		struct pollfd p = {.fd = t->pidfd, .events = POLLIN};
		int r = poll(&p, 1, 0);
		if (r == 0)
			return true;
		if (r > 0)
			return false;
	}
	char buf[4096];
	struct procfs_stat st;
	/* Reads through a dirfd of a reaped process fail with ESRCH even if the
	 * pid has been reused, so this cannot mistake an impostor for t. */
	if (procfs_read_at(t->proc_dirfd, "stat", buf, sizeof(buf)) < 0 ||
	    procfs_parse_stat(buf, &st) < 0 || st.starttime != t->starttime)
		return false;
	if (st.state != 'Z' && st.state != 'X')
		return true;
	/* A zombie leader whose other threads still run (main called
	 * pthread_exit) is alive. */
	long threads = 0;
	if (read_status(t->proc_dirfd, buf, sizeof(buf)) < 0 ||
	    procfs_status_field(buf, "Threads", &threads) < 0)
		return false;
	return threads > 1;
}
