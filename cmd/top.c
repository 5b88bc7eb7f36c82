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

/* What to show and in which order: options, and keys while running. */
enum sort_key { SORT_SELF, SORT_TOTAL, SORT_SELF_TIME, SORT_TOTAL_TIME };

struct view {
	enum sort_key sort;
	bool lines;   /* one row per function and source line, not per function */
	bool threads; /* the threads view: every thread, by CPU% */
};

/* A function (or function and line) with its samples: in the last
 * refresh ("recent", for the percentages) and since top started (for
 * the times). */
struct fn_total {
	char *key;
	uint64_t self_ns, total_ns;               /* since top started */
	uint64_t recent_self_ns, recent_total_ns; /* last refresh */
};

struct tally {
	struct fn_total *v;
	size_t n, cap;
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
	/* Its on-CPU time at its last sample that counted: the next one
	 * stands for all it ran since, so no CPU is lost to the ticks that
	 * found it asleep, and none is counted for time it only waited. */
	uint64_t counted_cpu_ns;
	bool counted;
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
	uint64_t *weights; /* CPU ns each stack stands for */
	size_t naddrs, addrs_cap, nstacks, stacks_n_cap, weights_cap;
	uint64_t recent_cpu_ns; /* sum of this refresh's weights */
	struct thread_now threads[4096];
	size_t nthreads;
	unsigned ticks;
	uint64_t hold_max_ns, hold_sum_ns;
	uint64_t period_ns;
	struct tally by_function, by_line;
	struct view view;
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

static int end_stack(struct top *t, uint64_t weight_ns)
{
	if (array_reserve(&t->ends, &t->stacks_n_cap, t->nstacks + 1, sizeof(size_t), 1024) < 0 ||
	    array_reserve(&t->weights, &t->weights_cap, t->nstacks + 1, sizeof(uint64_t), 1024) < 0)
		return -ENOMEM;
	t->weights[t->nstacks] = weight_ns;
	t->ends[t->nstacks++] = t->naddrs;
	t->recent_cpu_ns += weight_ns;
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
		/* Only running threads count towards "hot" functions, each
		 * for the CPU time it used since its last counted sample. */
		if (tc->state != 'R' || !n)
			continue;
		uint64_t weight = t->period_ns;
		if (n->counted && tc->cpu_ns >= n->counted_cpu_ns)
			weight = tc->cpu_ns - n->counted_cpu_ns;
		if (tc->cpu_ns) {
			n->counted_cpu_ns = tc->cpu_ns;
			n->counted = true;
		}
		for (size_t k = 0; k < st->n; k++)
			if (push_addr(t, k == 0 ? st->pcs[0] : st->pcs[k] - 1) < 0)
				return -ENOMEM;
		if (end_stack(t, weight) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The row a frame counts for: its function (the outermost frame of the
 * PC's inline chain: the function the code belongs to), or with lines the
 * innermost frame and its source line, "function (file.c:42)". Unnamed
 * code is module+0xOFF, as everywhere. */
static const char *key_of(const struct symtab *st, uint64_t addr, bool lines, char *buf, size_t size)
{
	const struct sym_location *loc = symtab_lookup(st, addr);
	if (loc && loc->nframes) {
		const struct sym_frame *fr = &loc->frames[lines ? 0 : loc->nframes - 1];
		if (fr->function && lines && fr->file) {
			const char *base = strrchr(fr->file, '/');
			snprintf(buf, size, "%s (%s:%d)", fr->function, base ? base + 1 : fr->file, fr->line);
			return buf;
		}
		if (fr->function)
			return fr->function;
	}
	if (sym_location_unnamed(loc, buf, size))
		return buf;
	snprintf(buf, size, "0x%llx", (unsigned long long)addr);
	return buf;
}

static struct fn_total *tally_find(struct tally *t, const char *key)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i].key, key) == 0)
			return &t->v[i];
	if (array_reserve(&t->v, &t->cap, t->n + 1, sizeof(*t->v), 64) < 0)
		return NULL;
	char *k = strdup(key);
	if (!k)
		return NULL;
	t->v[t->n] = (struct fn_total){.key = k};
	return &t->v[t->n++];
}

static void tally_free(struct tally *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].key);
	free(t->v);
}

/* Add this refresh's running stacks to t: self for the leaf's row, total
 * once per stack for every row on it (recursion counts once). */
static void tally_refresh(struct top *top, struct tally *t, const struct symtab *st, bool lines)
{
	for (size_t i = 0; i < t->n; i++)
		t->v[i].recent_self_ns = t->v[i].recent_total_ns = 0;
	char (*keys)[160] = malloc(256 * sizeof(*keys));
	if (!keys)
		return;
	size_t start = 0;
	for (size_t s = 0; s < top->nstacks; s++) {
		size_t end = top->ends[s];
		/* The first 256 frames of a stack: deeper ones are recursion
		 * already counted, or too deep to read on a terminal. */
		size_t n = end - start < 256 ? end - start : 256;
		for (size_t k = 0; k < n; k++) {
			const char *key = key_of(st, top->addrs[start + k], lines, keys[k], sizeof(keys[k]));
			if (key != keys[k])
				snprintf(keys[k], sizeof(keys[k]), "%s", key);
			bool seen = false;
			for (size_t j = 0; j < k && !seen; j++)
				seen = strcmp(keys[j], keys[k]) == 0;
			struct fn_total *f = seen ? NULL : tally_find(t, keys[k]);
			if (!f)
				continue;
			uint64_t w = top->weights[s];
			f->total_ns += w;
			f->recent_total_ns += w;
			if (k == 0) {
				f->self_ns += w;
				f->recent_self_ns += w;
			}
		}
		start = end;
	}
	free(keys);
}

static enum sort_key sort_by;

static uint64_t sort_value(const struct fn_total *f, enum sort_key k)
{
	switch (k) {
	case SORT_SELF:
		return f->recent_self_ns;
	case SORT_TOTAL:
		return f->recent_total_ns;
	case SORT_SELF_TIME:
		return f->self_ns;
	default:
		return f->total_ns;
	}
}

static int cmp_rows(const void *a, const void *b)
{
	const struct fn_total *x = *(const struct fn_total *const *)a, *y = *(const struct fn_total *const *)b;
	uint64_t vx = sort_value(x, sort_by), vy = sort_value(y, sort_by);
	if (vx != vy)
		return vx < vy ? 1 : -1;
	/* Ties: the other measure of the same kind, then the name. */
	enum sort_key other = sort_by == SORT_SELF ? SORT_TOTAL : sort_by == SORT_TOTAL ? SORT_SELF
			      : sort_by == SORT_SELF_TIME ? SORT_TOTAL_TIME : SORT_SELF_TIME;
	vx = sort_value(x, other);
	vy = sort_value(y, other);
	if (vx != vy)
		return vx < vy ? 1 : -1;
	return strcmp(x->key, y->key);
}

static int cmp_threads(const void *a, const void *b)
{
	const struct thread_now *x = *(const struct thread_now *const *)a,
				*y = *(const struct thread_now *const *)b;
	if (x->cpu_pct != y->cpu_pct)
		return x->cpu_pct < y->cpu_pct ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void render_functions(struct top *t)
{
	double cpu = (double)t->recent_cpu_ns;
	struct tally *tl = t->view.lines ? &t->by_line : &t->by_function;
	const struct fn_total **rows = malloc((tl->n ? tl->n : 1) * sizeof(*rows));
	if (!rows)
		return;
	for (size_t i = 0; i < tl->n; i++)
		rows[i] = &tl->v[i];
	sort_by = t->view.sort;
	qsort(rows, tl->n, sizeof(*rows), cmp_rows);
	static const char *const marks[] = {"SELF%", "TOTAL%", "SELF_TIME", "TOTAL_TIME"};
	char head[4][16];
	for (int i = 0; i < 4; i++)
		snprintf(head[i], sizeof(head[i]), "%s%s", (int)t->view.sort == i ? "*" : "", marks[i]);
	printf("%7s %7s %10s %10s  %s\n", head[0], head[1], head[2], head[3],
	       t->view.lines ? "FUNCTION (FILE:LINE)" : "FUNCTION");
	char e1[4 * 256 + 1];
	size_t shown = 0;
	for (size_t i = 0; i < tl->n && shown < MAX_ROWS; i++) {
		const struct fn_total *f = rows[i];
		if (sort_by <= SORT_TOTAL && f->recent_total_ns == 0)
			break;
		printf("%6.1f%% %6.1f%% %9.2fs %9.2fs  %s\n",
		       cpu > 0 ? 100.0 * (double)f->recent_self_ns / cpu : 0,
		       cpu > 0 ? 100.0 * (double)f->recent_total_ns / cpu : 0, (double)f->self_ns / 1e9,
		       (double)f->total_ns / 1e9, escape_text(f->key, e1, sizeof(e1)));
		shown++;
	}
	if (shown == 0)
		puts("    (no thread was running)");
	free(rows);
}

static void render_threads(struct top *t, const struct symtab *st, size_t max)
{
	const struct thread_now **rows = malloc((t->nthreads ? t->nthreads : 1) * sizeof(*rows));
	if (!rows)
		return;
	for (size_t i = 0; i < t->nthreads; i++)
		rows[i] = &t->threads[i];
	if (t->view.threads)
		qsort(rows, t->nthreads, sizeof(*rows), cmp_threads);
	printf("%8s %-16s %5s %6s  %s\n", "TID", "THREAD", "STATE", "CPU%",
	       "NOW IN (CPU%: schedstat, last second)");
	char e1[4 * 256 + 1], e2[4 * 64 + 1], buf[160];
	for (size_t i = 0; i < t->nthreads && i < max; i++) {
		const struct thread_now *n = rows[i];
		char pct[16] = "     -";
		if (n->cpu_pct >= 0)
			snprintf(pct, sizeof(pct), "%5.0f%%", n->cpu_pct);
		printf("%8d %-16s %5c %6s  %s\n", (int)n->tid, escape_text(n->comm, e2, sizeof(e2)),
		       n->state ? n->state : '?', pct,
		       escape_text(key_of(st, n->leaf, t->view.lines, buf, sizeof(buf)), e1, sizeof(e1)));
	}
	if (t->nthreads > max)
		printf("   ... %zu more (t: the threads view)\n", t->nthreads - max);
	free(rows);
}

static void render(struct top *t, const struct symtab *st, bool tty)
{
	tally_refresh(t, &t->by_function, st, false);
	tally_refresh(t, &t->by_line, st, true);
	if (tty)
		fputs("\033[H\033[2J", stdout);
	double hold_avg = t->ticks ? (double)t->hold_sum_ns / t->ticks / 1000.0 : 0;
	/* Names and paths are the target's: escaped (bundle/text.h), never
	 * handed to the terminal raw. */
	char e2[4 * 64 + 1];
	printf("diag-attach top  pid %d (%s)  %u samples/s  %zu threads  pause avg %.0f us max %.0f us\n",
	       (int)t->pid, escape_text(t->target.comm, e2, sizeof(e2)), t->ticks, t->nthreads, hold_avg,
	       (double)t->hold_max_ns / 1000.0);
	if (tty)
		printf("keys: 1-4 sort by the column (* marks it)  l %s  t %s  q quit\n",
		       t->view.lines ? "functions" : "file:line", t->view.threads ? "functions view" : "threads view");
	putchar('\n');
	if (t->view.threads) {
		render_threads(t, st, SIZE_MAX);
	} else {
		render_functions(t);
		putchar('\n');
		render_threads(t, st, MAX_THREAD_ROWS);
	}
	fflush(stdout);
}

/* A key pressed while running: true when it changed the view. */
static bool take_key(struct view *v, char key)
{
	if (key >= '1' && key <= '4')
		v->sort = (enum sort_key)(key - '1');
	else if (key == 'l' || key == 'L')
		v->lines = !v->lines;
	else if (key == 't' || key == 'T')
		v->threads = !v->threads;
	else
		return false;
	return true;
}

static void usage(FILE *f)
{
	fputs("Usage: diag-attach top -p PID [-F HZ] [-n COUNT] [--sort KEY] [--lines] [--threads]\n\n"
	      "A live view of the hottest functions and of what every thread is doing,\n"
	      "refreshed every second. Press q (or Ctrl-C) to quit; the target is released.\n"
	      "Each sample of a running thread stands for the CPU time (schedstat) the thread\n"
	      "used since its last one. SELF% and TOTAL% are the shares of the last second's\n"
	      "CPU with the function at the leaf (self) or anywhere on the stack (total);\n"
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

	struct top *t = calloc(1, sizeof(*t));
	if (!t)
		return EXIT_INTERNAL;
	t->pid = pid;
	t->view = view;
	t->period_ns = 1000000000ull / (uint64_t)hz;
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
			t->recent_cpu_ns = 0;
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
			/* Seen at the next refresh (a second at most): redrawing
			 * now would need this second's symbols twice. */
			(void)take_key(&t->view, key);
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
	free(t->weights);
	tally_free(&t->by_function);
	tally_free(&t->by_line);
	free(t);
	return exit_code;
}
