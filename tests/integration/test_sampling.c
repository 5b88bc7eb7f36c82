/*
 * Sampling integration tests: CPU attribution against a known 3:1 split of
 * work, wall-clock states of blocked threads, and captures that end in
 * every way (duration, target exit, SIGINT), each with an intact bundle and
 * a running target.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "pprof_check.h"

/* The built target (with its one argument arg, or none), its pid as text,
 * and a fresh directory for the tool's output (out = dir/b): harness.h's
 * target_run. */
static struct target_run sampled_start(const char *target, const char *arg)
{
	/* arg NULL: no argument (it ends argv) */
	const char *argv[] = {target_path(target), arg, NULL};
	struct target_run s;
	run_begin(&s, argv, "ready", "b");
	return s;
}

/* After the tool exited: the target is healthy and the bundle verifies. */
static void expect_target_and_bundle(const struct target_run *s)
{
	char why[256];
	cr_expect(target_healthy(s->t.pid, false, why, sizeof(why)), "%s", why);
	expect_verified(s->out, NULL);
}

/* `diag-attach -p PID EXTRA... -o OUT -q`: it exits 0, the target is
 * healthy after it, and the bundle verifies. */
/* The tool's arguments for s: -p PID EXTRA... -o OUT -q, into args[16]. */
static void sampled_args(const struct target_run *s, const char *const *extra,
			 const char *args[16])
{
	size_t n = 0;
	args[n++] = "-p";
	args[n++] = s->pid;
	for (size_t i = 0; extra[i] && n < 12; i++)
		args[n++] = extra[i];
	args[n++] = "-o";
	args[n++] = s->out;
	args[n++] = "-q";
	args[n] = NULL;
}

/* The same tool started in the background (output to /dev/null). */
static pid_t sampled_spawn(const struct target_run *s, const char *const *extra)
{
	const char *args[16];
	sampled_args(s, extra, args);
	return tool_spawn(args, NULL, NULL);
}

/* Does any sample of p have fn among its frames? */
static bool any_sample_has(const Perftools__Profiles__Profile *p, const char *fn)
{
	for (size_t i = 0; i < p->n_sample; i++)
		if (frames_have(p, p->sample[i], fn))
			return true;
	return false;
}

static void sampled_capture(struct target_run *s, const char *const *extra)
{
	const char *args[16];
	sampled_args(s, extra, args);
	struct tool_result r;
	tool_run_ok(&r, args);
	expect_target_and_bundle(s);
}

static Perftools__Profiles__Profile *load(const char *bundle, const char *member)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/%s", bundle, member);
	Perftools__Profiles__Profile *p = NULL;
	cr_assert_eq(pprof_read_file(path, &p), 0, "%s does not decode", member);
	if (have_go()) {
		static char out[1 << 20], err[65536];
		int st = go_pprof("-raw", path, out, sizeof(out), err, sizeof(err));
		cr_expect_eq(st, 0, "go tool pprof -raw %s: %s", member, err);
		cr_expect(strstr(err, "arning") == NULL, "go tool pprof warned on %s: %s", member, err);
	}
	return p;
}

/* Both wall-clock engines: without stops (the default with perf events)
 * and with ptrace stops of the threads that ran. */
static void check_cpu_split_and_wall_states(const char *wall_engine)
{
	struct target_run sa = sampled_start("burner", "2");
	const char *args[] = {"-d", "4s", "-F", "99", "--wall-engine", wall_engine, NULL};
	struct steal_mark stolen;
	steal_mark(&stolen);
	sampled_capture(&sa, args);
	skip_if_stolen(steal_share_since(&stolen), "CPU sample counts against /proc and tick rates");

	/* On a loaded machine each hold takes longer (every thread must be
	 * scheduled to reach its stop) and the pause budget lowers the rate,
	 * as it must: the counts below are then judged against the ticks
	 * actually taken, and only a capture that kept its rate must show 99
	 * Hz. */
	cJSON *m = manifest_need(sa.out);
	cJSON *cap = cJSON_GetObjectItem(m, "capture");
	cr_assert(cap);
	bool adapted = cJSON_GetArraySize(cJSON_GetObjectItem(cap, "rate_adaptations")) > 0;
	double ticks = number_at(m, "capture", "ticks");
	if (!adapted)
		cr_expect(number_at(m, "capture", "achieved_hz") > 80, "achieved %.1f Hz",
			  number_at(m, "capture", "achieved_hz"));

	Perftools__Profiles__Profile *cpu = load(sa.out, "cpu.pprof");
	int vi = value_index(cpu, "samples");
	int ci = value_index(cpu, "cpu");
	cr_assert(vi >= 0 && ci >= 0, "cpu.pprof sample types wrong");
	cr_expect_str_eq(pprof_str(cpu, cpu->period_type->type), "cpu");
	cr_expect_eq(cpu->period, 1000000000 / 99);
	int64_t heavy = 0, light = 0, total = 0, blocked = 0, cpu_ns_total = 0;
	for (size_t i = 0; i < cpu->n_sample; i++) {
		const Perftools__Profiles__Sample *s = cpu->sample[i];
		int64_t n = s->value[vi];
		total += n;
		if (frames_have(cpu, s, "burn_heavy"))
			heavy += n;
		else if (frames_have(cpu, s, "burn_light"))
			light += n;
		if (frames_have(cpu, s, "sleep_forever") || frames_have(cpu, s, "lock_forever"))
			blocked += n;
		cpu_ns_total += s->value[ci];
	}
	double frac = (double)heavy / (double)(heavy + light);
	cr_expect(frac > 0.67 && frac < 0.83, "burn_heavy share %.3f (heavy %lld, light %lld), want 0.75",
		  frac, (long long)heavy, (long long)light);
	/* CPU samples come from perf events: one per 1/99 s of each thread's
	 * CPU time, however busy the machine and whatever the stops' rate
	 * (integration-cpu_truth checks the totals against the kernel's own
	 * accounting): as many as the target's CPU time asks for, within 10 %,
	 * each weighing exactly one period. */
	const cJSON *engine = cJSON_GetObjectItem(cap, "cpu_engine");
	cr_assert(cJSON_IsString(engine) && strcmp(engine->valuestring, "perf") == 0,
		  "cpu engine %s", cJSON_IsString(engine) ? engine->valuestring : "none");
	double want = cJSON_GetNumberValue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cap, "cpu"), "samples_expected"));
	cr_expect(want > 99 && total > want * 0.9 && total < want * 1.1,
		  "cpu samples %lld, the target's CPU time asks for %.0f", (long long)total, want);
	cr_expect_eq(blocked, 0, "blocked threads got %lld CPU samples", (long long)blocked);
	size_t cpu_entries = cpu->n_sample;
	perftools__profiles__profile__free_unpacked(cpu, NULL);

	Perftools__Profiles__Profile *wall = load(sa.out, "wall.pprof");
	int wi = value_index(wall, "wall");
	cr_assert(wi >= 0);
	int64_t sleeper = 0, locker = 0;
	for (size_t i = 0; i < wall->n_sample; i++) {
		const Perftools__Profiles__Sample *s = wall->sample[i];
		const char *comm = sample_str_label(wall, s, "thread_comm");
		const char *state = sample_str_label(wall, s, "state");
		cr_assert(comm && state && sample_num_label(wall, s, "tid") > 0, "labels missing");
		if (strcmp(comm, "sleeper") == 0) {
			cr_expect(frames_have(wall, s, "sleep_forever"));
			cr_expect_str_eq(state, "S");
			sleeper += s->value[0];
		}
		if (strcmp(comm, "locker") == 0) {
			cr_expect(frames_have(wall, s, "lock_forever"));
			cr_expect_str_eq(state, "S");
			locker += s->value[0];
		}
	}
	/* One wall sample per tick each (99 Hz x 4 s: 396). */
	cr_expect(sleeper > ticks * 0.75 && locker > ticks * 0.75 && ticks > 10,
		  "wall samples: sleeper %lld locker %lld in %.0f ticks", (long long)sleeper,
		  (long long)locker, ticks);
	perftools__profiles__profile__free_unpacked(wall, NULL);

	/* The CPU samples stand for the threads' CPU time as the kernel
	 * counted it: what the manifest says they were weighed to, within
	 * the rounding of each entry, and within 10 % of the target's. */
	const cJSON *wg = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cap, "cpu"), "perf"), "weighed_to_schedstat");
	cr_assert(cJSON_IsObject(wg), "capture.cpu.perf.weighed_to_schedstat missing");
	double weighed = cJSON_GetObjectItem(wg, "weighed_s")->valuedouble * 1e9;
	cr_expect(fabs((double)cpu_ns_total - weighed) <= 1e3 + (double)cpu_entries,
		  "cpu ns %lld, weighed to %.0f", (long long)cpu_ns_total, weighed);
	double target_ns = cJSON_GetObjectItem(cJSON_GetObjectItem(cap, "cpu"), "target_cpu_s")->valuedouble * 1e9;
	cr_expect(fabs((double)cpu_ns_total - target_ns) <= 0.10 * target_ns,
		  "cpu ns %lld for %.0f ns of target CPU", (long long)cpu_ns_total, target_ns);
	cJSON *pause = cJSON_GetObjectItem(m, "pause");
	cr_assert(pause && cJSON_GetObjectItem(pause, "p50_us") && cJSON_GetObjectItem(pause, "p99_us"));
	const cJSON *we = cJSON_GetObjectItem(cap, "wall_engine");
	cr_assert(cJSON_IsString(we), "no capture.wall_engine");
	if (strcmp(wall_engine, "auto") == 0) {
		/* No tick stops anyone but for registers: burner keeps frame
		 * pointers, and its sleeper, locker and main, asleep since
		 * before the capture in calls a stop does not disturb, are
		 * each stopped once for the rbp /proc does not give. The last
		 * stop is the final snapshot's. */
		cr_expect_str_eq(we->valuestring, "perf");
		double for_regs = cJSON_GetNumberValue(
			cJSON_GetObjectItem(cJSON_GetObjectItem(cap, "wall"), "stops_for_registers"));
		cr_expect(for_regs >= 1 && for_regs <= 3, "%.0f threads stopped for registers",
			  for_regs);
		cr_expect(number_at(m, "pause", "stops") >= 2 &&
				  number_at(m, "pause", "stops") <= 1 + for_regs,
			  "%.0f stops", number_at(m, "pause", "stops"));
		cJSON_Delete(m);
		run_end(&sa);
		return;
	}
	cr_expect_str_eq(we->valuestring, "ptrace");
	/* Each thread is let go as soon as it is copied: no thread is held
	 * longer than the process (first stop to last release), and a tick
	 * with two or more stopped threads has one held for less. */
	double process_max = number_at(m, "pause", "max_us");
	cJSON *per_thread = cJSON_GetObjectItem(pause, "per_thread");
	cr_assert(per_thread, "no pause.per_thread");
	double thread_max = cJSON_GetNumberValue(cJSON_GetObjectItem(per_thread, "max_us"));
	double thread_stops = cJSON_GetNumberValue(cJSON_GetObjectItem(per_thread, "stops"));
	cr_expect(thread_stops >= number_at(m, "pause", "stops"), "per-thread stops %.0f", thread_stops);
	cr_expect(thread_max > 0 && thread_max <= process_max, "thread hold max %.1f us, process %.1f us",
		  thread_max, process_max);
	cJSON_Delete(m);
	run_end(&sa);
}

Test(sampling, cpu_split_and_wall_states)
{
	check_cpu_split_and_wall_states("auto");
}

Test(sampling, cpu_split_and_wall_states_ptrace_wall)
{
	check_cpu_split_and_wall_states("ptrace");
}

/* The share of p's samples (by count) with fn whose frames also run
 * burn fn -> burner_main -> start_thread: unwound whole. */
static double whole_share(const Perftools__Profiles__Profile *p, const char *fn)
{
	const char *const run[] = {fn, "burner_main", "start_thread"};
	int64_t with = 0, whole = 0;
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		if (!frames_have(p, s, fn))
			continue;
		with += s->value[0];
		whole += frames_contain_run(p, s, run, 3) ? s->value[0] : 0;
	}
	return with ? (double)whole / (double)with : -1;
}

/* No location of p is a deferred sample's placeholder (cpu_perf.c: the
 * 0x4446 in the top 16 bits of an address). */
static void expect_no_placeholder(const Perftools__Profiles__Profile *p, const char *member)
{
	for (size_t i = 0; i < p->n_location; i++)
		cr_expect(p->location[i]->address >> 48 != 0x4446,
			  "%s: location %#llx is a placeholder left in", member,
			  (unsigned long long)p->location[i]->address);
}

/* --unwind-later: the CPU samples kept during the capture are unwound
 * after it and put in place, in cpu.pprof and in wall.pprof (where the
 * ticks took them for the running threads), so the busy threads' chains
 * are whole whichever way each sample was unwound. budget: the option's
 * value (NULL: the default, every sample kept); kept and past: whether
 * the manifest must count samples kept, and samples unwound as drained
 * once the budget was spent. */
static void check_unwound_later(const char *budget, bool kept, bool past)
{
	struct target_run sa = sampled_start("burner", "2");
	const char *args[] = {"-d", "2s", "-F", "99", budget ? "--unwind-later" : NULL, budget, NULL};
	struct steal_mark stolen;
	steal_mark(&stolen);
	sampled_capture(&sa, args);
	cJSON *m = manifest_need(sa.out);
	const cJSON *perf = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(m, "capture"), "cpu"), "perf");
	cr_assert(cJSON_IsObject(perf), "no capture.cpu.perf");
	const cJSON *d = cJSON_GetObjectItem(perf, "deferred_unwinding");
	if (budget && strcmp(budget, "0") == 0) {
		cr_expect_null(d, "--unwind-later 0 kept samples");
	} else {
		cr_assert(cJSON_IsObject(d), "no capture.cpu.perf.deferred_unwinding");
		double n = cJSON_GetNumberValue(cJSON_GetObjectItem(d, "samples"));
		double over = cJSON_GetNumberValue(
			cJSON_GetObjectItem(d, "past_budget_unwound_as_drained"));
		/* A small budget keeps a few: trimmed stacks of a few KiB. */
		cr_expect(kept ? n >= (past ? 1 : 50) : n == 0, "%.0f samples kept", n);
		cr_expect(past ? over > 50 : over == 0, "%.0f samples past the budget", over);
	}
	cJSON_Delete(m);
	const char *members[] = {"cpu.pprof", "wall.pprof"};
	for (size_t k = 0; k < 2; k++) {
		Perftools__Profiles__Profile *p = load(sa.out, members[k]);
		expect_no_placeholder(p, members[k]);
		double heavy = whole_share(p, "burn_heavy"), light = whole_share(p, "burn_light");
		/* A burner with no sample at all is a matter of time given,
		 * not of unwinding. */
		if (heavy < 0 || light < 0)
			skip_if_stolen(steal_share_since(&stolen), "a burner without samples");
		cr_expect(heavy > 0.95 && light > 0.95,
			  "%s: burn_heavy %.3f, burn_light %.3f of samples unwound to start_thread",
			  members[k], heavy, light);
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	run_end(&sa);
}

Test(sampling, unwound_after_the_capture)
{
	check_unwound_later(NULL, true, false);
}

Test(sampling, unwound_as_drained_with_no_budget)
{
	check_unwound_later("0", false, false);
}

Test(sampling, unwound_as_drained_past_a_small_budget)
{
	/* A few KiB of trimmed stack per sample: 16K keeps a handful. */
	check_unwound_later("16K", true, true);
}

Test(sampling, thread_churn)
{
	struct target_run sa = sampled_start("churn_threads", NULL);
	const char *args[] = {"-d", "3s", "-F", "199", NULL};
	sampled_capture(&sa, args);
	Perftools__Profiles__Profile *cpu = load(sa.out, "cpu.pprof");
	cr_expect(any_sample_has(cpu, "steady_work"), "steady_work missing from cpu.pprof");
	perftools__profiles__profile__free_unpacked(cpu, NULL);
	/* The target still makes progress: it creates threads. */
	run_end(&sa);
}

Test(sampling, target_exits_mid_capture)
{
	/* 2-3 s of life: the exit comes after a few hundred ticks even under
	 * the sanitizers on a loaded machine. */
	struct target_run sa = sampled_start("churn_threads", "3");
	const char *args[] = {"-d", "20s", NULL};
	pid_t tool = sampled_spawn(&sa, args);
	/* The real parent (us) must see the true exit status. */
	int status = 0;
	cr_assert_eq(waitpid(sa.t.pid, &status, 0), sa.t.pid);
	sa.t.pid = 0;
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 42, "target status %#x", status);
	int code = tool_wait(tool, 10000);
	cr_expect_eq(code, 0, "tool exit %d after target exit", code);
	expect_verified(sa.out, NULL);
	cJSON *m = manifest_need(sa.out);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(m, "target_exited")), "manifest does not say the target exited");
	cJSON_Delete(m);
	expect_member_has(sa.out, "threads.txt", "steady_work",
			  "final snapshot lacks the last stacks");
	/* The samples kept to unwind after the capture were unwound after
	 * the target was gone, from the modules loaded while it ran. */
	Perftools__Profiles__Profile *cpu = load(sa.out, "cpu.pprof");
	const char *const run[] = {"steady_work", "steady_main", "start_thread"};
	int64_t steady = 0, whole = 0;
	for (size_t i = 0; i < cpu->n_sample; i++) {
		if (!frames_have(cpu, cpu->sample[i], "steady_work"))
			continue;
		steady += cpu->sample[i]->value[0];
		whole += frames_contain_run(cpu, cpu->sample[i], run, 3) ? cpu->sample[i]->value[0] : 0;
	}
	cr_expect(steady > 20 && whole > steady * 0.95,
		  "steady_work: %lld samples, %lld unwound to start_thread", (long long)steady,
		  (long long)whole);
	expect_no_placeholder(cpu, "cpu.pprof");
	perftools__profiles__profile__free_unpacked(cpu, NULL);
	/* It was not held at once, and the header must not say it was. */
	expect_member_has(sa.out, "threads.txt", "as the last sample before the target exited",
			  "threads.txt's header hides that the snapshot is the last tick's");
	run_end(&sa);
}

Test(sampling, sigint_releases_and_writes)
{
	struct target_run sa = sampled_start("burner", "1");
	const char *args[] = {"-F", "499", NULL};
	pid_t tool = sampled_spawn(&sa, args);
	usleep(1500000);
	kill(tool, SIGINT);
	int code = tool_wait(tool, 5000);
	cr_expect_eq(code, 0, "tool exit %d after SIGINT", code);
	expect_target_and_bundle(&sa);
	cJSON *m = manifest_need(sa.out);
	cJSON *cap = cJSON_GetObjectItem(m, "capture");
	cr_expect_str_eq(cJSON_GetObjectItem(cap, "ended_by")->valuestring, "signal");
	cJSON_Delete(m);
	run_end(&sa);
}

/* The interpretation worker crashes on its crash_at-th unwind request:
 * the samples of that request lose their stacks, and the restarted
 * worker unwinds the rest. unwind_later: the --unwind-later value; with
 * 0 the requests come during the capture (a tick's, a drain's), with the
 * default most come after it (64 kept samples each). */
static void check_worker_crash(const char *crash_at, const char *unwind_later, const char *duration)
{
	struct target_run sa = sampled_start("burner", "1");
	setenv("DIAG_ATTACH_TEST_WORKER_CRASH_AT", crash_at, 1);
	const char *args[] = {"-d", duration, "--unwind-later", unwind_later, NULL};
	sampled_capture(&sa, args);
	unsetenv("DIAG_ATTACH_TEST_WORKER_CRASH_AT");
	cJSON *m = manifest_need(sa.out);
	cJSON *in = cJSON_GetObjectItem(m, "interpretation");
	cr_assert(in, "no interpretation section");
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(in, "sandboxed")));
	cr_expect_geq(cJSON_GetObjectItem(in, "worker_restarts")->valuedouble, 1);
	cr_expect_gt(cJSON_GetObjectItem(in, "stacks_lost")->valuedouble, 0);
	cJSON_Delete(m);
	/* Samples after the crash were unwound by the restarted worker. */
	Perftools__Profiles__Profile *cpu = load(sa.out, "cpu.pprof");
	cr_expect(any_sample_has(cpu, "burn_heavy"), "no full stacks after the worker restarted");
	expect_no_placeholder(cpu, "cpu.pprof");
	perftools__profiles__profile__free_unpacked(cpu, NULL);
	run_end(&sa);
}

Test(sampling, worker_crash_loses_only_samples_in_flight)
{
	check_worker_crash("20", "0", "1s");
}

Test(sampling, worker_crash_after_the_capture_loses_one_batch)
{
	/* burner 1 has one busy thread: 3 s of it is up to 300 samples, 5
	 * requests after the capture (3 at half a CPU on a loaded machine),
	 * and the ticks' one or more before it: the 2nd is one of those
	 * and some of the kept samples come after it. */
	check_worker_crash("2", "64M", "3s");
}
