/*
 * output_file: where a rendering (an HTML page, an export, a PEM text) goes
 * when the user names a file: a temporary of a random name created with
 * O_EXCL beside PATH (bundle_open_temp), renamed onto PATH only once
 * complete, so a failed or interrupted write never leaves half an output
 * under the name a viewer will open, and nothing planted under a guessable
 * name (a symlink to /etc/passwd, a FIFO) is written through or waited on.
 * PATH's directory must not let other users swap entries (writable by
 * group or others without the sticky bit: bundle_dir_shared), else
 * BUNDLE_UNSAFE_DIR.
 * The file is created 0600, as bundle members are.
 * "-" (or NULL) is standard output, written in place.
 *
 * 0 or a negative errno, never printed.
 */
#ifndef DIAG_BUNDLE_VIEWS_OUTPUT_FILE_H
#define DIAG_BUNDLE_VIEWS_OUTPUT_FILE_H

#include <stdio.h>

struct output_file {
	FILE *fp; /* write here */
	char *tmp; /* the temporary's name in dirfd; NULL for standard output */
	char *leaf;
	int dirfd;
	const char *path;
};

/* strerror for output_file's results (BUNDLE_UNSAFE_DIR included). */
const char *output_file_strerror(int e);

/* Open the destination for path. On failure nothing is left behind. */
int output_file_open(struct output_file *of, const char *path);

/* Finish with the writer's own result e: flush, and for a file close it
 * and, if everything succeeded, rename it into place, else remove it.
 * Returns e if it was an error, else the first error of finishing. */
int output_file_close(struct output_file *of, int e);

#endif
