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

/* [off, off + len) inside [0, size), without overflow. */
static bool extent_ok(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/*
 * libelf trusts the offsets in an ELF's headers when it reads a mapped
 * file: elfutils 0.188 segfaults inside dwfl_module_build_id on a 633-byte
 * file whose section headers and notes lie past its end (found by
 * fuzz_elf_symbolize; the input is kept as a regression). Every real ELF
 * (stripped, split debug, prelinked) keeps all of these inside the file, so
 * one that does not is refused before libdwfl sees it, and its frames show
 * as module+offset. Entry sizes are libelf's own, not the header's.
 */
int sym_elf_within(Elf *elf, uint64_t size)
{
	GElf_Ehdr eh;
	size_t phnum, shnum;

	if (!gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum) != 0 ||
	    elf_getshdrnum(elf, &shnum) != 0)
		return -ENOEXEC;
	/* A mapped module is an executable or a shared object; libdwfl takes
	 * an ET_CORE for a core file and reads past the end of this one (an
	 * 8613-byte input found by fuzz_elf_symbolize), and nothing else is
	 * ever mapped by a loader. */
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return -ENOEXEC;
	size_t phent = gelf_fsize(elf, ELF_T_PHDR, 1, EV_CURRENT);
	size_t shent = gelf_fsize(elf, ELF_T_SHDR, 1, EV_CURRENT);
	if (!phent || !shent)
		return -ENOEXEC;
	if (phnum && (phnum > size / phent || !extent_ok(eh.e_phoff, phnum * phent, size)))
		return -ENOEXEC;
	if (shnum && (shnum > size / shent || !extent_ok(eh.e_shoff, shnum * shent, size)))
		return -ENOEXEC;
	/* libelf reports a section header table that lies past the end as no
	 * sections at all (elf_getshdrnum 0), yet libdwfl's build-id search
	 * still follows e_shoff into unmapped memory (a 589-byte input found
	 * by fuzz_elf_symbolize): judge the header's own fields too. */
	if (eh.e_shoff &&
	    !extent_ok(eh.e_shoff, (uint64_t)(eh.e_shnum ? eh.e_shnum : 1) * shent, size))
		return -ENOEXEC;
	if (eh.e_shnum && eh.e_shstrndx != SHN_XINDEX && eh.e_shstrndx >= eh.e_shnum)
		return -ENOEXEC;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(elf, (int)i, &mem);
		if (!ph || (ph->p_filesz && !extent_ok(ph->p_offset, ph->p_filesz, size)))
			return -ENOEXEC;
	}
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr mem, *sh = gelf_getshdr(scn, &mem);
		if (!sh)
			return -ENOEXEC;
		if (sh->sh_type != SHT_NOBITS && sh->sh_size &&
		    !extent_ok(sh->sh_offset, sh->sh_size, size))
			return -ENOEXEC;
	}
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
