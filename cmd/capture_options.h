/*
 * capture_options: the options of a capture and of dump, parsed into
 * struct capture_options (cmd/engine/engine.h). What
 * cannot be used prints why (die_message) and returns -1; --help and
 * --version print and exit 0.
 */
#ifndef DIAG_CMD_CAPTURE_OPTIONS_H
#define DIAG_CMD_CAPTURE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cmd/engine/engine.h"

/* argv of `diag-attach [options]` (dump: of `diag-attach dump`) into o:
 * -o's DIR in *ret_output (NULL: none), -q in *ret_quiet, a command after
 * "--" in *ret_launch (NULL: none), the -p pids in pids[*npids] (room for
 * GROUP_MAX_PIDS) and --subprocesses in *follow. 0 or -1 (said why). */
int capture_parse_options(int argc, char **argv, bool dump, struct capture_options *o,
			  const char **ret_output, bool *ret_quiet, char ***ret_launch, pid_t *pids,
			  size_t *npids, bool *follow);

#endif
