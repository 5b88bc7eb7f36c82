/*
 * fuzz_bundle_report: a whole bundle read the way `diag-attach report`
 * reads it (manifest, pprof profiles, runtime.jsonl, threads.txt,
 * goroutine.txt through the bundle reader and report_model), then
 * rendered as text, compared with itself as `diff` does and exported as
 * collapsed stacks and speedscope.
 *
 * Input: [manifest | timeline | profile | params], the params read from the
 * tail (fuzz_common.h): byte 1 (last) flags, byte 2 top, then two 4-byte
 * little-endian lengths (the manifest's, then the timeline's; what is left
 * before the params is the profile). A profile that does not start with
 * the gzip magic is gzipped by the harness, so mutations reach protobuf-c
 * and the reader's id lookups instead of dying in the CRC.
 * Flags: bit 0 write the manifest bytes as they are (else a manifest that
 * lists every member below, those written with their size and sha256, so
 * the members are always read); bit 1
 * the profile is cpu.pprof, bit 2 also wall.pprof, bit 3 also
 * threads.pprof (with the timeline bytes as threads.txt); bit 4 the
 * timeline bytes are goroutine.txt too; bit 5 flame graph data (report
 * --html); bit 6 the reader's default limits (else small ones, so that a
 * bomb is refused fast and the fuzzer's RSS stays low).
 * Seeds (corpus/fuzz_bundle_report) are real members laid out this way.
 * Invariants:
 *  - no crash, leak or undefined behaviour, whatever the members hold;
 *  - report_build_json and diff_build_json return 0, -ENOMEM or
 *    BUNDLE_PAST_CAP; BUNDLE_PAST_CAP exactly when the reader says which
 *    member it refused, for a valid cap, and that member is one the
 *    bundle has;
 *  - a report that was built prints as text, and the profile exports.
 */
#include <zlib.h>

#include "tests/fuzz/fuzz_common.h"

#include <cjson/cJSON.h>

#include "bundle/bundle.h"
#include "bundle/views/diff_model.h"
#include "bundle/views/export_format.h"
#include "bundle/views/flame_svg.h"
#include "bundle/views/report_model.h"
#include "bundle/views/report_text.h"
#include "bundle/reader.h"

static const char fixed_head[] =
	"{\"bundle_id\":\"fuzz\",\"mode\":\"sample\",\"target\":{\"pid\":1,\"comm\":\"t\"},"
	"\"timeline\":{\"member\":\"runtime.jsonl\",\"interval_s\":1},"
	"\"findings\":[{\"counter\":\"rss_bytes\",\"slope_per_s\":1}],\"members\":[";

/* Every file the harness writes: only these can be refused (a manifest
 * of the input's may name any of them as its timeline). */
static const char *const members[] = {"cpu.pprof",    "wall.pprof",    "threads.pprof",
				      "threads.txt",  "goroutine.txt", "runtime.jsonl",
				      "manifest.json"};

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	return 0;
}

/* What was written of each of members[] but the manifest, for the
 * manifest the harness makes: the reader reads only what it lists, and
 * hands out only the bytes it lists. */
static struct written {
	bool on;
	size_t len;
	char sha[65];
} written[6];

static void write_member(const char *dir, const char *name, const void *data, size_t len)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fz_write_file(path, data, len);
	for (size_t i = 0; i < 6; i++)
		if (strcmp(name, members[i]) == 0) {
			written[i].on = true;
			written[i].len = len;
			bundle_sha256_hex(data, len, written[i].sha);
		}
}

/* Every member listed; those not written with an empty sha256 (missing). */
static void write_manifest(const char *dir)
{
	char text[2048];
	size_t n = (size_t)snprintf(text, sizeof(text), "%s", fixed_head);
	for (size_t i = 0; i < 6; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "%s{\"name\":\"%s\",\"bytes\":%zu,\"sha256\":\"%s\"}",
				      i ? "," : "", members[i], written[i].on ? written[i].len : 0,
				      written[i].on ? written[i].sha : "");
	snprintf(text + n, sizeof(text) - n, "]}");
	char path[600];
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	fz_write_file(path, text, strlen(text));
}

static void write_profile(const char *dir, const char *name, const uint8_t *data, size_t size)
{
	if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		write_member(dir, name, data, size);
		return;
	}
	size_t len;
	uint8_t *out = fz_gzip(data, size, &len);
	write_member(dir, name, out, len);
	free(out);
}

/* Small limits: a bomb is refused after megabytes, not after the real
 * caps' gigabyte (which the fuzzer's -rss_limit_mb would call a crash). */
static void small_limits(struct bundle_reader *r)
{
	bundle_reader_set_limit(r, BUNDLE_CAP_MEMBER_BYTES, 4 << 20);
	bundle_reader_set_limit(r, BUNDLE_CAP_INFLATED_BYTES, 4 << 20);
	bundle_reader_set_limit(r, BUNDLE_CAP_SAMPLES, 20000);
	bundle_reader_set_limit(r, BUNDLE_CAP_LOCATIONS, 20000);
	bundle_reader_set_limit(r, BUNDLE_CAP_FUNCTIONS, 20000);
	bundle_reader_set_limit(r, BUNDLE_CAP_FRAMES, 200000);
	bundle_reader_set_limit(r, BUNDLE_CAP_DECODED_BYTES, 64 << 20);
	bundle_reader_set_limit(r, BUNDLE_CAP_COUNTERS, 64);
	bundle_reader_set_limit(r, BUNDLE_CAP_POINTS, 20000);
	bundle_reader_set_limit(r, BUNDLE_CAP_VALUES, 100000);
	bundle_reader_set_limit(r, BUNDLE_CAP_LINE_BYTES, 64 << 10);
}

static void check_refusal(const struct bundle_reader *r, int e)
{
	const struct bundle_refusal *f = bundle_reader_refusal(r);
	FUZZ_CHECK(e == 0 || e == -ENOMEM || e == BUNDLE_PAST_CAP);
	if (e != BUNDLE_PAST_CAP)
		return;
	FUZZ_CHECK(f && f->member && bundle_cap_info(f->cap));
	bool known = false;
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++)
		known |= strcmp(f->member, members[i]) == 0;
	FUZZ_CHECK(known);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned iteration;
	struct fz f = fz_init(data, size);
	uint8_t flags = fz_u8(&f);
	size_t top = (size_t)fz_range(&f, 1, 40);
	size_t mlen = (size_t)fz_u32(&f), tlen = (size_t)fz_u32(&f);
	char dir[400];
	if (mlen > f.n)
		mlen = f.n;
	if (tlen > f.n - mlen)
		tlen = f.n - mlen;
	const uint8_t *manifest = data, *timeline = data + mlen, *profile = timeline + tlen;
	size_t plen = f.n - mlen - tlen;

	snprintf(dir, sizeof(dir), "%s/b%u", fz_dir(), iteration++);
	FUZZ_CHECK(mkdir(dir, 0700) == 0);
	memset(written, 0, sizeof(written));
	if (flags & 1)
		write_member(dir, "manifest.json", manifest, mlen);
	write_member(dir, "runtime.jsonl", timeline, tlen);
	if (flags & 2)
		write_profile(dir, "cpu.pprof", profile, plen);
	if (flags & 4)
		write_profile(dir, "wall.pprof", profile, plen);
	if (flags & 8) {
		write_profile(dir, "threads.pprof", profile, plen);
		write_member(dir, "threads.txt", timeline, tlen);
	}
	if (flags & 16)
		write_member(dir, "goroutine.txt", timeline, tlen);
	if (!(flags & 1))
		write_manifest(dir);

	struct bundle_reader *r, *r2;
	int e = bundle_reader_open(dir, &r);
	if (e < 0) {
		FUZZ_CHECK(flags & 1);
		FUZZ_CHECK(e == -EBADMSG || e == -ENOENT || e == -ENOMEM || e == -EINVAL);
		fz_rm_rf(dir);
		return 0;
	}
	if (!(flags & 64))
		small_limits(r);

	struct report_options opt = {.top = top, .with_flame = (flags & 32) != 0};
	cJSON *doc = NULL;
	e = report_build_json(r, &opt, &doc);
	check_refusal(r, e);
	FUZZ_CHECK((e == BUNDLE_PAST_CAP) == (bundle_reader_refusal(r) != NULL));
	if (e == 0) {
		report_print_text(doc, devnull, (flags & 128) != 0, top);
		cJSON_Delete(doc);
	}

	/* diff's model over the same members, through a second reader (the
	 * first one's cache would hide its decoding). */
	if (bundle_reader_open(dir, &r2) == 0) {
		if (!(flags & 64))
			small_limits(r2);
		cJSON *d = NULL;
		e = diff_build_json(r, r2, top, &d);
		FUZZ_CHECK(e == 0 || e == -ENOMEM || e == BUNDLE_PAST_CAP);
		FUZZ_CHECK(e != BUNDLE_PAST_CAP || bundle_reader_refusal(r) ||
			   bundle_reader_refusal(r2));
		cJSON_Delete(d);
		bundle_reader_free(r2);
	}

	const struct bundle_profile *p;
	if (!bundle_reader_refusal(r) && bundle_reader_has(r, "cpu.pprof") &&
	    bundle_reader_profile(r, "cpu.pprof", &p) == 0 && p->nvalues) {
		e = export_collapsed(p, p->nvalues - 1, (flags & 128) != 0, devnull);
		FUZZ_CHECK(e == 0 || e == -ENOMEM);
		e = export_speedscope(p, 0, "fuzz", devnull);
		FUZZ_CHECK(e == 0 || e == -ENOMEM);
		e = export_svg(p, p->nvalues - 1, (flags & 128) != 0, "fuzz", devnull);
		FUZZ_CHECK(e == 0 || e == -ENOMEM);
	}
	bundle_reader_free(r);
	fz_rm_rf(dir);
	return 0;
}
