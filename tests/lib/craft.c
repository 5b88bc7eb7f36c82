/* craft: see craft.h. */
#include "craft.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bundle/bundle.h"

char *craft_manifest(const char *head, const struct craft_member *m, size_t n)
{
	cJSON *members = cJSON_CreateArray();
	for (size_t i = 0; members && i < n; i++) {
		char sha[65];
		cJSON *o = cJSON_CreateObject();
		bundle_sha256_hex(m[i].data, m[i].len, sha);
		cJSON_AddStringToObject(o, "name", m[i].name);
		cJSON_AddNumberToObject(o, "bytes", (double)m[i].len);
		cJSON_AddStringToObject(o, "sha256", sha);
		cJSON_AddItemToArray(members, o);
	}
	/* cJSON, not json_print: the raw bytes of names stay raw, as a
	 * hostile writer would leave them. */
	char *list = members ? cJSON_PrintUnformatted(members) : NULL;
	cJSON_Delete(members);
	if (!list)
		return NULL;
	size_t size = strlen(head) + strlen(list) + 32;
	char *out = malloc(size);
	if (out)
		snprintf(out, size, "{%s\"members\":%s}\n", head, list);
	free(list);
	return out;
}

int craft_bundle(const char *dir, const struct craft_member *m, size_t n, const char *manifest)
{
	struct bundle *b;
	int e = bundle_create(dir, &b);
	if (e < 0)
		return e;
	for (size_t i = 0; i < n; i++)
		if ((e = bundle_write_member(b, m[i].name, m[i].data, m[i].len)) < 0) {
			bundle_abandon(b);
			return e;
		}
	return bundle_finalize_verbatim(b, manifest, strlen(manifest));
}

void craft_pem_block(FILE *f, const char *bundle_id, size_t part, size_t parts, const char *name,
		     size_t name_len, const void *data, size_t len)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const uint8_t *d = data;
	char sha[65];
	bundle_sha256_hex(data, len, sha);
	fprintf(f, "-----BEGIN DIAG-ATTACH BUNDLE-----\nBundle: %s\nPart: %zu/%zu\nMember: ",
		bundle_id, part, parts);
	fwrite(name, 1, name_len, f);
	fprintf(f, "\nSize: %zu\nSha256: %s\nEncoding: base64\n\n", len, sha);
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)d[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)d[i + 1] << 8;
		if (i + 2 < len)
			v |= d[i + 2];
		fputc(b64[(v >> 18) & 63], f);
		fputc(b64[(v >> 12) & 63], f);
		fputc(i + 1 < len ? b64[(v >> 6) & 63] : '=', f);
		fputc(i + 2 < len ? b64[v & 63] : '=', f);
		if ((i / 3 + 1) % 16 == 0 || i + 3 >= len)
			fputc('\n', f);
	}
	fputs("-----END DIAG-ATTACH BUNDLE-----\n", f);
}
