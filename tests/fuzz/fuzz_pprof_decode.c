/*
 * fuzz_pprof_decode: the bundle reader's pprof decoding (gunzip, protobuf-c
 * unpack, flattening into samples of frames) on a hostile profile member.
 *
 * Input: a gzipped pprof (a real cpu.pprof is a seed) or, if it does not
 * start with the gzip magic, a raw serialized Profile that the harness
 * gzips itself, so mutations reach the protobuf decoder and the id/index
 * resolution instead of dying in the gzip CRC. The bytes become member
 * "cpu.pprof" of a bundle whose manifest lists it with their size and
 * sha256 (the reader hands out nothing else).
 * Invariants:
 *  - no crash, no leak, no undefined behaviour;
 *  - failure is -EBADMSG, -ENOMEM or BUNDLE_PAST_CAP (a bomb: the reader's
 *    limits are lowered so that one is refused after megabytes);
 *  - on success every string the reader hands out is readable and non-NULL
 *    where documented (function, file, value types), every sample's values
 *    array has nvalues entries, and a second call returns the cached result.
 */
#include <zlib.h>

#include "tests/fuzz/fuzz_common.h"

#include "bundle/bundle.h"
#include "bundle/reader.h"

static char the_bundle[300];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(the_bundle, sizeof(the_bundle), "%s/bundle", fz_dir());
	if (mkdir(the_bundle, 0700) < 0)
		abort();
	return 0;
}

/* cpu.pprof and a manifest that lists it as it is. */
static void write_member(const uint8_t *data, size_t len)
{
	char path[400], sha[65], manifest[300];

	snprintf(path, sizeof(path), "%s/cpu.pprof", the_bundle);
	fz_write_file(path, data, len);
	bundle_sha256_hex(data, len, sha);
	snprintf(manifest, sizeof(manifest),
		 "{\"format\":\"diag-attach-bundle\",\"members\":[{\"name\":\"cpu.pprof\","
		 "\"bytes\":%zu,\"sha256\":\"%s\"}]}",
		 len, sha);
	snprintf(path, sizeof(path), "%s/manifest.json", the_bundle);
	fz_write_file(path, manifest, strlen(manifest));
}

static volatile size_t sink;

static void touch(const char *s)
{
	sink += strlen(s);
}

static void check_profile(const struct bundle_profile *p)
{
	for (size_t i = 0; i < p->nvalues; i++) {
		FUZZ_CHECK(p->value_type[i] && p->value_unit[i]);
		touch(p->value_type[i]);
		touch(p->value_unit[i]);
	}
	FUZZ_CHECK(p->period_type != NULL);
	touch(p->period_type);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct bundle_sample *s = &p->samples[i];

		for (size_t v = 0; v < p->nvalues; v++)
			sink += (size_t)s->values[v];
		for (size_t k = 0; k < s->nframes; k++) {
			const struct bundle_frame *f = &s->frames[k];

			FUZZ_CHECK(f->function && f->file);
			touch(f->function);
			touch(f->file);
		}
		if (s->thread_comm)
			touch(s->thread_comm);
		if (s->state)
			touch(s->state);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bundle_reader *r;
	const struct bundle_profile *p, *again;
	int e;

	if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		write_member(data, size);
	} else {
		size_t len;
		uint8_t *gz = fz_gzip(data, size, &len);
		write_member(gz, len);
		free(gz);
	}

	FUZZ_CHECK(bundle_reader_open(the_bundle, &r) == 0);
	bundle_reader_set_limit(r, BUNDLE_CAP_INFLATED_BYTES, 16 << 20);
	bundle_reader_set_limit(r, BUNDLE_CAP_DECODED_BYTES, 256 << 20);
	FUZZ_CHECK(bundle_reader_has(r, "cpu.pprof"));
	e = bundle_reader_profile(r, "cpu.pprof", &p);
	if (e == 0) {
		check_profile(p);
		FUZZ_CHECK(bundle_reader_profile(r, "cpu.pprof", &again) == 0 && again == p);
	} else {
		FUZZ_CHECK(e == -EBADMSG || e == -ENOMEM || e == BUNDLE_PAST_CAP);
		FUZZ_CHECK((e == BUNDLE_PAST_CAP) == (bundle_reader_refusal(r) != NULL));
	}
	bundle_reader_free(r);
	return 0;
}
