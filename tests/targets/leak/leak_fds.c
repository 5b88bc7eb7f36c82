/* SPDX-License-Identifier: MIT */
/*
 * leak_fds [FDS_PER_SECOND=4] [KIND=file]
 *
 * Opens descriptors and never closes them: open_fds grows by the rate.
 * KIND is file (/dev/null), pipe (2 fds per opening), socket (a socketpair,
 * 2 fds), eventfd, or tcp (a connection to a listener of its own on
 * 127.0.0.1, never accepted: 1 fd each, the client end). Once the fd limit is reached it keeps trying (the
 * count stays flat), so it never exits on its own.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "leak_common.h"

static const char *kind = "file";
static struct sockaddr_in listener;

static void tick(unsigned long n)
{
	int fds[2];

	(void)n;
	if (strcmp(kind, "pipe") == 0)
		(void)!pipe(fds);
	else if (strcmp(kind, "socket") == 0)
		(void)!socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
	else if (strcmp(kind, "eventfd") == 0)
		(void)!eventfd(0, 0);
	else if (strcmp(kind, "tcp") == 0) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (c >= 0)
			(void)!connect(c, (struct sockaddr *)&listener, sizeof(listener));
	}
	else
		(void)!open("/dev/null", O_RDONLY);
}

int main(int argc, char **argv)
{
	double rate = leak_arg_rate(argc, argv, 1, 4, 0);

	if (argc > 2)
		kind = argv[2];
	if (strcmp(kind, "file") && strcmp(kind, "pipe") && strcmp(kind, "socket") &&
	    strcmp(kind, "eventfd") && strcmp(kind, "tcp")) {
		fprintf(stderr, "leak_fds: unknown kind '%s' (file, pipe, socket, eventfd, tcp)\n", kind);
		return 2;
	}
	if (strcmp(kind, "tcp") == 0) {
		int l = socket(AF_INET, SOCK_STREAM, 0);
		socklen_t len = sizeof(listener);
		listener.sin_family = AF_INET;
		listener.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (l < 0 || bind(l, (struct sockaddr *)&listener, sizeof(listener)) < 0 ||
		    listen(l, 4096) < 0 || getsockname(l, (struct sockaddr *)&listener, &len) < 0) {
			perror("leak_fds: listener");
			return 1;
		}
	}
	leak_ready();
	leak_run(1 / rate, tick);
}
