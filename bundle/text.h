/*
 * text: how the bundle spells what it writes. Names and paths come from the
 * target (thread names, mapped paths, symbol names) and may hold anything
 * but NUL; every member that is text, every pprof label and every JSON
 * string goes through these. Timestamps and the bundle id are here too, so
 * that every writer of a manifest spells them alike.
 */
#ifndef DIAG_BUNDLE_TEXT_H
#define DIAG_BUNDLE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/* "2026-11-30T06:12:01.123Z" from nanoseconds since the epoch. */
void format_rfc3339_ms(uint64_t epoch_ns, char out[32]);

/* Random RFC 4122 version-4 UUID string. */
void make_uuid(char out[37]);

/*
 * In line-oriented text and in pprof labels, names are escaped so that one
 * thread stays one line and one label, and nothing a target named reaches
 * a terminal as a command: backslash, double quote, control characters,
 * DEL and bytes that do not form UTF-8 become \\, \", \n, \t, \r or \xNN;
 * C1 controls and the invisible or bidirectional formatting characters
 * (U+061C, U+200B-U+200F, U+202A-U+202E, U+2060-U+2069, U+FEFF) become
 * \uXXXX; other valid UTF-8 is kept as it is. escape_text writes into out (out_size > 0),
 * truncating between characters, and returns out; escape_text_put writes
 * to f.
 */
char *escape_text(const char *s, char *out, size_t out_size);
void escape_text_put(const char *s, FILE *f);

/* Every string value and key under item (its siblings and children too)
 * replaced by its escape_text form: what the text renderers of report and diff
 * print, so no name, path, finding or annotation from a target or a
 * bundle reaches the terminal raw. 0 or -ENOMEM (then partly done). */
int escape_json_strings(cJSON *item);

/* A copy of doc with every string escaped (escape_json_strings), for a
 * text renderer to print; NULL on ENOMEM. */
cJSON *escaped_json_copy(const cJSON *doc);

/*
 * doc as JSON text (formatted: cJSON's indented layout, else one line),
 * the way every JSON the tool writes is spelled: manifest.json, report
 * --json, diff --json, the speedscope export and the HTML page's data.
 * JSON must be UTF-8, and cJSON passes any byte of a string through, so
 * in every string (keys too) a byte that does not start a valid UTF-8
 * character becomes the text \xNN, exactly as escape_text shows it (in
 * the JSON text "\\xNN": a parser returns the four characters, which
 * cannot be told from a name that really held them); DEL, C1 controls
 * and the invisible and bidirectional formatting characters become JSON
 * \uXXXX escapes, which a parser turns back into the very character, so
 * that the text can go to a terminal. Valid strings read back exactly.
 * malloc'd, the caller frees; NULL on ENOMEM.
 */
char *json_print(const cJSON *doc, bool formatted);

#endif
