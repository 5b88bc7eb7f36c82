/*
 * JIT symbol maps, /tmp/perf-PID.map, the format perf defined and JITs
 * (V8, the JVM via perf-map-agent, LuaJIT, ...) write: one "START SIZE name"
 * per line, START and SIZE in hex (with or without 0x). A JIT may reuse code
 * memory, so a later line for an address wins over an earlier one.
 *
 * The file is named by the target's PID in our /tmp; it is opened without
 * following symlinks and used only when perfmap_check trusts it (anyone can
 * create files in /tmp: a map another user wrote could name a root
 * process's frames).
 */
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/internal.h"
#include "symbolize/arrays.h"

#define PERFMAP_MAX_SIZE (256u << 20)

struct perfmap_entry {
	uint64_t start, size;
	size_t seq; /* line number: later lines win */
	const char *name;
};

struct perfmap {
	char *text; /* the file, names point into it */
	struct perfmap_entry *e;
	size_t n;
	uint64_t max_size; /* largest SIZE: bounds the backward scan */
};

static int entry_cmp(const void *a, const void *b)
{
	const struct perfmap_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int read_all(int fd, char **ret, size_t *ret_len)
{
	struct stat st;
	size_t len = 0, cap;
	char *buf;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > PERFMAP_MAX_SIZE)
		return -EFBIG;
	/* The JIT may still be appending: read to EOF, not to st_size. */
	cap = (size_t)st.st_size + 4096;
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap >= PERFMAP_MAX_SIZE)
				break;
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

static int parse(struct perfmap *pm, size_t len)
{
	size_t cap = 0;
	char *p = pm->text, *end = pm->text + len;

	while (p < end) {
		char *eol = memchr(p, '\n', (size_t)(end - p)), *q;
		unsigned long long start, size;

		if (eol)
			*eol = '\0';
		errno = 0;
		start = strtoull(p, &q, 16);
		if (q == p || *q != ' ' || errno)
			goto next;
		p = q + 1;
		size = strtoull(p, &q, 16);
		if (q == p || *q != ' ' || errno || size == 0)
			goto next;
		if (pm->n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct perfmap_entry *ne = realloc(pm->e, ncap * sizeof(*ne));

			if (!ne)
				return -ENOMEM;
			pm->e = ne;
			cap = ncap;
		}
		pm->e[pm->n] = (struct perfmap_entry){ start, size, pm->n, q + 1 };
		pm->n++;
		if (size > pm->max_size)
			pm->max_size = size;
next:
		p = eol ? eol + 1 : end;
	}
	qsort(pm->e, pm->n, sizeof(*pm->e), entry_cmp);
	return 0;
}

int perfmap_check(int fd, pid_t pid, char *why, size_t why_size)
{
	struct stat st, proc;
	char path[32];

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (fstat(fd, &st) < 0 || stat(path, &proc) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_size, "not a regular file");
		return -EPERM;
	}
	if (st.st_uid != 0 && st.st_uid != proc.st_uid) {
		snprintf(why, why_size, "owned by uid %u, neither root nor the target's uid %u",
			 (unsigned)st.st_uid, (unsigned)proc.st_uid);
		return -EPERM;
	}
	if (st.st_mode & S_IWOTH) {
		snprintf(why, why_size, "writable by anyone (mode %04o)", (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int perfmap_open(pid_t pid, char path[64])
{
	char own[64];
	if (!path)
		path = own;
	snprintf(path, 64, "/tmp/perf-%d.map", (int)pid);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int perfmap_load(pid_t pid, struct perfmap **ret)
{
	struct perfmap *pm;
	size_t len = 0;
	int fd, r;

	fd = perfmap_open(pid, NULL);
	if (fd < 0)
		return fd;
	char why[128];
	r = perfmap_check(fd, pid, why, sizeof(why));
	if (r < 0) {
		close(fd);
		return r;
	}
	pm = calloc(1, sizeof(*pm));
	if (!pm) {
		close(fd);
		return -ENOMEM;
	}
	r = read_all(fd, &pm->text, &len);
	close(fd);
	if (r == 0)
		r = parse(pm, len);
	if (r < 0) {
		perfmap_free(pm);
		return r;
	}
	*ret = pm;
	return 0;
}

const char *perfmap_find(const struct perfmap *pm, uint64_t pc, uint64_t *ret_start)
{
	const struct perfmap_entry *best = NULL;
	/* First entry with start > pc; then look back at every entry that
	 * could still cover pc, keeping the most recently written. */
	size_t lo = addr_first_above(pm->e, pm->n, sizeof(pm->e[0]),
				     offsetof(struct perfmap_entry, start), pc);
	for (size_t i = lo; i-- > 0;) {
		const struct perfmap_entry *e = &pm->e[i];

		if (pc - e->start >= pm->max_size)
			break;
		if (pc - e->start < e->size && (!best || e->seq > best->seq))
			best = e;
	}
	if (!best)
		return NULL;
	*ret_start = best->start;
	return best->name;
}

void perfmap_free(struct perfmap *pm)
{
	if (!pm)
		return;
	free(pm->text);
	free(pm->e);
	free(pm);
}
