/*
 * fuzz_go_reply: the tracer's decoding of what the sandboxed Go worker sends
 * back (symbolize/worker/go_reply.c). The worker parsed a hostile Go binary
 * and the runtime's memory and may be compromised, so every count, length
 * and JSON text here is hostile.
 *
 * Input: byte 0 picks the decoder, the rest is the reply.
 *  - even: a GO_REQ_NAMES reply for n addresses (n from byte 1, the
 *    addresses 0x1000, 0x1010, ...);
 *  - odd: manifest JSON for go_json_copy.
 * Invariants:
 *  - no crash, no leak, bounded allocation;
 *  - names: failure is -EBADMSG or -ENOMEM and hands nothing out; on
 *    success each address has at most GO_NAMES_MAX_FRAMES frames, each
 *    with a function name, strings NUL-terminated and at most
 *    GO_NAMES_MAX_STRING bytes, and an address not asked for has none;
 *  - JSON: failure is -EBADMSG or -ENOMEM; on success the copy holds
 *    only scalars and objects of scalars, strings at most
 *    GO_JSON_MAX_STRING bytes, at most 64 members per object.
 */
#include "tests/fuzz/fuzz_common.h"

#include "symbolize/worker/go_serve.h"

static volatile size_t sink;

static void fuzz_names(const uint8_t *data, size_t size)
{
	if (size < 1)
		return;
	size_t n = data[0] % 64;
	uint64_t addrs[64];
	for (size_t i = 0; i < n; i++)
		addrs[i] = 0x1000 + 16 * i;
	struct go_names *names = (struct go_names *)(uintptr_t)1;
	int r = go_names_decode(data + 1, size - 1, addrs, n, &names);
	if (r < 0) {
		FUZZ_CHECK(r == -EBADMSG || r == -ENOMEM);
		FUZZ_CHECK(names == (struct go_names *)(uintptr_t)1);
		return;
	}
	struct sym_frame frames[GO_NAMES_MAX_FRAMES + 8];
	for (size_t i = 0; i < n; i++) {
		size_t nf = go_names_frames(names, addrs[i], frames, GO_NAMES_MAX_FRAMES + 8);
		FUZZ_CHECK(nf <= GO_NAMES_MAX_FRAMES);
		for (size_t k = 0; k < nf; k++) {
			FUZZ_CHECK(frames[k].function != NULL);
			FUZZ_CHECK(strlen(frames[k].function) <= GO_NAMES_MAX_STRING);
			if (frames[k].file)
				FUZZ_CHECK(strlen(frames[k].file) <= GO_NAMES_MAX_STRING);
		}
	}
	FUZZ_CHECK(go_names_frames(names, 0x8, frames, 8) == 0);
	go_names_free(names);
}

static void check_copied(const cJSON *o, int depth)
{
	size_t members = 0;
	for (const cJSON *it = o->child; it; it = it->next, members++) {
		FUZZ_CHECK(it->string != NULL);
		if (cJSON_IsString(it))
			FUZZ_CHECK(strlen(it->valuestring) <= GO_JSON_MAX_STRING);
		else if (cJSON_IsObject(it)) {
			FUZZ_CHECK(depth == 0);
			check_copied(it, depth + 1);
		} else
			FUZZ_CHECK(cJSON_IsNumber(it) || cJSON_IsBool(it));
	}
	FUZZ_CHECK(members <= 64);
}

static void fuzz_json(const uint8_t *data, size_t size)
{
	cJSON *dst = cJSON_CreateObject();
	FUZZ_CHECK(dst != NULL);
	int r = go_json_copy(dst, (const char *)data, size);
	FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
	if (r == 0)
		check_copied(dst, 0);
	char *text = cJSON_PrintUnformatted(dst);
	if (text)
		sink += strlen(text);
	free(text);
	cJSON_Delete(dst);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		fuzz_json(data + 1, size - 1);
	else
		fuzz_names(data + 1, size - 1);
	return 0;
}
