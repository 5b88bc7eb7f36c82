/* SPDX-License-Identifier: MIT */
/* Test-only stand-in for attach/: stop every thread of a process with
 * PTRACE_SEIZE + PTRACE_INTERRUPT, take registers, read memory, detach. */
#ifndef TESTS_GO_STOPPER_H
#define TESTS_GO_STOPPER_H

#include "goroutines.h"

#define STOPPER_MAX 512

struct stopper {
	pid_t pid;
	size_t n;
	pid_t tids[STOPPER_MAX];
	int sigs[STOPPER_MAX]; /* signal to re-inject on detach */
	struct go_thread_regs regs[STOPPER_MAX];
};

int stopper_stop(struct stopper *st, pid_t pid);
void stopper_release(struct stopper *st);
/* go_read_mem_fn over process_vm_readv; ctx is the pid cast to intptr_t */
int stopper_read(void *ctx, const struct go_mem_range *ranges, size_t n);

/* Spawns argv with pipes for stdin/stdout; waits for the "pid N" line. */
struct child {
	pid_t pid;
	FILE *in, *out;
};
int child_spawn(struct child *c, char *const argv[], char *const envp[]);
/* Sends a line and waits for "ok"; the reply's rest goes to reply. */
int child_cmd(struct child *c, const char *line);
int child_cmd_reply(struct child *c, const char *line, char *reply, size_t len);
void child_kill(struct child *c);

#endif
