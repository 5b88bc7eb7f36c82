/* Small helpers shared by the subcommands. */
#ifndef DIAG_CMD_UTIL_H
#define DIAG_CMD_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Random RFC 4122 version-4 UUID string. */
void make_uuid(char out[37]);

/* Name of an x86_64 syscall number, or NULL when not in our table. */
const char *syscall_name(long nr);

#endif
