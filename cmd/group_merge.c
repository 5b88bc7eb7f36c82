/* The end of a capture of several processes: the parts that finished
 * merged into the group's bundle (bundle/merge.h), the manifest's group
 * object, and one line per process. */
#include "cmd/group_merge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/merge.h"
#include "bundle/text.h"
#include "cmd/cli/capture_errors.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/util.h"

static cJSON *group_json(const struct group *g)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *given = cJSON_AddArrayToObject(o, "pids_given");
	for (size_t i = 0; i < g->req->npids; i++)
		cJSON_AddItemToArray(given, cJSON_CreateNumber(g->req->pids[i]));
	cJSON_AddBoolToObject(o, "subprocesses", g->req->follow);
	cJSON *followed = cJSON_AddArrayToObject(o, "followed");
	cJSON *failed = cJSON_AddArrayToObject(o, "failed");
	size_t gone = 0;
	for (size_t i = 0; i < g->nparts; i++) {
		const struct part *p = &g->parts[i];
		/* A child that exited before its capture began was only seen. */
		if (p->followed && p->exit_code == EXIT_NO_PROCESS) {
			gone++;
			continue;
		}
		if (p->followed)
			cJSON_AddItemToArray(followed, cJSON_CreateNumber(p->target));
		if (p->exit_code != EXIT_OK) {
			cJSON *f = cJSON_CreateObject();
			cJSON_AddNumberToObject(f, "pid", p->target);
			cJSON_AddNumberToObject(f, "exit_status", p->exit_code);
			cJSON_AddItemToArray(failed, f);
		}
	}
	cJSON_AddNumberToObject(o, "children_gone_before_capture", (double)gone);
	cJSON_AddNumberToObject(o, "max_processes", g->opt->max_processes);
	if (group_not_captured(g))
		cJSON_AddNumberToObject(o, "children_not_followed", (double)group_not_captured(g));
	return o;
}


/* One line per process at the end, as a capture of one prints its
 * summary: what its CPU profile holds against its CPU time. */
static void print_summaries(const cJSON *m)
{
	const cJSON *t;
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(m, "target"))
	{
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(t, "capture");
		const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(c, "cpu");
		double got = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cpu, "samples"));
		double want = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cpu, "samples_expected"));
		double cpu_s = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cpu, "target_cpu_s"));
		double wall = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "thread_samples"));
		const cJSON *comm = cJSON_GetObjectItemCaseSensitive(t, "comm");
		char name[128];
		escape_text(cJSON_IsString(comm) ? comm->valuestring : "?", name, sizeof(name));
		fprintf(stderr,
			"diag-attach: pid %.0f (%s): %.0f CPU samples for %.2f s of CPU (%.0f%% of the "
			"%.0f it asks for), %.0f thread samples%s\n",
			cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "pid")), name,
			isnan(got) ? 0 : got, isnan(cpu_s) ? 0 : cpu_s,
			!isnan(want) && want > 0 ? 100.0 * got / want : 100.0, isnan(want) ? 0 : want,
			isnan(wall) ? 0 : wall,
			cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "target_exited")) ? ", exited" : "");
	}
}

/* Merge the parts that finished into g->dir's bundle b; the exit status. */
int group_merge_parts(struct group *g, struct bundle *b)
{
	const char *dirs[GROUP_MAX_PROCESSES];
	size_t n = 0;
	int first_failure = EXIT_OK;
	for (size_t i = 0; i < g->nparts; i++) {
		const struct part *p = &g->parts[i];
		if (p->exit_code == EXIT_OK) {
			dirs[n++] = p->dir;
		} else {
			if (first_failure == EXIT_OK)
				first_failure = p->exit_code;
			if (!p->followed || p->exit_code != EXIT_NO_PROCESS)
				fprintf(stderr, "diag-attach: warning: pid %d was not captured (exit status %d)\n",
					(int)p->target, p->exit_code);
		}
	}
	if (!n) {
		bundle_abandon(b);
		return first_failure == EXIT_OK ? EXIT_INTERNAL : first_failure;
	}
	if (*g->stop_requests >= 2) {
		bundle_abandon(b);
		die_message("interrupted while writing; bundle abandoned");
		return EXIT_INTERRUPTED;
	}
	cJSON *m = NULL;
	int e = bundle_merge(b, dirs, n, &m);
	if (e < 0) {
		bundle_abandon(b);
		return e == -ENOMEM || e == -EBADMSG || e == -EINVAL ? (die_message("cannot merge the captures: %s", strerror(-e)), EXIT_INTERNAL)
								     : capture_write_error(g->dir, e);
	}
	cJSON_AddItemToObject(m, "group", group_json(g));
	cJSON *cap = cJSON_GetObjectItemCaseSensitive(m, "capture");
	if (cap && g->ended_by)
		cJSON_ReplaceItemInObjectCaseSensitive(cap, "ended_by", cJSON_CreateString(g->ended_by));
	if (!g->req->quiet)
		print_summaries(m);
	/* Even with -q: a capture that left processes out says so. */
	if (group_not_captured(g))
		fprintf(stderr,
			"diag-attach: warning: %zu child process(es) not captured: at most %u are "
			"captured at once (--max-processes; %d in all)\n",
			group_not_captured(g), g->opt->max_processes, GROUP_MAX_PROCESSES);
	if (g->launched)
		cJSON_AddItemToObject(m, "launched", launch_json(g->launched, g->req->launch_argv, true));
	/* The parts go before the manifest vouches for the directory. */
	char parts[PATH_MAX];
	snprintf(parts, sizeof(parts), "%s/.parts", g->dir);
	cli_remove_tree(parts);
	e = bundle_finalize(b, m);
	if (e < 0)
		return capture_write_error(g->dir, e);
	return EXIT_OK;
}
