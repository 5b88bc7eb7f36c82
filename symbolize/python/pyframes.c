/* Reading CPython's thread states and frames from outside (pyframes.h). */
#include "symbolize/python/pyframes.h"

#include "symbolize/arrays.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* From CPython 3.11's Include/internal/pycore_{runtime,interp,frame}.h,
 * Include/cpython/{pystate,code,bytesobject,unicodeobject}.h (x86-64);
 * tests/unit/symbolize/python/test_pyframes.c compiles against those
 * headers and compares. */
static const struct py_layout layout_311 = {
	.hexversion_minor = 0x030b0000,
	.runtime_interpreters_head = 40,
	.runtime_gil_holder = 576, /* gilstate.tstate_current */
	.interp_next = 0,
	.interp_threads_head = 16,
	.interp_gil = PY_NO_FIELD,
	.gil_locked = PY_NO_FIELD,
	.gil_last_holder = PY_NO_FIELD,
	.tstate_next = 8,
	.tstate_native_thread_id = 160,
	.tstate_cframe = 56,
	.cframe_current_frame = 8,
	.frame_code = 32,
	.frame_previous = 48,
	.frame_prev_instr = 56,
	.frame_is_entry = 68,
	.frame_owner = 69,
	.frame_size = 72,
	.code_firstlineno = 72,
	.code_filename = 112,
	.code_qualname = 128,
	.code_linetable = 136,
	.code_firsttraceable = 168,
	.code_code_adaptive = 184,
	.var_size = 16,
	.bytes_data = 32,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_data = 48,
	.unicode_compact_data = 72,
};

/* 3.12 (3.12.1's headers): the thread list moved, the GIL is per
 * interpreter, frames lost is_entry to shim frames, strings lost wstr. */
static const struct py_layout layout_312 = {
	.hexversion_minor = 0x030c0000,
	.runtime_interpreters_head = 40,
	.runtime_gil_holder = PY_NO_FIELD,
	.interp_next = 0,
	.interp_threads_head = 72,
	.interp_gil = 384,
	.gil_locked = 16,
	.gil_last_holder = 8,
	.tstate_next = 8,
	.tstate_native_thread_id = 144,
	.tstate_cframe = 56,
	.cframe_current_frame = 0,
	.frame_code = 0,
	.frame_previous = 8,
	.frame_prev_instr = 56,
	.frame_is_entry = PY_NO_FIELD,
	.frame_owner = 70,
	.frame_size = 72,
	.code_firstlineno = 68,
	.code_filename = 112,
	.code_qualname = 128,
	.code_linetable = 136,
	.code_firsttraceable = 176,
	.code_code_adaptive = 192,
	.var_size = 16,
	.bytes_data = 32,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_data = 40,
	.unicode_compact_data = 56,
};

/* 3.13 (3.13.0's headers; its _Py_DebugOffsets say the same and win):
 * no _PyCFrame, f_executable for f_code, instr_ptr for prev_instr. */
static const struct py_layout layout_313 = {
	.hexversion_minor = 0x030d0000,
	.runtime_interpreters_head = 632,
	.runtime_gil_holder = PY_NO_FIELD,
	.interp_next = 7264,
	.interp_threads_head = 7344,
	.interp_gil = 16,
	.gil_locked = 16,
	.gil_last_holder = 8,
	.tstate_next = 8,
	.tstate_native_thread_id = 160,
	.tstate_cframe = 72,
	.cframe_current_frame = PY_NO_FIELD,
	.frame_code = 0,
	.frame_previous = 8,
	.frame_prev_instr = 56,
	.frame_is_entry = PY_NO_FIELD,
	.frame_owner = 70,
	.frame_size = 72,
	.code_firstlineno = 68,
	.code_filename = 112,
	.code_qualname = 128,
	.code_linetable = 136,
	.code_firsttraceable = 184,
	.code_code_adaptive = 200,
	.var_size = 16,
	.bytes_data = 32,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_data = 40,
	.unicode_compact_data = 56,
};

const struct py_layout *py_layout_for(uint32_t hexversion)
{
	static const struct py_layout *const all[] = {&layout_311, &layout_312, &layout_313};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if ((hexversion & 0xffff0000u) == all[i]->hexversion_minor)
			return all[i];
	return NULL;
}

/* _Py_DebugOffsets of 3.13 (Include/internal/pycore_runtime.h): the cookie,
 * version, free_threaded, then groups of u64 offsets, each group led by
 * its structure's size. Word indexes into the block: */
enum {
	DO_VERSION = 1,
	DO_FREE_THREADED = 2,
	DO_RUNTIME_INTERPRETERS_HEAD = 5,
	DO_INTERP_NEXT = 8,
	DO_INTERP_THREADS_HEAD = 9,
	DO_INTERP_CEVAL_GIL = 14,
	DO_INTERP_GIL_STATE = 15,
	DO_INTERP_GIL_LOCKED = 17,
	DO_INTERP_GIL_HOLDER = 18,
	DO_TSTATE_NEXT = 21,
	DO_TSTATE_CURRENT_FRAME = 23,
	DO_TSTATE_NATIVE_THREAD_ID = 25,
	DO_FRAME_PREVIOUS = 29,
	DO_FRAME_EXECUTABLE = 30,
	DO_FRAME_INSTR_PTR = 31,
	DO_FRAME_OWNER = 33,
	DO_CODE_FILENAME = 35,
	DO_CODE_QUALNAME = 37,
	DO_CODE_LINETABLE = 38,
	DO_CODE_FIRSTLINENO = 39,
	DO_CODE_CODE_ADAPTIVE = 43,
	DO_BYTES_OB_SIZE = 65,
	DO_BYTES_OB_SVAL = 66,
	DO_UNICODE_STATE = 68,
	DO_UNICODE_LENGTH = 69,
	DO_UNICODE_ASCII_SIZE = 70,
	DO_WORDS_313 = 73,
};

int py_layout_from_debug_offsets(const uint8_t *block, size_t len, uint32_t hexversion,
				 struct py_layout *ret)
{
	if (len < 8 || memcmp(block, "xdebugpy", 8) != 0)
		return -ENOENT;
	const struct py_layout *base = py_layout_for(hexversion);
	if (!base || base->hexversion_minor != 0x030d0000 || len < DO_WORDS_313 * 8)
		return -ENOTSUP;
	uint64_t w[DO_WORDS_313];
	memcpy(w, block, sizeof(w));
	/* The block's own version must be the interpreter's minor version,
	 * and a free-threaded build lays its objects out otherwise. */
	if ((w[DO_VERSION] & 0xffff0000u) != 0x030d0000 || w[DO_FREE_THREADED])
		return -ENOTSUP;
	struct py_layout L = *base;
	uint64_t gil = w[DO_INTERP_GIL_STATE];
	uint64_t v[] = {
		w[DO_RUNTIME_INTERPRETERS_HEAD],
		w[DO_INTERP_NEXT],
		w[DO_INTERP_THREADS_HEAD],
		w[DO_INTERP_CEVAL_GIL],
		w[DO_INTERP_GIL_LOCKED] - gil,
		w[DO_INTERP_GIL_HOLDER] - gil,
		w[DO_TSTATE_NEXT],
		w[DO_TSTATE_CURRENT_FRAME],
		w[DO_TSTATE_NATIVE_THREAD_ID],
		w[DO_FRAME_PREVIOUS],
		w[DO_FRAME_EXECUTABLE],
		w[DO_FRAME_INSTR_PTR],
		w[DO_FRAME_OWNER],
		w[DO_CODE_FILENAME],
		w[DO_CODE_QUALNAME],
		w[DO_CODE_LINETABLE],
		w[DO_CODE_FIRSTLINENO],
		w[DO_CODE_CODE_ADAPTIVE],
		w[DO_BYTES_OB_SIZE],
		w[DO_BYTES_OB_SVAL],
		w[DO_UNICODE_STATE],
		w[DO_UNICODE_LENGTH],
		w[DO_UNICODE_ASCII_SIZE],
	};
	/* Offsets a reader would use to index its buffers: every one small
	 * (the interpreter state is the largest structure, some KiB). */
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i] >= 65536)
			return -EBADMSG;
	L.runtime_interpreters_head = (uint32_t)v[0];
	L.interp_next = (uint32_t)v[1];
	L.interp_threads_head = (uint32_t)v[2];
	L.interp_gil = (uint32_t)v[3];
	L.gil_locked = (uint32_t)v[4];
	L.gil_last_holder = (uint32_t)v[5];
	L.tstate_next = (uint32_t)v[6];
	L.tstate_cframe = (uint32_t)v[7];
	L.tstate_native_thread_id = (uint32_t)v[8];
	L.frame_previous = (uint32_t)v[9];
	L.frame_code = (uint32_t)v[10];
	L.frame_prev_instr = (uint32_t)v[11];
	L.frame_owner = (uint32_t)v[12];
	L.code_filename = (uint32_t)v[13];
	L.code_qualname = (uint32_t)v[14];
	L.code_linetable = (uint32_t)v[15];
	L.code_firstlineno = (uint32_t)v[16];
	L.code_code_adaptive = (uint32_t)v[17];
	L.var_size = (uint32_t)v[18];
	L.bytes_data = (uint32_t)v[19];
	L.unicode_state = (uint32_t)v[20];
	L.unicode_length = (uint32_t)v[21];
	L.unicode_ascii_data = (uint32_t)v[22];
	/* Not published: the compact (non-ASCII) string data follows the
	 * ASCII header and its UTF-8 length and pointer. */
	L.unicode_compact_data = (uint32_t)v[22] + 16;
	/* The frame must be read up to its owner byte, and the code object
	 * up to its bytecode (the walker's buffers are 128 and 256 bytes). */
	uint32_t frame_end = 0;
	uint32_t fields[] = {L.frame_code, L.frame_previous, L.frame_prev_instr};
	for (size_t i = 0; i < 3; i++)
		if (fields[i] + 8 > frame_end)
			frame_end = fields[i] + 8;
	if (L.frame_owner + 1 > frame_end)
		frame_end = L.frame_owner + 1;
	if (frame_end > 120 || L.code_code_adaptive > 256 ||
	    L.code_firsttraceable + 4 > L.code_code_adaptive)
		return -EBADMSG;
	L.frame_size = (frame_end + 7) & ~7u; /* whole words, as the static layouts */
	*ret = L;
	return 0;
}

/* ---- the 3.11 location table (Objects/locations.md in CPython) ----
 * Entries of one start byte (bit 7 set; bits 3-6 a code; bits 0-2 the
 * number of code units covered, minus one) and the bytes of that code:
 * 15 no location; 14 long form (signed line delta, then end line and two
 * columns); 13 line delta only; 10-12 same-line deltas 0-2 plus two column
 * bytes; 0-9 short forms, same line, one column byte. Varints are 6 bits a
 * byte, bit 6 saying another byte follows; signed ones keep the sign in
 * bit 0. */

static unsigned table_varint(const uint8_t *t, size_t len, size_t *i)
{
	unsigned v = 0, shift = 0;
	while (*i < len) {
		uint8_t b = t[(*i)++];
		if (shift < 32)
			v |= (unsigned)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

static int table_svarint(const uint8_t *t, size_t len, size_t *i)
{
	unsigned u = table_varint(t, len, i);
	return (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
}

int py_line_at(const uint8_t *table, size_t len, int firstlineno, int addr)
{
	if (addr < 0)
		return firstlineno;
	long line = firstlineno;
	long start = 0;
	size_t i = 0;
	while (i < len) {
		uint8_t head = table[i++];
		int code = (head >> 3) & 15;
		long end = start + 2 * ((head & 7) + 1);
		bool no_line = code == 15;
		if (code == 14 || code == 13)
			line += table_svarint(table, len, &i);
		else if (code >= 10 && code <= 12)
			line += code - 10;
		/* Skip the rest of the entry: up to the next start byte. */
		while (i < len && !(table[i] & 128))
			i++;
		if (addr >= start && addr < end)
			return no_line || line < 0 || line > 100000000 ? 0 : (int)line;
		start = end;
	}
	return 0;
}

/* ---- reading ---- */

struct reader {
	const struct py_layout *L;
	py_read_fn read;
	void *ctx;
	struct py_limits lim;
	/* Strings and code objects repeat across frames and threads: one read
	 * each per walk. */
	struct code_entry {
		uint64_t addr;
		const char *function, *file;
		int firstlineno, firsttraceable;
		uint8_t *linetable;
		size_t linetable_len;
	} * codes;
	size_t ncodes, codes_cap;
	char **strings;
	size_t nstrings, strings_cap;
};

static int rd(struct reader *r, uint64_t addr, void *buf, size_t len)
{
	if (!addr)
		return -EFAULT;
	return r->read(r->ctx, addr, buf, len);
}

static int rd_ptr(struct reader *r, uint64_t addr, uint64_t *ret)
{
	return rd(r, addr, ret, sizeof(*ret));
}

static char *keep_string(struct reader *r, char *s)
{
	if (!s ||
	    array_reserve(&r->strings, &r->strings_cap, r->nstrings + 1, sizeof(char *), 16) < 0) {
		free(s);
		return NULL;
	}
	r->strings[r->nstrings++] = s;
	return s;
}

static size_t put_utf8(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 63));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 63));
		out[2] = (char)(0x80 | (c & 63));
		return 3;
	}
	if (c > 0x10ffff)
		c = 0xfffd;
	out[0] = (char)(0xf0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 63));
	out[2] = (char)(0x80 | ((c >> 6) & 63));
	out[3] = (char)(0x80 | (c & 63));
	return 4;
}

/* A str object as UTF-8 (compact strings only: every name and file of a
 * code object is one), cut at max_string bytes of characters. NULL when
 * unreadable or not a compact string, or on ENOMEM (*oom set). */
static char *read_str(struct reader *r, uint64_t obj, bool *oom)
{
	const struct py_layout *L = r->L;
	int64_t length;
	uint32_t state;
	if (rd(r, obj + L->unicode_length, &length, sizeof(length)) < 0 ||
	    rd(r, obj + L->unicode_state, &state, sizeof(state)) < 0)
		return NULL;
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (!compact || length < 0 || (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	size_t n = (size_t)length < r->lim.max_string ? (size_t)length : r->lim.max_string;
	uint64_t data = obj + (ascii ? L->unicode_ascii_data : L->unicode_compact_data);
	uint8_t *raw = malloc(n * kind + 1);
	char *out = malloc(n * 4 + 1);
	if (!raw || !out) {
		free(raw);
		free(out);
		*oom = true;
		return NULL;
	}
	if (n && rd(r, data, raw, n * kind) < 0) {
		free(raw);
		free(out);
		return NULL;
	}
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t c;
		if (kind == 1)
			c = raw[i];
		else if (kind == 2)
			c = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
		else
			memcpy(&c, raw + 4 * i, 4);
		if (ascii && c >= 0x80)
			c = 0xfffd; /* says ASCII, is not: keep the output valid UTF-8 */
		o += put_utf8(out + o, c);
	}
	out[o] = '\0';
	free(raw);
	return out;
}

/* A code object's names and line table, read once. NULL when unreadable
 * (or ENOMEM: *oom). */
static const struct code_entry *read_code(struct reader *r, uint64_t code, bool *oom)
{
	for (size_t i = 0; i < r->ncodes; i++)
		if (r->codes[i].addr == code)
			return &r->codes[i];
	const struct py_layout *L = r->L;
	uint8_t obj[256];
	size_t need = L->code_code_adaptive;
	if (need > sizeof(obj) || rd(r, code, obj, need) < 0)
		return NULL;
	uint64_t filename, qualname, linetable;
	int32_t firstlineno, firsttraceable;
	memcpy(&filename, obj + L->code_filename, 8);
	memcpy(&qualname, obj + L->code_qualname, 8);
	memcpy(&linetable, obj + L->code_linetable, 8);
	memcpy(&firstlineno, obj + L->code_firstlineno, 4);
	memcpy(&firsttraceable, obj + L->code_firsttraceable, 4);
	struct code_entry e = {
		.addr = code, .firstlineno = firstlineno, .firsttraceable = firsttraceable};
	e.function = keep_string(r, read_str(r, qualname, oom));
	e.file = keep_string(r, read_str(r, filename, oom));
	int64_t tlen;
	if (rd(r, linetable + L->var_size, &tlen, sizeof(tlen)) == 0 && tlen > 0) {
		size_t n =
			(size_t)tlen < r->lim.max_linetable ? (size_t)tlen : r->lim.max_linetable;
		e.linetable = malloc(n);
		if (!e.linetable)
			*oom = true;
		else if (rd(r, linetable + L->bytes_data, e.linetable, n) < 0) {
			free(e.linetable);
			e.linetable = NULL;
		} else {
			e.linetable_len = n;
		}
	}
	if (*oom ||
	    array_reserve(&r->codes, &r->codes_cap, r->ncodes + 1, sizeof(*r->codes), 16) < 0) {
		free(e.linetable);
		*oom = true;
		return NULL;
	}
	r->codes[r->ncodes] = e;
	return &r->codes[r->ncodes++];
}

/* One thread's frames, innermost first, from its current frame. */
static int read_frames(struct reader *r, uint64_t tstate, struct py_thread *t)
{
	const struct py_layout *L = r->L;
	/* Where the current frame pointer is: in the thread state (3.13) or
	 * in its _PyCFrame (3.11, 3.12). Read again after the walk. */
	uint64_t where = tstate + L->tstate_cframe, frame;
	if (L->cframe_current_frame != PY_NO_FIELD) {
		uint64_t cframe;
		if (rd_ptr(r, where, &cframe) < 0) {
			t->truncated = true;
			return 0;
		}
		where = cframe + L->cframe_current_frame;
	}
	if (rd_ptr(r, where, &frame) < 0) {
		t->truncated = true;
		return 0;
	}
	uint64_t first = frame;
	size_t cap = 0;
	bool oom = false;
	/* Frames skipped (not yet started) count against the cap too: a
	 * loop of them would never end otherwise. */
	for (size_t visited = 0; frame; visited++) {
		if (t->nframes == r->lim.max_frames || visited == 2 * r->lim.max_frames) {
			t->truncated = true;
			break;
		}
		uint8_t f[128];
		if (L->frame_size > sizeof(f) || rd(r, frame, f, L->frame_size) < 0) {
			t->truncated = true;
			break;
		}
		uint64_t code, previous, prev_instr;
		memcpy(&code, f + L->frame_code, 8);
		memcpy(&previous, f + L->frame_previous, 8);
		memcpy(&prev_instr, f + L->frame_prev_instr, 8);
		uint8_t owner = f[L->frame_owner];
		if (owner == 3 /* FRAME_OWNED_BY_CSTACK, 3.12 on */) {
			/* The shim below an evaluation-loop call's frames: the
			 * frame above it (the last one kept) is that call's first. */
			if (t->nframes)
				t->frames[t->nframes - 1].entry = true;
			frame = previous;
			continue;
		}
		bool entry = L->frame_is_entry != PY_NO_FIELD && f[L->frame_is_entry] != 0;
		const struct code_entry *c = read_code(r, code, &oom);
		if (oom)
			return -ENOMEM;
		if (!c) {
			t->truncated = true;
			break;
		}
		uint64_t code_start = code + L->code_code_adaptive;
		/* Not yet started (owned by the thread, before its first
		 * traceable instruction): CPython's own tracebacks skip it. One
		 * marked entry is kept (at its first line), so that every
		 * evaluation-loop call on the native stack has its frames. */
		bool incomplete =
			owner != 1 /* FRAME_OWNED_BY_GENERATOR */ &&
			(prev_instr < code_start ||
			 (prev_instr - code_start) / 2 <
				 (uint64_t)(c->firsttraceable > 0 ? c->firsttraceable : 0));
		if (!incomplete || entry) {
			if (array_reserve(&t->frames, &cap, t->nframes + 1, sizeof(*t->frames),
					  16) < 0)
				return -ENOMEM;
			int addr = !incomplete && prev_instr - code_start < (1u << 30)
					   ? (int)(prev_instr - code_start)
					   : -1;
			t->frames[t->nframes++] = (struct py_frame){
				.function = c->function ? c->function : "?",
				.file = c->file ? c->file : "?",
				.line = c->linetable ? py_line_at(c->linetable, c->linetable_len,
								  c->firstlineno, addr)
						     : (addr < 0 ? c->firstlineno : 0),
				.entry = entry,
			};
		}
		frame = previous;
	}
	/* Read without a stop, the thread ran on meanwhile: if its current
	 * frame is another one now, the walk may have followed a frame that
	 * was being popped. (The same frame at both ends can still have moved
	 * its line: that is what a sample's moment is.) */
	uint64_t now;
	if (rd_ptr(r, where, &now) < 0 || now != first)
		t->moved = true;
	return 0;
}

/* 3.12 on: the GIL is the interpreter's; its last holder holds it while it
 * is locked. */
static bool holds_interp_gil(struct reader *r, uint64_t interp, uint64_t tstate)
{
	const struct py_layout *L = r->L;
	uint64_t gil, holder;
	int32_t locked;
	return rd_ptr(r, interp + L->interp_gil, &gil) == 0 &&
	       rd(r, gil + L->gil_locked, &locked, sizeof(locked)) == 0 && locked &&
	       rd_ptr(r, gil + L->gil_last_holder, &holder) == 0 && holder == tstate;
}

static void reader_release(struct reader *r)
{
	for (size_t i = 0; i < r->ncodes; i++)
		free(r->codes[i].linetable);
	free(r->codes);
}

int py_stacks_read(const struct py_layout *L, uint64_t runtime, py_read_fn read, void *ctx,
		   const struct py_limits *limits, struct py_stacks **ret)
{
	struct reader r = {.L = L, .read = read, .ctx = ctx};
	if (limits)
		r.lim = *limits;
	if (!r.lim.max_threads)
		r.lim.max_threads = 4096;
	if (!r.lim.max_frames)
		r.lim.max_frames = 1024;
	if (!r.lim.max_string)
		r.lim.max_string = 1024;
	if (!r.lim.max_linetable)
		r.lim.max_linetable = 65536;
	struct py_stacks *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	uint64_t interp, gil_holder = 0;
	int e = rd_ptr(&r, runtime + L->runtime_interpreters_head, &interp);
	if (e == 0 && !interp)
		e = -EBADMSG;
	if (e < 0) {
		free(s);
		return e;
	}
	if (L->runtime_gil_holder != PY_NO_FIELD)
		(void)rd_ptr(&r, runtime + L->runtime_gil_holder, &gil_holder);
	size_t cap = 0;
	int result = 0;
	/* Interpreters and their thread states are lists the target owns: a
	 * cycle ends at max_threads. */
	for (size_t interps = 0; interp && interps < 64 && result == 0; interps++) {
		uint64_t tstate;
		if (rd_ptr(&r, interp + L->interp_threads_head, &tstate) < 0) {
			s->threads_truncated = true;
			break;
		}
		while (tstate && result == 0) {
			if (s->nthreads == r.lim.max_threads) {
				s->threads_truncated = true;
				break;
			}
			if (array_reserve(&s->threads, &cap, s->nthreads + 1, sizeof(*s->threads),
					  16) < 0) {
				result = -ENOMEM;
				break;
			}
			struct py_thread *t = &s->threads[s->nthreads];
			memset(t, 0, sizeof(*t));
			if (rd(&r, tstate + L->tstate_native_thread_id, &t->native_tid, 8) < 0) {
				s->threads_truncated = true;
				break;
			}
			s->nthreads++;
			t->holds_gil = gil_holder && gil_holder == tstate;
			if (L->interp_gil != PY_NO_FIELD)
				t->holds_gil = holds_interp_gil(&r, interp, tstate);
			result = read_frames(&r, tstate, t);
			if (rd_ptr(&r, tstate + L->tstate_next, &tstate) < 0) {
				s->threads_truncated = true;
				break;
			}
		}
		if (rd_ptr(&r, interp + L->interp_next, &interp) < 0)
			break;
	}
	reader_release(&r);
	/* The strings outlive the reader: they go with the result. */
	if (result < 0) {
		for (size_t i = 0; i < r.nstrings; i++)
			free(r.strings[i]);
		free(r.strings);
		for (size_t i = 0; i < s->nthreads; i++)
			free(s->threads[i].frames);
		free(s->threads);
		free(s);
		return result;
	}
	s->strings = r.strings;
	s->nstrings = r.nstrings;
	*ret = s;
	return 0;
}

void py_stacks_free(struct py_stacks *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nthreads; i++)
		free(s->threads[i].frames);
	free(s->threads);
	for (size_t i = 0; i < s->nstrings; i++)
		free(s->strings[i]);
	free(s->strings);
	free(s);
}
