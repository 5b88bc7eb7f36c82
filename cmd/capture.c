/* diag-attach -p PID [--snapshot] [-o DIR] ...: option parsing, the
 * checks that refuse bad input before the target is touched, and the
 * messages and exit statuses of a capture. The capture itself is the
 * engine's (cmd/engine/engine.h). */
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
#include "bundle/read/output_file.h"
#include "bundle/text.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/export.h"
#include "cmd/cli/capture_errors.h"
#include "cmd/cli/launch.h"
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


static void usage(FILE *f)
{
	fputs("Usage:\n"
	      " diag-attach dump -p PID [--json]      print every thread's stack, grouped\n"
	      " diag-attach -p PID [options]          sample stacks and counters into a bundle\n"
	      " diag-attach -p PID,PID [--subprocesses] [options]  several processes, one bundle\n"
	      " diag-attach [options] -- CMD ARGS...  start CMD, capture it until it exits,\n"
	      "                                       exit as it did\n"
	      " diag-attach -p PID --snapshot [options] one consistent snapshot of every thread\n"
	      " diag-attach verify DIR                check a bundle's members against its manifest\n"
	      " diag-attach report DIR [--json|--html FILE]  what the process was doing\n"
	      " diag-attach diff A B                  compare two bundles of the same program\n"
	      " diag-attach export DIR --format collapsed|speedscope  for other viewers\n"
	      " diag-attach pem DIR / unpem FILE -o DIR  carry a bundle through logs\n"
	      " diag-attach top -p PID               live view of hot functions and threads\n"
	      "\n"
	      "Attach to a running process without restarting it and capture what is needed to\n"
	      "debug it: every thread's stack, CPU and wall-clock profiles, a /proc timeline.\n"
	      "The target is only paused while registers and stacks are copied.\n"
	      "\n"
	      "Options:\n"
	      " -p, --pid PID[,PID...]   process to capture; several (a list, or -p repeated)\n"
	      "                          are captured side by side into one bundle, each\n"
	      "                          sample labelled pid and process\n"
	      "     --subprocesses       also capture every child the processes have or fork\n"
	      "                          (and theirs), from the moment each is found (polled\n"
	      "                          every 50 ms); with -- CMD, the command's\n"
	      "     --max-processes N    with --subprocesses, capture at most N at once\n"
	      "                          (default 32; the others are said, not captured)\n"
	      " -o, --output DIR         bundle directory (absent or empty);\n"
	      "                          default ./diag-PID-YYYYmmdd-HHMMSS. A name ending in\n"
	      "                          .svg or .speedscope.json writes only that file: the\n"
	      "                          CPU flame graph (the snapshot's without samples), as\n"
	      "                          diag-attach export would, and no bundle\n"
	      "     --snapshot           take one thread snapshot and exit\n"
	      " -d, --duration TIME      capture length (10, 500ms, 30s, 1h30m); default until\n"
	      "                          Ctrl-C, SIGTERM, SIGHUP (not under nohup) or\n"
	      "                          target exit\n"
	      " -F, --frequency HZ       stack samples per second (default 99; 0: none)\n"
	      "     --cpu-engine auto|perf|ptrace  where CPU samples come from: perf events\n"
	      "                          (a cpu-clock event per thread: every HZ-th of its CPU\n"
	      "                          time, kernel time included, no stop; each thread's\n"
	      "                          total weighed to its schedstat), or ptrace stops\n"
	      "                          weighted by each thread's CPU time since its last\n"
	      "                          sample; auto (default): perf, ptrace where refused.\n"
	      "                          At the end a line on stderr gives the engine, the CPU\n"
	      "                          samples taken against what the target's CPU time asks\n"
	      "                          for, those lost or throttled, and the stops\n"
	      "     --no-kernel-frames   leave the kernel call chain out of CPU samples (kernel\n"
	      "                          time is still sampled, at the syscall that spent it)\n"
	      "     --unwind-later SIZE  with perf events, keep up to SIZE of sampled stacks\n"
	      "                          (default 64M) and unwind them after the capture, as\n"
	      "                          perf record leaves them to perf report: the worker\n"
	      "                          does not unwind them while the target is measured.\n"
	      "                          Past SIZE, and with 0, samples are unwound as they come\n"
	      "     --wake-hz HZ         with perf events, wake only HZ times a second to read\n"
	      "                          /proc and drain the rings, and compute the wall-clock\n"
	      "                          ticks between wakes from the kernel's records of each\n"
	      "                          thread's switches in and out of a CPU and its CPU\n"
	      "                          samples. 0 (default), or HZ at -F or above: wake at\n"
	      "                          every tick\n"
	      "     --cpu-events auto|per-cpu|per-thread  perf's CPU-time events: per-cpu, one\n"
	      "                          per CPU keeping the target's samples, so the kernel\n"
	      "                          restarts no timer as a target thread switches in or\n"
	      "                          out (needs root or CAP_PERFMON, else per-thread; not\n"
	      "                          with --wake-hz); per-thread, one per thread and CPU.\n"
	      "                          auto (default): per-cpu for one process, per-thread\n"
	      "                          for several (each would sample every CPU)\n"
	      "     --wall-engine auto|ptrace  where wall-clock samples come from: auto (default)\n"
	      "                          with perf events stops no thread: each thread's latest\n"
	      "                          perf sample (taken as it ran, or as it left the CPU),\n"
	      "                          a sleeping thread's resting stack read from /proc, and\n"
	      "                          a thread that has not run keeps its last (a sleeper\n"
	      "                          whose /proc stack did not unwind, as code with frame\n"
	      "                          pointers, is stopped once, where that is harmless);\n"
	      "                          ptrace stops each thread that ran since the last tick\n"
	      " -i, --interval TIME      timeline interval (default 1s)\n"
	      "     --leak-watch         fit growth slopes and dump evidence when a leak starts:\n"
	      "                          rss +16 MiB at >= 256 KiB/s over >= 30 s still rising\n"
	      "                          (1 MiB/s fires within a minute), threads +4 at >= 0.05/s\n"
	      "                          over >= 30 s, fds +16 at >= 0.05/s, children +4 at\n"
	      "                          >= 0.01/s, goroutines +64 at >= 0.2/s (man page: the rule)\n"
	      "     --growth             record where memory grows (page faults, with stacks) into\n"
	      "                          growth.pprof; on with --leak-watch\n"
	      "     --leak-threshold NAME=SLOPE_PER_S:MIN_DELTA  override a leak floor (repeatable)\n"
	      "     --leak-window N      shortest leak-fit window in samples (default 12)\n"
	      "     --leak-repeat        let a counter fire more than once\n"
	      "     --annotate KEY=VALUE record a note in the manifest (repeatable)\n"
	      "     --stack-bytes N      cap on each thread's stack copy (default 524288)\n"
	      "     --stop-timeout MS    deadline for all threads to stop (default 100)\n"
	      "     --debuginfod         allow DEBUGINFOD_URLS lookups (can stall for minutes)\n"
	      "     --record-environ     also record the target's environment in the manifest\n"
	      "                          (values of credential-like names redacted)\n"
	      "     --force              capture a process that is not dumpable (setuid, or\n"
	      "                          PR_SET_DUMPABLE 0): it asked not to be inspected\n"
	      "     --symbols full|names full (default): function, file:line and inline\n"
	      "                          frames from DWARF; names: function names from symbol\n"
	      "                          tables only, skipping compressed DWARF (faster)\n"
	      "     --with-binaries[=CAP] copy debug files (or the ELF) of every module into\n"
	      "                          binaries/<build-id>/, at most CAP bytes (default 1G), so\n"
	      "                          PPROF_BINARY_PATH=DIR/binaries works on another host\n"
	      "     --no-interrupt-blocked  with --snapshot: read threads blocked in a syscall\n"
	      "                          from /proc instead of stopping them (otherwise each\n"
	      "                          such epoll_wait, sigtimedwait or semop sees one EINTR).\n"
	      "                          The EINTR rule: a sampling capture never makes a call\n"
	      "                          fail with EINTR. Its ticks stop no thread (see\n"
	      "                          --wall-engine) but to read the registers of one asleep\n"
	      "                          in a call the kernel restarts, once; its final capture,\n"
	      "                          and the ticks of --wall-engine ptrace, stop no thread\n"
	      "                          in such a call (nor in a socket call, which returns\n"
	      "                          EINTR when it has a timeout), and with this option\n"
	      "                          read every blocked thread from /proc\n"
	      "     --watchdog MS        kill diag-attach itself if it ever holds the target\n"
	      "                          longer than MS (default 1000; 0 = off); the bundle\n"
	      "                          then gets a manifest that says so (exit 137)\n"
	      " -q, --quiet              no progress line\n"
	      " -h, --help               display this help\n"
	      " -V, --version            display version\n"
	      "\n"
	      "Exit status:\n"
	      "  (with -- CMD: CMD's, or 128 + the signal that ended it, once our own\n"
	      "  refusals before starting it are passed; our failures after are printed)\n"
	      "  0  bundle written (also when the target exited during the capture)\n"
	      "  1  verify: bundle damaged\n"
	      "  2  usage error\n"
	      "  3  no such process\n"
	      "  4  the process is a zombie\n"
	      "  5  the process is a kernel thread\n"
	      "  6  not permitted to trace the process\n"
	      "  7  the process is already traced by another tracer\n"
	      "  8  the process is diag-attach itself or its tracer\n"
	      "  9  output directory exists and is not empty, or is unusable\n"
	      " 10  writing the bundle failed (disk full, I/O error), or printing its path\n"
	      " 11  internal error\n"
	      " 12  interrupted while writing; bundle abandoned (no manifest)\n"
	      " 13  the process is not dumpable; --force captures it anyway\n"
	      " 14  /proc belongs to another pid namespace (mount one for this namespace)\n"
	      " 15  perf events refused and --cpu-engine perf asked for them\n"
	      "126  -- CMD: CMD is not executable (as a shell says it)\n"
	      "127  -- CMD: no such command (as a shell says it)\n"
	      "137  killed by the watchdog (--watchdog), which released the target; the\n"
	      "     bundle gets a manifest that says so (capture.ended_by) a moment later\n"
	      "141  standard output's reader went away (| head): quietly, as SIGPIPE would\n"
	      "     end it, the target released and any bundle whole\n"
	      "\n"
	      "See diag-attach(1).\n",
	      f);
}

static void dump_usage(FILE *f)
{
	fputs("Usage:\n"
	      " diag-attach dump -p PID [options]\n\n"
	      "Print every thread's stack to standard output, threads with identical stacks\n"
	      "grouped (the biggest group first), each with its state, system call and wait\n"
	      "channel. All threads are held at once for the copy, as with --snapshot, then\n"
	      "released; names and file:line are resolved after. A Go program's goroutines\n"
	      "follow, as its runtime's own dump prints them. No bundle unless -o is given.\n"
	      "\n"
	      "Options:\n"
	      " -p, --pid PID            process to dump (a thread id means its process)\n"
	      "     --json               one JSON object instead of text: pid, comm, exe,\n"
	      "                          captured_at, held_us, threads,\n"
	      "                          threads_interrupted_in_syscall, and groups[]: count,\n"
	      "                          threads[] (tid, comm, state, syscall, wchan),\n"
	      "                          frames[] (address, function, offset, file, line,\n"
	      "                          inlined, module, build_id; unnamed: module+0xOFF),\n"
	      "                          truncated, no_stack\n"
	      " -o, --output DIR         also write the snapshot as a bundle in DIR\n"
	      "     --symbols full|names full (default): function, file:line and inline\n"
	      "                          frames (as eu-stack -i -s); names: function names\n"
	      "                          from symbol tables only (as eu-stack), faster\n"
	      "     --no-interrupt-blocked  read threads blocked in a syscall from /proc\n"
	      "                          instead of stopping them (otherwise each such\n"
	      "                          epoll_wait, sigtimedwait or semop sees one EINTR,\n"
	      "                          as under eu-stack or gdb; the count is printed)\n"
	      "     --stack-bytes N      cap on each thread's stack copy (default 524288)\n"
	      "     --stop-timeout MS    deadline for all threads to stop (default 100)\n"
	      "     --debuginfod         allow DEBUGINFOD_URLS lookups (can stall for minutes)\n"
	      "     --force              dump a process that is not dumpable\n"
	      "     --watchdog MS        kill diag-attach itself if it ever holds the target\n"
	      "                          longer than MS (default 1000; 0 = off); the bundle\n"
	      "                          then gets a manifest that says so (exit 137)\n"
	      "     --annotate, --record-environ, --with-binaries: as for a capture, with -o\n"
	      " -q, --quiet              no messages but errors\n"
	      " -h, --help               display this help\n"
	      "\n"
	      "Exit status: as for a capture (diag-attach --help): 0 dump printed (and bundle\n"
	      "written), 2 usage, 3 to 9, 11, 13 and 14 as there, 10 printing the dump or\n"
	      "writing the bundle failed, 12 interrupted.\n"
	      "\n"
	      "See diag-attach(1).\n",
	      f);
}

enum {
	OPT_SNAPSHOT = 1000,
	OPT_ANNOTATE,
	OPT_LEAK_WATCH,
	OPT_LEAK_THRESHOLD,
	OPT_GROWTH,
	OPT_LEAK_WINDOW,
	OPT_LEAK_REPEAT,
	OPT_STACK_BYTES,
	OPT_STOP_TIMEOUT,
	OPT_DEBUGINFOD,
	OPT_SYMBOLS,
	OPT_WITH_BINARIES,
	OPT_NO_INTERRUPT_BLOCKED,
	OPT_WATCHDOG,
	OPT_RECORD_ENVIRON,
	OPT_FORCE,
	OPT_CPU_ENGINE,
	OPT_NO_KERNEL_FRAMES,
	OPT_WALL_ENGINE,
	OPT_CPU_EVENTS,
	OPT_JSON,
	OPT_SUBPROCESSES,
	OPT_MAX_PROCESSES,
	OPT_UNWIND_LATER,
	OPT_WAKE_HZ,
};

static int parse_uint(const char *s, unsigned long max, unsigned long *ret)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (end == s || *end || errno || v > max || s[0] == '-')
		return -EINVAL;
	*ret = v;
	return 0;
}

static int parse_size(const char *s, uint64_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s || errno || s[0] == '-')
		return -EINVAL;
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	else if (*end)
		return -EINVAL;
	if (shift && end[1])
		return -EINVAL;
	if (v > (UINT64_MAX >> shift) || v == 0)
		return -EINVAL;
	*ret = (uint64_t)v << shift;
	return 0;
}

/* Options that shape a sampled capture, which a dump (one snapshot) refuses
 * rather than ignores. */
static bool sampling_only(int c)
{
	switch (c) {
	case 'd': case 'F': case 'i': case OPT_LEAK_WATCH: case OPT_LEAK_THRESHOLD: case OPT_GROWTH:
	case OPT_LEAK_WINDOW: case OPT_LEAK_REPEAT: case OPT_CPU_ENGINE:
	case OPT_NO_KERNEL_FRAMES: case OPT_WALL_ENGINE: case OPT_UNWIND_LATER: case OPT_WAKE_HZ:
	case OPT_CPU_EVENTS:
		return true;
	}
	return false;
}

/* The index in words (n of them) of arg, the value of the keyword option
 * --name; -1 after saying which words it takes ("--cpu-engine: 'x' is not
 * auto, perf or ptrace"). words is indexed by the option's enum. */
static int pick_word(const char *name, const char *arg, const char *const *words, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(arg, words[i]) == 0)
			return (int)i;
	char list[128] = "";
	size_t len = 0;
	for (size_t i = 0; i < n && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
					i == 0 ? "" : i + 1 == n ? " or " : ", ", words[i]);
	die_message("--%s: '%s' is not %s", name, arg, list);
	return -1;
}

static const char *const CPU_ENGINE_WORDS[] = {
	[CAPTURE_CPU_AUTO] = "auto", [CAPTURE_CPU_PERF] = "perf", [CAPTURE_CPU_PTRACE] = "ptrace"};
static const char *const CPU_EVENTS_WORDS[] = {[CAPTURE_CPU_EVENTS_AUTO] = "auto",
					       [CAPTURE_CPU_EVENTS_PER_THREAD] = "per-thread",
					       [CAPTURE_CPU_EVENTS_PER_CPU] = "per-cpu"};
static const char *const WALL_ENGINE_WORDS[] = {[CAPTURE_WALL_AUTO] = "auto",
						[CAPTURE_WALL_PTRACE] = "ptrace"};

/* -p PID, -p PID,PID..., repeated: into g (duplicates dropped). */
static int take_pids(const char *arg, pid_t *pids, size_t *n)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", arg);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long v;
		if (parse_uint(tok, 0x7fffffff, &v) < 0 || v == 0) {
			die_message("invalid pid '%s'", tok);
			return -1;
		}
		bool dup = false;
		for (size_t i = 0; i < *n; i++)
			dup = dup || pids[i] == (pid_t)v;
		if (dup)
			continue;
		if (*n == GROUP_MAX_PROCESSES) {
			die_message("too many processes (at most %d)", GROUP_MAX_PROCESSES);
			return -1;
		}
		pids[(*n)++] = (pid_t)v;
	}
	if (!*n) {
		die_message("invalid pid '%s'", arg);
		return -1;
	}
	return 0;
}

static int parse_options(int argc, char **argv, bool dump, struct capture_options *o,
			 const char **ret_output, bool *ret_quiet, char ***ret_launch,
			 pid_t *pids, size_t *npids, bool *follow)
{
	static const struct option longopts[] = {
		{"pid", required_argument, NULL, 'p'},
		{"output", required_argument, NULL, 'o'},
		{"snapshot", no_argument, NULL, OPT_SNAPSHOT},
		{"duration", required_argument, NULL, 'd'},
		{"frequency", required_argument, NULL, 'F'},
		{"interval", required_argument, NULL, 'i'},
		{"quiet", no_argument, NULL, 'q'},
		{"annotate", required_argument, NULL, OPT_ANNOTATE},
		{"leak-watch", no_argument, NULL, OPT_LEAK_WATCH},
		{"growth", no_argument, NULL, OPT_GROWTH},
		{"leak-threshold", required_argument, NULL, OPT_LEAK_THRESHOLD},
		{"leak-window", required_argument, NULL, OPT_LEAK_WINDOW},
		{"leak-repeat", no_argument, NULL, OPT_LEAK_REPEAT},
		{"stack-bytes", required_argument, NULL, OPT_STACK_BYTES},
		{"stop-timeout", required_argument, NULL, OPT_STOP_TIMEOUT},
		{"debuginfod", no_argument, NULL, OPT_DEBUGINFOD},
		{"symbols", required_argument, NULL, OPT_SYMBOLS},
		{"with-binaries", optional_argument, NULL, OPT_WITH_BINARIES},
		{"no-interrupt-blocked", no_argument, NULL, OPT_NO_INTERRUPT_BLOCKED},
		{"watchdog", required_argument, NULL, OPT_WATCHDOG},
		{"record-environ", no_argument, NULL, OPT_RECORD_ENVIRON},
		{"force", no_argument, NULL, OPT_FORCE},
		{"cpu-engine", required_argument, NULL, OPT_CPU_ENGINE},
		{"no-kernel-frames", no_argument, NULL, OPT_NO_KERNEL_FRAMES},
		{"wall-engine", required_argument, NULL, OPT_WALL_ENGINE},
		{"cpu-events", required_argument, NULL, OPT_CPU_EVENTS},
		{"unwind-later", required_argument, NULL, OPT_UNWIND_LATER},
		{"wake-hz", required_argument, NULL, OPT_WAKE_HZ},
		{"json", no_argument, NULL, OPT_JSON},
		{"subprocesses", no_argument, NULL, OPT_SUBPROCESSES},
		{"max-processes", required_argument, NULL, OPT_MAX_PROCESSES},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof(*o));
	o->pid = -1;
	o->frequency_hz = 99;
	o->interval_ns = 1000000000ull;
	o->max_processes = GROUP_DEFAULT_LIVE;
	o->leak_window = 12;
	o->watchdog_ms = 1000;
	attach_options_init(&o->attach);

	int c;
	unsigned long v;
	o->snapshot = dump;
	while ((c = getopt_long(argc, argv, "p:o:d:F:i:qhV", longopts, NULL)) != -1) {
		if (dump && sampling_only(c)) {
			const char *name = "?";
			for (const struct option *lo = longopts; lo->name; lo++)
				if (lo->val == c) {
					name = lo->name;
					break;
				}
			die_message("dump takes one snapshot: --%s is an option of a sampled capture",
				    name);
			hint_message("diag-attach -p PID [-d TIME] [-F HZ] ... samples into a bundle");
			return -1;
		}
		switch (c) {
		case OPT_JSON:
			if (!dump) {
				die_message("--json is an option of dump (and of report)");
				hint_message("diag-attach dump -p PID --json");
				return -1;
			}
			o->dump_json = true;
			break;
		case 'p':
			if (take_pids(optarg, pids, npids) < 0)
				return -1;
			if (dump && *npids > 1) {
				die_message("dump is of one process (%d and %d given)", (int)pids[0],
					    (int)pids[1]);
				return -1;
			}
			o->pid = pids[0];
			break;
		case OPT_SUBPROCESSES:
			if (dump) {
				die_message("dump is of one process: --subprocesses is an option of a capture");
				return -1;
			}
			*follow = true;
			break;
		case 'o':
			*ret_output = optarg;
			break;
		case OPT_SNAPSHOT:
			o->snapshot = true;
			break;
		case 'd':
			if (parse_duration_ns(optarg, &o->duration_ns) < 0 || o->duration_ns == 0) {
				die_message("invalid duration '%s'", optarg);
				hint_message("use seconds (10), or units: 500ms, 30s, 2m, 1h30m");
				return -1;
			}
			break;
		case OPT_MAX_PROCESSES:
			if (parse_uint(optarg, GROUP_MAX_PROCESSES, &v) < 0 || v == 0) {
				die_message("invalid --max-processes '%s' (1 to %d)", optarg,
					    GROUP_MAX_PROCESSES);
				return -1;
			}
			o->max_processes = (unsigned)v;
			break;
		case 'F':
			if (parse_uint(optarg, 10000, &v) < 0) {
				die_message("invalid frequency '%s' (0 to 10000 Hz)", optarg);
				return -1;
			}
			o->frequency_hz = (unsigned)v;
			break;
		case 'i':
			if (parse_duration_ns(optarg, &o->interval_ns) < 0 || o->interval_ns < 10000000ull) {
				die_message("invalid interval '%s' (at least 10ms)", optarg);
				return -1;
			}
			break;
		case 'q':
			*ret_quiet = true;
			break;
		case OPT_ANNOTATE:
			if (!strchr(optarg, '=') || optarg[0] == '=') {
				die_message("invalid annotation '%s': expected KEY=VALUE", optarg);
				return -1;
			}
			if (o->nannotations == MAX_ANNOTATIONS) {
				die_message("too many annotations (at most %d)", MAX_ANNOTATIONS);
				return -1;
			}
			o->annotations[o->nannotations++] = optarg;
			break;
		case OPT_LEAK_WATCH:
			o->leak_watch = true;
			break;
		case OPT_GROWTH:
			o->growth = true;
			break;
		case OPT_LEAK_THRESHOLD:
			if (o->nleak_thresholds == MAX_LEAK_THRESHOLDS) {
				die_message("too many leak thresholds");
				return -1;
			}
			struct leakwatch_threshold th;
			if (leakwatch_threshold_parse(optarg, &th) < 0 ||
			    timeline_counter_lookup(th.name) < 0) {
				die_message("invalid leak threshold '%s'", optarg);
				hint_message("NAME=SLOPE_PER_S:MIN_DELTA with a timeline counter name, "
					     "e.g. open_fds=0.05:16 or rss_bytes=16K:64M");
				return -1;
			}
			o->leak_thresholds[o->nleak_thresholds++] = optarg;
			break;
		case OPT_LEAK_WINDOW:
			if (parse_uint(optarg, 100000, &v) < 0 || v < 4) {
				die_message("invalid leak window '%s' (at least 4 samples)", optarg);
				return -1;
			}
			o->leak_window = (unsigned)v;
			break;
		case OPT_LEAK_REPEAT:
			o->leak_repeat = true;
			break;
		case OPT_STACK_BYTES:
			if (parse_uint(optarg, 64ul << 20, &v) < 0 || v < 4096) {
				die_message("invalid stack size '%s' (4096 to 67108864)", optarg);
				return -1;
			}
			o->attach.stack_bytes_max = v;
			break;
		case OPT_STOP_TIMEOUT:
			if (parse_uint(optarg, 10000, &v) < 0 || v == 0) {
				die_message("invalid stop timeout '%s' (1 to 10000 ms)", optarg);
				return -1;
			}
			o->attach.stop_timeout_ms = (unsigned)v;
			break;
		case OPT_DEBUGINFOD:
			o->debuginfod = true;
			break;
		case OPT_SYMBOLS:
			if (strcmp(optarg, "names") == 0) {
				o->names_only = true;
			} else if (strcmp(optarg, "full") != 0) {
				die_message("invalid --symbols '%s' (full or names)", optarg);
				return -1;
			}
			break;
		case OPT_NO_INTERRUPT_BLOCKED:
			o->attach.no_interrupt_blocked = true;
			break;
		case OPT_RECORD_ENVIRON:
			o->record_environ = true;
			break;
		case OPT_CPU_ENGINE: {
			int w = pick_word("cpu-engine", optarg, CPU_ENGINE_WORDS,
					  sizeof(CPU_ENGINE_WORDS) / sizeof(*CPU_ENGINE_WORDS));
			if (w < 0)
				return -1;
			o->cpu_engine = (enum capture_cpu_engine)w;
			break;
		}
		case OPT_NO_KERNEL_FRAMES:
			o->no_kernel_frames = true;
			break;
		case OPT_CPU_EVENTS: {
			int w = pick_word("cpu-events", optarg, CPU_EVENTS_WORDS,
					  sizeof(CPU_EVENTS_WORDS) / sizeof(*CPU_EVENTS_WORDS));
			if (w < 0)
				return -1;
			o->cpu_events = (enum capture_cpu_events)w;
			break;
		}
		case OPT_WALL_ENGINE: {
			int w = pick_word("wall-engine", optarg, WALL_ENGINE_WORDS,
					  sizeof(WALL_ENGINE_WORDS) / sizeof(*WALL_ENGINE_WORDS));
			if (w < 0)
				return -1;
			o->wall_engine = (enum capture_wall_engine)w;
			break;
		}
		case OPT_FORCE:
			o->force = true;
			break;
		case OPT_WATCHDOG:
			if (parse_uint(optarg, 600000, &v) < 0 || (v && v < 50)) {
				die_message("invalid watchdog limit '%s' (0 = off, or 50 to 600000 ms)", optarg);
				return -1;
			}
			o->watchdog_ms = (unsigned)v;
			break;
		case OPT_UNWIND_LATER:
			/* parse_size refuses 0, which here means "none". */
			if (strcmp(optarg, "0") == 0)
				o->unwind_later_bytes = 0;
			else if (parse_size(optarg, &o->unwind_later_bytes) < 0 ||
				 o->unwind_later_bytes > (16ull << 30)) {
				die_message("invalid size '%s' for --unwind-later", optarg);
				hint_message("bytes, or with a suffix: 64M, 1G (at most 16G; 0: unwind as "
					     "samples come)");
				return -1;
			}
			o->unwind_later_set = true;
			break;
		case OPT_WAKE_HZ:
			if (parse_uint(optarg, 10000, &v) < 0) {
				die_message("invalid rate '%s' for --wake-hz (0 to 10000)", optarg);
				return -1;
			}
			o->wake_hz = (unsigned)v;
			o->wake_hz_set = true;
			break;
		case OPT_WITH_BINARIES:
			o->with_binaries_cap = BINARIES_DEFAULT_CAP;
			if (optarg && parse_size(optarg, &o->with_binaries_cap) < 0) {
				die_message("invalid size '%s' for --with-binaries", optarg);
				hint_message("bytes, or with a suffix: 512M, 2G");
				return -1;
			}
			break;
		case 'h':
			if (dump)
				dump_usage(stdout);
			else
				usage(stdout);
			exit(EXIT_OK);
		case 'V':
			printf("diag-attach %s\n", DIAG_ATTACH_VERSION);
			exit(EXIT_OK);
		default:
			fputs("Try 'diag-attach --help' for more information.\n", stderr);
			return -1;
		}
	}
	/* After "--": a command to start and capture. */
	*ret_launch = NULL;
	if (optind < argc && optind > 1 && strcmp(argv[optind - 1], "--") == 0 && !dump)
		*ret_launch = argv + optind;
	if (optind < argc && !*ret_launch) {
		die_message("unexpected argument '%s'", argv[optind]);
		if (dump && strcmp(argv[optind - 1], "--") == 0)
			hint_message("dump is of a running process: diag-attach dump -p PID");
		return -1;
	}
	if (*ret_launch && o->pid > 0) {
		die_message("-p %d and a command to start: one or the other", (int)o->pid);
		return -1;
	}
	if ((*npids > 1 || *follow) && o->snapshot) {
		die_message("--snapshot is of one process: a capture of several samples them");
		return -1;
	}
	if (o->pid < 0 && !*ret_launch) {
		die_message("no process given");
		hint_message(dump ? "diag-attach dump -p PID [--json] [-o DIR]"
				  : "diag-attach -p PID [--snapshot] [-o DIR], or diag-attach [options] -- CMD ARGS...");
		return -1;
	}
	return 0;
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
	if (parse_options(argc, argv, dump, &opt, &output, &quiet, &launch_argv, pids, &npids,
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
