/*
 * unwind_gate: the only way the unwinder (attach/unwind.c) reaches a file
 * of the target.
 *
 * libunwind-ptrace's _UPT_find_proc_info, which we used to hand the maps
 * text, opens "/proc/PID/root" + the maps path by itself with a plain
 * open(): it follows a container's absolute symlinks to host files, blocks
 * on a FIFO planted at the path, reads whatever file is there now (a
 * replaced binary: the wrong tables) and trusts the program headers it
 * finds (reliability.md 1.8). Checking each file first and letting
 * libunwind open it afterwards left a race (the target could swap the file
 * in between). Now the unwinder never opens anything: it asks this gate,
 * an unwind_opener, for a descriptor per module, reads the ELF headers and
 * .eh_frame_hdr/.eh_frame from it with its own bounds checks, and serves
 * them to libunwind through its memory accessor.
 *
 * The gate opens the file the way the symbolizer does
 * (symbolize_open_mapped): confined to the target's root with
 * openat2(RESOLVE_IN_ROOT), O_NOFOLLOW|O_NONBLOCK, a regular file with the
 * mapped device and inode, or else the mapped file itself from
 * /proc/PID/map_files (replaced or deleted binaries). So what is unwound
 * is what is mapped, and a refused file costs only CFI: its frames are
 * walked by frame pointers.
 */
#ifndef DIAG_SYMBOLIZE_WORKER_UNWIND_GATE_H
#define DIAG_SYMBOLIZE_WORKER_UNWIND_GATE_H

#include <sys/types.h>

#include "symbolize/unwind/unwind.h"

struct unwind_gate;

/* A gate for pid. NULL on ENOMEM. The target's root is opened on first
 * use and kept (the worker may not be able to open it again later). */
struct unwind_gate *unwind_gate_new(pid_t pid);
void unwind_gate_free(struct unwind_gate *g);

/* An unwind_opener.open: arg is a struct unwind_gate. Returns a read-only
 * O_CLOEXEC descriptor of the file mapped at m (the caller owns it), or
 * -errno: -EINVAL for a line that is not an executable file mapping. */
int unwind_gate_open(void *arg, const struct unwind_module *m);

/* The unwind_opener that uses g. */
struct unwind_opener unwind_gate_opener(struct unwind_gate *g);

#endif
