/*
 * waits: who waits on whom in one capture. For each thread asleep in a
 * system call, what it waits for: a glibc mutex or rwlock and the thread
 * that holds it, a condition variable or semaphore (which nobody holds),
 * another thread's exit (pthread_join), a descriptor and what it is, a
 * child, a signal, a sleep. Threads that wait for a thread are edges of a
 * graph; a cycle in it is a deadlock.
 *
 * What it reads: the system call and its arguments (the capture's
 * registers, or /proc/TID/syscall for a thread read without a stop), the
 * innermost frames' function names (which glibc function took the futex:
 * the kind of lock), the lock's words in the target's memory after the
 * release (a few fixed-size integers; an owner is believed only when it is
 * a thread of this process), and /proc for descriptors. An owner is never
 * guessed from stacks: when it cannot be read, unknown says why.
 */
#ifndef DIAG_CMD_ENGINE_WAITS_H
#define DIAG_CMD_ENGINE_WAITS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "attach/attach.h"
#include "attach/fd_info.h"
#include "symbolize/worker/interp.h"
#include "symbolize/worker/symtab.h"

enum wait_kind {
	WAIT_NONE = 0,     /* running, or not in a call we know */
	WAIT_MUTEX,        /* pthread_mutex_t (std::mutex) */
	WAIT_RWLOCK_READ,  /* pthread_rwlock_t, to read */
	WAIT_RWLOCK_WRITE, /* pthread_rwlock_t, to write */
	WAIT_CONDVAR,      /* pthread_cond_t: no owner exists */
	WAIT_SEMAPHORE,    /* sem_t: no owner exists */
	WAIT_JOIN,         /* pthread_join: for a thread to exit */
	WAIT_FUTEX,        /* a futex no glibc lock function was seen taking */
	WAIT_FD,           /* a call on one descriptor */
	WAIT_FDSET,        /* poll, ppoll, select, pselect6: a set of them */
	WAIT_CHILD,        /* wait4, waitid */
	WAIT_SIGNAL,       /* pause, sigsuspend, sigtimedwait */
	WAIT_SLEEP,        /* nanosleep, clock_nanosleep */
	WAIT_RESTART,      /* restart_syscall: a sleep a stop interrupted */
};

#define WAIT_MAX_FDS 16

struct thread_wait {
	enum wait_kind kind;
	uint64_t addr;     /* the lock's start (the futex word for others) */
	uint64_t word;     /* the futex word slept on */
	const char *name;  /* the symbol covering word (from the symtab), or NULL */
	int64_t name_offset; /* addr - the symbol's start */
	pid_t owner;       /* the thread this one waits for; 0: none or unknown */
	unsigned readers;  /* WAIT_RWLOCK_*: held by this many readers (0: not) */
	long sem_value;    /* WAIT_SEMAPHORE: its value, -1 unknown */
	char unknown[160]; /* why the owner is not known ("" when it is, or none exists) */
	int fd;            /* WAIT_FD: the descriptor, -1 none */
	struct fd_info *fdi; /* WAIT_FD: what it is, or NULL if it could not be read */
	int fds[WAIT_MAX_FDS]; /* WAIT_FDSET */
	size_t nfds, fds_more;
	long child;        /* WAIT_CHILD: the pid waited for (-1: any child) */
	uint64_t sleep_ns; /* WAIT_SLEEP: what was asked for (relative), 0 unknown */
	const char *continues; /* WAIT_RESTART: the innermost function, or NULL */
};

struct wait_cycle {
	size_t first, len; /* a run of wait_graph.cycle_members */
};

struct wait_graph {
	size_t n; /* the capture's threads; waits is parallel to them */
	struct thread_wait *waits;
	struct wait_cycle *cycles; /* deadlocks */
	size_t ncycles;
	size_t *cycle_members; /* thread indexes, each cycle in order of its edges */
};

/* The index of thread tid in pc->threads, or -1. */
long waits_thread_index(const struct process_capture *pc, pid_t tid);

/* Add the addresses the graph will want named (each futex word and what
 * it may belong to) to set, before symbols are resolved. 0 or -ENOMEM. */
int waits_collect(const struct process_capture *pc, struct addrset *set);

/* Build the graph of a capture after its release. st may be NULL (no
 * names, no lock kinds: every futex is WAIT_FUTEX). 0 or -ENOMEM. */
int waits_build(const struct process_capture *pc, const struct unwound_stack *stacks,
		const struct symtab *st, struct wait_graph *g);
void waits_free(struct wait_graph *g);

/* Text: the deadlocks and the threads others wait for, before any stack
 * (nothing when there is none); and one thread's wait, indented, as a line
 * of its own ("waits for mutex lock_a (0x...) held by 31121 (t2)"), with
 * the time since it last ran. Names are escaped. The summary returns
 * whether it printed anything. */
bool waits_print_summary(FILE *f, const struct process_capture *pc, const struct wait_graph *g);
void waits_print_thread(FILE *f, const char *indent, const struct process_capture *pc,
			const struct wait_graph *g, size_t i);

/* JSON: a thread's "waits_for" object (NULL when it waits for nothing
 * known) and its "not_run_for_ms"; the capture's "deadlocks" list. */
void waits_thread_json(cJSON *thread, const struct process_capture *pc, const struct wait_graph *g,
		       size_t i);
cJSON *waits_deadlocks_json(const struct process_capture *pc, const struct wait_graph *g);

#endif
