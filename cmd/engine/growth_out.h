/*
 * growth_out: the profiles of what grew during a sampled capture, from
 * the kernel's own events (--growth, --leak-watch): growth.pprof (page
 * faults: where the target touched new memory) and, for a native target,
 * threadcreate.pprof (every thread or process it created, with its
 * creator's stack).
 */
#ifndef DIAG_CMD_ENGINE_GROWTH_OUT_H
#define DIAG_CMD_ENGINE_GROWTH_OUT_H

#include "bundle/bundle.h"
#include "cmd/engine/profile_out.h"
#include "cmd/engine/stackagg.h"
#include "symbolize/worker/symtab.h"

/* growth ({faults, bytes} per stack) as growth.pprof in b, named by st,
 * with base's time and names. 0 or -errno. */
int growth_profile_write(struct bundle *b, const struct stackagg *growth, const struct symtab *st,
			 const struct profile_spec *base);

/* creates ({1} per fork sample, labels child_tid=N) as threadcreate.pprof
 * in b, each labelled child_alive (the child is a thread of the target,
 * task_dirfd's /proc/PID/task, still alive now). 0 or -errno. */
int creates_profile_write(struct bundle *b, const struct stackagg *creates, int task_dirfd,
			  const struct symtab *st, const struct profile_spec *base);

#endif
