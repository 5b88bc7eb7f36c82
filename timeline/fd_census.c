/* SPDX-License-Identifier: MIT */
/* fd_census: see fd_census.h. */
#include "timeline/fd_census.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A socket the process's network tables know, by inode. */
struct sock_desc {
	unsigned long inode;
	char group[320];
	char detail[320];
};

struct sock_table {
	struct sock_desc *v;
	size_t n, cap;
};

static struct sock_desc *sock_add(struct sock_table *t)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct sock_desc *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		t->v = v;
		t->cap = cap;
	}
	return &t->v[t->n++];
}

static const char *tcp_state(unsigned st)
{
	static const char *const names[] = {"?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1",
					    "FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK",
					    "LISTEN", "CLOSING", "NEW_SYN_RECV"};
	return st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

/* "0100007F:1F90" (or 32 hex digits for v6) as "127.0.0.1:8080". */
static bool inet_text(const char *hex, unsigned port, bool v6, char *out, size_t size)
{
	char addr[INET6_ADDRSTRLEN];
	if (!v6) {
		struct in_addr a = {.s_addr = (uint32_t)strtoul(hex, NULL, 16)};
		if (strlen(hex) != 8 || !inet_ntop(AF_INET, &a, addr, sizeof(addr)))
			return false;
		snprintf(out, size, "%s:%u", addr, port);
		return true;
	}
	if (strlen(hex) != 32)
		return false;
	struct in6_addr a;
	for (int i = 0; i < 4; i++) {
		char word[9];
		memcpy(word, hex + 8 * i, 8);
		word[8] = '\0';
		uint32_t w = (uint32_t)strtoul(word, NULL, 16);
		memcpy(&a.s6_addr[4 * i], &w, 4);
	}
	if (!inet_ntop(AF_INET6, &a, addr, sizeof(addr)))
		return false;
	snprintf(out, size, "[%s]:%u", addr, port);
	return true;
}

/* A /proc/PID/net table, its header line read: *ret is NULL (and 0 is
 * returned) when this namespace has no such protocol. 0 or -ENOMEM. */
static int open_table(int netfd, const char *name, FILE **ret)
{
	*ret = NULL;
	int fd = openat(netfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	char header[512];
	if (!fgets(header, sizeof(header), f)) {
		fclose(f);
		return 0;
	}
	*ret = f;
	return 0;
}

/* /proc/PID/net/{tcp,udp}[6]: sl local rem st ... uid timeout inode. */
static int read_inet(int netfd, const char *name, bool tcp, bool v6, struct sock_table *t)
{
	FILE *f;
	int r = open_table(netfd, name, &f);
	if (r < 0 || !f)
		return r;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		char lhex[40], rhex[40], local[80], remote[80];
		unsigned lport, rport, st;
		unsigned long inode;
		if (sscanf(line, " %*u: %39[0-9A-Fa-f]:%x %39[0-9A-Fa-f]:%x %x %*s %*s %*s %*s %*s %lu",
			   lhex, &lport, rhex, &rport, &st, &inode) != 6 || inode == 0)
			continue;
		if (!inet_text(lhex, lport, v6, local, sizeof(local)) ||
		    !inet_text(rhex, rport, v6, remote, sizeof(remote)))
			continue;
		struct sock_desc *d = sock_add(t);
		if (!d) {
			r = -ENOMEM;
			break;
		}
		const char *proto = tcp ? (v6 ? "tcp6" : "tcp") : (v6 ? "udp6" : "udp");
		const char *state = tcp ? tcp_state(st) : (rport ? "connected" : "unconnected");
		d->inode = inode;
		/* A connection is what it goes to; its local port is ephemeral. */
		if (rport)
			snprintf(d->group, sizeof(d->group), "socket %s %s to %s", proto, state, remote);
		else
			snprintf(d->group, sizeof(d->group), "socket %s %s on %s", proto, state, local);
		snprintf(d->detail, sizeof(d->detail), "%s %s -> %s %s", proto, local, remote, state);
	}
	fclose(f);
	return r;
}

/* /proc/PID/net/unix: Num RefCount Protocol Flags Type St Inode [Path]. */
static int read_unix(int netfd, struct sock_table *t)
{
	FILE *f;
	int r = open_table(netfd, "unix", &f);
	if (r < 0 || !f)
		return r;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		unsigned type, st;
		unsigned long inode;
		char path[256] = "";
		int got = sscanf(line, "%*s %*s %*s %*s %x %x %lu %255[^\n]", &type, &st, &inode, path);
		if (got < 3)
			continue;
		struct sock_desc *d = sock_add(t);
		if (!d) {
			r = -ENOMEM;
			break;
		}
		const char *kind = type == 1 ? "stream" : type == 2 ? "dgram" : type == 5 ? "seqpacket" : "?";
		const char *state = st == 3 ? "connected" : st == 1 ? "unconnected" : "connecting";
		d->inode = inode;
		snprintf(d->group, sizeof(d->group), "socket unix %s %s", kind,
			 path[0] ? path : "(unnamed)");
		snprintf(d->detail, sizeof(d->detail), "unix %s %s %s", kind, state,
			 path[0] ? path : "(unnamed)");
	}
	fclose(f);
	return r;
}

static int cmp_inode(const void *a, const void *b)
{
	unsigned long x = ((const struct sock_desc *)a)->inode, y = ((const struct sock_desc *)b)->inode;
	return x < y ? -1 : x > y;
}

static int read_sockets(pid_t pid, struct sock_table *t)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/net", (int)pid);
	int netfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (netfd < 0)
		return 0; /* sockets stay "socket" without an address */
	static const struct {
		const char *name;
		bool tcp, v6;
	} tables[] = {{"tcp", true, false}, {"tcp6", true, true}, {"udp", false, false}, {"udp6", false, true}};
	int r = 0;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]) && r == 0; i++)
		r = read_inet(netfd, tables[i].name, tables[i].tcp, tables[i].v6, t);
	if (r == 0)
		r = read_unix(netfd, t);
	close(netfd);
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), cmp_inode);
	return r;
}

static int cmp_fd(const void *a, const void *b)
{
	int x = ((const struct fd_entry *)a)->fd, y = ((const struct fd_entry *)b)->fd;
	return (x > y) - (x < y);
}

/* Name e from its link text, sockets from the tables. */
static void describe(struct fd_entry *e, const char *link, const struct sock_table *socks)
{
	unsigned long inode;
	if (sscanf(link, "socket:[%lu]", &inode) == 1) {
		snprintf(e->kind, sizeof(e->kind), "socket");
		struct sock_desc key = {.inode = inode};
		const struct sock_desc *d =
			socks->n ? bsearch(&key, socks->v, socks->n, sizeof(key), cmp_inode) : NULL;
		if (d) {
			snprintf(e->group, sizeof(e->group), "%s", d->group);
			snprintf(e->detail, sizeof(e->detail), "%s", d->detail);
		} else {
			snprintf(e->group, sizeof(e->group), "socket (not inet or unix: netlink, packet...)");
			snprintf(e->detail, sizeof(e->detail), "%s", link);
		}
	} else if (strncmp(link, "pipe:", 5) == 0) {
		snprintf(e->kind, sizeof(e->kind), "pipe");
		snprintf(e->group, sizeof(e->group), "pipe");
		snprintf(e->detail, sizeof(e->detail), "%s", link);
	} else if (strncmp(link, "anon_inode:", 11) == 0) {
		snprintf(e->kind, sizeof(e->kind), "anon_inode");
		snprintf(e->group, sizeof(e->group), "anon_inode %s", link + 11);
		snprintf(e->detail, sizeof(e->detail), "%s", link);
	} else if (link[0] == '/') {
		snprintf(e->kind, sizeof(e->kind), "file");
		snprintf(e->group, sizeof(e->group), "file %s", link);
		snprintf(e->detail, sizeof(e->detail), "%s", link);
	} else {
		snprintf(e->kind, sizeof(e->kind), "other");
		snprintf(e->group, sizeof(e->group), "%s", link);
		snprintf(e->detail, sizeof(e->detail), "%s", link);
	}
}

int fd_census_take(pid_t pid, size_t max, struct fd_census *ret, size_t *ret_more)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	struct fd_census c = {0};
	size_t cap = 0, more = 0;
	struct sock_table socks = {0};
	int r = 0;
	struct dirent *de;
	struct link {
		int fd;
		char text[300];
	} *links = NULL;
	while ((de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		if (*end || end == de->d_name)
			continue;
		if (c.n == max) {
			more++;
			continue;
		}
		if (c.n == cap) {
			cap = cap ? 2 * cap : 256;
			struct link *l = realloc(links, cap * sizeof(*l));
			if (!l) {
				r = -ENOMEM;
				break;
			}
			links = l;
		}
		ssize_t n = readlinkat(dirfd(d), de->d_name, links[c.n].text, sizeof(links[c.n].text) - 1);
		if (n < 0)
			continue; /* closed since readdir */
		links[c.n].text[n] = '\0';
		links[c.n].fd = (int)fd;
		c.n++;
	}
	closedir(d);
	if (r == 0) {
		for (size_t i = 0; i < c.n; i++)
			if (strncmp(links[i].text, "socket:", 7) == 0) {
				r = read_sockets(pid, &socks);
				break;
			}
	}
	if (r == 0) {
		c.v = calloc(c.n ? c.n : 1, sizeof(*c.v));
		if (!c.v)
			r = -ENOMEM;
	}
	for (size_t i = 0; r == 0 && i < c.n; i++) {
		c.v[i].fd = links[i].fd;
		describe(&c.v[i], links[i].text, &socks);
	}
	free(links);
	free(socks.v);
	if (r < 0) {
		free(c.v);
		return r;
	}
	qsort(c.v, c.n, sizeof(*c.v), cmp_fd);
	*ret = c;
	*ret_more = more;
	return 0;
}

void fd_census_release(struct fd_census *c)
{
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

static int cmp_group_of(const void *a, const void *b)
{
	const struct fd_entry *x = *(const struct fd_entry *const *)a, *y = *(const struct fd_entry *const *)b;
	int c = strcmp(x->group, y->group);
	return c ? c : (x->fd > y->fd) - (x->fd < y->fd);
}

struct group_run {
	const struct fd_entry *first;
	size_t count;
};

static int cmp_run(const void *a, const void *b)
{
	const struct group_run *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->first->group, y->first->group);
}

int fd_census_groups(const struct fd_census *c, size_t first, const struct fd_entry ***ret,
		     size_t **ret_counts, size_t *ret_n)
{
	size_t n = first < c->n ? c->n - first : 0;
	const struct fd_entry **sorted = malloc((n ? n : 1) * sizeof(*sorted));
	struct group_run *runs = malloc((n ? n : 1) * sizeof(*runs));
	const struct fd_entry **out = malloc((n ? n : 1) * sizeof(*out));
	size_t *counts = malloc((n ? n : 1) * sizeof(*counts));
	if (!sorted || !runs || !out || !counts) {
		free(sorted);
		free(runs);
		free(out);
		free(counts);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		sorted[i] = &c->v[first + i];
	qsort(sorted, n, sizeof(*sorted), cmp_group_of);
	size_t nr = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || strcmp(sorted[i - 1]->group, sorted[i]->group) != 0)
			runs[nr++] = (struct group_run){.first = sorted[i]};
		runs[nr - 1].count++;
	}
	qsort(runs, nr, sizeof(*runs), cmp_run);
	for (size_t i = 0; i < nr; i++) {
		out[i] = runs[i].first;
		counts[i] = runs[i].count;
	}
	free(sorted);
	free(runs);
	*ret = out;
	*ret_counts = counts;
	*ret_n = nr;
	return 0;
}
