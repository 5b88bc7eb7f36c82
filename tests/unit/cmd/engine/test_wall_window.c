/*
 * wall_window: a thread's episodes between two wakes, from switch
 * records and CPU samples laid out by hand. The live check against a
 * real target (every thread, its state, its own function, on a loaded
 * machine) is integration-wall_truth's every_thread_at_every_tick_
 * between_wakes_loaded; this pins each rule of wall_window_at.
 */
#include <criterion/criterion.h>

#include "cmd/engine/wall_window.h"

#define MS 1000000ull

static struct unwound_stack one(uint64_t pc)
{
	struct unwound_stack s = {.n = 1};
	s.pcs[0] = pc;
	return s;
}

struct fixture {
	struct wall_window *w;
	struct unwound_stack sleep_stack, run_stack;
	struct wall_anchor prev, now;
};

static void setup(struct fixture *f, char prev_state, char now_state)
{
	cr_assert_eq(wall_window_new(&f->w), 0);
	f->sleep_stack = one(0x5000);
	f->run_stack = one(0x7000);
	f->prev = (struct wall_anchor){true, prev_state,
				       prev_state == 'R' ? &f->run_stack : &f->sleep_stack};
	f->now = (struct wall_anchor){true, now_state,
				      now_state == 'R' ? &f->run_stack : &f->sleep_stack};
}

static char at(struct fixture *f, pid_t tid, uint64_t t, uint64_t *pc)
{
	char state = 0;
	const struct unwound_stack *st = NULL;
	if (!wall_window_at(f->w, tid, t, 100 * MS, &f->prev, 140 * MS, &f->now, &state, &st))
		return 0;
	cr_assert(st, "no stack pointer");
	*pc = st->n ? st->pcs[0] : 0;
	return state;
}

/* Asleep at both wakes and never switched: the wakes' sleep. */
Test(wall_window, asleep_through)
{
	struct fixture f;
	setup(&f, 'S', 'S');
	wall_window_seal(f.w);
	uint64_t pc;
	cr_expect_eq(at(&f, 7, 120 * MS, &pc), 'S');
	cr_expect_eq(pc, 0x5000);
	wall_window_free(f.w);
}

/* Woke at 110 ms, ran (sampled at 115 and 125), slept at 130 ms. */
Test(wall_window, a_run_between_two_sleeps)
{
	struct fixture f;
	setup(&f, 'S', 'S');
	cr_assert_eq(wall_window_switch(f.w, 7, 110 * MS, false, false), 0);
	struct unwound_stack a = one(0xa), b = one(0xb);
	cr_assert_eq(wall_window_cpu(f.w, 7, 125 * MS, &b), 0);
	cr_assert_eq(wall_window_cpu(f.w, 7, 115 * MS, &a), 0); /* out of order */
	cr_assert_eq(wall_window_switch(f.w, 7, 130 * MS, true, false), 0);
	wall_window_seal(f.w);
	uint64_t pc;
	cr_expect_eq(at(&f, 7, 105 * MS, &pc), 'S', "before it woke: the earlier wake's sleep");
	cr_expect_eq(pc, 0x5000);
	cr_expect_eq(at(&f, 7, 112 * MS, &pc), 'R');
	cr_expect_eq(pc, 0xa, "the CPU sample nearest the tick");
	cr_expect_eq(at(&f, 7, 122 * MS, &pc), 'R');
	cr_expect_eq(pc, 0xb);
	cr_expect_eq(at(&f, 7, 135 * MS, &pc), 'S', "after it slept: the later wake's");
	cr_expect_eq(pc, 0x5000);
	wall_window_free(f.w);
}

/* Running at both wakes, preempted from 112 to 118 ms: R throughout, at
 * the place it was preempted while it waits. */
Test(wall_window, preempted_in_its_loop)
{
	struct fixture f;
	setup(&f, 'R', 'R');
	struct unwound_stack a = one(0xa), b = one(0xb);
	cr_assert_eq(wall_window_cpu(f.w, 7, 111 * MS, &a), 0);
	cr_assert_eq(wall_window_switch(f.w, 7, 112 * MS, true, true), 0);
	cr_assert_eq(wall_window_switch(f.w, 7, 118 * MS, false, false), 0);
	cr_assert_eq(wall_window_cpu(f.w, 7, 119 * MS, &b), 0);
	wall_window_seal(f.w);
	uint64_t pc;
	cr_expect_eq(at(&f, 7, 116 * MS, &pc), 'R');
	cr_expect_eq(pc, 0xa, "where it was preempted");
	cr_expect_eq(at(&f, 7, 130 * MS, &pc), 'R');
	cr_expect_eq(pc, 0xb);
	wall_window_free(f.w);
}

/* A sleep inside the window of a thread running at both wakes: S, at
 * the last place it ran (no wake read a sleep of it). */
Test(wall_window, a_short_sleep)
{
	struct fixture f;
	setup(&f, 'R', 'R');
	struct unwound_stack a = one(0xa);
	cr_assert_eq(wall_window_cpu(f.w, 7, 111 * MS, &a), 0);
	cr_assert_eq(wall_window_switch(f.w, 7, 112 * MS, true, false), 0);
	cr_assert_eq(wall_window_switch(f.w, 7, 125 * MS, false, false), 0);
	wall_window_seal(f.w);
	uint64_t pc;
	cr_expect_eq(at(&f, 7, 120 * MS, &pc), 'S');
	cr_expect_eq(pc, 0xa);
	wall_window_free(f.w);
}

/* Born at 120 ms (absent at the earlier wake), or ended at 120 ms
 * (absent at the later one): no sample where it was no thread. */
Test(wall_window, born_and_ended)
{
	struct fixture f;
	setup(&f, 'S', 'S');
	struct wall_anchor absent = {.present = false};
	cr_assert_eq(wall_window_switch(f.w, 8, 120 * MS, false, false), 0);
	cr_assert_eq(wall_window_switch(f.w, 9, 120 * MS, true, false), 0);
	wall_window_seal(f.w);
	char state;
	const struct unwound_stack *st;
	cr_expect_not(wall_window_at(f.w, 8, 110 * MS, 100 * MS, &absent, 140 * MS, &f.now, &state, &st));
	cr_expect(wall_window_at(f.w, 8, 130 * MS, 100 * MS, &absent, 140 * MS, &f.now, &state, &st));
	cr_expect(wall_window_at(f.w, 9, 110 * MS, 100 * MS, &f.prev, 140 * MS, &absent, &state, &st));
	cr_expect_not(wall_window_at(f.w, 9, 130 * MS, 100 * MS, &f.prev, 140 * MS, &absent, &state, &st));
	wall_window_free(f.w);
}

/* Records after the later wake stay for the next window, their stacks
 * with them; those before it go. */
Test(wall_window, forget_keeps_the_next_windows_records)
{
	struct fixture f;
	setup(&f, 'R', 'R');
	struct unwound_stack a = one(0xa), b = one(0xb), c = one(0xc);
	cr_assert_eq(wall_window_cpu(f.w, 7, 150 * MS, &c), 0);
	cr_assert_eq(wall_window_cpu(f.w, 7, 110 * MS, &a), 0);
	cr_assert_eq(wall_window_cpu(f.w, 6, 145 * MS, &b), 0);
	wall_window_seal(f.w); /* sorted: the pool is out of order now */
	wall_window_forget(f.w, 140 * MS);
	wall_window_seal(f.w);
	char state;
	const struct unwound_stack *st;
	cr_assert(wall_window_at(f.w, 7, 152 * MS, 140 * MS, &f.prev, 160 * MS, &f.now, &state, &st));
	cr_expect_eq(st->n, 1);
	cr_expect_eq(st->pcs[0], 0xc);
	cr_assert(wall_window_at(f.w, 6, 146 * MS, 140 * MS, &f.prev, 160 * MS, &f.now, &state, &st));
	cr_expect_eq(st->pcs[0], 0xb);
	wall_window_free(f.w);
}
