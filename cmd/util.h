/* Small helpers shared by the subcommands. */
#ifndef DIAG_CMD_UTIL_H
#define DIAG_CMD_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "2026-11-30T06:12:01.123Z" from nanoseconds since the epoch. */
void format_rfc3339_ms(uint64_t epoch_ns, char out[32]);
uint64_t realtime_ns(void);
uint64_t monotonic_ns(void);

/* Parse "10", "500ms", "30s", "2m", "1h" into nanoseconds. Plain numbers
 * are seconds (fractions allowed). Returns 0 or -EINVAL. */
int parse_duration_ns(const char *s, uint64_t *ret);

/* Print "diag-attach: " + message to stderr. */
void die_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hint_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* With DIAG_ATTACH_TRACE set in the environment, prints "diag-attach:
 * trace +MS what" to stderr, MS counted from the first call: where the
 * time of a slow exit goes, on a machine where a profiler cannot be used
 * on the profiler. Otherwise does nothing. */
void trace_phase(const char *what);

/* Read a small file (relative to dirfd, or AT_FDCWD) into buf, NUL-terminated,
 * in one read: for /proc files, which the kernel hands over whole. Returns
 * the bytes read (> 0), or 0 if it could not be opened, read, or was empty. */
size_t read_small_file_at(int dirfd, const char *path, char *buf, size_t size);

/* Random RFC 4122 version-4 UUID string. */
void make_uuid(char out[37]);

/* Name of an x86_64 syscall number, or NULL when not in our table. */
const char *syscall_name(long nr);

/*
 * Names and paths come from the target (thread names, mapped paths, symbol
 * names) and may hold anything but NUL. In line-oriented text and in pprof
 * labels they are escaped so that one thread stays one line and one label:
 * backslash, control characters, DEL and bytes that do not form UTF-8
 * become \\, \n, \t, \r or \xNN; valid UTF-8 is kept as it is.
 * escape_text writes into out (out_size > 0), truncating between
 * characters, and returns out; escape_text_put writes to f.
 */
char *escape_text(const char *s, char *out, size_t out_size);
void escape_text_put(const char *s, FILE *f);

/* A malloc'd copy of s that is valid UTF-8, for JSON (which must be UTF-8;
 * cJSON escapes control characters but passes any byte through): every
 * byte that does not start a valid character becomes U+FFFD. NULL on
 * ENOMEM. */
char *utf8_sanitize(const char *s);

#endif
