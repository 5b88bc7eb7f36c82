/* Helpers shared by the subcommands: option values and the messages they
 * print (git's style: "diag-attach: " + the failure, then "hint: " + what
 * to do). Only cmd/ prints; these are how. */
#ifndef DIAG_CMD_CLI_UTIL_H
#define DIAG_CMD_CLI_UTIL_H

#include <stdint.h>

/* Parse "10", "500ms", "30s", "2m", "1h" into nanoseconds. Plain numbers
 * are seconds (fractions allowed). Returns 0 or -EINVAL. */
int parse_duration_ns(const char *s, uint64_t *ret);

/* A decimal unsigned number no larger than max (no sign, nothing after
 * it). 0 or -EINVAL. */
int parse_uint_at_most(const char *s, unsigned long max, unsigned long *ret);

/* A size in bytes, "4096", "512K", "64M", "2G" (powers of 1024), not 0.
 * 0 or -EINVAL. */
int parse_size_bytes(const char *s, uint64_t *ret);

/* Print "diag-attach: " + message (or "hint: " + message) to stderr. */
void die_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hint_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* SIGINT, SIGTERM and SIGHUP go to handler (with SA_RESTART), but for a
 * SIGHUP ignored when we started (nohup), which stays ignored; job-control
 * stops, SIGPIPE and SIGXFSZ are ignored. For every command that may hold
 * a target's threads. */
void cli_install_stop_handlers(void (*handler)(int));

/* Remove dir and everything under it, following no symbolic link (for a
 * private temporary directory of our own). 0 or -errno. */
int cli_remove_tree(const char *dir);

#endif
