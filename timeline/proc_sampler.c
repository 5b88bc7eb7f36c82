/* SPDX-License-Identifier: MIT */
/*
 * /proc readers for one process. See proc_sampler.h for the cost model; the
 * comments here are about the file formats and the kernel's habits.
 */
#include "timeline/proc_sampler.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* /proc/PID/status is about 1.5 KiB and the fields we want include the last
 * ones (ctxt switches), so the buffer must hold all of it. */
#define FILE_BUF 8192
/* getdents64 batch: ~40 entries per KiB of fd names. */
#define DENTS_BUF 32768

struct proc_sampler {
	pid_t pid;
	unsigned flags;
	int proc_fd;     /* /proc, for children's stat files */
	int stat_fd;
	int status_fd;   /* -1 if unavailable */
	int io_fd;       /* -1 if unavailable (needs ptrace read access) */
	int limits_fd;   /* -1 if unavailable */
	int fd_dir;      /* -1 if unavailable (other user's process) */
	int task_dir;    /* -1 if unavailable */
	int main_children_fd; /* task/PID/children: the single-thread fast path */
	double ns_per_tick;
	char buf[FILE_BUF];
	char aux[FILE_BUF];
	char dents[DENTS_BUF];
};

/* ---- counters by name ---- */

/* One list drives both tables, so names and offsets cannot drift apart. */
#define COUNTERS(X)                                                        \
	X(TIMELINE_RSS_BYTES, rss_bytes)                                   \
	X(TIMELINE_RSS_ANON_BYTES, rss_anon_bytes)                         \
	X(TIMELINE_RSS_FILE_BYTES, rss_file_bytes)                         \
	X(TIMELINE_VM_SIZE_BYTES, vm_size_bytes)                           \
	X(TIMELINE_THREADS, threads)                                       \
	X(TIMELINE_OPEN_FDS, open_fds)                                     \
	X(TIMELINE_FD_LIMIT, fd_limit)                                     \
	X(TIMELINE_FDS_SOCKET, fds_socket)                                 \
	X(TIMELINE_FDS_PIPE, fds_pipe)                                     \
	X(TIMELINE_FDS_FILE, fds_file)                                     \
	X(TIMELINE_FDS_ANON_INODE, fds_anon_inode)                         \
	X(TIMELINE_FDS_OTHER, fds_other)                                   \
	X(TIMELINE_CHILD_PROCS, child_procs)                               \
	X(TIMELINE_ZOMBIE_CHILDREN, zombie_children)                       \
	X(TIMELINE_CPU_USER_NS, cpu_user_ns)                               \
	X(TIMELINE_CPU_SYS_NS, cpu_sys_ns)                                 \
	X(TIMELINE_MINOR_FAULTS, minor_faults)                             \
	X(TIMELINE_MAJOR_FAULTS, major_faults)                             \
	X(TIMELINE_VOLUNTARY_CTXT_SWITCHES, voluntary_ctxt_switches)       \
	X(TIMELINE_NONVOLUNTARY_CTXT_SWITCHES, nonvoluntary_ctxt_switches) \
	X(TIMELINE_IO_READ_BYTES, io_read_bytes)                           \
	X(TIMELINE_IO_WRITE_BYTES, io_write_bytes)                         \
	X(TIMELINE_GOROUTINES, goroutines)                                 \
	X(TIMELINE_HEAP_LIVE_BYTES, heap_live_bytes)

#define NAME(e, f) [e] = #f,
static const char *const counter_names[TIMELINE_COUNTER_COUNT] = { COUNTERS(NAME) };
#undef NAME
#define OFF(e, f) [e] = offsetof(struct timeline_sample, f),
static const size_t counter_off[TIMELINE_COUNTER_COUNT] = { COUNTERS(OFF) };
#undef OFF

void timeline_sample_init(struct timeline_sample *s)
{
	s->t_realtime_ns = 0;
	s->t_monotonic_ns = 0;
	for (int c = 0; c < TIMELINE_COUNTER_COUNT; c++)
		*timeline_sample_counter(s, (enum timeline_counter)c) = -1;
}

const char *timeline_counter_name(enum timeline_counter c)
{
	if ((unsigned)c >= TIMELINE_COUNTER_COUNT)
		return NULL;
	return counter_names[c];
}

const char *const *timeline_counter_names(void)
{
	return counter_names;
}

int timeline_counter_lookup(const char *name)
{
	for (int c = 0; c < TIMELINE_COUNTER_COUNT; c++)
		if (strcmp(counter_names[c], name) == 0)
			return c;
	return -ENOENT;
}

int64_t *timeline_sample_counter(struct timeline_sample *s, enum timeline_counter c)
{
	if ((unsigned)c >= TIMELINE_COUNTER_COUNT)
		return NULL;
	return (int64_t *)((char *)s + counter_off[c]);
}

void timeline_sample_values(const struct timeline_sample *s,
			    int64_t out[TIMELINE_COUNTER_COUNT])
{
	for (int c = 0; c < TIMELINE_COUNTER_COUNT; c++)
		out[c] = *(const int64_t *)((const char *)s + counter_off[c]);
}

/* ---- JSON ---- */

int timeline_sample_format_json(const struct timeline_sample *s, char *buf, size_t size)
{
	struct tm tm;
	time_t sec = (time_t)(s->t_realtime_ns / 1000000000);
	int ms = (int)((s->t_realtime_ns % 1000000000) / 1000000);
	size_t len = 0;
	int n;

	if (ms < 0) { /* before 1970: keep the fraction positive */
		sec -= 1;
		ms += 1000;
	}
	if (!gmtime_r(&sec, &tm))
		memset(&tm, 0, sizeof(tm));

#define PUT(...)                                                         \
	do {                                                             \
		n = snprintf(buf + len, size > len ? size - len : 0, __VA_ARGS__); \
		if (n < 0)                                               \
			return -EINVAL;                                  \
		len += (size_t)n;                                        \
	} while (0)

	if (size == 0)
		return -ENOSPC;
	PUT("{\"t\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
	for (int c = 0; c < TIMELINE_COUNTER_COUNT; c++) {
		int64_t v = *(const int64_t *)((const char *)s + counter_off[c]);

		switch (c) {
		case TIMELINE_FDS_SOCKET:
			PUT(",\"fds_by_type\":{\"socket\":%" PRId64, v);
			break;
		case TIMELINE_FDS_PIPE:
			PUT(",\"pipe\":%" PRId64, v);
			break;
		case TIMELINE_FDS_FILE:
			PUT(",\"file\":%" PRId64, v);
			break;
		case TIMELINE_FDS_ANON_INODE:
			PUT(",\"anon_inode\":%" PRId64, v);
			break;
		case TIMELINE_FDS_OTHER:
			PUT(",\"other\":%" PRId64 "}", v);
			break;
		default:
			PUT(",\"%s\":%" PRId64, counter_names[c], v);
		}
	}
	PUT("}\n");
#undef PUT
	if (len >= size)
		return -ENOSPC;
	return (int)len;
}

/* ---- small parsers ---- */

/* Read the whole of an open /proc file into buf, NUL-terminated. seq files
 * regenerate on a read at offset 0, so this is a fresh snapshot. */
static ssize_t pread_all(int fd, char *buf, size_t size)
{
	ssize_t n;

	do
		n = pread(fd, buf, size - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

static int64_t parse_i64(const char *p, const char **end)
{
	int64_t v = 0;
	bool any = false;

	while (*p == ' ' || *p == '\t')
		p++;
	while (*p >= '0' && *p <= '9') {
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p++ - '0');
		any = true;
	}
	if (end)
		*end = p;
	return any ? v : -1;
}

/*
 * /proc/PID/stat: "pid (comm) S ppid ...". comm may hold spaces and ')', so
 * fields are counted from the *last* ')'. Returns the state character, or 0
 * if the line is malformed.
 */
static char parse_stat(const char *buf, double ns_per_tick, struct timeline_sample *s)
{
	const char *p = strrchr(buf, ')');
	int64_t f[12];
	char state;

	if (!p || p[1] != ' ' || !p[2])
		return 0;
	p += 2;
	state = *p++;
	/* f[k] is field k+4 of proc(5): ppid pgrp session tty_nr tpgid flags
	 * minflt cminflt majflt cmajflt utime stime. */
	for (int k = 0; k < 12; k++) {
		while (*p == ' ')
			p++;
		if (*p == '-') /* tty_nr/tpgid may be -1 */
			p++;
		f[k] = parse_i64(p, &p);
	}
	s->minor_faults = f[6];
	s->major_faults = f[8];
	/* Out-of-range values (a corrupt or hostile line) read as unknown. */
	double user = (double)f[10] * ns_per_tick, sys = (double)f[11] * ns_per_tick;
	s->cpu_user_ns = f[10] < 0 || !(user < 9.2e18) ? -1 : (int64_t)user;
	s->cpu_sys_ns = f[11] < 0 || !(sys < 9.2e18) ? -1 : (int64_t)sys;
	return state;
}

/* "Key:   value" lines, as in status and io. */
static const char *line_value(const char *line, const char *key)
{
	size_t n = strlen(key);

	if (strncmp(line, key, n) != 0 || line[n] != ':')
		return NULL;
	return line + n + 1;
}

static void parse_status(const char *buf, struct timeline_sample *s)
{
	static const struct {
		const char *key;
		size_t off;
		int64_t mul;
	} keys[] = {
		{ "VmSize", offsetof(struct timeline_sample, vm_size_bytes), 1024 },
		{ "VmRSS", offsetof(struct timeline_sample, rss_bytes), 1024 },
		{ "RssAnon", offsetof(struct timeline_sample, rss_anon_bytes), 1024 },
		{ "RssFile", offsetof(struct timeline_sample, rss_file_bytes), 1024 },
		{ "Threads", offsetof(struct timeline_sample, threads), 1 },
		{ "voluntary_ctxt_switches", offsetof(struct timeline_sample, voluntary_ctxt_switches), 1 },
		{ "nonvoluntary_ctxt_switches", offsetof(struct timeline_sample, nonvoluntary_ctxt_switches), 1 },
	};

	for (const char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			const char *v = line_value(line, keys[k].key);
			int64_t x;

			if (!v)
				continue;
			x = parse_i64(v, NULL);
			*(int64_t *)((char *)s + keys[k].off) =
				x < 0 || x > INT64_MAX / keys[k].mul ? -1 : x * keys[k].mul;
			break;
		}
	}
}

static void parse_io(const char *buf, struct timeline_sample *s)
{
	for (const char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		const char *v;

		if ((v = line_value(line, "read_bytes")))
			s->io_read_bytes = parse_i64(v, NULL);
		else if ((v = line_value(line, "write_bytes")))
			s->io_write_bytes = parse_i64(v, NULL);
	}
}

/* "Max open files            1024                 1048576              files" */
static int64_t parse_limits_nofile(const char *buf)
{
	const char *p = strstr(buf, "Max open files");

	if (!p)
		return -1;
	p += strlen("Max open files");
	while (*p == ' ')
		p++;
	if (strncmp(p, "unlimited", 9) == 0)
		return INT64_MAX;
	return parse_i64(p, NULL);
}

/* ---- open / free ---- */

static int open_at(int dirfd, const char *path, int flags)
{
	return openat(dirfd, path, flags | O_RDONLY | O_CLOEXEC);
}

void proc_sampler_free(struct proc_sampler *ps)
{
	if (!ps)
		return;
	int fds[] = { ps->proc_fd, ps->stat_fd, ps->status_fd, ps->io_fd,
		      ps->limits_fd, ps->fd_dir, ps->task_dir, ps->main_children_fd };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(ps);
}

int proc_sampler_open(pid_t pid, unsigned flags, struct proc_sampler **ret)
{
	struct proc_sampler *ps;
	char path[64];
	long tck;
	int r;

	if (pid <= 0 || (flags & ~(unsigned)PROC_SAMPLER_FD_TYPES))
		return -EINVAL;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	ps->pid = pid;
	ps->flags = flags;
	ps->stat_fd = ps->status_fd = ps->io_fd = ps->limits_fd = -1;
	ps->fd_dir = ps->task_dir = ps->main_children_fd = -1;
	tck = sysconf(_SC_CLK_TCK);
	ps->ns_per_tick = 1e9 / (double)(tck > 0 ? tck : 100);

	ps->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ps->proc_fd < 0) {
		r = -errno;
		goto fail;
	}
	snprintf(path, sizeof(path), "%d/stat", (int)pid);
	ps->stat_fd = open_at(ps->proc_fd, path, 0);
	if (ps->stat_fd < 0) {
		r = errno == ENOENT ? -ESRCH : -errno;
		goto fail;
	}
	/* The rest are best effort: a missing one is a column of -1. */
	snprintf(path, sizeof(path), "%d/status", (int)pid);
	ps->status_fd = open_at(ps->proc_fd, path, 0);
	snprintf(path, sizeof(path), "%d/io", (int)pid);
	ps->io_fd = open_at(ps->proc_fd, path, 0);
	snprintf(path, sizeof(path), "%d/limits", (int)pid);
	ps->limits_fd = open_at(ps->proc_fd, path, 0);
	snprintf(path, sizeof(path), "%d/fd", (int)pid);
	ps->fd_dir = open_at(ps->proc_fd, path, O_DIRECTORY);
	snprintf(path, sizeof(path), "%d/task", (int)pid);
	ps->task_dir = open_at(ps->proc_fd, path, O_DIRECTORY);
	snprintf(path, sizeof(path), "%d/task/%d/children", (int)pid, (int)pid);
	ps->main_children_fd = open_at(ps->proc_fd, path, 0);

	/* A process that died between the opens would leave some of them
	 * failed for the wrong reason; say so now rather than sample -1s. */
	if (pread_all(ps->stat_fd, ps->buf, sizeof(ps->buf)) == -ESRCH) {
		r = -ESRCH;
		goto fail;
	}
	*ret = ps;
	return 0;
fail:
	proc_sampler_free(ps);
	return r;
}

pid_t proc_sampler_pid(const struct proc_sampler *ps)
{
	return ps->pid;
}

/* ---- directories ---- */

/* The kernel's struct linux_dirent64, which glibc does not export under
 * this name; we only need the record length and the name. */
struct dirent64_raw {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

typedef void (*dent_fn)(struct proc_sampler *ps, const char *name, void *ctx);

/* One pass over a directory kept open: rewind, then getdents64 until the
 * end, calling fn for every numeric entry. Returns the number of entries
 * or -errno. */
static int64_t scan_dir(struct proc_sampler *ps, int dirfd, dent_fn fn, void *ctx)
{
	int64_t count = 0;

	if (lseek(dirfd, 0, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		ssize_t n = getdents64(dirfd, ps->dents, sizeof(ps->dents));

		if (n < 0)
			return errno == EINTR ? -EINTR : -errno;
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			struct dirent64_raw *d = (struct dirent64_raw *)(ps->dents + off);

			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue; /* ".", ".." */
			count++;
			if (fn)
				fn(ps, d->d_name, ctx);
		}
	}
	return count;
}

struct fd_types {
	int64_t socket, pipe, file, anon_inode, other;
};

static void classify_fd(struct proc_sampler *ps, const char *name, void *ctx)
{
	struct fd_types *ft = ctx;
	char link[64];
	ssize_t n = readlinkat(ps->fd_dir, name, link, sizeof(link) - 1);

	if (n < 0) {
		/* Closed between getdents and readlink: it is not open any more,
		 * so it belongs to no type. The total may be off by these. */
		return;
	}
	link[n] = '\0';
	if (link[0] == '/')
		ft->file++;
	else if (strncmp(link, "socket:", 7) == 0)
		ft->socket++;
	else if (strncmp(link, "pipe:", 5) == 0)
		ft->pipe++;
	else if (strncmp(link, "anon_inode:", 11) == 0)
		ft->anon_inode++;
	else
		ft->other++;
}

static void sample_fds(struct proc_sampler *ps, struct timeline_sample *s)
{
	struct fd_types ft = { 0 };
	struct stat st;
	int64_t n;

	if (ps->fd_dir < 0)
		return;
	if (!(ps->flags & PROC_SAMPLER_FD_TYPES)) {
		/* Linux >= 6.2 reports the number of open fds as the fd
		 * directory's size; older kernels report 0, and then we count. */
		if (fstat(ps->fd_dir, &st) == 0 && st.st_size > 0) {
			s->open_fds = st.st_size;
			return;
		}
		n = scan_dir(ps, ps->fd_dir, NULL, NULL);
		s->open_fds = n < 0 ? -1 : n;
		return;
	}
	n = scan_dir(ps, ps->fd_dir, classify_fd, &ft);
	if (n < 0)
		return;
	s->open_fds = n;
	s->fds_socket = ft.socket;
	s->fds_pipe = ft.pipe;
	s->fds_file = ft.file;
	s->fds_anon_inode = ft.anon_inode;
	s->fds_other = ft.other;
}

struct children {
	int64_t procs, zombies;
	bool failed;
};

static void check_child(struct proc_sampler *ps, int64_t pid, struct children *ch)
{
	char path[32];
	const char *p;
	ssize_t n;
	int fd;

	ch->procs++;
	snprintf(path, sizeof(path), "%" PRId64 "/stat", pid);
	fd = open_at(ps->proc_fd, path, 0);
	if (fd < 0)
		return; /* reaped since the children file was read */
	n = pread_all(fd, ps->aux, sizeof(ps->aux));
	close(fd);
	if (n <= 0)
		return;
	p = strrchr(ps->aux, ')');
	if (p && p[1] == ' ' && p[2] == 'Z')
		ch->zombies++;
}

/* task/TID/children is a space-separated list of pids that may be longer
 * than one read, so numbers are assembled across reads. */
static void read_children(struct proc_sampler *ps, int fd, struct children *ch)
{
	int64_t cur = 0;
	bool in_num = false;
	off_t off = 0;

	for (;;) {
		ssize_t n = pread(fd, ps->buf, sizeof(ps->buf), off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += n;
		for (ssize_t i = 0; i < n; i++) {
			char c = ps->buf[i];

			if (c >= '0' && c <= '9') {
				cur = cur * 10 + (c - '0');
				in_num = true;
			} else if (in_num) {
				check_child(ps, cur, ch);
				cur = 0;
				in_num = false;
			}
		}
		/* No early exit on a short read: seq_file hands out at most
		 * about a page per read (2000 children come in three reads),
		 * so only a read of 0 means the end. */
	}
	if (in_num)
		check_child(ps, cur, ch);
}

static void scan_task_children(struct proc_sampler *ps, const char *tid, void *ctx)
{
	struct children *ch = ctx;
	char path[48];
	int fd;

	snprintf(path, sizeof(path), "%s/children", tid);
	fd = open_at(ps->task_dir, path, 0);
	if (fd < 0) {
		/* ENOENT: the thread exited since getdents, or the kernel lacks
		 * CONFIG_PROC_CHILDREN. Only the latter matters, and then every
		 * thread fails: see sample_children. */
		if (errno != ENOENT)
			ch->failed = true;
		return;
	}
	read_children(ps, fd, ch);
	close(fd);
}

static void sample_children(struct proc_sampler *ps, struct timeline_sample *s)
{
	struct children ch = { 0 };
	int64_t n;

	if (s->threads == 1 && ps->main_children_fd >= 0) {
		/* One thread, the leader, whose file stays valid for the life
		 * of the process (like stat): skip the directory pass and the
		 * open/close. Multi-threaded processes take the general path,
		 * where per-thread files are not cached because a tid can be
		 * recycled between samples and a stale file would read empty. */
		read_children(ps, ps->main_children_fd, &ch);
		s->child_procs = ch.procs;
		s->zombie_children = ch.zombies;
		return;
	}
	if (ps->task_dir < 0)
		return;
	n = scan_dir(ps, ps->task_dir, scan_task_children, &ch);
	if (n <= 0 || ch.failed)
		return;
	s->child_procs = ch.procs;
	s->zombie_children = ch.zombies;
}

/* ---- one sample ---- */

static int64_t ts_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int proc_sampler_sample(struct proc_sampler *ps, struct timeline_sample *ret)
{
	struct timeline_sample s;
	ssize_t n;
	char state;

	timeline_sample_init(&s);
	s.t_realtime_ns = ts_ns(CLOCK_REALTIME);
	s.t_monotonic_ns = ts_ns(CLOCK_MONOTONIC);

	n = pread_all(ps->stat_fd, ps->buf, sizeof(ps->buf));
	if (n == -ESRCH)
		return -ESRCH;
	if (n > 0) {
		state = parse_stat(ps->buf, ps->ns_per_tick, &s);
		/* Z: exited, not yet reaped; X: being torn down. But stat
		 * shows the leader's state, and a leader that called
		 * pthread_exit() is a zombie while its other threads run on:
		 * the process is gone only if no other thread is listed. */
		if ((state == 'Z' || state == 'X') &&
		    (ps->task_dir < 0 || scan_dir(ps, ps->task_dir, NULL, NULL) <= 1))
			return -ESRCH;
	}

	if (ps->status_fd >= 0) {
		n = pread_all(ps->status_fd, ps->buf, sizeof(ps->buf));
		if (n == -ESRCH)
			return -ESRCH; /* exited since the stat read */
		if (n > 0)
			parse_status(ps->buf, &s);
	}
	if (ps->io_fd >= 0 && pread_all(ps->io_fd, ps->buf, sizeof(ps->buf)) > 0)
		parse_io(ps->buf, &s);

	/* The limits file rather than prlimit(pid): it is pinned to this
	 * process like the others (prlimit takes a pid, which may have been
	 * reused by now), world-readable (prlimit on another user's process
	 * needs CAP_SYS_RESOURCE), and costs one pread either way. */
	if (ps->limits_fd >= 0 && pread_all(ps->limits_fd, ps->buf, sizeof(ps->buf)) > 0)
		s.fd_limit = parse_limits_nofile(ps->buf);

	sample_fds(ps, &s);
	sample_children(ps, &s);
	*ret = s;
	return 0;
}
