/* SPDX-License-Identifier: MIT */
#ifndef DIAG_TIMELINE_PROC_SAMPLER_H
#define DIAG_TIMELINE_PROC_SAMPLER_H

/*
 * proc_sampler: the runtime counters of one process, read from /proc from
 * the outside, one `struct timeline_sample` per call.
 *
 * Cost is the point of this module: it runs every interval for the whole
 * capture. proc_sampler_open() opens /proc/PID/{stat,status,io,limits} and
 * the fd and task directories once; each sample re-reads the files with
 * pread(fd, buf, n, 0), which procfs seq files regenerate on every read at
 * offset 0, and rewinds the directories instead of reopening them. The
 * per-sample syscalls are then:
 *
 *   stat, status, io, limits 4 preads
 *   open_fds                 1 fstat of the fd directory on Linux >= 6.2,
 *                            which reports the count as st_size; otherwise
 *                            one getdents64 pass (a few calls per 1000 fds)
 *   fds_by_type              only with PROC_SAMPLER_FD_TYPES: one getdents
 *                            pass plus one readlinkat per fd, because the
 *                            type (socket:, pipe:, anon_inode:, a path) is
 *                            only in the link text. Linear in open fds, so
 *                            it is opt-in; bench/timeline prints what it
 *                            costs. Without the flag the five are -1.
 *   child_procs              single-threaded target: 1 pread of the
 *                            leader's task/PID/children, kept open;
 *                            otherwise one getdents pass over task/ plus an
 *                            open+read+close of task/TID/children per thread
 *                            (not cached: a recycled tid would leave a
 *                            stale file that reads empty)
 *   zombie_children          open+read+close of /proc/CHILD/stat per child
 *
 * bench/timeline prints the figures; on the development VM a sample costs
 * about 5x one pread of stat for a single-threaded target, plus about 7 us
 * per thread, plus (with fd types) about 4 us per open fd.
 *
 * Keeping the files open also pins the process: once it has exited, reads
 * of the open files fail with ESRCH even if its pid has been reused, so a
 * sampler never silently starts describing a stranger.
 *
 * Unknown is -1: a counter that cannot be read (permission, a kernel
 * without the file, a kernel thread without memory) is -1, never 0, and the
 * JSON line says -1 too, so a reader cannot average it into a false zero.
 * goroutines and heap_live_bytes are always -1 here; the Go runtime reader
 * fills them for Go targets.
 *
 * Each sampler holds 8 descriptors of the calling process (/proc and 7
 * under /proc/PID) and about 50 KiB of buffers.
 *
 * No allocation after proc_sampler_open(): buffers live in the sampler.
 * Not thread-safe; one sampler per thread. Out of memory: open fails with
 * -ENOMEM.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The counters, in JSON order. TIMELINE_FDS_* are the members of the JSON
 * object fds_by_type; by name they are "fds_socket", "fds_pipe", ... so a
 * threshold can name them.
 */
enum timeline_counter {
	TIMELINE_RSS_BYTES,
	TIMELINE_RSS_ANON_BYTES,
	TIMELINE_RSS_FILE_BYTES,
	TIMELINE_VM_SIZE_BYTES,
	TIMELINE_THREADS,
	TIMELINE_OPEN_FDS,
	TIMELINE_FD_LIMIT,
	TIMELINE_FDS_SOCKET,
	TIMELINE_FDS_PIPE,
	TIMELINE_FDS_FILE,
	TIMELINE_FDS_ANON_INODE,
	TIMELINE_FDS_OTHER,
	TIMELINE_CHILD_PROCS,
	TIMELINE_ZOMBIE_CHILDREN,
	TIMELINE_CPU_USER_NS,
	TIMELINE_CPU_SYS_NS,
	TIMELINE_MINOR_FAULTS,
	TIMELINE_MAJOR_FAULTS,
	TIMELINE_VOLUNTARY_CTXT_SWITCHES,
	TIMELINE_NONVOLUNTARY_CTXT_SWITCHES,
	TIMELINE_IO_READ_BYTES,
	TIMELINE_IO_WRITE_BYTES,
	TIMELINE_GOROUTINES,
	TIMELINE_HEAP_LIVE_BYTES,
	TIMELINE_COUNTER_COUNT
};

/*
 * One sample. Counters are int64_t, -1 when unknown. Memory in bytes, CPU
 * time in nanoseconds (utime/stime ticks * 1e9 / _SC_CLK_TCK, so the
 * resolution is a tick, usually 10 ms), faults and context switches
 * cumulative since the process started, io_*_bytes the storage-layer
 * read_bytes/write_bytes of /proc/PID/io (not rchar/wchar). fd_limit is the
 * soft RLIMIT_NOFILE (INT64_MAX if unlimited). child_procs counts the
 * children of every thread, as a process's children belong to the thread
 * that forked them; zombie_children is how many of those have exited and
 * not been reaped.
 */
struct timeline_sample {
	int64_t t_realtime_ns;   /* CLOCK_REALTIME when taken: the JSON `t` */
	int64_t t_monotonic_ns;  /* CLOCK_MONOTONIC: feed the watchdog this */
	int64_t rss_bytes;
	int64_t rss_anon_bytes;
	int64_t rss_file_bytes;
	int64_t vm_size_bytes;
	int64_t threads;
	int64_t open_fds;
	int64_t fd_limit;
	int64_t fds_socket;
	int64_t fds_pipe;
	int64_t fds_file;        /* link text is a path: files, dirs, devices */
	int64_t fds_anon_inode;  /* eventfd, epoll, timerfd, signalfd, ... */
	int64_t fds_other;       /* anything else (e.g. net:[], mnt:[]) */
	int64_t child_procs;
	int64_t zombie_children;
	int64_t cpu_user_ns;
	int64_t cpu_sys_ns;
	int64_t minor_faults;
	int64_t major_faults;
	int64_t voluntary_ctxt_switches;
	int64_t nonvoluntary_ctxt_switches;
	int64_t io_read_bytes;
	int64_t io_write_bytes;
	int64_t goroutines;      /* always -1 from proc_sampler */
	int64_t heap_live_bytes; /* always -1 from proc_sampler */
};

/* Set every counter to -1 and both times to 0. */
void timeline_sample_init(struct timeline_sample *s);

/* The counter's name ("rss_bytes", "fds_socket", ...), or NULL if c is out
 * of range. Static strings. */
const char *timeline_counter_name(enum timeline_counter c);

/* All TIMELINE_COUNTER_COUNT names in enum order: the names array to give
 * leakwatch_new() alongside timeline_sample_values(). Static. */
const char *const *timeline_counter_names(void);

/* The counter called name, or -ENOENT. */
int timeline_counter_lookup(const char *name);

/* A pointer into s for counter c (so callers can also set goroutines and
 * heap_live_bytes by enum), or NULL if c is out of range. */
int64_t *timeline_sample_counter(struct timeline_sample *s, enum timeline_counter c);

/* Copy the counters of s in enum order into out[TIMELINE_COUNTER_COUNT],
 * the layout leakwatch_feed() takes with timeline_counter_name() names. */
void timeline_sample_values(const struct timeline_sample *s,
			    int64_t out[TIMELINE_COUNTER_COUNT]);

/*
 * Format s as one JSON object followed by '\n' into buf:
 *   {"t":"2026-11-30T06:12:01.123Z","rss_bytes":...,"fds_by_type":{"socket":
 *   ...,"other":...},...,"heap_live_bytes":-1}
 * `t` is RFC 3339 UTC with milliseconds, from t_realtime_ns. Keys appear in
 * enum order, the fds_* as one nested object. Returns the length written
 * (without the terminating NUL), or -ENOSPC if size is too small (buf then
 * holds a truncated, NUL-terminated string that must not be written out).
 * TIMELINE_JSON_MAX is always enough.
 */
#define TIMELINE_JSON_MAX 1024
int timeline_sample_format_json(const struct timeline_sample *s, char *buf, size_t size);

/* Flags for proc_sampler_open(). */
enum {
	/* Classify open fds by type (readlinkat per fd, see above). */
	PROC_SAMPLER_FD_TYPES = 1u << 0,
};

struct proc_sampler;

/*
 * Open a sampler on pid. Returns 0 and *ret, or -ESRCH if there is no such
 * process, -EINVAL on a bad pid or flags, -ENOMEM, or another -errno from
 * opening /proc/PID/stat (which every user may read, so in practice only a
 * missing /proc). Files that cannot be opened for lack of permission (io,
 * the fd directory of another user's process) do not fail the open: their
 * counters read -1. The caller frees *ret with proc_sampler_free().
 */
int proc_sampler_open(pid_t pid, unsigned flags, struct proc_sampler **ret);

/* Close every file and free. NULL is a no-op. */
void proc_sampler_free(struct proc_sampler *ps);

/* The pid the sampler was opened on. */
pid_t proc_sampler_pid(const struct proc_sampler *ps);

/*
 * Take one sample into *ret. Returns 0 (some counters may be -1), or
 * -ESRCH once the process has exited (including while it is a zombie
 * waiting to be reaped: its counters no longer describe a running program;
 * a zombie leader whose other threads still run is not gone), in which case
 * *ret is untouched. Other failures of individual files only
 * make their counters -1.
 */
int proc_sampler_sample(struct proc_sampler *ps, struct timeline_sample *ret);

#endif
