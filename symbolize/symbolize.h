/*
 * symbolize: turn program counters of a target process into frames
 * (function, file:line, inline chain) and describe the target's mappings.
 *
 * Works only from a snapshot of /proc/PID/maps text and from files; it never
 * stops or traces the target. Files are opened through /proc/PID/root (so a
 * containerised target's binaries are found), falling back to
 * /proc/PID/map_files for deleted or replaced binaries. Separate debug files
 * are found by build-id under /usr/lib/debug/.build-id and by .gnu_debuglink.
 * debuginfod is not consulted unless symbolize_options.allow_debuginfod:
 * otherwise symbolizer_new() unsetenv()s DEBUGINFOD_URLS (libdwfl's only
 * switch for it), which affects the whole process.
 *
 * Every PC is resolved once per symbolizer; later lookups hit a cache.
 * Errors are returned as negative errno values; nothing is printed.
 * A symbolizer is not thread-safe: use one per thread, or lock around it.
 * Out of memory is reported as -ENOMEM and leaves the symbolizer usable.
 */
#ifndef DIAG_SYMBOLIZE_H
#define DIAG_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One line of /proc/PID/maps. */
struct maps_entry {
	uint64_t start, limit; /* [start, limit) */
	uint64_t offset;       /* file offset of start */
	uint64_t inode;
	unsigned dev_major, dev_minor;
	char perms[5];         /* "r-xp" */
	char *path;            /* unescaped; "" for anonymous; "[vdso]" etc.; owned */
	bool deleted;          /* path ended in " (deleted)" (suffix removed) */
};

struct maps {
	struct maps_entry *entries;
	size_t count;
};

/* Parse maps text (as read from /proc/PID/maps). Returns 0 or -errno
 * (-EINVAL on a malformed line). On success *ret owns its entries, which are
 * in address order (the kernel's order; other input is sorted). Blank lines
 * are skipped. */
int maps_parse(const char *text, size_t len, struct maps *ret);
void maps_release(struct maps *m);
/* The entry containing addr, or NULL. */
const struct maps_entry *maps_find(const struct maps *m, uint64_t addr);

/* Open the file behind file-backed entry e of pid's maps without trusting
 * the target, as the symbolizer does: confined to its root (rootfd, an
 * O_PATH descriptor of /proc/PID/root, or -1) by openat2(RESOLVE_IN_ROOT),
 * O_NOFOLLOW, O_NONBLOCK; a regular file of at most 4 GiB with e's device
 * and inode; else (replaced, deleted) the mapped file itself from
 * /proc/PID/map_files. Returns a read-only O_CLOEXEC fd or -errno. */
/* Load now what symbolization would load lazily (the C++ demangler, from
 * libstdc++), for a process about to lose the right to open files. */
void symbolize_preload(void);

int symbolize_open_mapped(int rootfd, pid_t pid, const struct maps_entry *e);

struct symbolize_options {
	bool allow_debuginfod; /* honour DEBUGINFOD_URLS (can stall for minutes) */
	/* Function names from ELF symbol tables only: no DWARF, so no
	 * file:line and no inline frames. Distributions ship debug files with
	 * zlib-compressed DWARF, and libdw inflates every debug section of a
	 * module on first use (about 40 ms of CPU for libc alone); names come
	 * from the uncompressed .symtab. */
	bool names_only;
	/* Open a module's file only when a PC in it is first looked up (and
	 * the main executable's, for its build-id): a one-shot dump of a
	 * process with a hundred libraries opens the few its stacks touch.
	 * The modules never touched are listed without a build-id, so a
	 * bundle (whose profiles and --with-binaries list every module)
	 * does not ask for it. */
	bool lazy_modules;
	/* The thread whose /proc entry reaches the process's memory and files
	 * (/proc/X/root, exe, map_files, the vdso): a live one when the main
	 * thread has exited and left a zombie leader with none (see
	 * attach_memory_tid). 0: pid itself. */
	pid_t proc_pid;
};

/* One frame; an inline chain yields several for one PC. Strings are owned
 * by the symbolizer and live until symbolizer_free. */
struct sym_frame {
	const char *function;    /* demangled-as-is name, or NULL if unknown */
	const char *file;        /* source file, or NULL */
	int line;                /* 0 if unknown */
	int function_start_line; /* DW_AT_decl_line of the function, 0 if unknown */
	uint64_t function_offset;/* pc - function entry (outermost real function only; 0 for inlined) */
	bool inlined;            /* this frame was inlined into the next (outer) one */
};

/* A module: one mapped file (or [vdso]), as pprof wants a Mapping. */
struct sym_module {
	uint64_t start, limit, offset; /* exactly as in maps for the executable mapping */
	const char *path;              /* as in maps */
	const char *build_id;          /* lowercase hex, "" if none */
	bool has_functions, has_filenames, has_line_numbers; /* really symbolized */
};

/* The result for one PC. frames[0] is the innermost (deepest inline) frame;
 * frames is NULL when nframes is 0 (nothing known). module is NULL for a PC
 * outside every module: unmapped, or in a non-executable mapping (heap,
 * data), or in anonymous JIT code (whose frames may still come from
 * /tmp/perf-PID.map). module_offset is pc - start + offset of the maps line
 * containing pc, 0 if none. */
struct sym_location {
	uint64_t pc;
	const struct sym_module *module;
	uint64_t module_offset; /* file offset of pc within module (for "module+0xOFF") */
	size_t nframes;
	const struct sym_frame *frames;
};

struct symbolizer;

/* Create a symbolizer for pid from a snapshot of its maps text. pid is used
 * only to open files via /proc/PID/root, /proc/PID/map_files, to identify
 * /proc/PID/exe and to read the vdso and /tmp/perf-PID.map; the target need
 * not be stopped. opts may be
 * NULL (all defaults). Files that cannot be opened or parsed are not an
 * error: their PCs just stay unknown. Returns 0 or -EINVAL (bad pid or
 * malformed maps text) / -ENOMEM; *ret is untouched on failure. */
int symbolizer_new(pid_t pid, const char *maps_text, size_t maps_len,
		   const struct symbolize_options *opts, struct symbolizer **ret);
void symbolizer_free(struct symbolizer *s);

/* Resolve pc. The returned location is owned by the symbolizer and stays
 * valid until symbolizer_free. Never fails for a bad pc: an unknown pc
 * yields nframes == 0. Returns 0 or -ENOMEM. */
int symbolizer_lookup(struct symbolizer *s, uint64_t pc, const struct sym_location **ret);

/* All executable file-backed modules (and [vdso]) in maps order. Valid
 * until symbolizer_free. has_* flags reflect lookups done so far, so call
 * this after the lookups. */
size_t symbolizer_modules(struct symbolizer *s, const struct sym_module **ret);

/* How many of those modules' files could be opened and parsed. 0 for a
 * symbolizer made after the target's files became unreachable (it has
 * exited, or is exiting): one made earlier names its PCs better. */
size_t symbolizer_loaded_modules(const struct symbolizer *s);

/* Build-id (hex) of the main executable, "" if unknown. */
const char *symbolizer_main_build_id(struct symbolizer *s);

/* Lookups answered from the cache and lookups that had to resolve, so far
 * (for tests and benchmarks). Either pointer may be NULL. */
void symbolizer_cache_stats(const struct symbolizer *s, uint64_t *ret_hits, uint64_t *ret_misses);

#endif
