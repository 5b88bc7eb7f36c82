/*
 * kallsyms: names of kernel addresses, from /proc/kallsyms, for the kernel
 * part of a CPU sample's call chain (as perf report shows it). The file
 * is the host's, not the target's, so it is read in the tool itself.
 * Module symbols ("[ext4]") are kept with their module.
 */
#ifndef DIAG_SYMBOLIZE_KALLSYMS_H
#define DIAG_SYMBOLIZE_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kallsyms;

/* Read path (normally "/proc/kallsyms"). -EACCES when the addresses are
 * hidden (kptr_restrict, or not root: every address reads 0), -ENOENT,
 * -ENOMEM. */
int kallsyms_load(const char *path, struct kallsyms **ret);
void kallsyms_free(struct kallsyms *k);

/* Is addr in the kernel half of the address space (x86_64)? */
static inline bool kallsyms_is_kernel_address(uint64_t addr)
{
	return addr >= 0xffff800000000000ull;
}

/* The function holding addr, its offset in it, and its module ("" for
 * the kernel image); NULL when addr lies before the first symbol. Valid
 * until kallsyms_free. */
const char *kallsyms_lookup(const struct kallsyms *k, uint64_t addr, uint64_t *ret_offset,
			    const char **ret_module);

#endif
