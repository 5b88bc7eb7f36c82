/* capture_help: the --help text of a capture (diag-attach --help) and of
 * dump (diag-attach dump --help). */
#ifndef DIAG_CMD_CAPTURE_HELP_H
#define DIAG_CMD_CAPTURE_HELP_H

#include <stdio.h>

void capture_usage(FILE *f);
void dump_usage(FILE *f);

#endif
