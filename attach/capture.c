/* Stop every thread, copy what unwinding needs, release. Everything between
 * the first PTRACE_INTERRUPT and the last PTRACE_DETACH is target pause, so
 * this file does as little as possible in that window: no allocation in
 * steady state, no parsing beyond locating the stack mapping, no symbol
 * work. */
#include "attach.h"
#include "last_ran.h"
#include "procfs.h"
#include "reaper.h"
#include "watchdog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_STACK_BYTES (512u * 1024u)
#define DEFAULT_STOP_TIMEOUT_MS 100u
/* Copy at most this much when SP is not inside any mapping we know of
 * (a mapping created after our maps snapshot). */
#define UNKNOWN_STACK_BYTES (64u * 1024u)

/* Threads seized in an earlier capture that had not stopped by its deadline.
 * They still have our interrupt pending, so the moment they trap they would
 * sit in a ptrace-stop until we detach them: every capture (and
 * attach_service_late) polls them first. Only the thread that seized a
 * tracee may operate on it; the tool does all ptrace work on one thread. */
#define MAX_LATE 4096
struct late {
	pid_t tid, tgid;
};
static struct late late_list[MAX_LATE];
static size_t nlate_tids;

static void late_add(pid_t tid, pid_t tgid)
{
	for (size_t i = 0; i < nlate_tids; i++)
		if (late_list[i].tid == tid)
			return;
	if (nlate_tids < MAX_LATE)
		late_list[nlate_tids++] = (struct late){tid, tgid};
}

/* Tell the reaper which threads stay traced after a capture: the late ones
 * (and zombies not yet reported). */
static void late_publish(void)
{
	static pid_t tids[MAX_LATE];
	for (size_t i = 0; i < nlate_tids; i++)
		tids[i] = late_list[i].tid;
	reaper_replace(tids, nlate_tids);
}

/* options.skip_idle: each thread's on-CPU time as read right after the
 * previous capture released it (or, if it was skipped, as read before this
 * one). A thread whose time still reads the same has not run since. Keyed
 * to one target; a different target starts afresh. */
struct idle_entry {
	pid_t tid;
	uint64_t cpu_ns;
	char state;    /* as last read: an idle thread's state is not re-read */
	char comm[17];
};
static struct idle_entry *idle_prev, *idle_next;
static size_t nidle_prev, nidle_next, idle_cap;
static pid_t idle_pid;
static uint64_t idle_starttime;

static int idle_cmp(const void *a, const void *b)
{
	const struct idle_entry *x = a, *y = b;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static const struct idle_entry *idle_lookup(pid_t tid)
{
	size_t lo = 0, hi = nidle_prev;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (idle_prev[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nidle_prev && idle_prev[lo].tid == tid ? &idle_prev[lo] : NULL;
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void attach_options_init(struct attach_options *o)
{
	/* Every field, including those added later (skip_idle was not set
	 * here, and a caller's stack garbage read as a bool is undefined:
	 * UBSan caught it in the C3 driver). */
	memset(o, 0, sizeof(*o));
	o->stack_bytes_max = DEFAULT_STACK_BYTES;
	o->stop_timeout_ms = DEFAULT_STOP_TIMEOUT_MS;
	o->read_wait_details = false;
	o->realtime_window = true;
	o->while_held = NULL;
	o->while_held_ctx = NULL;
	o->no_interrupt_blocked = false;
	o->only_eintr_prone = false;
	const char *hold = getenv("DIAG_ATTACH_TEST_HOLD_MS");
	o->test_hold_ms = hold ? (unsigned)strtoul(hold, NULL, 10) : 0;
}

unsigned long attach_reaped_threads(void)
{
	return reaper_reaped_count();
}

/* While we hold threads, a target thread we have already released (or any
 * other task) must not preempt us: on a 2-CPU machine a woken CPU-bound
 * thread took the tool's CPU for milliseconds in the middle of the release
 * loop, and every still-held thread paid for it. SCHED_FIFO at the lowest
 * real-time priority for the capture window only (tens to hundreds of
 * microseconds); our waits block, so the CPU is free whenever we are not
 * working, and the kernel's RT throttling bounds any bug. Needs
 * CAP_SYS_NICE; without it we run as before. */
static bool enter_realtime(void)
{
	struct sched_param sp = {.sched_priority = 1};
	return sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0;
}

static void leave_realtime(void)
{
	struct sched_param sp = {.sched_priority = 0};
	sched_setscheduler(0, SCHED_OTHER, &sp);
}

void process_capture_release(struct process_capture *pc)
{
	for (size_t i = 0; i < pc->threads_cap; i++)
		free(pc->threads[i].stack);
	free(pc->threads);
	free(pc->maps_text);
	memset(pc, 0, sizeof(*pc));
}

/* The state letter of /proc/<path>/stat, 0 if unreadable. */
static char stat_state(int dirfd, const char *path)
{
	char buf[1024];
	struct procfs_stat st;
	if (procfs_read_at(dirfd, path, buf, sizeof(buf)) < 0 || procfs_parse_stat(buf, &st) < 0)
		return 0;
	return st.state;
}

pid_t attach_memory_tid(pid_t pid)
{
	char path[32];
	int pfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return pid;
	pid_t found = pid;
	snprintf(path, sizeof(path), "%d/stat", (int)pid);
	char st = stat_state(pfd, path);
	snprintf(path, sizeof(path), "%d/task", (int)pid);
	int tfd = st == 'Z' ? openat(pfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	DIR *d = tfd >= 0 ? fdopendir(tfd) : NULL;
	if (!d && tfd >= 0)
		close(tfd);
	struct dirent *de;
	while (d && found == pid && (de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid <= 0 || tid == pid)
			continue;
		snprintf(path, sizeof(path), "%d/stat", (int)tid);
		char ts = stat_state(dirfd(d), path);
		if (ts && ts != 'Z' && ts != 'X')
			found = tid;
	}
	if (d)
		closedir(d);
	close(pfd);
	return found;
}

ssize_t attach_read_memory(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return n < 0 ? -errno : n;
}

/* Detach a late thread if it has trapped since. Returns true when it is
 * no longer ours (detached, or gone). */
static bool service_late_one(const struct late *l)
{
	int status;
	pid_t r = waitpid(l->tid, &status, __WALL | WNOHANG);
	if (r < 0) {
		/* ECHILD: reaped (by the reaper), or no longer ours. One case
		 * needs care: a non-leader that was inside execve when we seized
		 * it comes out of the exec as the leader, under the process's
		 * pid, still traced by us with our interrupt pending (ptrace(2):
		 * "the execing thread ... changes its tid"). Keep watching the
		 * pid; if we do not trace it, waitpid says ECHILD next time. */
		if (l->tid != l->tgid)
			late_add(l->tgid, l->tgid);
		return true;
	}
	if (r == 0)
		return false;
	if (WIFEXITED(status) || WIFSIGNALED(status))
		return true;
	int sig = 0;
	if (WIFSTOPPED(status) && (status >> 16) == 0)
		sig = WSTOPSIG(status); /* signal-delivery-stop: hand it on */
	if (ptrace(PTRACE_DETACH, l->tid, 0, (void *)(long)sig) < 0 && errno == ESRCH)
		waitpid(l->tid, &status, __WALL | WNOHANG); /* killed while stopped */
	return true;
}

static void service_late(void)
{
	if (nlate_tids == 0)
		return;
	/* service_late_one may append (the exec case) while we walk: the list
	 * only grows at its end, and we compact behind the cursor. */
	size_t kept = 0;
	for (size_t i = 0; i < nlate_tids; i++) {
		struct late l = late_list[i];
		if (!service_late_one(&l))
			late_list[kept++] = l;
	}
	nlate_tids = kept;
	late_publish();
}

static bool is_late(pid_t tid)
{
	for (size_t i = 0; i < nlate_tids; i++)
		if (late_list[i].tid == tid)
			return true;
	return false;
}

static int read_maps_at(int dirfd, const char *path, struct process_capture *pc)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	pc->maps_len = 0;
	for (;;) {
		if (pc->maps_cap - pc->maps_len < 4096) {
			size_t cap = pc->maps_cap ? pc->maps_cap * 2 : 65536;
			char *p = realloc(pc->maps_text, cap + 1);
			if (!p) {
				close(fd);
				return -ENOMEM;
			}
			pc->maps_text = p;
			pc->maps_cap = cap;
		}
		ssize_t n = read(fd, pc->maps_text + pc->maps_len, pc->maps_cap - pc->maps_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return e == ESRCH ? -ESRCH : -e;
		}
		if (n == 0)
			break;
		pc->maps_len += (size_t)n;
	}
	close(fd);
	pc->maps_text[pc->maps_len] = '\0';
	return 0;
}

int attach_read_maps(const struct attach_target *t, struct process_capture *pc)
{
	int r = read_maps_at(t->proc_dirfd, "maps", pc);
	if (r < 0 || pc->maps_len)
		return r;
	/* Empty: the leader has no memory of its own any more. Either main
	 * called pthread_exit (a zombie leader; the other threads share the
	 * memory and list it in their own maps) or the whole process is
	 * exiting (every thread's reads empty: it is gone). */
	int dfd = dup(t->task_dirfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return -ESRCH;
	}
	rewinddir(d);
	r = -ESRCH;
	struct dirent *de;
	while (r == -ESRCH && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || atoi(de->d_name) == t->pid)
			continue;
		char path[300];
		snprintf(path, sizeof(path), "%s/maps", de->d_name);
		int rr = read_maps_at(t->task_dirfd, path, pc);
		if (rr == -ENOMEM)
			r = rr;
		else if (rr == 0 && pc->maps_len)
			r = 0;
	}
	closedir(d);
	return r;
}

/* Double the capacity of two arrays kept in step (first: the initial
 * capacity). On failure both keep their old size (one may have moved). */
static int grow_parallel(void **a, size_t a_elem, void **b, size_t b_elem, size_t *cap,
			 size_t first)
{
	size_t n = *cap ? *cap * 2 : first;
	void *pa = realloc(*a, n * a_elem);
	if (!pa)
		return -ENOMEM;
	*a = pa;
	void *pb = realloc(*b, n * b_elem);
	if (!pb)
		return -ENOMEM;
	*b = pb;
	*cap = n;
	return 0;
}

/* The mappings' bounds, parsed once per capture from the maps text before
 * the first interrupt, so finding a thread's stack mapping inside the hold
 * window is a binary search. (Re-parsing the text per thread was half the
 * tool's CPU and most of the pause with 512 threads and 1,000 mappings.)
 * The kernel lists mappings in address order. */
static uint64_t *map_starts, *map_ends;
static size_t nmaps, maps_cap;

static int index_maps(const char *text)
{
	nmaps = 0;
	for (const char *p = text; p && *p;) {
		char *end;
		uint64_t start = strtoull(p, &end, 16);
		uint64_t limit = *end == '-' ? strtoull(end + 1, &end, 16) : 0;
		if (limit > start) {
			if (nmaps == maps_cap &&
			    grow_parallel((void **)&map_starts, sizeof(*map_starts),
					  (void **)&map_ends, sizeof(*map_ends), &maps_cap, 1024) < 0)
				return -ENOMEM;
			map_starts[nmaps] = start;
			map_ends[nmaps] = limit;
			nmaps++;
		}
		p = strchr(end, '\n');
		if (p)
			p++;
	}
	return 0;
}

/* /proc/PID/maps is the dearest file we read: the kernel formats every
 * mapping, path and all, on each read, and at 99 Hz on a small process the
 * open and read were a fifth of the tool's CPU. So the text of the last read
 * is kept and handed out again while nothing says it changed:
 *   - it is at most MAPS_MAX_AGE_NS old;
 *   - the process's virtual size (in every thread's stat, which the scan
 *     reads anyway) is the one it had when the text was read (mmap, munmap
 *     and brk change it);
 *   - after the release, every captured thread's PC and SP lie inside a
 *     mapping it lists (a new thread's stack, dlopen'ed or JIT code do not:
 *     then it is read again at once, outside the pause, before anyone
 *     unwinds with it).
 * What this misses for up to a second is a mapping replaced by one of the
 * same size without any thread's PC or SP in it yet. The index over the
 * text (map_starts/map_ends) is always the cached text's. */
#define MAPS_MAX_AGE_NS 1000000000ull
/* How long a live process may look empty (mid-exec: no maps, no thread to
 * seize) before a capture gives up on it with -EAGAIN. An exec's pid swap
 * takes well under a millisecond; a loaded machine stretches it. */
#define MID_EXEC_PATIENCE_NS 300000000ull
static struct {
	pid_t pid;
	uint64_t starttime;
	uint64_t read_ns;
	uint64_t vsize; /* 0: not known */
	bool valid;
	char *text;
	size_t len, cap;
} maps_cache;

/* Hand out the cached text in pc. */
static int copy_cached_maps(struct process_capture *pc)
{
	if (!pc->maps_text || pc->maps_cap < maps_cache.len) {
		char *p = realloc(pc->maps_text, maps_cache.len + 1);
		if (!p)
			return -ENOMEM;
		pc->maps_text = p;
		pc->maps_cap = maps_cache.len;
	}
	memcpy(pc->maps_text, maps_cache.text, maps_cache.len + 1);
	pc->maps_len = maps_cache.len;
	return 0;
}

static bool maps_cached_for(const struct attach_target *t)
{
	return maps_cache.valid && maps_cache.pid == t->pid && maps_cache.starttime == t->starttime;
}

/* Read maps into pc, make it the cached text and index it. A failed read
 * leaves pc with the cached text (and the index with it), if any. */
static int refresh_maps(const struct attach_target *t, struct process_capture *pc,
			uint64_t vsize)
{
	int r = attach_read_maps(t, pc);
	if (r < 0) {
		if (maps_cached_for(t))
			(void)copy_cached_maps(pc);
		else if (pc->maps_text)
			pc->maps_text[pc->maps_len = 0] = '\0';
		return r;
	}
	maps_cache.valid = false;
	r = index_maps(pc->maps_text);
	if (r < 0)
		return r;
	if (maps_cache.cap < pc->maps_len + 1) {
		char *p = realloc(maps_cache.text, pc->maps_len + 1);
		if (!p)
			return 0; /* uncached: read again next time */
		maps_cache.text = p;
		maps_cache.cap = pc->maps_len + 1;
	}
	memcpy(maps_cache.text, pc->maps_text, pc->maps_len + 1);
	maps_cache.len = pc->maps_len;
	maps_cache.pid = t->pid;
	maps_cache.starttime = t->starttime;
	maps_cache.read_ns = now_ns(CLOCK_MONOTONIC);
	maps_cache.vsize = vsize;
	maps_cache.valid = true;
	return 0;
}

/* The maps for this capture: the cached text if it may still stand. */
static int load_maps(const struct attach_target *t, struct process_capture *pc)
{
	if (!maps_cached_for(t) || now_ns(CLOCK_MONOTONIC) - maps_cache.read_ns >= MAPS_MAX_AGE_NS)
		return refresh_maps(t, pc, 0);
	return copy_cached_maps(pc);
}

/* A thread's stat gave the process's virtual size: if it is not the one the
 * cached maps were read at, read them again (before any thread is held). */
static void maps_check_vsize(const struct attach_target *t, struct process_capture *pc,
			     uint64_t vsize)
{
	if (!vsize || !maps_cache.valid)
		return;
	if (!maps_cache.vsize) {
		maps_cache.vsize = vsize; /* first look since the read */
		return;
	}
	if (vsize != maps_cache.vsize)
		(void)refresh_maps(t, pc, vsize);
}

/* Index of the mapping that contains addr; nmaps if none. */
static size_t mapping_index(uint64_t addr)
{
	size_t lo = 0, hi = nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (map_ends[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nmaps && map_starts[lo] <= addr ? lo : nmaps;
}

/* End of the mapping that contains addr; 0 if none. */
static uint64_t mapping_end(uint64_t addr)
{
	size_t i = mapping_index(addr);
	return i < nmaps ? map_ends[i] : 0;
}

/* The tids this capture has listed so far, sorted, so that a re-scan of a
 * process with hundreds of threads (it runs while threads are held) looks
 * each one up in O(log n) instead of walking the whole list. Grow-only,
 * reused by every capture. */
static pid_t *listed_tids;
static size_t nlisted, listed_cap;

static int tid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return x < y ? -1 : x > y;
}

static bool listed(pid_t tid)
{
	return nlisted && bsearch(&tid, listed_tids, nlisted, sizeof(pid_t), tid_cmp);
}

/* Record the tids a pass added (pc->threads[from..]) in the sorted index. */
static int index_listed(const struct process_capture *pc, size_t from)
{
	if (pc->nthreads > listed_cap) {
		size_t cap = pc->nthreads * 2;
		pid_t *p = realloc(listed_tids, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		listed_tids = p;
		listed_cap = cap;
	}
	for (size_t i = from; i < pc->nthreads; i++)
		listed_tids[nlisted++] = pc->threads[i].tid;
	if (nlisted > 1)
		qsort(listed_tids, nlisted, sizeof(pid_t), tid_cmp);
	return 0;
}

static struct thread_capture *add_thread(struct process_capture *pc, pid_t tid)
{
	if (pc->nthreads == pc->threads_cap) {
		size_t cap = pc->threads_cap ? pc->threads_cap * 2 : 16;
		struct thread_capture *p = realloc(pc->threads, cap * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + pc->threads_cap, 0, (cap - pc->threads_cap) * sizeof(*p));
		pc->threads = p;
		pc->threads_cap = cap;
	}
	struct thread_capture *tc = &pc->threads[pc->nthreads++];
	/* Keep the stack buffer from an earlier capture: no allocation in
	 * steady-state sampling. */
	uint8_t *stack = tc->stack;
	size_t cap = tc->stack_cap;
	memset(tc, 0, sizeof(*tc));
	tc->stack = stack;
	tc->stack_cap = cap;
	tc->tid = tid;
	tc->syscall_nr = -1;
	tc->not_run_error = -ENODATA;
	tc->outcome = THREAD_LATE;
	return tc;
}

/* Per-thread bookkeeping that is not part of the capture result. */
struct hold {
	uint64_t interrupted_at;
	bool seized, stopped, detached;
	int pending_signal;
};

struct capture_run {
	struct attach_target *t;
	const struct attach_options *o;
	struct process_capture *pc;
	struct hold *holds; /* parallel to pc->threads */
	size_t holds_cap;
	int first_seize_error;
	size_t nseized;
	size_t nnot_stopped; /* sampled from /proc, never seized */
	uint64_t first_interrupt;
	uint64_t vsize; /* the process's, from the last thread stat read */
	uint64_t last_release; /* CLOCK_MONOTONIC of the last PTRACE_DETACH */
	bool release_each; /* options.release_each, and nothing needs them all held */
	struct last_ran_clock *clock; /* options.read_wait_details */
};

static int ensure_holds(struct capture_run *run)
{
	if (run->holds_cap >= run->pc->threads_cap)
		return 0;
	struct hold *h = realloc(run->holds, run->pc->threads_cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	memset(h + run->holds_cap, 0, (run->pc->threads_cap - run->holds_cap) * sizeof(*h));
	run->holds = h;
	run->holds_cap = run->pc->threads_cap;
	return 0;
}

/* Per-thread /proc files kept open across captures and re-read with
 * pread: with hundreds of threads, opening "TID/stat" and "TID/schedstat"
 * every tick was most of the tool's CPU (path lookups in the kernel). An
 * open file pins its thread: once it exits, reads fail and the entry goes.
 * Capped so we never run out of descriptors; past the cap, open per read. */
enum { TFILE_STAT, TFILE_SCHEDSTAT, TFILE_SYSCALL, TFILE_COUNT };
struct tfile_entry {
	pid_t tid;
	int fd[TFILE_COUNT];
	unsigned gen;
};
static struct tfile_entry *tfiles;
static size_t ntfiles, tfiles_cap, tfiles_max;
static unsigned tfiles_gen;
static pid_t tfiles_pid;

static struct tfile_entry *tfile_slot(pid_t tid)
{
	size_t lo = 0, hi = ntfiles;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (tfiles[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ntfiles && tfiles[lo].tid == tid)
		return &tfiles[lo];
	if (!tfiles_max) {
		struct rlimit rl;
		tfiles_max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 512
				     ? (size_t)(rl.rlim_cur - 256) / TFILE_COUNT
				     : 128;
	}
	if (ntfiles >= tfiles_max)
		return NULL;
	if (ntfiles == tfiles_cap) {
		size_t cap = tfiles_cap ? tfiles_cap * 2 : 64;
		struct tfile_entry *p = realloc(tfiles, cap * sizeof(*p));
		if (!p)
			return NULL;
		tfiles = p;
		tfiles_cap = cap;
	}
	memmove(&tfiles[lo + 1], &tfiles[lo], (ntfiles - lo) * sizeof(*tfiles));
	ntfiles++;
	tfiles[lo] = (struct tfile_entry){.tid = tid, .fd = {-1, -1, -1}, .gen = tfiles_gen};
	return &tfiles[lo];
}

/* Read TID/stat, TID/schedstat or TID/syscall into buf (NUL-terminated).
 * Returns bytes read or -errno. */
static ssize_t thread_file_read(struct capture_run *run, pid_t tid, int which, char *buf,
				size_t size)
{
	static const char *const names[TFILE_COUNT] = {"stat", "schedstat", "syscall"};
	char path[64];
	snprintf(path, sizeof(path), "%d/%s", (int)tid, names[which]);
	struct tfile_entry *e = tfile_slot(tid);
	if (!e)
		return procfs_read_at(run->t->task_dirfd, path, buf, size);
	e->gen = tfiles_gen;
	if (e->fd[which] < 0) {
		e->fd[which] = openat(run->t->task_dirfd, path, O_RDONLY | O_CLOEXEC);
		if (e->fd[which] < 0)
			return -errno;
	}
	ssize_t n = pread(e->fd[which], buf, size - 1, 0);
	if (n < 0) {
		int err = errno;
		close(e->fd[which]);
		e->fd[which] = -1;
		return -err;
	}
	buf[n] = '\0';
	return n;
}

/* Close the files of threads this capture did not see (they exited). */
static void tfiles_sweep(void)
{
	size_t kept = 0;
	for (size_t i = 0; i < ntfiles; i++) {
		if (tfiles[i].gen != tfiles_gen) {
			for (int k = 0; k < TFILE_COUNT; k++)
				if (tfiles[i].fd[k] >= 0)
					close(tfiles[i].fd[k]);
			continue;
		}
		tfiles[kept++] = tfiles[i];
	}
	ntfiles = kept;
}

static void tfiles_begin(pid_t pid)
{
	if (tfiles_pid != pid) {
		tfiles_gen++; /* everything cached belongs to another target */
		tfiles_sweep();
		tfiles_pid = pid;
	}
	tfiles_gen++;
}

#define PF_EXITING 0x00000004UL /* include/linux/sched.h */

/* Read what /proc says about a thread while it still runs: its state must
 * be the one before our stop (after it, every thread reads 't'). */
static void read_thread_proc(struct capture_run *run, struct thread_capture *tc)
{
	char path[64], buf[1024];
	struct procfs_stat st;
	if (thread_file_read(run, tc->tid, TFILE_STAT, buf, sizeof(buf)) > 0 &&
	    procfs_parse_stat(buf, &st) == 0) {
		snprintf(tc->comm, sizeof(tc->comm), "%.16s", st.comm);
		tc->state = st.state;
		tc->exiting = (st.flags & PF_EXITING) != 0;
		run->vsize = st.vsize;
		if (run->clock && tc->state != 'R')
			tc->not_run_error = last_ran_ago(run->clock, run->t->task_dirfd, tc->tid,
							 st.processor, &tc->not_run_ns);
	} else {
		tc->state = '?';
		tc->exiting = false;
	}
	if (run->o->read_wait_details && tc->state != 'R') {
		snprintf(path, sizeof(path), "%d/wchan", (int)tc->tid);
		if (procfs_read_at(run->t->task_dirfd, path, tc->wchan, sizeof(tc->wchan)) > 0 &&
		    strcmp(tc->wchan, "0") == 0)
			tc->wchan[0] = '\0';
	}
}

/* options.skip_idle: read the thread's on-CPU time now, before any stop;
 * if it equals what we read when we last released it, it has not run
 * since and its previous stack still stands: do not stop it. */
static bool skip_if_idle(struct capture_run *run, struct thread_capture *tc)
{
	char buf[128];
	if (thread_file_read(run, tc->tid, TFILE_SCHEDSTAT, buf, sizeof(buf)) <= 0)
		return false;
	uint64_t now = strtoull(buf, NULL, 10);
	const struct idle_entry *then = idle_lookup(tc->tid);
	tc->cpu_ns = now; /* kept for a running thread: see read_cpu_times */
	if (now == 0 || !then || now != then->cpu_ns)
		return false;
	tc->cpu_ns = now;
	tc->state = then->state;
	tc->exiting = false; /* it has not run: not into do_exit either */
	memcpy(tc->comm, then->comm, sizeof(tc->comm));
	tc->outcome = THREAD_UNCHANGED;
	return true;
}

static void copy_stack(struct capture_run *run, struct thread_capture *tc, uint64_t sp);

/* options.no_interrupt_blocked: a thread that /proc/TID/syscall shows
 * blocked in a system call ("NR ARG1..ARG6 SP PC") is recorded from there
 * and not stopped: stopping it would make epoll_wait, sigtimedwait, semop
 * and friends return EINTR. Its user stack does not move while it is
 * blocked, so the copy is as good as one taken stopped; if it wakes
 * meanwhile, the sample shows it just before. "running" or "-1 SP PC" (not
 * in a syscall) mean: stop it as usual.
 *
 * Reading /proc/TID/syscall takes the target's cred_guard_mutex (killably):
 * an exec in the target waits for us to reap the threads it killed, which
 * is why the reaper runs on a thread of its own. */
/* Calls that return EINTR after a ptrace stop even without a signal
 * handler, on the kernels we run on (signal(7), "Interruption of system
 * calls and library functions by stop signals"). */
static bool eintr_prone(long nr)
{
	switch (nr) {
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
	case SYS_semop:
	case SYS_semtimedop:
	case SYS_rt_sigtimedwait:
	case SYS_io_getevents:
#ifdef SYS_io_pgetevents
	case SYS_io_pgetevents:
#endif
		return true;
	default:
		return false;
	}
}

/* Parse /proc/TID/syscall: "NR ARG1..ARG6 SP PC", or "-1 SP PC" outside a
 * system call (a page fault, a sleep in the kernel), or "running". Sets
 * regs to what it gives (orig_rax, the six argument registers rdi, rsi,
 * rdx, r10, r8, r9, and rsp, rip; nothing else is known) and syscall_nr.
 * The argument registers are real register values: glibc's vfork, for
 * one, keeps its return address in rdi across the call, and unwinding
 * needs it. false when the line is none of these. */
static bool regs_from_syscall_line(const char *buf, struct thread_capture *tc)
{
	char *end;
	long nr = strtol(buf, &end, 10);
	if (end == buf)
		return false;
	int nvals = nr < 0 ? 2 : 8;
	unsigned long long v[8];
	const char *p = end;
	for (int i = 0; i < nvals; i++) {
		v[i] = strtoull(p, &end, 16);
		if (end == p)
			return false;
		p = end;
	}
	memset(&tc->regs, 0, sizeof(tc->regs));
	tc->regs.orig_rax = (unsigned long long)nr;
	if (nr >= 0) {
		tc->regs.rdi = v[0];
		tc->regs.rsi = v[1];
		tc->regs.rdx = v[2];
		tc->regs.r10 = v[3];
		tc->regs.r8 = v[4];
		tc->regs.r9 = v[5];
	}
	tc->regs.rsp = v[nvals - 2];
	tc->regs.rip = v[nvals - 1];
	tc->syscall_nr = nr;
	return true;
}

/* Copy the resting stack of a thread /proc showed blocked as buf says;
 * true if it slept through the copy (the same call, arguments, SP and PC
 * after it as before). One that woke is running now. */
static bool copy_resting_stack(struct capture_run *run, struct thread_capture *tc, const char *buf)
{
	copy_stack(run, tc, tc->regs.rsp);
	char again[256];
	ssize_t n2 = thread_file_read(run, tc->tid, TFILE_SYSCALL, again, sizeof(again));
	if (n2 <= 0 || strcmp(buf, again) != 0)
		return false;
	tc->not_stopped = true;
	tc->outcome = THREAD_CAPTURED;
	run->nnot_stopped++;
	return true;
}

static void sample_blocked_from_proc(struct capture_run *run, struct thread_capture *tc)
{
	if (tc->state != 'S' && tc->state != 'D')
		return;
	char buf[256];
	if (thread_file_read(run, tc->tid, TFILE_SYSCALL, buf, sizeof(buf)) <= 0)
		return;
	if (buf[0] < '0' || buf[0] > '9')
		return; /* not in a system call: stopped as usual */
	struct thread_capture probe = *tc;
	if (!regs_from_syscall_line(buf, &probe))
		return;
	/* Stopped as usual when that returns no EINTR: asleep in a call the
	 * kernel restarts, or in D, where the call is not one of those. A
	 * socket call with a timeout (SO_RCVTIMEO, SO_SNDTIMEO) returns EINTR
	 * too, so any other call a thread sleeps in is read from /proc. */
	if (run->o->only_eintr_prone && !eintr_prone(probe.syscall_nr) &&
	    (probe.state != 'S' || attach_stop_is_harmless(run->t, &probe)))
		return;
	tc->regs = probe.regs;
	tc->syscall_nr = probe.syscall_nr;
	/* One that woke is running now, and stopping it (as usual, after
	 * this) interrupts nothing. */
	if (!copy_resting_stack(run, tc, buf))
		tc->syscall_nr = -1;
}

bool attach_stop_is_harmless(const struct attach_target *t, const struct thread_capture *tc)
{
	if (tc->state != 'S')
		return false;
	switch (tc->syscall_nr) {
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
	case SYS_futex:
	case SYS_poll:
	case SYS_ppoll:
	case SYS_select:
	case SYS_pselect6:
	case SYS_wait4:
	case SYS_waitid:
	case SYS_pause:
	case SYS_rt_sigsuspend:
	case SYS_restart_syscall:
		return true;
	case SYS_read:
	case SYS_readv:
	case SYS_pread64:
	case SYS_preadv: {
		char path[64], link[32];
		snprintf(path, sizeof(path), "%d/fd/%d", (int)tc->tid, (int)(uint32_t)tc->regs.rdi);
		ssize_t n = readlinkat(t->task_dirfd, path, link, sizeof(link) - 1);
		if (n <= 0)
			return false;
		link[n] = '\0';
		return strncmp(link, "socket:", 7) != 0;
	}
	default:
		return false;
	}
}

/* options.no_stop: a thread asleep in the kernel is read from /proc
 * (unless the caller has that moment already, or wants its registers and
 * may stop it: then it is seized like any), any other is left to the
 * caller: nothing else is stopped. */
static void sample_without_stop(struct capture_run *run, struct thread_capture *tc,
				bool want_registers)
{
	tc->outcome = THREAD_NOT_READ;
	if (tc->state != 'S' && tc->state != 'D')
		return;
	char buf[256];
	if (thread_file_read(run, tc->tid, TFILE_SYSCALL, buf, sizeof(buf)) <= 0 ||
	    !regs_from_syscall_line(buf, tc))
		return;
	if (want_registers && attach_stop_is_harmless(run->t, tc)) {
		tc->outcome = THREAD_LATE; /* as add_thread leaves it: seized below */
		tc->syscall_nr = -1;
		return;
	}
	uint64_t args[6] = {tc->regs.rdi, tc->regs.rsi, tc->regs.rdx,
			    tc->regs.r10, tc->regs.r8,  tc->regs.r9};
	if (run->o->moment_known &&
	    run->o->moment_known(run->o->moment_known_ctx, tc->tid, tc->syscall_nr >= 0 ? args : NULL,
				 tc->regs.rsp, tc->regs.rip))
		return;
	copy_resting_stack(run, tc, buf); /* or it woke: running now, NOT_READ */
}

/* Tids a pass found that no earlier pass of this capture listed. */
static pid_t *fresh;
static bool *fresh_late; /* still late from an earlier capture */
static size_t nfresh, fresh_cap;

static int add_fresh(pid_t tid)
{
	if (nfresh == fresh_cap &&
	    grow_parallel((void **)&fresh, sizeof(*fresh), (void **)&fresh_late, sizeof(*fresh_late),
			  &fresh_cap, 256) < 0)
		return -ENOMEM;
	/* A thread still late from an earlier capture (in D, or never
	 * scheduled) keeps our interrupt pending: it is not seized again, but
	 * it is listed, as late, so that every capture (and the final
	 * snapshot) shows it instead of silently dropping it. */
	fresh_late[nfresh] = is_late(tid);
	fresh[nfresh++] = tid;
	return 0;
}

/* The threads the previous capture of this target kept, sorted: the next
 * capture's first pass starts from them instead of listing /proc/PID/task
 * (with hundreds of threads, the listing was a fifth of the tool's CPU)
 * when the kernel's thread count (unlisted_thread_possible) equals theirs.
 * Births and deaths since then cannot hide each other: a thread of the
 * list that died fails its reads and is dropped, and a count above the
 * threads still alive makes the pass re-scan for real. */
static pid_t *prev_tids;
static size_t nprev_tids, prev_tids_cap;
static pid_t prev_pid;
static uint64_t prev_starttime;

static void remember_thread_list(const struct attach_target *t, const struct process_capture *pc)
{
	nprev_tids = 0;
	if (pc->nthreads > prev_tids_cap) {
		pid_t *p = realloc(prev_tids, pc->nthreads * 2 * sizeof(*p));
		if (!p)
			return;
		prev_tids = p;
		prev_tids_cap = pc->nthreads * 2;
	}
	for (size_t i = 0; i < pc->nthreads; i++)
		prev_tids[nprev_tids++] = pc->threads[i].tid;
	prev_pid = t->pid;
	prev_starttime = t->starttime;
}

/* The first pass may take the previous capture's list: same target, and
 * /proc/PID/task's link count (2 + threads) says as many threads. */
static bool previous_list_stands(const struct capture_run *run)
{
	struct stat st;
	return nprev_tids && prev_pid == run->t->pid && prev_starttime == run->t->starttime &&
	       run->pc->nthreads == 0 && fstat(run->t->task_dirfd, &st) == 0 &&
	       st.st_nlink == nprev_tids + 2;
}

/* One pass over /proc/PID/task: seize and interrupt every thread not seen
 * yet. Returns how many new threads were found, or -errno. */
static int scan_and_seize(struct capture_run *run)
{
	struct process_capture *pc = run->pc;
	char buf[8192];
	int found = 0;

	/* Collect new tids first, then read their state, then seize and
	 * interrupt them back to back so they stop as close together as we can
	 * manage (the snapshot is only consistent across that window). All of
	 * them: a thread left for the next pass would be read and seized while
	 * the others are already held. */
	nfresh = 0;
	bool from_previous = previous_list_stands(run);
	for (size_t i = 0; from_previous && i < nprev_tids; i++)
		if (add_fresh(prev_tids[i]) < 0)
			return -ENOMEM;
	if (!from_previous && lseek(run->t->task_dirfd, 0, SEEK_SET) < 0)
		return -errno;
	while (!from_previous) {
		long n = syscall(SYS_getdents64, run->t->task_dirfd, buf, sizeof(buf));
		if (n < 0)
			return errno == ENOENT ? -ESRCH : -errno;
		if (n == 0)
			break;
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			pid_t tid = (pid_t)atoi(d->d_name);
			if (!listed(tid) && add_fresh(tid) < 0)
				return -ENOMEM;
		}
	}

	size_t base = pc->nthreads;
	for (size_t i = 0; i < nfresh; i++) {
		struct thread_capture *tc = add_thread(pc, fresh[i]);
		if (!tc)
			return -ENOMEM;
		if (fresh_late[i]) {
			read_thread_proc(run, tc); /* outcome stays THREAD_LATE */
			continue;
		}
		/* An idle thread keeps its last state: one read instead of two. */
		bool want_registers = run->o->no_stop && run->o->want_registers &&
				      run->o->want_registers(run->o->want_registers_ctx, tc->tid);
		if (run->o->skip_idle && !want_registers && skip_if_idle(run, tc))
			continue;
		read_thread_proc(run, tc);
		/* Not in our task directory any more: it exited, and its tid
		 * may already name a thread of another process. */
		if (from_previous && tc->state == '?') {
			tc->outcome = THREAD_GONE;
			continue;
		}
		if (run->o->no_stop)
			sample_without_stop(run, tc, want_registers);
		else if (run->o->no_interrupt_blocked)
			sample_blocked_from_proc(run, tc);
	}
	if (ensure_holds(run) < 0 || index_listed(pc, base) < 0)
		return -ENOMEM;
	if (run->nseized == 0) /* nothing held yet: a re-read costs no pause */
		maps_check_vsize(run->t, pc, run->vsize);

	for (size_t i = base; i < pc->nthreads; i++) {
		struct thread_capture *tc = &pc->threads[i];
		struct hold *h = &run->holds[i];
		memset(h, 0, sizeof(*h));
		found++;
		if (tc->not_stopped || tc->outcome == THREAD_UNCHANGED || fresh_late[i - base] ||
		    tc->outcome == THREAD_GONE || tc->outcome == THREAD_NOT_READ)
			continue; /* sampled from /proc, idle, still late, gone, or no_stop */
		/* No options: no EXITKILL (the target must survive our death), no
		 * TRACECLONE/EXEC (per-capture seize rescans instead). */
		if (ptrace(PTRACE_SEIZE, tc->tid, 0, 0) < 0) {
			/* ESRCH: gone. EPERM on a live process: an exiting thread
			 * or zombie leader, not (yet) a permission problem. */
			if (!run->first_seize_error)
				run->first_seize_error = errno;
			tc->outcome = THREAD_GONE;
			continue;
		}
		h->seized = true;
		run->nseized++;
		/* From here until release the reaper may reap it if it dies. */
		reaper_track(tc->tid);
		h->interrupted_at = now_ns(CLOCK_MONOTONIC);
		if (!run->first_interrupt) {
			run->first_interrupt = h->interrupted_at;
			watchdog_window(true);
		}
		if (ptrace(PTRACE_INTERRUPT, tc->tid, 0, 0) < 0) {
			/* It died between the two calls; waitpid will say so. */
		}
	}
	return found;
}

/* Could a thread exist that no pass has listed yet? The kernel counts a
 * process's threads in the link count of /proc/PID/task (2 + threads), one
 * fstat where a re-scan would list every thread again, while the ones we
 * have seized are held. A thread born since our listing makes the count
 * larger than the listed threads still alive. A birth that coincides with
 * the death of a thread we did not stop (idle, or sampled from /proc)
 * cancels out: that thread is missed by this capture and found by the
 * next, which a sampled profile does not notice. When in doubt, re-scan. */
static bool unlisted_thread_possible(const struct capture_run *run)
{
	struct stat st;
	if (fstat(run->t->task_dirfd, &st) < 0 || st.st_nlink < 2)
		return true;
	size_t alive = 0;
	for (size_t i = 0; i < run->pc->nthreads; i++)
		if (run->pc->threads[i].outcome != THREAD_GONE)
			alive++;
	return st.st_nlink - 2 > alive;
}

static void capture_stopped_thread(struct capture_run *run, struct thread_capture *tc)
{
	if (ptrace(PTRACE_GETREGS, tc->tid, 0, &tc->regs) < 0) {
		tc->outcome = THREAD_GONE;
		return;
	}
	tc->outcome = THREAD_CAPTURED;
	/* orig_rax holds the syscall number when the stop interrupted one. */
	tc->syscall_nr = (long)tc->regs.orig_rax;
	/* Read as runnable before the stop, yet stopped inside a sleeping
	 * syscall about to be restarted: our previous release woke it (the
	 * kernel restarts the call after the stop) and it had not got a CPU
	 * back yet. It was asleep, not running, as far as the program is
	 * concerned. -ERESTARTSYS/-ERESTARTNOINTR/-ERESTARTNOHAND/
	 * -ERESTART_RESTARTBLOCK are kernel-internal and only ever seen here. */
	long rax = (long)tc->regs.rax;
	if (tc->state == 'R' && (long)tc->regs.orig_rax >= 0 &&
	    (rax == -512 || rax == -513 || rax == -514 || rax == -516))
		tc->state = 'S';
	copy_stack(run, tc, tc->regs.rsp);
}

/* The 128 bytes below SP (the x86-64 ABI's red zone) are the thread's
 * too: a leaf function keeps data there, and at an epilogue's `ret` the
 * CFI GCC emits after `leave` still says the frame pointer just popped is
 * saved at CFA-16, below SP. Without those bytes the unwind stopped at the
 * first caller: postgres backends, 1 snapshot in 40, where eu-stack (which
 * reads live memory) went on to _start. */
#define RED_ZONE_BYTES 128

static void copy_stack(struct capture_run *run, struct thread_capture *tc, uint64_t sp)
{
	size_t m = mapping_index(sp);
	uint64_t end = m < nmaps ? map_ends[m] : 0;
	if (m < nmaps && sp - map_starts[m] >= RED_ZONE_BYTES)
		sp -= RED_ZONE_BYTES;
	size_t want = end > sp ? (size_t)(end - sp) : UNKNOWN_STACK_BYTES;
	if (want > run->o->stack_bytes_max)
		want = run->o->stack_bytes_max;
	if (tc->stack_cap < want) {
		/* Grows only on the first captures of a thread slot; steady
		 * state reuses the buffer. */
		uint8_t *p = realloc(tc->stack, want);
		if (!p) {
			tc->stack_len = 0;
			return;
		}
		tc->stack = p;
		tc->stack_cap = want;
	}
	tc->stack_start = sp;
	ssize_t n = attach_read_memory(run->pc->pid, sp, tc->stack, want);
	/* A zombie leader (main called pthread_exit) has no memory: the
	 * thread's own tid reaches the same memory. */
	if (n == -ESRCH && tc->tid != run->pc->pid)
		n = attach_read_memory(tc->tid, sp, tc->stack, want);
	tc->stack_len = n > 0 ? (size_t)n : 0;
}

/* The deadline of a wait is a POSIX timer that interrupts our blocking
 * waitpid with a signal whose handler does nothing and has no SA_RESTART.
 * Blocking (rather than polling) matters: a polling tool occupies a CPU
 * that a target thread may need to reach its stop, and on a small machine
 * that turned a 50 us stop into milliseconds. */
static timer_t deadline_timer;
static bool deadline_timer_ready;

static void on_deadline(int sig)
{
	(void)sig;
}

static bool arm_deadline(uint64_t deadline_ns)
{
	if (!deadline_timer_ready) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_deadline;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = 0; /* no SA_RESTART: waitpid must return EINTR */
		if (sigaction(SIGRTMIN, &sa, NULL) < 0)
			return false;
		struct sigevent sev;
		memset(&sev, 0, sizeof(sev));
		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = SIGRTMIN;
		sev._sigev_un._tid = gettid();
		if (timer_create(CLOCK_MONOTONIC, &sev, &deadline_timer) < 0)
			return false;
		deadline_timer_ready = true;
	}
	struct itimerspec its = {
		.it_value = {.tv_sec = (time_t)(deadline_ns / 1000000000ull),
			     .tv_nsec = (long)(deadline_ns % 1000000000ull)},
		/* Re-fire every millisecond in case the first signal landed just
		 * before we entered waitpid. */
		.it_interval = {.tv_sec = 0, .tv_nsec = 1000000},
	};
	return timer_settime(deadline_timer, TIMER_ABSTIME, &its, NULL) == 0;
}

static void disarm_deadline(void)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (deadline_timer_ready)
		timer_settime(deadline_timer, 0, &its, NULL);
}

/* Handle one waitpid result for thread i. */
static void release_one(struct capture_run *run, size_t i);

static void on_wait_status(struct capture_run *run, size_t i, pid_t r, int status)
{
	struct hold *h = &run->holds[i];
	struct thread_capture *tc = &run->pc->threads[i];
	if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
		tc->outcome = THREAD_GONE;
		h->detached = true; /* nothing left to detach */
		return;
	}
	h->stopped = true;
	int event = status >> 16;
	int sig = WSTOPSIG(status);
	if (event == PTRACE_EVENT_STOP) {
		/* SIGTRAP: our interrupt. A stop signal: group-stop (the process
		 * was, or is being, stopped by someone else). Either way detach
		 * with 0 keeps the truth. */
		if (sig != SIGTRAP)
			tc->group_stopped = true;
	} else if (event == 0) {
		/* Signal-delivery-stop: a signal arrived while we held the
		 * thread. It must reach the target. */
		h->pending_signal = sig;
	}
	capture_stopped_thread(run, tc);
	if (run->release_each && tc->outcome == THREAD_CAPTURED)
		release_one(run, i);
}

/* Wait for every seized thread to stop, capturing each the moment it does,
 * until all have stopped or the deadline passes. */
static void wait_and_capture(struct capture_run *run)
{
	struct process_capture *pc = run->pc;
	uint64_t deadline = run->first_interrupt + (uint64_t)run->o->stop_timeout_ms * 1000000ull;

	/* First a sweep without blocking: most threads stopped already. */
	size_t pending = 0;
	for (size_t i = 0; i < pc->nthreads; i++) {
		struct hold *h = &run->holds[i];
		if (!h->seized || h->stopped || pc->threads[i].outcome == THREAD_GONE)
			continue;
		int status;
		pid_t r = waitpid(pc->threads[i].tid, &status, __WALL | WNOHANG);
		if (r == 0)
			pending++;
		else
			on_wait_status(run, i, r, status);
	}
	if (pending == 0)
		return;

	bool armed = arm_deadline(deadline);
	for (size_t i = 0; i < pc->nthreads; i++) {
		struct hold *h = &run->holds[i];
		if (!h->seized || h->stopped || pc->threads[i].outcome == THREAD_GONE)
			continue;
		for (;;) {
			int status;
			pid_t r = waitpid(pc->threads[i].tid, &status,
					  __WALL | (armed ? 0 : WNOHANG));
			if (r > 0 || (r < 0 && errno != EINTR)) {
				on_wait_status(run, i, r, status);
				break;
			}
			if (now_ns(CLOCK_MONOTONIC) >= deadline)
				goto out;
			if (r == 0) {
				/* No timer: fall back to sleeping polls. */
				struct timespec ts = {0, 20000};
				nanosleep(&ts, NULL);
			}
		}
	}
out:
	disarm_deadline();
}

/* Test-only (options.test_hold_ms): keep the threads held, whatever
 * signals arrive, so tests can hit the hold window. */
static void test_hold(unsigned ms)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
		;
}

/* Detach one stopped thread, re-injecting the signal that arrived while we
 * held it, and record its hold. */
static void release_one(struct capture_run *run, size_t i)
{
	struct hold *h = &run->holds[i];
	struct thread_capture *tc = &run->pc->threads[i];
	tc->delivered_signal = h->pending_signal;
	if (ptrace(PTRACE_DETACH, tc->tid, 0, (void *)(long)h->pending_signal) < 0 &&
	    errno == ESRCH) {
		/* Died while stopped (SIGKILL): reap it so the real parent's
		 * wait is not delayed by us. If its exit is not reportable yet,
		 * the late list (and the reaper) keep it until it is. */
		int status;
		if (waitpid(tc->tid, &status, __WALL | WNOHANG) == 0)
			late_add(tc->tid, run->pc->pid);
	}
	h->detached = true;
	uint64_t t = now_ns(CLOCK_MONOTONIC);
	tc->hold_ns = t - h->interrupted_at;
	if (t > run->last_release)
		run->last_release = t;
}

static void release_all(struct capture_run *run)
{
	struct process_capture *pc = run->pc;
	/* Non-leaders first, the leader last: a zombie leader can only be
	 * reaped after its threads (gdb's detach order). */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < pc->nthreads; i++) {
			struct hold *h = &run->holds[i];
			struct thread_capture *tc = &pc->threads[i];
			bool leader = tc->tid == pc->pid;
			if ((pass == 0) == leader)
				continue;
			if (!h->seized || h->detached)
				continue;
			if (!h->stopped) {
				/* Late: PTRACE_DETACH needs a stopped tracee. It will
				 * be detached the moment it traps. */
				late_add(tc->tid, pc->pid);
				tc->outcome = THREAD_LATE;
				continue;
			}
			release_one(run, i);
		}
	}
	pc->hold_ns = run->last_release && run->first_interrupt
			      ? run->last_release - run->first_interrupt
			      : 0;
}

/* Read on-CPU time (schedstat field 1, ns) after the release: it only needs
 * to be monotonic per thread, and reading it here keeps it out of the pause.
 * It is the next capture's reference for "has not run since" (skip_idle),
 * which is why it is read after the release (a stop and release makes a
 * sleeping thread run a little). A thread that was running needs no second
 * read: it will have run again by the next capture anyway, so the value
 * read before the stop serves (a third of the tool's reads with busy
 * threads). */
static void read_cpu_times(struct capture_run *run)
{
	char buf[128];
	for (size_t i = 0; i < run->pc->nthreads; i++) {
		struct thread_capture *tc = &run->pc->threads[i];
		if (tc->outcome != THREAD_CAPTURED)
			continue;
		if (run->o->skip_idle && tc->state == 'R' && tc->cpu_ns)
			continue;
		if (thread_file_read(run, tc->tid, TFILE_SCHEDSTAT, buf, sizeof(buf)) > 0)
			tc->cpu_ns = strtoull(buf, NULL, 10);
	}
}

/* After the release: does a captured thread's PC or SP lie outside every
 * mapping of the maps text this capture used? (See maps_cache.) */
static bool maps_missed_a_thread(const struct process_capture *pc)
{
	for (size_t i = 0; i < pc->nthreads; i++) {
		const struct thread_capture *tc = &pc->threads[i];
		if (tc->outcome != THREAD_CAPTURED)
			continue;
		if (!mapping_end(tc->regs.rip) || !mapping_end(tc->regs.rsp))
			return true;
	}
	return false;
}

static int compare_threads(const void *a, const void *b, void *arg)
{
	pid_t pid = *(const pid_t *)arg;
	const struct thread_capture *x = a, *y = b;
	if (x->tid == y->tid)
		return 0;
	if (x->tid == pid)
		return -1;
	if (y->tid == pid)
		return 1;
	return x->tid < y->tid ? -1 : 1;
}

/* Drop threads that yielded nothing, keeping late ones (reported) and
 * captured ones; sort main thread first, then by tid. */
static void finish(struct process_capture *pc)
{
	size_t kept = 0;
	pc->nlate = pc->ngone = pc->nnot_stopped = pc->nunchanged = pc->nnot_read = 0;
	for (size_t i = 0; i < pc->nthreads; i++) {
		if (pc->threads[i].not_stopped)
			pc->nnot_stopped++;
		if (pc->threads[i].outcome == THREAD_NOT_READ)
			pc->nnot_read++;
		if (pc->threads[i].outcome == THREAD_UNCHANGED)
			pc->nunchanged++;
		if (pc->threads[i].outcome == THREAD_GONE) {
			pc->ngone++;
			continue;
		}
		if (pc->threads[i].outcome == THREAD_LATE)
			pc->nlate++;
		if (kept != i) {
			/* Swap so the dropped slot's stack buffer is kept for reuse. */
			struct thread_capture tmp = pc->threads[kept];
			pc->threads[kept] = pc->threads[i];
			pc->threads[i] = tmp;
		}
		kept++;
	}
	pc->nthreads = kept;
	/* No threads at all (the target ended before one was listed):
	 * threads may be NULL, which qsort_r must not be given. */
	if (pc->nthreads > 1)
		qsort_r(pc->threads, pc->nthreads, sizeof(pc->threads[0]), compare_threads, &pc->pid);
}

/* Keep this capture's per-thread on-CPU times for the next one. Threads
 * that were not seen are forgotten (a reused tid starts afresh). */
static void remember_idle(const struct attach_target *t, const struct process_capture *pc)
{
	if (idle_cap < pc->nthreads) {
		size_t cap = pc->nthreads * 2;
		struct idle_entry *a = realloc(idle_prev, cap * sizeof(*a));
		if (!a)
			return;
		idle_prev = a;
		struct idle_entry *b = realloc(idle_next, cap * sizeof(*b));
		if (!b)
			return;
		idle_next = b;
		idle_cap = cap;
	}
	nidle_next = 0;
	for (size_t i = 0; i < pc->nthreads; i++) {
		const struct thread_capture *tc = &pc->threads[i];
		if ((tc->outcome == THREAD_CAPTURED || tc->outcome == THREAD_UNCHANGED ||
		     tc->outcome == THREAD_NOT_READ) &&
		    tc->cpu_ns) {
			struct idle_entry *e = &idle_next[nidle_next++];
			e->tid = tc->tid;
			e->cpu_ns = tc->cpu_ns;
			e->state = tc->state;
			memcpy(e->comm, tc->comm, sizeof(e->comm));
		}
	}
	if (nidle_next > 1) /* idle_next is NULL until a thread had CPU time */
		qsort(idle_next, nidle_next, sizeof(*idle_next), idle_cmp);
	struct idle_entry *tmp = idle_prev;
	idle_prev = idle_next;
	idle_next = tmp;
	nidle_prev = nidle_next;
	idle_pid = t->pid;
	idle_starttime = t->starttime;
}

int attach_capture(struct attach_target *t, const struct attach_options *o,
		   struct process_capture *pc)
{
	struct attach_options defaults;
	if (!o) {
		attach_options_init(&defaults);
		o = &defaults;
	}
	service_late();
	/* Failure leaves the capture without the safety net, as a full
	 * table does (reaper_track then fails too); it goes on. */
	(void)reaper_start();

	if (idle_pid != t->pid || idle_starttime != t->starttime)
		nidle_prev = 0;
	tfiles_begin(t->pid);
	pc->pid = t->pid;
	pc->nthreads = 0;
	nlisted = 0;
	pc->hold_ns = 0;
	pc->nlate = pc->ngone = pc->nunchanged = pc->nnot_stopped = pc->nnot_read = 0;
	pc->target_exited = false;
	pc->wall_ns = now_ns(CLOCK_REALTIME);

	/* A non-leader exec swaps the pid between threads: for a moment the
	 * leader is a zombie with no maps and its task directory lists no
	 * thread, yet the process lives on (the pidfd says so). */
	uint64_t transient_until = now_ns(CLOCK_MONOTONIC) + MID_EXEC_PATIENCE_NS;
	int r;
	while ((r = load_maps(t, pc)) == -ESRCH && attach_target_alive(t) &&
	       now_ns(CLOCK_MONOTONIC) < transient_until) {
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	if (r < 0) {
		pc->target_exited = (r == -ESRCH);
		return r;
	}

	struct capture_run run = {.t = t, .o = o, .pc = pc};
	run.release_each = o->release_each && !o->while_held && !o->test_hold_ms;
	/* Each CPU's clock, read before anyone is held (it moves us). */
	if (o->read_wait_details)
		run.clock = last_ran_clock_read();
	bool realtime = o->realtime_window && !o->no_stop && enter_realtime();
	/* Re-scan until a pass finds no thread we have not seen: threads born
	 * while we seize are caught (gdb and CRIU do the same). */
	int passes = 0;
	do {
		r = scan_and_seize(&run);
		if (r < 0 && r != -ESRCH)
			break;
		/* No thread born since the listing: no second pass. A no_stop
		 * capture is a sampling tick, not a snapshot held consistent:
		 * a thread born during it is listed by the next tick. */
		if (r > 0 && (o->no_stop || !unlisted_thread_possible(&run)))
			r = 0;
		/* Every seize failed with EPERM or ESRCH on a live process: all
		 * its threads were exiting (an exec in progress kills all but
		 * one, and the exec'ing thread cannot be seized until it is
		 * done). Or /proc/PID/task listed no thread at all, or could not
		 * be read: seen in the middle of a non-leader exec, while the pid
		 * changes hands. Neither is a permission problem nor an exit;
		 * give it a few milliseconds. */
		if (r <= 0 && run.nseized == 0 && run.nnot_stopped == 0 && !o->no_stop &&
		    (r == -ESRCH || run.first_seize_error == EPERM || run.first_seize_error == ESRCH ||
		     pc->nthreads == 0) &&
		    now_ns(CLOCK_MONOTONIC) < transient_until && attach_target_alive(t)) {
			pc->nthreads = 0;
			nlisted = 0;
			run.first_seize_error = 0;
			struct timespec ts = {0, 2000000};
			nanosleep(&ts, NULL);
			r = 1;
		}
	} while (r > 0 && ++passes < 64);

	if (run.nseized > 0)
		wait_and_capture(&run);
	if (run.nseized > 0 && o->while_held)
		o->while_held(o->while_held_ctx, pc);
	if (run.nseized > 0 && o->test_hold_ms)
		test_hold(o->test_hold_ms);
	release_all(&run);
	if (run.first_interrupt)
		watchdog_window(false);
	late_publish();
	if (realtime)
		leave_realtime();
	free(run.holds);
	last_ran_clock_free(run.clock);

	if (maps_missed_a_thread(pc))
		(void)refresh_maps(t, pc, 0);
	read_cpu_times(&run);
	tfiles_sweep();
	finish(pc);
	if (o->skip_idle)
		remember_idle(t, pc);
	remember_thread_list(t, pc);

	if (run.nseized == 0 && pc->nnot_stopped == 0 && pc->nunchanged == 0 && pc->nnot_read == 0) {
		if (!attach_target_alive(t)) {
			pc->target_exited = true;
			return -ESRCH;
		}
		/* Alive, yet nothing to seize even after retrying: a transient
		 * state (see above), not an exit. */
		return run.first_seize_error == EPERM ? -EPERM : -EAGAIN;
	}
	/* Nothing captured and the process is gone: it was exiting under us
	 * (exit_group kills the threads we hold). Say so rather than hand back
	 * a capture without stacks that callers would keep as "the last
	 * moment the target was alive". */
	if (pc->nthreads == pc->nlate + pc->nnot_stopped && !attach_target_alive(t)) {
		pc->target_exited = true;
		return -ESRCH;
	}
	return 0;
}

size_t attach_service_late(void)
{
	service_late();
	return nlate_tids;
}

void attach_settle_late(unsigned timeout_ms)
{
	uint64_t until = now_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000ull;
	while (attach_service_late() && now_ns(CLOCK_MONOTONIC) < until) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}
