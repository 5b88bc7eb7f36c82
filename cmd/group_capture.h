/* group_capture: a capture of several processes into one bundle: `-p`
 * with more than one PID, and --subprocesses (the children a process
 * forks, as they appear, and theirs). Part of the capture command
 * (cmd/capture.c hands over to it after parsing).
 *
 * Each process is captured by a child of ours, exactly as a capture of
 * one process is (its own workers, perf events, watchdog), into a bundle
 * of its own under DIR/.parts/; once every capture has ended, the parts
 * are merged into DIR (bundle/merge.h) and removed. Until the manifest is
 * written DIR is visibly partial, as for any capture.
 *
 * The captures run in their own process group: Ctrl-C reaches us, and we
 * pass each stop request on once (two abandon the writing, as for one
 * process). A capture that fails (its process exited before it was
 * attached, or refused) is named on stderr and in the manifest's "group"
 * and leaves the others alone; only when none succeeded is the capture a
 * failure.
 */
#ifndef DIAG_CMD_GROUP_CAPTURE_H
#define DIAG_CMD_GROUP_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cmd/engine/engine.h"

#define GROUP_MAX_PROCESSES 256
/* The most captured at once unless --max-processes says otherwise: each is
 * a capturer, two sandboxed workers and their brokers (about 5 MiB of PSS
 * and 5 processes an idle one). */
#define GROUP_DEFAULT_LIVE 32

struct group_request {
	const pid_t *pids;     /* given with -p (none with launch_argv) */
	size_t npids;
	bool follow;           /* --subprocesses */
	char **launch_argv;    /* -- CMD ARGS...: started first, then captured */
	const char *output;    /* -o, or NULL for the default name */
	bool quiet;
};

/* Run it; opt as parsed (its pid is ignored). Returns the exit status
 * (the launched command's, with launch_argv). */
int group_capture_run(struct capture_options *opt, const struct group_request *g);

#endif
