/*
 * binaries: --with-binaries. Copy what a symbolizer needs for each mapped
 * module into the bundle as binaries/<build_id>/<basename>: the module's
 * separate debug file when the host has one under
 * /usr/lib/debug/.build-id, else the mapped ELF itself (through
 * /proc/PID/map_files, so a deleted or replaced binary is still the one
 * that ran). De-duplicated by build-id, capped in total size, so that
 * `PPROF_BINARY_PATH=DIR/binaries go tool pprof` symbolizes on another host.
 * Files are copied as bytes; nothing here parses them.
 */
#ifndef DIAG_CMD_ENGINE_BINARIES_H
#define DIAG_CMD_ENGINE_BINARIES_H

#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "bundle/bundle.h"
#include "symbolize/worker/symtab.h"


/* Copy the binaries of st's modules into b, at most cap bytes in all.
 * Records {cap_bytes, copied[], skipped[]} in out. Returns 0, or -errno
 * from the bundle (a full disk); an unreadable file is skipped, not an
 * error. */
int binaries_copy(struct bundle *b, pid_t pid, const struct symtab *st, uint64_t cap,
		  cJSON *out);

#endif
