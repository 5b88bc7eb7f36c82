/* The opener behind unwind_gate.h. */
#include "symbolize/worker/unwind_gate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "attach/attach.h"
#include "symbolize/symbolize.h"
#include "symbolize/target_access.h"

struct unwind_gate {
	pid_t pid;
	int rootfd; /* O_PATH of /proc/PID/root, or -1 */
	bool root_tried;
};

struct unwind_gate *unwind_gate_new(pid_t pid)
{
	struct unwind_gate *g = calloc(1, sizeof(*g));
	if (g) {
		g->pid = attach_memory_tid(pid);
		g->rootfd = -1;
	}
	return g;
}

void unwind_gate_free(struct unwind_gate *g)
{
	if (!g)
		return;
	if (g->rootfd >= 0)
		close(g->rootfd);
	free(g);
}

int unwind_gate_open(void *arg, const struct unwind_module *m)
{
	struct unwind_gate *g = arg;
	struct maps maps;
	/* The line is the target's text: parse it as the symbolizer does
	 * (octal escapes, " (deleted)"). */
	int r = maps_parse(m->maps_line, m->maps_line_len, &maps);
	if (r < 0)
		return r;
	const struct maps_entry *e = maps.count == 1 ? &maps.entries[0] : NULL;
	if (!e || e->perms[2] != 'x' || e->path[0] != '/' || e->start != m->start ||
	    e->limit != m->limit) {
		maps_release(&maps);
		return -EINVAL;
	}
	/* A sandboxed worker opens no path: its broker opens in the root. */
	if (!g->root_tried && !target_access_broker()) {
		char root[64];
		snprintf(root, sizeof(root), "/proc/%d/root", (int)g->pid);
		g->root_tried = true;
		g->rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	r = symbolize_open_mapped(g->rootfd, g->pid, e);
	maps_release(&maps);
	return r;
}

struct unwind_opener unwind_gate_opener(struct unwind_gate *g)
{
	return (struct unwind_opener){.open = unwind_gate_open, .arg = g};
}
