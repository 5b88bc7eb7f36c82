/* pem_codec: see pem_codec.h. */
#include "bundle/views/pem_codec.h"

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

/* ---- decoding ----
 *
 * A line at a time: a block's headers are judged at its first line of
 * data (or at its END, if it has none), and from then on its base64 is
 * decoded line by line, inflated if it is gzip, and written to its sink
 * (a spool of the output bundle, or memory) and hashed, never past its
 * Size; its END says whether it is kept. */

struct block {
	char *bundle, *member, *sha, *encoding;
	size_t member_len; /* a hostile header may hide a NUL in the name */
	size_t part, parts;
	uint64_t size;
	bool have_part, have_size;
};

static void block_release(struct block *k)
{
	free(k->bundle);
	free(k->member);
	free(k->sha);
	free(k->encoding);
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
		/* Digits only: strtoull would take "-1" for 2^64 - 1. */
		errno = 0;
		k->size = strtoull(t, &end, 10);
		k->have_size = t[0] >= '0' && t[0] <= '9' && !*end && errno == 0;
		free(t);
		return 0;
	}
#undef VAL
	return 0; /* unknown headers are for newer versions: ignore */
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

static int note_past(struct pem_bundle *b, enum pem_past why, const struct block *k)
{
	if (b->past != PEM_WITHIN)
		return 0;
	b->past_name = strdup(k->member);
	if (!b->past_name)
		return -ENOMEM;
	b->past = why;
	b->past_part = k->part;
	b->past_size = k->size;
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

/* What is done with the block being read. */
enum block_fate {
	FATE_UNJUDGED, /* headers still coming */
	FATE_SKIP,     /* not ours to keep: a repeat, a refused name, past a limit */
	FATE_OTHER,    /* another bundle's: counted at its END */
	FATE_BAD,      /* damaged: counted at its END */
	FATE_DECODE,   /* being decoded into its sink */
};

struct pem_decoder {
	struct pem_bundle *b;
	char *want_id;
	struct bundle *out; /* NULL: decode to memory */
	int err;	    /* the first error that stops decoding */

	char line[PEM_MAX_LINE]; /* the line being assembled */
	size_t line_len;
	bool line_cut;

	struct block k; /* the block being read */
	bool in, body;
	size_t col; /* the width of its lines' log prefix */
	enum block_fate fate;
	bool gz, gz_ended, b64_ended, over;
	uint32_t acc; /* base64 bits not yet a byte */
	int bits;
	uint64_t got; /* bytes decoded so far */
	struct bundle_gunzip_stream *z;
	struct bundle_spool *spool; /* its sink: a spool of out, */
	uint8_t *mem;		    /* or memory */
	size_t mem_len, mem_cap;
	uint8_t chunk[PEM_MAX_LINE / 4 * 3 + 3]; /* one line's base64, decoded */
};

static void sink_drop(struct pem_decoder *d)
{
	bundle_spool_drop(d->spool);
	d->spool = NULL;
	free(d->mem);
	d->mem = NULL;
	d->mem_len = d->mem_cap = 0;
}

static void block_reset(struct pem_decoder *d)
{
	sink_drop(d);
	block_release(&d->k);
	d->fate = FATE_UNJUDGED;
	d->body = false;
}

/* Decoded bytes of the block, to its sink. Past the block's Size they are
 * not written: the block is damaged (or lies), whatever follows. */
static int sink_put(void *ctx, const uint8_t *data, size_t n)
{
	struct pem_decoder *d = ctx;
	if (n > d->k.size - d->got) {
		d->over = true;
		return -ECANCELED;
	}
	if (d->spool) {
		int r = bundle_spool_write(d->spool, data, n);
		if (r < 0)
			return d->err = r;
	} else if (n) {
		if (d->mem_len + n > d->mem_cap) {
			/* Geometric, but never past the Size: a lying Size
			 * costs the bytes that really came, not what it says. */
			size_t want = d->mem_cap ? d->mem_cap * 2 : 64 * 1024;
			if (want > d->k.size)
				want = (size_t)d->k.size;
			if (want < d->mem_len + n)
				want = d->mem_len + n;
			uint8_t *m = realloc(d->mem, want);
			if (!m)
				return d->err = -ENOMEM;
			d->mem = m;
			d->mem_cap = want;
		}
		memcpy(d->mem + d->mem_len, data, n);
		d->mem_len += n;
	}
	d->got += n;
	return 0;
}

/* The block's headers are all in: is it decoded, and into what? */
static void block_judge(struct pem_decoder *d)
{
	struct pem_bundle *b = d->b;
	struct block *k = &d->k;
	d->fate = FATE_BAD;
	if (!k->bundle || !k->have_part || !k->have_size || !k->member || !k->sha || !k->parts ||
	    k->parts > PEM_MAX_PARTS || k->part < 1 || k->part > k->parts)
		return;
	d->fate = FATE_OTHER;
	if (!b->bundle_id) {
		if (d->want_id && strcmp(d->want_id, k->bundle) != 0)
			return;
		b->bundle_id = strdup(k->bundle);
		b->parts = k->parts;
		b->files = calloc(k->parts, sizeof(*b->files));
		b->have = calloc(k->parts, sizeof(*b->have));
		if (!b->bundle_id || !b->files || !b->have) {
			d->err = -ENOMEM;
			return;
		}
	} else if (strcmp(b->bundle_id, k->bundle) != 0) {
		return;
	}
	d->fate = FATE_SKIP;
	/* Before any other check: a hostile name is told as such, not as
	 * one more block that failed its sha256. */
	enum pem_refusal why = pem_name_check(k->member, k->member_len);
	if (why != PEM_WRITABLE) {
		refuse(b, why, &k->member, k->member_len, k->part, 0);
		return;
	}
	if (k->parts != b->parts) {
		d->fate = FATE_BAD;
		return;
	}
	if (b->have[k->part - 1])
		return; /* a repeated dump: the first good copy stays */
	if (b->refusal != PEM_WRITABLE || b->past != PEM_WITHIN)
		return; /* nothing will be written: decoding more is waste */
	/* Limits from the headers, before a byte is decoded: what Size says
	 * is what the sink may take at most, so it must be affordable. */
	bool manifest = strcmp(k->member, "manifest.json") == 0;
	const struct pem_limits *lim = &b->limits;
	uint64_t cap = manifest ? lim->manifest_bytes : lim->member_bytes;
	if (k->size > cap || k->size > lim->total_bytes - b->decoded_bytes) {
		int r = note_past(b, k->size > cap ? PEM_PAST_MEMBER : PEM_PAST_TOTAL, k);
		if (r < 0)
			d->err = r;
		return;
	}
	d->gz = k->encoding && strcmp(k->encoding, "gzip+base64") == 0;
	if (!d->gz && k->encoding && strcmp(k->encoding, "base64") != 0) {
		d->fate = FATE_BAD;
		return;
	}
	int r = 0;
	if (d->gz)
		r = d->z ? bundle_gunzip_stream_reset(d->z) : bundle_gunzip_stream_new(&d->z);
	/* The manifest stays in memory: it is written last, byte for byte,
	 * and is small (manifest_bytes). */
	if (r == 0 && d->out && !manifest)
		r = bundle_spool_open(d->out, &d->spool);
	if (r < 0) {
		d->err = r;
		return;
	}
	b->decoded_bytes += k->size;
	d->gz_ended = d->b64_ended = d->over = false;
	d->acc = 0;
	d->bits = 0;
	d->got = 0;
	d->fate = FATE_DECODE;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* One line of the block's base64 (no blanks around it). */
static void block_data(struct pem_decoder *d, const char *s, size_t n)
{
	if (d->fate == FATE_UNJUDGED)
		block_judge(d);
	if (d->fate != FATE_DECODE || d->b64_ended || d->err)
		return;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '=') {
			d->b64_ended = true; /* the padding ends the data */
			break;
		}
		int v = b64_value((unsigned char)s[i]);
		if (v < 0) {
			d->fate = FATE_BAD;
			sink_drop(d);
			return;
		}
		d->acc = (d->acc << 6) | (uint32_t)v;
		d->bits += 6;
		if (d->bits >= 8) {
			d->bits -= 8;
			d->chunk[o++] = (uint8_t)(d->acc >> d->bits);
		}
	}
	if (!o)
		return;
	int r = 0;
	if (!d->gz)
		r = sink_put(d, d->chunk, o);
	else if (!d->gz_ended) /* what follows the gzip stream is ignored */
		r = bundle_gunzip_stream_feed(d->z, d->chunk, o, sink_put, d);
	if (r == 1)
		d->gz_ended = true;
	if (r == -ENOMEM)
		d->err = r;
	if (r < 0 && !d->err) { /* past its Size, or not gzip */
		d->fate = FATE_BAD;
		sink_drop(d);
	}
}

/* The END of the block: keep its file if it is whole and matches its
 * Size and sha256. */
static void block_end(struct pem_decoder *d)
{
	struct pem_bundle *b = d->b;
	struct block *k = &d->k;
	if (d->fate == FATE_UNJUDGED)
		block_judge(d); /* no data at all: an empty member */
	if (d->err)
		return;
	if (d->fate == FATE_OTHER)
		b->other_bundles++;
	if (d->fate == FATE_BAD)
		b->bad_blocks++;
	if (d->fate != FATE_DECODE)
		return;
	bool whole = !d->over && d->got == k->size && (!d->gz || d->gz_ended);
	char sha[65];
	if (d->spool) {
		int r = bundle_spool_close(d->spool, NULL, sha);
		if (r < 0) {
			d->err = r;
			return;
		}
	} else {
		bundle_sha256_hex(d->mem ? d->mem : (const uint8_t *)"", d->mem_len, sha);
	}
	if (!whole || strcmp(sha, k->sha) != 0) {
		b->bad_blocks++;
		return;
	}
	struct pem_file *f = &b->files[k->part - 1];
	f->name = k->member;
	k->member = NULL;
	f->data = d->mem;
	f->spool = d->spool;
	f->len = (size_t)d->got;
	d->mem = NULL;
	d->spool = NULL;
	b->have[k->part - 1] = true;
}

static void block_header_line(struct pem_decoder *d, const char *s, size_t n)
{
	int r = block_header(&d->k, s, n);
	if (r < 0)
		d->err = r;
}

static void process_line(struct pem_decoder *d, const char *line, size_t n)
{
	const char *begin = memmem(line, n, BEGIN_LINE, strlen(BEGIN_LINE));
	if (begin) {
		/* A BEGIN inside a block means the END was lost: drop the
		 * partial block and start over. */
		if (d->in)
			d->b->bad_blocks++;
		block_reset(d);
		d->in = true;
		d->col = (size_t)(begin - line);
		return;
	}
	if (!d->in)
		return;
	/* Strip the log prefix by width, not by text: timestamps change
	 * from line to line, their width does not. */
	const char *s = line;
	size_t sn = n;
	if (sn >= d->col) {
		s += d->col;
		sn -= d->col;
	} else {
		sn = 0;
	}
	if (memmem(s, sn, END_LINE, strlen(END_LINE))) {
		block_end(d);
		block_reset(d);
		d->in = false;
		return;
	}
	while (sn && (s[sn - 1] == '\r' || s[sn - 1] == ' ' || s[sn - 1] == '\t'))
		sn--;
	/* Some pipelines drop empty lines, so the blank line after the
	 * headers is optional: base64 never contains ':', headers do. */
	if (!d->body && sn == 0) {
		d->body = true;
	} else if (!d->body && memchr(s, ':', sn)) {
		block_header_line(d, s, sn);
	} else if (sn) {
		d->body = true;
		while (sn && (s[0] == ' ' || s[0] == '\t')) {
			s++;
			sn--;
		}
		block_data(d, s, sn);
	}
}

int pem_decoder_new(const char *want_id, const struct pem_limits *limits, struct bundle *out,
		    struct pem_decoder **ret)
{
	struct pem_decoder *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->b = calloc(1, sizeof(*d->b));
	d->want_id = want_id ? strdup(want_id) : NULL;
	if (!d->b || (want_id && !d->want_id)) {
		pem_decoder_free(d);
		return -ENOMEM;
	}
	d->b->limits = limits ? *limits : PEM_LIMITS_DEFAULT;
	d->out = out;
	*ret = d;
	return 0;
}

int pem_decoder_feed(struct pem_decoder *d, const char *text, size_t len)
{
	while (len && !d->err) {
		const char *nl = memchr(text, '\n', len);
		size_t n = nl ? (size_t)(nl - text) : len;
		size_t room = sizeof(d->line) - d->line_len;
		size_t take = n < room ? n : room;
		memcpy(d->line + d->line_len, text, take);
		d->line_len += take;
		d->line_cut |= take < n;
		if (nl) {
			process_line(d, d->line, d->line_len);
			d->line_len = 0;
			d->line_cut = false;
		}
		text += n + (nl ? 1 : 0);
		len -= n + (nl ? 1 : 0);
	}
	return d->err;
}

void pem_decoder_free(struct pem_decoder *d)
{
	if (!d)
		return;
	block_reset(d);
	bundle_gunzip_stream_free(d->z);
	pem_bundle_free(d->b);
	free(d->want_id);
	free(d);
}

int pem_decoder_finish(struct pem_decoder *d, struct pem_bundle **ret)
{
	if (!d->err && (d->line_len || d->line_cut))
		process_line(d, d->line, d->line_len); /* the last line had no newline */
	struct pem_bundle *b = d->b;
	int e = d->err;
	if (e == 0 && d->in)
		b->bad_blocks++;
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
	if (e == 0) {
		d->b = NULL;
		*ret = b;
	}
	pem_decoder_free(d);
	return e;
}

int pem_decode(const char *text, size_t len, const char *want_id, struct pem_bundle **ret)
{
	struct pem_decoder *d;
	int e = pem_decoder_new(want_id, NULL, NULL, &d);
	if (e < 0)
		return e;
	e = pem_decoder_feed(d, text, len);
	if (e < 0) {
		pem_decoder_free(d);
		return e;
	}
	return pem_decoder_finish(d, ret);
}

void pem_bundle_free(struct pem_bundle *b)
{
	if (!b)
		return;
	/* The spools are the output bundle's: it removes or keeps them. */
	for (size_t i = 0; i < b->parts && b->files; i++) {
		free(b->files[i].name);
		free(b->files[i].data);
	}
	free(b->files);
	free(b->have);
	free(b->bundle_id);
	free(b->refused_name);
	free(b->past_name);
	free(b);
}

/* ---- writing ---- */

/* What must hold before anything is written, and the manifest's part. */
static int check_writable(const struct pem_bundle *b, const struct pem_file **ret_manifest)
{
	const struct pem_file *manifest = NULL;
	size_t part, other;
	if (b->refusal != PEM_WRITABLE)
		return -EINVAL;
	if (b->past != PEM_WITHIN)
		return -EFBIG;
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
	if (!manifest || manifest->spool)
		return -ENODATA;
	*ret_manifest = manifest;
	return 0;
}

int pem_bundle_write(const struct pem_bundle *b, const char *dir)
{
	const struct pem_file *manifest;
	int e = check_writable(b, &manifest);
	if (e < 0)
		return e;
	for (size_t i = 0; i < b->parts; i++)
		if (b->files[i].spool)
			return -EINVAL; /* decoded into a bundle: pem_bundle_commit */
	/* The bundle module's own writer: the directory is refused if it is
	 * a symlink, and each member path is walked component by component
	 * without following symlinks, so a link planted in the output cannot
	 * send a member outside it. */
	struct bundle *out;
	e = bundle_create(dir, &out);
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

int pem_bundle_commit(const struct pem_bundle *b, struct bundle *out)
{
	const struct pem_file *manifest;
	int e = check_writable(b, &manifest);
	for (size_t i = 0; e == 0 && i < b->parts; i++) {
		const struct pem_file *f = &b->files[i];
		if (f == manifest)
			continue;
		e = f->spool ? bundle_spool_commit(f->spool, f->name)
			     : bundle_write_member(out, f->name, f->data, f->len);
	}
	if (e < 0) {
		bundle_discard(out);
		return e;
	}
	bundle_discard_on_failure(out);
	return bundle_finalize_verbatim(out, manifest->data, manifest->len);
}
