/*
 * attach: the ptrace lifecycle. Hold every thread of a target process for
 * as short a time as possible, copy out what interpretation needs
 * (registers, the live part of each stack, a snapshot of the maps), and
 * release it. Nothing here parses the target's binaries: that happens later,
 * from the copies, in symbolize/unwind/ and symbolize/ (inside the
 * sandboxed workers of symbolize/worker/).
 *
 * Design (see ../shared/research/reliability.md):
 *  - PTRACE_SEIZE + PTRACE_INTERRUPT, never PTRACE_ATTACH (whose queued
 *    SIGSTOP can leave a target stopped if we die), never PTRACE_O_EXITKILL.
 *  - Per-capture seize: the target is untraced between captures, so its
 *    signals, exec, fork and exit are untouched while we are not looking,
 *    and a crash of the tool between captures cannot hurt it.
 *  - A signal that arrives while we hold a thread (signal-delivery-stop) is
 *    re-injected by PTRACE_DETACH; group-stops are detached with 0, so a
 *    process that was stopped stays stopped.
 *  - Every wait has a deadline; a thread that cannot be stopped in time is
 *    reported as late and never holds the others.
 *  - Threads that die while we hold them are reaped at once by a reaper
 *    thread of ours (started on the first capture; it blocks all signals and
 *    waits only for tids we trace). A thread of the target exec'ing while we
 *    hold others cannot then wedge us in PTRACE_SEIZE (cred_guard_mutex), and
 *    the target's real parent sees its exit status without waiting for us.
 *  - One diag-attach per target: attach_target_open takes a lock (an abstract
 *    unix socket named after the pid and start time) that attach_target_probe
 *    reports as ATTACH_ALREADY_TRACED, naming the holder.
 *
 * Unavoidable effect on the target: every PTRACE_INTERRUPT of a thread
 * blocked in epoll_wait/epoll_pwait, sigtimedwait/sigwaitinfo, semop/semtimedop
 * (and a few others that the kernel never restarts after a stop, see
 * signal(7) "Interruption of system calls ... by a stop signal") makes that
 * call return EINTR, as strace and gdb do on attach. read, poll, select,
 * nanosleep, futex, msgrcv and friends restart transparently. Well written
 * programs retry; options.no_interrupt_blocked avoids stopping blocked
 * threads at all (they are then sampled from /proc/TID/syscall).
 *
 * Errors are negative errno values; nothing here prints.
 */
#ifndef DIAG_ATTACH_H
#define DIAG_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/* A process we have identified and may capture. pidfd and proc_dirfd pin
 * its identity: both report ESRCH once the original process is gone, even
 * if its pid is reused. */
struct attach_target {
	pid_t pid;
	int proc_dirfd;     /* open /proc/PID */
	int task_dirfd;     /* open /proc/PID/task */
	int pidfd;          /* -1 if the kernel lacks pidfd_open */
	uint64_t starttime; /* field 22 of /proc/PID/stat, clock ticks since boot */
	char comm[64];
	int lock_fd;        /* the one-capture-per-target lock; -1 if none */
};

/* Why a process cannot be captured; filled by attach_target_probe. */
enum attach_refusal {
	ATTACH_OK = 0,
	ATTACH_NO_SUCH_PROCESS,
	ATTACH_ZOMBIE,        /* the whole process has exited, not yet reaped */
	ATTACH_KERNEL_THREAD,
	ATTACH_SELF,          /* ourselves, or a process in our tracer chain */
	ATTACH_ALREADY_TRACED,/* another tracer holds it: tracer_pid / tracer_comm */
	ATTACH_NOT_PERMITTED, /* see uid / yama_scope / have_cap_sys_ptrace / dumpable */
	/* /proc is the procfs of another pid namespace than ours (a tool run
	 * by `unshare -p -f` without --mount-proc, or a container's /proc
	 * seen from the host): the pids in it are not the ones ptrace and
	 * pidfd_open take, so we could read one process and stop another. */
	ATTACH_FOREIGN_PROCFS,
};

struct attach_probe {
	enum attach_refusal refusal;
	/* ATTACH_ALREADY_TRACED: the ptrace tracer (TracerPid), or the
	 * diag-attach that holds the target's capture lock (then
	 * capture_locked is true and tracer_comm is its comm). 0 if unknown. */
	pid_t tracer_pid;
	bool capture_locked;
	char tracer_comm[64];
	uid_t target_uid;
	int yama_scope;            /* -1 if Yama is absent */
	bool have_cap_sys_ptrace;
	/* false if the process asked not to be inspected (PR_SET_DUMPABLE 0, a
	 * setuid program, changed credentials). Without CAP_SYS_PTRACE that
	 * is ATTACH_NOT_PERMITTED; with it the probe says ATTACH_OK and the
	 * caller decides (diag-attach wants --force). A process running as
	 * root:root cannot be told apart and reads as dumpable. */
	bool dumpable;
};

/* The process (thread group) tid belongs to: tid itself for a process,
 * its process for any other thread (/proc/TID is there for every thread,
 * though /proc lists processes only). 0, -ESRCH or -errno. */
int attach_thread_group(pid_t tid, pid_t *ret);

/* Look at pid without touching it and say whether we can capture it.
 * Returns 0 (result in *ret, including refusals) or -errno on our own
 * failure. ATTACH_FOREIGN_PROCFS is checked first: with it, nothing else
 * in *ret means anything. */
int attach_target_probe(pid_t pid, struct attach_probe *ret);

/* Open pid for capturing. Returns 0, -ESRCH if it does not exist or is a
 * zombie, -EBUSY if another diag-attach holds its capture lock (a race with
 * attach_target_probe: probe again for the holder's pid), or another
 * -errno. Does not stop or trace the target. The lock is released by
 * attach_target_close or by our exit. */
int attach_target_open(pid_t pid, struct attach_target *ret);
void attach_target_close(struct attach_target *t);

/* Is the target (the same process, not a pid reuser) still alive? */
bool attach_target_alive(const struct attach_target *t);

/* How a thread's capture went. */
enum thread_outcome {
	THREAD_CAPTURED = 0, /* registers and stack copied */
	THREAD_LATE,         /* did not stop before the deadline; no data */
	THREAD_GONE,         /* exited during the capture; no data */
	THREAD_UNCHANGED,    /* options.skip_idle: has not run since the previous
			      * capture, so was not stopped; its registers and
			      * stack are those of the previous capture */
	THREAD_NOT_READ,     /* options.no_stop: not stopped and no stack read
			      * (on a CPU, woke during the read, or its moment
			      * is the caller's: options.moment_known); state
			      * and cpu_ns are set, and for a blocked thread
			      * regs.rsp, regs.rip, the argument registers
			      * and syscall_nr */
};

/* One captured thread: plain data, safe to hand to another process. */
struct thread_capture {
	pid_t tid;
	enum thread_outcome outcome;
	char comm[17];
	/* R, S, D, T, t, Z... from /proc just before the stop; except that a
	 * thread read as R which the stop then found inside an interruptible
	 * sleep that our previous release had woken (registers say the syscall
	 * is being restarted: -ERESTART*) is reported as S: it was only
	 * runnable because we had stopped it. */
	char state;
	bool group_stopped;     /* it was (or became) group-stopped: left stopped */
	/* PF_EXITING before the stop: it is in do_exit, for its own exit or
	 * its process's (exit_group takes every thread away) */
	bool exiting;
	int delivered_signal;   /* signal re-injected at detach, 0 if none */
	struct user_regs_struct regs;
	uint64_t stack_start;   /* target address of stack[0]: the SP, less the
				 * 128-byte red zone below it when that is
				 * mapped (a ptrace copy; perf's starts at SP) */
	uint8_t *stack;         /* copy of [stack_start, stack_start + stack_len) */
	size_t stack_len;
	size_t stack_cap;       /* allocated size of stack (reused across captures) */
	uint64_t hold_ns;       /* from PTRACE_INTERRUPT to PTRACE_DETACH */
	/* Sampled from /proc without stopping it (options.no_interrupt_blocked,
	 * no_stop): regs has only rip, rsp and orig_rax (= syscall_nr) from
	 * /proc/TID/syscall (and with no_stop, the six argument registers it
	 * gives: rdi, rsi, rdx, r10, r8, r9), the stack copy was read while it stayed blocked,
	 * and hold_ns is 0. */
	bool not_stopped;
	uint64_t cpu_ns;        /* on-CPU time from schedstat (0 if unavailable) */
	char wchan[64];         /* kernel wait channel, "" if none (snapshot only) */
	/* Asleep (S, D) before the stop, with options.read_wait_details: the
	 * time since it last ran, a lower bound (attach/last_ran.h), when
	 * not_run_error is 0; else -errno says why it is unknown (-ENODATA:
	 * not read). */
	uint64_t not_run_ns;
	int not_run_error;
	long syscall_nr;        /* syscall it is blocked in, -1 if none */
};

/* A capture of a whole process. Reusable: attach_capture refills it and
 * reuses its allocations (no allocation in steady-state sampling). */
struct process_capture {
	pid_t pid;
	struct thread_capture *threads; /* main thread first, then by tid */
	size_t nthreads;
	size_t threads_cap;
	char *maps_text;        /* /proc/PID/maps as of this capture (re-read when it may have changed) */
	size_t maps_len, maps_cap;
	uint64_t wall_ns;        /* CLOCK_REALTIME at the capture */
	uint64_t hold_ns;       /* first PTRACE_INTERRUPT to last PTRACE_DETACH */
	size_t nlate, ngone;
	size_t nunchanged;      /* THREAD_UNCHANGED threads (skip_idle) */
	size_t nnot_stopped;    /* threads sampled from /proc (no_interrupt_blocked, no_stop) */
	size_t nnot_read;       /* THREAD_NOT_READ threads (no_stop) */
	bool target_exited;     /* the process was gone by the end */
};

struct attach_options {
	size_t stack_bytes_max;  /* cap on each stack copy (default 512 KiB) */
	unsigned stop_timeout_ms;/* deadline for all threads to stop (default 100) */
	bool read_wait_details;  /* also read wchan and the time since each
				  * sleeping thread last ran (a read each,
				  * and each CPU's clock before the stops) */
	bool realtime_window;    /* run SCHED_FIFO while threads are held (default on) */
	/* Do not stop a thread whose on-CPU time (schedstat) has not moved since
	 * the previous capture of this target released it: it cannot have
	 * changed. It is reported THREAD_UNCHANGED. For sampling: 500 sleeping
	 * threads then cost nothing, and only the busy ones are paused. */
	bool skip_idle;
	/* Called once every thread has been stopped and captured, before any is
	 * released, with pc filled in: for reads that must see the process
	 * standing still (the Go runtime's goroutine list). It lengthens the
	 * pause, so it must only copy memory. NULL: none. */
	void (*while_held)(void *ctx, const struct process_capture *pc);
	void *while_held_ctx;
	/* Do not stop threads that /proc/TID/syscall shows blocked in a system
	 * call; record that call, its SP and PC and copy their stack without
	 * stopping them (default off). Avoids the EINTR described at the top,
	 * at the price of a sample that may be a few microseconds stale. */
	bool no_interrupt_blocked;
	/* With no_interrupt_blocked: only the calls that return EINTR after a
	 * stop on a current kernel (epoll_wait and epoll_pwait(2), semop and
	 * semtimedop, rt_sigtimedwait, io_getevents and io_pgetevents, and
	 * socket calls with a timeout set: signal(7)) are read from /proc: a
	 * thread asleep (S) in any call attach_stop_is_harmless does not know
	 * is read too. A thread in a call the kernel restarts (read of a
	 * pipe, poll, futex, nanosleep...), or in D, is stopped as usual, so
	 * it keeps its full registers (frame pointers) in the sample. Default
	 * off (every blocked thread is read). */
	bool only_eintr_prone;
	/* Stop no thread at all (wall-clock sampling from perf events): a
	 * thread blocked in the kernel, in a system call or not ("-1 SP PC"
	 * in /proc/TID/syscall), is read from /proc as no_interrupt_blocked
	 * reads it, every other thread that has run since the previous
	 * capture is THREAD_NOT_READ. With skip_idle. Nothing is seized, so
	 * nothing is interrupted and nothing waits. */
	bool no_stop;
	/* With no_stop: asked, before a blocked thread's stack is copied,
	 * whether the caller already has that thread in that very state (a
	 * sample taken as it went to sleep, with the same SP and PC and, in a
	 * system call, the same six arguments; args is NULL outside one):
	 * then no copy is made and the thread is THREAD_NOT_READ. NULL:
	 * always copy. */
	bool (*moment_known)(void *ctx, pid_t tid, const uint64_t *args, uint64_t sp, uint64_t pc);
	void *moment_known_ctx;
	/* With no_stop: asked of each thread before it is skipped as idle
	 * or read from /proc: true when the caller wants its registers in
	 * full (a stack read from /proc has SP, PC and the argument
	 * registers only, and code built with frame pointers does not
	 * unwind past its first frame from those). Such a thread is stopped
	 * as without no_stop when attach_stop_is_harmless says so of what
	 * /proc shows of it now, and read from /proc as usual otherwise.
	 * NULL: never. */
	bool (*want_registers)(void *ctx, pid_t tid);
	void *want_registers_ctx;
	/* Detach each thread the moment its registers and stack are copied,
	 * instead of holding every thread until the last one is: a busy thread
	 * then stands still only for its own stop and copy, not for the slowest
	 * thread's. Each thread's sample is as exact as before, but the threads
	 * are no longer all stopped at one instant, so this is for sampling,
	 * not for a consistent snapshot. Ignored when while_held or
	 * test_hold_ms is set (both need every thread held). Default off. */
	bool release_each;
	/* Test-only: keep threads held this long in every capture, so tests
	 * can hit the hold window. Initialised from $DIAG_ATTACH_TEST_HOLD_MS
	 * (default 0). */
	unsigned test_hold_ms;
};

void attach_options_init(struct attach_options *o);

/* Stop every thread of t, copy registers and stacks, release them.
 * Threads that appear during the capture are included; threads that exit are
 * dropped (THREAD_GONE). Returns 0, -ESRCH if the process is gone, -EPERM if
 * no thread could be seized, -EAGAIN if the live process showed no thread
 * to seize for several milliseconds (mid-exec), or another -errno. On every path every thread
 * we seized has been detached (late threads are detached the moment they
 * trap, or by the kernel when we exit). */
int attach_capture(struct attach_target *t, const struct attach_options *o,
		   struct process_capture *pc);

void process_capture_release(struct process_capture *pc);

/* Detach threads left late by an earlier capture that have trapped since.
 * Call it between captures (attach_capture also does it first). Returns
 * how many are still late: each will sit in a ptrace-stop from the moment
 * it traps until the next call, so call again soon while this is not 0. */
size_t attach_service_late(void);

/* After a last capture: wait up to timeout_ms for its late threads to
 * reach their stop, detaching each as it does, so that none sits stopped
 * through the work that follows (symbols can take seconds). Threads still
 * late after that (in D) are detached by the kernel when we exit. */
void attach_settle_late(unsigned timeout_ms);

/* Whether stopping tc costs it nothing it can see, judged from what
 * /proc showed of it (state, syscall_nr and the argument registers, as a
 * no_stop capture leaves them): asleep (S) in a call the kernel restarts
 * after a ptrace stop, with no EINTR and its timeout kept (nanosleep,
 * clock_nanosleep, futex, poll, ppoll, select, pselect6, wait4, waitid,
 * pause, rt_sigsuspend, restart_syscall), or in read, readv, pread64 or
 * preadv of anything but a socket (with SO_RCVTIMEO set, a socket's read
 * returns EINTR after a stop: signal(7)). Any other call, a thread in D,
 * or one not in a system call: false. */
bool attach_stop_is_harmless(const struct attach_target *t, const struct thread_capture *tc);

/* Read target memory (process_vm_readv). Returns bytes read or -errno. */
ssize_t attach_read_memory(pid_t pid, uint64_t addr, void *buf, size_t len);

/* The thread of process pid through which its memory and files are
 * reached (process_vm_readv, /proc/X/root, exe, map_files): pid itself,
 * unless its main thread has exited (pthread_exit) and left a zombie
 * leader with no memory: then a live thread of it. pid when none is found.
 * Picked once by each reader, so a leader that exits later is not seen. */
pid_t attach_memory_tid(pid_t pid);

/* Threads that died while we held them and that the reaper thread reaped
 * (a statistic, since the start of the process). */
unsigned long attach_reaped_threads(void);

/*
 * Watchdog. A stopped or hung tool holding target threads freezes the
 * target for as long as it stays stopped (verified: SIGSTOP of the tool
 * mid-sample leaves every thread in 't'). attach_watchdog_start forks (twice:
 * it is not our child, and it leaves our session) a small process that is
 * not a tracer and never touches the target. attach_capture marks in shared
 * memory when it starts and ends holding threads (and wakes the watchdog,
 * which sleeps while no capture has held anything for a while, as in
 * sampling that stops no one); if a hold window stays
 * open longer than limit_ms, the watchdog SIGKILLs the tool, which makes the
 * kernel detach and resume every thread (group-stopped ones stay stopped).
 * It exits by itself when the tool exits. Late threads that trap after the
 * window closed are not covered (they are detached at the next capture).
 *
 * Call it after parsing options and before the first capture; the tool's
 * file descriptors are not inherited. Returns 0, -EALREADY, -EINVAL
 * (limit_ms 0), or -errno from fork/mmap/pidfd_open.
 */
int attach_watchdog_start(unsigned limit_ms);
/* Tell the watchdog to exit (it also does when we exit). */
void attach_watchdog_stop(void);
bool attach_watchdog_running(void);
/* While threads are held (in while_held, say): the ms left before the
 * watchdog kills the tool, 0 once past; UINT_MAX without a watchdog. Work
 * done while holding (reading a Go runtime) is bounded by this, so that
 * running late costs that work, not the whole capture. */
unsigned attach_watchdog_left_ms(void);
/* What the watchdog runs once it has killed the tool and seen it gone: the
 * tool's own executable (/proc/self/exe) with argv[1..] the words given
 * here (argv[0] is the subcommand name, say) and two more, the limit and
 * the ms the window had been open, with the tool's standard error (opened
 * again through /proc, appending) as its own and the tool's environment,
 * at normal priority. So a capture that the watchdog ends can still leave
 * a bundle that says so (cmd/: the bundle is salvaged). argv NULL: none
 * (the default). 0, -ENOENT (no watchdog), -E2BIG (the words do not fit
 * in 60 KiB, or more than 50 of them). */
int attach_watchdog_set_epilogue(const char *const *argv);

/* Re-read /proc/PID/maps into pc->maps_text (reusing its buffer), without
 * touching the threads; from another thread's maps when the leader's is
 * empty (main called pthread_exit). 0, -ESRCH (also: every thread's maps
 * is empty, the process is exiting), -ENOMEM or -errno. */
int attach_read_maps(const struct attach_target *t, struct process_capture *pc);

/* The process's CPU time so far (utime + stime of /proc/PID/stat, every
 * thread's, the exited ones' included), in nanoseconds at clock-tick
 * resolution. 0 or -errno. */
int attach_target_cpu_ns(const struct attach_target *t, uint64_t *ret);

/* This machine's CPU time so far, in clock ticks (the first line of
 * /proc/stat): all of it, and the part the hypervisor took (steal: time
 * a vCPU had work and the host ran something else). perf's cpu-clock
 * counts stolen time as the running thread's; /proc and schedstat do
 * not. 0 or -errno. */
int attach_machine_cpu_ticks(uint64_t *all, uint64_t *stolen);

/* One thread's on-CPU time (the first field of its schedstat: the
 * scheduler's own nanoseconds, not clock ticks). */
struct thread_cpu {
	pid_t tid;
	uint64_t ns;
};

/* Every thread of t and its on-CPU time now, into *ret (malloc'ed, *n
 * entries; threads whose schedstat cannot be read are left out). 0,
 * -ESRCH (no thread left) or -ENOMEM. */
int attach_threads_cpu_ns(const struct attach_target *t, struct thread_cpu **ret, size_t *n);

/* Name of an x86_64 syscall number (as /proc/TID/syscall gives it), or
 * NULL when it is not one a stuck thread is usually found in. */
const char *attach_syscall_name(long nr);

/* Read a small file (relative to dirfd, or AT_FDCWD) into buf,
 * NUL-terminated (at most size - 1 bytes): for /proc files. Returns the
 * bytes read (> 0), or 0 if it could not be opened, read, or was empty. */
size_t attach_read_small_file_at(int dirfd, const char *path, char *buf, size_t size);

#endif
