/* report_text: the terminal rendering of a report document
 * (report_build_json). */
#ifndef DIAG_BUNDLE_VIEWS_REPORT_TEXT_H
#define DIAG_BUNDLE_VIEWS_REPORT_TEXT_H

#include <stdbool.h>
#include <stdio.h>
#include <cjson/cJSON.h>

/* Print doc to out. color adds ANSI attributes (callers decide: a
 * terminal and no NO_COLOR). top limits each function table. */
void report_print_text(const cJSON *doc, FILE *out, bool color, size_t top);

/* Shared with diff: "1.23s" for nanoseconds, "1234" otherwise. */
void format_profile_value(double v, const char *unit, char *out, size_t out_size);

#endif
