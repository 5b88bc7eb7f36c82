/* The broker behind broker.h, and the worker's side of it. */
#include "symbolize/worker/broker.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/attach.h"
#include "symbolize/direct_open.h"
#include "symbolize/internal.h"
#include "symbolize/target_access.h"

enum broker_op { OP_MAPPED = 1, OP_DEBUG, OP_FILE, OP_DEBUGINFOD };

/* One request: fixed size, so the broker reads it with one recv and checks
 * nothing but its fields. */
struct broker_request {
	uint32_t op;
	uint32_t arg; /* OP_DEBUG: in the target's root; OP_FILE: enum target_file;
		       * OP_DEBUGINFOD: the build-id's length, its bytes in path */
	uint64_t start, limit, offset, inode;
	uint32_t dev_major, dev_minor;
	uint32_t deleted;
	char perms[5];
	char path[PATH_MAX];
};

struct broker_reply {
	int32_t status; /* 0: a descriptor comes with it; else -errno */
};

/* ---- the broker ---- */

/* Only an ELF file leaves the broker by path: what a worker can name, it
 * could name to read a secret. */
static int require_elf(int fd)
{
	unsigned char magic[4];
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
	    memcmp(magic, "\177ELF", 4) != 0)
		return -ENOEXEC;
	return 0;
}

/* libdebuginfod's client, looked up at run time (libdebuginfod.so.1 is
 * elfutils' own and comes with libdw on Debian, but a machine may lack it). */
typedef struct debuginfod_client debuginfod_client;
struct debuginfod_api {
	debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	debuginfod_client *client;
};

static int fetch(struct debuginfod_api *api, const struct broker_request *rq)
{
	if (!api)
		return -EPERM;
	if (rq->arg < 2 || rq->arg > 64)
		return -EINVAL;
	if (!api->client) {
		void *h = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_LOCAL);
		api->begin = h ? (debuginfod_client * (*)(void))(uintptr_t)dlsym(h, "debuginfod_begin") : NULL;
		api->find_debuginfo = h ? (int (*)(debuginfod_client *, const unsigned char *, int, char **))(
						  uintptr_t)dlsym(h, "debuginfod_find_debuginfo")
					: NULL;
		api->client = api->begin && api->find_debuginfo ? api->begin() : NULL;
		if (!api->client)
			return -ENOSYS;
	}
	char *path = NULL;
	int fd = api->find_debuginfo(api->client, (const unsigned char *)rq->path, (int)rq->arg, &path);
	free(path);
	return fd;
}

static int serve_open(pid_t pid, int rootfd, struct debuginfod_api *api, const struct broker_request *rq)
{
	int fd;
	/* OP_DEBUGINFOD's path holds the build-id's bytes, not a string. */
	if (rq->op != OP_DEBUGINFOD && !memchr(rq->path, '\0', sizeof(rq->path)))
		return -ENAMETOOLONG;
	pid_t tid = rq->op == OP_DEBUGINFOD ? pid : attach_memory_tid(pid);
	switch (rq->op) {
	case OP_DEBUGINFOD:
		fd = fetch(api, rq);
		break;
	case OP_MAPPED: {
		struct maps_entry e = {.start = rq->start, .limit = rq->limit, .offset = rq->offset,
				       .inode = rq->inode, .dev_major = rq->dev_major,
				       .dev_minor = rq->dev_minor, .path = (char *)rq->path,
				       .deleted = rq->deleted != 0};
		memcpy(e.perms, rq->perms, sizeof(e.perms));
		e.perms[4] = '\0';
		fd = sym_open_mapped_direct(rootfd, tid, &e);
		break;
	}
	case OP_DEBUG:
		if (rq->arg && rootfd < 0)
			return -ENOENT;
		/* On the host, only absolute paths: a relative one would be
		 * resolved from wherever the tool was started. */
		if (!rq->arg && rq->path[0] != '/')
			return -EINVAL;
		fd = sym_open_debug_direct(rq->arg ? rootfd : AT_FDCWD, rq->arg != 0, rq->path);
		break;
	case OP_FILE:
		if (rq->arg != TARGET_FILE_EXE && rq->arg != TARGET_FILE_AUXV &&
		    rq->arg != TARGET_FILE_PERFMAP)
			return -EINVAL;
		/* The perf map is named by the process id, the others by a
		 * live thread's (attach_memory_tid: the main thread may be a
		 * zombie). */
		fd = target_open_file(rq->arg == TARGET_FILE_PERFMAP ? pid : tid,
				      (enum target_file)rq->arg);
		if (fd >= 0 && rq->arg != TARGET_FILE_EXE)
			return fd;
		break;
	default:
		return -EINVAL;
	}
	if (fd < 0)
		return fd;
	int r = require_elf(fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

static int send_reply(int sock, int status, int fd)
{
	struct broker_reply rp = {.status = status};
	struct iovec iov = {&rp, sizeof(rp)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	ssize_t n;
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(rp) ? 0 : -EPIPE;
}

static _Noreturn void broker_main(int sock, pid_t pid, pid_t worker, bool allow_debuginfod)
{
	static struct debuginfod_api api;
	prctl(PR_SET_NAME, "diag-broker");
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != worker)
		_exit(0);
	char root[64];
	snprintf(root, sizeof(root), "/proc/%d/root", (int)attach_memory_tid(pid));
	int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	static struct broker_request rq;
	for (;;) {
		ssize_t n = recv(sock, &rq, sizeof(rq), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		int fd = n == (ssize_t)sizeof(rq) ? serve_open(pid, rootfd, allow_debuginfod ? &api : NULL, &rq) : -EBADMSG;
		int r = send_reply(sock, fd < 0 ? fd : 0, fd);
		if (fd >= 0)
			close(fd);
		if (r < 0)
			_exit(0);
	}
}

/* ---- the worker's side ---- */

struct client {
	int sock;
};

static struct client client = {.sock = -1};

static int ask(struct broker_request *rq)
{
	if (client.sock < 0)
		return -EBADF;
	ssize_t n;
	do
		n = send(client.sock, rq, sizeof(*rq), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(*rq))
		return n < 0 ? -errno : -EPIPE;
	struct broker_reply rp;
	struct iovec iov = {&rp, sizeof(rp)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	do
		n = recvmsg(client.sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(rp))
		return n < 0 ? -errno : -EPIPE;
	int fd = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	if (rp.status == 0 && fd >= 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return rp.status < 0 && rp.status > -4096 ? rp.status : -EBADMSG;
}

static bool put_path(struct broker_request *rq, const char *path)
{
	size_t len = strlen(path);
	if (len >= sizeof(rq->path))
		return false;
	memcpy(rq->path, path, len + 1);
	return true;
}

static int client_open_mapped(void *arg, const struct maps_entry *e)
{
	(void)arg;
	static struct broker_request rq;
	memset(&rq, 0, offsetof(struct broker_request, path));
	rq.op = OP_MAPPED;
	rq.start = e->start;
	rq.limit = e->limit;
	rq.offset = e->offset;
	rq.inode = e->inode;
	rq.dev_major = e->dev_major;
	rq.dev_minor = e->dev_minor;
	rq.deleted = e->deleted;
	memcpy(rq.perms, e->perms, sizeof(rq.perms));
	if (!put_path(&rq, e->path ? e->path : ""))
		return -ENAMETOOLONG;
	return ask(&rq);
}

static int client_open_debug(void *arg, bool in_target_root, const char *path)
{
	(void)arg;
	static struct broker_request rq;
	memset(&rq, 0, offsetof(struct broker_request, path));
	rq.op = OP_DEBUG;
	rq.arg = in_target_root;
	if (!put_path(&rq, path))
		return -ENAMETOOLONG;
	return ask(&rq);
}

static int client_open_file(void *arg, enum target_file which)
{
	(void)arg;
	static struct broker_request rq;
	memset(&rq, 0, offsetof(struct broker_request, path));
	rq.op = OP_FILE;
	rq.arg = (uint32_t)which;
	rq.path[0] = '\0';
	return ask(&rq);
}

static int client_fetch_debuginfo(void *arg, const unsigned char *id, size_t len)
{
	(void)arg;
	static struct broker_request rq;
	if (len < 2 || len > 64)
		return -EINVAL;
	memset(&rq, 0, sizeof(rq));
	rq.op = OP_DEBUGINFOD;
	rq.arg = (uint32_t)len;
	memcpy(rq.path, id, len);
	return ask(&rq);
}

int broker_start(pid_t pid, bool allow_debuginfod)
{
	pid_t tid = attach_memory_tid(pid);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)tid);
	/* Read-only: the sandbox can never write into the target. May fail
	 * (a target that is gone): memory reads then fail, files still come. */
	int mem = open(path, O_RDONLY | O_CLOEXEC);
	bool foreign = target_foreign_root(tid);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		int e = errno;
		if (mem >= 0)
			close(mem);
		return -e;
	}
	pid_t worker = getpid();
	pid_t b = fork();
	if (b < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		if (mem >= 0)
			close(mem);
		return -e;
	}
	if (b == 0) {
		/* Nothing of the worker's but the socket: not its mem
		 * descriptor, not its socket to the tool. */
		if (sv[1] > 3)
			syscall(SYS_close_range, 3u, (unsigned)sv[1] - 1, 0u);
		syscall(SYS_close_range, (unsigned)sv[1] + 1, ~0u, 0u);
		broker_main(sv[1], pid, worker, allow_debuginfod);
	}
	close(sv[1]);
	client.sock = sv[0];
	struct target_broker tb = {.open_mapped = client_open_mapped,
				   .open_debug = client_open_debug,
				   .open_file = client_open_file,
				   .fetch_debuginfo = allow_debuginfod ? client_fetch_debuginfo : NULL,
				   .mem_fd = mem,
				   .foreign_root = foreign};
	target_access_use_broker(&tb);
	return 0;
}
