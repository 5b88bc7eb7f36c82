/*
 * perf: on-CPU samples of a target from the kernel's perf events, without
 * stopping it. A software cpu-clock event (these machines have no PMU, and
 * perf itself uses the same event here) fires after every `period` of a
 * thread's own CPU time and hands us, from the kernel, the thread's user
 * registers, the top of its user stack and the kernel part of its call
 * chain at that moment. Nothing waits for a thread, so a busy machine
 * does not thin the samples out: a thread gets as many samples as its CPU
 * time asks for, wherever that time went (user code or the kernel).
 *
 * With switch_freq, a second event per (thread, CPU) samples the thread
 * when it goes to sleep: its user registers and stack at that moment,
 * which stay its registers and stack until it runs again. That is a
 * wall-clock sample taken without stopping anyone. The event is the
 * sched_switch tracepoint with a filter on prev_state (S or D), which
 * needs its id from tracefs (root): a preempted thread is not sampled.
 * That matters to the target: a switch-out sample is copied in the
 * scheduler, before the thread that preempted runs, and on a saturated
 * box every wakeup of a target thread preempts another one. Sampling
 * preemptions too (the context-switches event, used when the tracepoint
 * is not to be had) left a 1 ms ticker in the target late at its p99
 * 1.25x unprofiled, 1.09x with the filter, with perf record itself as
 * the sampler (bench/RESULTS.md). A preempted thread's place is its
 * latest cpu-clock sample. Both kinds share the rings;
 * PERF_SAMPLE_IDENTIFIER tells them apart (an inherited event reports its
 * parent's id; the kernel applies the parent's filter to it).
 *
 * Layout, as perf record does it: one event per (thread, CPU), all the
 * events of one CPU writing into that CPU's one ring buffer
 * (PERF_EVENT_IOC_SET_OUTPUT needs the same CPU; an event opened with
 * cpu = -1 could not share a buffer). `inherit` + `inherit_thread` give
 * threads the target creates later their own events (not forked
 * children); /proc/PID/task is listed until a pass finds no thread without
 * events, which covers the threads created before their creator had its
 * events, and is never re-listed later (that would race with inheritance
 * and double a thread's events). Each event costs
 * a descriptor per CPU: the soft RLIMIT_NOFILE is raised to the hard one,
 * 64 descriptors are always left for the rest of the capture, and a thread
 * that gets none is counted (threads_without_event). With per_cpu the
 * cpu-clock events are instead one per CPU, as perf record -a opens them,
 * sampling every task there (other processes' samples are dropped as
 * drained); each thread then has only its switch-out events, and threads
 * created later are sampled without any of their own.
 *
 * Stacks: the kernel copies at most stack_bytes (at most 65528, perf's
 * own cap) from the user SP; a copy that filled the whole size may have
 * been cut short and is counted (stacks_truncated). What the kernel could
 * not write because the ring was full arrives as PERF_RECORD_LOST and is
 * counted, as are THROTTLE records (perf_event_max_sample_rate): nothing
 * is dropped silently.
 */
#ifndef DIAG_ATTACH_PERF_H
#define DIAG_ATTACH_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#define PERF_STACK_BYTES_MAX 65528
#define PERF_KERNEL_FRAMES_MAX 128

struct perf_sampler;

struct perf_sampler_options {
	uint64_t period_ns;   /* CPU time between two samples of a thread */
	size_t stack_bytes;   /* user stack copied per sample (<= PERF_STACK_BYTES_MAX) */
	bool kernel_frames;   /* also the kernel call chain (sampling kernel time does not depend on it) */
	/* Also sample threads as they leave a CPU (they go to sleep; with
	 * the context-switches event, also when preempted), in frequency
	 * mode, at most
	 * about this many samples a second per (thread, CPU). The kernel sets
	 * the period from the rate it sees: 1 (every switch-out) at first,
	 * more for a chatty thread, which bounds what it costs the target
	 * (bench/run: switch-out samples). It raises the period after two
	 * switch-outs close together and lowers it only while the thread
	 * runs through a timer tick, so a rare switcher may keep a period
	 * above 1: a caller must not take the last switch-out sample for the
	 * last switch-out. 0: none. */
	unsigned switch_freq;
	/* A record of every switch of every thread in and out of a CPU
	 * (attr.context_switch on the cpu-clock events: no registers, no
	 * stack), handed to the drain's fn as samples with switch_record
	 * set. What a wall clock read from the rings needs instead of a
	 * /proc read at each tick; bench/RESULTS.md (fifth session) has its
	 * cost: 2 % of a pipe ping-pong's round trips at 81,600 switches/s.
	 * Kernels before 4.3 refuse it: the events open without. */
	bool switch_records;
	/* User stack copied per switch-out sample (<= stack_bytes; 0: 16
	 * KiB): the kernel copies it in the thread's own switch, so it is
	 * kept smaller than a CPU sample's. */
	size_t switch_stack_bytes;
	/* The cpu-clock events per CPU (every task, the target's samples
	 * kept), not per (thread, CPU). A per-thread cpu-clock event is a
	 * timer the kernel cancels and starts again at every switch of the
	 * thread in and out of a CPU, in the switch: a 1 ms ticker of a
	 * saturated target was late at its p99 1.107x unprofiled with them,
	 * 1.005x with one event per CPU (bench/RESULTS.md, ninth session).
	 * Needs perf_event_paranoid <= 0 or CAP_PERFMON (root); a refusal
	 * falls back to per-thread events (per_cpu_refused). Not with
	 * switch_records, whose per-CPU form is another record. */
	bool per_cpu;
	/* Also sample the threads' page faults (the page-faults software
	 * event): one sample every fault_period faults of a thread, with
	 * its stack: where the target first touches memory, which is where
	 * it grows. Costs nothing while nothing faults. 0: none. */
	uint64_t fault_period;
	/* Also sample every thread or process a thread of the target
	 * creates (the sched_process_fork tracepoint, in the creator): its
	 * stack at the clone, and the child's id. Needs tracefs (root). */
	bool forks;
};

/* One sample, valid during the callback only. */
struct perf_sample {
	pid_t tid;
	/* A switch-out sample (the thread left the CPU: registers and stack
	 * are where it will resume); false: a cpu-clock sample. */
	bool switch_out;
	/* A page-fault sample (fault_period): registers and stack where the
	 * thread touched a new page, period_ns the faults it stands for. */
	bool fault;
	/* A fork sample (forks): the creator's registers and stack at its
	 * clone; child_tid the new thread's or process's id. */
	bool fork;
	pid_t child_tid;
	uint64_t time_ns;       /* CLOCK_MONOTONIC (perf clock) */
	uint64_t period_ns;     /* the CPU time this sample stands for (switch-outs, faults: their number) */
	bool in_kernel;         /* the timer fired while the thread ran kernel code */
	bool have_user_regs;    /* false: no user context (a kernel-only moment) */
	struct user_regs_struct regs; /* user registers (rip, rsp, rbp, ...) */
	const uint8_t *stack;   /* user stack bytes from regs.rsp */
	size_t stack_len;
	bool stack_maybe_truncated;
	const uint64_t *kernel_pcs; /* innermost first; [0] is where it was */
	size_t nkernel;
	/* switch_records: a PERF_RECORD_SWITCH, not a sample (tid and
	 * time_ns only): the thread came onto a CPU, or left it (out),
	 * preempted while runnable (preempt) or to sleep. */
	bool switch_record;
	bool out, preempt;
};

struct perf_sampler_stats {
	uint64_t samples;            /* cpu-clock samples */
	uint64_t switch_samples;     /* switch-out samples */
	uint64_t switch_lost, switch_throttled;
	uint64_t fault_samples, faults, fault_lost; /* fault_period: samples, faults they stand for, lost */
	int fault_refused;           /* errno of a kernel that refused the page-fault event; 0 */
	uint64_t fork_samples;       /* forks: threads and processes created */
	int fork_refused;            /* errno of a refusal of the fork tracepoint (ENOENT: no tracefs); 0 */
	int switch_refused;          /* errno of a kernel that refused the switch event; 0 */
	/* The switch event is sched_switch filtered to threads going to
	 * sleep (S or D); false: context-switches, preemptions included. */
	bool switch_sleeps_only;
	uint64_t lost;               /* samples the kernel could not write (ring full) */
	uint64_t throttled;          /* THROTTLE records */
	uint64_t stacks_truncated;
	uint64_t threads_without_event; /* threads we found but could not open an event for */
	uint64_t threads_followed;   /* threads with events (opened or inherited) */
	uint64_t threads_inherited;  /* threads created while sampling (FORK records) */
	uint64_t mmap_records;       /* executable mappings created while sampling */
	uint64_t switch_records_in, switch_records_out; /* switch_records */
	bool switch_records_refused; /* asked for, and the kernel has none */
	size_t events;               /* descriptors open */
	bool per_cpu;                /* the cpu-clock events are per CPU (per_cpu asked and had) */
	int per_cpu_refused;         /* errno of the kernel's refusal of per_cpu; 0 */
};

/* Open events on every thread of pid. Returns 0, or -errno when perf
 * events cannot be used at all: -EACCES/-EPERM (perf_event_paranoid, a
 * seccomp profile, a user namespace), -ENOSYS, -ENOENT/-EOPNOTSUPP (no
 * such event), -ESRCH (the process is gone), -ENOMEM. The caller falls
 * back to another way of sampling then. */
int perf_sampler_open(pid_t pid, const struct perf_sampler_options *o, struct perf_sampler **ret);

/* Hand every sample the rings hold to fn, oldest first per CPU, and free
 * their space. Also counts LOST, THROTTLE and MMAP2 records, and follows
 * FORK/EXIT. fn returns 0 to go on. Returns the number of samples read. */
typedef int (*perf_sample_fn)(void *arg, const struct perf_sample *s);
size_t perf_sampler_drain(struct perf_sampler *ps, perf_sample_fn fn, void *arg);

/* The number of executable mappings created since the last call (MMAP2
 * records): a reason to re-read /proc/PID/maps before unwinding. */
uint64_t perf_sampler_take_mmaps(struct perf_sampler *ps);

void perf_sampler_stats(const struct perf_sampler *ps, struct perf_sampler_stats *ret);

/* Stop sampling: close the events and unmap the rings (what was not
 * drained is dropped); the statistics stay readable. */
void perf_sampler_stop(struct perf_sampler *ps);

/* Stop the events and release everything. NULL is a no-op. */
void perf_sampler_free(struct perf_sampler *ps);

#endif
