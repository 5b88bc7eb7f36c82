/*
 * The bundle reader's limits (bundle/reader.h, issue 18 item 7): bundles
 * that verify intact but are built to exhaust a reader are refused with
 * the member and the cap named, and hostile shapes that stay under the
 * caps (sparse location ids, a thousand counters) decode without a scan
 * per lookup. The bombs are made with tests/lib/hostile_bundle.h.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/reader.h"
#include "hostile_bundle.h"
#include "tmpdir.h"

struct fixture {
	char *tmp;
	char dir[512];
	struct bundle_reader *r;
};

/* An intact bundle of one member, opened. */
static void open_one(struct fixture *f, const char *name, const void *data, size_t len)
{
	const char *names[] = {name};
	const void *datas[] = {data};
	size_t lens[] = {len};
	f->tmp = tmpdir_make();
	tmpdir_join(f->dir, sizeof(f->dir), f->tmp, "b");
	cr_assert_eq(hb_write_bundle(f->dir, names, datas, lens, 1), 0);
	cr_assert_eq(bundle_verify(f->dir, NULL, NULL), 0, "the hostile bundle verifies intact");
	cr_assert_eq(bundle_reader_open(f->dir, &f->r), 0);
}

/* The same with a raw profile, gzipped. */
static void open_profile(struct fixture *f, const char *name, struct hb_buf *raw)
{
	uint8_t *gz;
	size_t gzlen;
	hb_gzip(raw->v, raw->n, &gz, &gzlen);
	hb_buf_release(raw);
	open_one(f, name, gz, gzlen);
	free(gz);
}

static void done(struct fixture *f)
{
	bundle_reader_free(f->r);
	tmpdir_remove(f->tmp);
}

static void expect_refused(const struct bundle_reader *r, int e, const char *member,
			   enum bundle_cap cap)
{
	cr_assert_eq(e, BUNDLE_PAST_CAP, "refused (%d)", e);
	const struct bundle_refusal *f = bundle_reader_refusal(r);
	cr_assert_not_null(f);
	cr_assert_str_eq(f->member, member);
	cr_assert_eq(f->cap, cap, "cap %d, expected %d", f->cap, cap);
}

Test(reader_limits, gzip_bomb_refused_though_intact, .timeout = 60)
{
	/* 1 GiB of zeros in 1 MB: the old reader inflated all of it. */
	uint8_t *gz;
	size_t gzlen;
	hb_gzip_zeros(1ull << 30, &gz, &gzlen);
	cr_assert_lt(gzlen, 2u << 20);
	struct fixture f;
	open_one(&f, "cpu.pprof", gz, gzlen);
	free(gz);
	const struct bundle_profile *p;
	expect_refused(f.r, bundle_reader_profile(f.r, "cpu.pprof", &p), "cpu.pprof",
		       BUNDLE_CAP_INFLATED_BYTES);
	/* Not cached as a success, and the first refusal stays the one told. */
	cr_assert_eq(bundle_reader_profile(f.r, "cpu.pprof", &p), BUNDLE_PAST_CAP);
	done(&f);
}

Test(reader_limits, inflated_cap_is_the_limit_not_less)
{
	/* 2 MiB of zeros under a 2 MiB cap: decoded (as a malformed profile:
	 * zeros are no pprof), past it: refused. */
	uint8_t *gz;
	size_t gzlen;
	hb_gzip_zeros(2u << 20, &gz, &gzlen);
	struct fixture f;
	open_one(&f, "cpu.pprof", gz, gzlen);
	free(gz);
	const struct bundle_profile *p;
	bundle_reader_set_limit(f.r, BUNDLE_CAP_INFLATED_BYTES, 2u << 20);
	cr_assert_eq(bundle_reader_profile(f.r, "cpu.pprof", &p), -EBADMSG);
	cr_assert_null(bundle_reader_refusal(f.r));
	bundle_reader_set_limit(f.r, BUNDLE_CAP_INFLATED_BYTES, (2u << 20) - 1);
	expect_refused(f.r, bundle_reader_profile(f.r, "cpu.pprof", &p), "cpu.pprof",
		       BUNDLE_CAP_INFLATED_BYTES);
	done(&f);
}

/* 300,000 locations with sparse 64-bit ids in shuffled order: the old
 * reader scanned every location per frame (O(n^2): minutes); sorted and
 * searched it takes well under a second. The timeout is the test. */
Test(reader_limits, sparse_location_ids_are_not_quadratic, .timeout = 60)
{
	const size_t n = 300000;
	struct hb_buf raw;
	hb_profile_sparse(n, n, &raw);
	struct fixture f;
	open_profile(&f, "cpu.pprof", &raw);
	const struct bundle_profile *p;
	cr_assert_eq(bundle_reader_profile(f.r, "cpu.pprof", &p), 0);
	cr_assert_eq(p->nsamples, n);
	for (size_t i = 0; i < n; i += 997) {
		size_t loc = (i * 7919) % n;
		char want[32];
		snprintf(want, sizeof(want), "fn_%zu", loc);
		cr_assert_eq(p->samples[i].nframes, 1);
		cr_assert_str_eq(p->samples[i].frames[0].function, want);
		cr_assert_eq(p->samples[i].frames[0].address, 0x10000 + 16 * (uint64_t)loc);
		cr_assert_eq(p->samples[i].tid, (int64_t)(i % 64));
	}
	done(&f);
}

Test(reader_limits, count_caps_refuse_before_unpacking, .timeout = 120)
{
	static const struct {
		void (*make)(size_t, struct hb_buf *);
		uint64_t n;
		enum bundle_cap cap;
	} cases[] = {
		{hb_profile_empty_samples, BUNDLE_MAX_SAMPLES + 1, BUNDLE_CAP_SAMPLES},
		{hb_profile_locations, BUNDLE_MAX_LOCATIONS + 1, BUNDLE_CAP_LOCATIONS},
		{hb_profile_functions, BUNDLE_MAX_FUNCTIONS + 1, BUNDLE_CAP_FUNCTIONS},
		{hb_profile_deep_sample, BUNDLE_MAX_FRAMES + 1, BUNDLE_CAP_FRAMES},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hb_buf raw;
		cases[i].make((size_t)cases[i].n, &raw);
		struct fixture f;
		open_profile(&f, "wall.pprof", &raw);
		const struct bundle_profile *p;
		expect_refused(f.r, bundle_reader_profile(f.r, "wall.pprof", &p), "wall.pprof",
			       cases[i].cap);
		done(&f);
		/* At a cap itself: decoded (a lowered one, but for frames: a
		 * profile at the default frames cap must fit the default
		 * budget for decoded profiles). */
		bool lowered = cases[i].cap != BUNDLE_CAP_FRAMES;
		size_t n = lowered ? 1000 : (size_t)cases[i].n - 1;
		cases[i].make(n, &raw);
		open_profile(&f, "wall.pprof", &raw);
		if (lowered)
			bundle_reader_set_limit(f.r, cases[i].cap, n);
		cr_assert_eq(bundle_reader_profile(f.r, "wall.pprof", &p), 0, "case %zu", i);
		cr_assert_null(bundle_reader_refusal(f.r));
		done(&f);
		if (!lowered)
			continue;
		cases[i].make(n + 1, &raw);
		open_profile(&f, "wall.pprof", &raw);
		bundle_reader_set_limit(f.r, cases[i].cap, n);
		expect_refused(f.r, bundle_reader_profile(f.r, "wall.pprof", &p), "wall.pprof",
			       cases[i].cap);
		done(&f);
	}
}

/* 11 location ids of one location with 100 inlined lines. */
static void inline_profile(struct hb_buf *raw)
{
	struct hb_buf loc = {0}, line = {0}, fn = {0}, s = {0}, ids = {0};
	memset(raw, 0, sizeof(*raw));
	pb_len(raw, 6, "", 0);
	pb_len(raw, 6, "f", 1);
	pb_uint(&fn, 1, 1);
	pb_uint(&fn, 2, 1);
	pb_len(raw, 5, fn.v, fn.n);
	pb_uint(&loc, 1, 1);
	pb_uint(&line, 1, 1);
	for (int i = 0; i < 100; i++)
		pb_len(&loc, 4, line.v, line.n);
	pb_len(raw, 4, loc.v, loc.n);
	for (int i = 0; i < 11; i++)
		pb_varint(&ids, 1);
	pb_len(&s, 1, ids.v, ids.n);
	pb_len(raw, 2, s.v, s.n);
	hb_buf_release(&loc);
	hb_buf_release(&line);
	hb_buf_release(&fn);
	hb_buf_release(&s);
	hb_buf_release(&ids);
}

/* Frames are counted after inline expansion too: 11 location ids of a
 * location with 100 inlined lines are 1,100 frames. */
Test(reader_limits, inlined_frames_count)
{
	struct hb_buf raw;
	struct fixture f;
	const struct bundle_profile *p;
	inline_profile(&raw);
	open_profile(&f, "cpu.pprof", &raw);
	bundle_reader_set_limit(f.r, BUNDLE_CAP_FRAMES, 1099);
	expect_refused(f.r, bundle_reader_profile(f.r, "cpu.pprof", &p), "cpu.pprof",
		       BUNDLE_CAP_FRAMES);
	done(&f);
	inline_profile(&raw);
	open_profile(&f, "cpu.pprof", &raw);
	bundle_reader_set_limit(f.r, BUNDLE_CAP_FRAMES, 1100);
	cr_assert_eq(bundle_reader_profile(f.r, "cpu.pprof", &p), 0);
	cr_assert_eq(p->samples[0].nframes, 1100);
	done(&f);
}

/* The memory of decoded profiles is one budget per reader: the smallest
 * budget that decodes cpu.pprof refuses an identical wall.pprof after it,
 * and twice that decodes both. */
Test(reader_limits, decoded_budget_is_shared_by_a_readers_profiles, .timeout = 60)
{
	struct hb_buf raw;
	hb_profile_sparse(5000, 5000, &raw);
	uint8_t *gz;
	size_t gzlen;
	hb_gzip(raw.v, raw.n, &gz, &gzlen);
	hb_buf_release(&raw);
	const char *names[] = {"cpu.pprof", "wall.pprof"};
	const void *datas[] = {gz, gz};
	size_t lens[] = {gzlen, gzlen};
	char *tmp = tmpdir_make(), dir[512];
	tmpdir_join(dir, sizeof(dir), tmp, "b");
	cr_assert_eq(hb_write_bundle(dir, names, datas, lens, 2), 0);
	free(gz);

	uint64_t lo = 1, hi = 64ull << 20; /* hi decodes, lo does not */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		struct bundle_reader *r;
		const struct bundle_profile *p;
		cr_assert_eq(bundle_reader_open(dir, &r), 0);
		bundle_reader_set_limit(r, BUNDLE_CAP_DECODED_BYTES, mid);
		int e = bundle_reader_profile(r, "cpu.pprof", &p);
		cr_assert(e == 0 || e == BUNDLE_PAST_CAP, "%d", e);
		if (e == 0)
			hi = mid;
		else
			lo = mid;
		bundle_reader_free(r);
	}
	cr_log_info("cpu.pprof of 5000 samples decodes in %llu bytes", (unsigned long long)hi);
	struct bundle_reader *r;
	const struct bundle_profile *p;
	cr_assert_eq(bundle_reader_open(dir, &r), 0);
	bundle_reader_set_limit(r, BUNDLE_CAP_DECODED_BYTES, hi);
	cr_assert_eq(bundle_reader_profile(r, "cpu.pprof", &p), 0);
	expect_refused(r, bundle_reader_profile(r, "wall.pprof", &p), "wall.pprof",
		       BUNDLE_CAP_DECODED_BYTES);
	bundle_reader_free(r);
	cr_assert_eq(bundle_reader_open(dir, &r), 0);
	bundle_reader_set_limit(r, BUNDLE_CAP_DECODED_BYTES, 2 * hi + 4096);
	cr_assert_eq(bundle_reader_profile(r, "cpu.pprof", &p), 0);
	cr_assert_eq(bundle_reader_profile(r, "wall.pprof", &p), 0);
	cr_assert_null(bundle_reader_refusal(r));
	bundle_reader_free(r);
	tmpdir_remove(tmp);
}

static void open_timeline(struct fixture *f, struct hb_buf *jsonl)
{
	open_one(f, "runtime.jsonl", jsonl->v, jsonl->n);
	hb_buf_release(jsonl);
}

Test(reader_limits, timeline_counter_names_capped, .timeout = 60)
{
	/* A new name on every line: the old reader gave each a column as
	 * long as the timeline (24 GB for the file). */
	struct hb_buf t;
	hb_timeline(BUNDLE_MAX_COUNTERS + 1, 1, 1, &t);
	struct fixture f;
	open_timeline(&f, &t);
	const struct bundle_timeline *tl;
	expect_refused(f.r, bundle_reader_timeline(f.r, &tl), "runtime.jsonl", BUNDLE_CAP_COUNTERS);
	done(&f);
	/* All on one line, the same. */
	hb_timeline(1, BUNDLE_MAX_COUNTERS + 1, 0, &t);
	open_timeline(&f, &t);
	expect_refused(f.r, bundle_reader_timeline(f.r, &tl), "runtime.jsonl", BUNDLE_CAP_COUNTERS);
	done(&f);
}

Test(reader_limits, timeline_of_many_counters_is_right, .timeout = 60)
{
	/* 1,000 counters over 5 lines, each "c<k>" = line + k: found by name
	 * in O(1), in first-seen order. */
	struct hb_buf t;
	hb_timeline(5, 1000, 0, &t);
	struct fixture f;
	open_timeline(&f, &t);
	const struct bundle_timeline *tl;
	cr_assert_eq(bundle_reader_timeline(f.r, &tl), 0);
	cr_assert_eq(tl->npoints, 5);
	cr_assert_eq(tl->ncounters, 1000);
	for (size_t k = 0; k < 1000; k += 37) {
		char name[16];
		snprintf(name, sizeof(name), "c%zu", k);
		cr_assert_str_eq(tl->counters[k].name, name);
		for (size_t i = 0; i < 5; i++)
			cr_assert_eq(tl->counters[k].v[i], (double)(i + k));
	}
	done(&f);
}

Test(reader_limits, timeline_points_and_values_capped, .timeout = 60)
{
	struct hb_buf t;
	struct fixture f;
	const struct bundle_timeline *tl;
	hb_timeline(1001, 1, 0, &t);
	open_timeline(&f, &t);
	bundle_reader_set_limit(f.r, BUNDLE_CAP_POINTS, 1001);
	cr_assert_eq(bundle_reader_timeline(f.r, &tl), 0);
	cr_assert_eq(tl->npoints, 1001);
	done(&f);
	hb_timeline(1001, 1, 0, &t);
	open_timeline(&f, &t);
	bundle_reader_set_limit(f.r, BUNDLE_CAP_POINTS, 1000);
	expect_refused(f.r, bundle_reader_timeline(f.r, &tl), "runtime.jsonl", BUNDLE_CAP_POINTS);
	done(&f);
	/* 10 counters x 101 points = 1,010 values. */
	hb_timeline(101, 10, 0, &t);
	open_timeline(&f, &t);
	bundle_reader_set_limit(f.r, BUNDLE_CAP_VALUES, 1009);
	expect_refused(f.r, bundle_reader_timeline(f.r, &tl), "runtime.jsonl", BUNDLE_CAP_VALUES);
	done(&f);
	hb_timeline(101, 10, 0, &t);
	open_timeline(&f, &t);
	bundle_reader_set_limit(f.r, BUNDLE_CAP_VALUES, 1010);
	cr_assert_eq(bundle_reader_timeline(f.r, &tl), 0);
	done(&f);
}

Test(reader_limits, timeline_line_length_capped)
{
	/* A valid line just under 1 MiB (padded with blanks) is read; one
	 * byte more is refused, and so is a line that never ends. */
	for (int over = 0; over <= 1; over++) {
		struct hb_buf t = {0};
		const char *head = "{\"t\":\"2026-01-01T00:00:00Z\",\"rss_bytes\":1";
		hb_put(&t, head, strlen(head));
		while (t.n < BUNDLE_MAX_LINE_BYTES - 1 + (size_t)over)
			hb_put(&t, " ", 1);
		hb_put(&t, "}\n", 2);
		struct fixture f;
		open_timeline(&f, &t);
		const struct bundle_timeline *tl;
		int e = bundle_reader_timeline(f.r, &tl);
		if (over) {
			expect_refused(f.r, e, "runtime.jsonl", BUNDLE_CAP_LINE_BYTES);
		} else {
			cr_assert_eq(e, 0);
			cr_assert_eq(tl->npoints, 1);
		}
		done(&f);
	}
}

Test(reader_limits, manifest_capped_for_reader_and_verify)
{
	char *tmp = tmpdir_make(), path[600];
	tmpdir_join(path, sizeof(path), tmp, "manifest.json");
	FILE *m = fopen(path, "w");
	cr_assert_not_null(m);
	fputs("{\"members\":[]", m);
	for (uint64_t i = 0; i < BUNDLE_MAX_MANIFEST_BYTES; i += 64)
		fputs("                                                                ", m);
	fputs("}", m);
	cr_assert_eq(fclose(m), 0);
	struct bundle_reader *r;
	cr_assert_eq(bundle_reader_open(tmp, &r), BUNDLE_PAST_CAP);
	cr_assert_eq(bundle_verify(tmp, NULL, NULL), -EFBIG);
	tmpdir_remove(tmp);
}

Test(reader_limits, member_read_whole_capped)
{
	size_t len = 2u << 20;
	char *big = malloc(len);
	cr_assert_not_null(big);
	memset(big, 'x', len);
	struct fixture f;
	open_one(&f, "threads.txt", big, len);
	free(big);
	bundle_reader_set_limit(f.r, BUNDLE_CAP_MEMBER_BYTES, 1u << 20);
	char *text;
	size_t tlen;
	expect_refused(f.r, bundle_reader_read(f.r, "threads.txt", &text, &tlen), "threads.txt",
		       BUNDLE_CAP_MEMBER_BYTES);
	done(&f);
}

Test(reader_limits, caps_are_documented_in_one_table)
{
	for (int i = 0; i < BUNDLE_NCAPS; i++) {
		const struct bundle_cap_info *c = bundle_cap_info((enum bundle_cap)i);
		cr_assert_not_null(c);
		cr_assert_gt(c->limit, 0);
		cr_assert(c->what && *c->what && c->applies_to && *c->applies_to);
		/* A size is shown in MiB: it must be a whole number of them. */
		if (c->bytes)
			cr_assert_eq(c->limit % (1u << 20), 0);
	}
	cr_assert_null(bundle_cap_info(BUNDLE_NCAPS));
	cr_assert_eq(bundle_cap_info(BUNDLE_CAP_INFLATED_BYTES)->limit, BUNDLE_MAX_INFLATED_BYTES);
}
