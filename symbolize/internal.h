/*
 * Private to symbolize/: the pieces symbolizer.c is assembled from. Nothing
 * here is part of the module's interface (that is symbolize.h alone).
 *
 * Out-of-memory policy: every allocation failure is reported as -ENOMEM to
 * the caller of the public function; nothing is half-inserted into a cache.
 */
#ifndef DIAG_SYMBOLIZE_INTERNAL_H
#define DIAG_SYMBOLIZE_INTERNAL_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbolize/symbolize.h"

/* Files larger than this are not opened: no real binary is that big, and a
 * hostile target could otherwise make us map something absurd. */
#define SYM_MAX_FILE_SIZE (4ULL << 30)
/* Deepest inline chain we record for one PC. */
#define SYM_MAX_FRAMES 64

/* ---- arena.c: bump allocator; everything lives until arena_release ---- */
struct arena {
	struct arena_chunk *head;
};
void *arena_alloc(struct arena *a, size_t size);
char *arena_strndup(struct arena *a, const char *s, size_t len);
char *arena_strdup(struct arena *a, const char *s);
void arena_release(struct arena *a);

/* ---- cache.c: open-addressing map pc -> location ---- */
struct pc_cache {
	uint64_t *keys;
	const struct sym_location **vals; /* NULL marks an empty slot */
	size_t cap, count;
	uint64_t hits, misses;
};
const struct sym_location *pc_cache_get(struct pc_cache *c, uint64_t pc);
/* Returns 0 or -ENOMEM (then nothing was inserted). */
int pc_cache_put(struct pc_cache *c, uint64_t pc, const struct sym_location *loc);
void pc_cache_release(struct pc_cache *c);

/* ---- fileopen.c: opening target files without trusting the target ---- */
/* Open the file behind maps entry e (file-backed) of pid. Tries rootfd + path
 * (openat2 confined to the target's root, no symlink escapes), and accepts it
 * only if it is a regular file whose dev/inode match e; otherwise (or if e is
 * deleted) opens /proc/PID/map_files/START-LIMIT. rootfd may be -1. Returns a
 * read-only O_CLOEXEC fd of a regular file <= SYM_MAX_FILE_SIZE, or -errno. */
int sym_open_mapped(int rootfd, pid_t pid, const struct maps_entry *e);
/* Copy the target's [vdso] mapping e into a malloc'd buffer. */
int sym_read_vdso(pid_t pid, const struct maps_entry *e, void **ret_buf, size_t *ret_len);

/* ---- debuginfo.c: separate debug files, found without trusting the target ---- */
/* What the find_debuginfo callback needs of a module (its Dwfl userdata). */
struct sym_debug_ctx {
	const char *path;  /* the module's path in maps: the target's view */
	int rootfd;        /* the target's root (O_PATH), or -1 */
	bool foreign_root; /* the target's / is not ours */
};
/* A Dwfl_Callbacks.find_debuginfo: by build-id in the host's debug store
 * (and debuginfod when allowed), then by .gnu_debuglink inside the
 * target's root, never blocking, following no symlink out of it; a
 * candidate must carry the module's build-id or the debuglink's CRC.
 * *userdata must be a struct sym_debug_ctx (or NULL: build-id only). */
int sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
		       char **debuginfo_file_name);

/* ---- elfinfo.c ---- */
/* Load bias (runtime address - link-time vaddr) of elf as mapped by e,
 * found through the PT_LOAD segment that contains e->offset. -ENOEXEC if none
 * does (corrupt file, or not the file that was mapped). */
int sym_elf_bias(Elf *elf, const struct maps_entry *e, uint64_t *ret_bias);

/* 0 if the ELF's program and section header tables, its segments' file
 * bytes and its sections' bytes all lie within its size bytes; -ENOEXEC
 * otherwise (libelf trusts those offsets: see elfinfo.c). */
int sym_elf_within(Elf *elf, uint64_t size);
/* Lowercase hex of len bytes into out (2*len+1 bytes). */
void sym_hex(const unsigned char *bits, size_t len, char *out);

/* ---- resolve.c: one PC in one libdwfl module -> frames ---- */
/* Address ranges of a module's CUs, built on first need, for DWARF without
 * .debug_aranges (Go, some clang builds) where libdw 0.188 finds no CU. */
struct cu_index {
	bool built;
	struct cu_range *ranges; /* sorted by lo */
	size_t n;
};
void cu_index_release(struct cu_index *idx);
/* Fills frames[0..SYM_MAX_FRAMES) innermost first and returns how many.
 * Strings point into libdw/libelf data (alive as long as the Dwfl) or into
 * the arena (demangled names). Returns a count >= 0 or -ENOMEM. */
int sym_resolve_dwfl(Dwfl_Module *mod, struct cu_index *idx, bool names_only, uint64_t pc,
		     struct arena *strings, struct sym_frame *frames);
/* A data address (in a module's .data or .bss): the ELF object symbol
 * that covers it, as frames[0].function with function_offset the offset
 * into it (C++ names demangled). 1, 0 when no object symbol covers it, or
 * -ENOMEM. */
int sym_resolve_data(Dwfl_Module *mod, uint64_t addr, struct arena *strings, struct sym_frame *frames);

/* ---- demangle.c ---- */
/* Demangled form of a C++ / Rust (legacy) symbol, malloc'd, or NULL when the
 * name is not mangled or no demangler is available at run time. */
char *sym_demangle(const char *name);

/* ---- perfmap.c: /tmp/perf-PID.map written by JITs ---- */
struct perfmap;
/* -ENOENT when the target wrote no map. */
int perfmap_load(pid_t pid, struct perfmap **ret);
/* Name covering pc (and its start in *ret_start), or NULL. */
const char *perfmap_find(const struct perfmap *pm, uint64_t pc, uint64_t *ret_start);
void perfmap_free(struct perfmap *pm);

#endif
