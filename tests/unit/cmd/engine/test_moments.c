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
