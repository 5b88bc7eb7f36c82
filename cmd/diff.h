/* diag-attach diff A B: what changed between two bundles of one program. */
#ifndef DIAG_CMD_DIFF_H
#define DIAG_CMD_DIFF_H

int cmd_diff(int argc, char **argv);

#endif
