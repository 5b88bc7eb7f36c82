/* Time since a thread last ran (last_ran.h). */
#include "last_ran.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

struct last_ran_clock {
	int ncpus;
	int8_t *state; /* per CPU: 1 read, -1 could not be (not ours to run on) */
	uint64_t *now_ns;
};

void last_ran_clock_free(struct last_ran_clock *c)
{
	if (!c)
		return;
	free(c->state);
	free(c->now_ns);
	free(c);
}

/* se.exec_start of a sched file: milliseconds with six decimals, which is
 * nanoseconds exactly. */
static int parse_exec_start(const char *text, uint64_t *ret)
{
	const char *p = strstr(text, "se.exec_start");
	if (!p || !(p = strchr(p, ':')))
		return -EINVAL;
	p++;
	while (*p == ' ')
		p++;
	char *end;
	errno = 0;
	unsigned long long ms = strtoull(p, &end, 10);
	if (end == p || errno || ms > UINT64_MAX / 1000000)
		return -EINVAL;
	uint64_t ns = (uint64_t)ms * 1000000;
	if (*end == '.') {
		uint64_t scale = 100000;
		for (p = end + 1; *p >= '0' && *p <= '9' && scale; p++, scale /= 10)
			ns += (uint64_t)(*p - '0') * scale;
	}
	*ret = ns;
	return 0;
}

/* Our own task clock on cpu: move there, read our se.exec_start (set when
 * we were scheduled in there), move back. */
static int read_cpu_now(int cpu, uint64_t *ret)
{
	cpu_set_t old, one;
	if (sched_getaffinity(0, sizeof(old), &old) < 0)
		return -errno;
	if (!CPU_ISSET(cpu, &old))
		return -EXDEV;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0)
		return -errno;
	char buf[4096];
	ssize_t n = procfs_read_at(AT_FDCWD, "/proc/thread-self/sched", buf, sizeof(buf));
	int r = n > 0 ? parse_exec_start(buf, ret) : n < 0 ? (int)n : -ENOENT;
	/* Check that we read it there (the move is done before setaffinity
	 * returns, but a hotplug could undo it). */
	if (r == 0 && sched_getcpu() != cpu)
		r = -EAGAIN;
	sched_setaffinity(0, sizeof(old), &old);
	return r;
}

struct last_ran_clock *last_ran_clock_read(void)
{
	struct last_ran_clock *c = calloc(1, sizeof(*c));
	long n = sysconf(_SC_NPROCESSORS_CONF);
	if (!c)
		return NULL;
	c->ncpus = n > 0 && n <= CPU_SETSIZE ? (int)n : CPU_SETSIZE;
	c->state = calloc((size_t)c->ncpus, sizeof(*c->state));
	c->now_ns = calloc((size_t)c->ncpus, sizeof(*c->now_ns));
	if (!c->state || !c->now_ns) {
		last_ran_clock_free(c);
		return NULL;
	}
	for (int cpu = 0; cpu < c->ncpus; cpu++)
		c->state[cpu] = read_cpu_now(cpu, &c->now_ns[cpu]) == 0 ? 1 : -1;
	return c;
}

int last_ran_ago(const struct last_ran_clock *c, int task_dirfd, pid_t tid, int cpu,
		 uint64_t *ret_ns)
{
	char path[64], buf[4096];
	if (cpu < 0 || cpu >= c->ncpus || c->state[cpu] < 0)
		return -EXDEV;
	uint64_t then;
	snprintf(path, sizeof(path), "%d/sched", (int)tid);
	ssize_t n = procfs_read_at(task_dirfd, path, buf, sizeof(buf));
	if (n <= 0)
		return n < 0 ? (int)n : -ENOENT;
	int r = parse_exec_start(buf, &then);
	if (r < 0)
		return r;
	if (c->now_ns[cpu] < then)
		return -EAGAIN;
	*ret_ns = c->now_ns[cpu] - then;
	return 0;
}
