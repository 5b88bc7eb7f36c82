/*
 * broker: the privileged half of a sandboxed worker's file access, as
 * OpenSSH's monitor is to its unprivileged child.
 *
 * A worker parses what the target controls (its ELF, DWARF and CFI, a Go
 * runtime's or CPython's structures, a perf map) and so gives up every
 * privilege (sandbox.h). Before it does, it forks a broker, which keeps
 * the tool's credentials and does one thing: it answers the worker's
 * requests to open the target's files with a read-only descriptor
 * (SCM_RIGHTS over a SOCK_SEQPACKET pair), opened and checked here:
 *
 *   - a mapping of the target (a maps line): confined to the target's root
 *     with openat2(RESOLVE_IN_ROOT), else /proc/PID/map_files;
 *   - a separate debug file by path: in the target's root, or the host's;
 *   - /proc/PID/exe, /proc/PID/auxv, and /tmp/perf-PID.map (which must
 *     pass perfmap_check);
 *   - with --debuginfod, a debug file by build-id fetched by libdebuginfod
 *     (loaded at run time), whose network and cache are the broker's.
 *
 * Every path a worker sends is the worker's to forge. So modules, debug
 * files and the executable are handed out only if they are regular files
 * that begin with the ELF magic: a compromised worker can read any ELF
 * file the broker can, and nothing else (no /etc/shadow, no key, no
 * socket, no device, no /proc file but the target's auxv and perf map).
 * The broker parses nothing but its fixed-size requests.
 *
 * The worker's memory reads need no broker: it opens /proc/PID/mem
 * read-only before it drops its privileges (the kernel checks access at
 * open) and reads it with pread.
 */
#ifndef DIAG_SYMBOLIZE_WORKER_BROKER_H
#define DIAG_SYMBOLIZE_WORKER_BROKER_H

#include <stdbool.h>
#include <sys/types.h>

/* From a worker that still has the tool's privileges: open the target's
 * memory (read-only), fork the broker for pid, and route this process's
 * target_access.h through them (target_access_use_broker). The broker
 * exits when the worker closes its end or dies. allow_debuginfod: the
 * broker may fetch debug files by build-id. Returns 0 or -errno (then
 * nothing was installed). */
int broker_start(pid_t pid, bool allow_debuginfod);

#endif
