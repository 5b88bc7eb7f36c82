/* diag-attach export DIR --format collapsed|speedscope|svg: profiles for
 * FlameGraph, inferno and speedscope, and flame graph files. */
#ifndef DIAG_CMD_EXPORT_H
#define DIAG_CMD_EXPORT_H

#include <stdbool.h>

int cmd_export(int argc, char **argv);

/* Write profile (NULL: cpu, or threads without one) of the bundle in dir
 * as format (collapsed, speedscope or svg) to output (NULL or "-":
 * standard output), value "samples" or "time" (NULL: the format's
 * default). Prints its own errors; returns export's exit status. */
int export_run(const char *dir, const char *format, const char *profile, const char *value,
	       bool per_thread, const char *output);

#endif
