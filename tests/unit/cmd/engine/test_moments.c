/* moments: each thread's latest perf moment, and the sleeps it is
 * remembered at (what a wall-clock tick without stops relies on). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/engine/moments.h"

static struct moment at(pid_t tid, enum moment_kind kind, uint64_t time, uint64_t sp, uint64_t pc,
			uint64_t arg0)
{
	struct moment m = {.tid = tid, .kind = kind, .time_ns = time, .sp = sp, .pc = pc};
	m.args[0] = arg0;
	m.stack.n = 1;
	m.stack.pcs[0] = pc;
	return m;
}

Test(moments, the_newest_sample_wins_whatever_ring_it_came_from)
{
	struct moments *ms;
	cr_assert_eq(moments_new(&ms), 0);
	struct moment a = at(7, MOMENT_CPU, 200, 0x1000, 0x40, 0);
	struct moment older = at(7, MOMENT_SWITCH_OUT, 100, 0x2000, 0x50, 0);
	cr_assert_eq(moments_note(ms, &a), 0);
	cr_assert_eq(moments_note(ms, &older), 0);
	const struct moment *m = moments_find(ms, 7);
	cr_assert(m && m->time_ns == 200 && m->kind == MOMENT_CPU);
	cr_expect_null(moments_find(ms, 8));
	moments_free(ms);
}

Test(moments, sleeps_are_told_apart_by_sp_pc_and_arguments)
{
	struct moments *ms;
	cr_assert_eq(moments_new(&ms), 0);
	struct moment read_a = at(7, MOMENT_SWITCH_OUT, 10, 0x2000, 0x50, 3);
	struct moment read_b = at(7, MOMENT_SWITCH_OUT, 20, 0x2000, 0x50, 4); /* another fd */
	struct moment running = at(7, MOMENT_CPU, 30, 0x1000, 0x40, 0);
	cr_assert_eq(moments_note(ms, &read_a), 0);
	cr_assert_eq(moments_note(ms, &read_b), 0);
	cr_assert_eq(moments_note(ms, &running), 0);
	uint64_t args[6] = {3};
	const struct moment *m = moments_find_sleep(ms, 7, args, 0x2000, 0x50);
	cr_assert(m && m->time_ns == 10, "the sleep on fd 3 is remembered, not just the latest");
	args[0] = 5;
	cr_expect_null(moments_find_sleep(ms, 7, args, 0x2000, 0x50), "no sleep on fd 5 was seen");
	cr_expect_null(moments_find_sleep(ms, 7, NULL, 0x1000, 0x40), "a CPU sample is no sleep");
	/* Outside a system call the arguments are unknown: SP and PC decide. */
	cr_expect_not_null(moments_find_sleep(ms, 7, NULL, 0x2000, 0x50));
	moments_free(ms);
}

Test(moments, at_most_a_few_sleeps_and_the_same_place_replaced)
{
	struct moments *ms;
	cr_assert_eq(moments_new(&ms), 0);
	for (uint64_t i = 0; i < MOMENT_SLEEPS + 2; i++) {
		struct moment s = at(7, MOMENT_SWITCH_OUT, 10 + i, 0x2000 + 0x100 * i, 0x50, 0);
		cr_assert_eq(moments_note(ms, &s), 0);
	}
	/* The oldest places are forgotten, the newest kept. */
	cr_expect_null(moments_find_sleep(ms, 7, NULL, 0x2000, 0x50));
	uint64_t last = 0x2000 + 0x100 * (MOMENT_SLEEPS + 1);
	cr_expect_not_null(moments_find_sleep(ms, 7, NULL, last, 0x50));
	/* A newer sleep at a kept place replaces it. */
	struct moment again = at(7, MOMENT_SWITCH_OUT, 99, last, 0x50, 0);
	cr_assert_eq(moments_note(ms, &again), 0);
	const struct moment *m = moments_find_sleep(ms, 7, NULL, last, 0x50);
	cr_assert(m && m->time_ns == 99);
	/* A switch-out whose stack did not unwind, or was cut short, is not
	 * remembered as a sleep (its stack cannot stand in for a copy). */
	struct moment cut = at(7, MOMENT_SWITCH_OUT, 120, 0x9000, 0x60, 0);
	cut.stack_cut = true;
	cr_assert_eq(moments_note(ms, &cut), 0);
	cr_expect_null(moments_find_sleep(ms, 7, NULL, 0x9000, 0x60));
	cr_expect_eq(moments_find(ms, 7)->time_ns, 120, "but it is the latest moment");
	moments_free(ms);
}

Test(moments, prune_keeps_only_the_threads_of_a_capture)
{
	struct moments *ms;
	cr_assert_eq(moments_new(&ms), 0);
	for (pid_t tid = 1; tid <= 2000; tid++) {
		struct moment m = at(tid, MOMENT_CPU, 1, 0x1000, 0x40, 0);
		cr_assert_eq(moments_note(ms, &m), 0);
	}
	struct thread_capture threads[2] = {{.tid = 5}, {.tid = 1500}};
	struct process_capture pc = {.threads = threads, .nthreads = 2};
	moments_prune(ms, &pc);
	cr_expect_not_null(moments_find(ms, 5));
	cr_expect_not_null(moments_find(ms, 1500));
	cr_expect_null(moments_find(ms, 6));
	moments_free(ms);
}

Test(moments, a_switch_out_where_it_slept_before_renews_that_sleep)
{
	struct moments *ms;
	cr_assert_eq(moments_new(&ms), 0);
	struct moment sleep = at(7, MOMENT_SWITCH_OUT, 10, 0x2000, 0x50, 3);
	struct moment ran = at(7, MOMENT_CPU, 20, 0x1000, 0x40, 0);
	cr_assert_eq(moments_note(ms, &sleep), 0);
	cr_assert_eq(moments_note(ms, &ran), 0);
	/* Asleep at the same place again, at 30: no stack needed, and it is
	 * the thread's latest moment, with the stack of the first sleep. */
	struct moment again = at(7, MOMENT_SWITCH_OUT, 30, 0x2000, 0x50, 3);
	again.stack.n = 0;
	cr_assert(moments_renew_sleep(ms, &again));
	const struct moment *m = moments_find(ms, 7);
	cr_assert(m && m->time_ns == 30 && m->kind == MOMENT_SWITCH_OUT && m->stack.n == 1);
	/* Another argument is another sleep: not renewed. */
	struct moment other = at(7, MOMENT_SWITCH_OUT, 40, 0x2000, 0x50, 4);
	cr_expect_not(moments_renew_sleep(ms, &other));
	cr_expect_not(moments_renew_sleep(ms, &(struct moment){.tid = 8, .sp = 0x2000, .pc = 0x50}));
	moments_free(ms);
}

Test(moments, the_newest_switch_out_is_held_raw_until_dropped)
{
	struct moments *ms;
	cr_assert_eq(moments_new(&ms), 0);
	struct user_regs_struct regs = {.rsp = 0x3000, .rip = 0x60};
	uint8_t stack[64];
	memset(stack, 0xab, sizeof(stack));
	struct moment m = at(9, MOMENT_SWITCH_OUT, 50, 0x3000, 0x60, 5);
	cr_assert_eq(moments_hold(ms, &m, &regs, stack, sizeof(stack)), 0);
	struct moment older = at(9, MOMENT_SWITCH_OUT, 40, 0x3100, 0x70, 5);
	cr_assert_eq(moments_hold(ms, &older, &regs, stack, 8), 0);
	const struct held_switch *h = moments_held(ms, 9);
	cr_assert(h && h->m.time_ns == 50 && h->len == sizeof(stack) && h->bytes[63] == 0xab);
	cr_expect_eq(h->m.stack.n, 0);
	cr_expect_eq(h->regs.rsp, 0x3000); /* where the stack copy starts */
	/* It tells a sleep at its place, not at another. */
	uint64_t args[6] = {5};
	cr_expect(moments_knows_sleep(ms, 9, args, 0x3000, 0x60));
	cr_expect_not(moments_knows_sleep(ms, 9, args, 0x3000, 0x61));
	moments_drop_held(ms, 9);
	cr_expect_null(moments_held(ms, 9));
	cr_expect_not(moments_knows_sleep(ms, 9, args, 0x3000, 0x60));
	/* Held again after a drop: the buffer is reused. */
	cr_assert_eq(moments_hold(ms, &m, &regs, stack, 16), 0);
	cr_expect(moments_held(ms, 9) && moments_held(ms, 9)->len == 16);
	moments_free(ms);
}

Test(moments, prune_frees_the_held_copies_of_threads_gone)
{
	struct moments *ms;
	cr_assert_eq(moments_new(&ms), 0);
	struct user_regs_struct regs = {.rsp = 0x3000, .rip = 0x60};
	uint8_t stack[256] = {1};
	for (pid_t tid = 1; tid <= 600; tid++) {
		struct moment m = at(tid, MOMENT_SWITCH_OUT, 10, 0x3000, 0x60, 0);
		cr_assert_eq(moments_hold(ms, &m, &regs, stack, sizeof(stack)), 0);
	}
	struct thread_capture kept[2] = {{.tid = 5}, {.tid = 77}};
	struct process_capture pc = {.threads = kept, .nthreads = 2};
	moments_prune(ms, &pc);
	cr_expect(moments_held(ms, 5) && moments_held(ms, 77));
	cr_expect_null(moments_held(ms, 6));
	moments_free(ms); /* ASan/LSan: nothing of the 598 others leaks */
}

/* A thread stopped once while asleep (for its registers) is remembered
 * asleep there, as a switch-out is: a later tick that finds it at that
 * place takes that stack. A CPU sample is never a sleep. */
Test(moments, a_stop_while_asleep_is_remembered_as_that_sleep)
{
	struct moments *ms;
	cr_assert_eq(moments_new(&ms), 0);
	struct moment stopped = at(9, MOMENT_STOPPED_ASLEEP, 10, 0x3000, 0x60, 5);
	struct moment running = at(9, MOMENT_CPU, 20, 0x3000, 0x60, 5);
	cr_assert_eq(moments_note(ms, &stopped), 0);
	cr_assert_eq(moments_note(ms, &running), 0);
	const uint64_t args[6] = {5};
	const struct moment *m = moments_find_sleep(ms, 9, args, 0x3000, 0x60);
	cr_assert(m && m->kind == MOMENT_STOPPED_ASLEEP && m->time_ns == 10);
	cr_expect(moments_knows_sleep(ms, 9, args, 0x3000, 0x60));
	const uint64_t other[6] = {6};
	cr_expect_null(moments_find_sleep(ms, 9, other, 0x3000, 0x60));
	moments_free(ms);
}
