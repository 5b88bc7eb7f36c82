/* SPDX-License-Identifier: MIT */
/*
 * leak_fds [FDS_PER_SECOND=4] [KIND=file]
 *
 * Opens descriptors and never closes them: open_fds grows by the rate.
 * KIND is file (/dev/null), pipe (2 fds per opening), socket (a socketpair,
 * 2 fds) or eventfd. Once the fd limit is reached it keeps trying (the
 * count stays flat), so it never exits on its own.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "leak_common.h"

static const char *kind = "file";

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
	else
		(void)!open("/dev/null", O_RDONLY);
}

int main(int argc, char **argv)
{
	double rate = leak_arg_rate(argc, argv, 1, 4, 0);

	if (argc > 2)
		kind = argv[2];
	if (strcmp(kind, "file") && strcmp(kind, "pipe") && strcmp(kind, "socket") &&
	    strcmp(kind, "eventfd")) {
		fprintf(stderr, "leak_fds: unknown kind '%s' (file, pipe, socket, eventfd)\n", kind);
		return 2;
	}
	leak_ready();
	leak_run(1 / rate, tick);
}
