/* Refusing a target before anything touches it, with the message that
 * says why and what to do; shared by capture and top. */
#ifndef DIAG_CMD_CLI_REFUSE_H
#define DIAG_CMD_CLI_REFUSE_H

#include <stdbool.h>
#include <sys/types.h>

#include "attach/attach.h"

/* Explain why pid cannot be captured (one line + a hint) and return the
 * matching exit status. */
int capture_refuse(pid_t pid, const struct attach_probe *pr);

/* Probe pid (result in *ret) and refuse, with a message, what must be
 * refused before anything is touched: every refusal of the probe, and a
 * process that is not dumpable unless force. Returns EXIT_OK or the exit
 * status. */
int capture_check_target(pid_t pid, bool force, struct attach_probe *ret);

#endif
