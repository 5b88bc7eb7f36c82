/*
 * fuzz_maps_parse: symbolize's /proc/PID/maps parser on arbitrary text.
 *
 * The text is the target's (its file names are under its control: spaces,
 * newlines escaped as \012, " (deleted)" suffixes, CRs, NULs).
 * Invariants:
 *  - no crash, no leak (maps_release frees everything);
 *  - on success: start <= limit for every entry, entries in address order,
 *    path never NULL;
 *  - maps_find only ever returns an entry that contains the address;
 *  - printing the entries back in the kernel's format and parsing that
 *    gives the same entries (when the text has no ambiguities the kernel
 *    itself could not produce: NULs, a path starting with a blank or ending
 *    in CR).
 */
#include "tests/fuzz/fuzz_common.h"

#include "symbolize/symbolize.h"

static void check_find(const struct maps *m, uint64_t addr)
{
	const struct maps_entry *e = maps_find(m, addr);

	if (e)
		FUZZ_CHECK(e->start <= addr && addr < e->limit);
}

static bool printable_back(const struct maps *m)
{
	for (size_t i = 0; i < m->count; i++) {
		const char *p = m->entries[i].path;
		size_t n = strlen(p);

		if (memchr(m->entries[i].perms, '\0', 4) || p[0] == ' ' || p[0] == '\t' ||
		    (n && p[n - 1] == '\r'))
			return false;
	}
	return true;
}

/* The kernel's format (show_map_vma): only '\n' is escaped in the path. */
static char *format_back(const struct maps *m, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	FUZZ_CHECK(f != NULL);
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];

		fprintf(f, "%llx-%llx %.4s %08llx %02x:%02x %llu", (unsigned long long)e->start,
			(unsigned long long)e->limit, e->perms, (unsigned long long)e->offset,
			e->dev_major, e->dev_minor, (unsigned long long)e->inode);
		if (e->path[0] || e->deleted)
			fputs("                          ", f);
		for (const char *p = e->path; *p; p++) {
			if (*p == '\n')
				fputs("\\012", f);
			else
				fputc(*p, f);
		}
		if (e->deleted)
			fputs(" (deleted)", f);
		fputc('\n', f);
	}
	FUZZ_CHECK(fclose(f) == 0);
	*ret_len = len;
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct maps m, again;
	struct fz f = fz_init(data, size);
	int r;

	r = maps_parse((const char *)data, size, &m);
	if (r < 0) {
		FUZZ_CHECK(r == -EINVAL || r == -ENOMEM);
		return 0;
	}
	for (size_t i = 0; i < m.count; i++) {
		const struct maps_entry *e = &m.entries[i];

		FUZZ_CHECK(e->start <= e->limit);
		FUZZ_CHECK(e->path != NULL);
		FUZZ_CHECK(e->perms[4] == '\0');
		if (i)
			FUZZ_CHECK(m.entries[i - 1].start <= e->start);
		check_find(&m, e->start);
		check_find(&m, e->limit);
		if (e->start)
			check_find(&m, e->start - 1);
	}
	for (int i = 0; i < 8; i++)
		check_find(&m, fz_u64(&f));

	if (!memchr(data, '\0', size) && printable_back(&m)) {
		size_t len;
		char *text = format_back(&m, &len);

		r = maps_parse(text, len, &again);
		FUZZ_CHECK(r == 0);
		FUZZ_CHECK(again.count == m.count);
		for (size_t i = 0; i < m.count; i++) {
			const struct maps_entry *a = &m.entries[i], *b = &again.entries[i];

			FUZZ_CHECK(a->start == b->start && a->limit == b->limit);
			FUZZ_CHECK(a->offset == b->offset && a->inode == b->inode);
			FUZZ_CHECK(a->dev_major == b->dev_major && a->dev_minor == b->dev_minor);
			FUZZ_CHECK(memcmp(a->perms, b->perms, 5) == 0);
			FUZZ_CHECK(a->deleted == b->deleted);
			FUZZ_CHECK(strcmp(a->path, b->path) == 0);
		}
		maps_release(&again);
		free(text);
	}
	maps_release(&m);
	return 0;
}
