/* The owners glibc's lock words record (glibc_locks.h). */
#include "cmd/engine/glibc_locks.h"

#include <errno.h>
#include <string.h>

#include "attach/attach.h"

/* glibc's pthread_mutex_t (x86_64, nptl since 2.x; the layout is ABI):
 * __lock, __count, __owner, __nusers, __kind. */
struct glibc_mutex {
	int32_t lock;
	uint32_t count;
	int32_t owner;
	uint32_t nusers;
	int32_t kind;
};

#define MUTEX_KIND_TYPE 3         /* normal, recursive, errorcheck, adaptive */
#define MUTEX_ROBUST 16
#define MUTEX_PRIO_INHERIT 32
#define MUTEX_PRIO_PROTECT 64
#define MUTEX_PSHARED 128
#define MUTEX_ELISION 256
#define MUTEX_NO_ELISION 512
#define MUTEX_PRIO_CEILING 0xfff80000u
#define FUTEX_TID_MASK 0x3fffffff

/* glibc's pthread_rwlock_t (2.25+): the words waiters sleep on and the
 * writer that holds it. Readers sleep on __wrphase_futex (offset 8),
 * writers on __writers_futex (12) while a writer holds the lock, or on
 * __wrphase_futex while readers do. */
struct glibc_rwlock {
	uint32_t readers, writers, wrphase_futex, writers_futex, pad3, pad4;
	int32_t cur_writer, shared;
	int8_t rwelision;
	uint8_t pad1[7];
	uint64_t pad2;
	uint32_t flags;
};
#define RWLOCK_READER_SHIFT 3
#define RWLOCK_WRPHASE 1

static bool read_exact(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return attach_read_memory(pid, addr, buf, len) == (ssize_t)len;
}

int glibc_mutex_owner(pid_t pid, uint64_t addr, pid_t *ret)
{
	struct glibc_mutex m;
	if (!read_exact(pid, addr, &m, sizeof(m)))
		return -EFAULT;
	uint32_t kind = (uint32_t)m.kind & ~MUTEX_PRIO_CEILING;
	if (kind & ~(uint32_t)(MUTEX_KIND_TYPE | MUTEX_ROBUST | MUTEX_PRIO_INHERIT | MUTEX_PRIO_PROTECT |
			       MUTEX_PSHARED | MUTEX_ELISION | MUTEX_NO_ELISION))
		return -EINVAL;
	/* PI and robust mutexes keep the owner in the lock word itself. */
	*ret = kind & (MUTEX_ROBUST | MUTEX_PRIO_INHERIT) ? (pid_t)(m.lock & FUTEX_TID_MASK) : (pid_t)m.owner;
	return 0;
}

/* The rwlock's start is 8 or 12 bytes before the word slept on. */
static bool rwlock_at(pid_t pid, uint64_t addr, struct glibc_rwlock *rw)
{
	return read_exact(pid, addr, rw, sizeof(*rw)) && rw->pad3 == 0 && rw->pad4 == 0 &&
	       rw->flags <= 2 && (rw->shared == 0 || rw->shared == 1) && rw->cur_writer >= 0;
}

int glibc_rwlock_state(pid_t pid, uint64_t word, bool writer, bool (*is_thread)(void *, pid_t),
		       void *arg, struct glibc_rwlock_state *ret)
{
	struct glibc_rwlock rw;
	memset(ret, 0, sizeof(*ret));
	/* A writer held off by a writer sleeps on __writers_futex. */
	if (writer && word >= 12 && rwlock_at(pid, word - 12, &rw) && rw.cur_writer > 0 &&
	    is_thread(arg, rw.cur_writer)) {
		ret->start = word - 12;
		ret->writer = rw.cur_writer;
		return 0;
	}
	if (word < 8 || !rwlock_at(pid, word - 8, &rw))
		return -EINVAL;
	ret->start = word - 8;
	ret->writer = rw.cur_writer;
	if (!(rw.readers & RWLOCK_WRPHASE))
		ret->readers = rw.readers >> RWLOCK_READER_SHIFT;
	return 0;
}
