/* SPDX-License-Identifier: MIT */
/*
 * leak_children [CHILDREN_PER_SECOND=1] [MODE=zombie] [ARG...]
 *
 * Forks children and never reaps them: child_procs grows by the rate.
 * MODE zombie: each child exits at once and stays a zombie (zombie_children
 * grows too). MODE sleep: each child sleeps until its parent dies
 * (PR_SET_PDEATHSIG), so killing the target leaves nothing behind either
 * way: zombies are reaped by init once their parent is gone.
 * ARGs are ignored: a sleeping child keeps them in its argv (a fork's is
 * its parent's), for the tests that put secrets there.
 */
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "leak_common.h"

static int sleep_mode;

static void tick(unsigned long n)
{
	pid_t pid;

	(void)n;
	pid = fork();
	if (pid != 0)
		return; /* parent, or fork failed: try again next tick */
	if (!sleep_mode)
		_exit(0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(0); /* the parent died before the prctl */
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	double rate = leak_arg_rate(argc, argv, 1, 1, 0);

	if (argc > 2) {
		if (strcmp(argv[2], "sleep") == 0)
			sleep_mode = 1;
		else if (strcmp(argv[2], "zombie") != 0) {
			fprintf(stderr, "leak_children: unknown mode '%s' (zombie, sleep)\n", argv[2]);
			return 2;
		}
	}
	/* SIGCHLD must not be ignored, or the kernel reaps for us. */
	signal(SIGCHLD, SIG_DFL);
	leak_ready();
	leak_run(1 / rate, tick);
}
