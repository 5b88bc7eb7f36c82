/*
 * export_format: a decoded profile in the formats other viewers read.
 *
 *  - collapsed ("folded") stacks, as FlameGraph's stackcollapse scripts and
 *    inferno read them: one line per distinct stack, frames root first
 *    joined by ';', a space, then the summed value. Lines are sorted, so the
 *    output is stable. Names are escaped as the text report shows them
 *    (bundle/text.h's escape_text: controls, bidirectional overrides and
 *    invalid UTF-8 become \xNN or \uXXXX, a newline \n), then a ';'
 *    inside a name becomes ':' (it would split the frame).
 *  - speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 *    one "sampled" profile per thread (or one in all if the profile has no
 *    tid labels), frames shared, stacks root first, weights in the chosen
 *    value's unit.
 *
 * Both write to a FILE and return 0, -ENOMEM, or -EIO when a write failed.
 * They never print anything else.
 */
#ifndef DIAG_BUNDLE_VIEWS_EXPORT_FORMAT_H
#define DIAG_BUNDLE_VIEWS_EXPORT_FORMAT_H

#include <stdbool.h>
#include <stdio.h>

#include "bundle/reader.h"

/* value_index selects the summed sample value (0: sample counts).
 * per_thread adds "comm/tid" as the outermost frame. */
int export_collapsed(const struct bundle_profile *p, size_t value_index, bool per_thread,
		     FILE *out);

/* name titles the file (e.g. "demo (pid 42) cpu"). */
int export_speedscope(const struct bundle_profile *p, size_t value_index, const char *name,
		      FILE *out);

#endif
