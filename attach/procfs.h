/*
 * procfs: small readers for /proc files, private to attach/.
 */
#ifndef DIAG_ATTACH_PROCFS_H
#define DIAG_ATTACH_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Read a whole small file relative to dirfd into buf (NUL-terminated).
 * Returns bytes read or -errno. */
ssize_t procfs_read_at(int dirfd, const char *path, char *buf, size_t size);

/* Fields of /proc/.../stat we use. comm may contain spaces and ')': the
 * fields are parsed after the LAST ')'. */
struct procfs_stat {
	char comm[64];
	char state;
	pid_t ppid;
	unsigned long flags;     /* PF_* (field 9) */
	uint64_t utime, stime;   /* clock ticks */
	uint64_t starttime;      /* field 22 */
	uint64_t vsize;          /* field 23, bytes: the same for every thread */
	int processor;           /* field 39: the CPU it last ran on, -1 unknown */
};

int procfs_parse_stat(const char *text, struct procfs_stat *ret);

/* Value of "Key:" in a status file (e.g. "TracerPid"), as a long. -ENOENT if
 * absent. */
int procfs_status_field(const char *status_text, const char *key, long *ret);

#endif
