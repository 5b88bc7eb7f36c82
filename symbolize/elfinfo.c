/*
 * Small ELF facts the symbolizer needs before handing a file to libdwfl.
 */
#include <errno.h>
#include <gelf.h>

#include "symbolize/internal.h"

/*
 * We compute the bias ourselves instead of letting libdwfl assume the first
 * PT_LOAD sits at the lowest mapping: that holds for what ld.so maps, but a
 * maps snapshot may lack the first mapping (munmapped, or the file was mapped
 * by hand at an offset), and then every address would be off.
 *
 * Mappings are page-granular, so the segment that contains the mapping's file
 * offset, rounded down to pages, gives offset -> vaddr. Prefer an executable
 * segment when e is executable: that is the one PCs fall into.
 */
int sym_elf_bias(Elf *elf, const struct maps_entry *e, uint64_t *ret_bias)
{
	const uint64_t page = 4096;
	bool want_x = e->perms[2] == 'x';
	size_t phnum;
	int found = 0;
	uint64_t bias = 0;

	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum) != 0)
		return -ENOEXEC;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(elf, (int)i, &mem);
		uint64_t seg_off, seg_vaddr;

		if (!ph || ph->p_type != PT_LOAD)
			continue;
		seg_off = ph->p_offset & ~(page - 1);
		seg_vaddr = ph->p_vaddr & ~(page - 1);
		/* Include the tail of the last file page (p_filesz may end
		 * mid-page); exclude pure-bss segments. */
		if (ph->p_filesz == 0 || e->offset < seg_off ||
		    e->offset >= ph->p_offset + ph->p_filesz)
			continue;
		if (found && want_x && !(ph->p_flags & PF_X))
			continue;
		bias = e->start - (seg_vaddr + (e->offset - seg_off));
		found = 1;
		if (!want_x || (ph->p_flags & PF_X))
			break;
	}
	if (!found)
		return -ENOEXEC;
	*ret_bias = bias;
	return 0;
}

void sym_hex(const unsigned char *bits, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[bits[i] >> 4];
		out[2 * i + 1] = digits[bits[i] & 15];
	}
	out[2 * len] = '\0';
}
