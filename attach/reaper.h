/*
 * reaper: private to attach/. Reaps traced threads that exit while they are
 * ours, from a thread of its own, so that nothing the capture thread blocks
 * in can wait on them.
 *
 * Why (reliability.md item 5, verified on 6.18): while we hold some threads
 * of a process, a thread we have not seized yet may call execve. de_thread()
 * SIGKILLs every other thread and, holding the target's cred_guard_mutex,
 * waits until each is released; a traced thread that dies stays a zombie
 * until its tracer waits for it. Our next PTRACE_SEIZE of that process
 * sleeps on the same mutex and restarts on every signal (-ERESTARTNOINTR),
 * so the capture thread can never do that wait itself: both hang forever.
 * /proc/TID/syscall (lock_trace) blocks the same way, killably only.
 *
 * Any thread of the tracer's thread group may wait for a tracee, so this
 * thread peeks (WNOWAIT) at each tid we hold and reaps only the ones that
 * exited: ptrace-stops are left for the capture thread, which is the only
 * one allowed to act on them.
 */
#ifndef DIAG_ATTACH_REAPER_H
#define DIAG_ATTACH_REAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Start the reaper thread if it is not running yet (idempotent). Called
 * before a capture holds anything: starting it costs a thread creation and
 * a wait for the thread to run, which must not fall inside a pause. Returns
 * 0 or -errno. */
int reaper_start(void);

/* tid is now traced by us (just seized). Starts the reaper thread on first
 * use. Returns 0 or -errno (-ENOSPC: table full; the capture goes on
 * without the safety net for that thread). */
int reaper_track(pid_t tid);

/* After a capture: the tids still traced are exactly tids[0..n) (the late
 * list). Entries no longer traced would only cost a failed waitid each, but
 * forgetting them in one O(n) step keeps the detach loop, which runs while
 * the target is held, free of per-thread bookkeeping. */
void reaper_replace(const pid_t *tids, size_t n);

/* How many tracked threads the reaper has reaped since the start (a
 * statistic: each one is a thread that died while we held it). */
unsigned long reaper_reaped_count(void);

#endif
