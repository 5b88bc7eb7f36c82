#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tmpdir.h"

char *tmpdir_make(void)
{
	const char *base = getenv("TMPDIR");
	char *path;

	cr_assert(asprintf(&path, "%s/diag-bundle-test-XXXXXX", base ? base : "/tmp") > 0);
	cr_assert_not_null(mkdtemp(path), "mkdtemp %s", path);
	return path;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(p);
	return 0;
}

void tmpdir_remove(char *path)
{
	if (!path)
		return;
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(path);
}

const char *tmpdir_join(char *buf, size_t size, const char *path, const char *name)
{
	cr_assert(snprintf(buf, size, "%s/%s", path, name) < (int)size);
	return buf;
}

void tmpdir_write_file(const char *path, const char *data)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "fopen %s", path);
	fputs(data, f);
	cr_assert_eq(fclose(f), 0);
}

char *tmpdir_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	cr_assert_not_null(f, "fopen %s", path);
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 8192;
			buf = realloc(buf, cap);
			cr_assert_not_null(buf);
		}
		size_t got = fread(buf + n, 1, 4096, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}
