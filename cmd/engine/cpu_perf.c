/* The CPU profile from perf events: drain, unwind in batches, aggregate. */
#include "cmd/engine/cpu_perf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* memfd_create */
#include <sys/uio.h>
#include <unistd.h>

#include "attach/perf.h"
#include "cmd/engine/cpu_weigh.h"
#include "cmd/engine/profile_out.h"
#include "symbolize/arrays.h"
#include "symbolize/kallsyms.h"
#include "symbolize/symbolize.h"

/* Samples unwound in one round trip to the worker: bounded so that one
 * message stays a few MiB at the largest stack copies. */
#define BATCH_MAX 64
#define LABELS_MAX 160
/* Flushes between two re-reads of the maps for a stack outside them. */
#define MAPS_MISS_EVERY 64
/* Deferred unwinding: a placeholder is this base with the sample's index in
 * the low 48 bits: above every user address and below every kernel one
 * (non-canonical), apart from py_session.c's frames (0x5059...). */
#define PLACEHOLDER_BASE 0x4446000000000000ull
#define PLACEHOLDER_MASK 0xffff000000000000ull
/* The most samples deferring keeps, whatever their bytes: their
 * unwinding after the capture takes a second or two. Past it, or past
 * defer_bytes_max, samples are unwound as they are drained. */
#define DEFER_SAMPLES_MAX 65536u

/* Kept stack copies go into a memfd, written once per drained batch and
 * read back at the end. In our own memory each copy landed on fresh pages
 * (a malloc each, or chunks mapped and populated up front alike), and in
 * a VM that shadows page tables the first touch of a page is what costs:
 * perf record -g of the main thread showed 16-17 % in that memcpy or in
 * _int_malloc and native_set_pte, more than the unwinding saved. The
 * kernel's copy into the file's pages does not touch our mappings. */

/* A CPU sample kept for unwinding after the capture. */
struct deferred_sample {
	pid_t tid;
	struct user_regs_struct regs;
	uint64_t offset; /* its trimmed stack copy in the memfd */
	size_t len;
};

struct cpu_perf {
	const struct attach_target *target;
	struct perf_sampler *ps;
	bool kernel_frames;
	/* Loaded when the first kernel address is named, at the end: 120,000
	 * lines of /proc/kallsyms are no start-up cost, and none at all for a
	 * capture without kernel frames. NULL once tried: unreadable. */
	struct kallsyms *ksyms;
	bool ksyms_tried;
	/* The batch being filled: threads[i] is sample i (registers and a
	 * copy of its stack); maps_text is the target's maps, re-read when an
	 * executable mapping appeared. */
	struct process_capture batch;
	bool maps_read;
	/* batch.maps_text parsed: where each sampled stack's mapping ends. */
	struct maps ranges;
	unsigned flushes_since_maps;
	uint64_t copies_whole; /* full-size copies that held their whole mapping */
	uint64_t kpcs[BATCH_MAX][PERF_KERNEL_FRAMES_MAX];
	size_t nkpcs[BATCH_MAX];
	uint64_t period_ns[BATCH_MAX];
	uint64_t time_ns[BATCH_MAX];
	bool user[BATCH_MAX];
	bool switch_out[BATCH_MAX]; /* a switch-out: for moments only */
	bool fault[BATCH_MAX];      /* a page-fault sample: for growth only */
	bool cut[BATCH_MAX];        /* its stack copy may have been cut short */
	struct moments *moments;
	struct wall_window *window; /* NULL: no switch records asked for */
	struct unwound_stack *stacks;
	/* Where the current drain goes. */
	struct interp *in;
	struct stackagg *cpu;
	struct stackagg *growth; /* fault samples (cpu_perf_options.growth) */
	struct stackagg *creates; /* fork samples (cpu_perf_options.creates) */
	uint64_t page_size;
	cpu_perf_label_fn label;
	cpu_perf_amend_fn amend;
	void *label_arg;
	long added;
	uint64_t switch_same_place; /* switch-outs where the thread slept before */
	uint64_t switch_unwound;    /* held switch-outs a tick needed */
	uint64_t kernel_only;     /* samples with no user context */
	uint64_t user_unwound_empty; /* user context, but no user frame came back */
	uint64_t user_unwound_truncated; /* the unwind stopped short of the outermost frame */
	/* Deferred unwinding (cpu_perf.h): the samples kept, and once unwound
	 * their frames in one array, sample k's at pcs[off[k]..off[k + 1]). */
	uint64_t defer_bytes_max; /* 0: nothing deferred */
	bool deferred_unwound;
	struct deferred_sample *deferred;
	size_t ndeferred, deferred_cap, deferred_bytes;
	int defer_fd; /* the memfd of the copies; -1: not made yet, or failed */
	uint64_t defer_end;
	uint64_t *deferred_pcs;
	size_t ndeferred_pcs, deferred_pcs_cap;
	size_t *deferred_off;
	bool *deferred_truncated;
	uint64_t deferred_online; /* past the budget: unwound as drained */
	/* Every thread's schedstat when the events opened and when they
	 * stopped (cpu_weigh.h), and what weighing to them did. */
	struct thread_cpu *cpu_start, *cpu_end;
	size_t ncpu_start, ncpu_end;
	struct cpu_weighing weighing;
	bool weighed;
	int error;
};

int cpu_perf_new(const struct attach_target *t, const struct cpu_perf_options *co,
		 struct cpu_perf **ret)
{
	struct cpu_perf *cp = calloc(1, sizeof(*cp));
	if (!cp)
		return -ENOMEM;
	cp->target = t;
	cp->kernel_frames = co->kernel_frames;
	cp->moments = co->moments;
	cp->window = co->window;
	cp->defer_bytes_max = co->defer_bytes_max;
	cp->defer_fd = -1;
	cp->growth = co->fault_period ? co->growth : NULL;
	cp->creates = co->creates;
	cp->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	cp->batch.pid = t->pid;
	cp->batch.threads = calloc(BATCH_MAX, sizeof(*cp->batch.threads));
	cp->batch.threads_cap = BATCH_MAX;
	cp->stacks = calloc(BATCH_MAX, sizeof(*cp->stacks));
	if (!cp->batch.threads || !cp->stacks) {
		cpu_perf_free(cp);
		return -ENOMEM;
	}
	struct perf_sampler_options o = {
		.period_ns = co->period_ns,
		.stack_bytes = co->stack_bytes,
		.kernel_frames = co->kernel_frames,
		.switch_freq = co->moments ? co->switch_freq : 0,
		.switch_records = co->window != NULL,
		.per_cpu = co->per_cpu,
		.fault_period = cp->growth ? co->fault_period : 0,
		.forks = cp->creates != NULL,
	};

	int r = perf_sampler_open(t->pid, &o, &cp->ps);
	if (r < 0) {
		cpu_perf_free(cp);
		return r;
	}
	/* After the events are on: no CPU time read here goes unsampled. A
	 * target whose threads cannot be read is simply not weighed. */
	if (attach_threads_cpu_ns(t, &cp->cpu_start, &cp->ncpu_start) == -ENOMEM) {
		cpu_perf_free(cp);
		return -ENOMEM;
	}
	*ret = cp;
	return 0;
}

static void read_maps(struct cpu_perf *cp)
{
	struct process_capture *b = &cp->batch;
	cp->flushes_since_maps = 0;
	if (attach_read_maps(cp->target, b) < 0)
		return;
	cp->maps_read = true;
	maps_release(&cp->ranges);
	if (maps_parse(b->maps_text, b->maps_len, &cp->ranges) < 0)
		cp->ranges = (struct maps){0};
}

/* The kernel copies a fixed size from SP on, past the top of a shallow
 * stack into whatever is mapped above it: cut each copy at the end of the
 * mapping that holds its SP. The worker is then sent a few KiB instead
 * of 32 (bytes it would copy twice and never read), and a copy that held
 * its whole stack is not counted as truncated. A stack in no mapping we
 * know (a thread created since the maps were read) re-reads them, at most
 * every MAPS_MISS_EVERY flushes. */
static void trim_stacks(struct cpu_perf *cp)
{
	struct process_capture *b = &cp->batch;
	bool reread = false;
	for (size_t i = 0; i < b->nthreads; i++) {
		struct thread_capture *tc = &b->threads[i];
		if (!tc->stack_len)
			continue;
		const struct maps_entry *e = maps_find(&cp->ranges, tc->stack_start);
		if (!e && !reread && cp->flushes_since_maps >= MAPS_MISS_EVERY) {
			reread = true;
			read_maps(cp);
			e = maps_find(&cp->ranges, tc->stack_start);
		}
		if (!e || e->limit - tc->stack_start >= tc->stack_len)
			continue;
		tc->stack_len = (size_t)(e->limit - tc->stack_start);
		if (cp->cut[i] && !cp->switch_out[i])
			cp->copies_whole++;
		cp->cut[i] = false;
	}
}

bool cpu_perf_is_placeholder(uint64_t pc)
{
	return (pc & PLACEHOLDER_MASK) == PLACEHOLDER_BASE;
}

/* Append the stack copies of the batch's user samples to the memfd, made
 * on first use: 0, or -errno (nothing is kept then). */
static int defer_write(struct cpu_perf *cp)
{
	struct process_capture *b = &cp->batch;
	if (cp->defer_fd < 0) {
		cp->defer_fd = memfd_create("diag-deferred-stacks", MFD_CLOEXEC);
		if (cp->defer_fd < 0)
			return -errno;
	}
	struct iovec iov[BATCH_MAX];
	int n = 0;
	size_t total = 0;
	for (size_t i = 0; i < b->nthreads; i++) {
		if (!cp->user[i] || !b->threads[i].stack_len)
			continue;
		iov[n].iov_base = b->threads[i].stack;
		iov[n++].iov_len = b->threads[i].stack_len;
		total += b->threads[i].stack_len;
	}
	size_t done = 0;
	while (done < total) {
		ssize_t w = pwritev(cp->defer_fd, iov, n, (off_t)(cp->defer_end + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		done += (size_t)w;
		/* A short write: skip what went out and write the rest. */
		while (n && (size_t)w >= iov[0].iov_len) {
			w -= (ssize_t)iov[0].iov_len;
			memmove(iov, iov + 1, (size_t)--n * sizeof(iov[0]));
		}
		if (n && w) {
			iov[0].iov_base = (uint8_t *)iov[0].iov_base + w;
			iov[0].iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* defer_bytes_max: keep the batch's CPU samples (trimmed) for later and
 * give each a placeholder stack instead of unwinding it. false (nothing
 * kept) for switch-outs (a tick needs those now), once the deferred ones
 * are unwound, and past the budget. Batches are all CPU samples or all
 * switch-outs (cpu_perf_unwind_held flushes before it adds). */
static bool defer_batch(struct cpu_perf *cp)
{
	struct process_capture *b = &cp->batch;
	if (!cp->defer_bytes_max || cp->deferred_unwound || cp->switch_out[0])
		return false;
	size_t bytes = 0;
	for (size_t i = 0; i < b->nthreads; i++)
		bytes += cp->user[i] ? b->threads[i].stack_len : 0;
	if (cp->ndeferred + b->nthreads > DEFER_SAMPLES_MAX ||
	    cp->deferred_bytes + bytes > cp->defer_bytes_max ||
	    array_reserve(&cp->deferred, &cp->deferred_cap, cp->ndeferred + b->nthreads,
			  sizeof(*cp->deferred), 256) < 0 ||
	    defer_write(cp) < 0) {
		cp->deferred_online += b->nthreads;
		return false;
	}
	for (size_t i = 0; i < b->nthreads; i++) {
		const struct thread_capture *tc = &b->threads[i];
		cp->stacks[i].n = 0;
		cp->stacks[i].truncated = false;
		if (!cp->user[i])
			continue;
		struct deferred_sample *d = &cp->deferred[cp->ndeferred];
		*d = (struct deferred_sample){.tid = tc->tid, .regs = tc->regs,
					      .offset = cp->defer_end, .len = tc->stack_len};
		cp->defer_end += d->len;
		cp->deferred_bytes += d->len;
		cp->stacks[i].pcs[0] = PLACEHOLDER_BASE | cp->ndeferred;
		cp->stacks[i].n = 1;
		cp->ndeferred++;
	}
	return true;
}

/* A CPU sample's user stack as the worker returned it, into the counts
 * of unwinds that gave nothing or stopped short. */
static void count_unwound(struct cpu_perf *cp, const struct unwound_stack *st)
{
	if (st->n == 0)
		cp->user_unwound_empty++;
	else if (st->truncated)
		cp->user_unwound_truncated++;
}

/* Unwind the batch and add each sample, kernel frames on top. */
static void flush(struct cpu_perf *cp)
{
	struct process_capture *b = &cp->batch;
	if (b->nthreads == 0 || cp->error)
		return;
	cp->flushes_since_maps++;
	/* A sample that ran in a new mapping needs it in the maps. */
	if (perf_sampler_take_mmaps(cp->ps) || !cp->maps_read)
		read_maps(cp);
	trim_stacks(cp);
	bool deferred = defer_batch(cp);
	if (!deferred)
		interp_unwind(cp->in, b, cp->stacks);
	for (size_t i = 0; i < b->nthreads && !cp->error; i++) {
		if (cp->moments && cp->user[i] && !cp->fault[i]) {
			struct moment m = {
				.tid = b->threads[i].tid,
				.kind = cp->switch_out[i] ? MOMENT_SWITCH_OUT : MOMENT_CPU,
				.time_ns = cp->time_ns[i],
				.sp = b->threads[i].regs.rsp,
				.pc = b->threads[i].regs.rip,
				.stack_cut = cp->cut[i],
				.stack = cp->stacks[i],
			};
			moment_syscall_args(&b->threads[i].regs, m.args);
			if (moments_note(cp->moments, &m) < 0)
				cp->error = -ENOMEM;
		}
		if (cp->window && cp->user[i] && !cp->switch_out[i] && !cp->fault[i] &&
		    wall_window_cpu(cp->window, b->threads[i].tid, cp->time_ns[i], &cp->stacks[i]) < 0)
			cp->error = -ENOMEM;
		if (cp->switch_out[i])
			continue;
		/* After the moment kept its native stack: a tick amends what it
		 * takes from the moments itself, with its own read. */
		if (cp->amend && cp->user[i] && !deferred)
			cp->amend(cp->label_arg, b->threads[i].tid, &cp->stacks[i]);
		uint64_t pcs[PERF_KERNEL_FRAMES_MAX + UNWIND_MAX_FRAMES_DEFAULT];
		size_t n = 0;
		for (size_t k = 0; k < cp->nkpcs[i]; k++)
			pcs[n++] = cp->kpcs[i][k];
		if (cp->user[i]) {
			/* A placeholder is counted when its sample is unwound. */
			if (!deferred)
				count_unwound(cp, &cp->stacks[i]);
			for (size_t k = 0; k < cp->stacks[i].n; k++)
				pcs[n++] = cp->stacks[i].pcs[k];
		}
		if (n == 0)
			continue;
		char labels[LABELS_MAX] = "";
		if (cp->label)
			cp->label(cp->label_arg, b->threads[i].tid, labels, sizeof(labels));
		int64_t values[2] = {1, (int64_t)cp->period_ns[i]};
		struct stackagg *to = cp->cpu;
		if (cp->fault[i]) {
			/* Faults, and the bytes of the pages they brought in. */
			values[0] = (int64_t)cp->period_ns[i];
			values[1] = (int64_t)(cp->period_ns[i] * cp->page_size);
			to = cp->growth;
		}

		if (stackagg_add(to, pcs, n, labels[0] ? labels : NULL, values) < 0)
			cp->error = -ENOMEM;
		else
			cp->added++;
	}
	b->nthreads = 0;
}

/* A switch-out is not unwound when drained: at a place the thread
 * already slept at, that sleep's stack stands (a 1 ms ticker sleeps at
 * one place a thousand times a second); anywhere else it is held, raw,
 * until a tick needs it (cpu_perf_unwind_held), and most never are. */
static int hold_switch_out(struct cpu_perf *cp, const struct perf_sample *s)
{
	if (!s->have_user_regs || !cp->moments)
		return 0;
	struct moment m = {
		.tid = s->tid,
		.kind = MOMENT_SWITCH_OUT,
		.time_ns = s->time_ns,
		.sp = s->regs.rsp,
		.pc = s->regs.rip,
		.stack_cut = s->stack_maybe_truncated,
	};
	moment_syscall_args(&s->regs, m.args);
	if (moments_renew_sleep(cp->moments, &m)) {
		cp->switch_same_place++;
		return 0;
	}
	if (moments_hold(cp->moments, &m, &s->regs, s->stack, s->stack_len) < 0) {
		cp->error = -ENOMEM;
		return 1;
	}
	return 0;
}

/* A new batch entry for tid with these registers and stack copy: its
 * index, or -1 (cp->error set) when the copy finds no memory. The caller
 * fills the rest of the entry and then calls batch_commit. */
static long batch_add(struct cpu_perf *cp, pid_t tid, char state, const struct user_regs_struct *regs,
		      const uint8_t *stack, size_t len)
{
	struct process_capture *b = &cp->batch;
	size_t i = b->nthreads;
	struct thread_capture *tc = &b->threads[i];
	tc->tid = tid;
	tc->outcome = THREAD_CAPTURED;
	tc->state = state;
	tc->regs = *regs;
	tc->stack_start = regs->rsp;
	tc->stack_len = 0;
	if (len) {
		if (array_reserve(&tc->stack, &tc->stack_cap, len, 1, 4096) < 0) {
			cp->error = -ENOMEM;
			return -1;
		}
		memcpy(tc->stack, stack, len);
		tc->stack_len = len;
	}
	return (long)i;
}

/* The entry batch_add gave is complete: count it, and unwind a full batch. */
static void batch_commit(struct cpu_perf *cp)
{
	if (++cp->batch.nthreads == BATCH_MAX)
		flush(cp);
}

/* A fork sample, unwound now (threads are not made often). glibc's clone
 * wrappers end their CFI just before the syscall (the child's unwind
 * information would be wrong), so a creator stopped there unwinds to its
 * leaf alone; they push nothing, so the word at the stack pointer is the
 * return address into pthread_create or the program's own call: the
 * walk goes on from there. */
static int add_fork(struct cpu_perf *cp, const struct perf_sample *s)
{
	flush(cp);
	if (cp->error)
		return 1;
	struct process_capture *b = &cp->batch;
	long i = batch_add(cp, s->tid, 'R', &s->regs, s->stack, s->have_user_regs ? s->stack_len : 0);
	if (i < 0)
		return 1;
	b->nthreads = 1;
	struct thread_capture *tc = &b->threads[0];
	uint64_t pcs[PERF_KERNEL_FRAMES_MAX + UNWIND_MAX_FRAMES_DEFAULT + 1];
	size_t n = 0;
	for (size_t k = 0; cp->kernel_frames && s->kernel_pcs && k < s->nkernel; k++)
		pcs[n++] = s->kernel_pcs[k];
	if (s->have_user_regs) {
		if (!cp->maps_read || perf_sampler_take_mmaps(cp->ps))
			read_maps(cp);
		interp_unwind(cp->in, b, cp->stacks);
		if (cp->stacks[0].n <= 1 && tc->stack_len >= 16) {
			uint64_t ret;
			memcpy(&ret, tc->stack, 8);
			pcs[n++] = tc->regs.rip;
			tc->regs.rip = ret;
			tc->regs.rsp += 8;
			tc->stack_start += 8;
			memmove(tc->stack, tc->stack + 8, tc->stack_len - 8);
			tc->stack_len -= 8;
			interp_unwind(cp->in, b, cp->stacks);
		}
		for (size_t k = 0; k < cp->stacks[0].n; k++)
			pcs[n++] = cp->stacks[0].pcs[k];
	}
	b->nthreads = 0;
	char labels[LABELS_MAX] = "";
	if (cp->label)
		cp->label(cp->label_arg, s->tid, labels, sizeof(labels));
	size_t used = strlen(labels);
	snprintf(labels + used, sizeof(labels) - used, "%schild_tid=%d", used ? LABEL_SEP : "", (int)s->child_tid);
	int64_t one[1] = {1};
	if (n && stackagg_add(cp->creates, pcs, n, labels, one) < 0) {
		cp->error = -ENOMEM;
		return 1;
	}
	return 0;
}

static int on_sample(void *arg, const struct perf_sample *s)
{
	struct cpu_perf *cp = arg;
	if (cp->error)
		return 1;
	if (s->switch_record) {
		if (cp->window && wall_window_switch(cp->window, s->tid, s->time_ns, s->out, s->preempt) < 0) {
			cp->error = -ENOMEM;
			return 1;
		}
		return 0;
	}
	if (s->switch_out)
		return hold_switch_out(cp, s);
	if ((s->fault && !cp->growth) || (s->fork && !cp->creates))
		return 0;
	if (s->fork)
		return add_fork(cp, s);
	long i = batch_add(cp, s->tid, 'R', &s->regs, s->stack, s->have_user_regs ? s->stack_len : 0);
	if (i < 0)
		return 1;
	cp->user[i] = s->have_user_regs;
	if (!s->have_user_regs)
		cp->kernel_only++;
	cp->nkpcs[i] = cp->kernel_frames && s->kernel_pcs ? s->nkernel : 0;
	if (cp->nkpcs[i])
		memcpy(cp->kpcs[i], s->kernel_pcs, cp->nkpcs[i] * sizeof(uint64_t));
	cp->period_ns[i] = s->period_ns;
	cp->time_ns[i] = s->time_ns;
	cp->switch_out[i] = false;
	cp->fault[i] = s->fault;
	cp->cut[i] = s->stack_maybe_truncated;
	batch_commit(cp);
	return 0;
}

long cpu_perf_collect(struct cpu_perf *cp, struct interp *in, struct stackagg *cpu,
		      cpu_perf_label_fn label, cpu_perf_amend_fn amend, void *arg)
{
	cp->in = in;
	cp->cpu = cpu;
	cp->label = label;
	cp->amend = amend;
	cp->label_arg = arg;
	cp->added = 0;
	perf_sampler_drain(cp->ps, on_sample, cp);
	flush(cp);
	return cp->error ? cp->error : cp->added;
}

int cpu_perf_unwind_held(struct cpu_perf *cp, struct interp *in, const pid_t *tids, size_t n)
{
	cp->in = in;
	flush(cp); /* the batch holds CPU samples only between drains: none */
	for (size_t k = 0; k < n && !cp->error; k++) {
		const struct held_switch *h = moments_held(cp->moments, tids[k]);
		if (!h)
			continue;
		long i = batch_add(cp, h->m.tid, 'S', &h->regs, h->bytes, h->len);
		if (i < 0)
			break;
		cp->user[i] = true;
		cp->nkpcs[i] = 0;
		cp->period_ns[i] = 0;
		cp->time_ns[i] = h->m.time_ns;
		cp->switch_out[i] = true;
		cp->fault[i] = false;
		cp->cut[i] = h->m.stack_cut;
		cp->switch_unwound++;
		moments_drop_held(cp->moments, tids[k]);
		batch_commit(cp);
	}
	flush(cp);
	return cp->error;
}

int cpu_perf_unwind_deferred(struct cpu_perf *cp, struct interp *in)
{
	if (cp->deferred_unwound || cp->error)
		return cp->error;
	cp->in = in;
	flush(cp); /* between collects the batch is empty: nothing */
	cp->deferred_unwound = true;
	size_t n = cp->ndeferred;
	if (n == 0)
		return 0;
	cp->deferred_off = calloc(n + 1, sizeof(*cp->deferred_off));
	cp->deferred_truncated = calloc(n, sizeof(*cp->deferred_truncated));
	if (!cp->deferred_off || !cp->deferred_truncated)
		return cp->error = -ENOMEM;
	/* The latest maps: a library loaded since the sample is in them, one
	 * unloaded since is not (its frames end the stack there). */
	read_maps(cp);
	struct process_capture *b = &cp->batch;
	for (size_t start = 0; start < n; start += BATCH_MAX) {
		size_t m = n - start < BATCH_MAX ? n - start : BATCH_MAX;
		b->nthreads = 0;
		for (size_t k = 0; k < m; k++) {
			struct deferred_sample *d = &cp->deferred[start + k];
			if (batch_add(cp, d->tid, 'R', &d->regs, NULL, 0) < 0)
				return cp->error;
			struct thread_capture *tc = &b->threads[b->nthreads++];
			if (!d->len)
				continue;
			if (array_reserve(&tc->stack, &tc->stack_cap, d->len, 1, 4096) < 0)
				return cp->error = -ENOMEM;
			/* A copy that cannot be read back unwinds as nothing. */
			ssize_t got = pread(cp->defer_fd, tc->stack, d->len, (off_t)d->offset);
			tc->stack_len = got == (ssize_t)d->len ? d->len : 0;
		}
		interp_unwind(in, b, cp->stacks);
		for (size_t k = 0; k < m; k++) {
			const struct unwound_stack *st = &cp->stacks[k];
			count_unwound(cp, st);
			if (array_reserve(&cp->deferred_pcs, &cp->deferred_pcs_cap,
					  cp->ndeferred_pcs + st->n, sizeof(uint64_t), 4096) < 0)
				return cp->error = -ENOMEM;
			cp->deferred_off[start + k] = cp->ndeferred_pcs;
			if (st->n) /* deferred_pcs may still be NULL */
				memcpy(cp->deferred_pcs + cp->ndeferred_pcs, st->pcs,
				       st->n * sizeof(uint64_t));
			cp->ndeferred_pcs += st->n;
			cp->deferred_truncated[start + k] = st->truncated;
		}
		b->nthreads = 0;
	}
	close(cp->defer_fd);
	cp->defer_fd = -1;
	cp->deferred_off[n] = cp->ndeferred_pcs;
	return 0;
}

/* The frames of the sample behind placeholder pc: *n of them at the
 * pointer returned; NULL (none) if pc names no unwound sample. */
static const uint64_t *placeholder_frames(const struct cpu_perf *cp, uint64_t pc, size_t *n,
					  bool *truncated)
{
	uint64_t k = pc & ~PLACEHOLDER_MASK;
	*n = 0;
	if (!cp->deferred_off || k >= cp->ndeferred)
		return NULL;
	*n = cp->deferred_off[k + 1] - cp->deferred_off[k];
	if (truncated)
		*truncated = cp->deferred_truncated[k];
	return *n ? cp->deferred_pcs + cp->deferred_off[k] : NULL;
}

struct expanding {
	const struct cpu_perf *cp;
	struct stackagg *out;
};

static int expand_entry(void *ctx, const uint64_t *pcs, size_t npcs, const char *labels,
			const int64_t *values)
{
	struct expanding *e = ctx;
	uint64_t out[PERF_KERNEL_FRAMES_MAX + UNWIND_MAX_FRAMES_DEFAULT];
	size_t n = 0;
	for (size_t i = 0; i < npcs; i++) {
		if (!cpu_perf_is_placeholder(pcs[i])) {
			if (n < sizeof(out) / sizeof(out[0]))
				out[n++] = pcs[i];
			continue;
		}
		size_t nf;
		const uint64_t *f = placeholder_frames(e->cp, pcs[i], &nf, NULL);
		for (size_t k = 0; k < nf && n < sizeof(out) / sizeof(out[0]); k++)
			out[n++] = f[k];
	}
	return stackagg_add(e->out, out, n, labels, values) < 0;
}

static int has_placeholder(void *ctx, const uint64_t *pcs, size_t npcs, const char *labels,
			   const int64_t *values)
{
	(void)ctx, (void)labels, (void)values;
	for (size_t i = 0; i < npcs; i++)
		if (cpu_perf_is_placeholder(pcs[i]))
			return 1;
	return 0;
}

int cpu_perf_expand(const struct cpu_perf *cp, struct stackagg **agg)
{
	if (!cp || !cp->ndeferred || !stackagg_foreach(*agg, has_placeholder, NULL))
		return 0;
	struct expanding e = {.cp = cp, .out = stackagg_new(stackagg_nvalues(*agg))};
	if (!e.out || stackagg_foreach(*agg, expand_entry, &e)) {
		stackagg_free(e.out);
		return -ENOMEM;
	}
	stackagg_free(*agg);
	*agg = e.out;
	return 0;
}

void cpu_perf_expand_stack(const struct cpu_perf *cp, struct unwound_stack *st)
{
	if (!cp || st->n != 1 || !cpu_perf_is_placeholder(st->pcs[0]))
		return;
	size_t nf;
	bool truncated = true;
	const uint64_t *f = placeholder_frames(cp, st->pcs[0], &nf, &truncated);
	st->n = nf;
	st->truncated = truncated;
	if (nf)
		memcpy(st->pcs, f, nf * sizeof(uint64_t));
}

static void load_kernel_names(struct cpu_perf *cp)
{
	if (!cp->ksyms_tried) {
		cp->ksyms_tried = true;
		if (kallsyms_load("/proc/kallsyms", &cp->ksyms) < 0)
			cp->ksyms = NULL;
	}
}

void cpu_perf_load_kernel_names(struct cpu_perf *cp)
{
	if (cp && cp->kernel_frames)
		load_kernel_names(cp);
}

static size_t name_kernel(void *arg, uint64_t addr, struct sym_frame *out, size_t max)
{
	struct cpu_perf *cp = arg;
	if (max == 0 || !kallsyms_is_kernel_address(addr))
		return 0;
	load_kernel_names(cp);
	memset(out, 0, sizeof(*out));
	out->file = "[kernel.kallsyms]";
	const char *module = NULL;
	uint64_t off = 0;
	const char *name = cp->ksyms ? kallsyms_lookup(cp->ksyms, addr, &off, &module) : NULL;
	out->function = name ? name : "[kernel]";
	out->function_offset = off;
	if (module && module[0])
		out->file = module;
	return 1;
}

int cpu_perf_name_kernel(struct cpu_perf *cp, struct symtab *st)
{
	return cp && cp->kernel_frames ? symtab_name_unnamed(st, name_kernel, cp) : 0;
}

bool cpu_perf_switch_samples(const struct cpu_perf *cp)
{
	struct perf_sampler_stats st;
	perf_sampler_stats(cp->ps, &st);
	return cp->moments && !st.switch_refused;
}

bool cpu_perf_switch_records(const struct cpu_perf *cp)
{
	struct perf_sampler_stats st;
	perf_sampler_stats(cp->ps, &st);
	return cp->window && !st.switch_records_refused;
}

void cpu_perf_stop(struct cpu_perf *cp)
{
	perf_sampler_stop(cp->ps);
	/* Right after: what the threads run from now on is not sampled. */
	free(cp->cpu_end);
	cp->cpu_end = NULL;
	cp->ncpu_end = 0;
	attach_threads_cpu_ns(cp->target, &cp->cpu_end, &cp->ncpu_end);
}

int cpu_perf_weigh(struct cpu_perf *cp, struct stackagg *cpu, uint64_t process_ns, uint64_t rest_min_ns)
{
	int r = cpu_weigh(cpu, 1, cp->cpu_start, cp->ncpu_start, cp->cpu_end, cp->ncpu_end, process_ns,
			  rest_min_ns, &cp->weighing);
	cp->weighed = r == 0;
	return r;
}

bool cpu_perf_weighing(const struct cpu_perf *cp, struct cpu_weighing *ret)
{
	if (cp->weighed)
		*ret = cp->weighing;
	return cp->weighed;
}

void cpu_perf_describe(const struct cpu_perf *cp, cJSON *o)
{
	struct perf_sampler_stats st;
	cpu_perf_stats(cp, &st);
	cJSON_AddNumberToObject(o, "samples", (double)st.samples);
	cJSON_AddNumberToObject(o, "lost", (double)st.lost);
	cJSON_AddNumberToObject(o, "throttled", (double)st.throttled);
	cJSON_AddNumberToObject(o, "stacks_truncated", (double)st.stacks_truncated);
	cJSON_AddNumberToObject(o, "threads_followed", (double)st.threads_followed);
	cJSON_AddNumberToObject(o, "threads_inherited", (double)st.threads_inherited);
	cJSON_AddNumberToObject(o, "threads_without_event", (double)st.threads_without_event);
	cJSON_AddNumberToObject(o, "events", (double)st.events);
	/* --cpu-events: one cpu-clock event per CPU or per (thread, CPU). */
	cJSON_AddStringToObject(o, "cpu_clock_events", st.per_cpu ? "per_cpu" : "per_thread");
	if (st.per_cpu_refused)
		cJSON_AddStringToObject(o, "per_cpu_refused", strerror(st.per_cpu_refused));
	cJSON_AddNumberToObject(o, "mmap_records", (double)st.mmap_records);
	if (cp->weighed) {
		/* cpu.pprof's CPU time as the kernel sent it and as weighed to
		 * each thread's schedstat (cpu_weigh.h). */
		const struct cpu_weighing *wg = &cp->weighing;
		cJSON *w = cJSON_AddObjectToObject(o, "weighed_to_schedstat");
		cJSON_AddNumberToObject(w, "sampled_s", (double)wg->sampled_ns / 1e9);
		cJSON_AddNumberToObject(w, "weighed_s", (double)wg->weighed_ns / 1e9);
		cJSON_AddNumberToObject(w, "threads", (double)wg->threads_weighed);
		cJSON_AddNumberToObject(w, "other_threads_sampled_s", (double)wg->rest_sampled_ns / 1e9);
		cJSON_AddNumberToObject(w, "other_threads_factor", wg->rest_factor);
	}
	if (cp->moments) {
		cJSON *w = cJSON_AddObjectToObject(o, "switch_out");
		cJSON_AddNumberToObject(w, "samples", (double)st.switch_samples);
		cJSON_AddNumberToObject(w, "lost", (double)st.switch_lost);
		cJSON_AddNumberToObject(w, "throttled", (double)st.switch_throttled);
		/* Of the samples: at a place the thread had slept at (its stack
		 * known), and unwound because a tick needed them; the rest were
		 * never needed (a preempted thread's next CPU sample says where
		 * it runs). */
		cJSON_AddNumberToObject(w, "same_place", (double)cp->switch_same_place);
		cJSON_AddNumberToObject(w, "unwound", (double)cp->switch_unwound);
		if (st.switch_refused)
			cJSON_AddStringToObject(w, "refused", strerror(st.switch_refused));
		else
			cJSON_AddStringToObject(w, "event", st.switch_sleeps_only
								   ? "sched:sched_switch, going to sleep"
								   : "context-switches");
	}
	if (cp->defer_bytes_max) {
		/* Unwound after the capture, and as drained once the budget
		 * for keeping them was spent. */
		cJSON *d = cJSON_AddObjectToObject(o, "deferred_unwinding");
		cJSON_AddNumberToObject(d, "samples", (double)cp->ndeferred);
		cJSON_AddNumberToObject(d, "stack_bytes", (double)cp->deferred_bytes);
		cJSON_AddNumberToObject(d, "past_budget_unwound_as_drained", (double)cp->deferred_online);
	}
	if (cp->growth || st.fault_refused) {
		/* Where the target touched new memory (growth.pprof). */
		cJSON *g = cJSON_AddObjectToObject(o, "page_faults");
		cJSON_AddNumberToObject(g, "samples", (double)st.fault_samples);
		cJSON_AddNumberToObject(g, "faults", (double)st.faults);
		cJSON_AddNumberToObject(g, "bytes", (double)(st.faults * cp->page_size));
		cJSON_AddNumberToObject(g, "lost", (double)st.fault_lost);
		if (st.fault_refused)
			cJSON_AddStringToObject(g, "refused", strerror(st.fault_refused));
	}
	if (cp->creates || st.fork_refused) {
		/* Threads and processes created (threadcreate.pprof). */
		cJSON *k = cJSON_AddObjectToObject(o, "forks");
		cJSON_AddNumberToObject(k, "samples", (double)st.fork_samples);
		if (st.fork_refused)
			cJSON_AddStringToObject(k, "refused", strerror(st.fork_refused));
	}
	cJSON_AddNumberToObject(o, "samples_without_user_context", (double)cp->kernel_only);
	cJSON_AddNumberToObject(o, "samples_without_user_frames", (double)cp->user_unwound_empty);
	cJSON_AddNumberToObject(o, "unwinds_truncated", (double)cp->user_unwound_truncated);
	cJSON_AddBoolToObject(o, "kernel_frames", cp->kernel_frames);
	if (cp->ksyms_tried)
		cJSON_AddBoolToObject(o, "kernel_symbols", cp->ksyms != NULL);
}

void cpu_perf_stats(const struct cpu_perf *cp, struct perf_sampler_stats *ret)
{
	perf_sampler_stats(cp->ps, ret);
	/* perf.c counts every full-size copy; one that reached the end of
	 * its stack's mapping was whole. */
	ret->stacks_truncated -= cp->copies_whole < ret->stacks_truncated ? cp->copies_whole
									   : ret->stacks_truncated;
}

void cpu_perf_free(struct cpu_perf *cp)
{
	if (!cp)
		return;
	perf_sampler_free(cp->ps);
	kallsyms_free(cp->ksyms);
	maps_release(&cp->ranges);
	process_capture_release(&cp->batch);
	if (cp->defer_fd >= 0)
		close(cp->defer_fd);
	free(cp->deferred);
	free(cp->deferred_pcs);
	free(cp->deferred_off);
	free(cp->deferred_truncated);
	free(cp->stacks);
	free(cp->cpu_start);
	free(cp->cpu_end);
	free(cp);
}
