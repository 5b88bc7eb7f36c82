/*
 * /proc/PID/maps parsing.
 *
 * Line format (fs/proc/task_mmu.c, show_map_vma):
 *   start-limit perms offset major:minor inode   path
 * with start, limit, offset, major, minor in hex and inode in decimal. The
 * path is padded to a column with spaces and runs to the end of the line: it
 * may itself contain spaces. The kernel escapes only '\n' in it (as "\012",
 * via seq_file_path(..., "\n")), and appends " (deleted)" when the file was
 * unlinked. A backslash is not escaped, so a literal "\012" in a file name is
 * indistinguishable from an escaped newline; we decode it as the kernel meant.
 */
#include <stddef.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symbolize.h"
#include "symbolize/arrays.h"

static const char deleted_suffix[] = " (deleted)";

static int parse_hex(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	while (s < end) {
		unsigned d;
		char c = *s;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		if (n == 16)
			return -EINVAL; /* more than 64 bits */
		v = (v << 4) | d;
		n++;
		s++;
	}
	if (n == 0)
		return -EINVAL;
	*p = s;
	*ret = v;
	return 0;
}

static int parse_dec(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;

	if (s >= end || *s < '0' || *s > '9')
		return -EINVAL;
	while (s < end && *s >= '0' && *s <= '9') {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
		s++;
	}
	*p = s;
	*ret = v;
	return 0;
}

static int expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

static void skip_spaces(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/* Copy [s, end) decoding "\012" to '\n'. Returns a NUL-terminated string. */
static char *unescape_path(const char *s, const char *end)
{
	char *out = malloc((size_t)(end - s) + 1), *o = out;

	if (!out)
		return NULL;
	while (s < end) {
		if (end - s >= 4 && memcmp(s, "\\012", 4) == 0) {
			*o++ = '\n';
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

static int parse_line(const char *s, const char *end, struct maps_entry *e)
{
	uint64_t major, minor;
	size_t plen;
	int r;

	memset(e, 0, sizeof(*e));
	if ((r = parse_hex(&s, end, &e->start)) < 0 || (r = expect(&s, end, '-')) < 0 ||
	    (r = parse_hex(&s, end, &e->limit)) < 0 || (r = expect(&s, end, ' ')) < 0)
		return r;
	if (e->limit < e->start)
		return -EINVAL;
	if (end - s < 5 || s[4] != ' ')
		return -EINVAL;
	memcpy(e->perms, s, 4);
	e->perms[4] = '\0';
	s += 5;
	if ((r = parse_hex(&s, end, &e->offset)) < 0 || (r = expect(&s, end, ' ')) < 0 ||
	    (r = parse_hex(&s, end, &major)) < 0 || (r = expect(&s, end, ':')) < 0 ||
	    (r = parse_hex(&s, end, &minor)) < 0 || (r = expect(&s, end, ' ')) < 0 ||
	    (r = parse_dec(&s, end, &e->inode)) < 0)
		return r;
	if (major > 0xfff || minor > 0xfffff)
		return -EINVAL;
	e->dev_major = (unsigned)major;
	e->dev_minor = (unsigned)minor;
	if (s < end && *s != ' ' && *s != '\t')
		return -EINVAL;
	skip_spaces(&s, end);

	plen = (size_t)(end - s);
	if (plen > sizeof(deleted_suffix) - 1 &&
	    memcmp(end - (sizeof(deleted_suffix) - 1), deleted_suffix, sizeof(deleted_suffix) - 1) == 0) {
		e->deleted = true;
		end -= sizeof(deleted_suffix) - 1;
	}
	e->path = unescape_path(s, end);
	return e->path ? 0 : -ENOMEM;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct maps_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int maps_parse(const char *text, size_t len, struct maps *ret)
{
	struct maps m = { 0 };
	size_t cap = 0;
	const char *p = text, *end = text + len;
	int r;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end;

		if (le > p && le[-1] == '\r')
			le--;
		if (le == p) { /* tolerate blank lines */
			p = eol ? eol + 1 : end;
			continue;
		}
		if (m.count == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct maps_entry *n = realloc(m.entries, ncap * sizeof(*n));

			if (!n) {
				r = -ENOMEM;
				goto fail;
			}
			m.entries = n;
			cap = ncap;
		}
		r = parse_line(p, le, &m.entries[m.count]);
		if (r < 0)
			goto fail;
		m.count++;
		p = eol ? eol + 1 : end;
	}
	/* The kernel lists VMAs in address order; hand-made input may not. */
	for (size_t i = 1; i < m.count; i++) {
		if (m.entries[i - 1].start > m.entries[i].start) {
			qsort(m.entries, m.count, sizeof(*m.entries), entry_cmp);
			break;
		}
	}
	*ret = m;
	return 0;
fail:
	maps_release(&m);
	return r;
}

void maps_release(struct maps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->count; i++)
		free(m->entries[i].path);
	free(m->entries);
	m->entries = NULL;
	m->count = 0;
}

const struct maps_entry *maps_find(const struct maps *m, uint64_t addr)
{
	/* maps_parse() guarantees address order. */
	size_t lo = addr_first_above(m->entries, m->count, sizeof(m->entries[0]),
				     offsetof(struct maps_entry, start), addr);
	if (lo == 0)
		return NULL;
	if (addr < m->entries[lo - 1].limit)
		return &m->entries[lo - 1];
	return NULL;
}
