/*
 * fuzz_pyframes: symbolize/python's frame walker and location-table decoder
 * on a hostile interpreter. A CPython target owns every byte the walker
 * reads (its thread states, frames, code objects, strings, line tables):
 * here they are the fuzzer's input, an image of memory at IMAGE_BASE, with
 * _PyRuntime at its start, read with the 3.11 and 3.12 layouts and with the
 * layout its own _Py_DebugOffsets give as a 3.13 (when they parse).
 *
 * Invariants:
 *  - no crash, no leak, no read outside the image (the read callback is the
 *    only way in, and it bounds-checks);
 *  - the result respects the caps: at most max_threads threads and
 *    max_frames frames each, names and files NUL-terminated UTF-8 of at
 *    most 4 bytes per character of max_string;
 *  - py_line_at on the input as a table never reads past it (ASan) and
 *    returns 0 or a line it could have computed.
 */
#include "tests/fuzz/fuzz_common.h"

#include "symbolize/python/pyframes.h"

#define IMAGE_BASE 0x100000ull

struct image {
	const uint8_t *p;
	size_t len;
};

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;
	if (addr < IMAGE_BASE || addr - IMAGE_BASE > im->len || len > im->len - (addr - IMAGE_BASE))
		return -EFAULT;
	memcpy(buf, im->p + (addr - IMAGE_BASE), len);
	return 0;
}

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image im = {data, size};
	struct py_layout from_block;
	int d = py_layout_from_debug_offsets(data, size, 0x030d00f0, &from_block);
	FUZZ_CHECK(d == 0 || d == -ENOENT || d == -ENOTSUP || d == -EBADMSG);
	const struct py_layout *layouts[] = {py_layout_for(0x030b02f0), py_layout_for(0x030c01f0),
					     d == 0 ? &from_block : NULL};
	for (size_t li = 0; li < 3; li++) {
		const struct py_layout *L = layouts[li];
		if (!L)
			continue;
		struct py_limits lim = {.max_threads = 16,
					.max_frames = 64,
					.max_string = 64,
					.max_linetable = 4096};
		struct py_stacks *s = NULL;
		int r = py_stacks_read(L, IMAGE_BASE, image_read, &im, &lim, &s);
		FUZZ_CHECK(r == 0 || r == -EFAULT || r == -EBADMSG || r == -ENOMEM);
		FUZZ_CHECK((r == 0) == (s != NULL));
		if (s) {
			FUZZ_CHECK(s->nthreads <= lim.max_threads);
			for (size_t i = 0; i < s->nthreads; i++) {
				const struct py_thread *t = &s->threads[i];
				FUZZ_CHECK(t->nframes <= lim.max_frames);
				for (size_t k = 0; k < t->nframes; k++) {
					FUZZ_CHECK(t->frames[k].function && t->frames[k].file);
					FUZZ_CHECK(strlen(t->frames[k].function) <=
						   4 * lim.max_string);
					FUZZ_CHECK(strlen(t->frames[k].file) <= 4 * lim.max_string);
					sink += (size_t)t->frames[k].line;
				}
			}
			py_stacks_free(s);
		}
	}
	for (int addr = -2; addr < 64; addr += 2)
		FUZZ_CHECK(py_line_at(data, size, 1, addr) >= 0);
	return 0;
}
