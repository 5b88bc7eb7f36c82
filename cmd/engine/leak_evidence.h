/*
 * leak_evidence: what a leak finding's counter added, named, beside the
 * finding's thread snapshot in leak/<counter>-<n>/:
 *  - open_fds: fds.txt, every descriptor by what it points to (a file's
 *    path, a socket's protocol, state and addresses, a pipe, an anonymous
 *    inode's kind: timeline/fd_census.h), grouped and counted, the newest
 *    (as many as the finding says were added) apart;
 *  - threads: new_threads.txt, the threads started since the finding's
 *    window began, with their stacks grouped as `dump` prints them;
 *  - child_procs: new_children.txt, the children started since then, with
 *    their argv.
 * Other counters get nothing more. Names, paths and argv are the target's:
 * escaped as in threads.txt.
 */
#ifndef DIAG_CMD_ENGINE_LEAK_EVIDENCE_H
#define DIAG_CMD_ENGINE_LEAK_EVIDENCE_H

#include <cjson/cJSON.h>

#include "attach/attach.h"
#include "bundle/bundle.h"
#include "symbolize/worker/interp.h"
#include "symbolize/worker/symtab.h"

struct leak_evidence {
	pid_t pid;
	const char *counter;        /* the finding's counter */
	const char *prefix;         /* "leak/open_fds-1/" */
	double added;               /* the finding's last minus first */
	double window_start_boot_s; /* the window's start, CLOCK_BOOTTIME seconds */
	/* The finding's snapshot, or NULL when it could not be taken. */
	const struct process_capture *pc;
	const struct unwound_stack *stacks;
	const struct symtab *st;
};

/* Write the counter's evidence member into b, add its name to dumps and,
 * for open_fds, the biggest groups of the newest descriptors to finding
 * ("new_fds": [{"what", "count", "example"}]). 0 (also when there is
 * nothing for this counter, or the process is gone), or -errno from the
 * bundle (-ENOMEM). */
int leak_evidence_write(struct bundle *b, const struct leak_evidence *ev, cJSON *finding,
			cJSON *dumps);

#endif
