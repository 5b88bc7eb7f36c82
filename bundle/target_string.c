/* target_string: the one way a string a target chose enters the bundle
 * (redact.h): the redaction rules of redact.c, then text.h's escaping. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/redact.h"
#include "bundle/text.h"

/* A name is redacted as the one argument of a line with no program: a
 * rule that needs a program ("-pPW" of mysql) has none to go by. */
static char *redact_name(const char *name)
{
	char *argv[2] = { "", (char *)name };
	char **red = bundle_redact_argv(argv, 2);
	char *r = NULL;

	if (red) {
		r = red[1];
		red[1] = NULL;
		bundle_redacted_free(red, 2);
	}
	return r;
}

/* cmdline's words, redacted, joined by single spaces. */
static char *redact_cmdline(const char *s, size_t len)
{
	size_t argc = 0, total = 0;
	char **argv, **red, *out = NULL, *o;
	char *copy = malloc(len + 1);

	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	/* A trailing NUL ends the last word rather than starting one. */
	if (len && copy[len - 1] == '\0')
		len--;
	for (size_t i = 0; i <= len; i++)
		argc += i == len || copy[i] == '\0';
	argv = calloc(argc + 1, sizeof(*argv));
	if (!argv) {
		free(copy);
		return NULL;
	}
	argc = 0;
	for (size_t i = 0; i <= len; i += strlen(copy + i) + 1)
		argv[argc++] = copy + i;
	while (argc > 1 && argv[argc - 1][0] == '\0')
		argc--;
	red = bundle_redact_argv(argv, argc);
	for (size_t i = 0; red && i < argc; i++)
		total += strlen(red[i]) + 1;
	if (red && (out = malloc(total + 1))) {
		o = out;
		for (size_t i = 0; i < argc; i++) {
			if (i)
				*o++ = ' ';
			o = stpcpy(o, red[i]);
		}
		*o = '\0';
	}
	bundle_redacted_free(red, argc);
	free(argv);
	free(copy);
	return out;
}

static char *redact(enum target_string_kind kind, const char *s, size_t len)
{
	char *red = NULL, *one;

	switch (kind) {
	case TARGET_CMDLINE:
		red = redact_cmdline(s, len);
		break;
	case TARGET_NAME:
	case TARGET_ENVIRON:
		one = strndup(s, len);
		if (one)
			red = kind == TARGET_NAME ? redact_name(one) : bundle_redact_env(one);
		free(one);
		break;
	}
	return red;
}

char *bundle_target_string(enum target_string_kind kind, enum target_string_form form, const char *s,
			   size_t len)
{
	char *red = redact(kind, s, len);

	if (!red || form == TARGET_FOR_JSON)
		return red;
	/* escape_text spells a byte in at most 4. */
	size_t size = 4 * strlen(red) + 1;
	char *text = malloc(size);
	if (text)
		escape_text(red, text, size);
	free(red);
	return text;
}

char *bundle_target_name(const char *name, char *out, size_t size)
{
	char *red = redact(TARGET_NAME, name, strlen(name));

	escape_text(red ? red : BUNDLE_REDACTED, out, size);
	free(red);
	return out;
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

const char *bundle_name_memo_get(struct bundle_name_memo *m, const char *name)
{
	size_t i = name_hash(name) % BUNDLE_NAME_MEMO_SLOTS;
	char buf[BUNDLE_NAME_TEXT_SIZE];

	if (m->slot[i].name && !strcmp(m->slot[i].name, name))
		return m->slot[i].text;
	free(m->slot[i].name);
	free(m->slot[i].text);
	m->slot[i].name = strdup(name);
	m->slot[i].text = strdup(bundle_target_name(name, buf, sizeof(buf)));
	if (!m->slot[i].name || !m->slot[i].text) {
		free(m->slot[i].name);
		free(m->slot[i].text);
		m->slot[i].name = m->slot[i].text = NULL;
		return BUNDLE_REDACTED;
	}
	return m->slot[i].text;
}

void bundle_name_memo_release(struct bundle_name_memo *m)
{
	for (size_t i = 0; i < BUNDLE_NAME_MEMO_SLOTS; i++) {
		free(m->slot[i].name);
		free(m->slot[i].text);
		m->slot[i].name = m->slot[i].text = NULL;
	}
}
