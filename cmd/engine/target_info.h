/* Describing the target and the host in the manifest. */
#ifndef DIAG_CMD_TARGET_INFO_H
#define DIAG_CMD_TARGET_INFO_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <sys/types.h>

#include "attach/attach.h"

/* {pid, exe, argv (redacted), comm, start_time}, and environ (redacted,
 * as "KEY=value" strings) only if record_environ: it holds secrets more
 * often than argv does. Strings are made valid UTF-8. NULL on ENOMEM.
 * build_id is added by the caller once symbols are loaded. */
cJSON *target_info_json(const struct attach_target *t, bool record_environ);

/* Has the target exec'd since target (its target_info_json) was made?
 * Then target says what it is now (exe, invoked_as, argv, comm; t->comm
 * too) and what it was goes to target.exec_from[] with the time it was
 * last seen so. 1 if it had, 0 if not (or the target is gone), -ENOMEM.
 * Checked at every timeline point: a shell's child, a wrapper script (a
 * pyenv shim) becomes the program the profile is about. */
int target_info_follow_exec(struct attach_target *t, cJSON *target, bool record_environ);

/* The target's pid in its own (innermost) pid namespace: the last field
 * of NSpid in its status, what it and its logs call itself inside a
 * container. 0 if unknown. */
long target_inner_pid(const struct attach_target *t);

/* {kernel, arch, num_cpu, hostname}. */
cJSON *host_info_json(void);

#endif
