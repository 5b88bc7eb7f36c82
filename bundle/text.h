/*
 * text: how the bundle spells what it writes. Names and paths come from the
 * target (thread names, mapped paths, symbol names) and may hold anything
 * but NUL; every member that is text, every pprof label and every JSON
 * string goes through these. Timestamps and the bundle id are here too, so
 * that every writer of a manifest spells them alike.
 */
#ifndef DIAG_BUNDLE_TEXT_H
#define DIAG_BUNDLE_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "2026-11-30T06:12:01.123Z" from nanoseconds since the epoch. */
void format_rfc3339_ms(uint64_t epoch_ns, char out[32]);

/* Random RFC 4122 version-4 UUID string. */
void make_uuid(char out[37]);

/*
 * In line-oriented text and in pprof labels, names are escaped so that one
 * thread stays one line and one label: backslash, control characters, DEL
 * and bytes that do not form UTF-8 become \\, \n, \t, \r or \xNN; valid
 * UTF-8 is kept as it is. escape_text writes into out (out_size > 0),
 * truncating between characters, and returns out; escape_text_put writes
 * to f.
 */
char *escape_text(const char *s, char *out, size_t out_size);
void escape_text_put(const char *s, FILE *f);

/* A malloc'd copy of s that is valid UTF-8, for JSON (which must be UTF-8;
 * cJSON escapes control characters but passes any byte through): every
 * byte that does not start a valid character becomes U+FFFD. NULL on
 * ENOMEM. */
char *utf8_sanitize(const char *s);

#endif
