/*
 * wall_window: what each thread did between two wakes of the sampler,
 * from the kernel's own time-stamped records, so that the wall-clock
 * ticks between two wakes need no wake of ours (sampler.c).
 *
 * A wake reads every thread's state and stack (/proc, the perf moments):
 * an anchor. Between two anchors the rings held every switch of every
 * thread in and out of a CPU (PERF_RECORD_SWITCH, preempted or not) and
 * its CPU samples, with their stacks. A tick between two anchors falls in
 * one episode of each thread: on a CPU, preempted, or asleep. An episode
 * that reaches an anchor is the anchor's (same state, and the same stack
 * for a sleep); one inside the window is running (R) or preempted (R)
 * at the stack of its nearest CPU sample, or asleep (S) at the stack an
 * anchor read for a sleep of that thread. The kernel takes the records in
 * the thread's own switch: what a tick read from them costs is ours,
 * after the fact, and no wake of ours needs to be on time.
 */
#ifndef DIAG_CMD_ENGINE_WALL_WINDOW_H
#define DIAG_CMD_ENGINE_WALL_WINDOW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbolize/worker/interp.h"

struct wall_window;

int wall_window_new(struct wall_window **ret);
void wall_window_free(struct wall_window *w);

/* A thread came onto a CPU, or left it (out): preempted while runnable
 * (preempt), or to sleep. 0 or -ENOMEM. */
int wall_window_switch(struct wall_window *w, pid_t tid, uint64_t time_ns, bool out, bool preempt);

/* A CPU sample of tid at time_ns, its user stack (copied). 0 or -ENOMEM. */
int wall_window_cpu(struct wall_window *w, pid_t tid, uint64_t time_ns,
		    const struct unwound_stack *st);

/* A thread at an anchor: absent (not a thread then), or its state letter
 * (R, S, D...) and stack as the wake read them. */
struct wall_anchor {
	bool present;
	char state;
	const struct unwound_stack *stack;
};

/* After the records up to the newer anchor are in: ready for
 * wall_window_at. */
void wall_window_seal(struct wall_window *w);

/* tid at time t, between the anchors read at prev_ns and now_ns: false if
 * it was no thread of the target then (born after t, with no anchor
 * before); else *state and *stack (never NULL; may be empty; valid until
 * the next call or the anchors change). */
bool wall_window_at(struct wall_window *w, pid_t tid, uint64_t t, uint64_t prev_ns,
		    const struct wall_anchor *prev, uint64_t now_ns, const struct wall_anchor *now,
		    char *state, const struct unwound_stack **stack);

/* Forget the records at or before t (a later window needs only those
 * after its own first anchor). */
void wall_window_forget(struct wall_window *w, uint64_t t);

#endif
