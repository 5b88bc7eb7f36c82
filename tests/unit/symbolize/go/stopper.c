/* SPDX-License-Identifier: MIT */
#include "stopper.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

static bool have(const struct stopper *st, pid_t tid)
{
	for (size_t i = 0; i < st->n; i++)
		if (st->tids[i] == tid)
			return true;
	return false;
}

int stopper_stop(struct stopper *st, pid_t pid)
{
	memset(st, 0, sizeof(*st));
	st->pid = pid;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	/* rescan until no new thread shows up: threads are created meanwhile */
	for (bool added = true; added;) {
		added = false;
		DIR *d = opendir(path);
		if (!d)
			return -errno;
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			pid_t tid = (pid_t)atoi(e->d_name);
			if (tid <= 0 || have(st, tid) || st->n == STOPPER_MAX)
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0)
				continue; /* exited */
			ptrace(PTRACE_INTERRUPT, tid, 0, 0);
			int status;
			if (waitpid(tid, &status, __WALL) != tid)
				continue;
			size_t k = st->n++;
			st->tids[k] = tid;
			if (WIFSTOPPED(status) && (status >> 16) != PTRACE_EVENT_STOP)
				st->sigs[k] = WSTOPSIG(status);
			added = true;
		}
		closedir(d);
	}
	for (size_t i = 0; i < st->n; i++) {
		struct user_regs_struct r;
		if (ptrace(PTRACE_GETREGS, st->tids[i], 0, &r) != 0)
			continue;
		st->regs[i] = (struct go_thread_regs){st->tids[i], r.rip, r.rsp, r.rbp, r.fs_base};
	}
	return 0;
}

void stopper_release(struct stopper *st)
{
	for (size_t i = 0; i < st->n; i++)
		ptrace(PTRACE_DETACH, st->tids[i], 0, (void *)(intptr_t)st->sigs[i]);
	st->n = 0;
}

int stopper_read(void *ctx, const struct go_mem_range *ranges, size_t n)
{
	pid_t pid = (pid_t)(intptr_t)ctx;
	struct iovec l[GO_READ_MAX_RANGES], r[GO_READ_MAX_RANGES];
	size_t total = 0;
	if (n > GO_READ_MAX_RANGES)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		l[i] = (struct iovec){ranges[i].buf, ranges[i].len};
		r[i] = (struct iovec){(void *)(uintptr_t)ranges[i].addr, ranges[i].len};
		total += ranges[i].len;
	}
	ssize_t got = process_vm_readv(pid, l, n, r, n, 0);
	if (got < 0)
		return -errno;
	return (size_t)got == total ? 0 : -EFAULT;
}

int child_spawn(struct child *c, char *const argv[], char *const envp[])
{
	int in[2], out[2];
	if (pipe(in) || pipe(out))
		return -errno;
	pid_t p = fork();
	if (p < 0)
		return -errno;
	if (p == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in = fdopen(in[1], "w");
	c->out = fdopen(out[0], "r");
	c->pid = 0;
	char line[128];
	if (!fgets(line, sizeof(line), c->out) || sscanf(line, "pid %d", &c->pid) != 1) {
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
		return -EIO;
	}
	c->pid = p;
	return 0;
}

int child_cmd_reply(struct child *c, const char *line, char *reply, size_t len)
{
	char buf[256];
	fprintf(c->in, "%s\n", line);
	fflush(c->in);
	if (!fgets(buf, sizeof(buf), c->out) || strncmp(buf, "ok", 2) != 0)
		return -EIO;
	if (reply)
		snprintf(reply, len, "%s", buf + 2);
	return 0;
}

int child_cmd(struct child *c, const char *line)
{
	return child_cmd_reply(c, line, NULL, 0);
}

void child_kill(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	if (c->in)
		fclose(c->in);
	if (c->out)
		fclose(c->out);
	c->pid = 0;
	c->in = c->out = NULL;
}
