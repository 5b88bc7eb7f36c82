/* SPDX-License-Identifier: MIT */
/*
 * churn [ROUNDS_PER_SECOND=10]
 *
 * Busy with the same resources the leak targets leak, but gives every one
 * back: each round opens 8 descriptors (files, a pipe, a socketpair) and
 * closes them, starts 4 threads and joins them, forks 2 children and reaps
 * them, maps 8 MiB, touches it and unmaps it. A sample taken mid-round
 * sees the transient population; the baseline never moves. The leak
 * watchdog must stay silent on it.
 */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "leak_common.h"

#define CHUNK (8UL * 1024 * 1024)

static pthread_attr_t attr;

static void *worker(void *arg)
{
	volatile unsigned long x = 0;

	for (unsigned long i = 0; i < 20000; i++)
		x += i;
	return arg;
}

static void tick(unsigned long n)
{
	int fds[8], nfd = 0, p[2];
	pthread_t th[4];
	int nth = 0;
	pid_t kids[2];
	void *mem;

	(void)n;
	for (int i = 0; i < 4; i++) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd >= 0)
			fds[nfd++] = fd;
	}
	if (pipe2(p, O_CLOEXEC) == 0) {
		fds[nfd++] = p[0];
		fds[nfd++] = p[1];
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) == 0) {
		fds[nfd++] = p[0];
		fds[nfd++] = p[1];
	}
	for (int i = 0; i < 4; i++)
		if (pthread_create(&th[nth], &attr, worker, NULL) == 0)
			nth++;
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(0);
	}
	mem = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem != MAP_FAILED) {
		memset(mem, 0x3c, CHUNK);
		munmap(mem, CHUNK);
	}
	for (int i = 0; i < 2; i++)
		if (kids[i] > 0)
			waitpid(kids[i], NULL, 0);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < nfd; i++)
		close(fds[i]);
}

int main(int argc, char **argv)
{
	leak_threads_main(argc, argv, 10, &attr, tick);
}
