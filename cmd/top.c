/* diag-attach top: sample like a capture, but show the last second on the
 * terminal instead of writing a bundle. Each refresh symbolizes the PCs it
 * saw in the sandboxed worker, whose caches make later refreshes cheap. */
#include "cmd/top.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "bundle/text.h"
#include "cmd/cli/capture_errors.h"
#include "cmd/cli/exit_codes.h"
#include "symbolize/worker/interp.h"
#include "cmd/cli/util.h"
#include "symbolize/arrays.h"

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define MAX_ROWS 20
#define MAX_THREAD_ROWS 24

struct fn_count {
	const char *name; /* owned by the refresh's symtab */
	unsigned self, total;
};

struct thread_now {
	pid_t tid;
	char comm[17];
	char state;
	uint64_t leaf; /* lookup address of the innermost frame */
	/* Its on-CPU time (schedstat) at the latest tick, and at the last
	 * refresh (or when first seen): CPU% is the kernel's own count over
	 * the wall time between two refreshes, not a share of samples in R
	 * (100 % for a thread that runs 20 % of the time in short bursts
	 * whenever it is sampled). cpu_pct < 0: not known yet. */
	uint64_t cpu_ns, cpu_ns_base, base_at_ns;
	bool have_base;
	double cpu_pct;
};

struct top {
	pid_t pid;
	struct attach_target target;
	struct interp *interp;
	struct attach_options ao;
	struct process_capture pc;
	struct unwound_stack *stacks;
	size_t stacks_cap;
	/* This refresh's samples: one leaf and one deduplicated frame list
	 * per sampled thread. */
	uint64_t *addrs;   /* all frame lookup addresses, stack after stack */
	size_t *ends;      /* end offset of each stack in addrs */
	size_t naddrs, addrs_cap, nstacks, stacks_n_cap;
	struct thread_now threads[4096];
	size_t nthreads;
	unsigned ticks;
	uint64_t hold_max_ns, hold_sum_ns;
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

static int push_addr(struct top *t, uint64_t a)
{
	if (array_reserve(&t->addrs, &t->addrs_cap, t->naddrs + 1, sizeof(uint64_t), 4096) < 0)
		return -ENOMEM;
	t->addrs[t->naddrs++] = a;
	return 0;
}

static int end_stack(struct top *t)
{
	if (array_reserve(&t->ends, &t->stacks_n_cap, t->nstacks + 1, sizeof(size_t), 1024) < 0)
		return -ENOMEM;
	t->ends[t->nstacks++] = t->naddrs;
	return 0;
}

static struct thread_now *thread_slot(struct top *t, pid_t tid)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid)
			return &t->threads[i];
	if (t->nthreads == sizeof(t->threads) / sizeof(t->threads[0]))
		return NULL;
	struct thread_now *n = &t->threads[t->nthreads++];
	memset(n, 0, sizeof(*n));
	n->tid = tid;
	return n;
}

/* Each thread's CPU% since the last refresh, from schedstat; the next
 * one counts from now. */
static void take_cpu_percent(struct top *t, uint64_t now)
{
	for (size_t i = 0; i < t->nthreads; i++) {
		struct thread_now *n = &t->threads[i];
		if (!n->have_base)
			continue;
		n->cpu_pct = -1;
		if (now > n->base_at_ns && n->cpu_ns >= n->cpu_ns_base)
			n->cpu_pct = 100.0 * (double)(n->cpu_ns - n->cpu_ns_base) /
				     (double)(now - n->base_at_ns);
		n->cpu_ns_base = n->cpu_ns;
		n->base_at_ns = now;
	}
}

static int tick(struct top *t)
{
	int r = attach_capture(&t->target, &t->ao, &t->pc);
	if (r < 0)
		return r;
	t->ticks++;
	t->hold_sum_ns += t->pc.hold_ns;
	if (t->pc.hold_ns > t->hold_max_ns)
		t->hold_max_ns = t->pc.hold_ns;
	if (array_reserve(&t->stacks, &t->stacks_cap, t->pc.nthreads, sizeof(*t->stacks), 16) < 0)
		return -ENOMEM;
	interp_unwind(t->interp, &t->pc, t->stacks);
	uint64_t now = monotonic_ns();
	for (size_t i = 0; i < t->pc.nthreads; i++) {
		const struct thread_capture *tc = &t->pc.threads[i];
		const struct unwound_stack *st = &t->stacks[i];
		/* Idle threads too (skip_idle reads their schedstat). */
		if (tc->cpu_ns && (tc->outcome == THREAD_CAPTURED || tc->outcome == THREAD_UNCHANGED)) {
			struct thread_now *c = thread_slot(t, tc->tid);
			if (c) {
				c->cpu_ns = tc->cpu_ns;
				if (!c->have_base) {
					c->have_base = true;
					c->cpu_ns_base = tc->cpu_ns;
					c->base_at_ns = now;
					c->cpu_pct = -1;
				}
			}
		}
		if (tc->outcome != THREAD_CAPTURED || st->n == 0)
			continue;
		struct thread_now *n = thread_slot(t, tc->tid);
		if (n) {
			snprintf(n->comm, sizeof(n->comm), "%s", tc->comm);
			n->state = tc->state;
			n->leaf = st->pcs[0];
		}
		/* Only running threads count towards "hot" functions. */
		if (tc->state != 'R')
			continue;
		for (size_t k = 0; k < st->n; k++)
			if (push_addr(t, k == 0 ? st->pcs[0] : st->pcs[k] - 1) < 0)
				return -ENOMEM;
		if (end_stack(t) < 0)
			return -ENOMEM;
	}
	return 0;
}

static const char *name_of(const struct symtab *st, uint64_t addr, char *buf, size_t size)
{
	const struct sym_location *loc = symtab_lookup(st, addr);
	if (loc && loc->nframes && loc->frames[loc->nframes - 1].function)
		return loc->frames[loc->nframes - 1].function;
	if (sym_location_unnamed(loc, buf, size))
		return buf;
	snprintf(buf, size, "0x%llx", (unsigned long long)addr);
	return buf;
}

static int cmp_fn(const void *a, const void *b)
{
	const struct fn_count *x = a, *y = b;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return x->total < y->total ? 1 : (x->total > y->total ? -1 : 0);
}

static void render(struct top *t, const struct symtab *st, bool tty)
{
	/* Self and total per function name (the outermost frame of each PC's
	 * inline chain: the function the code belongs to). */
	size_t cap = t->naddrs + 1, nfn = 0;
	struct fn_count *fns = calloc(cap, sizeof(*fns));
	char (*names)[96] = calloc(cap, sizeof(*names));
	if (!fns || !names) {
		free(fns);
		free(names);
		return;
	}
	size_t start = 0;
	for (size_t s = 0; s < t->nstacks; s++) {
		size_t end = t->ends[s];
		for (size_t k = start; k < end; k++) {
			const char *name = name_of(st, t->addrs[k], names[k], sizeof(names[k]));
			size_t f = 0;
			while (f < nfn && strcmp(fns[f].name, name) != 0)
				f++;
			if (f == nfn)
				fns[nfn++].name = name;
			/* Count a function once per stack for "total" (recursion). */
			bool seen = false;
			for (size_t j = start; j < k && !seen; j++)
				seen = strcmp(name_of(st, t->addrs[j], names[j], sizeof(names[j])), name) == 0;
			if (!seen)
				fns[f].total++;
			if (k == start)
				fns[f].self++;
		}
		start = end;
	}
	qsort(fns, nfn, sizeof(*fns), cmp_fn);

	if (tty)
		fputs("\033[H\033[2J", stdout);
	double hold_avg = t->ticks ? (double)t->hold_sum_ns / t->ticks / 1000.0 : 0;
	/* Names and paths are the target's: escaped (bundle/text.h), never
	 * handed to the terminal raw. */
	char e1[4 * 256 + 1], e2[4 * 64 + 1];
	printf("diag-attach top  pid %d (%s)  %u samples/s  %zu threads  pause avg %.0f us max %.0f us%s\n\n",
	       (int)t->pid, escape_text(t->target.comm, e2, sizeof(e2)), t->ticks, t->nthreads, hold_avg,
	       (double)t->hold_max_ns / 1000.0, tty ? "   (q quits)" : "");
	printf("%7s %7s  %s\n", "SELF%", "TOTAL%", "FUNCTION (on-CPU samples, last second)");
	unsigned samples = (unsigned)t->nstacks;
	for (size_t i = 0; i < nfn && i < MAX_ROWS; i++)
		printf("%6.1f%% %6.1f%%  %s\n", samples ? 100.0 * fns[i].self / samples : 0,
		       samples ? 100.0 * fns[i].total / samples : 0,
		       escape_text(fns[i].name, e1, sizeof(e1)));
	if (nfn == 0)
		puts("    (no thread was running)");
	printf("\n%8s %-16s %5s %6s  %s\n", "TID", "THREAD", "STATE", "CPU%", "NOW IN (CPU%: schedstat, last second)");
	for (size_t i = 0; i < t->nthreads && i < MAX_THREAD_ROWS; i++) {
		const struct thread_now *n = &t->threads[i];
		char buf[96];
		char pct[16] = "     -";
		if (n->cpu_pct >= 0)
			snprintf(pct, sizeof(pct), "%5.0f%%", n->cpu_pct);
		printf("%8d %-16s %5c %6s  %s\n", (int)n->tid, escape_text(n->comm, e2, sizeof(e2)),
		       n->state ? n->state : '?', pct,
		       escape_text(name_of(st, n->leaf, buf, sizeof(buf)), e1, sizeof(e1)));
	}
	fflush(stdout);
	free(fns);
	free(names);
}

static void usage(FILE *f)
{
	fputs("Usage: diag-attach top -p PID [-F HZ] [-n COUNT]\n\n"
	      "A live view of the hottest functions and of what every thread is doing,\n"
	      "refreshed every second. Press q (or Ctrl-C) to quit; the target is released.\n\n"
	      "Options:\n"
	      " -p, --pid PID        process to watch\n"
	      " -F, --frequency HZ   samples per second (default 99)\n"
	      " -n, --iterations N   exit after N refreshes (for scripts; default: until q)\n"
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
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	pid_t pid = -1;
	long hz = 99, iterations = 0;
	bool force = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:F:n:h", longopts, NULL)) != -1) {
		char *end;
		switch (c) {
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

	struct top *t = calloc(1, sizeof(*t));
	if (!t)
		return EXIT_INTERNAL;
	t->pid = pid;
	attach_options_init(&t->ao);
	t->ao.skip_idle = true; /* idle threads are not stopped; their leaf stays */
	t->ao.release_each = true; /* each thread let go as soon as it is copied */
	if (attach_target_open(pid, &t->target) < 0) {
		free(t);
		die_message("cannot attach to pid %d: no such process", (int)pid);
		return EXIT_NO_PROCESS;
	}
	struct symbolize_options so = {0};
	int exit_code = EXIT_OK;
	if (interp_new(pid, &so, &t->interp) < 0) {
		exit_code = EXIT_INTERNAL;
		goto out;
	}
	cli_install_stop_handlers(on_signal);
	bool tty = isatty(STDOUT_FILENO);
	raw_tty();

	uint64_t period = 1000000000ull / (uint64_t)hz;
	uint64_t next_tick = monotonic_ns(), next_refresh = next_tick + 1000000000ull;
	for (long refreshes = 0; !quit_requested;) {
		uint64_t now = monotonic_ns();
		if (now >= next_tick) {
			next_tick += period;
			if (next_tick <= now)
				next_tick = now + period;
			int r = tick(t);
			if (r == -ESRCH || (r < 0 && !attach_target_alive(&t->target))) {
				die_message("target pid %d exited", (int)pid);
				break;
			}
			if (r == -EPERM || r == -EACCES) {
				die_message("cannot attach to pid %d: %s", (int)pid, strerror(-r));
				exit_code = EXIT_NOT_PERMITTED;
				break;
			}
		}
		if (now >= next_refresh) {
			struct symtab *st = NULL;
			take_cpu_percent(t, monotonic_ns());
			/* Leaves of idle threads too, for the NOW IN column; they sit
			 * after the last stack's end, so they count for nothing. */
			for (size_t i = 0; i < t->nthreads; i++)
				if (push_addr(t, t->threads[i].leaf) < 0)
					break;
			if (interp_symbolize(t->interp, t->pc.maps_text ? t->pc.maps_text : "",
					     t->pc.maps_text ? t->pc.maps_len : 0, t->addrs, t->naddrs,
					     &st) == 0) {
				render(t, st, tty);
				symtab_free(st);
			}
			t->naddrs = t->nstacks = 0;
			t->ticks = 0;
			t->hold_sum_ns = t->hold_max_ns = 0;
			next_refresh += 1000000000ull;
			if (iterations && ++refreshes >= iterations)
				break;
		}
		uint64_t wake = next_tick < next_refresh ? next_tick : next_refresh;
		now = monotonic_ns();
		int timeout_ms = wake > now ? (int)((wake - now) / 1000000ull) : 0;
		struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
		if (tty_raw && poll(&pfd, 1, timeout_ms) > 0) {
			char key;
			if (read(STDIN_FILENO, &key, 1) == 1 && (key == 'q' || key == 'Q'))
				break;
		} else if (!tty_raw && timeout_ms > 0) {
			struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	restore_tty();
out:
	interp_free(t->interp);
	process_capture_release(&t->pc);
	attach_target_close(&t->target);
	free(t->stacks);
	free(t->addrs);
	free(t->ends);
	free(t);
	return exit_code;
}
