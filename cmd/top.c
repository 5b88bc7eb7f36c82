/* diag-attach top: a live view of the capture engine. The engine samples
 * as a capture does (perf events, no stops; the same unwinding, kernel,
 * Go and Python frames) and hands top each second's samples, named
 * (capture_options.live); top tallies them by function and shows the
 * hottest, and every thread's CPU% and where it is. Nothing is written. */
#include "cmd/top.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cmd/cli/capture_errors.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/util.h"
#include "cmd/engine/engine.h"
#include "cmd/top_view.h"

/* The screen of one refresh, and the refreshes shown so far. */
struct top {
	struct top_view *view;
	long refreshes, iterations;
	int failed; /* -ENOMEM met in a refresh */
};

static volatile sig_atomic_t quit_requested;
static struct termios saved_tty;
static bool tty_raw;

static void on_signal(int sig)
{
	(void)sig;
	quit_requested = 1;
}

static void restore_tty(void)
{
	if (tty_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
	tty_raw = false;
}

static void raw_tty(void)
{
	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tty) < 0)
		return;
	struct termios t = saved_tty;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0)
		tty_raw = true;
}

/* The engine's refresh: the keys pressed since the last, then the
 * screen. Nonzero ends the capture: q, or -n refreshes shown. */
static int on_refresh(const struct capture_live *l, void *arg)
{
	struct top *t = arg;
	char key;
	while (tty_raw && read(STDIN_FILENO, &key, 1) == 1) {
		if (key == 'q' || key == 'Q')
			return 1;
		(void)top_view_take_key(t->view, key);
	}
	if (top_view_refresh(t->view, l) < 0) {
		t->failed = -ENOMEM;
		return 1;
	}
	return t->iterations && ++t->refreshes >= t->iterations;
}

static void usage(FILE *f)
{
	fputs("Usage: diag-attach top -p PID [-F HZ] [-n COUNT] [--sort KEY] [--lines] [--threads]\n\n"
	      "A live view of the hottest functions and of what every thread is doing,\n"
	      "refreshed every second, from the CPU samples a capture takes (perf events,\n"
	      "no thread stopped; kernel, Python and Go frames). Press q (or Ctrl-C) to quit.\n"
	      "SELF% and TOTAL% are the shares of the last second's sampled CPU with the\n"
	      "function at the leaf (self) or anywhere on the stack (total);\n"
	      "SELF_TIME and TOTAL_TIME are that CPU time added up since top started.\n"
	      "A thread's CPU% is the kernel's count (schedstat) over the last second.\n"
	      "Keys: 1-4 sort by SELF%, TOTAL%, SELF_TIME, TOTAL_TIME; l rows by function or\n"
	      "by function and source line; t every thread, busiest first; q quit.\n\n"
	      "Options:\n"
	      " -p, --pid PID        process to watch\n"
	      " -F, --frequency HZ   samples per second (default 99)\n"
	      " -n, --iterations N   exit after N refreshes (for scripts; default: until q)\n"
	      " -s, --sort KEY       self (default), total, self-time or total-time\n"
	      " -l, --lines          rows by function and source line (file:line)\n"
	      " -t, --threads        start in the threads view\n"
	      "     --force          watch a process that is not dumpable (setuid, or\n"
	      "                      PR_SET_DUMPABLE 0): it asked not to be inspected\n"
	      " -h, --help           display this help\n\n"
	      "Exit status: as for capture (0 ok, 2 usage, 3 no such process, 6 not permitted,\n"
	      "13 not dumpable, 14 /proc of another pid namespace, ...).\n",
	      f);
}

int cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"pid", required_argument, NULL, 'p'},
		{"frequency", required_argument, NULL, 'F'},
		{"iterations", required_argument, NULL, 'n'},
		{"force", no_argument, NULL, 'f'},
		{"sort", required_argument, NULL, 's'},
		{"lines", no_argument, NULL, 'l'},
		{"threads", no_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	pid_t pid = -1;
	long hz = 99, iterations = 0;
	bool force = false;
	struct view view = {.sort = SORT_SELF};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:F:n:s:lth", longopts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 's': {
			static const char *const keys[] = {"self", "total", "self-time", "total-time"};
			size_t k = 0;
			while (k < 4 && strcmp(optarg, keys[k]) != 0)
				k++;
			if (k == 4) {
				die_message("invalid sort key '%s' (self, total, self-time or total-time)", optarg);
				return EXIT_USAGE;
			}
			view.sort = (enum sort_key)k;
			break;
		}
		case 'l':
			view.lines = true;
			break;
		case 't':
			view.threads = true;
			break;
		case 'p': {
			pid_t p = (pid_t)strtol(optarg, &end, 10);
			if (*end || p <= 0) {
				die_message("invalid pid '%s'", optarg);
				return EXIT_USAGE;
			}
			if (pid > 0 && pid != p) {
				die_message("two processes given (-p %d, -p %d): one at a time for now",
					    (int)pid, (int)p);
				return EXIT_USAGE;
			}
			pid = p;
			break;
		}
		case 'F':
			hz = strtol(optarg, &end, 10);
			if (*end || hz < 1 || hz > 1000) {
				die_message("invalid frequency '%s' (1 to 1000 Hz)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'n':
			iterations = strtol(optarg, &end, 10);
			if (*end || iterations < 1) {
				die_message("invalid iteration count '%s'", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'f': /* --force only: no short option, as for capture */
			force = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (pid < 0 || optind < argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	struct attach_probe pr;
	int refused = capture_check_target(&pid, force, &pr);
	if (refused != EXIT_OK)
		return refused;

	struct top *t = &(struct top){.iterations = iterations};
	t->view = top_view_new(pid, &view, isatty(STDOUT_FILENO));
	if (!t->view)
		return EXIT_INTERNAL;

	struct capture_options opt = {
		.pid = pid,
		.frequency_hz = (unsigned)hz,
		.force = force,
		.not_dumpable = !pr.dumpable,
		.cpu_engine = CAPTURE_CPU_AUTO,
		.wall_engine = CAPTURE_WALL_AUTO,
		/* Per thread, as perf top -p: per-CPU cpu-clock events put
		 * 6-8 points less in finish_task_switch and more in
		 * _raw_spin_unlock_irqrestore than perf does on a program that
		 * switches often (test top::matches_perf_record). */
		.cpu_events = CAPTURE_CPU_EVENTS_PER_THREAD,
		/* Each sample unwound as it is drained: the view names them
		 * every second. */
		.unwind_later_set = true,
		.stop_requests = &quit_requested,
		.live = on_refresh,
		.live_every_ns = 1000000000ull,
		.callback_arg = t,
	};
	attach_options_init(&opt.attach);
	/* No thread is ever stopped, not even a sleeping one once for the
	 * registers its /proc resting stack lacks: a view runs for long,
	 * and its NOW IN column needs only the innermost frame. */
	opt.attach.no_interrupt_blocked = true;
	cli_install_stop_handlers(on_signal);
	struct capture_session *s = NULL;
	enum capture_stage stage;
	int r = capture_session_new(&opt, NULL, &s, &stage);
	int exit_code = EXIT_OK;
	if (r < 0) {
		exit_code = capture_error_exit(pid, NULL, stage, r);
	} else {
		raw_tty();
		r = capture_session_run(s);
		restore_tty();
		if (r < 0)
			exit_code = capture_error_exit(pid, NULL, capture_session_stage(s), r);
		else if (t->failed)
			exit_code = capture_error_exit(pid, NULL, CAPTURE_STAGE_ATTACH, t->failed);
		else if (capture_session_target_exited(s))
			die_message("target pid %d exited", (int)pid);
	}
	capture_session_free(s);
	top_view_free(t->view);
	return exit_code;
}
