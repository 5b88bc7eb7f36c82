/* What a descriptor of a process is (fd_info.h). */
#include "fd_info.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "procfs.h"

/* The pipe-peer scan reads at most this many links. */
#define MAX_LINKS_SCANNED 200000

const char *fd_kind_name(enum fd_kind kind)
{
	static const char *const names[] = {"unknown", "file",     "pipe",  "socket",  "eventfd",
					    "timerfd", "signalfd", "epoll", "inotify", "anon_inode"};
	return (size_t)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "unknown";
}

static unsigned long bracketed_inode(const char *target, const char *prefix)
{
	size_t n = strlen(prefix);
	if (strncmp(target, prefix, n) != 0)
		return 0;
	return strtoul(target + n, NULL, 10);
}

/* "flags:\t0100002" of /proc/PID/fdinfo/N: O_ACCMODE. -1 unknown. */
static int access_mode(pid_t pid, int fd)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	if (procfs_read_at(AT_FDCWD, path, buf, sizeof(buf)) <= 0)
		return -1;
	const char *p = strstr(buf, "flags:");
	if (!p)
		return -1;
	return (int)(strtoul(p + 6, NULL, 8) & O_ACCMODE);
}

static void read_comm(pid_t pid, char comm[17])
{
	char path[64], buf[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	comm[0] = '\0';
	if (procfs_read_at(AT_FDCWD, path, buf, sizeof(buf)) > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(comm, 17, "%.16s", buf);
	}
}

/* Every process's descriptors whose link reads want (but pid's fd itself):
 * for a pipe (mode >= 0) those at the other end, for a socket the peer's. */
static void holders(pid_t pid, int fd, const char *want, int mode, struct fd_info *ret)
{
	DIR *proc = opendir("/proc");
	if (!proc) {
		ret->peers_scan_cut = 1;
		return;
	}
	size_t links = 0;
	struct dirent *p;
	while ((p = readdir(proc))) {
		if (!isdigit((unsigned char)p->d_name[0]))
			continue;
		pid_t other = (pid_t)atoi(p->d_name);
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)other);
		DIR *fds = opendir(dir);
		if (!fds)
			continue;
		struct dirent *e;
		while ((e = readdir(fds))) {
			if (!isdigit((unsigned char)e->d_name[0]))
				continue;
			if (++links > MAX_LINKS_SCANNED) {
				ret->peers_scan_cut = 1;
				break;
			}
			char link[128], path[64 + sizeof(e->d_name)];
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			ssize_t n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			int ofd = atoi(e->d_name);
			if (strcmp(link, want) != 0 || (other == pid && ofd == fd))
				continue;
			int m = access_mode(other, ofd);
			/* The other end: the opposite mode (a FIFO opened O_RDWR
			 * is both). */
			if (mode >= 0 && m == mode && m != O_RDWR)
				continue;
			if (ret->npeers < FD_INFO_MAX_PEERS) {
				struct fd_peer *peer = &ret->peers[ret->npeers++];
				peer->pid = other;
				peer->fd = ofd;
				read_comm(other, peer->comm);
			} else {
				ret->peers_more++;
			}
		}
		closedir(fds);
		if (links > MAX_LINKS_SCANNED)
			break;
	}
	closedir(proc);
}

static const char *tcp_state(unsigned st)
{
	static const char *const names[] = {"",          "ESTABLISHED", "SYN_SENT",   "SYN_RECV",
					    "FIN_WAIT1", "FIN_WAIT2",   "TIME_WAIT",  "CLOSE",
					    "CLOSE_WAIT", "LAST_ACK",   "LISTEN",     "CLOSING"};
	return st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

/* "0100007F:1538" (v4) or 32 hex digits ":PORT" (v6), as ss prints it. */
static void format_addr(const char *hex, bool v6, char *out, size_t size)
{
	char addr[INET6_ADDRSTRLEN];
	unsigned port = 0;
	const char *colon = strchr(hex, ':');
	if (colon)
		port = (unsigned)strtoul(colon + 1, NULL, 16);
	if (!v6) {
		struct in_addr a = {.s_addr = (uint32_t)strtoul(hex, NULL, 16)};
		inet_ntop(AF_INET, &a, addr, sizeof(addr));
		snprintf(out, size, "%s:%u", addr, port);
		return;
	}
	struct in6_addr a;
	for (int w = 0; w < 4; w++) {
		char word[9];
		memcpy(word, hex + 8 * w, 8);
		word[8] = '\0';
		uint32_t v = (uint32_t)strtoul(word, NULL, 16);
		memcpy(&a.s6_addr[4 * w], &v, 4); /* each word in the kernel's byte order */
	}
	inet_ntop(AF_INET6, &a, addr, sizeof(addr));
	snprintf(out, size, "[%s]:%u", addr, port);
}

/* A socket by inode in /proc/PID/net/{tcp,tcp6,udp,udp6}. */
static bool find_inet(pid_t pid, const char *proto, struct fd_info *ret)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, proto);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool v6 = proto[3] == '6';
	char line[512];
	bool found = false;
	if (!fgets(line, sizeof(line), f)) { /* the header */
		fclose(f);
		return false;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		char local[64], remote[64];
		unsigned st;
		unsigned long inode;
		if (sscanf(line, " %*d: %63s %63s %x %*s %*s %*s %*s %*s %lu", local, remote, &st, &inode) != 4 ||
		    inode != ret->inode)
			continue;
		found = true;
		snprintf(ret->proto, sizeof(ret->proto), "%s", proto);
		format_addr(local, v6, ret->local, sizeof(ret->local));
		format_addr(remote, v6, ret->peer, sizeof(ret->peer));
		snprintf(ret->state, sizeof(ret->state), "%s",
			 proto[0] == 't' ? tcp_state(st) : st == 1 ? "ESTABLISHED" : "UNCONN");
	}
	fclose(f);
	return found;
}

static bool find_unix(pid_t pid, struct fd_info *ret)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/net/unix", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	char line[512];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long inode;
		unsigned type, st;
		int used = 0;
		if (sscanf(line, "%*s %*s %*s %*s %x %x %lu%n", &type, &st, &inode, &used) != 3 ||
		    inode != ret->inode)
			continue;
		found = true;
		snprintf(ret->proto, sizeof(ret->proto), "unix");
		const char *p = line + used;
		while (*p == ' ')
			p++;
		snprintf(ret->unix_path, sizeof(ret->unix_path), "%.*s", (int)strcspn(p, "\n"), p);
		snprintf(ret->state, sizeof(ret->state), "%s",
			 st == 1 ? "UNCONNECTED" : st == 3 ? "CONNECTED" : st == 2 ? "CONNECTING" : "?");
		if (type == 1 && st == 1 && ret->unix_path[0])
			snprintf(ret->state, sizeof(ret->state), "LISTEN");
	}
	fclose(f);
	return found;
}

/* A unix socket's peer, by inode, from the kernel's sock_diag (what ss -xp
 * asks): the socket at the other end of a connected one. In our own
 * network namespace only (a container's sockets are not found there). */
static int unix_peer_inode(unsigned long ino, unsigned long *peer)
{
	int s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (s < 0)
		return -errno;
	struct {
		struct nlmsghdr nh;
		struct unix_diag_req r;
	} req = {
		.nh = {.nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST},
		.r = {.sdiag_family = AF_UNIX, .udiag_states = ~0u, .udiag_ino = (uint32_t)ino,
		      .udiag_show = UDIAG_SHOW_PEER, .udiag_cookie = {~0u, ~0u}},
	};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	int r = -EIO;
	union {
		struct nlmsghdr nh;
		char buf[8192];
	} u;
	struct timeval tv = {1, 0};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(s, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
		r = -errno;
		goto out;
	}
	ssize_t n = recv(s, u.buf, sizeof(u.buf), 0);
	if (n < 0) {
		r = -errno;
		goto out;
	}
	*peer = 0;
	for (struct nlmsghdr *h = &u.nh; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			r = h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error ? e->error : -EIO;
			goto out;
		}
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
			continue;
		const struct unix_diag_msg *m = NLMSG_DATA(h);
		if (m->udiag_ino != (uint32_t)ino)
			continue;
		int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
		for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len))
			if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= sizeof(uint32_t))
				*peer = *(const uint32_t *)RTA_DATA(a);
		r = 0;
	}
out:
	close(s);
	return r;
}

static void epoll_watched(pid_t pid, int fd, struct fd_info *ret)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof(line), f)) {
		int tfd;
		if (sscanf(line, "tfd: %d", &tfd) != 1)
			continue;
		if (ret->nwatched < sizeof(ret->watched) / sizeof(ret->watched[0]))
			ret->watched[ret->nwatched++] = tfd;
		else
			ret->watched_more++;
	}
	fclose(f);
}

int fd_info_read(pid_t pid, int fd, struct fd_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->pid = pid;
	ret->fd = fd;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	ssize_t n = readlink(path, ret->target, sizeof(ret->target) - 1);
	if (n < 0)
		return -errno;
	ret->target[n] = '\0';
	const char *t = ret->target;
	if ((ret->inode = bracketed_inode(t, "pipe:["))) {
		ret->kind = FD_PIPE;
		int mode = access_mode(pid, fd);
		ret->end = mode == O_RDONLY ? "read" : mode == O_WRONLY ? "write" : NULL;
		char want[48];
		snprintf(want, sizeof(want), "pipe:[%lu]", ret->inode);
		holders(pid, fd, want, mode, ret);
	} else if ((ret->inode = bracketed_inode(t, "socket:["))) {
		ret->kind = FD_SOCKET;
		static const char *const inet[] = {"tcp", "tcp6", "udp", "udp6"};
		bool found = false;
		for (size_t i = 0; !found && i < 4; i++)
			found = find_inet(pid, inet[i], ret);
		if (!found && find_unix(pid, ret) && unix_peer_inode(ret->inode, &ret->peer_inode) == 0 &&
		    ret->peer_inode) {
			char want[48];
			snprintf(want, sizeof(want), "socket:[%lu]", ret->peer_inode);
			holders(pid, fd, want, -1, ret);
		}
	} else if (strcmp(t, "anon_inode:[eventfd]") == 0) {
		ret->kind = FD_EVENTFD;
	} else if (strcmp(t, "anon_inode:[timerfd]") == 0) {
		ret->kind = FD_TIMERFD;
	} else if (strcmp(t, "anon_inode:[signalfd]") == 0) {
		ret->kind = FD_SIGNALFD;
	} else if (strcmp(t, "anon_inode:[eventpoll]") == 0) {
		ret->kind = FD_EPOLL;
		epoll_watched(pid, fd, ret);
	} else if (strcmp(t, "anon_inode:inotify") == 0) {
		ret->kind = FD_INOTIFY;
	} else if (strncmp(t, "anon_inode:", 11) == 0) {
		ret->kind = FD_ANON;
	} else if (t[0] == '/') {
		ret->kind = FD_FILE;
		/* A FIFO has a path and is a pipe. */
		struct stat st;
		if (stat(path, &st) == 0 && S_ISFIFO(st.st_mode)) {
			ret->kind = FD_PIPE;
			ret->inode = (unsigned long)st.st_ino;
		}
	}
	return 0;
}
