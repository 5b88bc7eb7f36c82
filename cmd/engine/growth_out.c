/* growth.pprof and a native target's threadcreate.pprof (growth_out.h). */
#include "cmd/engine/growth_out.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* growth.pprof: each page-fault sample's stack, weighed in the faults it
 * stands for and the bytes of their pages. A fault names the code that
 * first touched a new page, which is where memory grows but not always
 * where it was allocated (a buffer malloc'd in one place and filled in
 * another is charged to the filler). */
int growth_profile_write(struct bundle *b, const struct stackagg *growth, const struct symtab *st,
			 const struct profile_spec *base)
{
	static const struct profile_value_type types[] = {{"objects", "count"}, {"space", "bytes"}};
	struct profile_spec spec = *base;
	spec.sample_types = types;
	spec.ntypes = 2;
	spec.period_type = (struct profile_value_type){"space", "bytes"};
	spec.period = (int64_t)sysconf(_SC_PAGESIZE);
	uint8_t *gz = NULL;
	size_t len = 0;
	int r = profile_out_encode(growth, st, &spec, &gz, &len);
	if (r == 0)
		r = bundle_write_member(b, "growth.pprof", gz, len);
	free(gz);
	return r;
}

struct creates_at_end {
	struct stackagg *out;
	int task_dirfd;
};

/* A fork sample's entry with child_alive=true|false added: whether the
 * child is a thread of the target that is still alive now. */
static int mark_alive(void *ctx, const uint64_t *pcs, size_t npcs, const char *labels,
		      const int64_t *values)
{
	struct creates_at_end *e = ctx;
	const char *c = labels ? strstr(labels, "child_tid=") : NULL;
	char name[24], out[256];
	bool alive = false;
	if (c) {
		snprintf(name, sizeof(name), "%d", atoi(c + 10));
		alive = faccessat(e->task_dirfd, name, F_OK, 0) == 0;
	}
	snprintf(out, sizeof(out), "%s%schild_alive=%s", labels ? labels : "", labels ? LABEL_SEP : "",
		 alive ? "true" : "false");
	return stackagg_add(e->out, pcs, npcs, out, values) < 0;
}

/* threadcreate.pprof for a native target: every thread or process the
 * target created during the capture, with the stack of the thread that
 * created it (the sched_process_fork tracepoint), labelled child_tid and
 * child_alive (a thread of the target still alive at the end: where the
 * threads it has now came from). */
int creates_profile_write(struct bundle *b, const struct stackagg *creates, int task_dirfd,
			  const struct symtab *st, const struct profile_spec *base)
{
	static const struct profile_value_type types[] = {{"threads", "count"}};
	struct creates_at_end e = {.out = stackagg_new(1), .task_dirfd = task_dirfd};
	if (!e.out || stackagg_foreach(creates, mark_alive, &e)) {
		stackagg_free(e.out);
		return -ENOMEM;
	}
	struct profile_spec spec = *base;
	spec.sample_types = types;
	spec.ntypes = 1;
	spec.period_type = (struct profile_value_type){"threads", "count"};
	spec.period = 1;
	uint8_t *gz = NULL;
	size_t len = 0;
	int r = profile_out_encode(e.out, st, &spec, &gz, &len);
	if (r == 0)
		r = bundle_write_member(b, "threadcreate.pprof", gz, len);
	free(gz);
	stackagg_free(e.out);
	return r;
}
