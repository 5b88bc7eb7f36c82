/* hostile_bundle: see hostile_bundle.h. */
#include "hostile_bundle.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "bundle/bundle.h"
#include "bundle/gzip.h"

void hb_buf_release(struct hb_buf *b)
{
	free(b->v);
	memset(b, 0, sizeof(*b));
}

static void reserve(struct hb_buf *b, size_t more)
{
	if (b->n + more <= b->cap)
		return;
	size_t nc = b->cap ? b->cap : 4096;
	while (nc < b->n + more)
		nc *= 2;
	uint8_t *v = realloc(b->v, nc);
	if (!v)
		abort();
	b->v = v;
	b->cap = nc;
}

void hb_put(struct hb_buf *b, const void *data, size_t len)
{
	reserve(b, len);
	if (len)
		memcpy(b->v + b->n, data, len);
	b->n += len;
}

void hb_printf(struct hb_buf *b, const char *fmt, ...)
{
	va_list ap;
	char *text;
	va_start(ap, fmt);
	int n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	hb_put(b, text, (size_t)n);
	free(text);
}

/* ---- protobuf wire format ---- */

void pb_varint(struct hb_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	do {
		tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	hb_put(b, tmp, n);
}

void pb_uint(struct hb_buf *b, unsigned field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

void pb_len(struct hb_buf *b, unsigned field, const void *data, size_t len)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, len);
	hb_put(b, data, len);
}

static void pb_str(struct hb_buf *b, const char *s)
{
	pb_len(b, 6, s, strlen(s)); /* Profile.string_table */
}

/* string_table [0..4] = "", samples, count, cpu, nanoseconds, then tid;
 * sample_type {1,2} {3,4}. */
static void profile_head(struct hb_buf *b)
{
	static const char *const strs[] = {"", "samples", "count", "cpu", "nanoseconds", "tid"};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		pb_str(b, strs[i]);
	for (unsigned t = 0; t < 2; t++) {
		struct hb_buf vt = {0};
		pb_uint(&vt, 1, 1 + 2 * t);
		pb_uint(&vt, 2, 2 + 2 * t);
		pb_len(b, 1, vt.v, vt.n);
		hb_buf_release(&vt);
	}
}

static void sample(struct hb_buf *b, const uint64_t *ids, size_t n, int64_t tid)
{
	struct hb_buf s = {0}, packed = {0};
	for (size_t i = 0; i < n; i++)
		pb_varint(&packed, ids[i]);
	if (n)
		pb_len(&s, 1, packed.v, packed.n);
	packed.n = 0;
	pb_varint(&packed, 1);
	pb_varint(&packed, 1000);
	pb_len(&s, 2, packed.v, packed.n);
	if (tid >= 0) {
		struct hb_buf l = {0};
		pb_uint(&l, 1, 5); /* key "tid" */
		pb_uint(&l, 3, (uint64_t)tid);
		pb_len(&s, 3, l.v, l.n);
		hb_buf_release(&l);
	}
	pb_len(b, 2, s.v, s.n);
	hb_buf_release(&s);
	hb_buf_release(&packed);
}

/* A location with one Line on function fn (0: no Line). */
static void location(struct hb_buf *b, uint64_t id, uint64_t address, uint64_t fn)
{
	struct hb_buf l = {0}, line = {0};
	pb_uint(&l, 1, id);
	pb_uint(&l, 3, address);
	if (fn) {
		pb_uint(&line, 1, fn);
		pb_uint(&line, 2, 42);
		pb_len(&l, 4, line.v, line.n);
	}
	pb_len(b, 4, l.v, l.n);
	hb_buf_release(&l);
	hb_buf_release(&line);
}

static void function(struct hb_buf *b, uint64_t id, int64_t name)
{
	struct hb_buf f = {0};
	pb_uint(&f, 1, id);
	pb_uint(&f, 2, (uint64_t)name);
	pb_len(b, 5, f.v, f.n);
	hb_buf_release(&f);
}

static uint64_t sparse_id(size_t i)
{
	/* Far apart, far above n, and never dense. */
	return (1ull << 40) + (uint64_t)i * 1000003ull;
}

void hb_profile_sparse(size_t nlocs, size_t nsamples, struct hb_buf *ret)
{
	struct hb_buf *b = ret;
	memset(b, 0, sizeof(*b));
	profile_head(b);
	const int64_t first_name = 6;
	for (size_t i = 0; i < nlocs; i++) {
		char name[32];
		snprintf(name, sizeof(name), "fn_%zu", i);
		pb_str(b, name);
	}
	for (size_t i = 0; i < nlocs; i++)
		function(b, i + 1, first_name + (int64_t)i);
	/* Shuffled: the file order is not the id order either. */
	for (size_t k = 0; k < nlocs; k++) {
		size_t i = (k * 104729) % nlocs;
		if (nlocs % 104729 == 0)
			i = k;
		location(b, sparse_id(i), 0x10000 + 16 * (uint64_t)i, i + 1);
	}
	for (size_t i = 0; i < nsamples; i++) {
		uint64_t id = sparse_id((i * 7919) % nlocs);
		sample(b, &id, 1, (int64_t)(i % 64));
	}
}

void hb_profile_empty_samples(size_t n, struct hb_buf *ret)
{
	memset(ret, 0, sizeof(*ret));
	profile_head(ret);
	for (size_t i = 0; i < n; i++)
		sample(ret, NULL, 0, -1);
}

void hb_profile_locations(size_t n, struct hb_buf *ret)
{
	memset(ret, 0, sizeof(*ret));
	profile_head(ret);
	for (size_t i = 0; i < n; i++)
		location(ret, i + 1, 0x1000 + i, 0);
	uint64_t id = 1;
	sample(ret, &id, 1, -1);
}

void hb_profile_functions(size_t n, struct hb_buf *ret)
{
	memset(ret, 0, sizeof(*ret));
	profile_head(ret);
	for (size_t i = 0; i < n; i++)
		function(ret, i + 1, 1);
}

void hb_profile_deep_sample(size_t depth, struct hb_buf *ret)
{
	memset(ret, 0, sizeof(*ret));
	profile_head(ret);
	location(ret, 1, 0x1000, 0);
	/* Location id 1 is one byte packed: the ids are written as bytes,
	 * without an array of a hundred million uint64s first. */
	struct hb_buf s = {0};
	pb_varint(&s, 1 << 3 | 2);
	pb_varint(&s, depth);
	reserve(&s, depth);
	memset(s.v + s.n, 1, depth);
	s.n += depth;
	static const uint8_t values[] = {2 << 3 | 2, 3, 1, 0xe8, 0x07}; /* {1, 1000} */
	hb_put(&s, values, sizeof(values));
	pb_len(ret, 2, s.v, s.n);
	hb_buf_release(&s);
}

/* ---- gzip ---- */

void hb_gzip(const void *data, size_t len, uint8_t **ret, size_t *ret_len)
{
	if (bundle_gzip(data, len, 1, ret, ret_len) < 0)
		abort();
}

void hb_gzip_zeros(uint64_t inflated, uint8_t **ret, size_t *ret_len)
{
	const size_t block = 1 << 20;
	uint64_t nblocks = inflated / block;
	uint8_t *zeros = calloc(1, block), *first = malloc(block), *next = malloc(block);
	size_t first_len, next_len;
	z_stream zs;
	if (!zeros || !first || !next || nblocks == 0)
		abort();
	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK)
		abort();
	/* After a full flush deflate starts afresh, so every further block
	 * of zeros compresses to the same bytes: make it twice, repeat the
	 * second. */
	uint8_t *outs[2] = {first, next};
	size_t *lens[2] = {&first_len, &next_len};
	for (int k = 0; k < 2; k++) {
		zs.next_in = zeros;
		zs.avail_in = (uInt)block;
		zs.next_out = outs[k];
		zs.avail_out = (uInt)block;
		if (deflate(&zs, Z_FULL_FLUSH) != Z_OK || zs.avail_in)
			abort();
		*lens[k] = block - zs.avail_out;
	}
	uint8_t tail[64];
	zs.next_in = zeros;
	zs.avail_in = 0;
	zs.next_out = tail;
	zs.avail_out = sizeof(tail);
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
		abort();
	size_t tail_len = sizeof(tail) - zs.avail_out;
	deflateEnd(&zs);

	uLong crc_block = crc32(0, zeros, (uInt)block), crc = crc32(0, NULL, 0);
	for (uint64_t i = 0; i < nblocks; i++)
		crc = crc32_combine(crc, crc_block, (z_off_t)block);

	struct hb_buf b = {0};
	static const uint8_t header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
	hb_put(&b, header, sizeof(header));
	hb_put(&b, first, first_len);
	reserve(&b, (size_t)(nblocks - 1) * next_len + tail_len + 8);
	for (uint64_t i = 1; i < nblocks; i++)
		hb_put(&b, next, next_len);
	hb_put(&b, tail, tail_len);
	uint32_t trailer[2] = {(uint32_t)crc, (uint32_t)inflated}; /* little-endian x86 */
	hb_put(&b, trailer, sizeof(trailer));
	free(zeros);
	free(first);
	free(next);
	*ret = b.v;
	*ret_len = b.n;
}

/* ---- timelines ---- */

void hb_timeline(size_t points, size_t per_line, int distinct, struct hb_buf *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < points; i++) {
		/* One point a second from 2026-01-01T00:00:00Z. */
		hb_printf(ret, "{\"t\":\"2026-01-01T%02zu:%02zu:%02zu.000Z\"", (i / 3600) % 24,
			  (i / 60) % 60, i % 60);
		for (size_t k = 0; k < per_line; k++) {
			if (distinct)
				hb_printf(ret, ",\"c%zu_%zu\":%zu", i, k, i + k);
			else
				hb_printf(ret, ",\"c%zu\":%zu", k, i + k);
		}
		hb_put(ret, "}\n", 2);
	}
}

/* ---- bundles ---- */

int hb_write_bundle(const char *dir, const char *const *names, const void *const *data,
		    const size_t *len, size_t n)
{
	struct bundle *b;
	int e = bundle_create(dir, &b);
	if (e < 0)
		return e;
	for (size_t i = 0; i < n; i++) {
		e = bundle_write_member(b, names[i], data[i], len[i]);
		if (e < 0) {
			bundle_abandon(b);
			return e;
		}
	}
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "bundle_id", "hostile");
	cJSON_AddStringToObject(m, "mode", "sample");
	cJSON *t = cJSON_AddObjectToObject(m, "timeline");
	cJSON_AddStringToObject(t, "member", "runtime.jsonl");
	cJSON_AddNumberToObject(t, "interval_s", 1);
	return bundle_finalize(b, m);
}
