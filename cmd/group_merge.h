/* group_merge: a capture of several processes ends here: the bundles of
 * its parts that finished merged into the group's bundle, with the
 * manifest's group object and one line per process on stderr. */
#ifndef DIAG_CMD_GROUP_MERGE_H
#define DIAG_CMD_GROUP_MERGE_H

#include "bundle/bundle.h"
#include "cmd/group_state.h"

/* Merge g's finished parts into b (g->dir); the exit status (printed why
 * when it is not EXIT_OK). */
int group_merge_parts(struct group *g, struct bundle *b);

#endif
