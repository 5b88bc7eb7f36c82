/* The messages and exit statuses of a capture that cannot start or
 * fails: a refused target, an unusable output, an engine failure. */
#include "cmd/cli/capture_errors.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/util.h"

/* Say why we cannot capture, in git's style: the failure, then what to do. */
int capture_refuse(pid_t pid, const struct attach_probe *pr)
{
	switch (pr->refusal) {
	case ATTACH_OK:
		return EXIT_OK;
	case ATTACH_NO_SUCH_PROCESS:
		die_message("cannot attach to pid %d: no such process", (int)pid);
		return EXIT_NO_PROCESS;
	case ATTACH_ZOMBIE:
		die_message("cannot attach to pid %d: it is a zombie (exited, not yet reaped)", (int)pid);
		hint_message("its parent has not called wait(); there is nothing left to capture");
		return EXIT_ZOMBIE;
	case ATTACH_KERNEL_THREAD:
		die_message("cannot attach to pid %d: it is a kernel thread", (int)pid);
		return EXIT_KERNEL_THREAD;
	case ATTACH_SELF:
		die_message("cannot attach to pid %d: it is diag-attach itself or traces it", (int)pid);
		hint_message("tracing ourselves or our own tracer would deadlock both; "
			     "give the pid of another process");
		return EXIT_SELF;
	case ATTACH_ALREADY_TRACED:
		die_message("cannot attach to pid %d: already traced by pid %d (%s)", (int)pid,
			    (int)pr->tracer_pid, pr->tracer_comm[0] ? pr->tracer_comm : "?");
		hint_message("a process has one tracer at a time; detach the debugger or wait for it");
		return EXIT_ALREADY_TRACED;
	case ATTACH_NOT_PERMITTED:
		die_message("cannot attach to pid %d: Operation not permitted", (int)pid);
		if (pr->yama_scope == 3)
			hint_message("kernel.yama.ptrace_scope=3 forbids all tracing until reboot");
		else if (pr->target_uid != getuid() && !pr->have_cap_sys_ptrace)
			hint_message("it belongs to uid %d and we run as uid %d; run as that user or "
				     "as root (CAP_SYS_PTRACE)",
				     (int)pr->target_uid, (int)getuid());
		else if (!pr->dumpable)
			hint_message("it is not dumpable (setuid or PR_SET_DUMPABLE 0); CAP_SYS_PTRACE is needed");
		else
			hint_message("kernel.yama.ptrace_scope=%d; run as root or with CAP_SYS_PTRACE",
				     pr->yama_scope);
		return EXIT_NOT_PERMITTED;
	case ATTACH_FOREIGN_PROCFS:
		die_message("cannot attach to pid %d: /proc does not belong to this pid namespace",
			    (int)pid);
		hint_message("its pids are not ours, so we could read one process and stop another; "
			     "mount a /proc for this namespace (unshare --mount-proc) or run from the host");
		return EXIT_FOREIGN_PROCFS;
	}
	return EXIT_INTERNAL;
}

int capture_check_target(pid_t *pid_io, bool force, struct attach_probe *ret)
{
	/* A thread's id is a process's to the user who found it in top -H
	 * or a log line: the capture is of its process, said once. */
	pid_t pid = *pid_io, tgid;
	if (attach_thread_group(pid, &tgid) == 0 && tgid != pid) {
		fprintf(stderr, "diag-attach: %d is a thread of process %d: capturing the process\n",
			(int)pid, (int)tgid);
		pid = *pid_io = tgid;
	}
	if (attach_target_probe(pid, ret) < 0) {
		die_message("cannot inspect pid %d", (int)pid);
		return EXIT_INTERNAL;
	}
	if (ret->refusal != ATTACH_OK)
		return capture_refuse(pid, ret);
	/* A non-dumpable process (PR_SET_DUMPABLE 0, setuid, changed
	 * credentials) asked not to be inspected: no core dumps, no ptrace
	 * without CAP_SYS_PTRACE (the probe refuses it then). Root may still
	 * trace it, and a bundle is meant to travel (and top shows its
	 * stacks), so that takes an explicit --force. */
	if (!ret->dumpable && !force) {
		die_message("refusing to capture pid %d: it is not dumpable (setuid, or PR_SET_DUMPABLE 0)",
			    (int)pid);
		hint_message("it asked not to be inspected and may hold secrets; add --force to capture it anyway");
		return EXIT_NOT_DUMPABLE;
	}
	return EXIT_OK;
}


int capture_output_error(const char *dir, bool existed, int err)
{
	switch (-err) {
	case EEXIST:
	case ENOTEMPTY:
		die_message("output directory '%s' exists and is not empty", dir);
		hint_message("give a new or empty directory with -o");
		break;
	case ELOOP:
		die_message("output path '%s' is a symbolic link; refusing to follow it", dir);
		break;
	case -BUNDLE_UNSAFE_DIR:
		die_message("output directory '%s' is another user's, or writable by others; "
			    "refusing it", dir);
		hint_message("give a new directory, or an empty one only you can write, with -o");
		break;
	case ENOTDIR:
		die_message("output path '%s' exists and is not a directory", dir);
		break;
	case EROFS:
	case EACCES:
	case EPERM:
		if (existed) {
			die_message("output directory '%s' is not writable: %s", dir, strerror(-err));
			break;
		}
		/* mkdir failed: the general message says it as it is */
		/* fall through */
	default:
		die_message("cannot create output directory '%s': %s", dir, strerror(-err));
		break;
	}
	return EXIT_OUTPUT_DIR;
}

int capture_write_error(const char *dir, int err)
{
	die_message("cannot write bundle '%s': %s", dir, strerror(-err));
	if (err == -ENOSPC || err == -EDQUOT || err == -EFBIG)
		hint_message("free some space or choose another -o; the directory has no manifest, so it is not a bundle");
	return EXIT_WRITE_FAILED;
}

/* Why the capture failed, as a message and an exit status. */
int capture_error_exit(pid_t pid, const char *dir, enum capture_stage stage, int r)
{
	if (r == -ENOMEM) {
		die_message(stage == CAPTURE_STAGE_WRITE ? "out of memory while writing the bundle"
			    : stage == CAPTURE_STAGE_ATTACH ? "out of memory during the capture"
							    : "out of memory");
		return EXIT_INTERNAL;
	}
	switch (stage) {
	case CAPTURE_STAGE_TARGET:
		if (r == -ESRCH) {
			die_message("cannot attach to pid %d: no such process", (int)pid);
			return EXIT_NO_PROCESS;
		}
		if (r == -EBUSY) {
			/* Another diag-attach won the race for this target. */
			struct attach_probe pr;
			if (attach_target_probe(pid, &pr) == 0 && pr.refusal != ATTACH_OK)
				return capture_refuse(pid, &pr);
			die_message("cannot attach to pid %d: another diag-attach is capturing it",
				    (int)pid);
			return EXIT_ALREADY_TRACED;
		}
		die_message("cannot open pid %d: %s", (int)pid, strerror(-r));
		return EXIT_INTERNAL;
	case CAPTURE_STAGE_ATTACH:
		if (r == -ESRCH) {
			die_message("cannot capture pid %d: the process exited", (int)pid);
			return EXIT_NO_PROCESS;
		}
		if (r == -EPERM || r == -EACCES) {
			struct attach_probe pr;
			attach_target_probe(pid, &pr);
			if (pr.refusal != ATTACH_OK)
				return capture_refuse(pid, &pr);
			die_message("cannot attach to pid %d: Operation not permitted", (int)pid);
			if (pr.yama_scope >= 1)
				hint_message("kernel.yama.ptrace_scope=%d; run as root or with CAP_SYS_PTRACE",
					     pr.yama_scope);
			else
				hint_message("the kernel refused ptrace: the process may belong to another user "
					     "namespace or be protected (e.g. a container's init)");
			return EXIT_NOT_PERMITTED;
		}
		die_message("cannot capture pid %d: %s", (int)pid, strerror(-r));
		return EXIT_INTERNAL;
	case CAPTURE_STAGE_PERF:
		die_message("cannot sample pid %d with perf events: %s", (int)pid, strerror(-r));
		hint_message("kernel.perf_event_paranoid, a container's seccomp profile or a user namespace "
			     "may forbid them; --cpu-engine ptrace (or auto) samples with ptrace stops instead");
		return EXIT_PERF_REFUSED;
	case CAPTURE_STAGE_PRINT:
		if (r == -EPIPE)
			return EXIT_CLOSED_PIPE;
		die_message("cannot print the dump to standard output: %s", strerror(-r));
		return EXIT_WRITE_FAILED;
	case CAPTURE_STAGE_WRITE:
		if (r == -EINTR && !dir) {
			die_message("interrupted; nothing printed");
			return EXIT_INTERRUPTED;
		}
		if (r == -EINTR) {
			die_message("interrupted while writing; bundle '%s' abandoned (no manifest)", dir);
			return EXIT_INTERRUPTED;
		}
		return capture_write_error(dir, r);
	case CAPTURE_STAGE_FINALIZE:
		return capture_write_error(dir, r);
	default:
		die_message("cannot capture pid %d: %s", (int)pid, strerror(-r));
		return EXIT_INTERNAL;
	}
}


/* An existing directory of another user (pre-created in /tmp, say) would
 * receive argv, stacks and maybe secrets that its owner could then read
 * or swap under us: only a new directory or one of our own. */
int capture_refuse_foreign_dir(const char *dir)
{
	struct stat st;
	if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != geteuid()) {
		die_message("output directory '%s' belongs to uid %d, not to us (uid %d)", dir,
			    (int)st.st_uid, (int)geteuid());
		hint_message("give a new directory, or an empty one you own, with -o");
		return EXIT_OUTPUT_DIR;
	}
	return EXIT_OK;
}

/* The finished bundle's path is the one thing on stdout (for scripts:
 * dir=$(diag-attach ...)). If it cannot be written (/dev/full, a closed
 * pipe: SIGPIPE is ignored) the caller never learns where the bundle is,
 * so say so and fail like any other failed write, but make clear that the
 * bundle itself is complete. Checked here, not left to exit(), which would
 * drop the error silently. */
int capture_print_bundle_path(const char *dir)
{
	if (printf("%s\n", dir) >= 0 && fflush(stdout) == 0)
		return EXIT_OK;
	int e = errno;
	if (e == EPIPE)
		return EXIT_CLOSED_PIPE;
	die_message("bundle '%s' is complete, but writing its path to standard output failed: %s",
		    dir, strerror(e));
	return EXIT_WRITE_FAILED;
}

void capture_default_output(pid_t pid, char *buf, size_t size)
{
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	char stamp[32];
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, size, "diag-%d-%s", (int)pid, stamp);
}
