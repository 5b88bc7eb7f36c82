/* diag-attach -p PID [--snapshot] [-o DIR] ...: the checks that refuse
 * bad input before the target is touched, and the messages and exit
 * statuses of a capture. Its options and help are capture_options.c's
 * and capture_help.c's; the capture itself is the engine's
 * (cmd/engine/engine.h). */
#include "cmd/capture.h"

#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/views/output_file.h"
#include "bundle/text.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/export.h"
#include "cmd/cli/capture_errors.h"
#include "cmd/cli/launch.h"
#include "cmd/capture_options.h"
#include "cmd/cli/util.h"
#include "cmd/engine/engine.h"
#include "cmd/group_capture.h"
#include "cmd/watchdog_epilogue.h"
#include "timeline/leakwatch.h"
#include "timeline/proc_sampler.h"
#include "version.h"

static volatile sig_atomic_t capture_stop_requests;
/* The command of launch mode, held stopped until the capture is ready. */
static struct launch *launched_now;

static void let_launched_run(void *arg)
{
	(void)arg;
	if (launched_now)
		launch_continue(launched_now);
}

static void on_stop_signal(int sig)
{
	(void)sig;
	capture_stop_requests++;
}


static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n > m && strcmp(s + n - m, suffix) == 0;
}

/* The export format an -o names by its suffix: a file instead of a
 * bundle directory. NULL: a bundle. */
static const char *file_format_of(const char *output)
{
	if (!output)
		return NULL;
	if (ends_with(output, ".svg"))
		return "svg";
	if (ends_with(output, ".speedscope.json"))
		return "speedscope";
	return NULL;
}


/* The launched command in the manifest: its argv, and how it ended if it
 * has (the capture ends when it exits, so normally it has). */
static void note_launch(struct capture_session *s, struct launch *l, char **argv)
{
	capture_session_note(s, "launched", launch_json(l, argv, capture_session_target_exited(s)));
}




/* The progress line, on a terminal only: \r-rewritten in place. */
static void show_progress(const struct capture_progress *p, void *arg)
{
	(void)arg;
	if (!isatty(STDERR_FILENO))
		return;
	char dur[32] = "";
	if (p->duration_ns)
		snprintf(dur, sizeof(dur), "/%.0fs", (double)p->duration_ns / 1e9);
	fprintf(stderr, "\r\033[Kdiag-attach: pid %d  %.1fs%s  samples %llu  threads %zu  %.1f Hz%s",
		(int)p->pid, (double)p->elapsed_ns / 1e9, dur, (unsigned long long)p->samples,
		p->threads, p->rate_hz, p->final ? "\n" : "");
}

/* The watchdog's finding, as a warning (over the progress line if any). */
static void show_leak(const struct capture_leak *l, void *arg)
{
	const bool *quiet = arg;
	fprintf(stderr,
		"%sdiag-attach: warning: %s is leaking: +%.3g/s, %.0f -> %.0f over %zu samples; "
		"evidence in %s/%s\n",
		(!*quiet && isatty(STDERR_FILENO)) ? "\r\033[K" : "", l->counter, l->slope_per_s, l->first,
		l->last, l->n_samples, l->bundle_dir, l->evidence);
}

/* One line at the end of a sampled capture: which engine gave the CPU
 * samples, how many against what the target's CPU time asks for (its CPU
 * seconds from /proc times the rate), what was lost; a warning when fewer
 * than 90 % were taken, so a thin profile never passes for a full one. */
/* A worker that died (a crash on one of the target's files) cost names
 * or stacks: said once the bundle is finished (its last symbols are
 * resolved then), in every mode and even with -q, never left to be found
 * deep in the manifest. */
static void print_losses(const struct capture_summary *sum)
{
	/* The Go worker's words: the target's numbers may be in them. */
	if (sum->go_warning[0]) {
		fputs("diag-attach: warning: Go goroutines: ", stderr);
		escape_text_put(sum->go_warning, stderr);
		fputs("; see target.go.goroutine_capture in manifest.json\n", stderr);
	}
	if (sum->growth_warning[0])
		fprintf(stderr, "diag-attach: warning: %s\n", sum->growth_warning);
	if (sum->symbol_batches_lost || sum->stacks_lost || sum->worker_restarts)
		fprintf(stderr,
			"diag-attach: warning: an interpretation worker died: %llu symbol batch(es) lost "
			"(their frames read module+0xOFF), %llu stack(s) cut to their innermost frame, "
			"%llu worker restart(s); see interpretation in manifest.json\n",
			(unsigned long long)sum->symbol_batches_lost,
			(unsigned long long)sum->stacks_lost,
			(unsigned long long)sum->worker_restarts);
	if (sum->workers_denied)
		fprintf(stderr,
			"diag-attach: warning: %llu interpretation worker(s) stopped by the sandbox's "
			"filter at system call %d, which it does not allow (a bug of ours, or a "
			"compromised worker); see interpretation.sandbox in manifest.json\n",
			(unsigned long long)sum->workers_denied, (int)sum->denied_syscall);
}

static void print_summary(const struct capture_summary *sum)
{
	if (!sum->sampled || sum->hz == 0)
		return;
	if (sum->perf_refused)
		fprintf(stderr, "diag-attach: perf events refused (%s): CPU samples from ptrace stops\n",
			strerror(-sum->perf_refused));
	double share = sum->cpu_samples_expected > 0
			       ? 100.0 * (double)sum->cpu_samples / sum->cpu_samples_expected
			       : 100.0;
	fprintf(stderr,
		"diag-attach: cpu engine %s: %llu CPU samples for %.2f s of target CPU (%.0f%% of the "
		"%.0f it asks for at %.0f Hz), %llu lost, %llu throttled; %llu stops\n",
		sum->cpu_engine, (unsigned long long)sum->cpu_samples, sum->target_cpu_s, share,
		sum->cpu_samples_expected, sum->hz, (unsigned long long)sum->lost,
		(unsigned long long)sum->throttled, (unsigned long long)sum->stops);
	/* A host that took the vCPUs away: cpu-clock counted that time as
	 * the threads', so the sample count runs over the CPU time. */
	if (sum->steal_share > 0.10 && sum->cpu_samples_expected >= sum->hz &&
	    (double)sum->cpu_samples > 1.1 * sum->cpu_samples_expected)
		fprintf(stderr,
			"diag-attach: warning: the hypervisor took %.0f%% of this machine's CPU time during "
			"the capture (steal in /proc/stat): perf counted it as the target's, so there are "
			"more CPU samples than its CPU time asks for; cpu.pprof's totals are weighed to the "
			"kernel's own\n",
			100 * sum->steal_share);
	/* Only when it moved the total by more than rounding. */
	if (sum->cpu_sampled_s > 0 && fabs(sum->cpu_weighed_s - sum->cpu_sampled_s) >= 0.01 * sum->cpu_sampled_s)
		fprintf(stderr,
			"diag-attach: cpu.pprof weighed to the threads' schedstat: %.2f s sampled, %.2f s "
			"counted by the kernel (%+.0f%%)\n",
			sum->cpu_sampled_s, sum->cpu_weighed_s,
			100.0 * (sum->cpu_weighed_s - sum->cpu_sampled_s) / sum->cpu_sampled_s);
	fprintf(stderr, "diag-attach: wall engine %s: %llu thread samples, %llu without a stack\n",
		sum->wall_engine, (unsigned long long)sum->thread_samples,
		(unsigned long long)sum->samples_without_stack);
	/* With per-CPU cpu-clock events such a thread's CPU time is sampled
	 * still; what it lacks is its switch-out samples. */
	if (sum->threads_without_event && sum->per_cpu_events)
		fprintf(stderr,
			"diag-attach: warning: %llu thread(s) got no perf event (descriptor limit?): their "
			"wall-clock samples asleep come from /proc, not from the kernel's switch-out samples\n",
			(unsigned long long)sum->threads_without_event);
	else if (sum->threads_without_event)
		fprintf(stderr,
			"diag-attach: warning: %llu thread(s) got no perf event (descriptor limit?): their "
			"CPU time is missing from cpu.pprof\n",
			(unsigned long long)sum->threads_without_event);
	/* Below a second of samples the ratio is noise of /proc's 10 ms ticks. */
	if (share < 90.0 && sum->cpu_samples_expected >= sum->hz && sum->cpu_sampled_s > 0)
		fprintf(stderr,
			"diag-attach: warning: the CPU profile holds only %.0f%% of the samples the target's "
			"CPU time asks for; its totals are weighed to schedstat, its shares rest on fewer "
			"samples\n",
			share);
	else if (share < 90.0 && sum->cpu_samples_expected >= sum->hz)
		fprintf(stderr,
			"diag-attach: warning: the CPU profile holds only %.0f%% of the samples the target's "
			"CPU time asks for; read its shares, not its totals\n",
			share);
}

static int run_capture(int argc, char **argv, bool dump)
{
	/* First of all: a stop signal must never kill us once we may hold
	 * something, and the earlier the handlers are in, the smaller the
	 * window in which it still could (before main, it always can). */
	cli_install_stop_handlers(on_stop_signal);
	capture_trace_phase("started");
	struct capture_options opt;
	bool quiet = false;
	const char *output = NULL; /* NULL: ./diag-PID-YYYYmmdd-HHMMSS */
	char **launch_argv;
	static pid_t pids[GROUP_MAX_PROCESSES];
	size_t npids = 0;
	bool follow = false;
	if (capture_parse_options(argc, argv, dump, &opt, &output, &quiet, &launch_argv, pids, &npids,
			  &follow) < 0)
		return EXIT_USAGE;
	opt.stop_requests = &capture_stop_requests;
	if (dump)
		opt.dump_to = stdout;
	if (!quiet && !dump)
		opt.progress = show_progress;
	opt.leak_found = show_leak;
	opt.callback_arg = &quiet;

	/* Refuse what we can refuse without touching the target or the disk. */
	struct attach_probe pr;
	int refused = launch_argv ? EXIT_OK : capture_check_target(&opt.pid, opt.force, &pr);
	if (refused != EXIT_OK)
		return refused;
	opt.not_dumpable = !launch_argv && !pr.dumpable;

	char default_dir[64], tmp_dir[4096];
	const char *dir = output;
	const char *file_format = dump ? NULL : file_format_of(output);
	if (output && strcmp(output, "-") == 0) {
		die_message("-o -: a bundle is a directory, not standard output");
		hint_message("-o out.svg or -o out.speedscope.json for one file; diag-attach export DIR "
			     "-o - for a profile on standard output");
		return EXIT_USAGE;
	}
	if (npids > 1 || follow) {
		if (file_format) {
			die_message("-o %s writes one file: a capture of several processes writes a "
				    "bundle directory", output);
			hint_message("capture into a directory, then diag-attach export DIR -o %s", output);
			return EXIT_USAGE;
		}
		opt.stop_requests = NULL;
		struct group_request g = {.pids = pids, .npids = npids, .follow = follow,
					  .launch_argv = launch_argv, .output = output, .quiet = quiet};
		return group_capture_run(&opt, &g);
	}
	if (file_format && (opt.leak_watch || opt.with_binaries_cap)) {
		die_message("-o %s writes one file: --leak-watch and --with-binaries need a bundle "
			    "directory", output);
		return EXIT_USAGE;
	}
	if (file_format) {
		/* The file's place must take it before anything is captured:
		 * never a capture whose result has nowhere to go. */
		struct output_file of;
		int e = output_file_open(&of, output);
		if (e < 0) {
			die_message("cannot write '%s': %s", output, output_file_strerror(e));
			return EXIT_WRITE_FAILED;
		}
		output_file_close(&of, -ECANCELED);
		/* The bundle it comes from: private (mkdtemp, 0700), removed
		 * once the file is written. */
		const char *base = getenv("TMPDIR");
		snprintf(tmp_dir, sizeof(tmp_dir), "%s/diag-attach-XXXXXX", base && *base ? base : "/tmp");
		if (!mkdtemp(tmp_dir)) {
			die_message("cannot create a temporary directory for the capture: %s", strerror(errno));
			return EXIT_OUTPUT_DIR;
		}
		dir = tmp_dir;
	}
	if (output && !file_format && capture_refuse_foreign_dir(output) != EXIT_OK)
		return EXIT_OUTPUT_DIR;
	if (launch_argv && output && !file_format) {
		/* A directory that will not take the bundle (not empty, a
		 * symlink, unwritable) refuses before the command starts:
		 * created and given up once, as the capture will create it. */
		struct stat pst;
		bool had = lstat(output, &pst) == 0;
		struct bundle *probe;
		int e = bundle_create(output, &probe);
		if (e < 0)
			return capture_output_error(output, had, e);
		bundle_abandon(probe);
		if (!had)
			rmdir(output);
	}
	/* Started only now: whatever of ours could refuse has. From here on
	 * our failures are printed and the exit status is the command's. */
	struct launch launched = {.status_fd = -1};
	if (launch_argv) {
		int e = launch_start(launch_argv, &launched);
		if (e < 0) {
			die_message("cannot run '%s': %s", launch_argv[0],
				    e == -ENOENT ? "command not found" : strerror(-e));
			if (file_format)
				rmdir(dir);
			return launch_failure_exit(e);
		}
		opt.pid = launched.pid;
		launched_now = &launched;
		opt.ready = let_launched_run;
		if (!quiet)
			fprintf(stderr, "diag-attach: started %s as pid %d\n", launch_argv[0], (int)opt.pid);
		refused = capture_check_target(&opt.pid, opt.force, &pr);
		if (refused != EXIT_OK) {
			if (file_format)
				rmdir(dir);
			return launch_finish(&launched, refused, quiet);
		}
		opt.not_dumpable = !pr.dumpable;
	}
	if (!dir && !dump) {
		capture_default_output(opt.pid, default_dir, sizeof(default_dir));
		dir = default_dir;
	}
	struct stat st;
	bool existed = dir && !file_format && lstat(dir, &st) == 0;
	if (dir && !file_format && capture_refuse_foreign_dir(dir) != EXIT_OK)
		return launch_argv ? launch_finish(&launched, EXIT_OUTPUT_DIR, quiet) : EXIT_OUTPUT_DIR;

	struct capture_session *s = NULL;
	enum capture_stage stage;
	int r = capture_session_new(&opt, dir, &s, &stage);
	if (r < 0) {
		if (file_format)
			rmdir(dir);
		int code = stage == CAPTURE_STAGE_OUTPUT ? capture_output_error(dir, existed, r)
							 : capture_error_exit(opt.pid, dir, stage, r);
		return launch_argv ? launch_finish(&launched, code, quiet) : code;
	}
	/* If we are ever stopped or hung while holding the target, a separate
	 * process kills us, which releases it (the kernel detaches a dead
	 * tracer's tracees). */
	if (opt.watchdog_ms && attach_watchdog_start(opt.watchdog_ms) < 0 && !quiet)
		die_message("warning: could not start the watchdog; continuing without it");
	/* Killed by it, we can write nothing; it then runs us once more to
	 * give the bundle a manifest that says so (watchdog_epilogue.c). Not
	 * for a single output file: its bundle is a directory of our own. */
	if (attach_watchdog_running() && dir && !file_format)
		watchdog_epilogue_arm(s, dir);
	capture_trace_phase("watchdog started");

	int exit_code = EXIT_OK;
	r = capture_session_run(s);
	if (r == 0 && !quiet && capture_session_target_exited(s))
		fprintf(stderr, "diag-attach: target pid %d exited during the capture\n", (int)opt.pid);
	if (r == 0 && !quiet) {
		struct capture_summary sum;
		capture_session_summary(s, &sum);
		print_summary(&sum);
	}
	if (r == 0 && launch_argv)
		note_launch(s, &launched, launch_argv);
	if (r == 0)
		r = capture_session_finish(s);
	if (r < 0) {
		exit_code = capture_error_exit(opt.pid, dir, capture_session_stage(s), r);
		/* Nothing finished: leave no directory behind that we made. */
		capture_session_free(s);
		s = NULL;
		if (file_format)
			cli_remove_tree(dir);
		else if (dir && !existed)
			rmdir(dir);
	} else {
		struct capture_summary sum;
		capture_session_summary(s, &sum);
		print_losses(&sum);
		/* A dump's standard output is the dump itself. */
		if (file_format) {
			capture_session_free(s);
			s = NULL;
			exit_code = export_run(dir, file_format, NULL, NULL, false, output);
			if (exit_code == EXIT_OK)
				exit_code = capture_print_bundle_path(output);
			cli_remove_tree(dir);
		} else if (!dump)
			exit_code = capture_print_bundle_path(dir);
		else if (dir && !quiet)
			fprintf(stderr, "diag-attach: bundle written to %s\n", dir);
		/* The policy at attach, applied to what the target became. */
		if (sum.ended_by_exec_not_dumpable && exit_code == EXIT_OK) {
			die_message("pid %d exec'd a program that is not dumpable (setuid, or "
				    "PR_SET_DUMPABLE 0): the capture ended there",
				    (int)opt.pid);
			hint_message("the bundle holds what came before the exec; --force captures on");
			exit_code = EXIT_NOT_DUMPABLE;
		}
	}
	attach_watchdog_stop();
	capture_session_free(s);
	capture_trace_phase("done");
	return launch_argv ? launch_finish(&launched, exit_code, quiet) : exit_code;
}

int cmd_capture(int argc, char **argv)
{
	return run_capture(argc, argv, false);
}

int cmd_dump(int argc, char **argv)
{
	return run_capture(argc, argv, true);
}
