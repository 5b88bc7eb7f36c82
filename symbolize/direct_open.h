/*
 * direct_open: opening a target's files with our own rights, confined to
 * its root and checked (direct_open.c says the rules). The bottom of the
 * file access of symbolize/: target_access.h calls it when it is direct,
 * a sandboxed worker's broker calls it for the worker.
 */
#ifndef DIAG_SYMBOLIZE_DIRECT_OPEN_H
#define DIAG_SYMBOLIZE_DIRECT_OPEN_H

#include <stdbool.h>
#include <sys/types.h>

#include "symbolize/symbolize.h"

/* Open the file behind maps entry e (file-backed) of pid. Tries rootfd +
 * path (openat2 confined to the target's root, no symlink escapes), and
 * accepts it only if it is a regular file whose dev/inode match e;
 * otherwise (or if e is deleted) opens /proc/PID/map_files/START-LIMIT.
 * rootfd may be -1. A read-only O_CLOEXEC fd of a regular file no larger
 * than SYM_MAX_FILE_SIZE (internal.h), or -errno. */
int sym_open_mapped_direct(int rootfd, pid_t pid, const struct maps_entry *e);
/* A candidate debug file by path, directly: in the target's root (dirfd
 * its O_PATH root, RESOLVE_IN_ROOT) or the host's (dirfd AT_FDCWD); no
 * symlink as the last component, no magic links, never blocking, a
 * regular file no larger than SYM_MAX_FILE_SIZE. A read-only fd or -errno. */
int sym_open_debug_direct(int dirfd, bool in_root, const char *path);
/* Whether the JIT map /tmp/perf-PID.map, open as fd, may name pid's
 * frames. Anyone can create files in /tmp, so, like perf (which takes a
 * map only from its own user or root), one is trusted only when it is a
 * regular file owned by root or by the target's user (the owner of
 * /proc/PID) and not writable by others. 0: trusted; -EPERM: refused,
 * with a one-line reason in why; -errno when it cannot be told. */
int perfmap_check(int fd, pid_t pid, char *why, size_t why_size);
/* pid's JIT map, /tmp/perf-PID.map, opened read-only without following a
 * symlink or blocking on a FIFO (path, if not NULL, gets its name): a
 * descriptor or -errno (-ENOENT: none). */
int perfmap_open(pid_t pid, char path[64]);

#endif
