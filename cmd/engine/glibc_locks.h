/*
 * glibc_locks: what glibc's pthread lock words in a target's memory say
 * about who holds them. The layouts are glibc's ABI on x86_64 (nptl; the
 * rwlock's since glibc 2.25). Each read is a few fixed-size integers, and
 * an owner read here is only a number: the caller believes it when it is
 * one of the target's threads.
 */
#ifndef DIAG_CMD_ENGINE_GLIBC_LOCKS_H
#define DIAG_CMD_ENGINE_GLIBC_LOCKS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The owner of the pthread_mutex_t at addr (0: none recorded): __owner,
 * or for a priority-inheritance or robust mutex the lock word's TID. 0,
 * -EFAULT (unreadable), -EINVAL (its kind is none glibc makes). */
int glibc_mutex_owner(pid_t pid, uint64_t addr, pid_t *ret);

struct glibc_rwlock_state {
	uint64_t start;   /* the pthread_rwlock_t's address */
	pid_t writer;     /* __cur_writer, 0 when no writer holds it */
	unsigned readers; /* the readers __readers counts (waiting ones included) */
};

/* The pthread_rwlock_t around the futex word a thread sleeps on: readers
 * sleep on __wrphase_futex (start + 8), writers on __writers_futex (start
 * + 12) while a writer (one of the target's threads, is_thread says)
 * holds it, or on __wrphase_futex while readers do. 0, or -EINVAL when
 * neither place holds a pthread_rwlock_t as glibc lays it out. */
int glibc_rwlock_state(pid_t pid, uint64_t word, bool writer, bool (*is_thread)(void *, pid_t),
		       void *arg, struct glibc_rwlock_state *ret);

#endif
