/*
 * target_access: how the code under symbolize/ reaches a target's files and
 * memory. Every open of a target's file and every read of its memory made
 * by symbolize/ (and by the Go and Python readers above it) goes through
 * here, so that there is one place that decides how.
 *
 * By default it is direct: openat2 in the target's root through
 * /proc/PID/root, /proc/PID/map_files, /proc/PID/exe and auxv, the host's
 * debug store, and process_vm_readv. That is what the tool itself and the
 * unit tests use.
 *
 * A sandboxed worker (worker/sandbox.h) can do none of that: it runs as an
 * unprivileged uid, opens no path at all and may not read another
 * process's memory. It installs a broker instead: every open is a request
 * that a privileged process answers with a read-only descriptor it opened
 * and checked (worker/broker.h), and memory is read with pread on a
 * /proc/PID/mem descriptor opened before the privileges were dropped (the
 * kernel checks access when mem is opened, not at each read; the
 * descriptor is read-only, so no write into the target is possible).
 *
 * The broker is process-wide state because the sandbox is: a worker
 * process either may open paths or may not.
 */
#ifndef DIAG_SYMBOLIZE_TARGET_ACCESS_H
#define DIAG_SYMBOLIZE_TARGET_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "symbolize/symbolize.h"

/* The target's files that are not modules. */
enum target_file {
	TARGET_FILE_EXE = 1, /* /proc/PID/exe: the executable (an ELF) */
	TARGET_FILE_AUXV,    /* /proc/PID/auxv */
	TARGET_FILE_PERFMAP, /* /tmp/perf-PID.map, as perfmap_check accepts it */
};

/* What a broker answers. Each open returns a read-only O_CLOEXEC fd or
 * -errno; the privileged side checks what it hands out (worker/broker.h). */
struct target_broker {
	/* The file of a mapping of the target, as symbolize_open_mapped. */
	int (*open_mapped)(void *arg, const struct maps_entry *e);
	/* A separate debug file by path: in the target's root (confined
	 * there) or the host's (an absolute path); no symlink at the end. */
	int (*open_debug)(void *arg, bool in_target_root, const char *path);
	int (*open_file)(void *arg, enum target_file which);
	/* A debug file by build-id from debuginfod (--debuginfod), or NULL:
	 * the fetch is the broker's, never the sandboxed worker's. */
	int (*fetch_debuginfo)(void *arg, const unsigned char *build_id, size_t len);
	void *arg;
	int mem_fd;        /* /proc/PID/mem, read-only, or -1 */
	bool foreign_root; /* the target's / is not the host's */
};

/* Route every later access of this process through b (copied). Called by
 * a worker before it gives up its privileges; never undone. */
void target_access_use_broker(const struct target_broker *b);
/* The broker in use, or NULL (direct access). */
const struct target_broker *target_access_broker(void);

/* The file of a mapping of pid (maps entry e). Direct: openat2 confined to
 * rootfd (O_PATH of /proc/PID/root, may be -1) with the same dev/inode as
 * e, else /proc/PID/map_files. Returns a read-only O_CLOEXEC fd of a
 * regular file no larger than SYM_MAX_FILE_SIZE, or -errno. */
int target_open_mapped(int rootfd, pid_t pid, const struct maps_entry *e);

/* A candidate separate debug file: path inside rootfd (in_target_root:
 * confined there, RESOLVE_IN_ROOT) or on the host, never through a magic
 * link, never blocking, no symlink as the last component. A read-only fd
 * of a regular file, or -errno. */
int target_open_debug(int rootfd, bool in_target_root, const char *path);

/* One of pid's other files. For TARGET_FILE_PERFMAP the file has passed
 * perfmap_check. A read-only O_CLOEXEC fd or -errno. */
int target_open_file(pid_t pid, enum target_file which);

/* Whether pid's / is another than ours (a container), as far as can be
 * told (false when unknown). */
bool target_foreign_root(pid_t pid);

/* Read n ranges of pid's memory (remote[i] into local[i], same lengths),
 * all or nothing: 0, -EFAULT for a short read, or -errno. */
int target_read_ranges(pid_t pid, const struct iovec *local, const struct iovec *remote, size_t n);
/* One range. */
int target_read(pid_t pid, uint64_t addr, void *buf, size_t len);

#endif
