/*
 * fd_out: what attach/fd_info.h found of a descriptor, as one line of text
 * ("pipe, read end; other end held by pid 4242 (cat) fd 1", "tcp
 * 127.0.0.1:5432 -> 127.0.0.1:40000 ESTABLISHED") and as JSON. Paths are
 * escaped, process names redacted and escaped (bundle/redact.h).
 */
#ifndef DIAG_CMD_ENGINE_FD_OUT_H
#define DIAG_CMD_ENGINE_FD_OUT_H

#include <stdio.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "attach/fd_info.h"

void fd_out_text(FILE *f, const struct fd_info *d);
/* "FD (what it is)" of pid's descriptor fd, read now; "FD" alone when it
 * cannot be read. */
void fd_out_brief(FILE *f, pid_t pid, int fd);
cJSON *fd_out_json(const struct fd_info *d);

#endif
