/* The steps behind sandbox.h. */
#include "symbolize/worker/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The exit status of a worker whose filter stopped a call. */
#define DENIED_EXIT 159

static volatile struct sandbox_status *status_page;

static void on_denied(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (status_page)
		status_page->denied_syscall = si->si_syscall;
	_exit(DENIED_EXIT);
}

/* New mount, network and IPC namespaces, and an empty read-only root:
 * with no path to open and no peer to reach, a worker that gets past its
 * filter still finds nothing. A non-root tool needs a user namespace for
 * that (and gets one only where the kernel allows unprivileged ones). */
static int isolate(bool root)
{
	int flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | (root ? 0 : CLONE_NEWUSER);
	if (unshare(flags) < 0)
		return -errno;
	/* Our mounts must not propagate back to the tool's namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	/* /tmp is there on every Linux system; this tmpfs over it exists
	 * only in the new mount namespace. */
	if (mount("diag-empty", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
		  "size=4k,nr_inodes=2,mode=0555") < 0)
		return -errno;
	if (chdir("/tmp") < 0 || chroot(".") < 0 || chdir("/") < 0)
		return -errno;
	return 0;
}

/* Root: become nobody, which clears every capability. Otherwise: give up
 * whatever the user namespace granted. Either way, verified. */
static int drop_privileges(bool root)
{
	if (root) {
		gid_t none = SANDBOX_GID;
		if (setgroups(0, &none) < 0 || setresgid(SANDBOX_GID, SANDBOX_GID, SANDBOX_GID) < 0 ||
		    setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0)
			return -errno;
	}
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if (!root && syscall(SYS_capset, &h, d) < 0)
		return -errno;
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	if (d[0].effective || d[1].effective || d[0].permitted || d[1].permitted)
		return -EPERM;
	return 0;
}

/* ---- the filter ---- */

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define ARG_LO(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))

/* What the workers call (traced over the suite's fixtures and real
 * programs, plain and under ASan/UBSan): descriptors they hold, memory,
 * their sockets, time, signals to themselves, exit. */
static const int allowed[] = {
	SYS_read, SYS_write, SYS_readv, SYS_writev, SYS_pread64, SYS_preadv, SYS_preadv2,
	SYS_close, SYS_fstat, SYS_lseek, SYS_fcntl, SYS_dup,
	SYS_mmap, SYS_munmap, SYS_mprotect, SYS_mremap, SYS_madvise, SYS_brk, SYS_mincore,
	SYS_memfd_create, SYS_ftruncate, /* the vdso handed to libdwfl as a file */
	SYS_pipe, SYS_pipe2, SYS_msync, /* libunwind's check that an address is readable */
	SYS_futex, SYS_sched_yield, SYS_sched_getaffinity, SYS_getrandom,
	SYS_sendmsg, SYS_recvmsg, SYS_sendto, SYS_recvfrom, SYS_poll, SYS_ppoll,
	SYS_clock_gettime, SYS_clock_getres, SYS_gettimeofday, SYS_nanosleep, SYS_clock_nanosleep,
	SYS_getrusage, SYS_times, SYS_sysinfo, SYS_uname,
	SYS_getpid, SYS_gettid, SYS_getppid, SYS_getuid, SYS_geteuid, SYS_getgid, SYS_getegid,
	SYS_rt_sigreturn, SYS_rt_sigprocmask, SYS_rt_sigaction, SYS_sigaltstack,
	SYS_restart_syscall, SYS_exit, SYS_exit_group,
};

/* Calls that name a path (or make a socket): refused with EACCES, so
 * that a library probing for a file carries on without it. */
static const int refused[] = {
	SYS_open, SYS_openat, SYS_openat2, SYS_creat, SYS_stat, SYS_lstat, SYS_access,
	SYS_faccessat, SYS_faccessat2, SYS_readlink, SYS_readlinkat, SYS_statx, SYS_statfs,
	SYS_getdents64, SYS_socket, SYS_ioctl,
};

static int install_filter(pid_t self)
{
	struct sock_filter f[16 + 2 * (sizeof(allowed) / sizeof(allowed[0])) +
			     2 * (sizeof(refused) / sizeof(refused[0])) + 16];
	size_t n = 0;
	f[n++] = (struct sock_filter)LOAD(arch);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[n++] = (struct sock_filter)RET(SECCOMP_RET_KILL_PROCESS);
	f[n++] = (struct sock_filter)LOAD(nr);
	/* x32 calls (bit 30) would reach the same code under other numbers. */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
	f[n++] = (struct sock_filter)RET(SECCOMP_RET_KILL_PROCESS);
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[i], 0, 1);
		f[n++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)refused[i], 0, 1);
		f[n++] = (struct sock_filter)RET(SECCOMP_RET_ERRNO | EACCES);
	}
	/* fstat() is newfstatat(fd, "", AT_EMPTY_PATH) in glibc: that form
	 * only; with a path it is refused like stat(). */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_newfstatat, 0, 4);
	f[n++] = (struct sock_filter)ARG_LO(3);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, AT_EMPTY_PATH, 0, 1);
	f[n++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
	f[n++] = (struct sock_filter)RET(SECCOMP_RET_ERRNO | EACCES);
	/* Signals to itself only (raise, abort, a sanitizer's report). */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_tgkill, 0, 3);
	f[n++] = (struct sock_filter)ARG_LO(0);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)self, 0, 1);
	f[n++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
	/* getrlimit() is prlimit64(0, r, NULL, old): reading, never setting. */
	f[n++] = (struct sock_filter)LOAD(nr);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prlimit64, 0, 6);
	f[n++] = (struct sock_filter)ARG_LO(2);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, args[2]) + 4);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
	f[n++] = (struct sock_filter)RET(SECCOMP_RET_ERRNO | EPERM);
	f[n++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
	/* Everything else (fork, exec, ptrace, process_vm_*, kill,
	 * io_uring, bpf, setuid, mount, ...) ends the worker. */
	f[n++] = (struct sock_filter)RET(SECCOMP_RET_TRAP);
	struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	return 0;
}

int sandbox_enter(volatile struct sandbox_status *st)
{
	pid_t tool = getppid();
	bool root = geteuid() == 0;
	status_page = st;
	st->denied_syscall = -1;
	st->namespaces_errno = -isolate(root);
	st->uid_errno = -drop_privileges(root);
	/* A change of uid clears the parent-death signal: set it again, and
	 * leave if the tool is already gone. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != tool)
		_exit(0);
	prctl(PR_SET_DUMPABLE, 0);
	/* A crash must not leave a core of the target's memory around. */
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_denied;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
	/* The tool's thread that forked us may block it: a blocked SIGSYS
	 * from the filter kills without a word. */
	sigset_t sys;
	sigemptyset(&sys);
	sigaddset(&sys, SIGSYS);
	sigprocmask(SIG_UNBLOCK, &sys, NULL);
	int r = install_filter(getpid());
	st->seccomp_errno = -r;
	return r;
}
