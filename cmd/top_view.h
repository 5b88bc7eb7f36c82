/*
 * top_view: what diag-attach top shows at each refresh of the engine's
 * live view (engine.h, capture_live): the hottest functions (or functions
 * and lines) by self and total CPU, over the last window and since top
 * started, and every thread with its CPU% (schedstat) and the innermost
 * frame it was last seen in; plus the one-line notes of what it cannot
 * show. Printed to standard output, names escaped.
 */
#ifndef DIAG_CMD_TOP_VIEW_H
#define DIAG_CMD_TOP_VIEW_H

#include <stdbool.h>
#include <sys/types.h>

#include "cmd/engine/engine.h"

/* What to show and in which order: options, and keys while running. */
enum sort_key { SORT_SELF, SORT_TOTAL, SORT_SELF_TIME, SORT_TOTAL_TIME };

struct view {
	enum sort_key sort;
	bool lines;   /* one row per function and source line, not per function */
	bool threads; /* the threads view: every thread, by CPU% */
};

struct top_view;

/* tty: clear the screen before each refresh and show the keys. NULL on
 * ENOMEM. */
struct top_view *top_view_new(pid_t pid, const struct view *v, bool tty);

/* Tally l and print the screen. 0 or -ENOMEM. */
int top_view_refresh(struct top_view *t, const struct capture_live *l);

/* A key pressed while running (1-4 sort, l lines, t threads): true when
 * it changed the view, seen at the next refresh. */
bool top_view_take_key(struct top_view *t, char key);

void top_view_free(struct top_view *t);

#endif
