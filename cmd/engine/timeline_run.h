/*
 * timeline_run: the /proc timeline of a capture (runtime.jsonl, written and
 * flushed line by line) and the leak watchdog riding on it, which dumps a
 * thread snapshot into leak/<counter>-<n>/ the moment a leak is found.
 */
#ifndef DIAG_CMD_ENGINE_TIMELINE_RUN_H
#define DIAG_CMD_ENGINE_TIMELINE_RUN_H

#include <cjson/cJSON.h>

#include "cmd/engine/internal.h"

struct timeline_run;

/* Open the timeline for s (and the watchdog with --leak-watch). *ret is
 * NULL when there is nothing to do. Returns 0 or -errno (-ESRCH: the target
 * is gone; a bundle write error is passed through). */
int timeline_run_new(struct capture_session *s, struct timeline_run **ret);

/* timeline_run_tick's answer when the target has exec'd a program that
 * is not dumpable (setuid, file capabilities, PR_SET_DUMPABLE 0): the
 * policy at attach holds for the new program, so the capture ends there
 * unless --force, taking nothing more from it. */
#define TIMELINE_EXEC_NOT_DUMPABLE 1

/* Take one sample, append it, feed the watchdog and dump on a finding.
 * First, follow an exec (target_info_follow_exec) and re-check
 * dumpability. Returns 0, TIMELINE_EXEC_NOT_DUMPABLE, -ESRCH when the
 * target has exited, or -errno on a write failure. */
int timeline_run_tick(struct timeline_run *t);

/* Add the timeline's summary and the findings to the manifest. */
int timeline_run_finish(struct timeline_run *t, cJSON *manifest);

void timeline_run_free(struct timeline_run *t);

#endif
