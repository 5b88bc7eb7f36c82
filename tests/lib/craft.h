/*
 * craft: hostile bundles and PEM logs for tests, made byte by byte, with
 * what diag-attach itself would never write (a name that is not UTF-8, a
 * member name with "..", two blocks of one member). They are otherwise
 * well formed: every size and sha256 is right, so a reader meets the
 * hostile part and nothing else.
 *
 * Functions return 0 or a negative errno and never print.
 */
#ifndef DIAG_TESTS_CRAFT_H
#define DIAG_TESTS_CRAFT_H

#include <stddef.h>
#include <stdio.h>

/* One member of a crafted bundle. */
struct craft_member {
	const char *name;
	const void *data;
	size_t len;
};

/* manifest.json text: "{" head "\"members\":[...]}" where head is raw
 * JSON (object members, each followed by a comma; may be "") written as
 * given, bytes that are not UTF-8 included, and members lists each of
 * m[0..n) with its size and sha256. malloc'd; NULL on ENOMEM. */
char *craft_manifest(const char *head, const struct craft_member *m, size_t n);

/* A bundle in dir (which must not exist): the members, then the manifest
 * byte for byte (craft_manifest's, or anything). Through the bundle
 * module's writer, so the result is what a capture leaves on disk. */
int craft_bundle(const char *dir, const struct craft_member *m, size_t n, const char *manifest);

/* One PEM block as 'diag-attach pem' prints it (Encoding: base64), of
 * member name (name_len bytes: NULs and newlines are written as given)
 * with data. */
void craft_pem_block(FILE *f, const char *bundle_id, size_t part, size_t parts, const char *name,
		     size_t name_len, const void *data, size_t len);

#endif
