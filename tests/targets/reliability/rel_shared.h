/*
 * rel_shared: the page a reliability target shares with the test that
 * started it. The test creates a file, passes its path in $DIAG_REL_SHM, and
 * both map it: the target reports progress, every signal it received and
 * per-scenario counters; the test sends commands. Plain C11 atomics, so a
 * counter is never lost between threads (a lesson of the research: a
 * non-atomic counter lost 1 in 10,000 across threads).
 */
#ifndef DIAG_REL_SHARED_H
#define DIAG_REL_SHARED_H

#include <stdatomic.h>
#include <stdint.h>

#define REL_NSIG 65
#define REL_NBLOCKED 8

/* The blocking calls of the "blocked" mode, in thread order. */
enum rel_blocked_call {
	REL_EPOLL_INF = 0, /* epoll_wait(-1) */
	REL_EPOLL_TIMEOUT, /* epoll_wait(100 s) */
	REL_SIGTIMEDWAIT,  /* sigtimedwait(100 s) on a signal nobody sends */
	REL_SEMOP,         /* semop on a SysV semaphore that stays 0 */
	REL_READ,          /* read from a pipe nobody writes */
	REL_POLL,          /* poll(-1) on that pipe */
	REL_NANOSLEEP,     /* nanosleep(100 s) */
	REL_FUTEX,         /* FUTEX_WAIT on a word that never changes */
};

/* Commands written by the test into .command; the target acts on them. */
enum rel_command {
	REL_CMD_NONE = 0,
	REL_CMD_EXIT42,   /* exit(42) from the main thread */
	REL_CMD_SIGKILL,  /* raise(SIGKILL) */
	REL_CMD_SIGSEGV,  /* fault (default action: killed, maybe core) */
	REL_CMD_EXIT_GROUP, /* "exit_race" mode: a spinner calls exit_group(43) */
};

struct rel_shared {
	_Atomic uint64_t progress;            /* spinning threads add to it */
	_Atomic uint64_t signals[REL_NSIG];   /* every signal received, by number */
	_Atomic uint32_t command;             /* enum rel_command */
	_Atomic int32_t ready_pid;            /* getpid() of the current image */

	/* A1: SIGRTMIN with si_value = 1, 2, 3...: received and out of order. */
	_Atomic uint64_t rt_received;
	_Atomic uint64_t rt_out_of_order;
	_Atomic uint64_t rt_last;
	/* A2: SIGUSR1 ping-pong; the sender writes its pid first. */
	_Atomic int32_t usr1_sender;
	_Atomic uint64_t usr1_acks;
	_Atomic uint64_t usr1_bad_sender;
	/* A3/A6: handler runs. */
	_Atomic uint64_t tstp_handled;

	/* A8: per blocked call, how often it returned EINTR, and whether the
	 * thread is in it. */
	_Atomic uint64_t eintr[REL_NBLOCKED];
	_Atomic uint64_t entered[REL_NBLOCKED];
	_Atomic int32_t blocked_tid[REL_NBLOCKED];
	_Atomic uint64_t unexpected_returns; /* a blocked call returned otherwise */
	_Atomic int32_t sem_id;              /* SysV semaphore to remove (IPC_RMID) */

	/* B4/B5: exec generation (bumped by each new image). */
	_Atomic uint64_t generation;
	_Atomic uint64_t execs;

	/* B6: children reaped with the expected status, and mismatches. */
	_Atomic uint64_t children_ok;
	_Atomic uint64_t children_bad;
	_Atomic uint64_t vfork_long_done;

	/* C3 / A9: largest gap between two CLOCK_MONOTONIC reads of the probe
	 * thread, in ns. */
	_Atomic uint64_t max_gap_ns;
	_Atomic uint64_t probe_last_ns;

	/* B1/B2 ("churn"): threads created and joined so far. */
	_Atomic uint64_t churned;
	/* B9 ("vfork_hold"): tid of the thread sitting in vfork (in D), the
	 * vfork child's pid, and whether the vfork has returned. */
	_Atomic int32_t vfork_tid;
	_Atomic int32_t vfork_child;
	_Atomic uint64_t vfork_hold_done;
};

#endif
