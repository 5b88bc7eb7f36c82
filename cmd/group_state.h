/*
 * group_state: what a capture of several processes keeps (group_capture.c
 * runs it, group_merge.c turns its parts into the bundle): each process's
 * capture (a child of ours writing a bundle of its own) and the group's.
 */
#ifndef DIAG_CMD_GROUP_STATE_H
#define DIAG_CMD_GROUP_STATE_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cmd/cli/launch.h"
#include "cmd/engine/engine.h"
#include "cmd/group_capture.h"

struct part {
	pid_t target;
	pid_t capturer;  /* our child that captures it; 0 once reaped */
	int exit_code;   /* the capturer's, once reaped */
	bool followed;   /* found as a child, not given */
	char dir[PATH_MAX];
};

struct group {
	struct capture_options *opt;
	const struct group_request *req;
	const char *dir;
	struct part parts[GROUP_MAX_PROCESSES];
	size_t nparts;
	/* Children not captured: past GROUP_MAX_PROCESSES, or found while
	 * --max-processes were being captured (each once, by pid; one
	 * captured later, when a place was free, is dropped at the end). */
	pid_t capped[GROUP_MAX_PROCESSES];
	size_t ncapped, capped_more;
	uint64_t started_ns, deadline_ns; /* CLOCK_MONOTONIC; deadline 0: none */
	struct launch *launched;
	const char *ended_by; /* "duration", "stop request", "processes exited" */
	pid_t parent;         /* us, as the capturers see us */
	/* SIGINT/SIGTERM/SIGHUP counted: two abandon the writing. */
	volatile sig_atomic_t *stop_requests;
};

/* Whether pid is one of the parts. */
static inline bool group_knows(const struct group *g, pid_t pid)
{
	for (size_t i = 0; i < g->nparts; i++)
		if (g->parts[i].target == pid)
			return true;
	return false;
}

/* Children seen and never captured. */
static inline size_t group_not_captured(const struct group *g)
{
	size_t n = g->capped_more;
	for (size_t i = 0; i < g->ncapped; i++)
		n += !group_knows(g, g->capped[i]);
	return n;
}

#endif
