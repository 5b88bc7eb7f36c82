/* SPDX-License-Identifier: MIT */
/* newcomers: see newcomers.h. */
#include "timeline/newcomers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double newcomers_boottime_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* comm and start time (CLOCK_BOOTTIME seconds) from a stat file. */
static bool read_stat(const char *path, char comm[64], double *started)
{
	char buf[1024];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return false;
	snprintf(comm, 64, "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
	/* Field 3 (state) follows ") "; starttime is field 22. */
	char *p = close_paren + 2;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return false;
	long hz = sysconf(_SC_CLK_TCK);
	*started = (double)strtoull(p, NULL, 10) / (double)(hz > 0 ? hz : 100);
	return true;
}

struct list {
	struct newcomer *v;
	size_t n, cap, more, max;
};

static int add(struct list *l, pid_t id, const char *comm, double started)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].id == id)
			return 0;
	if (l->n == l->max) {
		l->more++;
		return 0;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct newcomer *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	struct newcomer *c = &l->v[l->n++];
	c->id = id;
	snprintf(c->comm, sizeof(c->comm), "%s", comm);
	c->started_s = started;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	pid_t x = ((const struct newcomer *)a)->id, y = ((const struct newcomer *)b)->id;
	return (x > y) - (x < y);
}

static int collect(pid_t pid, double since_s, size_t max, bool children, struct newcomer **ret,
		   size_t *ret_n, size_t *ret_more)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	struct list l = {.max = max};
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		if (*end || end == e->d_name)
			continue;
		char comm[64];
		double started;
		if (!children) {
			snprintf(path, sizeof(path), "/proc/%d/task/%ld/stat", (int)pid, tid);
			if (read_stat(path, comm, &started) && started >= since_s)
				r = add(&l, (pid_t)tid, comm, started);
			continue;
		}
		char kids[4096];
		snprintf(path, sizeof(path), "/proc/%d/task/%ld/children", (int)pid, tid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, kids, sizeof(kids) - 1);
		close(fd);
		if (n <= 0)
			continue;
		kids[n] = '\0';
		for (char *p = kids; r == 0 && *p;) {
			long child = strtol(p, &end, 10);
			if (end == p)
				break;
			p = end;
			snprintf(path, sizeof(path), "/proc/%ld/stat", child);
			if (read_stat(path, comm, &started) && started >= since_s)
				r = add(&l, (pid_t)child, comm, started);
		}
	}
	closedir(d);
	if (r < 0) {
		free(l.v);
		return r;
	}
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), cmp_id);
	*ret = l.v;
	*ret_n = l.n;
	*ret_more = l.more;
	return 0;
}

int newcomers_threads(pid_t pid, double since_s, size_t max, struct newcomer **ret, size_t *ret_n,
		      size_t *ret_more)
{
	return collect(pid, since_s, max, false, ret, ret_n, ret_more);
}

int newcomers_children(pid_t pid, double since_s, size_t max, struct newcomer **ret, size_t *ret_n,
		       size_t *ret_more)
{
	return collect(pid, since_s, max, true, ret, ret_n, ret_more);
}
