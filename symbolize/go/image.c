/* The file image of a Go binary, addressed by link-time address: what
 * target.c (the runtime's globals) and pclntab.c (function tables) both
 * read, kept apart from either so that neither depends on the other for it. */
#include "internal.h"

#include <string.h>

Elf_Scn *go_find_section(Elf *elf, const char *name, GElf_Shdr *ret_shdr)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && strcmp(n, name) == 0) {
			*ret_shdr = sh;
			return scn;
		}
	}
	return NULL;
}

const uint8_t *go_file_at(const struct go_target *t, uint64_t addr, size_t len)
{
	for (size_t i = 0; i < t->nloads; i++) {
		const struct go_load *l = &t->loads[i];
		if (addr >= l->vaddr && addr - l->vaddr <= l->filesz && len <= l->filesz - (addr - l->vaddr)) {
			uint64_t off = l->offset + (addr - l->vaddr);
			if (off > t->map_len || len > t->map_len - off)
				return NULL;
			return t->map + off;
		}
	}
	return NULL;
}
