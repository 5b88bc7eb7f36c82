/* Scratch directories for the bundle unit tests. */
#ifndef DIAG_TEST_TMPDIR_H
#define DIAG_TEST_TMPDIR_H

#include <stddef.h>

/* mkdtemp under $TMPDIR (or /tmp); returns a malloc'd path. Aborts the
 * test on failure. */
char *tmpdir_make(void);
/* rm -rf path (no symlinks followed) and free it. */
void tmpdir_remove(char *path);
/* path/name into buf (asserts it fits). */
const char *tmpdir_join(char *buf, size_t size, const char *path, const char *name);
/* Write / read a whole small file; assert on failure. read returns a
 * malloc'd NUL-terminated buffer and its length. */
void tmpdir_write_file(const char *path, const char *data);
char *tmpdir_read_file(const char *path, size_t *len);

#endif
