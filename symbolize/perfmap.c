/*
 * JIT symbol maps, /tmp/perf-PID.map, the format perf defined and JITs
 * (V8, the JVM via perf-map-agent, LuaJIT, ...) write: one "START SIZE name"
 * per line, START and SIZE in hex (with or without 0x). A JIT may reuse code
 * memory, so a later line for an address wins over an earlier one.
 *
 * Entries overlap (reused memory, or a map that names a whole region and
 * then its functions), and one entry may be huge. A lookup must not scan
 * every entry that might cover a PC: one entry of the whole address space
 * made that every entry, for every sample. So the map is flattened once,
 * when loaded, into disjoint ranges each naming the entry that wins there
 * (a sweep over the entries by start, the covering ones in a heap by line
 * number): at most 2n + 1 ranges, O(n log n) to build, and a lookup is
 * one bisection.
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
#include "symbolize/target_access.h"

#define PERFMAP_MAX_SIZE (256u << 20)

struct perfmap_entry {
	uint64_t start, size;
	size_t seq; /* line number: later lines win */
	const char *name;
};

/* [lo, hi] (inclusive: a range may end at the top of the address space)
 * where entry e wins. */
struct perfmap_range {
	uint64_t lo, hi;
	const struct perfmap_entry *e;
};

struct perfmap {
	char *text; /* the file, names point into it */
	struct perfmap_entry *e;
	size_t n;
	struct perfmap_range *r; /* disjoint, ascending */
	size_t nr;
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

/* The last address e covers (SIZE may run past the top). */
static uint64_t entry_last(const struct perfmap_entry *e)
{
	return e->size - 1 > UINT64_MAX - e->start ? UINT64_MAX : e->start + (e->size - 1);
}

/* A max-heap of entries by line number: the entries that cover the sweep's
 * position, and some that ended behind it (dropped when they reach the
 * top). */
static void heap_push(const struct perfmap_entry **h, size_t *n, const struct perfmap_entry *e)
{
	size_t i = (*n)++;

	while (i && h[(i - 1) / 2]->seq < e->seq) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = e;
}

static void heap_pop(const struct perfmap_entry **h, size_t *n)
{
	const struct perfmap_entry *last = h[--*n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1]->seq > h[c]->seq)
			c++;
		if (h[c]->seq <= last->seq)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
}

/* pm->r from pm->e (sorted by start): sweep from range to range. At each
 * position the winner is the newest entry that has started and not yet
 * ended; it holds until it ends or the next entry starts, the only two
 * things that can change it. Each step either passes a start or ends the
 * winner, so there are at most 2n steps. */
static int flatten(struct perfmap *pm)
{
	const struct perfmap_entry **heap;
	size_t nheap = 0, i = 0, cap = 2 * pm->n + 1;
	uint64_t pos = 0;

	if (!pm->n)
		return 0;
	heap = malloc(pm->n * sizeof(*heap));
	pm->r = malloc(cap * sizeof(*pm->r));
	if (!heap || !pm->r) {
		free(heap);
		return -ENOMEM;
	}
	for (;;) {
		if (!nheap) {
			if (i == pm->n)
				break;
			pos = pm->e[i].start;
		}
		while (i < pm->n && pm->e[i].start <= pos)
			heap_push(heap, &nheap, &pm->e[i++]);
		while (nheap && entry_last(heap[0]) < pos)
			heap_pop(heap, &nheap);
		if (!nheap)
			continue;
		const struct perfmap_entry *win = heap[0];
		uint64_t hi = entry_last(win);
		if (i < pm->n && pm->e[i].start - 1 < hi)
			hi = pm->e[i].start - 1;
		struct perfmap_range *prev = pm->nr ? &pm->r[pm->nr - 1] : NULL;
		if (prev && prev->e == win && prev->hi + 1 == pos)
			prev->hi = hi; /* an older entry started under the winner */
		else
			pm->r[pm->nr++] = (struct perfmap_range){ pos, hi, win };
		if (hi == UINT64_MAX)
			break;
		pos = hi + 1;
	}
	free(heap);
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
next:
		p = eol ? eol + 1 : end;
	}
	qsort(pm->e, pm->n, sizeof(*pm->e), entry_cmp);
	return flatten(pm);
}

int perfmap_load(pid_t pid, struct perfmap **ret)
{
	struct perfmap *pm;
	size_t len = 0;
	int fd, r;

	/* Opened and checked (perfmap_check) by target_access.h: directly,
	 * or by a sandboxed worker's broker. */
	fd = target_open_file(pid, TARGET_FILE_PERFMAP);
	if (fd < 0)
		return fd;
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
	/* The last range that starts at or below pc. */
	size_t i = addr_first_above(pm->r, pm->nr, sizeof(pm->r[0]),
				    offsetof(struct perfmap_range, lo), pc);

	if (!i || pc > pm->r[i - 1].hi)
		return NULL;
	*ret_start = pm->r[i - 1].e->start;
	return pm->r[i - 1].e->name;
}

void perfmap_free(struct perfmap *pm)
{
	if (!pm)
		return;
	free(pm->text);
	free(pm->e);
	free(pm->r);
	free(pm);
}
