/* Finding a CPython's _PyRuntime, Py_Version and evaluation loop in the
 * ELF symbols of its executable or libpython (pyframes.h). */
#include "symbolize/python/pyframes.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* python3, python3.11, libpython3.11.so.1.0 ... (not python3-config). */
static bool python_module(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strncmp(base, "lib", 3) == 0)
		base += 3;
	if (strncmp(base, "python3", 7) != 0)
		return false;
	base += 7;
	return *base == '\0' || *base == '.' || *base == 'd' || *base == 'm';
}

struct found {
	uint64_t runtime, version, eval, eval_size; /* link-time addresses */
	bool have_runtime, have_version, have_eval;
};

static void scan_symbols(Elf *elf, Elf64_Word type, struct found *f)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    !sym.st_value)
				continue;
			const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || (name[0] != '_' && name[0] != 'P'))
				continue;
			if (!f->have_runtime && strcmp(name, "_PyRuntime") == 0) {
				f->runtime = sym.st_value;
				f->have_runtime = true;
			} else if (!f->have_version && strcmp(name, "Py_Version") == 0) {
				f->version = sym.st_value;
				f->have_version = true;
			} else if (!f->have_eval && strcmp(name, "_PyEval_EvalFrameDefault") == 0) {
				f->eval = sym.st_value;
				f->eval_size = sym.st_size;
				f->have_eval = true;
			}
		}
	}
}

/* The file offset of link-time address vaddr, from the PT_LOAD headers. */
static bool vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *ret)
{
	size_t n;
	if (elf_getphdrnum(elf, &n) < 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*ret = vaddr - ph.p_vaddr + ph.p_offset;
			return true;
		}
	}
	return false;
}

/* Where the file offset off of the file mapped by e is in the target: a
 * mapping of the same file covering it. */
static uint64_t runtime_address(const struct maps *m, const struct maps_entry *e, uint64_t off)
{
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *x = &m->entries[i];
		if (x->inode != e->inode || x->dev_major != e->dev_major ||
		    x->dev_minor != e->dev_minor || strcmp(x->path, e->path) != 0)
			continue;
		if (off >= x->offset && off - x->offset < x->limit - x->start)
			return x->start + (off - x->offset);
	}
	return 0;
}

int py_symbols_find(pid_t pid, int rootfd, const struct maps *m, struct py_symbols *ret)
{
	elf_version(EV_CURRENT);
	const char *tried = NULL;
	int result = -ENOENT;
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];
		if (!e->path[0] || e->path[0] == '[' || !python_module(e->path))
			continue;
		if (tried && strcmp(tried, e->path) == 0)
			continue;
		tried = e->path;
		if (result == -ENOENT)
			result = -ENODATA; /* a python module, so far without _PyRuntime */
		int fd = symbolize_open_mapped(rootfd, pid, e);
		if (fd < 0)
			continue;
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		struct found f = {0};
		if (elf && elf_kind(elf) == ELF_K_ELF) {
			scan_symbols(elf, SHT_DYNSYM, &f);
			if (!f.have_runtime || !f.have_eval)
				scan_symbols(elf, SHT_SYMTAB, &f);
		}
		struct py_symbols s = {0};
		uint64_t off;
		if (f.have_runtime && vaddr_to_offset(elf, f.runtime, &off))
			s.runtime = runtime_address(m, e, off);
		if (f.have_version && vaddr_to_offset(elf, f.version, &off))
			s.version = runtime_address(m, e, off);
		if (f.have_eval && vaddr_to_offset(elf, f.eval, &off)) {
			s.eval_start = runtime_address(m, e, off);
			s.eval_end =
				s.eval_start ? s.eval_start + (f.eval_size ? f.eval_size : 1) : 0;
		}
		if (elf)
			elf_end(elf);
		close(fd);
		if (s.runtime) {
			snprintf(s.module, sizeof(s.module), "%s", e->path);
			*ret = s;
			result = 0;
			/* The executable may carry the symbols, or libpython: the
			 * first that has _PyRuntime and the loop wins. */
			if (s.eval_start)
				return 0;
		}
	}
	return result;
}
