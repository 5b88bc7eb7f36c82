/*
 * Exit statuses of diag-attach, documented in --help and in diag-attach(1).
 * Each failure a user can act on has its own number so scripts can tell
 * them apart.
 */
#ifndef DIAG_CMD_CLI_EXIT_CODES_H
#define DIAG_CMD_CLI_EXIT_CODES_H

#include <errno.h>

enum exit_code {
	EXIT_OK = 0,
	EXIT_VERIFY_FAILED = 1,  /* verify: a member is missing, short or altered */
	EXIT_USAGE = 2,          /* bad command line */
	EXIT_NO_PROCESS = 3,     /* no such process (or it exited before capture) */
	EXIT_ZOMBIE = 4,         /* the process is a zombie */
	EXIT_KERNEL_THREAD = 5,  /* a kernel thread cannot be traced */
	EXIT_NOT_PERMITTED = 6,  /* ptrace not permitted (uid, Yama, capabilities) */
	EXIT_ALREADY_TRACED = 7, /* another tracer (debugger, strace, diag-attach) holds it */
	EXIT_SELF = 8,           /* the target is diag-attach itself or its tracer */
	EXIT_OUTPUT_DIR = 9,     /* output directory exists and is not empty, or is unusable */
	EXIT_WRITE_FAILED = 10,  /* writing the bundle failed (disk full, I/O error) */
	EXIT_INTERNAL = 11,      /* out of memory or an unexpected failure */
	EXIT_INTERRUPTED = 12,   /* interrupted while writing; the bundle was abandoned */
	EXIT_NOT_DUMPABLE = 13,  /* the process is not dumpable (asked not to be inspected); see --force */
	EXIT_FOREIGN_PROCFS = 14,/* /proc belongs to another pid namespace than ours */
	EXIT_PERF_REFUSED = 15,  /* --cpu-engine perf, and perf events were refused */
	EXIT_UNSAFE_NAME = 16,   /* unpem: a block names a member outside DIR, one no bundle can
				  * hold, or one twice; nothing was written */
	EXIT_PAST_CAP = 17,      /* a bundle member is past one of the reader's caps (reader.h);
				  * unpem: a block is, or the blocks come to more than
				  * --max-total; nothing was written */
	/* Launch mode (-- CMD): the command could not be started, with the
	 * statuses a shell gives for the same failures. */
	EXIT_COMMAND_NOT_EXECUTABLE = 126, /* found, but not executable (EACCES, ENOEXEC...) */
	EXIT_COMMAND_NOT_FOUND = 127,      /* no such command (ENOENT, ENOTDIR) */
	/* Standard output's reader went away (a pipe to head): what a shell
	 * reports for a process SIGPIPE ended (128 + 13), said by no message,
	 * once the target is released and any bundle is closed whole. */
	EXIT_CLOSED_PIPE = 141,
};

/* The status for a launch that failed with -errno e. */
static inline int launch_failure_exit(int e)
{
	return e == -ENOENT || e == -ENOTDIR ? EXIT_COMMAND_NOT_FOUND : EXIT_COMMAND_NOT_EXECUTABLE;
}

#endif
