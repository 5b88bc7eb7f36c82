/*
 * tid_cpu: each thread's on-CPU time at its last sample, by tid (an open
 * addressing hash table), to tell a running thread from a runnable one and
 * to weigh a sample by the CPU time since the last. Pruned to the threads
 * alive, so a process that churns threads cannot grow it forever.
 */
#ifndef DIAG_CMD_ENGINE_TID_CPU_H
#define DIAG_CMD_ENGINE_TID_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/attach.h"

struct tid_cpu {
	pid_t tid;
	uint64_t cpu_ns;
};

struct tid_cpu_table {
	struct tid_cpu *slots;
	size_t cap, used;
};

/* The slot of tid, or NULL when it has none (and insert is false, or
 * memory ran out). A new slot's cpu_ns is UINT64_MAX (never seen). */
struct tid_cpu *tid_cpu_find(struct tid_cpu_table *t, pid_t tid, bool insert);

/* tid_cpu_find(t, tid, true). */
struct tid_cpu *tid_cpu_lookup(struct tid_cpu_table *t, pid_t tid);

/* Keep only the threads of pc (when the table has grown well past them). */
void tid_cpu_prune(struct tid_cpu_table *t, const struct process_capture *pc);

#endif
