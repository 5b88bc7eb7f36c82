/*
 * unwind_gate: which of the target's mapped files libunwind may open.
 *
 * attach/unwind.c asks libunwind (_UPT_find_proc_info) about the PCs that
 * fall in the file mappings of the maps text it is given, and libunwind
 * 1.6 then opens "/proc/PID/root" + that line's path text by itself, with a
 * plain open(): it follows a container's absolute symlinks to host files,
 * blocks on a FIFO planted at the path (or at "PATH (deleted)", which it
 * takes literally), reads whatever file is there now (a replaced binary:
 * the wrong unwind tables), and trusts the program headers it finds (a
 * PT_GNU_EH_FRAME beyond the file, an unterminated PT_DYNAMIC or an
 * indirect pointer encoding crash it; reliability.md 1.8).
 *
 * So the interpretation worker hands the unwinder a maps text in which every
 * executable file mapping whose file fails these checks has lost its path
 * (numbers kept): its frames are then walked by frame pointers instead. A
 * mapping passes when its path text resolves inside the target's root
 * without any symlink or "..", to a regular file that is the mapped one
 * (same device and inode; or, for overlayfs on kernels before 6.8, whose
 * maps show the lower file's numbers, the same size, mtime and ctime as
 * /proc/PID/map_files says), and whose ELF and program headers hold what
 * libunwind reads without checking.
 *
 * A race remains (the target may swap the file between the check and
 * libunwind's own open): the worker is sandboxed and time-limited for that.
 * Closing it needs libunwind fed from an fd we opened or from the target's
 * memory, in attach/unwind.c.
 */
#ifndef DIAG_CMD_UNWIND_GATE_H
#define DIAG_CMD_UNWIND_GATE_H

#include <stddef.h>
#include <sys/types.h>

struct unwind_gate;

/* A gate for pid; it remembers verdicts per maps line, so that a maps text
 * that changed elsewhere (heap growth) costs nothing. NULL on ENOMEM. */
struct unwind_gate *unwind_gate_new(pid_t pid);
void unwind_gate_free(struct unwind_gate *g);

/* The maps text (len bytes) as the unwinder may see it. Returns a malloc'd,
 * NUL-terminated copy (its length in *ret_len), or NULL on ENOMEM. */
char *unwind_gate_filter(struct unwind_gate *g, const char *maps, size_t len, size_t *ret_len);

#endif
