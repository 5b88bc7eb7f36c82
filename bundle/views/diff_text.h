/*
 * diff_text: diff_model's document for a person at a terminal: the two
 * sides, the counters that changed (growing ones in red), the functions
 * whose share moved, and the thread and goroutine groups that changed.
 * Writes to out and never fails loudly: the caller checks ferror/fflush.
 */
#ifndef DIAG_BUNDLE_VIEWS_DIFF_TEXT_H
#define DIAG_BUNDLE_VIEWS_DIFF_TEXT_H

#include <stdbool.h>
#include <stdio.h>
#include <cjson/cJSON.h>

/* color: ANSI colours and bold. */
void diff_print_text(const cJSON *doc, FILE *out, bool color);

#endif
