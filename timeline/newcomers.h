/* SPDX-License-Identifier: MIT */
#ifndef DIAG_TIMELINE_NEWCOMERS_H
#define DIAG_TIMELINE_NEWCOMERS_H

/*
 * newcomers: the threads, or the child processes, of a process that
 * started after a moment, for the evidence of a threads or child_procs
 * finding: which ones the leak added. The moment is in seconds of
 * CLOCK_BOOTTIME, the clock of field 22 (starttime) of /proc/.../stat.
 * 0 or a negative errno (-ESRCH: the process is gone), never printed.
 */

#include <stddef.h>
#include <sys/types.h>

struct newcomer {
	pid_t id;
	char comm[64];  /* the target's: escape where it is written */
	double started_s; /* CLOCK_BOOTTIME seconds */
};

/* Threads of pid (its task/ directory), or children of any of its threads
 * (task/TID/children), that started at or after since_s; ascending id,
 * at most max (*ret_more counts the rest). *ret is malloc'd. */
int newcomers_threads(pid_t pid, double since_s, size_t max, struct newcomer **ret, size_t *ret_n,
		      size_t *ret_more);
int newcomers_children(pid_t pid, double since_s, size_t max, struct newcomer **ret, size_t *ret_n,
		       size_t *ret_more);

/* CLOCK_BOOTTIME now, in seconds. */
double newcomers_boottime_s(void);

#endif
