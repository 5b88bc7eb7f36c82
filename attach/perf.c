/* On-CPU samples from cpu-clock perf events, switch-out samples from the
 * sched_switch tracepoint (or context-switches events) and page-fault
 * samples, one ring buffer per CPU (perf.h says why that layout). */
#include "attach/perf.h"
#include "attach/attach.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

/* 2^order pages of data per CPU: at 99 Hz a CPU yields at most 99 samples
 * a second of about stack_bytes + 1.5 KiB each, and we drain every few
 * tens of milliseconds, but a drain can wait while the first batch loads
 * the target's modules (hundreds of ms): 2 MiB is 0.6 s at 32 KiB stacks.
 * All rings together stay under RINGS_BYTES_MAX; smaller ones are tried
 * when the locked-memory limit refuses (an unprivileged user). */
#define RING_ORDER_MAX 9
#define RING_ORDER_MIN 3
#define RINGS_BYTES_MAX (64u << 20)
/* Descriptors kept free for everything else a capture opens. */
#define FDS_RESERVED 64

/* The user registers we ask for, in perf's x86 numbering: every general
 * register, ip, flags, cs and ss. DS, ES, FS and GS are refused for a
 * 64-bit process (perf_reg_validate), so bits 12-15 stay clear. */
#define REGS_MASK (((1ull << 24) - 1) & ~(0xfull << 12))
#define NREGS 20

/* Where the kernel lists the sched_switch tracepoint's id: tracefs, or
 * its older place under debugfs (which mounts it on first access, as
 * perf's lookup does). */
static const char *const SCHED_SWITCH_ID_PATHS[] = {
	"/sys/kernel/tracing/events/sched/sched_switch/id",
	"/sys/kernel/debug/tracing/events/sched/sched_switch/id",
};

/* Going to sleep: prev_state has TASK_INTERRUPTIBLE (S) or
 * TASK_UNINTERRUPTIBLE (D). A preempted thread's is TASK_REPORT_MAX
 * (0x100) or 0, so the filter drops every preemption in the kernel,
 * before anything is copied. */
#define SLEEPS_ONLY_FILTER "prev_state & 3"

struct ring {
	int fd;                 /* the event whose buffer this is; -1: none yet */
	void *base;
	size_t size;            /* whole mapping: one header page + data */
	size_t data_size;
	uint8_t *scratch;       /* a record that wraps the end, made contiguous */
	size_t scratch_cap;
};

/* A set of nonzero keys (tids, event ids: the kernel's start at 1): open
 * addressing, 0 = empty. */
struct idset {
	uint64_t *slots;
	size_t n, nslots;
};

struct perf_sampler {
	pid_t pid;
	struct perf_sampler_options opt;
	struct perf_event_attr attr, switch_attr, fault_attr, fork_attr;
	unsigned child_pid_offset; /* in a fork sample's raw record */
	/* attr for an event of every task on one CPU (per_cpu) */
	struct perf_event_attr cpu_attr;
	/* The ids of our context-switches events (what their samples carry
	 * first, with PERF_SAMPLE_IDENTIFIER). */
	struct idset switch_ids;
	/* The same for the page-fault events (fault_period) and the fork
	 * events (forks). */
	struct idset fault_ids, fork_ids;
	int ncpus;
	struct ring *rings;
	int *fds;
	size_t nfds, fds_cap, peak_fds;
	size_t fd_budget; /* the soft RLIMIT_NOFILE, once raised */
	/* Threads that have events (opened by us or inherited), and those
	 * refused one (counted once, whatever the passes at the start). */
	struct idset followed, refused;
	size_t page_size;
	int ring_order;
	struct perf_sampler_stats stats;
	uint64_t mmaps_pending;
};

static int perf_event_open(struct perf_event_attr *a, pid_t tid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static size_t id_slot(const struct idset *s, uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (s->nslots - 1);
}

static bool id_known(const struct idset *s, uint64_t id)
{
	if (!s->nslots || !id)
		return false;
	for (size_t h = id_slot(s, id); s->slots[h]; h = (h + 1) & (s->nslots - 1))
		if (s->slots[h] == id)
			return true;
	return false;
}

static int id_add(struct idset *s, uint64_t id)
{
	if (!id || id_known(s, id))
		return 0;
	if ((s->n + 1) * 2 > s->nslots) {
		size_t n = s->nslots ? s->nslots * 2 : 64;
		uint64_t *slots = calloc(n, sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		struct idset old = *s;
		s->slots = slots;
		s->nslots = n;
		for (size_t i = 0; i < old.nslots; i++)
			if (old.slots[i]) {
				size_t h = id_slot(s, old.slots[i]);
				while (slots[h])
					h = (h + 1) & (n - 1);
				slots[h] = old.slots[i];
			}
		free(old.slots);
	}
	size_t h = id_slot(s, id);
	while (s->slots[h])
		h = (h + 1) & (s->nslots - 1);
	s->slots[h] = id;
	s->n++;
	return 0;
}

static int keep_fd(struct perf_sampler *ps, int fd)
{
	if (ps->nfds == ps->fds_cap) {
		size_t cap = ps->fds_cap ? ps->fds_cap * 2 : 64;
		int *p = realloc(ps->fds, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		ps->fds = p;
		ps->fds_cap = cap;
	}
	ps->fds[ps->nfds++] = fd;
	if (ps->nfds > ps->peak_fds)
		ps->peak_fds = ps->nfds;
	return 0;
}

/* Give cpu's first event a ring; the locked-memory limit may want a
 * smaller one (the first ring fixes the order for the others). */
static int map_ring(struct perf_sampler *ps, struct ring *r, int fd)
{
	for (int order = ps->ring_order; order >= RING_ORDER_MIN; order--) {
		size_t size = ps->page_size * (1 + ((size_t)1 << order));
		void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p != MAP_FAILED) {
			r->fd = fd;
			r->base = p;
			r->size = size;
			r->data_size = size - ps->page_size;
			ps->ring_order = order;
			return 0;
		}
		if (errno != EPERM && errno != ENOMEM)
			return -errno;
	}
	return -EPERM;
}

/* One more event of tid on cpu, writing into that CPU's ring. Returns
 * the descriptor (kept) or -errno. */
static int open_into_ring(struct perf_sampler *ps, struct perf_event_attr *a, pid_t tid, int cpu)
{
	int fd = perf_event_open(a, tid, cpu);
	if (fd < 0)
		return -errno;
	struct ring *r = &ps->rings[cpu];
	int rr = r->fd < 0 ? map_ring(ps, r, fd)
			   : (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) < 0 ? -errno : 0);
	if (rr == 0)
		rr = keep_fd(ps, fd);
	if (rr < 0) {
		if (r->fd != fd)
			close(fd);
		return rr;
	}
	return fd;
}

/* Close fd, the event open_into_ring kept last, when it is not the one
 * whose ring the CPU's others write into. */
static void close_last_fd(struct perf_sampler *ps, int fd)
{
	for (int cpu = 0; cpu < ps->ncpus; cpu++)
		if (ps->rings[cpu].fd == fd)
			return;
	if (ps->nfds && ps->fds[ps->nfds - 1] == fd)
		ps->nfds--;
	close(fd);
}

/* The sched_process_fork tracepoint: its id, and where its format puts
 * child_pid in the raw record (the layout moved between kernels). */
static const char *const FORK_TRACEPOINT_DIRS[] = {
	"/sys/kernel/tracing/events/sched/sched_process_fork",
	"/sys/kernel/debug/tracing/events/sched/sched_process_fork",
};

static long fork_tracepoint(unsigned *child_pid_offset)
{
	for (size_t i = 0; i < sizeof(FORK_TRACEPOINT_DIRS) / sizeof(FORK_TRACEPOINT_DIRS[0]); i++) {
		char path[128], buf[4096], *end;
		snprintf(path, sizeof(path), "%s/id", FORK_TRACEPOINT_DIRS[i]);
		if (attach_read_small_file_at(AT_FDCWD, path, buf, sizeof(buf)) == 0)
			continue;
		errno = 0;
		long id = strtol(buf, &end, 10);
		if (errno || end == buf || id < 0)
			continue;
		snprintf(path, sizeof(path), "%s/format", FORK_TRACEPOINT_DIRS[i]);
		if (attach_read_small_file_at(AT_FDCWD, path, buf, sizeof(buf)) == 0)
			continue;
		const char *f = strstr(buf, "pid_t child_pid;");
		const char *o = f ? strstr(f, "offset:") : NULL;
		if (!o)
			continue;
		unsigned long off = strtoul(o + 7, NULL, 10);
		if (off > 4096)
			continue;
		*child_pid_offset = (unsigned)off;
		return id;
	}
	return -ENOENT;
}

/* The sched_switch tracepoint's id, or -ENOENT (no tracefs, not root). */
static long sched_switch_id(void)
{
	for (size_t i = 0; i < sizeof(SCHED_SWITCH_ID_PATHS) / sizeof(SCHED_SWITCH_ID_PATHS[0]); i++) {
		char buf[32], *end;
		if (attach_read_small_file_at(AT_FDCWD, SCHED_SWITCH_ID_PATHS[i], buf, sizeof(buf)) == 0)
			continue;
		errno = 0;
		long id = strtol(buf, &end, 10);
		if (errno == 0 && end != buf && id >= 0)
			return id;
	}
	return -ENOENT;
}

/* The switch-out event: sched_switch going to sleep when the kernel lets
 * us filter it, else every context switch (perf.h says what that costs). */
static void switch_attr_for(struct perf_sampler *ps, bool sleeps_only)
{
	struct perf_event_attr *w = &ps->switch_attr;
	long id = sleeps_only ? sched_switch_id() : -1;
	ps->stats.switch_sleeps_only = id >= 0;
	w->type = id >= 0 ? PERF_TYPE_TRACEPOINT : PERF_TYPE_SOFTWARE;
	w->config = id >= 0 ? (uint64_t)id : PERF_COUNT_SW_CONTEXT_SWITCHES;
}

static bool refused_by_kernel(int err)
{
	return err != -ENOMEM && err != -ESRCH; /* not: out of memory, thread gone */
}

/* What opening an optional event (switch-out, page fault, fork) of one
 * thread on one CPU ends with: its id remembered in ids. A kernel that
 * refuses the kind on the first thread (*refused gets the errno, 1 is
 * returned and the caller turns that kind off) costs only those samples,
 * never the whole sampler. Else 0 or -errno. */
static int keep_optional(int fd, bool first, struct idset *ids, int *refused)
{
	if (fd < 0) {
		if (first && refused_by_kernel(fd)) {
			*refused = -fd;
			return 1;
		}
		return fd;
	}
	uint64_t id = 0;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		return -errno;
	return id_add(ids, id);
}

/* The switch-out event of tid on cpu, filtered to sleeps if it is the
 * tracepoint. A kernel that refuses the tracepoint or its filter on the
 * first thread gets the context-switches event; one that refuses that as
 * well turns switch-out samples off (switch_refused). */
static int open_switch_event(struct perf_sampler *ps, pid_t tid, int cpu)
{
	bool first = ps->followed.n == 0 && ps->switch_ids.n == 0;
	int fd = open_into_ring(ps, &ps->switch_attr, tid, cpu);
	if (fd >= 0 && ps->stats.switch_sleeps_only &&
	    ioctl(fd, PERF_EVENT_IOC_SET_FILTER, SLEEPS_ONLY_FILTER) < 0) {
		int err = -errno;
		close_last_fd(ps, fd);
		fd = err;
	}
	if (fd < 0 && first && ps->stats.switch_sleeps_only && refused_by_kernel(fd)) {
		switch_attr_for(ps, false);
		fd = open_into_ring(ps, &ps->switch_attr, tid, cpu);
	}
	int r = keep_optional(fd, first, &ps->switch_ids, &ps->stats.switch_refused);
	if (r == 1)
		ps->opt.switch_freq = 0;
	return r == 1 ? 0 : r;
}

/* The page-fault event of tid on cpu (fault_refused turns it off). */
static int open_fault_event(struct perf_sampler *ps, pid_t tid, int cpu)
{
	bool first = ps->followed.n == 0 && ps->fault_ids.n == 0;
	int r = keep_optional(open_into_ring(ps, &ps->fault_attr, tid, cpu), first, &ps->fault_ids,
			      &ps->stats.fault_refused);
	if (r == 1)
		ps->opt.fault_period = 0;
	return r == 1 ? 0 : r;
}

/* The fork event of tid on cpu (sched_process_fork: the thread made a
 * thread or a process; without tracefs, refused as ENOENT). */
static int open_fork_event(struct perf_sampler *ps, pid_t tid, int cpu)
{
	bool first = ps->followed.n == 0 && ps->fork_ids.n == 0;
	int fd = ps->fork_attr.config != (uint64_t)-1 ? open_into_ring(ps, &ps->fork_attr, tid, cpu) : -ENOENT;
	int r = keep_optional(fd, first, &ps->fork_ids, &ps->stats.fork_refused);
	if (r == 1)
		ps->opt.forks = false;
	return r == 1 ? 0 : r;
}

/* Events on every CPU for tid. -ESRCH when it is gone; other errors are
 * the kernel's refusal. */
static int open_thread(struct perf_sampler *ps, pid_t tid)
{
	int opened = 0, err = 0;
	/* Per CPU, the cpu-clock events are opened once, with the first
	 * thread; a thread has only its switch-out events then. */
	size_t kinds = (ps->opt.switch_freq ? 1 : 0) + (ps->opt.fault_period ? 1 : 0) + (ps->opt.forks ? 1 : 0) +
		       (!ps->stats.per_cpu || ps->followed.n == 0 ? 1 : 0);
	/* Leave descriptors for the rest of the capture (the bundle's files,
	 * the workers' sockets, /proc): a thread past the budget goes without
	 * an event, and is counted, rather than the bundle failing with
	 * EMFILE. */
	if (ps->nfds + (size_t)ps->ncpus * kinds + FDS_RESERVED > ps->fd_budget)
		return -EMFILE;
	for (int cpu = 0; cpu < ps->ncpus; cpu++) {
		int fd = 0;
		if (!ps->stats.per_cpu)
			fd = open_into_ring(ps, &ps->attr, tid, cpu);
		else if (ps->rings[cpu].fd < 0)
			fd = open_into_ring(ps, &ps->cpu_attr, -1, cpu);
		if (fd == -ENODEV) /* an offline CPU */
			continue;
		if (fd < 0) {
			err = fd;
			break;
		}
		if (ps->opt.switch_freq && (err = open_switch_event(ps, tid, cpu)) < 0)
			break;
		if (ps->opt.fault_period && (err = open_fault_event(ps, tid, cpu)) < 0)
			break;
		if (ps->opt.forks && (err = open_fork_event(ps, tid, cpu)) < 0)
			break;
		opened++;
	}
	if (opened == 0)
		return err ? err : -ENODEV;
	/* Followed even if some CPU refused: opening it again would double
	 * the CPUs that did not. The refusal is still reported. */
	int a = id_add(&ps->followed, (uint64_t)tid);
	return a < 0 ? a : err;
}

/* Raise the soft descriptor limit to the hard one: one event per thread
 * and CPU adds up (512 threads on 2 CPUs: 1024). */
static size_t raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur == RLIM_INFINITY ? SIZE_MAX / 2 : (size_t)rl.rlim_cur;
}

/* Open events for the threads of /proc/PID/task that have none yet; the
 * number opened (>= 0) or -errno. */
static int scan_threads(struct perf_sampler *ps)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)ps->pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	int r = 0, opened = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		if (*end || tid <= 0 || id_known(&ps->followed, (uint64_t)tid) ||
		    id_known(&ps->refused, (uint64_t)tid))
			continue;
		int o = open_thread(ps, (pid_t)tid);
		if (o == -ENOMEM) {
			r = o;
			break;
		}
		if (o == 0)
			opened++;
		if (o < 0 && o != -ESRCH && id_add(&ps->refused, (uint64_t)tid) == 0)
			ps->stats.threads_without_event++;
	}
	closedir(d);
	return r < 0 ? r : opened;
}

int perf_sampler_open(pid_t pid, const struct perf_sampler_options *o, struct perf_sampler **ret)
{
	struct perf_sampler *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	ps->pid = pid;
	ps->opt = *o;
	ps->opt.stack_bytes &= ~(size_t)7; /* the kernel wants a multiple of 8 */
	if (ps->opt.stack_bytes > PERF_STACK_BYTES_MAX)
		ps->opt.stack_bytes = PERF_STACK_BYTES_MAX;
	ps->page_size = (size_t)sysconf(_SC_PAGESIZE);
	ps->ncpus = get_nprocs_conf();
	ps->ring_order = RING_ORDER_MAX;
	while (ps->ring_order > RING_ORDER_MIN &&
	       ((size_t)ps->ncpus << ps->ring_order) * ps->page_size > RINGS_BYTES_MAX)
		ps->ring_order--;
	ps->rings = calloc((size_t)ps->ncpus, sizeof(*ps->rings));
	if (!ps->rings) {
		free(ps);
		return -ENOMEM;
	}
	for (int i = 0; i < ps->ncpus; i++)
		ps->rings[i].fd = -1;

	struct perf_event_attr *a = &ps->attr;
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->sample_period = o->period_ns ? o->period_ns : 10101010;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER |
			 PERF_SAMPLE_STACK_USER | (o->kernel_frames ? PERF_SAMPLE_CALLCHAIN : 0);
	a->sample_regs_user = REGS_MASK;
	a->sample_stack_user = (uint32_t)ps->opt.stack_bytes;
	/* Kernel time is sampled (exclude_kernel stays 0); the user part of
	 * the chain we unwind ourselves, with CFI, from regs and stack. */
	a->exclude_callchain_user = 1;
	/* 0: the kernel's own cap (kernel.perf_event_max_stack, 127 by
	 * default; asking for more is refused with EOVERFLOW). */
	a->sample_max_stack = 0;
	a->exclude_hv = 1;
	a->inherit = 1;
	a->inherit_thread = 1;
	a->task = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->context_switch = o->switch_records;

	/* Switch-outs: the same user registers and stack, no kernel chain
	 * (it would always be the scheduler's). The event fires inside the
	 * scheduler, so kernel-mode events must stay included (exclude_kernel
	 * would drop every one); the user registers are the ones saved at the
	 * thread's last entry into the kernel. Side-band records come from
	 * the cpu-clock events only. */
	struct perf_event_attr *w = &ps->switch_attr;
	*w = *a;
	switch_attr_for(ps, true);
	w->sample_type &= ~(uint64_t)PERF_SAMPLE_CALLCHAIN;
	w->freq = 1;
	w->sample_freq = o->switch_freq;
	size_t sw_stack = o->switch_stack_bytes ? o->switch_stack_bytes & ~(size_t)7 : 16384;
	if (sw_stack > ps->opt.stack_bytes)
		sw_stack = ps->opt.stack_bytes;
	w->sample_stack_user = (uint32_t)sw_stack;
	w->task = 0;
	w->mmap = 0;
	w->mmap2 = 0;
	w->context_switch = 0; /* the cpu-clock events' records say it all */

	/* Page faults: the thread's user registers and stack where it
	 * touched a page for the first time (or its syscall's, when the
	 * kernel did on its behalf), and the fault's kernel chain; one
	 * sample every fault_period faults. (Frequency mode was tried: the
	 * kernel's period for so sparse an event came out in the hundreds
	 * of thousands, 4.3 M faults claimed for 2,600 pages.) */
	struct perf_event_attr *f = &ps->fault_attr;
	*f = *w;
	f->type = PERF_TYPE_SOFTWARE;
	f->config = PERF_COUNT_SW_PAGE_FAULTS;
	/* Without PERF_SAMPLE_PERIOD: with it, the kernel samples every
	 * software event whatever the period (perf_swevent_event). Each
	 * sample stands for fault_period faults. */
	f->sample_type = a->sample_type & ~(uint64_t)PERF_SAMPLE_PERIOD;
	f->freq = 0;
	f->sample_period = o->fault_period;
	f->sample_stack_user = (uint32_t)ps->opt.stack_bytes;

	/* Forks: where a thread of the target created a thread or a
	 * process (sched_process_fork fires in the creator, at its clone),
	 * the child's id in the raw record. Costs only the target's clones. */
	struct perf_event_attr *k = &ps->fork_attr;
	*k = *f;
	long fork_id = o->forks ? fork_tracepoint(&ps->child_pid_offset) : -ENOENT;
	k->type = PERF_TYPE_TRACEPOINT;
	k->config = fork_id >= 0 ? (uint64_t)fork_id : (uint64_t)-1;
	k->sample_type = (a->sample_type & ~(uint64_t)PERF_SAMPLE_PERIOD) | PERF_SAMPLE_RAW;
	k->sample_period = 1;

	ps->fd_budget = raise_nofile();
	/* One cpu-clock event per CPU, opened with the first thread: it
	 * samples whatever runs there, and only the target's samples are
	 * kept (parse_sample); new threads need none of their own. */
	ps->cpu_attr = *a;
	ps->cpu_attr.inherit = 0;
	ps->cpu_attr.inherit_thread = 0;
	ps->stats.per_cpu = o->per_cpu && !o->switch_records;
	int r = open_thread(ps, pid);
	/* Refused (perf_event_paranoid without CAP_PERFMON): per thread.
	 * The refusal comes at the first CPU; a ring left open by one that
	 * was not refused would sample that CPU a second time. */
	bool none_open = true;
	for (int i = 0; i < ps->ncpus; i++)
		none_open = none_open && ps->rings[i].fd < 0;
	if (ps->stats.per_cpu && (r == -EACCES || r == -EPERM) && none_open) {
		ps->stats.per_cpu = false;
		ps->stats.per_cpu_refused = -r;
		r = open_thread(ps, pid);
	}
	if (r == -EINVAL && a->context_switch) {
		/* A kernel without context_switch (before 4.3). */
		a->context_switch = 0;
		ps->stats.switch_records_refused = true;
		r = open_thread(ps, pid);
	}
	if (r == -EINVAL) {
		/* A kernel before 5.13 has no inherit_thread: follow threads
		 * without it and drop the samples of forked children. */
		a->inherit_thread = 0;
		ps->switch_attr.inherit_thread = 0;
		r = open_thread(ps, pid);
	}
	/* The other threads, listed until a listing finds none without an
	 * event: a thread created before its creator had events is listed
	 * by the next pass, and every thread created after that inherits
	 * (no later re-scan, which would race with inheritance and give a
	 * thread two sets of events). A leader that exited (pthread_exit)
	 * leaves its threads running. */
	if (r == 0 || r == -ESRCH) {
		int n;
		for (int pass = 0; pass < 16 && (n = scan_threads(ps)) > 0; pass++)
			;
		r = n < 0 ? n : 0;
	}
	if (r == 0 && ps->followed.n == 0)
		r = -ESRCH;
	if (r < 0) {
		perf_sampler_free(ps);
		return r;
	}
	*ret = ps;
	return 0;
}

static uint64_t take_u64(const uint8_t **p, const uint8_t *end, bool *bad)
{
	uint64_t v = 0;
	if ((size_t)(end - *p) < 8) {
		*bad = true;
		return 0;
	}
	memcpy(&v, *p, 8);
	*p += 8;
	return v;
}

static void regs_from_perf(const uint64_t *v, struct user_regs_struct *r)
{
	/* perf's order with bits 12-15 left out: ax bx cx dx si di bp sp ip
	 * flags cs ss r8 ... r15. */
	memset(r, 0, sizeof(*r));
	r->rax = v[0];
	r->rbx = v[1];
	r->rcx = v[2];
	r->rdx = v[3];
	r->rsi = v[4];
	r->rdi = v[5];
	r->rbp = v[6];
	r->rsp = v[7];
	r->rip = v[8];
	r->eflags = v[9];
	r->cs = v[10];
	r->ss = v[11];
	r->r8 = v[12];
	r->r9 = v[13];
	r->r10 = v[14];
	r->r11 = v[15];
	r->r12 = v[16];
	r->r13 = v[17];
	r->r14 = v[18];
	r->r15 = v[19];
}

/* One PERF_RECORD_SAMPLE, laid out as attr.sample_type says. false when
 * it does not parse (then it is counted as lost). */
static bool parse_sample(const struct perf_sampler *ps, const struct perf_event_header *h,
			 struct perf_sample *s, uint64_t *kpcs)
{
	const uint8_t *p = (const uint8_t *)(h + 1), *end = (const uint8_t *)h + h->size;
	bool bad = false;
	memset(s, 0, sizeof(*s));
	uint16_t mode = h->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	s->in_kernel = mode == PERF_RECORD_MISC_KERNEL;
	uint64_t id = take_u64(&p, end, &bad);
	s->switch_out = id_known(&ps->switch_ids, id);
	s->fault = !s->switch_out && ps->fault_ids.n && id_known(&ps->fault_ids, id);
	s->fork = !s->switch_out && !s->fault && ps->fork_ids.n && id_known(&ps->fork_ids, id);
	uint64_t sample_type = s->switch_out ? ps->switch_attr.sample_type
			       : s->fault    ? ps->fault_attr.sample_type
			       : s->fork     ? ps->fork_attr.sample_type
					     : ps->attr.sample_type;
	take_u64(&p, end, &bad); /* ip */
	uint64_t pidtid = take_u64(&p, end, &bad);
	s->tid = (pid_t)(uint32_t)(pidtid >> 32);
	pid_t pid = (pid_t)(uint32_t)pidtid;
	s->time_ns = take_u64(&p, end, &bad);
	s->period_ns = sample_type & PERF_SAMPLE_PERIOD ? take_u64(&p, end, &bad)
		       : s->fault			? ps->opt.fault_period
							: 1;
	if (sample_type & PERF_SAMPLE_CALLCHAIN) {
		uint64_t nr = take_u64(&p, end, &bad);
		if (nr > (uint64_t)(end - p) / 8)
			return false;
		bool kernel = false;
		for (uint64_t i = 0; i < nr; i++) {
			uint64_t ip = take_u64(&p, end, &bad);
			if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
				kernel = ip == (uint64_t)PERF_CONTEXT_KERNEL;
				continue;
			}
			if (kernel && s->nkernel < PERF_KERNEL_FRAMES_MAX)
				kpcs[s->nkernel++] = ip;
		}
		s->kernel_pcs = kpcs;
	}
	if (sample_type & PERF_SAMPLE_RAW) {
		/* u32 size, the record, padding to 8 bytes. */
		if ((size_t)(end - p) < 4)
			return false;
		uint32_t size;
		memcpy(&size, p, 4);
		if (size > (size_t)(end - p) - 4)
			return false;
		int32_t child;
		if (ps->child_pid_offset + 4 <= size) {
			memcpy(&child, p + 4 + ps->child_pid_offset, 4);
			s->child_tid = child;
		}
		p += 4 + size;
	}
	uint64_t abi = take_u64(&p, end, &bad);
	if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
		if ((size_t)(end - p) < NREGS * 8)
			return false;
		uint64_t v[NREGS];
		memcpy(v, p, sizeof(v));
		p += sizeof(v);
		regs_from_perf(v, &s->regs);
		s->have_user_regs = true;
	}
	uint64_t size = take_u64(&p, end, &bad);
	if (size) {
		if (size > (uint64_t)(end - p))
			return false;
		const uint8_t *data = p;
		p += size;
		uint64_t dyn = take_u64(&p, end, &bad);
		if (dyn > size)
			dyn = size;
		s->stack = data;
		s->stack_len = (size_t)dyn;
		s->stack_maybe_truncated = dyn == size;
	}
	/* Forked children inherit our events where inherit_thread is missing. */
	return !bad && pid == ps->pid;
}

static void on_record(struct perf_sampler *ps, const struct perf_event_header *h, perf_sample_fn fn,
		      void *arg, size_t *nsamples)
{
	const uint8_t *p = (const uint8_t *)(h + 1), *end = (const uint8_t *)h + h->size;
	bool bad = false;
	switch (h->type) {
	case PERF_RECORD_SAMPLE: {
		struct perf_sample s;
		uint64_t kpcs[PERF_KERNEL_FRAMES_MAX];
		if (!parse_sample(ps, h, &s, kpcs))
			break;
		if (s.switch_out)
			ps->stats.switch_samples++;
		else if (s.fault)
			ps->stats.fault_samples++, ps->stats.faults += s.period_ns;
		else if (s.fork)
			ps->stats.fork_samples++;
		else
			ps->stats.samples++;
		if (s.stack_maybe_truncated && !s.switch_out && !s.fault && !s.fork)
			ps->stats.stacks_truncated++;
		(*nsamples)++;
		fn(arg, &s);
		break;
	}
	case PERF_RECORD_LOST: {
		uint64_t id = take_u64(&p, end, &bad);
		uint64_t n = take_u64(&p, end, &bad);
		if (id_known(&ps->switch_ids, id))
			ps->stats.switch_lost += n;
		else if (ps->fault_ids.n && id_known(&ps->fault_ids, id))
			ps->stats.fault_lost += n;
		else
			ps->stats.lost += n;
		break;
	}
	case PERF_RECORD_THROTTLE:
		take_u64(&p, end, &bad); /* time */
		if (id_known(&ps->switch_ids, take_u64(&p, end, &bad)))
			ps->stats.switch_throttled++;
		else
			ps->stats.throttled++;
		break;
	case PERF_RECORD_FORK: {
		/* {pid, ppid, tid, ptid}: a new thread got inherited events
		 * (counted, not kept: a churning target would grow a set of
		 * every tid it ever had). */
		uint64_t pp = take_u64(&p, end, &bad);
		if (!bad && (pid_t)(uint32_t)pp == ps->pid)
			ps->stats.threads_inherited++;
		break;
	}
	case PERF_RECORD_SWITCH: {
		/* Its body is the sample_id: {pid, tid} and time, as the
		 * cpu-clock attr's sample_type has them, first. */
		uint64_t pidtid = take_u64(&p, end, &bad);
		uint64_t time = take_u64(&p, end, &bad);
		if (bad || (pid_t)(uint32_t)pidtid != ps->pid)
			break;
		struct perf_sample s = {
			.tid = (pid_t)(uint32_t)(pidtid >> 32),
			.time_ns = time,
			.switch_record = true,
			.out = (h->misc & PERF_RECORD_MISC_SWITCH_OUT) != 0,
			.preempt = (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0,
		};
		if (s.out)
			ps->stats.switch_records_out++;
		else
			ps->stats.switch_records_in++;
		fn(arg, &s);
		break;
	}
	case PERF_RECORD_MMAP2: {
		uint64_t pt = take_u64(&p, end, &bad);
		if (!bad && (pid_t)(uint32_t)pt == ps->pid)
			ps->mmaps_pending++, ps->stats.mmap_records++;
		break;
	}
	default:
		break;
	}
}

size_t perf_sampler_drain(struct perf_sampler *ps, perf_sample_fn fn, void *arg)
{
	size_t n = 0;
	for (int c = 0; c < ps->ncpus; c++) {
		struct ring *r = &ps->rings[c];
		if (r->fd < 0)
			continue;
		struct perf_event_mmap_page *meta = r->base;
		uint8_t *data = (uint8_t *)r->base + ps->page_size;
		/* data_head is written by the kernel: read it before the data
		 * (acquire), free the space after (release on data_tail). */
		uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
		uint64_t tail = meta->data_tail;
		while (tail + sizeof(struct perf_event_header) <= head) {
			size_t off = (size_t)(tail % r->data_size);
			struct perf_event_header hdr;
			if (off + sizeof(hdr) <= r->data_size) {
				memcpy(&hdr, data + off, sizeof(hdr));
			} else {
				size_t first = r->data_size - off;
				memcpy(&hdr, data + off, first);
				memcpy((uint8_t *)&hdr + first, data, sizeof(hdr) - first);
			}
			if (hdr.size < sizeof(hdr) || tail + hdr.size > head)
				break;
			const struct perf_event_header *h;
			if (off + hdr.size <= r->data_size) {
				h = (const void *)(data + off);
			} else {
				if (r->scratch_cap < hdr.size) {
					uint8_t *s = realloc(r->scratch, hdr.size);
					if (!s) {
						tail += hdr.size;
						ps->stats.lost++;
						continue;
					}
					r->scratch = s;
					r->scratch_cap = hdr.size;
				}
				size_t first = r->data_size - off;
				memcpy(r->scratch, data + off, first);
				memcpy(r->scratch + first, data, hdr.size - first);
				h = (const void *)r->scratch;
			}
			on_record(ps, h, fn, arg, &n);
			tail += hdr.size;
		}
		__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	}
	return n;
}

uint64_t perf_sampler_take_mmaps(struct perf_sampler *ps)
{
	uint64_t n = ps->mmaps_pending;
	ps->mmaps_pending = 0;
	return n;
}

void perf_sampler_stats(const struct perf_sampler *ps, struct perf_sampler_stats *ret)
{
	*ret = ps->stats;
	ret->threads_followed = ps->followed.n + ps->stats.threads_inherited;
	ret->events = ps->nfds ? ps->nfds : ps->peak_fds;
}

void perf_sampler_stop(struct perf_sampler *ps)
{
	for (size_t i = 0; i < ps->nfds; i++)
		close(ps->fds[i]);
	ps->nfds = 0;
	for (int c = 0; c < ps->ncpus; c++) {
		if (ps->rings[c].base)
			munmap(ps->rings[c].base, ps->rings[c].size);
		ps->rings[c].base = NULL;
		ps->rings[c].fd = -1;
	}
}

void perf_sampler_free(struct perf_sampler *ps)
{
	if (!ps)
		return;
	if (ps->rings) {
		perf_sampler_stop(ps);
		for (int c = 0; c < ps->ncpus; c++)
			free(ps->rings[c].scratch);
	}
	free(ps->rings);
	free(ps->fds);
	free(ps->followed.slots);
	free(ps->refused.slots);
	free(ps->switch_ids.slots);
	free(ps->fault_ids.slots);
	free(ps->fork_ids.slots);
	free(ps);
}
