/* SPDX-License-Identifier: MIT */
/*
 * timeline_watch [-i SECONDS] [-d SECONDS] [-t] [-q] -- PROGRAM [ARGS...]
 *
 * A hand tool over the timeline library, not the product: runs PROGRAM as a
 * child, waits for its "ready" line if it prints one (the leak targets do),
 * then samples it every -i seconds (default 1) for -d seconds (default 30),
 * printing one JSON line per sample on stdout (-q: only findings) and one
 * line per leak finding on stderr, and kills the child at the end.
 * -t counts fds by type. Exit status: 0 no finding, 3 at least one, 1
 * error. diag-attach's capture does the same job for real (with dumps).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timeline/leakwatch.h"
#include "timeline/proc_sampler.h"

static void usage(void)
{
	fprintf(stderr, "usage: timeline_watch [-i SECONDS] [-d SECONDS] [-t] [-q] -- PROGRAM [ARGS...]\n");
	exit(1);
}

int main(int argc, char **argv)
{
	double interval = 1, duration = 30;
	unsigned flags = 0;
	int quiet = 0, opt, out[2], findings = 0, r;
	struct leakwatch *lw = NULL;
	struct proc_sampler *ps = NULL;
	struct leakwatch_finding found[TIMELINE_COUNTER_COUNT];
	struct leakwatch_config cfg;
	struct timespec next;
	FILE *child_out;
	char line[256];
	pid_t pid;

	while ((opt = getopt(argc, argv, "i:d:tq")) != -1) {
		switch (opt) {
		case 'i': interval = strtod(optarg, NULL); break;
		case 'd': duration = strtod(optarg, NULL); break;
		case 't': flags |= PROC_SAMPLER_FD_TYPES; break;
		case 'q': quiet = 1; break;
		default: usage();
		}
	}
	if (optind >= argc || !(interval > 0) || !(duration > 0))
		usage();

	if (pipe(out) < 0)
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], 1);
		close(out[0]);
		close(out[1]);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "timeline_watch: cannot run %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	close(out[1]);
	child_out = fdopen(out[0], "r");
	if (!child_out || !fgets(line, sizeof(line), child_out) || strcmp(line, "ready\n") != 0)
		fprintf(stderr, "timeline_watch: no \"ready\" line from the child; sampling anyway\n");

	leakwatch_config_init(&cfg);
	/* Keep the longest window at about 4 minutes whatever the interval,
	 * so slow leaks stay visible at short intervals. */
	if ((r = leakwatch_config_set_span(&cfg, interval, LEAKWATCH_DEFAULT_SPAN_S)) < 0 ||
	    (r = leakwatch_new(&cfg, timeline_counter_names(), TIMELINE_COUNTER_COUNT, &lw)) < 0 ||
	    (r = proc_sampler_open(pid, flags, &ps)) < 0) {
		fprintf(stderr, "timeline_watch: %s\n", strerror(-r));
		kill(pid, SIGKILL);
		return 1;
	}

	clock_gettime(CLOCK_MONOTONIC, &next);
	for (double elapsed = 0; elapsed <= duration; elapsed += interval) {
		struct timeline_sample s;
		int64_t v[TIMELINE_COUNTER_COUNT];
		char json[TIMELINE_JSON_MAX];
		size_t n;
		long long step = (long long)(interval * 1e9);

		r = proc_sampler_sample(ps, &s);
		if (r == -ESRCH) {
			fprintf(stderr, "timeline_watch: the process exited\n");
			break;
		}
		if (!quiet && timeline_sample_format_json(&s, json, sizeof(json)) > 0)
			fputs(json, stdout);
		fflush(stdout);
		timeline_sample_values(&s, v);
		if (leakwatch_feed(lw, (double)s.t_monotonic_ns * 1e-9, v, found,
				   TIMELINE_COUNTER_COUNT, &n) == 0) {
			for (size_t k = 0; k < n; k++, findings++)
				fprintf(stderr,
					"leak: %s slope %.3g/s delta %.3g (%.0f -> %.0f) over %zu samples, tau %.2f r2 %.2f\n",
					found[k].counter, found[k].slope_per_s, found[k].delta,
					found[k].first, found[k].last, found[k].n_samples,
					found[k].tau, found[k].r2);
		}
		next.tv_nsec += step % 1000000000;
		next.tv_sec += step / 1000000000 + next.tv_nsec / 1000000000;
		next.tv_nsec %= 1000000000;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	proc_sampler_free(ps);
	leakwatch_free(lw);
	return findings ? 3 : 0;
}
