/*
 * symbolize/python: the layout table against CPython's headers, the 3.11
 * location-table decoder against the interpreter's own co_lines(), and the
 * frame walker on a hand-made memory image (a frame list that loops).
 */
#ifdef HAVE_PY311_HEADERS
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#endif

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyimage.h"
#include "symbolize/python/pyframes.h"

#ifdef HAVE_PY311_HEADERS
Test(pyframes, layout_311_is_cpythons_own)
{
	const struct py_layout *L = py_layout_for(PY_VERSION_HEX);
	cr_assert(L, "no layout for this CPython (%x)", PY_VERSION_HEX);
#define SAME(field, type, member) cr_expect_eq(L->field, offsetof(type, member), #field)
	SAME(runtime_interpreters_head, _PyRuntimeState, interpreters.head);
	SAME(runtime_gil_holder, _PyRuntimeState, gilstate.tstate_current);
	SAME(interp_next, PyInterpreterState, next);
	SAME(interp_threads_head, PyInterpreterState, threads.head);
	SAME(tstate_next, PyThreadState, next);
	SAME(tstate_native_thread_id, PyThreadState, native_thread_id);
	SAME(tstate_cframe, PyThreadState, cframe);
	SAME(cframe_current_frame, _PyCFrame, current_frame);
	SAME(frame_code, _PyInterpreterFrame, f_code);
	SAME(frame_previous, _PyInterpreterFrame, previous);
	SAME(frame_prev_instr, _PyInterpreterFrame, prev_instr);
	SAME(frame_is_entry, _PyInterpreterFrame, is_entry);
	SAME(frame_owner, _PyInterpreterFrame, owner);
	SAME(code_firstlineno, PyCodeObject, co_firstlineno);
	SAME(code_filename, PyCodeObject, co_filename);
	SAME(code_qualname, PyCodeObject, co_qualname);
	SAME(code_linetable, PyCodeObject, co_linetable);
	SAME(code_firsttraceable, PyCodeObject, _co_firsttraceable);
	SAME(code_code_adaptive, PyCodeObject, co_code_adaptive);
	SAME(var_size, PyVarObject, ob_size);
	SAME(bytes_data, PyBytesObject, ob_sval);
	SAME(unicode_length, PyASCIIObject, length);
	cr_expect_eq(L->unicode_ascii_data, sizeof(PyASCIIObject));
	cr_expect_eq(L->unicode_compact_data, sizeof(PyCompactUnicodeObject));
	cr_expect_geq(L->frame_size, offsetof(_PyInterpreterFrame, owner) + 1);
	cr_expect_eq(FRAME_OWNED_BY_GENERATOR, 1);
	/* state: interned:2, kind:3, compact:1, ascii:1, ready:1 after length,
	 * hash (the decoder reads the bits at unicode_state). */
	cr_expect_eq(L->unicode_state, offsetof(PyASCIIObject, hash) + sizeof(Py_hash_t));
}
#endif

static int hexval(char c)
{
	return c >= 'a' ? c - 'a' + 10 : c - '0';
}

/* Every code object of a few standard modules (long, short, one-line and
 * no-line entries all occur): the interpreter's co_lines() ranges, each
 * code unit's line compared with ours. */
Test(pyframes, line_table_decoding_matches_co_lines, .timeout = 120)
{
	if (access("/usr/bin/python3", X_OK) != 0)
		cr_skip_test("no /usr/bin/python3");
	static const char script[] =
		"import sys, types, threading, json.decoder, asyncio.base_events, argparse\n"
		"if sys.version_info[:2] != (3, 11): print('skip'); sys.exit(0)\n"
		"def walk(co):\n"
		"    print('C', co.co_firstlineno, co.co_linetable.hex() or '-')\n"
		"    for s, e, l in co.co_lines(): print('R', s, e, l if l is not None else 0)\n"
		"    for c in co.co_consts:\n"
		"        if isinstance(c, types.CodeType): walk(c)\n"
		"for m in (threading, json.decoder, asyncio.base_events, argparse):\n"
		"    walk(compile(open(m.__file__).read(), m.__file__, 'exec'))\n";
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -c \"$(cat <<'PYEOF'\n%sPYEOF\n)\"", script);
	FILE *p = popen(cmd, "r");
	cr_assert(p);
	static char line[1 << 20];
	uint8_t *table = malloc(1 << 19);
	cr_assert(table);
	size_t len = 0, codes = 0, units = 0, wrong = 0;
	int first = 0;
	while (fgets(line, sizeof(line), p)) {
		if (strcmp(line, "skip\n") == 0) {
			pclose(p);
			free(table);
			cr_skip_test("not CPython 3.11");
		}
		if (line[0] == 'C') {
			char *hex = strchr(line + 2, ' ') + 1;
			first = atoi(line + 2);
			len = 0;
			for (char *h = hex; h[0] != '-' && h[0] > ' ' && h[1] > ' '; h += 2)
				table[len++] = (uint8_t)(hexval(h[0]) << 4 | hexval(h[1]));
			codes++;
		} else if (line[0] == 'R') {
			int s, e, l;
			cr_assert_eq(sscanf(line, "R %d %d %d", &s, &e, &l), 3);
			for (int a = s; a < e; a += 2, units++) {
				int ours = py_line_at(table, len, first, a);
				if (ours != l && wrong++ < 5)
					cr_expect_eq(
						ours, l,
						"code at line %d, offset %d: ours %d, co_lines %d",
						first, a, ours, l);
			}
		}
	}
	pclose(p);
	free(table);
	cr_expect_gt(codes, 300, "only %zu code objects read", codes);
	cr_expect_eq(wrong, 0, "%zu of %zu code units on the wrong line", wrong, units);
	cr_expect_eq(py_line_at(NULL, 0, 42, -1), 42, "a negative address is the first line");
}

/* A memory image: one interpreter, one thread whose frame list loops back
 * on itself. */
struct image {
	uint8_t mem[4096];
	uint64_t base;
};

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ctx;
	if (addr < im->base || addr - im->base > sizeof(im->mem) ||
	    len > sizeof(im->mem) - (addr - im->base))
		return -EFAULT;
	memcpy(buf, im->mem + (addr - im->base), len);
	return 0;
}

static void put64(struct image *im, uint64_t at, uint64_t v)
{
	memcpy(im->mem + at, &v, 8);
}

Test(pyframes, a_looping_frame_list_ends_at_the_cap)
{
	const struct py_layout *L = py_layout_for(0x030b02f0);
	cr_assert(L);
	struct image im = {.base = 0x10000};
	uint64_t runtime = 0, interp = 1024, tstate = 1536, cframe = 2048, frame = 2304,
		 code = 2560, name = 3072, file = 3328;
	put64(&im, runtime + L->runtime_interpreters_head, im.base + interp);
	put64(&im, interp + L->interp_threads_head, im.base + tstate);
	put64(&im, tstate + L->tstate_native_thread_id, 4242);
	put64(&im, tstate + L->tstate_cframe, im.base + cframe);
	put64(&im, cframe + L->cframe_current_frame, im.base + frame);
	put64(&im, frame + L->frame_code, im.base + code);
	put64(&im, frame + L->frame_previous, im.base + frame); /* the loop */
	put64(&im, frame + L->frame_prev_instr, im.base + code + L->code_code_adaptive + 4);
	put64(&im, code + L->code_qualname, im.base + name);
	put64(&im, code + L->code_filename, im.base + file);
	uint32_t first = 7;
	memcpy(im.mem + code + L->code_firstlineno, &first, 4);
	/* Compact ASCII strings: length, then state (kind 1, compact, ascii). */
	uint32_t state = 1u << 2 | 1u << 5 | 1u << 6;
	put64(&im, name + L->unicode_length, 4);
	memcpy(im.mem + name + L->unicode_state, &state, 4);
	memcpy(im.mem + name + L->unicode_ascii_data, "spin", 4);
	put64(&im, file + L->unicode_length, 5);
	memcpy(im.mem + file + L->unicode_state, &state, 4);
	memcpy(im.mem + file + L->unicode_ascii_data, "x.py\xff", 5);

	struct py_limits lim = {.max_frames = 50};
	struct py_stacks *s = NULL;
	cr_assert_eq(py_stacks_read(L, im.base + runtime, image_read, &im, &lim, &s), 0);
	cr_assert_eq(s->nthreads, 1);
	cr_expect_eq(s->threads[0].native_tid, 4242);
	cr_expect_eq(s->threads[0].nframes, 50);
	cr_expect(s->threads[0].truncated);
	cr_expect_str_eq(s->threads[0].frames[0].function, "spin");
	/* A byte the string's ASCII flag denies is replaced, not passed on. */
	cr_expect_str_eq(s->threads[0].frames[0].file, "x.py\xef\xbf\xbd");
	cr_expect_eq(s->threads[0].frames[0].line, 0, "no line table: no line");
	py_stacks_free(s);

	/* The runtime's interpreter list pointing nowhere: an error, no result. */
	put64(&im, runtime + L->runtime_interpreters_head, 0);
	s = NULL;
	cr_expect_lt(py_stacks_read(L, im.base + runtime, image_read, &im, NULL, &s), 0);
	cr_expect_null(s);
}

/* Memory images captured from live interpreters (images/, made by
 * py_capture_image from tests/targets/python/fixture.py; each .expected
 * was checked against that interpreter's faulthandler traceback): the
 * walker reads the same stacks from them, here, with no such interpreter. */
static void replay(const char *name, bool expect_debug_offsets)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.img", PY_IMAGES_DIR, name);
	struct pyimage im;
	cr_assert_eq(pyimage_load(&im, path), 0, "cannot load %s", path);
	const struct py_layout *known = py_layout_for(im.hexversion);
	cr_assert(known, "no layout for %x", im.hexversion);
	struct py_layout L = *known;
	uint8_t block[1024];
	cr_assert_eq(pyimage_replay_read(&im, im.runtime, block, sizeof(block)), 0);
	int d = py_layout_from_debug_offsets(block, sizeof(block), im.hexversion, &L);
	if (expect_debug_offsets) {
		cr_expect_eq(d, 0, "%s: no usable _Py_DebugOffsets (%d)", name, d);
		/* What the interpreter publishes agrees with its headers. */
		cr_expect_eq(memcmp(&L, known, sizeof(L)), 0,
			     "%s: debug offsets differ from the headers' layout", name);
	} else {
		cr_expect_eq(d, -ENOENT, "%s: a debug-offsets cookie before 3.13", name);
	}
	struct py_stacks *s = NULL;
	cr_assert_eq(py_stacks_read(&L, im.runtime, pyimage_replay_read, &im, NULL, &s), 0);
	char *got = NULL;
	size_t got_len = 0;
	FILE *f = open_memstream(&got, &got_len);
	for (size_t i = 0; i < s->nthreads; i++)
		for (size_t k = 0; k < s->threads[i].nframes; k++) {
			const struct py_frame *fr = &s->threads[i].frames[k];
			fprintf(f, "%zu|%s|%s|%d|%d\n", i, fr->function, fr->file, fr->line,
				fr->entry);
		}
	fclose(f);
	snprintf(path, sizeof(path), "%s/%s.expected", PY_IMAGES_DIR, name);
	FILE *e = fopen(path, "r");
	cr_assert(e, "no %s", path);
	static char want[1 << 16];
	size_t want_len = fread(want, 1, sizeof(want) - 1, e);
	want[want_len] = '\0';
	fclose(e);
	cr_expect_str_eq(got, want, "%s: stacks read from the image differ", name);
	free(got);
	py_stacks_free(s);
	pyimage_release(&im);
}

Test(pyframes, image_of_cpython_311)
{
	replay("fixture-3.11", false);
}
Test(pyframes, image_of_cpython_312)
{
	replay("fixture-3.12", false);
}
Test(pyframes, image_of_cpython_313_read_through_its_debug_offsets)
{
	replay("fixture-3.13", true);
}
