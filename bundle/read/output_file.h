/*
 * output_file: where a rendering (an HTML page, an export) goes when the
 * user names a file: PATH.tmp, renamed onto PATH only once complete, so a
 * failed or interrupted write never leaves half an output under the name
 * a viewer will open. "-" (or NULL) is standard output, written in place.
 *
 * 0 or a negative errno, never printed.
 */
#ifndef DIAG_BUNDLE_READ_OUTPUT_FILE_H
#define DIAG_BUNDLE_READ_OUTPUT_FILE_H

#include <stdio.h>

struct output_file {
	FILE *fp; /* write here */
	char *tmp; /* NULL for standard output */
	const char *path;
};

/* Open the destination for path. On failure nothing is left behind. */
int output_file_open(struct output_file *of, const char *path);

/* Finish with the writer's own result e: flush, and for a file close it
 * and, if everything succeeded, rename it into place, else remove it.
 * Returns e if it was an error, else the first error of finishing. */
int output_file_close(struct output_file *of, int e);

#endif
