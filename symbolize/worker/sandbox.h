/*
 * sandbox: what a worker gives up before it reads anything the target
 * controls, as OpenSSH's and Chromium's unprivileged children do.
 *
 * sandbox_enter(), in a freshly forked worker that has already started its
 * broker (broker.h: the only way it still reaches the target's files):
 *
 *   1. new mount, network and IPC namespaces (as root directly; otherwise
 *      inside a new user namespace), with an empty, read-only tmpfs as its
 *      root directory: no path leads anywhere, no socket reaches a peer;
 *   2. an unprivileged uid and gid (nobody, 65534, with no supplementary
 *      groups) when started as root, which clears every capability; a
 *      non-root tool's worker drops the capabilities its user namespace
 *      gave it;
 *   3. not dumpable (no ptrace by another process of that uid), no new
 *      privileges, no core file;
 *   4. an allowlist seccomp filter of exactly the calls a worker makes
 *      (reading and mapping descriptors it holds, memory, its sockets,
 *      time, exit). Opening, stating or linking a path fails with EACCES
 *      and a socket() with EACCES, so a library that probes a path fails
 *      gently; any other call outside the list ends the worker, which
 *      writes the call's number to the status page first
 *      (sandbox_status.denied_syscall) for the tool to report.
 *
 * Where the kernel refuses a namespace (inside a container without
 * CAP_SYS_ADMIN, or user namespaces disabled) the rest still applies, and
 * the status says which step was refused and why.
 */
#ifndef DIAG_SYMBOLIZE_WORKER_SANDBOX_H
#define DIAG_SYMBOLIZE_WORKER_SANDBOX_H

#include <stdint.h>

/* The uid and gid a worker of a root tool runs as. */
#define SANDBOX_UID 65534
#define SANDBOX_GID 65534

/* Written by the worker into a page it shares with the tool (the worker's
 * own account: the tool checks what it can from /proc, interp.h). */
struct sandbox_status {
	int32_t namespaces_errno; /* 0: new mount, net and IPC namespaces */
	int32_t uid_errno;        /* 0: an unprivileged uid (or no capability left) */
	int32_t seccomp_errno;    /* 0: the allowlist is installed */
	int32_t denied_syscall;   /* -1, or the call the filter stopped */
};

/* Enter the sandbox; st (shared with the tool) receives how far it got.
 * Returns 0, or -errno when the allowlist itself could not be installed
 * (then the worker must not go on). Everything else refused is reported
 * in st and not fatal. */
int sandbox_enter(volatile struct sandbox_status *st);

#endif
