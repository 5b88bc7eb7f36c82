/* diag-attach -p PID [--snapshot] [-o DIR] ...: option parsing, checks
 * that refuse bad input before the target is touched, and the snapshot
 * mode. The sampled mode lives in sampler.c. */
#include "capture.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "binaries.h"
#include "exit_codes.h"
#include "go_out.h"
#include "interp.h"
#include "snapshot_out.h"
#include "target_info.h"
#include "timeline/leakwatch.h"
#include "timeline/proc_sampler.h"
#include "attach/unwind.h"
#include "util.h"
#include "version.h"

volatile sig_atomic_t capture_stop_requests;

static void on_stop_signal(int sig)
{
	(void)sig;
	capture_stop_requests++;
}

static void install_signal_handlers(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	/* Restart syscalls: a signal must never cut a ptrace wait short in a
	 * way that leaves a thread held; the loops check the flag instead. */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* Never be stopped by job control while we may hold threads (a stopped
	 * tool freezes the target), and get EPIPE/EFBIG instead of dying. */
	signal(SIGTSTP, SIG_IGN);
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
}

static void usage(FILE *f)
{
	fputs("Usage:\n"
	      " diag-attach -p PID [options]          sample stacks and counters into a bundle\n"
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
	      " -p, --pid PID            process to capture\n"
	      " -o, --output DIR         bundle directory (absent or empty);\n"
	      "                          default ./diag-PID-YYYYmmdd-HHMMSS\n"
	      "     --snapshot           take one thread snapshot and exit\n"
	      " -d, --duration TIME      capture length (10, 500ms, 30s, 2m); default until\n"
	      "                          Ctrl-C, SIGTERM or target exit\n"
	      " -F, --frequency HZ       stack samples per second (default 99; 0: none)\n"
	      " -i, --interval TIME      timeline interval (default 1s)\n"
	      "     --leak-watch         fit growth slopes and dump evidence when a leak starts\n"
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
	      "     --no-interrupt-blocked  sample threads blocked in a syscall from /proc\n"
	      "                          without stopping them (otherwise epoll_wait,\n"
	      "                          sigtimedwait and semop see one EINTR per sample)\n"
	      "     --watchdog MS        kill diag-attach itself if it ever holds the target\n"
	      "                          longer than MS (default 1000; 0 = off)\n"
	      " -q, --quiet              no progress line\n"
	      " -h, --help               display this help\n"
	      " -V, --version            display version\n"
	      "\n"
	      "Exit status:\n"
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
	      "\n"
	      "See diag-attach(1).\n",
	      f);
}

enum {
	OPT_SNAPSHOT = 1000,
	OPT_ANNOTATE,
	OPT_LEAK_WATCH,
	OPT_LEAK_THRESHOLD,
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

static int parse_options(int argc, char **argv, struct capture_options *o)
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
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof(*o));
	o->pid = -1;
	o->frequency_hz = 99;
	o->interval_ns = 1000000000ull;
	o->leak_window = 12;
	o->watchdog_ms = 1000;
	attach_options_init(&o->attach);

	int c;
	unsigned long v;
	while ((c = getopt_long(argc, argv, "p:o:d:F:i:qhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_uint(optarg, 0x7fffffff, &v) < 0 || v == 0) {
				die_message("invalid pid '%s'", optarg);
				return -1;
			}
			o->pid = (pid_t)v;
			break;
		case 'o':
			o->output = optarg;
			break;
		case OPT_SNAPSHOT:
			o->snapshot = true;
			break;
		case 'd':
			if (parse_duration_ns(optarg, &o->duration_ns) < 0 || o->duration_ns == 0) {
				die_message("invalid duration '%s'", optarg);
				hint_message("use seconds (10), or a unit: 500ms, 30s, 2m");
				return -1;
			}
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
			o->quiet = true;
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
		case OPT_WITH_BINARIES:
			o->with_binaries_cap = BINARIES_DEFAULT_CAP;
			if (optarg && parse_size(optarg, &o->with_binaries_cap) < 0) {
				die_message("invalid size '%s' for --with-binaries", optarg);
				hint_message("bytes, or with a suffix: 512M, 2G");
				return -1;
			}
			break;
		case 'h':
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
	if (optind < argc) {
		die_message("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (o->pid < 0) {
		die_message("no process given");
		hint_message("diag-attach -p PID [--snapshot] [-o DIR]");
		return -1;
	}
	return 0;
}

/* Say why we cannot capture, in git's style: the failure, then what to do. */
int capture_refuse(pid_t pid, const struct attach_probe *pr)
{
	switch (pr->refusal) {
	case ATTACH_OK:
		return EXIT_OK;
	case ATTACH_NO_SUCH_PROCESS:
		die_message("cannot attach to pid %d: no such process", (int)pid);
		return EXIT_NO_PROCESS;
	case ATTACH_ZOMBIE:
		die_message("cannot attach to pid %d: it is a zombie (exited, not yet reaped)", (int)pid);
		hint_message("its parent has not called wait(); there is nothing left to capture");
		return EXIT_ZOMBIE;
	case ATTACH_KERNEL_THREAD:
		die_message("cannot attach to pid %d: it is a kernel thread", (int)pid);
		return EXIT_KERNEL_THREAD;
	case ATTACH_SELF:
		die_message("cannot attach to pid %d: it is diag-attach itself or traces it", (int)pid);
		hint_message("tracing ourselves or our own tracer would deadlock both; "
			     "give the pid of another process");
		return EXIT_SELF;
	case ATTACH_ALREADY_TRACED:
		die_message("cannot attach to pid %d: already traced by pid %d (%s)", (int)pid,
			    (int)pr->tracer_pid, pr->tracer_comm[0] ? pr->tracer_comm : "?");
		hint_message("a process has one tracer at a time; detach the debugger or wait for it");
		return EXIT_ALREADY_TRACED;
	case ATTACH_NOT_PERMITTED:
		die_message("cannot attach to pid %d: Operation not permitted", (int)pid);
		if (pr->yama_scope == 3)
			hint_message("kernel.yama.ptrace_scope=3 forbids all tracing until reboot");
		else if (pr->target_uid != getuid() && !pr->have_cap_sys_ptrace)
			hint_message("it belongs to uid %d and we run as uid %d; run as that user or "
				     "as root (CAP_SYS_PTRACE)",
				     (int)pr->target_uid, (int)getuid());
		else if (!pr->dumpable)
			hint_message("it is not dumpable (setuid or PR_SET_DUMPABLE 0); CAP_SYS_PTRACE is needed");
		else
			hint_message("kernel.yama.ptrace_scope=%d; run as root or with CAP_SYS_PTRACE",
				     pr->yama_scope);
		return EXIT_NOT_PERMITTED;
	case ATTACH_FOREIGN_PROCFS:
		die_message("cannot attach to pid %d: /proc does not belong to this pid namespace",
			    (int)pid);
		hint_message("its pids are not ours, so we could read one process and stop another; "
			     "mount a /proc for this namespace (unshare --mount-proc) or run from the host");
		return EXIT_FOREIGN_PROCFS;
	}
	return EXIT_INTERNAL;
}

int capture_check_target(pid_t pid, bool force, struct attach_probe *ret)
{
	if (attach_target_probe(pid, ret) < 0) {
		die_message("cannot inspect pid %d", (int)pid);
		return EXIT_INTERNAL;
	}
	if (ret->refusal != ATTACH_OK)
		return capture_refuse(pid, ret);
	/* A non-dumpable process (PR_SET_DUMPABLE 0, setuid, changed
	 * credentials) asked not to be inspected: no core dumps, no ptrace
	 * without CAP_SYS_PTRACE (the probe refuses it then). Root may still
	 * trace it, and a bundle is meant to travel (and top shows its
	 * stacks), so that takes an explicit --force. */
	if (!ret->dumpable && !force) {
		die_message("refusing to capture pid %d: it is not dumpable (setuid, or PR_SET_DUMPABLE 0)",
			    (int)pid);
		hint_message("it asked not to be inspected and may hold secrets; add --force to capture it anyway");
		return EXIT_NOT_DUMPABLE;
	}
	return EXIT_OK;
}

static void default_output(pid_t pid, char *buf, size_t size)
{
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	char stamp[32];
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, size, "diag-%d-%s", (int)pid, stamp);
}

static int output_error(const char *dir, bool existed, int err)
{
	switch (-err) {
	case EEXIST:
	case ENOTEMPTY:
		die_message("output directory '%s' exists and is not empty", dir);
		hint_message("give a new or empty directory with -o");
		break;
	case ELOOP:
		die_message("output path '%s' is a symbolic link; refusing to follow it", dir);
		break;
	case ENOTDIR:
		die_message("output path '%s' exists and is not a directory", dir);
		break;
	case EROFS:
	case EACCES:
	case EPERM:
		if (existed) {
			die_message("output directory '%s' is not writable: %s", dir, strerror(-err));
			break;
		}
		/* mkdir failed: the general message says it as it is */
		/* fall through */
	default:
		die_message("cannot create output directory '%s': %s", dir, strerror(-err));
		break;
	}
	return EXIT_OUTPUT_DIR;
}

int write_error_exit(const char *dir, int err)
{
	die_message("cannot write bundle '%s': %s", dir, strerror(-err));
	if (err == -ENOSPC || err == -EDQUOT || err == -EFBIG)
		hint_message("free some space or choose another -o; the directory has no manifest, so it is not a bundle");
	return EXIT_WRITE_FAILED;
}

/* The finished bundle's path is the one thing on stdout (for scripts:
 * dir=$(diag-attach ...)). If it cannot be written (/dev/full, a closed
 * pipe: SIGPIPE is ignored) the caller never learns where the bundle is,
 * so say so and fail like any other failed write, but make clear that the
 * bundle itself is complete. Checked here, not left to exit(), which would
 * drop the error silently. */
static int print_bundle_path(const char *dir)
{
	if (printf("%s\n", dir) >= 0 && fflush(stdout) == 0)
		return EXIT_OK;
	int e = errno;
	die_message("bundle '%s' is complete, but writing its path to standard output failed: %s",
		    dir, strerror(e));
	return EXIT_WRITE_FAILED;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void add_pause_stats(cJSON *o, uint64_t *holds_ns, size_t n)
{
	cJSON_AddNumberToObject(o, "stops", (double)n);
	if (n == 0)
		return;
	qsort(holds_ns, n, sizeof(*holds_ns), cmp_u64);
	size_t p99 = (n * 99 + 99) / 100;
	if (p99 >= n)
		p99 = n - 1;
	cJSON_AddNumberToObject(o, "p50_us", (double)holds_ns[n / 2] / 1000.0);
	cJSON_AddNumberToObject(o, "p99_us", (double)holds_ns[p99] / 1000.0);
	cJSON_AddNumberToObject(o, "max_us", (double)holds_ns[n - 1] / 1000.0);
}

static int run_snapshot(struct capture_session *s)
{
	struct process_capture pc = {0};
	struct attach_options ao = s->opt->attach;
	ao.read_wait_details = true;
	if (s->go)
		go_session_arm(s->go, &ao);

	int r = attach_capture(&s->target, &ao, &pc);
	if (s->go)
		go_session_released(s->go);
	/* Late threads must not sit stopped while we symbolize. */
	attach_settle_late(ao.stop_timeout_ms);
	trace_phase("captured and released");
	if (r < 0) {
		process_capture_release(&pc);
		if (r == -ESRCH) {
			die_message("cannot capture pid %d: the process exited", (int)s->target.pid);
			return EXIT_NO_PROCESS;
		}
		if (r == -EPERM || r == -EACCES) {
			struct attach_probe pr;
			attach_target_probe(s->target.pid, &pr);
			if (pr.refusal != ATTACH_OK)
				return capture_refuse(s->target.pid, &pr);
			die_message("cannot attach to pid %d: Operation not permitted", (int)s->target.pid);
			if (pr.yama_scope >= 1)
				hint_message("kernel.yama.ptrace_scope=%d; run as root or with CAP_SYS_PTRACE",
					     pr.yama_scope);
			else
				hint_message("the kernel refused ptrace: the process may belong to another user "
					     "namespace or be protected (e.g. a container's init)");
			return EXIT_NOT_PERMITTED;
		}
		die_message("cannot capture pid %d: %s", (int)s->target.pid, strerror(-r));
		return EXIT_INTERNAL;
	}

	/* The target runs again from here on: unwinding and symbols cost it
	 * nothing but the CPU we share with it. */
	int exit_code = EXIT_OK;
	struct symtab *st = NULL;
	r = snapshot_finish(s->bundle, "", &pc, NULL, s->interp, s->go,
			    cJSON_GetObjectItem(s->manifest, "target"), &st);
	if (r == 0 && s->opt->with_binaries_cap)
		r = binaries_copy(s->bundle, s->target.pid, st, s->opt->with_binaries_cap,
				  cJSON_AddObjectToObject(s->manifest, "binaries"));
	symtab_free(st);
	trace_phase("snapshot members written");
	if (r < 0) {
		exit_code = (r == -ENOMEM) ? EXIT_INTERNAL : write_error_exit(bundle_dir(s->bundle), r);
		if (r == -ENOMEM)
			die_message("out of memory while writing the snapshot");
		goto out;
	}
	cJSON_AddStringToObject(s->manifest, "mode", "snapshot");

	uint64_t max = 0, total = 0;
	size_t captured = 0;
	for (size_t i = 0; i < pc.nthreads; i++) {
		if (pc.threads[i].outcome != THREAD_CAPTURED)
			continue;
		captured++;
		total += pc.threads[i].hold_ns;
		if (pc.threads[i].hold_ns > max)
			max = pc.threads[i].hold_ns;
	}
	cJSON *pause = cJSON_AddObjectToObject(s->manifest, "pause");
	cJSON_AddNumberToObject(pause, "threads", (double)captured);
	cJSON_AddNumberToObject(pause, "process_hold_us", (double)pc.hold_ns / 1000.0);
	cJSON_AddNumberToObject(pause, "thread_hold_max_us", (double)max / 1000.0);
	cJSON_AddNumberToObject(pause, "thread_hold_total_us", (double)total / 1000.0);
	cJSON_AddNumberToObject(pause, "late_threads", (double)pc.nlate);
	cJSON_AddNumberToObject(pause, "exited_threads", (double)pc.ngone);
out:
	process_capture_release(&pc);
	return exit_code;
}

static cJSON *annotations_json(const struct capture_options *o)
{
	cJSON *a = cJSON_CreateObject();
	for (size_t i = 0; a && i < o->nannotations; i++) {
		const char *eq = strchr(o->annotations[i], '=');
		char key[256];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - o->annotations[i]), o->annotations[i]);
		cJSON_DeleteItemFromObject(a, key);
		cJSON_AddStringToObject(a, key, eq + 1);
	}
	return a;
}

static cJSON *initial_manifest(struct capture_session *s)
{
	cJSON *m = cJSON_CreateObject();
	if (!m)
		return NULL;
	char id[37];
	make_uuid(id);
	cJSON_AddStringToObject(m, "bundle_id", id);
	cJSON *tool = cJSON_AddObjectToObject(m, "tool");
	cJSON_AddStringToObject(tool, "name", "diag-attach");
	cJSON_AddStringToObject(tool, "version", DIAG_ATTACH_VERSION);
	cJSON *target = target_info_json(&s->target, s->opt->record_environ);
	if (target && s->go)
		go_session_describe(s->go, target);
	cJSON_AddItemToObject(m, "target", target);
	cJSON_AddItemToObject(m, "host", host_info_json());
	char when[32];
	format_rfc3339_ms(s->started_wall_ns, when);
	cJSON_AddStringToObject(m, "started_at", when);
	cJSON_AddItemToObject(m, "annotations", annotations_json(s->opt));
	return m;
}

int cmd_capture(int argc, char **argv)
{
	/* First of all: a stop signal must never kill us once we may hold
	 * something, and the earlier the handlers are in, the smaller the
	 * window in which it still could (before main, it always can). */
	install_signal_handlers();
	trace_phase("started");
	struct capture_options opt;
	if (parse_options(argc, argv, &opt) < 0)
		return EXIT_USAGE;

	/* Refuse what we can refuse without touching the target or the disk. */
	struct attach_probe pr;
	int refused = capture_check_target(opt.pid, opt.force, &pr);
	if (refused != EXIT_OK)
		return refused;

	char default_dir[64];
	const char *dir = opt.output;
	if (!dir) {
		default_output(opt.pid, default_dir, sizeof(default_dir));
		dir = default_dir;
	}
	struct stat st;
	bool existed = lstat(dir, &st) == 0;
	/* An existing directory of another user (pre-created in /tmp, say)
	 * would receive argv, stacks and maybe secrets that its owner could
	 * then read or swap under us: only a new directory or one of our own. */
	if (existed && S_ISDIR(st.st_mode) && st.st_uid != geteuid()) {
		die_message("output directory '%s' belongs to uid %d, not to us (uid %d)", dir,
			    (int)st.st_uid, (int)geteuid());
		hint_message("give a new directory, or an empty one you own, with -o");
		return EXIT_OUTPUT_DIR;
	}

	struct capture_session s = {.opt = &opt, .started_wall_ns = realtime_ns()};
	s.symopt.allow_debuginfod = opt.debuginfod;
	s.symopt.names_only = opt.names_only;
	int r = attach_target_open(opt.pid, &s.target);
	if (r < 0) {
		if (r == -ESRCH) {
			die_message("cannot attach to pid %d: no such process", (int)opt.pid);
			return EXIT_NO_PROCESS;
		}
		if (r == -EBUSY) {
			/* Another diag-attach won the race for this target. */
			if (attach_target_probe(opt.pid, &pr) == 0 && pr.refusal != ATTACH_OK)
				return capture_refuse(opt.pid, &pr);
			die_message("cannot attach to pid %d: another diag-attach is capturing it",
				    (int)opt.pid);
			return EXIT_ALREADY_TRACED;
		}
		die_message("cannot open pid %d: %s", (int)opt.pid, strerror(-r));
		return EXIT_INTERNAL;
	}
	/* A Go target gets its goroutines read too. Parsing its binary happens
	 * here, before anything is stopped. */
	trace_phase("target opened");
	s.go = go_session_open(opt.pid);
	/* Unwinding and symbols run in a sandboxed worker, forked before we
	 * hold anything. */
	if (interp_new(opt.pid, &s.symopt, &s.interp) < 0) {
		die_message("out of memory");
		go_session_free(s.go);
		attach_target_close(&s.target);
		return EXIT_INTERNAL;
	}
	/* Create the output before attaching: an unusable directory must fail
	 * before we pause anything. */
	trace_phase("worker started");
	r = bundle_create(dir, &s.bundle);
	if (r < 0) {
		interp_free(s.interp);
		go_session_free(s.go);
		attach_target_close(&s.target);
		return output_error(dir, existed, r);
	}
	/* If we are ever stopped or hung while holding the target, a separate
	 * process kills us, which releases it (the kernel detaches a dead
	 * tracer's tracees). */
	trace_phase("bundle directory created");
	if (opt.watchdog_ms && attach_watchdog_start(opt.watchdog_ms) < 0 && !opt.quiet)
		die_message("warning: could not start the watchdog; continuing without it");
	trace_phase("watchdog started");
	s.manifest = initial_manifest(&s);
	if (s.manifest && !pr.dumpable)
		cJSON_AddFalseToObject(cJSON_GetObjectItem(s.manifest, "target"), "dumpable");
	if (!s.manifest) {
		die_message("out of memory");
		bundle_abandon(s.bundle);
		interp_free(s.interp);
		go_session_free(s.go);
		attach_target_close(&s.target);
		return EXIT_INTERNAL;
	}

	trace_phase("ready to capture");
	int exit_code = opt.snapshot ? run_snapshot(&s) : sampler_run(&s);
	if (exit_code == EXIT_OK)
		interp_describe(s.interp, cJSON_AddObjectToObject(s.manifest, "interpretation"));

	if (exit_code == EXIT_OK && capture_stop_requests >= 2) {
		die_message("interrupted while writing; bundle '%s' abandoned (no manifest)", dir);
		exit_code = EXIT_INTERRUPTED;
	}
	if (exit_code == EXIT_OK) {
		char when[32];
		format_rfc3339_ms(realtime_ns(), when);
		cJSON_AddStringToObject(s.manifest, "ended_at", when);
		r = bundle_finalize(s.bundle, s.manifest);
		trace_phase("bundle finalized");
		s.manifest = NULL;
		s.bundle = NULL;
		if (r < 0)
			exit_code = write_error_exit(dir, r);
		else
			exit_code = print_bundle_path(dir);
	}
	if (s.bundle) {
		bundle_abandon(s.bundle);
		/* Nothing written yet: leave no directory behind that we made. */
		if (!existed)
			rmdir(dir);
	}
	attach_watchdog_stop();
	cJSON_Delete(s.manifest);
	interp_free(s.interp);
	trace_phase("worker gone");
	go_session_free(s.go);
	attach_target_close(&s.target);
	trace_phase("done");
	return exit_code;
}
