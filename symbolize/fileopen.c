/*
 * fileopen: a target's mapped files and its vdso, through target_access.h
 * (directly, or through a sandboxed worker's broker; the direct opens and
 * the rules they follow are direct_open.c's).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "symbolize/internal.h"
#include "symbolize/target_access.h"

int sym_open_mapped(int rootfd, pid_t pid, const struct maps_entry *e)
{
	return target_open_mapped(rootfd, pid, e);
}

int symbolize_open_mapped(int rootfd, pid_t pid, const struct maps_entry *e)
{
	return target_open_mapped(rootfd, pid, e);
}

int sym_read_vdso(pid_t pid, const struct maps_entry *e, void **ret_buf, size_t *ret_len)
{
	size_t len = (size_t)(e->limit - e->start);
	void *buf;
	int r;

	/* A few pages in practice; refuse anything that is clearly not one. */
	if (len == 0 || len > (64u << 20))
		return -EINVAL;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	/* The target runs on, but the vdso is immutable text: no tearing. */
	r = target_read(pid, e->start, buf, len);
	if (r < 0) {
		free(buf);
		return r == -EFAULT ? -EIO : r;
	}
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}
