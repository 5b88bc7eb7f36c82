/* leak_evidence: see leak_evidence.h. */
#include "cmd/engine/leak_evidence.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle/redact.h"
#include "bundle/text.h"
#include "cmd/engine/dump_out.h"
#include "timeline/fd_census.h"
#include "timeline/newcomers.h"

#define MAX_FDS 1000000
#define MAX_NEWCOMERS 100000
#define MAX_FINDING_GROUPS 10

static void put_escaped(FILE *f, const char *s)
{
	escape_text_put(s, f);
}

static void print_groups(FILE *f, const struct fd_census *c, size_t first, cJSON *into)
{
	const struct fd_entry **groups;
	size_t *counts, n;
	if (fd_census_groups(c, first, &groups, &counts, &n) < 0) {
		fputs("    (out of memory grouping them)\n", f);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%9zu  ", counts[i]);
		put_escaped(f, groups[i]->group);
		fprintf(f, "    e.g. fd %d: ", groups[i]->fd);
		put_escaped(f, groups[i]->detail);
		fputc('\n', f);
		if (into && i < MAX_FINDING_GROUPS) {
			char what[4 * 320 + 1], ex[4 * 320 + 1];
			cJSON *g = cJSON_CreateObject();
			cJSON_AddStringToObject(g, "what", escape_text(groups[i]->group, what, sizeof(what)));
			cJSON_AddNumberToObject(g, "count", (double)counts[i]);
			cJSON_AddStringToObject(g, "example", escape_text(groups[i]->detail, ex, sizeof(ex)));
			cJSON_AddItemToArray(into, g);
		}
	}
	free(groups);
	free(counts);
}

static int fds_text(const struct leak_evidence *ev, FILE *f, cJSON *finding)
{
	struct fd_census c;
	size_t more;
	int r = fd_census_take(ev->pid, MAX_FDS, &c, &more);
	if (r < 0)
		return r;
	size_t newest = ev->added > 0 ? (size_t)(ev->added + 0.5) : 0;
	if (newest > c.n)
		newest = c.n;
	fprintf(f, "open_fds: %zu descriptors open now%s; the finding counts %zu more than at the start "
		   "of its window.\n",
		c.n + more, more ? " (the highest ones past the cap not described)" : "", newest);
	if (newest && c.n) {
		fprintf(f,
			"\nThe %zu highest-numbered (fd %d to %d): Linux gives out the lowest free number, "
			"so the descriptors a leak adds are the newest and highest. By what they point to:\n",
			newest, c.v[c.n - newest].fd, c.v[c.n - 1].fd);
		print_groups(f, &c, c.n - newest, cJSON_AddArrayToObject(finding, "new_fds"));
	}
	fprintf(f, "\nAll %zu, by what they point to:\n", c.n);
	print_groups(f, &c, 0, NULL);
	fd_census_release(&c);
	return 0;
}

/* A copy of pc (shallow: the threads' own buffers are shared) and of its
 * stacks holding only the threads in ids. */
static void threads_of(const struct leak_evidence *ev, const struct newcomer *ids, size_t n,
		       struct process_capture *out, struct unwound_stack **out_stacks)
{
	*out = *ev->pc;
	out->threads = calloc(ev->pc->nthreads ? ev->pc->nthreads : 1, sizeof(*out->threads));
	*out_stacks = calloc(ev->pc->nthreads ? ev->pc->nthreads : 1, sizeof(**out_stacks));
	out->nthreads = 0;
	if (!out->threads || !*out_stacks)
		return;
	for (size_t i = 0; i < ev->pc->nthreads; i++)
		for (size_t k = 0; k < n; k++)
			if (ev->pc->threads[i].tid == ids[k].id) {
				out->threads[out->nthreads] = ev->pc->threads[i];
				(*out_stacks)[out->nthreads++] = ev->stacks[i];
				break;
			}
}

static int newcomers_text(const struct leak_evidence *ev, FILE *f, bool children)
{
	struct newcomer *v;
	size_t n, more;
	int r = children ? newcomers_children(ev->pid, ev->window_start_boot_s, MAX_NEWCOMERS, &v, &n, &more)
			 : newcomers_threads(ev->pid, ev->window_start_boot_s, MAX_NEWCOMERS, &v, &n, &more);
	if (r < 0)
		return r;
	double now = newcomers_boottime_s();
	fprintf(f, "%s: %zu %s started since the finding's window began (%.1f s before it)%s:\n",
		ev->counter, n + more, children ? "child process(es)" : "thread(s)",
		now - ev->window_start_boot_s, more ? ", the first listed" : "");
	for (size_t i = 0; i < n; i++) {
		/* The names and argv are the children's and threads' own
		 * words: they enter the bundle as redact.h spells them. */
		char name[BUNDLE_NAME_TEXT_SIZE];
		fprintf(f, "%9d \"%s\"  started %.1f s ago", (int)v[i].id,
			bundle_target_name(v[i].comm, name, sizeof(name)), now - v[i].started_s);
		if (children) {
			char path[64], argv[4096];
			snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)v[i].id);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			ssize_t len = fd >= 0 ? read(fd, argv, sizeof(argv)) : -1;
			if (fd >= 0)
				close(fd);
			/* A longer argv is cut, and its last word with it: that
			 * word goes, as a cut secret may no longer look like one
			 * ("ghp_" and a few letters). */
			bool cut = len == (ssize_t)sizeof(argv);
			if (cut) {
				const char *z = memrchr(argv, '\0', sizeof(argv));
				len = z ? z - argv + 1 : 0;
			}
			char *shown = len > 0 ? bundle_target_string(TARGET_CMDLINE, TARGET_FOR_TEXT, argv,
								     (size_t)len)
					      : NULL;
			if (len > 0 || cut)
				fprintf(f, "  argv: %s%s", shown ? shown : len > 0 ? BUNDLE_REDACTED : "",
					cut ? " ..." : "");
			free(shown);
		}
		fputc('\n', f);
	}
	if (!children && n && ev->pc) {
		struct process_capture only;
		struct unwound_stack *stacks = NULL;
		threads_of(ev, v, n, &only, &stacks);
		if (only.nthreads) {
			fprintf(f, "\nTheir stacks, grouped (from this finding's snapshot):\n\n");
			dump_write(f, false, &only, stacks, ev->st, &(struct dump_meta){0});
		}
		free(only.threads);
		free(stacks);
	}
	free(v);
	return 0;
}

int leak_evidence_write(struct bundle *b, const struct leak_evidence *ev, cJSON *finding,
			cJSON *dumps)
{
	const char *member;
	bool fds = strcmp(ev->counter, "open_fds") == 0;
	if (fds)
		member = "fds.txt";
	else if (strcmp(ev->counter, "threads") == 0)
		member = "new_threads.txt";
	else if (strcmp(ev->counter, "child_procs") == 0)
		member = "new_children.txt";
	else
		return 0;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	int r = fds ? fds_text(ev, f, finding)
		    : newcomers_text(ev, f, strcmp(ev->counter, "child_procs") == 0);
	if (fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r == 0) {
		char name[256];
		snprintf(name, sizeof(name), "%s%s", ev->prefix, member);
		r = bundle_write_member(b, name, text, len);
		if (r == 0)
			cJSON_AddItemToArray(dumps, cJSON_CreateString(name));
	}
	free(text);
	/* The process gone, or its fd directory unreadable: no evidence, not
	 * a failed capture. */
	return r == -ESRCH || r == -EACCES || r == -EPERM ? 0 : r;
}
