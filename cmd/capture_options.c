/* The options of a capture and of dump (diag-attach -p PID ..., dump -p
 * PID ...), their --help, and the checks that refuse a bad combination
 * before anything is touched. */
#include "cmd/capture_options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/capture_help.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/util.h"
#include "cmd/group_capture.h"
#include "timeline/leakwatch.h"
#include "timeline/proc_sampler.h"
#include "version.h"

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
		if (parse_uint_at_most(tok, 0x7fffffff, &v) < 0 || v == 0) {
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

int capture_parse_options(int argc, char **argv, bool dump, struct capture_options *o,
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
			if (parse_uint_at_most(optarg, GROUP_MAX_PROCESSES, &v) < 0 || v == 0) {
				die_message("invalid --max-processes '%s' (1 to %d)", optarg,
					    GROUP_MAX_PROCESSES);
				return -1;
			}
			o->max_processes = (unsigned)v;
			break;
		case 'F':
			if (parse_uint_at_most(optarg, 10000, &v) < 0) {
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
			if (parse_uint_at_most(optarg, 100000, &v) < 0 || v < 4) {
				die_message("invalid leak window '%s' (at least 4 samples)", optarg);
				return -1;
			}
			o->leak_window = (unsigned)v;
			break;
		case OPT_LEAK_REPEAT:
			o->leak_repeat = true;
			break;
		case OPT_STACK_BYTES:
			if (parse_uint_at_most(optarg, 64ul << 20, &v) < 0 || v < 4096) {
				die_message("invalid stack size '%s' (4096 to 67108864)", optarg);
				return -1;
			}
			o->attach.stack_bytes_max = v;
			break;
		case OPT_STOP_TIMEOUT:
			if (parse_uint_at_most(optarg, 10000, &v) < 0 || v == 0) {
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
			if (parse_uint_at_most(optarg, 600000, &v) < 0 || (v && v < 50)) {
				die_message("invalid watchdog limit '%s' (0 = off, or 50 to 600000 ms)", optarg);
				return -1;
			}
			o->watchdog_ms = (unsigned)v;
			break;
		case OPT_UNWIND_LATER:
			/* parse_size_bytes refuses 0, which here means "none". */
			if (strcmp(optarg, "0") == 0)
				o->unwind_later_bytes = 0;
			else if (parse_size_bytes(optarg, &o->unwind_later_bytes) < 0 ||
				 o->unwind_later_bytes > (16ull << 30)) {
				die_message("invalid size '%s' for --unwind-later", optarg);
				hint_message("bytes, or with a suffix: 64M, 1G (at most 16G; 0: unwind as "
					     "samples come)");
				return -1;
			}
			o->unwind_later_set = true;
			break;
		case OPT_WAKE_HZ:
			if (parse_uint_at_most(optarg, 10000, &v) < 0) {
				die_message("invalid rate '%s' for --wake-hz (0 to 10000)", optarg);
				return -1;
			}
			o->wake_hz = (unsigned)v;
			o->wake_hz_set = true;
			break;
		case OPT_WITH_BINARIES:
			o->with_binaries_cap = BINARIES_DEFAULT_CAP;
			if (optarg && parse_size_bytes(optarg, &o->with_binaries_cap) < 0) {
				die_message("invalid size '%s' for --with-binaries", optarg);
				hint_message("bytes, or with a suffix: 512M, 2G");
				return -1;
			}
			break;
		case 'h':
			if (dump)
				dump_usage(stdout);
			else
				capture_usage(stdout);
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
