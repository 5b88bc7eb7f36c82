/*
 * diff_model: two bundles of the same program (A before, B after) compared
 * as one JSON document, which `diff --json` prints as is and diff_text
 * renders:
 *
 *   "a", "b": each side's bundle path, bundle_id, started_at, ended_at,
 *       mode and target, copied from its manifest;
 *   "counters": one object per timeline counter (B's in order, then A's
 *       that B lacks) with "a"/"b" {first, last, slope_per_s},
 *       growing_in_b, finding_in_a, finding_in_b, changed, cumulative and
 *       leak_floor_per_s; the ones growing in B first. Growing means a
 *       slope above the leak-watch floor (the bundle's own, else the
 *       watchdog's default) and a rise of at least its min_delta;
 *   "functions": "cpu" and "wall" (when both sides have the profile):
 *       samples_a, samples_b and "moved", the top functions whose flat or
 *       cumulative share moved by half a point or more, largest first;
 *   "thread_groups": groups of B that appeared or grew, then groups of A
 *       that went away, each {a, b, change, stack};
 *   "goroutine_groups": the same for goroutines (with "reason"), only those
 *       that appeared or grew, when either side has goroutine.txt.
 *
 * A side that lacks a member (a snapshot has no timeline) just has less to
 * compare; that is not an error.
 */
#ifndef DIAG_BUNDLE_VIEWS_DIFF_MODEL_H
#define DIAG_BUNDLE_VIEWS_DIFF_MODEL_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "bundle/reader.h"

/* Build the comparison of a (before) and b (after), at most top functions
 * per table. 0 with *ret owned by the caller (cJSON_Delete), -ENOMEM, or
 * BUNDLE_PAST_CAP when either reader refused a member past one of its caps
 * (bundle_reader_refusal of a or b says which): no comparison is made. */
int diff_build_json(struct bundle_reader *a, struct bundle_reader *b, size_t top, cJSON **ret);

#endif
