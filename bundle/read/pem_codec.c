/* pem_codec: see pem_codec.h. */
#include "bundle/read/pem_codec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/bundle.h"
#include "bundle/gzip.h"

#define BEGIN_LINE "-----BEGIN " PEM_LABEL "-----"
#define END_LINE   "-----END " PEM_LABEL "-----"
#define COLUMNS	   64

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void put_base64(const uint8_t *d, size_t n, FILE *out)
{
	char line[COLUMNS + 2];
	size_t col = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)d[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)d[i + 1] << 8;
		if (i + 2 < n)
			v |= d[i + 2];
		line[col++] = b64[(v >> 18) & 63];
		line[col++] = b64[(v >> 12) & 63];
		line[col++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		line[col++] = i + 2 < n ? b64[v & 63] : '=';
		if (col == COLUMNS) {
			line[col++] = '\n';
			fwrite(line, 1, col, out);
			col = 0;
		}
	}
	if (col) {
		line[col++] = '\n';
		fwrite(line, 1, col, out);
	}
}

static int b64_value(int c)
{
	const char *p = c ? strchr(b64, c) : NULL;
	return p ? (int)(p - b64) : -1;
}

/* Append the base64 text s (no whitespace) to a growing buffer of
 * base64 characters; decoding happens once at the end. */
static int decode_base64(const char *s, size_t n, uint8_t **ret, size_t *ret_len)
{
	uint8_t *out = malloc(n / 4 * 3 + 3);
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '=')
			break;
		int v = b64_value((unsigned char)s[i]);
		if (v < 0) {
			free(out);
			return -EBADMSG;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	*ret = out;
	*ret_len = o;
	return 0;
}

static bool is_gzip(const uint8_t *d, size_t n)
{
	return n >= 2 && d[0] == 0x1f && d[1] == 0x8b;
}

static int encode_one(const char *bundle_id, size_t part, size_t parts, const char *name,
		      const uint8_t *data, size_t len, FILE *out)
{
	char sha[65];
	bundle_sha256_hex(data, len, sha);
	/* Text members (JSONL, threads.txt, the manifest) shrink several
	 * times under gzip; pprof members already are gzip. */
	bool gz = !is_gzip(data, len);
	uint8_t *z = NULL;
	size_t zlen = 0;
	if (gz && bundle_gzip(data, len, 9, &z, &zlen) < 0)
		return -ENOMEM;
	fprintf(out,
		"%s\nBundle: %s\nPart: %zu/%zu\nMember: %s\nSize: %zu\nSha256: %s\nEncoding: "
		"%s\n\n",
		BEGIN_LINE, bundle_id, part, parts, name, len, sha, gz ? "gzip+base64" : "base64");
	put_base64(gz ? z : data, gz ? zlen : len, out);
	fprintf(out, "%s\n", END_LINE);
	free(z);
	return ferror(out) ? -EIO : 0;
}

int pem_encode_bundle(const struct bundle_reader *r, FILE *out)
{
	const cJSON *m = bundle_reader_manifest(r);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "bundle_id");
	const char *bundle_id = cJSON_IsString(id) ? id->valuestring : "unknown";
	const cJSON *members = cJSON_GetObjectItemCaseSensitive(m, "members");
	size_t parts = 1 + (size_t)cJSON_GetArraySize(members), part = 1;
	char *data;
	size_t len;
	int e = bundle_reader_read(r, "manifest.json", &data, &len);
	if (e < 0)
		return e;
	e = encode_one(bundle_id, part++, parts, "manifest.json", (uint8_t *)data, len, out);
	free(data);
	const cJSON *mem;
	cJSON_ArrayForEach(mem, members)
	{
		if (e < 0)
			break;
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(mem, "name");
		if (!cJSON_IsString(n))
			return -EBADMSG;
		e = bundle_reader_read(r, n->valuestring, &data, &len);
		if (e < 0)
			return e;
		e = encode_one(bundle_id, part++, parts, n->valuestring, (uint8_t *)data, len, out);
		free(data);
	}
	return e;
}

/* ---- decoding ---- */

struct block {
	char *bundle, *member, *sha, *encoding;
	size_t part, parts, size;
	bool have_part, have_size;
	char *b64;
	size_t b64len, b64cap;
};

static void block_release(struct block *k)
{
	free(k->bundle);
	free(k->member);
	free(k->sha);
	free(k->encoding);
	free(k->b64);
	memset(k, 0, sizeof(*k));
}

static char *trimmed_dup(const char *s, size_t n)
{
	while (n && (s[0] == ' ' || s[0] == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	return strndup(s, n);
}

/* "Key: value" -> value, or NULL when s is not that header. */
static const char *header_value(const char *s, size_t n, const char *key)
{
	size_t kl = strlen(key);
	if (n > kl + 1 && strncmp(s, key, kl) == 0 && s[kl] == ':')
		return s + kl + 1;
	return NULL;
}

static int block_header(struct block *k, const char *s, size_t n)
{
	const char *v;
	size_t vn;
#define VAL(key) ((v = header_value(s, n, key)) != NULL && ((vn = n - (size_t)(v - s)), 1))
	if (VAL("Bundle"))
		return (k->bundle = trimmed_dup(v, vn)) ? 0 : -ENOMEM;
	if (VAL("Member"))
		return (k->member = trimmed_dup(v, vn)) ? 0 : -ENOMEM;
	if (VAL("Sha256"))
		return (k->sha = trimmed_dup(v, vn)) ? 0 : -ENOMEM;
	if (VAL("Encoding"))
		return (k->encoding = trimmed_dup(v, vn)) ? 0 : -ENOMEM;
	if (VAL("Part")) {
		char *t = trimmed_dup(v, vn);
		if (!t)
			return -ENOMEM;
		k->have_part = sscanf(t, "%zu/%zu", &k->part, &k->parts) == 2;
		free(t);
		return 0;
	}
	if (VAL("Size")) {
		char *t = trimmed_dup(v, vn), *end;
		if (!t)
			return -ENOMEM;
		k->size = strtoull(t, &end, 10);
		k->have_size = end != t && !*end;
		free(t);
		return 0;
	}
#undef VAL
	return 0; /* unknown headers are for newer versions: ignore */
}

static int block_data(struct block *k, const char *s, size_t n)
{
	while (n && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	while (n && (s[0] == ' ' || s[0] == '\t')) {
		s++;
		n--;
	}
	if (k->b64len + n + 1 > k->b64cap) {
		size_t nc = (k->b64len + n + 1) * 2;
		char *nb = realloc(k->b64, nc);
		if (!nb)
			return -ENOMEM;
		k->b64 = nb;
		k->b64cap = nc;
	}
	memcpy(k->b64 + k->b64len, s, n);
	k->b64len += n;
	return 0;
}

static bool name_ok(const char *name)
{
	if (!name || !*name || name[0] == '/' || strstr(name, "//"))
		return false;
	for (const char *p = name; *p;) {
		size_t l = strcspn(p, "/");
		if ((l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += l;
		if (*p == '/')
			p++;
	}
	return name[strlen(name) - 1] != '/';
}

/* Check a finished block and, if it belongs to b and is intact, keep its
 * file. Returns 0 (kept or skipped) or -ENOMEM. */
static int block_finish(struct pem_bundle *b, struct block *k, const char *want_id)
{
	if (!k->bundle || !k->have_part || !k->have_size || !k->member || !k->sha || !k->parts ||
	    k->part < 1 || k->part > k->parts || !name_ok(k->member)) {
		b->bad_blocks++;
		return 0;
	}
	if (!b->bundle_id) {
		if (want_id && strcmp(want_id, k->bundle) != 0) {
			b->other_bundles++;
			return 0;
		}
		b->bundle_id = strdup(k->bundle);
		b->parts = k->parts;
		b->files = calloc(k->parts, sizeof(*b->files));
		b->have = calloc(k->parts, sizeof(*b->have));
		if (!b->bundle_id || !b->files || !b->have)
			return -ENOMEM;
	} else if (strcmp(b->bundle_id, k->bundle) != 0) {
		b->other_bundles++;
		return 0;
	}
	if (k->parts != b->parts) {
		b->bad_blocks++;
		return 0;
	}
	if (b->have[k->part - 1])
		return 0; /* a repeated dump: the first good copy stays */
	uint8_t *raw;
	size_t rawlen;
	int e = decode_base64(k->b64 ? k->b64 : "", k->b64len, &raw, &rawlen);
	if (e == -ENOMEM)
		return e;
	if (e < 0) {
		b->bad_blocks++;
		return 0;
	}
	if (k->encoding && strcmp(k->encoding, "gzip+base64") == 0) {
		uint8_t *plain;
		size_t plen;
		/* Bounded by the block's Size: a lying header only makes the
		 * size or sha256 check fail, it cannot make us inflate a bomb. */
		e = bundle_gunzip(raw, rawlen, k->size, &plain, &plen);
		free(raw);
		if (e == 0 && plen != k->size) {
			free(plain);
			e = -EBADMSG;
		}
		if (e < 0) {
			b->bad_blocks++;
			return e == -ENOMEM ? e : 0;
		}
		raw = plain;
		rawlen = plen;
	} else if (k->encoding && strcmp(k->encoding, "base64") != 0) {
		free(raw);
		b->bad_blocks++;
		return 0;
	}
	char sha[65];
	bundle_sha256_hex(raw, rawlen, sha);
	if (rawlen != k->size || strcmp(sha, k->sha) != 0) {
		free(raw);
		b->bad_blocks++;
		return 0;
	}
	struct pem_file *f = &b->files[k->part - 1];
	f->name = k->member;
	k->member = NULL;
	f->data = raw;
	f->len = rawlen;
	b->have[k->part - 1] = true;
	return 0;
}

int pem_decode(const char *text, size_t len, const char *want_id, struct pem_bundle **ret)
{
	struct pem_bundle *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	struct block k = {0};
	bool in = false, body = false;
	size_t col = 0;
	int e = 0;
	for (size_t pos = 0; pos < len && e == 0;) {
		const char *line = text + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		pos += n + (nl ? 1 : 0);
		const char *begin = memmem(line, n, BEGIN_LINE, strlen(BEGIN_LINE));
		if (begin) {
			/* A BEGIN inside a block means the END was lost: drop the
			 * partial block and start over. */
			if (in)
				b->bad_blocks++;
			block_release(&k);
			in = true;
			body = false;
			col = (size_t)(begin - line);
			continue;
		}
		if (!in)
			continue;
		/* Strip the log prefix by width, not by text: timestamps
		 * change from line to line, their width does not. */
		const char *s = line;
		size_t sn = n;
		if (sn >= col) {
			s += col;
			sn -= col;
		} else {
			sn = 0;
		}
		if (memmem(s, sn, END_LINE, strlen(END_LINE))) {
			e = block_finish(b, &k, want_id);
			block_release(&k);
			in = false;
			continue;
		}
		size_t tn = sn;
		while (tn && (s[tn - 1] == '\r' || s[tn - 1] == ' ' || s[tn - 1] == '\t'))
			tn--;
		/* Some pipelines drop empty lines, so the blank line after the
		 * headers is optional: base64 never contains ':', headers do. */
		if (!body && tn == 0)
			body = true;
		else if (!body && memchr(s, ':', tn))
			e = block_header(&k, s, tn);
		else if (tn) {
			body = true;
			e = block_data(&k, s, tn);
		}
	}
	if (in)
		b->bad_blocks++;
	block_release(&k);
	if (e == 0 && !b->bundle_id)
		e = -ENOENT;
	if (e < 0) {
		pem_bundle_free(b);
		return e;
	}
	*ret = b;
	return 0;
}

void pem_bundle_free(struct pem_bundle *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->parts && b->files; i++) {
		free(b->files[i].name);
		free(b->files[i].data);
	}
	free(b->files);
	free(b->have);
	free(b->bundle_id);
	free(b);
}

/* ---- writing ---- */

int pem_bundle_write(const struct pem_bundle *b, const char *dir)
{
	const struct pem_file *manifest = NULL;
	for (size_t i = 0; i < b->parts; i++)
		if (!b->have[i])
			return -ENODATA;
	for (size_t i = 0; i < b->parts; i++) {
		if (!name_ok(b->files[i].name))
			return -EINVAL;
		if (strcmp(b->files[i].name, "manifest.json") == 0)
			manifest = &b->files[i];
	}
	if (!manifest)
		return -ENODATA;
	/* The bundle module's own writer: the directory is refused if it is
	 * a symlink, and each member path is walked component by component
	 * without following symlinks, so a link planted in the output cannot
	 * send a member outside it. */
	struct bundle *out;
	int e = bundle_create(dir, &out);
	if (e < 0)
		return e;
	for (size_t i = 0; i < b->parts; i++) {
		const struct pem_file *f = &b->files[i];
		if (f != manifest && (e = bundle_write_member(out, f->name, f->data, f->len)) < 0) {
			bundle_abandon(out);
			return e;
		}
	}
	/* The shipped manifest byte for byte, last: until it exists the
	 * directory is a partial bundle, exactly as during a capture. */
	return bundle_finalize_verbatim(out, manifest->data, manifest->len);
}
