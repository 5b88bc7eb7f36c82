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

/* A member read and checked, waiting to be encoded. */
struct held {
	const char *name;
	char *data;
	size_t len;
};

int pem_encode_bundle(const struct bundle_reader *r, FILE *out)
{
	const cJSON *m = bundle_reader_manifest(r);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "bundle_id");
	const char *bundle_id = cJSON_IsString(id) ? id->valuestring : "unknown";
	const cJSON *members = cJSON_GetObjectItemCaseSensitive(m, "members");
	size_t parts = 1 + (size_t)cJSON_GetArraySize(members), n = 0;
	struct held *h = calloc(parts, sizeof(*h));
	if (!h)
		return -ENOMEM;
	/* Every member is read before a line is written, each once: the
	 * reader hands out exactly the bytes it checked against the
	 * manifest, and those are what is encoded. A damaged bundle, or one
	 * changed while we read it, prints nothing. */
	h[n].name = "manifest.json";
	int e = bundle_reader_read(r, h[n].name, &h[n].data, &h[n].len);
	n += e == 0;
	const cJSON *mem;
	cJSON_ArrayForEach(mem, members)
	{
		if (e < 0)
			break;
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(mem, "name");
		if (!cJSON_IsString(nm)) {
			e = -EBADMSG;
			break;
		}
		h[n].name = nm->valuestring;
		e = bundle_reader_read(r, h[n].name, &h[n].data, &h[n].len);
		n += e == 0;
	}
	for (size_t i = 0; i < n && e == 0; i++)
		e = encode_one(bundle_id, i + 1, parts, h[i].name, (uint8_t *)h[i].data, h[i].len,
			       out);
	for (size_t i = 0; i < n; i++)
		free(h[i].data);
	free(h);
	return e;
}

/* ---- decoding ---- */

struct block {
	char *bundle, *member, *sha, *encoding;
	size_t member_len; /* a hostile header may hide a NUL in the name */
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

/* The value s of n bytes without its surrounding blanks, NULs kept (and
 * its length in *ret_len, if asked), NUL-terminated. */
static char *trimmed_dup(const char *s, size_t n, size_t *ret_len)
{
	while (n && (s[0] == ' ' || s[0] == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		n--;
	char *d = malloc(n + 1);
	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	if (ret_len)
		*ret_len = n;
	return d;
}

/* A header given twice in a block: the last one counts. */
static int set_header(char **slot, const char *v, size_t vn, size_t *ret_len)
{
	char *d = trimmed_dup(v, vn, ret_len);
	if (!d)
		return -ENOMEM;
	free(*slot);
	*slot = d;
	return 0;
}

/* "Key: value" -> value, or NULL when s is not that header. The value
 * may be empty ("Member:" once its blanks are trimmed): an empty name is
 * refused as such, not taken for a block without one. */
static const char *header_value(const char *s, size_t n, const char *key)
{
	size_t kl = strlen(key);
	if (n >= kl + 1 && strncmp(s, key, kl) == 0 && s[kl] == ':')
		return s + kl + 1;
	return NULL;
}

static int block_header(struct block *k, const char *s, size_t n)
{
	const char *v;
	size_t vn;
#define VAL(key) ((v = header_value(s, n, key)) != NULL && ((vn = n - (size_t)(v - s)), 1))
	if (VAL("Bundle"))
		return set_header(&k->bundle, v, vn, NULL);
	if (VAL("Member"))
		return set_header(&k->member, v, vn, &k->member_len);
	if (VAL("Sha256"))
		return set_header(&k->sha, v, vn, NULL);
	if (VAL("Encoding"))
		return set_header(&k->encoding, v, vn, NULL);
	if (VAL("Part")) {
		char *t = trimmed_dup(v, vn, NULL);
		if (!t)
			return -ENOMEM;
		k->have_part = sscanf(t, "%zu/%zu", &k->part, &k->parts) == 2;
		free(t);
		return 0;
	}
	if (VAL("Size")) {
		char *t = trimmed_dup(v, vn, NULL), *end;
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

enum pem_refusal pem_name_check(const char *name, size_t len)
{
	/* Leaving the directory first: of all that is wrong with a name,
	 * that is what the operator must hear. */
	if (len && name[0] == '/')
		return PEM_NAME_ESCAPES;
	for (size_t i = 0; i < len;) {
		const char *c = memchr(name + i, '/', len - i);
		size_t l = c ? (size_t)(c - (name + i)) : len - i;
		if (l == 2 && name[i] == '.' && name[i + 1] == '.')
			return PEM_NAME_ESCAPES;
		i += l + 1;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return PEM_NAME_CONTROL;
	if (strcmp(name, "manifest.json") == 0 || bundle_name_valid(name))
		return PEM_WRITABLE;
	return PEM_NAME_INVALID;
}

static void refuse(struct pem_bundle *b, enum pem_refusal why, char **name, size_t len,
		   size_t part, size_t other_part)
{
	if (b->refusal != PEM_WRITABLE)
		return; /* the first one is told */
	b->refusal = why;
	b->refused_name = *name;
	*name = NULL;
	b->refused_len = len;
	b->refused_part = part;
	b->other_part = other_part;
}

/* Check a finished block and, if it belongs to b and is intact, keep its
 * file. Returns 0 (kept or skipped) or -ENOMEM. */
static int block_finish(struct pem_bundle *b, struct block *k, const char *want_id)
{
	if (!k->bundle || !k->have_part || !k->have_size || !k->member || !k->sha || !k->parts ||
	    k->parts > PEM_MAX_PARTS || k->part < 1 || k->part > k->parts) {
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
	/* Before any other check: a hostile name is told as such, not as
	 * one more block that failed its sha256. */
	enum pem_refusal why = pem_name_check(k->member, k->member_len);
	if (why != PEM_WRITABLE) {
		refuse(b, why, &k->member, k->member_len, k->part, 0);
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

/* ---- collisions between parts ---- */

static int cmp_part_name(const void *a, const void *b, void *ctx)
{
	const struct pem_bundle *pb = ctx;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int r = strcmp(pb->files[x].name, pb->files[y].name);
	return r ? r : (x > y) - (x < y);
}

/* Compare the first n bytes of key, as a string of its own, with s. */
static int cmp_prefix(const char *key, size_t n, const char *s)
{
	int r = strncmp(key, s, n);
	if (r)
		return r;
	return s[n] ? -1 : 0;
}

/* Two present parts whose members cannot both be written: the same name
 * twice (*ret_part the later part, *ret_other the earlier), or a name that
 * another needs as a directory ("a/b" in *ret_part, "a" in *ret_other).
 * Parts are numbered from 1. -ENOMEM, 0 (none) or the refusal. */
static int find_collision(const struct pem_bundle *b, size_t *ret_part, size_t *ret_other)
{
	size_t n = 0, *idx = malloc((b->parts ? b->parts : 1) * sizeof(*idx));
	int found = 0;
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < b->parts; i++)
		if (b->have[i])
			idx[n++] = i;
	qsort_r(idx, n, sizeof(*idx), cmp_part_name, (void *)b);
	for (size_t i = 1; i < n && !found; i++)
		if (strcmp(b->files[idx[i - 1]].name, b->files[idx[i]].name) == 0) {
			*ret_part = (idx[i - 1] > idx[i] ? idx[i - 1] : idx[i]) + 1;
			*ret_other = (idx[i - 1] > idx[i] ? idx[i] : idx[i - 1]) + 1;
			found = PEM_NAME_DUPLICATE;
		}
	/* Every directory of every name, looked up among the names. */
	for (size_t i = 0; i < n && !found; i++) {
		const char *name = b->files[idx[i]].name;
		for (const char *sl = strchr(name, '/'); sl && !found; sl = strchr(sl + 1, '/')) {
			size_t lo = 0, hi = n, pl = (size_t)(sl - name);
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				int r = cmp_prefix(name, pl, b->files[idx[mid]].name);
				if (r == 0) {
					*ret_part = idx[i] + 1;
					*ret_other = idx[mid] + 1;
					found = PEM_NAME_NESTED;
					break;
				}
				if (r < 0)
					hi = mid;
				else
					lo = mid + 1;
			}
		}
	}
	free(idx);
	return found;
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
	if (e == 0 && b->refusal == PEM_WRITABLE) {
		size_t part, other;
		int c = find_collision(b, &part, &other);
		char *name = c > 0 ? strdup(b->files[part - 1].name) : NULL;
		if (c < 0 || (c > 0 && !name))
			e = -ENOMEM;
		else if (c > 0)
			refuse(b, (enum pem_refusal)c, &name, strlen(b->files[part - 1].name), part,
			       other);
	}
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
	free(b->refused_name);
	free(b);
}

/* ---- writing ---- */

int pem_bundle_write(const struct pem_bundle *b, const char *dir)
{
	const struct pem_file *manifest = NULL;
	size_t part, other;
	if (b->refusal != PEM_WRITABLE)
		return -EINVAL;
	for (size_t i = 0; i < b->parts; i++)
		if (!b->have[i])
			return -ENODATA;
	/* pem_decode refused all this already; checked again because a
	 * directory half written by a writer that trusted its input is
	 * exactly what this must never leave. */
	for (size_t i = 0; i < b->parts; i++) {
		const struct pem_file *f = &b->files[i];
		if (pem_name_check(f->name, strlen(f->name)) != PEM_WRITABLE)
			return -EINVAL;
		if (strcmp(f->name, "manifest.json") == 0)
			manifest = f;
	}
	int c = find_collision(b, &part, &other);
	if (c != 0)
		return c < 0 ? c : -EINVAL;
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
