/*
 * fuzz_pprof_merge: bundle_merge_pprof (bundle/merge.h), which a capture
 * of several processes runs over its parts' profiles, on two hostile
 * profiles.
 *
 * Input: a 4-byte little-endian split point, then two profiles: each a
 * gzipped pprof, or (not starting with the gzip magic) a raw serialized
 * Profile that the harness gzips, so mutations reach the decoder and the
 * index checks and remapping rather than the gzip CRC.
 * Invariants:
 *  - no crash, no leak, no undefined behaviour;
 *  - failure is -EBADMSG or -ENOMEM;
 *  - on success the result decodes, holds exactly the samples of the
 *    parts that went in, each with a pid label of its own part's pid and
 *    a process label, and every string index it holds is in range.
 */
#include <zlib.h>

#include "tests/fuzz/fuzz_common.h"

#include "bundle/gzip.h"
#include "bundle/merge.h"
#include "bundle/profile.pb-c.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static uint8_t *as_gzip(const uint8_t *data, size_t size, size_t *len)
{
	if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		uint8_t *copy = malloc(size ? size : 1);
		if (!copy)
			abort();
		memcpy(copy, data, size);
		*len = size;
		return copy;
	}
	return fz_gzip(data, size, len);
}

static size_t samples_of(const uint8_t *gz, size_t len)
{
	uint8_t *raw = NULL;
	size_t rawlen = 0;
	if (bundle_gunzip(gz, len, 128u << 20, &raw, &rawlen) < 0)
		return 0;
	Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	free(raw);
	size_t n = p ? p->n_sample : 0;
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	uint32_t split = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
			 (uint32_t)data[3] << 24;
	data += 4;
	size -= 4;
	if (split > size)
		split = (uint32_t)size;
	size_t la, lb;
	uint8_t *a = as_gzip(data, split, &la);
	uint8_t *b = as_gzip(data + split, size - split, &lb);
	const void *parts[2] = {a, b};
	size_t lens[2] = {la, lb};
	long pids[2] = {101, 202};
	const char *comms[2] = {"first", "second"};
	bool in[2] = {false, false};
	void *out = NULL;
	size_t outlen = 0;
	int e = bundle_merge_pprof(parts, lens, pids, comms, 2, in, &out, &outlen);
	if (e < 0) {
		FUZZ_CHECK(e == -EBADMSG || e == -ENOMEM);
	} else {
		FUZZ_CHECK(in[0]);
		uint8_t *raw = NULL;
		size_t rawlen = 0;
		FUZZ_CHECK(bundle_gunzip(out, outlen, SIZE_MAX, &raw, &rawlen) == 0);
		Perftools__Profiles__Profile *p = perftools__profiles__profile__unpack(NULL, rawlen, raw);
		free(raw);
		FUZZ_CHECK(p != NULL);
		size_t want = samples_of(a, la) + (in[1] ? samples_of(b, lb) : 0);
		FUZZ_CHECK(p->n_sample == want);
		for (size_t i = 0; i < p->n_sample; i++) {
			const Perftools__Profiles__Sample *s = p->sample[i];
			bool pid = false, process = false;
			for (size_t j = 0; j < s->n_label; j++) {
				const Perftools__Profiles__Label *l = s->label[j];
				FUZZ_CHECK(l->key >= 0 && (size_t)l->key < p->n_string_table);
				FUZZ_CHECK(l->str >= 0 && (size_t)l->str < p->n_string_table);
				const char *k = p->string_table[l->key];
				if (strcmp(k, "pid") == 0 && (l->num == 101 || l->num == 202))
					pid = true;
				if (strcmp(k, "process") == 0)
					process = true;
			}
			FUZZ_CHECK(pid && process);
		}
		for (size_t i = 0; i < p->n_function; i++)
			FUZZ_CHECK(p->function[i]->name >= 0 &&
				   (size_t)p->function[i]->name < p->n_string_table);
		perftools__profiles__profile__free_unpacked(p, NULL);
		free(out);
	}
	free(a);
	free(b);
	return 0;
}
