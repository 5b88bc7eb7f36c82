/* SPDX-License-Identifier: MIT */
#ifndef DIAG_TIMELINE_FD_CENSUS_H
#define DIAG_TIMELINE_FD_CENSUS_H

/*
 * fd_census: what each open descriptor of a process points to, named the
 * way a person looks for a leak, for the evidence of an open_fds finding:
 * a file by its path; a socket by its protocol, state and addresses (from
 * the process's own /proc/PID/net tables, its network namespace's: tcp,
 * tcp6, udp, udp6, unix); a pipe; an anonymous inode by its kind (eventfd,
 * timerfd, [eventpoll]...).
 *
 * Descriptors are then grouped by what a leak of them would share: a file
 * by its path, a connected socket by its protocol, state and remote end
 * (not its ephemeral local port), a listening or unconnected one by its
 * local end, a pipe as "pipe", an anonymous inode by its kind. Linux hands
 * out the lowest free number, so the descriptors a leak added are the
 * highest-numbered: the caller groups those apart.
 *
 * Everything read is the target's (paths, unix socket names): the caller
 * escapes it where it writes it. 0 or a negative errno, never printed.
 */

#include <stddef.h>
#include <sys/types.h>

struct fd_entry {
	int fd;
	char kind[12];     /* file, socket, pipe, anon_inode, other */
	char group[320];   /* what it is grouped by (above) */
	char detail[320];  /* the whole description, one example per group */
};

struct fd_census {
	struct fd_entry *v; /* ascending fd order */
	size_t n;
};

/* Read /proc/PID/fd and the socket tables. -ESRCH when the process is
 * gone, -EACCES when its fd directory cannot be read, -ENOMEM. Caps the
 * descriptors described at max (the rest are counted in *ret_more). */
int fd_census_take(pid_t pid, size_t max, struct fd_census *ret, size_t *ret_more);

void fd_census_release(struct fd_census *c);

/* Group c's entries from index first on (the newest n - first, or all):
 * *ret gets one entry per group (its first member as the example), the
 * biggest group first, and counts[i] its size. malloc'd arrays; 0 or
 * -ENOMEM. */
int fd_census_groups(const struct fd_census *c, size_t first, const struct fd_entry ***ret,
		     size_t **ret_counts, size_t *ret_n);

#endif
