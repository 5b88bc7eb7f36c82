/*
 * moments: the latest moment perf events saw each thread at, for
 * wall-clock samples taken without stopping anyone (sampler.c).
 *
 * A switch-out sample is where a thread that left the CPU will resume:
 * its stack stands until the thread runs again, so for a thread asleep at
 * a tick it is that tick's sample, with every register (frame pointers
 * unwind), where /proc/TID/syscall has only SP and PC. A cpu-clock sample
 * is where a running thread was, at most one sampling period before.
 * Whichever is newer is the thread's moment.
 */
#ifndef DIAG_CMD_ENGINE_MOMENTS_H
#define DIAG_CMD_ENGINE_MOMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/attach.h"
#include "symbolize/worker/interp.h"

enum moment_kind {
	MOMENT_CPU = 0,     /* a cpu-clock sample: it was running there */
	MOMENT_SWITCH_OUT,  /* it left the CPU there (to sleep; or preempted: perf.h) */
	/* Stopped once while asleep there, for its registers in full (its
	 * stack read from /proc had not unwound): a sleep, as a switch-out's */
	MOMENT_STOPPED_ASLEEP,
};

struct moment {
	pid_t tid;
	enum moment_kind kind;
	uint64_t time_ns;   /* CLOCK_MONOTONIC */
	uint64_t sp, pc;    /* user registers at that moment */
	/* A system call's six arguments as the registers held them (rdi,
	 * rsi, rdx, r10, r8, r9): what tells two sleeps at one SP and PC
	 * apart. */
	uint64_t args[6];
	bool stack_cut;     /* the kernel's copy of the stack may have been cut short */
	struct unwound_stack stack; /* user frames */
};

struct moments;

/* The six system-call argument registers of r (rdi, rsi, rdx, r10, r8,
 * r9), as a moment keeps them. */
void moment_syscall_args(const struct user_regs_struct *r, uint64_t out[6]);

int moments_new(struct moments **ret);
void moments_free(struct moments *m);

/* Keep m as tid's moment if it is newer than the one kept. 0 or -ENOMEM. */
int moments_note(struct moments *ms, const struct moment *m);

/* tid's moment, or NULL. */
const struct moment *moments_find(const struct moments *ms, pid_t tid);

/* A switch-out moment of tid at this SP and PC (and, in a system call,
 * with these six arguments; args NULL outside one), or NULL. Not only the
 * latest: the last MOMENT_SLEEPS distinct places it went to sleep are
 * kept. The kernel does not sample every switch-out of a thread that
 * switches often (perf.h), and a later sleep in the same call, from the
 * same frames (same SP, PC and arguments), has the same stack. */
#define MOMENT_SLEEPS 3
const struct moment *moments_find_sleep(const struct moments *ms, pid_t tid,
					const uint64_t *args, uint64_t sp, uint64_t pc);

/* A switch-out not unwound yet: most are never needed (a thread
 * preempted in its loop is R at the next tick, and its CPU samples say
 * where it runs), so a switch-out is kept raw, one per thread, the
 * newest, and unwound only when a tick needs it (cpu_perf.h). */
struct held_switch {
	struct moment m; /* m.stack empty */
	struct user_regs_struct regs; /* the stack copy starts at regs.rsp */
	uint8_t *bytes;
	size_t len, cap;
};

/* A switch-out of m->tid at a place it already slept at (same SP, PC and
 * arguments): that sleep's stack stands, and it becomes the thread's
 * latest moment, at m's time. Returns whether one was kept. */
bool moments_renew_sleep(struct moments *ms, const struct moment *m);

/* Keep m (its registers and stack copy) as m->tid's held switch-out, if
 * newer than the one held. 0 or -ENOMEM. */
int moments_hold(struct moments *ms, const struct moment *m, const struct user_regs_struct *regs,
		 const uint8_t *stack, size_t len);

/* tid's held switch-out, or NULL. */
const struct held_switch *moments_held(const struct moments *ms, pid_t tid);
void moments_drop_held(struct moments *ms, pid_t tid);

/* Whether tid is known to have gone to sleep at this place: a kept sleep
 * (moments_find_sleep) or its held switch-out. */
bool moments_knows_sleep(const struct moments *ms, pid_t tid, const uint64_t *args, uint64_t sp,
			 uint64_t pc);

/* Forget the threads pc does not list (a process that churns threads
 * would otherwise keep one entry for every thread it ever had). */
void moments_prune(struct moments *ms, const struct process_capture *pc);

#endif
