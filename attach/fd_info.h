/*
 * fd_info: what one of a process's file descriptors is, from /proc alone:
 * a file's path, a pipe and who holds its other end, a socket's addresses
 * and state, an eventfd, a timerfd, an epoll set and what it watches. For
 * the descriptor a blocked system call waits on.
 *
 * The strings (paths, socket paths) are the target's to choose: callers
 * escape them before they print them.
 */
#ifndef DIAG_ATTACH_FD_INFO_H
#define DIAG_ATTACH_FD_INFO_H

#include <stddef.h>
#include <sys/types.h>

enum fd_kind {
	FD_UNKNOWN = 0,
	FD_FILE,   /* a path (a regular file, a device, a directory) */
	FD_PIPE,   /* a pipe or FIFO */
	FD_SOCKET, /* tcp, udp, unix, or another family */
	FD_EVENTFD,
	FD_TIMERFD,
	FD_SIGNALFD,
	FD_EPOLL,
	FD_INOTIFY,
	FD_ANON, /* another anon_inode */
};

/* Most holders of a pipe's other end that are named. */
#define FD_INFO_MAX_PEERS 4

struct fd_peer {
	pid_t pid;
	int fd;
	char comm[17];
};

struct fd_info {
	pid_t pid; /* whose descriptor it is */
	int fd;
	enum fd_kind kind;
	/* What readlink(/proc/PID/fd/N) says: a path, "pipe:[INODE]",
	 * "socket:[INODE]", "anon_inode:[eventfd]"... */
	char target[512];
	unsigned long inode; /* pipes and sockets, else 0 */
	/* FD_PIPE: which end this descriptor is ("read" or "write", from
	 * fdinfo's flags), and the descriptors of any process that hold the
	 * other end (this process's own included); for a connected unix
	 * socket, those that hold its peer (peer_inode, from sock_diag).
	 * npeers of them named, peers_more more not; peers_scan_cut: not
	 * every process could be looked at (a cap on the scan), so there may
	 * be more. */
	const char *end;
	struct fd_peer peers[FD_INFO_MAX_PEERS];
	size_t npeers, peers_more;
	int peers_scan_cut;
	/* FD_SOCKET: "tcp", "tcp6", "udp", "udp6", "unix", or "" when the
	 * socket is in none of this process's /proc/PID/net tables (another
	 * family, or another network namespace's); the addresses as ss
	 * prints them; state as /proc/net/tcp names it (ESTABLISHED...);
	 * for unix, the bound path ("" for none) and the peer's inode (0:
	 * unknown, or none). */
	char proto[8];
	unsigned long peer_inode;
	char local[80], peer[80], state[16];
	char unix_path[108];
	/* FD_EPOLL: the descriptors it watches (first nwatched, more in
	 * watched_more). */
	int watched[16];
	size_t nwatched, watched_more;
};

/* Describe descriptor fd of process pid. 0, -ENOENT (no such descriptor
 * now), or -errno. Looking for a pipe's other end reads every process's
 * /proc/P/fd (at most a few thousand links). */
int fd_info_read(pid_t pid, int fd, struct fd_info *ret);

/* A word for kind ("file", "pipe", "socket", ...). */
const char *fd_kind_name(enum fd_kind kind);

#endif
