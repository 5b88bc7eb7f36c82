/*
 * pyframes: the Python call stacks of a running CPython, read from its
 * memory from outside (as py-spy does), and where the interpreter keeps
 * what is needed to find them.
 *
 * A CPython 3.11 thread runs a whole chain of Python calls inside one C
 * frame of _PyEval_EvalFrameDefault, so its native stack says nothing of
 * which Python function is running. The interpreter's own records say it:
 * _PyRuntime -> interpreters -> thread states (one per thread, with the
 * kernel's thread id) -> the current _PyInterpreterFrame -> previous ...,
 * each frame naming its code object (qualified name, file, line table) and
 * its last instruction. A frame marked "entry" is the first one run by its
 * _PyEval_EvalFrameDefault call: the run of frames up to and including it
 * belongs to one native frame of the evaluation loop, innermost first.
 *
 * Everything read here comes from the target: every pointer may be wrong,
 * every length hostile, every list a cycle. Reads go through a callback
 * (process_vm_readv in the worker, a memory image in tests and the fuzz
 * harness), every walk is bounded, and a frame that cannot be read ends
 * its thread's stack (truncated) rather than the whole read.
 *
 * Layouts are per minor version, from CPython's own headers: 3.11 (the one
 * Debian 12 runs; a unit test compiles against its headers and compares),
 * 3.12 and 3.13 (from their headers; unit tests read memory images
 * captured from those interpreters). 3.13 publishes the offsets an outside
 * reader needs at the start of _PyRuntime (_Py_DebugOffsets, cookie
 * "xdebugpy"): py_layout_from_debug_offsets reads them, and they win.
 * Before 3.11 and from 3.14 on: no layout.
 */
#ifndef DIAG_SYMBOLIZE_PYTHON_PYFRAMES_H
#define DIAG_SYMBOLIZE_PYTHON_PYFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbolize/symbolize.h"

/* An offset a version does not have. */
#define PY_NO_FIELD UINT32_MAX

/* Offsets (bytes) into the interpreter's structures for one minor version. */
struct py_layout {
	uint32_t hexversion_minor; /* PY_VERSION_HEX & 0xffff0000, e.g. 0x030b0000 */
	/* _PyRuntimeState; runtime_gil_holder: gilstate.tstate_current (3.11) */
	uint32_t runtime_interpreters_head, runtime_gil_holder;
	/* PyInterpreterState; interp_gil: ceval.gil, a pointer to the GIL's
	 * state (3.12 on), where gil_locked and gil_last_holder are */
	uint32_t interp_next, interp_threads_head, interp_gil, gil_locked, gil_last_holder;
	/* PyThreadState. tstate_cframe: its _PyCFrame pointer, whose
	 * current_frame is at cframe_current_frame; with cframe_current_frame
	 * PY_NO_FIELD (3.13), tstate_cframe is current_frame itself. */
	uint32_t tstate_next, tstate_native_thread_id, tstate_cframe, cframe_current_frame;
	/* _PyInterpreterFrame. frame_prev_instr: prev_instr (3.11, 3.12) or
	 * instr_ptr (3.13), an instruction whose line is the frame's.
	 * frame_is_entry (3.11): the frame's own mark; PY_NO_FIELD from 3.12
	 * on, where a shim frame owned by the C stack (owner 3) sits below the
	 * frames of each evaluation-loop call instead. */
	uint32_t frame_code, frame_previous, frame_prev_instr, frame_is_entry, frame_owner;
	uint32_t frame_size; /* bytes to read to cover all of the above */
	/* PyCodeObject */
	uint32_t code_firstlineno, code_filename, code_qualname, code_linetable,
		code_firsttraceable, code_code_adaptive;
	/* PyBytesObject, PyASCIIObject / PyCompactUnicodeObject */
	uint32_t var_size, bytes_data, unicode_length, unicode_state, unicode_ascii_data,
		unicode_compact_data;
};

/* The layout for a CPython PY_VERSION_HEX, or NULL (-ENOTSUP to callers)
 * for a version without one. */
const struct py_layout *py_layout_for(uint32_t hexversion);

/* The layout from a _Py_DebugOffsets block (the first len bytes of
 * _PyRuntime) of a CPython hexversion, into *ret: 0; -ENOENT when there is
 * none (no cookie: before 3.13); -ENOTSUP for a block of a version whose
 * format we do not know; -EBADMSG for offsets that cannot be right. The
 * fields it lacks come from py_layout_for(hexversion). */
int py_layout_from_debug_offsets(const uint8_t *block, size_t len, uint32_t hexversion,
				 struct py_layout *ret);

/* Read len bytes of the target at addr into buf: 0, or -errno (-EFAULT
 * for memory that is not there). */
typedef int (*py_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Caps on a read (0: the default given). */
struct py_limits {
	size_t max_threads;   /* 4096 */
	size_t max_frames;    /* per thread, 1024 */
	size_t max_string;    /* bytes of a name or file, 1024 */
	size_t max_linetable; /* bytes of a line table, 65536 */
};

struct py_frame {
	const char *function; /* co_qualname ("Class.method", "<module>") */
	const char *file;     /* co_filename */
	int line;	      /* 0 when the line table does not say */
	bool entry;	      /* the first frame of its evaluation-loop call */
};

struct py_thread {
	uint64_t native_tid; /* the kernel's thread id (PyThreadState.native_thread_id) */
	bool holds_gil;
	bool truncated; /* a frame could not be read, or max_frames was reached */
	bool moved;	/* its current frame changed while it was read (a
				read without a stop): the frames may mix two moments */
	size_t nframes;
	struct py_frame *frames; /* innermost first */
};

/* Every thread state of every interpreter. Owns its strings. */
struct py_stacks {
	size_t nthreads;
	struct py_thread *threads;
	bool threads_truncated; /* a thread list could not be read to its end */
	char **strings;		/* what the frames point into (internal) */
	size_t nstrings;
};

/* Walk the interpreter's thread states and their frames from the
 * _PyRuntime at runtime_addr. 0 and *ret (free with py_stacks_free), or
 * -ENOMEM, or -EFAULT/-EBADMSG when not even the first interpreter could
 * be read. */
int py_stacks_read(const struct py_layout *layout, uint64_t runtime_addr, py_read_fn read,
		   void *ctx, const struct py_limits *limits, struct py_stacks **ret);
void py_stacks_free(struct py_stacks *s);

/* The line of the instruction at byte offset addr of a code object whose
 * 3.11 location table ("co_linetable") is table[0..len) and whose first
 * line is firstlineno, as PyCode_Addr2Line gives it: firstlineno for a
 * negative addr, 0 where the table says "no line" or ends first. */
int py_line_at(const uint8_t *table, size_t len, int firstlineno, int addr);

/* Where one CPython keeps what py_stacks_read needs, found in the ELF
 * symbols of its executable or libpython (dynamic symbols first). */
struct py_symbols {
	uint64_t runtime;	       /* _PyRuntime */
	uint64_t version;	       /* Py_Version (a uint32_t; 3.11 and later), 0 if absent */
	uint64_t eval_start, eval_end; /* _PyEval_EvalFrameDefault, [start, end) */
	char module[256];	       /* the file they were found in, as mapped */
};

/* Look for them among the mapped files of maps whose name says python
 * (python3.*, libpython3.*), opened with symbolize_open_mapped (rootfd:
 * O_PATH of /proc/PID/root, or -1). 0; -ENOENT: no such module (not a
 * CPython); -ENODATA: such modules, none with _PyRuntime among its symbols
 * (a static build whose symbols were stripped); or -errno. */
int py_symbols_find(pid_t pid, int rootfd, const struct maps *maps, struct py_symbols *ret);

#endif
