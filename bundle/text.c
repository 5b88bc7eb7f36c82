/* Text and identifiers as the bundle writes them: escaping of names that
 * come from the target, UTF-8 for JSON, timestamps and bundle ids. */
#include "bundle/text.h"

#include <stdbool.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

void format_rfc3339_ms(uint64_t epoch_ns, char out[32])
{
	time_t secs = (time_t)(epoch_ns / 1000000000ull);
	unsigned ms = (unsigned)((epoch_ns / 1000000ull) % 1000ull);
	struct tm tm;
	gmtime_r(&secs, &tm);
	char base[24];
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 32, "%s.%03uZ", base, ms);
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void make_uuid(char out[37])
{
	unsigned char b[16];
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		/* Uniqueness, not secrecy, is what a bundle id needs. */
		uint64_t t = clock_ns(CLOCK_REALTIME) ^ clock_ns(CLOCK_MONOTONIC);
		for (int i = 0; i < 16; i++)
			b[i] = (unsigned char)(t >> ((i % 8) * 8)) ^ (unsigned char)(i * 37);
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

/* Length of the valid UTF-8 character at s (1 to 4), or 0 when s does not
 * start one (stray continuation byte, overlong form, surrogate, beyond
 * U+10FFFF, cut short). s is NUL-terminated, which is never a continuation. */
static size_t utf8_char_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	size_t n = s[0] >= 0xc2 && s[0] <= 0xdf   ? 2
		   : s[0] >= 0xe0 && s[0] <= 0xef ? 3
		   : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
						  : 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

/* The code point of the valid n-byte UTF-8 character at u. */
static uint32_t utf8_decode(const unsigned char *u, size_t n)
{
	uint32_t c = n == 2 ? u[0] & 0x1f : n == 3 ? u[0] & 0x0f : u[0] & 0x07;
	for (size_t i = 1; i < n; i++)
		c = (c << 6) | (u[i] & 0x3f);
	return c;
}

/* Valid characters a terminal must still not be handed: C1 controls
 * (U+009B is a CSI to a terminal that takes 8-bit controls) and the
 * invisible formatting and bidirectional controls that make a line read
 * other than it is (U+202E reverses what follows). */
static bool unsafe_for_terminal(uint32_t c)
{
	return (c >= 0x80 && c <= 0x9f) || c == 0x061c || (c >= 0x200b && c <= 0x200f) ||
	       (c >= 0x202a && c <= 0x202e) || (c >= 0x2060 && c <= 0x2069) || c == 0xfeff;
}

/* The escaped form of the character at s into e (at most 6 bytes + NUL);
 * returns how many bytes of s it stands for. */
static size_t escape_one(const char *s, char e[8])
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = utf8_char_len(u);
	if (n > 1) {
		uint32_t c = utf8_decode(u, n);
		if (unsafe_for_terminal(c)) {
			snprintf(e, 8, "\\u%04x", (unsigned)c);
			return n;
		}
		memcpy(e, s, n);
		e[n] = '\0';
		return n;
	}
	if (u[0] == '\\')
		snprintf(e, 8, "\\\\");
	else if (u[0] == '"')
		snprintf(e, 8, "\\\"");
	else if (u[0] == '\n')
		snprintf(e, 8, "\\n");
	else if (u[0] == '\t')
		snprintf(e, 8, "\\t");
	else if (u[0] == '\r')
		snprintf(e, 8, "\\r");
	else if (u[0] < 0x20 || u[0] >= 0x7f)
		snprintf(e, 8, "\\x%02x", u[0]);
	else
		snprintf(e, 8, "%c", u[0]);
	return 1;
}

char *escape_text(const char *s, char *out, size_t out_size)
{
	size_t len = 0;
	out[0] = '\0';
	while (*s) {
		char e[8];
		size_t used = escape_one(s, e), el = strlen(e);
		if (len + el >= out_size)
			break;
		memcpy(out + len, e, el + 1);
		len += el;
		s += used;
	}
	return out;
}

void escape_text_put(const char *s, FILE *f)
{
	while (*s) {
		char e[8];
		s += escape_one(s, e);
		fputs(e, f);
	}
}

/* JSON text's spelling of the character at s, into e (at most 6 bytes +
 * NUL); returns how many bytes of s it stands for. Only bytes of 0x7f and
 * up can need it: cJSON already escapes the rest, and such bytes occur
 * only inside strings (cJSON writes nothing else but ASCII). */
static size_t json_one(const char *s, char e[8])
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = utf8_char_len(u);
	if (n == 0) {
		/* Not UTF-8: the byte as escape_text spells it ("\xNN"),
		 * its backslash escaped for JSON, so that the parsed string
		 * reads as the terminal text does. */
		char t[8];
		escape_one(s, t);
		e[0] = '\\';
		memcpy(e + 1, t, strlen(t) + 1);
		return 1;
	}
	uint32_t c = n == 1 ? u[0] : utf8_decode(u, n);
	if (c == 0x7f || unsafe_for_terminal(c)) {
		/* A JSON escape: a parser reads back the very character. */
		snprintf(e, 8, "\\u%04x", (unsigned)c);
		return n;
	}
	memcpy(e, s, n);
	e[n] = '\0';
	return n;
}

char *json_print(const cJSON *doc, bool formatted)
{
	char *raw = formatted ? cJSON_Print(doc) : cJSON_PrintUnformatted(doc);
	if (!raw)
		return NULL;
	size_t len = 0;
	char e[8];
	for (const char *p = raw; *p;) {
		p += json_one(p, e);
		len += strlen(e);
	}
	char *out = malloc(len + 1), *o = out;
	if (out) {
		for (const char *p = raw; *p;) {
			p += json_one(p, e);
			o = stpcpy(o, e);
		}
		*o = '\0';
	}
	cJSON_free(raw);
	return out;
}

/* A key is a string from the bundle too (a thread state a profile's
 * label named, a counter): escaped in place, with cJSON's allocator. */
static int escape_key(cJSON *item)
{
	if (!item->string || (item->type & cJSON_StringIsConst))
		return 0;
	size_t size = 4 * strlen(item->string) + 1;
	char *e = cJSON_malloc(size);
	if (!e)
		return -ENOMEM;
	escape_text(item->string, e, size);
	cJSON_free(item->string);
	item->string = e;
	return 0;
}

int escape_json_strings(cJSON *item)
{
	for (; item; item = item->next) {
		if (escape_key(item) < 0)
			return -ENOMEM;
		if (cJSON_IsString(item) && item->valuestring) {
			size_t size = 4 * strlen(item->valuestring) + 1;
			char *e = malloc(size);
			if (!e)
				return -ENOMEM;
			escape_text(item->valuestring, e, size);
			bool ok = cJSON_SetValuestring(item, e) != NULL;
			free(e);
			if (!ok)
				return -ENOMEM;
		}
		if (item->child && escape_json_strings(item->child) < 0)
			return -ENOMEM;
	}
	return 0;
}

cJSON *escaped_json_copy(const cJSON *doc)
{
	cJSON *copy = cJSON_Duplicate(doc, true);
	if (copy && escape_json_strings(copy) < 0) {
		cJSON_Delete(copy);
		copy = NULL;
	}
	return copy;
}
