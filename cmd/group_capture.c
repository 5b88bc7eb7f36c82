/* Several processes into one bundle (group_capture.h). */
#include "cmd/group_capture.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/merge.h"
#include "bundle/text.h"
#include "cmd/cli/capture_errors.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/launch.h"
#include "cmd/cli/util.h"
#include "cmd/group_merge.h"
#include "cmd/group_state.h"
#include "timeline/newcomers.h"

/* How old a child must be before its capture starts (follow_children). */
#define CHILD_SETTLE_S 0.03

static volatile sig_atomic_t stop_requests;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requests++;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- one capturer (in the child) ---- */

static const struct launch *part_launch;

static void part_let_launched_run(void *arg)
{
	(void)arg;
	if (part_launch)
		launch_continue(part_launch);
}

struct part_leak_ctx {
	const char *group_dir;
	pid_t pid;
};

static void part_show_leak(const struct capture_leak *l, void *arg)
{
	const struct part_leak_ctx *c = arg;
	fprintf(stderr,
		"diag-attach: warning: pid %d: %s is leaking: +%.3g/s, %.0f -> %.0f over %zu samples; "
		"evidence will be in %s/processes/%d/%s\n",
		(int)c->pid, l->counter, l->slope_per_s, l->first, l->last, l->n_samples, c->group_dir,
		(int)c->pid, l->evidence);
}

/* The capture of one process, as a capture of one process runs; the
 * child's exit status. */
static int part_main(struct group *g, struct part *p, uint64_t duration_ns)
{
	/* Terminal signals reach the group, which passes each request on
	 * once; reaching us too would make one Ctrl-C count twice. */
	setpgid(0, 0);
	stop_requests = 0;
	/* If we are killed, each capture ends as on a stop request and
	 * releases its target (its bundle part is left, unmerged: the group
	 * directory has no manifest, so it is never taken for a bundle). */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != g->parent)
		stop_requests = 1;
	struct capture_options opt = *g->opt;
	opt.pid = p->target;
	opt.duration_ns = duration_ns;
	opt.stop_requests = &stop_requests;
	opt.progress = NULL;
	struct part_leak_ctx lc = {g->dir, p->target};
	opt.leak_found = part_show_leak;
	opt.callback_arg = &lc;
	opt.ready = NULL;
	if (opt.cpu_events == CAPTURE_CPU_EVENTS_AUTO)
		opt.cpu_events = CAPTURE_CPU_EVENTS_PER_THREAD;
	if (g->launched && g->launched->pid == p->target) {
		part_launch = g->launched;
		opt.ready = part_let_launched_run;
	}
	struct capture_session *s = NULL;
	enum capture_stage stage;
	int r = capture_session_new(&opt, p->dir, &s, &stage);
	/* A child that exited before it could be captured was never there
	 * to capture: not an error worth a line (the group counts it). */
	if (r == -ESRCH && p->followed)
		return EXIT_NO_PROCESS;
	if (r < 0)
		return stage == CAPTURE_STAGE_OUTPUT ? capture_output_error(p->dir, false, r)
						     : capture_error_exit(p->target, p->dir, stage, r);
	if (opt.watchdog_ms)
		attach_watchdog_start(opt.watchdog_ms);
	int code = EXIT_OK;
	r = capture_session_run(s);
	if (r == 0)
		r = capture_session_finish(s);
	if (r == -ESRCH && p->followed)
		code = EXIT_NO_PROCESS;
	else if (r < 0)
		code = capture_error_exit(p->target, p->dir, capture_session_stage(s), r);
	attach_watchdog_stop();
	capture_session_free(s);
	return code;
}

/* ---- the group (in us) ---- */

static size_t running(const struct group *g);

static void note_capped(struct group *g, pid_t pid)
{
	for (size_t i = 0; i < g->ncapped; i++)
		if (g->capped[i] == pid)
			return;
	if (g->ncapped < GROUP_MAX_PROCESSES)
		g->capped[g->ncapped++] = pid;
	else
		g->capped_more++;
}

/* Start capturing pid: 0, or -errno (nothing started). */
static int start_part(struct group *g, pid_t pid, bool followed)
{
	if (g->nparts == GROUP_MAX_PROCESSES || (followed && running(g) >= g->opt->max_processes)) {
		note_capped(g, pid);
		return -ENOSPC;
	}
	uint64_t duration = 0;
	if (g->deadline_ns) {
		uint64_t now = now_ns();
		/* Too little left to be worth a process of its own. */
		if (now + 100000000ull >= g->deadline_ns)
			return -ETIME;
		duration = g->deadline_ns - now;
	}
	struct part *p = &g->parts[g->nparts];
	memset(p, 0, sizeof(*p));
	p->target = pid;
	p->followed = followed;
	snprintf(p->dir, sizeof(p->dir), "%s/.parts/%d", g->dir, (int)pid);
	fflush(NULL);
	pid_t c = fork();
	if (c < 0)
		return -errno;
	if (c == 0) {
		int code = part_main(g, p, duration);
		fflush(NULL);
		_exit(code);
	}
	p->capturer = c;
	g->nparts++;
	return 0;
}

/* Children of the processes we follow that we do not capture yet: their
 * capture starts now. A child that exits before it is attached is not an
 * error: it was not there to capture. */
static void follow_children(struct group *g)
{
	for (size_t i = 0; i < g->nparts; i++) {
		if (!g->parts[i].capturer)
			continue; /* its capture ended: it exited, or time is up */
		struct newcomer *kids = NULL;
		size_t nkids = 0, more = 0;
		if (newcomers_children(g->parts[i].target, 0, 256, &kids, &nkids, &more) < 0)
			continue;
		double now = newcomers_boottime_s();
		for (size_t k = 0; k < nkids; k++) {
			pid_t pid = kids[k].id;
			if (pid == getpid() || group_knows(g, pid))
				continue;
			/* Most children exec at once (a shell's commands): one
			 * caught in between would be named after its parent
			 * for good. A child this young is taken at the next
			 * poll; a pre-forked worker loses that much. */
			if (now - kids[k].started_s < CHILD_SETTLE_S)
				continue;
			struct attach_probe pr;
			if (attach_target_probe(pid, &pr) < 0 || pr.refusal != ATTACH_OK ||
			    (!pr.dumpable && !g->opt->force))
				continue;
			/* Our own capturers are children of ours, never of a
			 * target; a target that is our ancestor is refused as
			 * "diag-attach itself or its tracer" by the probe. */
			start_part(g, pid, true);
		}
		free(kids);
	}
}

static size_t running(const struct group *g)
{
	size_t n = 0;
	for (size_t i = 0; i < g->nparts; i++)
		n += g->parts[i].capturer != 0;
	return n;
}

static void reap(struct group *g, bool block)
{
	for (size_t i = 0; i < g->nparts; i++) {
		struct part *p = &g->parts[i];
		if (!p->capturer)
			continue;
		int st;
		pid_t w;
		do
			w = waitpid(p->capturer, &st, block ? 0 : WNOHANG);
		while (w < 0 && errno == EINTR);
		if (w == p->capturer || (w < 0 && errno == ECHILD)) {
			p->exit_code = w == p->capturer && WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_INTERNAL;
			p->capturer = 0;
		}
	}
}

static void show_progress(const struct group *g)
{
	if (g->req->quiet || !isatty(STDERR_FILENO))
		return;
	char dur[32] = "";
	if (g->opt->duration_ns)
		snprintf(dur, sizeof(dur), "/%.0fs", (double)g->opt->duration_ns / 1e9);
	fprintf(stderr, "\r\033[Kdiag-attach: %zu processes (%zu being captured)  %.1fs%s",
		g->nparts, running(g), (double)(now_ns() - g->started_ns) / 1e9, dur);
}

/* Run the captures until every one has ended: their processes exited,
 * the duration passed, or a stop request (passed on to each). */
static void run_parts(struct group *g)
{
	sig_atomic_t passed_on = 0;
	uint64_t last_progress = 0;
	for (;;) {
		/* Each request passed on as one: two abandon the writing. */
		while (passed_on < stop_requests) {
			passed_on++;
			for (size_t i = 0; i < g->nparts; i++)
				if (g->parts[i].capturer)
					kill(g->parts[i].capturer, SIGTERM);
		}
		reap(g, false);
		bool time_up = g->deadline_ns && now_ns() >= g->deadline_ns;
		g->ended_by = stop_requests ? "stop request" : time_up ? "duration" : "processes exited";
		if (g->req->follow && !stop_requests && !time_up)
			follow_children(g);
		if (!running(g))
			break;
		if (now_ns() - last_progress > 500000000ull) {
			show_progress(g);
			last_progress = now_ns();
		}
		/* A child forked and gone within this is missed: polled, not
		 * traced (the kernel's fork events would need ptrace or the
		 * proc connector on every followed process). */
		struct timespec ts = {0, 50000000};
		nanosleep(&ts, NULL);
	}
	if (!g->req->quiet && isatty(STDERR_FILENO))
		fputs("\r\033[K", stderr);
}

int group_capture_run(struct capture_options *opt, const struct group_request *req)
{
	static struct group g; /* 256 parts of PATH_MAX: not on the stack */
	memset(&g, 0, sizeof(g));
	g.opt = opt;
	g.req = req;
	g.parent = getpid();
	g.stop_requests = &stop_requests;
	cli_install_stop_handlers(on_stop_signal);

	pid_t first = req->npids ? req->pids[0] : 0;
	struct attach_probe pr;
	for (size_t i = 0; i < req->npids; i++) {
		pid_t pid = req->pids[i];
		int refused = capture_check_target(&pid, opt->force, &pr);
		if (refused != EXIT_OK)
			return refused;
	}
	char default_dir[64];
	const char *dir = req->output;
	if (dir && capture_refuse_foreign_dir(dir) != EXIT_OK)
		return EXIT_OUTPUT_DIR;

	struct launch launched = {.status_fd = -1};
	if (req->launch_argv) {
		/* The directory is created (and refused) before the command
		 * starts: whatever of ours could refuse has, from here on the
		 * exit status is the command's. */
		struct bundle *probe;
		struct stat st;
		bool had = dir && lstat(dir, &st) == 0;
		if (dir) {
			int e = bundle_create(dir, &probe);
			if (e < 0)
				return capture_output_error(dir, had, e);
			bundle_abandon(probe);
			if (!had)
				rmdir(dir);
		}
		int e = launch_start(req->launch_argv, &launched);
		if (e < 0) {
			die_message("cannot run '%s': %s", req->launch_argv[0],
				    e == -ENOENT ? "command not found" : strerror(-e));
			return launch_failure_exit(e);
		}
		first = launched.pid;
		g.launched = &launched;
		if (!req->quiet)
			fprintf(stderr, "diag-attach: started %s as pid %d\n", req->launch_argv[0],
				(int)first);
	}
	if (!dir) {
		capture_default_output(first, default_dir, sizeof(default_dir));
		dir = default_dir;
	}
	g.dir = dir;
	struct stat st;
	bool existed = lstat(dir, &st) == 0;
	struct bundle *b = NULL;
	int e = bundle_create(dir, &b);
	if (e < 0) {
		int code = capture_output_error(dir, existed, e);
		return g.launched ? launch_finish(&launched, code, req->quiet) : code;
	}
	char parts_dir[PATH_MAX];
	snprintf(parts_dir, sizeof(parts_dir), "%s/.parts", dir);
	if (mkdir(parts_dir, 0700) < 0) {
		int code = capture_write_error(dir, -errno);
		bundle_abandon(b);
		if (!existed)
			rmdir(dir);
		return g.launched ? launch_finish(&launched, code, req->quiet) : code;
	}
	g.started_ns = now_ns();
	g.deadline_ns = opt->duration_ns ? g.started_ns + opt->duration_ns : 0;
	int code = EXIT_OK;
	if (g.launched && start_part(&g, launched.pid, false) < 0)
		code = EXIT_INTERNAL;
	for (size_t i = 0; i < req->npids && code == EXIT_OK; i++) {
		pid_t pid = req->pids[i];
		pid_t tgid;
		if (attach_thread_group(pid, &tgid) == 0)
			pid = tgid;
		if (!group_knows(&g, pid) && start_part(&g, pid, false) < 0)
			code = EXIT_INTERNAL;
	}
	if (code != EXIT_OK)
		die_message("cannot start a capture: %s", strerror(errno));
	run_parts(&g);
	reap(&g, true);
	if (code == EXIT_OK)
		code = group_merge_parts(&g, b);
	else
		bundle_abandon(b);
	if (code != EXIT_OK) {
		char parts[PATH_MAX];
		snprintf(parts, sizeof(parts), "%s/.parts", dir);
		cli_remove_tree(parts);
		if (!existed)
			rmdir(dir);
	} else {
		if (!req->quiet) {
			size_t ok = 0;
			for (size_t i = 0; i < g.nparts; i++)
				ok += g.parts[i].exit_code == EXIT_OK;
			fprintf(stderr, "diag-attach: %zu processes captured into one bundle\n", ok);
		}
		code = capture_print_bundle_path(dir);
	}
	return g.launched ? launch_finish(&launched, code, req->quiet) : code;
}
