/* What each blocked thread waits for, and the graph of it (waits.h). The
 * printing is in waits_out.c. */
#include "cmd/engine/waits.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/syscall.h>

#include "cmd/engine/glibc_locks.h"
#include "cmd/engine/profile_out.h"

static int by_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = ((const struct thread_capture *)b)->tid;
	return x < y ? -1 : x > y;
}

long waits_thread_index(const struct process_capture *pc, pid_t tid)
{
	/* pc->threads is main thread first, then by tid. */
	if (pc->nthreads == 0 || tid <= 0)
		return -1;
	if (pc->threads[0].tid == tid)
		return 0;
	const struct thread_capture *t =
		bsearch(&tid, pc->threads + 1, pc->nthreads - 1, sizeof(*pc->threads), by_tid);
	if (t)
		return t - pc->threads;
	for (size_t i = 1; i < pc->nthreads; i++) /* in case the order is not kept */
		if (pc->threads[i].tid == tid)
			return (long)i;
	return -1;
}

static bool blocked(const struct thread_capture *tc)
{
	return (tc->state == 'S' || tc->state == 'D') && tc->syscall_nr >= 0 &&
	       (tc->outcome == THREAD_CAPTURED || tc->not_stopped || tc->outcome == THREAD_NOT_READ);
}

static uint64_t arg(const struct thread_capture *tc, int i)
{
	const struct user_regs_struct *r = &tc->regs;
	const unsigned long long a[6] = {r->rdi, r->rsi, r->rdx, r->r10, r->r8, r->r9};
	return a[i];
}

int waits_collect(const struct process_capture *pc, struct addrset *set)
{
	for (size_t i = 0; i < pc->nthreads; i++) {
		const struct thread_capture *tc = &pc->threads[i];
		if (blocked(tc) && tc->syscall_nr == SYS_futex && addrset_add(set, arg(tc, 0)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Which glibc function took the futex, from the innermost named frames. */
static enum wait_kind futex_kind(const struct unwound_stack *stack, const struct symtab *st,
				 const char **innermost)
{
	static const struct {
		const char *needle;
		enum wait_kind kind;
	} table[] = {
		{"pthread_mutex_lock", WAIT_MUTEX},      {"pthread_mutex_timedlock", WAIT_MUTEX},
		{"pthread_mutex_clocklock", WAIT_MUTEX}, {"pthread_mutex_cond_lock", WAIT_MUTEX},
		{"rwlock_rdlock", WAIT_RWLOCK_READ},     {"rwlock_timedrdlock", WAIT_RWLOCK_READ},
		{"rwlock_clockrdlock", WAIT_RWLOCK_READ}, {"rwlock_wrlock", WAIT_RWLOCK_WRITE},
		{"rwlock_timedwrlock", WAIT_RWLOCK_WRITE}, {"rwlock_clockwrlock", WAIT_RWLOCK_WRITE},
		{"pthread_cond_wait", WAIT_CONDVAR},     {"pthread_cond_timedwait", WAIT_CONDVAR},
		{"pthread_cond_clockwait", WAIT_CONDVAR}, {"sem_wait", WAIT_SEMAPHORE},
		{"sem_timedwait", WAIT_SEMAPHORE},       {"sem_clockwait", WAIT_SEMAPHORE},
		{"pthread_join", WAIT_JOIN},             {"pthread_timedjoin", WAIT_JOIN},
		{"pthread_clockjoin", WAIT_JOIN},
	};
	*innermost = NULL;
	for (size_t k = 0; st && k < stack->n && k < 12; k++) {
		const struct sym_location *loc = symtab_lookup(st, frame_lookup_address(stack->pcs, k));
		for (size_t j = 0; loc && j < loc->nframes; j++) {
			const char *fn = loc->frames[j].function;
			if (!fn)
				continue;
			if (!*innermost)
				*innermost = fn;
			for (size_t t = 0; t < sizeof(table) / sizeof(table[0]); t++)
				if (strstr(fn, table[t].needle))
					return table[t].kind;
		}
	}
	return WAIT_FUTEX;
}

static const char *innermost_name(const struct unwound_stack *stack, const struct symtab *st)
{
	const char *fn;
	futex_kind(stack, st, &fn);
	return fn;
}

static bool read_exact(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return attach_read_memory(pid, addr, buf, len) == (ssize_t)len;
}

/* An owner read from the lock: believed only if it is one of our threads. */
static void set_owner(struct thread_wait *w, const struct process_capture *pc, pid_t owner,
		      const char *what)
{
	if (owner <= 0) {
		snprintf(w->unknown, sizeof(w->unknown),
			 "owner unknown: the %s records no owner (just released, or never held)", what);
		return;
	}
	if (waits_thread_index(pc, owner) >= 0) {
		w->owner = owner;
		return;
	}
	snprintf(w->unknown, sizeof(w->unknown),
		 "owner unknown: the %s names thread %d, not a thread of this process (it may have "
		 "exited holding it, or the lock is shared with another process)",
		 what, (int)owner);
}

static bool is_our_thread(void *pc, pid_t tid)
{
	return waits_thread_index(pc, tid) >= 0;
}

static void decode_rwlock(struct thread_wait *w, const struct process_capture *pc)
{
	struct glibc_rwlock_state rs;
	int r = glibc_rwlock_state(pc->pid, w->word, w->kind == WAIT_RWLOCK_WRITE, is_our_thread,
				   (void *)pc, &rs);
	if (r < 0) {
		snprintf(w->unknown, sizeof(w->unknown),
			 "owner unknown: no pthread_rwlock_t as glibc lays it out around the futex word");
		return;
	}
	w->addr = rs.start;
	if (rs.writer > 0)
		set_owner(w, pc, rs.writer, "rwlock");
	else if (rs.readers)
		w->readers = rs.readers; /* less the readers seen waiting: waits_build */
	else
		snprintf(w->unknown, sizeof(w->unknown),
			 "owner unknown: the rwlock shows neither a writer nor readers (just released)");
}

static void decode_futex(struct thread_wait *w, const struct process_capture *pc,
			 const struct unwound_stack *stack, const struct symtab *st,
			 const struct thread_capture *tc)
{
	const char *innermost;
	w->kind = futex_kind(stack, st, &innermost);
	w->addr = w->word = arg(tc, 0);
	switch (w->kind) {
	case WAIT_MUTEX: {
		pid_t owner;
		int r = glibc_mutex_owner(pc->pid, w->addr, &owner);
		if (r == 0)
			set_owner(w, pc, owner, "mutex");
		else
			snprintf(w->unknown, sizeof(w->unknown), "owner unknown: %s",
				 r == -EFAULT ? "the mutex could not be read"
					      : "the futex word is not in a pthread_mutex_t as glibc lays it out");
		break;
	}
	case WAIT_RWLOCK_READ:
	case WAIT_RWLOCK_WRITE:
		decode_rwlock(w, pc);
		break;
	case WAIT_SEMAPHORE: {
		uint32_t value;
		w->sem_value = read_exact(pc->pid, w->addr, &value, sizeof(value)) ? (long)value : -1;
		break;
	}
	case WAIT_JOIN: {
		/* pthread_join sleeps on the joined thread's tid word, which
		 * the kernel clears when that thread exits. */
		int32_t tid;
		if (read_exact(pc->pid, w->addr, &tid, sizeof(tid)))
			set_owner(w, pc, tid, "joined thread's descriptor");
		break;
	}
	case WAIT_FUTEX:
		snprintf(w->unknown, sizeof(w->unknown),
			 "owner unknown: no glibc lock function took this futex (%s)",
			 st ? "a lock of glibc's own or the program's, with no owner field we know"
			    : "no symbols");
		break;
	default:
		break;
	}
}

/* poll/ppoll's pollfd array, or select's read and write sets. */
static void decode_fdset(struct thread_wait *w, const struct process_capture *pc,
			 const struct thread_capture *tc)
{
	w->kind = WAIT_FDSET;
	if (tc->syscall_nr == SYS_poll || tc->syscall_nr == SYS_ppoll) {
		struct {
			int32_t fd;
			int16_t events, revents;
		} p[64];
		uint64_t n = arg(tc, 1);
		size_t take = n < 64 ? (size_t)n : 64;
		if (take && read_exact(pc->pid, arg(tc, 0), p, take * sizeof(p[0])))
			for (size_t i = 0; i < take; i++) {
				if (p[i].fd < 0)
					continue;
				if (w->nfds < WAIT_MAX_FDS)
					w->fds[w->nfds++] = p[i].fd;
				else
					w->fds_more++;
			}
		w->fds_more += n > take ? (size_t)(n - take) : 0;
		return;
	}
	uint64_t nfds = arg(tc, 0);
	if (nfds > FD_SETSIZE)
		nfds = FD_SETSIZE;
	uint8_t bits[2][FD_SETSIZE / 8];
	bool have[2] = {false, false};
	size_t bytes = (size_t)(nfds + 7) / 8;
	for (int s = 0; s < 2; s++)
		have[s] = bytes && arg(tc, 1 + s) && read_exact(pc->pid, arg(tc, 1 + s), bits[s], bytes);
	for (uint64_t fd = 0; fd < nfds; fd++)
		for (int s = 0; s < 2; s++)
			if (have[s] && (bits[s][fd / 8] >> (fd % 8) & 1)) {
				if (w->nfds < WAIT_MAX_FDS)
					w->fds[w->nfds++] = (int)fd;
				else
					w->fds_more++;
				break;
			}
}

static bool fd_call(long nr, int *which)
{
	*which = 0;
	switch (nr) {
	case SYS_read: case SYS_write: case SYS_pread64: case SYS_pwrite64: case SYS_readv:
	case SYS_writev: case SYS_preadv: case SYS_pwritev: case SYS_preadv2: case SYS_pwritev2:
	case SYS_recvfrom: case SYS_sendto: case SYS_recvmsg: case SYS_sendmsg: case SYS_recvmmsg:
	case SYS_sendmmsg: case SYS_accept: case SYS_accept4: case SYS_connect: case SYS_flock:
	case SYS_fcntl: case SYS_fsync: case SYS_fdatasync: case SYS_ioctl: case SYS_epoll_wait:
	case SYS_epoll_pwait: case SYS_epoll_pwait2: case SYS_splice: case SYS_io_uring_enter:
		return true;
	case SYS_sendfile:
		*which = 1; /* in_fd */
		return true;
	default:
		return false;
	}
}

static void decode_thread(struct thread_wait *w, const struct process_capture *pc,
			  const struct unwound_stack *stack, const struct symtab *st,
			  const struct thread_capture *tc)
{
	int which;
	long nr = tc->syscall_nr;
	if (nr == SYS_futex) {
		decode_futex(w, pc, stack, st, tc);
	} else if (fd_call(nr, &which)) {
		w->kind = WAIT_FD;
		w->fd = (int)arg(tc, which);
		w->fdi = malloc(sizeof(*w->fdi));
		if (w->fdi && fd_info_read(pc->pid, w->fd, w->fdi) < 0) {
			free(w->fdi);
			w->fdi = NULL;
		}
	} else if (nr == SYS_poll || nr == SYS_ppoll || nr == SYS_select || nr == SYS_pselect6) {
		decode_fdset(w, pc, tc);
	} else if (nr == SYS_wait4) {
		w->kind = WAIT_CHILD;
		w->child = (long)(int32_t)arg(tc, 0);
	} else if (nr == SYS_waitid) {
		w->kind = WAIT_CHILD;
		w->child = arg(tc, 0) == 1 /* P_PID */ ? (long)(int32_t)arg(tc, 1) : -1;
	} else if (nr == SYS_pause || nr == SYS_rt_sigsuspend || nr == SYS_rt_sigtimedwait) {
		w->kind = WAIT_SIGNAL;
	} else if (nr == SYS_nanosleep || nr == SYS_clock_nanosleep) {
		w->kind = WAIT_SLEEP;
		uint64_t req = nr == SYS_nanosleep ? arg(tc, 0) : arg(tc, 2);
		int64_t ts[2];
		bool relative = nr == SYS_nanosleep || !(arg(tc, 1) & 1 /* TIMER_ABSTIME */);
		if (relative && read_exact(pc->pid, req, ts, sizeof(ts)) && ts[0] >= 0 && ts[1] >= 0 &&
		    ts[0] < 1000000000000)
			w->sleep_ns = (uint64_t)ts[0] * 1000000000u + (uint64_t)ts[1];
	} else if (nr == SYS_restart_syscall) {
		w->kind = WAIT_RESTART;
		w->continues = innermost_name(stack, st);
	}
}

/* Follow the edges from each thread; a walk that comes back to a thread of
 * its own walk has found a cycle, recorded once. */
static int find_cycles(const struct process_capture *pc, struct wait_graph *g)
{
	size_t n = g->n;
	long *next = malloc(n * sizeof(*next));
	int *mark = calloc(n, sizeof(*mark)); /* 0 new, walk id + 1 while walking, -1 done */
	g->cycle_members = malloc(n * sizeof(*g->cycle_members));
	g->cycles = malloc(n * sizeof(*g->cycles));
	if (!next || !mark || !g->cycle_members || !g->cycles) {
		free(next);
		free(mark);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		next[i] = g->waits[i].owner ? waits_thread_index(pc, g->waits[i].owner) : -1;
	size_t used = 0;
	for (size_t s = 0; s < n; s++) {
		long i = (long)s;
		while (i >= 0 && mark[i] == 0) {
			mark[i] = (int)s + 1;
			i = next[i];
		}
		if (i >= 0 && mark[i] == (int)s + 1) {
			struct wait_cycle *c = &g->cycles[g->ncycles++];
			c->first = used;
			c->len = 0;
			long j = i;
			do {
				g->cycle_members[used++] = (size_t)j;
				c->len++;
				j = next[j];
			} while (j != i);
		}
		for (i = (long)s; i >= 0 && mark[i] == (int)s + 1; i = next[i])
			mark[i] = -1;
	}
	free(next);
	free(mark);
	return 0;
}

int waits_build(const struct process_capture *pc, const struct unwound_stack *stacks,
		const struct symtab *st, struct wait_graph *g)
{
	memset(g, 0, sizeof(*g));
	g->n = pc->nthreads;
	g->waits = calloc(g->n ? g->n : 1, sizeof(*g->waits));
	if (!g->waits)
		return -ENOMEM;
	for (size_t i = 0; i < g->n; i++) {
		struct thread_wait *w = &g->waits[i];
		w->fd = -1;
		w->sem_value = -1;
		if (blocked(&pc->threads[i]))
			decode_thread(w, pc, &stacks[i], st, &pc->threads[i]);
		const struct sym_location *loc = w->word && st ? symtab_lookup(st, w->word) : NULL;
		if (loc && loc->nframes && loc->frames[0].function) {
			w->name = loc->frames[0].function;
			/* A condition variable sleeps on a word inside it: it is
			 * the variable the symbol names. */
			if (w->kind == WAIT_CONDVAR)
				w->addr = w->word - loc->frames[0].function_offset;
			w->name_offset = (int64_t)loc->frames[0].function_offset - (int64_t)(w->word - w->addr);
		}
	}
	/* glibc counts a reader in __readers before it sleeps: those we see
	 * asleep on the same rwlock do not hold it. */
	for (size_t i = 0; i < g->n; i++) {
		struct thread_wait *w = &g->waits[i];
		if (!w->readers)
			continue;
		unsigned waiting = 0;
		for (size_t j = 0; j < g->n; j++)
			waiting += g->waits[j].kind == WAIT_RWLOCK_READ && g->waits[j].addr == w->addr;
		w->readers = w->readers > waiting ? w->readers - waiting : 0;
		if (!w->readers)
			snprintf(w->unknown, sizeof(w->unknown),
				 "owner unknown: the rwlock counts only the readers waiting for it");
	}
	int r = find_cycles(pc, g);
	if (r < 0)
		waits_free(g);
	return r;
}

void waits_free(struct wait_graph *g)
{
	for (size_t i = 0; g->waits && i < g->n; i++)
		free(g->waits[i].fdi);
	free(g->waits);
	free(g->cycles);
	free(g->cycle_members);
	memset(g, 0, sizeof(*g));
}
