/* What a capture that cannot start or that fails says, in git's style
 * (the failure, then a hint), and the exit status it returns: a refused
 * target (shared by capture and top), an unusable output directory, and a
 * failure of the capture engine at a given stage. */
#ifndef DIAG_CMD_CLI_CAPTURE_ERRORS_H
#define DIAG_CMD_CLI_CAPTURE_ERRORS_H

#include <stdbool.h>
#include <sys/types.h>

#include "attach/attach.h"
#include "cmd/engine/engine.h"

/* Explain why pid cannot be captured (one line + a hint) and return the
 * matching exit status. */
int capture_refuse(pid_t pid, const struct attach_probe *pr);

/* Probe *pid (result in *ret) and refuse, with a message, what must be
 * refused before anything is touched: every refusal of the probe, and a
 * process that is not dumpable unless force. A thread id is first
 * replaced by its process's, with a note on stderr. Returns EXIT_OK or
 * the exit status. */
int capture_check_target(pid_t *pid, bool force, struct attach_probe *ret);

/* bundle_create failed with err on dir (which existed before, or not). */
int capture_output_error(const char *dir, bool existed, int err);

/* Writing the bundle in dir failed with err; EXIT_WRITE_FAILED. */
int capture_write_error(const char *dir, int err);

/* The engine failed with r at stage while capturing pid into dir. */
int capture_error_exit(pid_t pid, const char *dir, enum capture_stage stage, int r);

/* An existing output directory of another user: refused (printed),
 * EXIT_OUTPUT_DIR; otherwise EXIT_OK. */
int capture_refuse_foreign_dir(const char *dir);

/* The finished bundle's path on stdout, the one thing there; EXIT_OK or,
 * if it cannot be written, EXIT_WRITE_FAILED (printed). */
int capture_print_bundle_path(const char *dir);

/* "diag-PID-YYYYmmdd-HHMMSS": where a capture goes without -o. */
void capture_default_output(pid_t pid, char *buf, size_t size);

#endif
