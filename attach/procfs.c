#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ssize_t procfs_read_at(int dirfd, const char *path, char *buf, size_t size)
{
	if (size == 0)
		return -EINVAL;
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	while (off < size - 1) {
		ssize_t n = read(fd, buf + off, size - 1 - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	buf[off] = '\0';
	return (ssize_t)off;
}

int procfs_parse_stat(const char *text, struct procfs_stat *ret)
{
	const char *open = strchr(text, '(');
	const char *close = strrchr(text, ')');
	if (!open || !close || close < open || close[1] != ' ')
		return -EINVAL;
	struct procfs_stat st = {0};
	size_t n = (size_t)(close - open - 1);
	if (n >= sizeof(st.comm))
		n = sizeof(st.comm) - 1;
	memcpy(st.comm, open + 1, n);
	st.comm[n] = '\0';

	/* Field 3 (state) starts two bytes after the last ')'. */
	const char *p = close + 2;
	st.state = *p;
	if (!st.state)
		return -EINVAL;
	p++;
	/* Fields 4..23; we index them by number. */
	unsigned long long v[24] = {0};
	for (int field = 4; field <= 23; field++) {
		char *end;
		errno = 0;
		long long x = strtoll(p, &end, 10);
		if (end == p || errno)
			return -EINVAL;
		v[field] = (unsigned long long)x;
		p = end;
	}
	st.ppid = (pid_t)v[4];
	st.flags = (unsigned long)v[9];
	st.utime = v[14];
	st.stime = v[15];
	st.starttime = v[22];
	st.vsize = v[23];
	/* Fields 24..39 (unsigned, some near 2^64): only the last is kept. */
	st.processor = -1;
	for (int field = 24; field <= 39; field++) {
		char *end;
		errno = 0;
		unsigned long long x = strtoull(p, &end, 10);
		if (end == p || errno)
			break;
		if (field == 39 && x < 1u << 20)
			st.processor = (int)x;
		p = end;
	}
	*ret = st;
	return 0;
}

int procfs_status_field(const char *status_text, const char *key, long *ret)
{
	size_t klen = strlen(key);
	const char *p = status_text;
	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
			char *end;
			long v = strtol(p + klen + 1, &end, 10);
			if (end == p + klen + 1)
				return -EINVAL;
			*ret = v;
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}
