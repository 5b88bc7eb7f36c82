/*
 * One PC inside one libdwfl module -> an inline chain of frames.
 *
 * DWARF describes an inlined call as a DW_TAG_inlined_subroutine nested in
 * the function it was inlined into, with DW_AT_call_file/DW_AT_call_line
 * naming the call site in that outer function. So for a PC we descend from
 * the CU to the innermost scope containing it, then, from the inside out,
 * emit one frame per inlined_subroutine up to the real subprogram:
 *
 *   frame 0  innermost inlined body   line = line table entry for the PC
 *   frame k  the function around it   line = call_line of frame k-1's DIE
 *   last     the subprogram           function_offset = pc - its entry
 *
 * (This is the shape eu-stack and eu-addr2line -i print.) Without DWARF we
 * fall back to the ELF symbol tables (.symtab, else .dynsym), which libdwfl
 * searches for us, and to whatever the line table knows.
 */
#include <stddef.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/internal.h"
#include "symbolize/arrays.h"

static bool is_function_scope(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

static bool lang_is_c(int lang)
{
	switch (lang) {
	case DW_LANG_C89:
	case DW_LANG_C:
	case DW_LANG_C99:
	case DW_LANG_C11:
	case 0x2c: /* DW_LANG_C17, newer than this dwarf.h */
		return true;
	default:
		return false;
	}
}

/* A demangled copy in the arena, or NULL (not mangled / no demangler).
 * *err is set on allocation failure. */
/* "__libc_start_main@@GLIBC_2.34" -> "__libc_start_main": a .symtab name
 * may carry its symbol version, which no source name has and which would
 * split one function into two in a profile. */
static const char *unversioned(const char *name, struct arena *a, int *err)
{
	const char *at = name ? strchr(name, '@') : NULL;
	if (!at || at == name)
		return name;
	char *copy = arena_alloc(a, (size_t)(at - name) + 1);
	if (!copy) {
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(copy, name, (size_t)(at - name));
	copy[at - name] = '\0';
	return copy;
}

static const char *demangled(const char *name, struct arena *a, int *err)
{
	char *d, *copy;

	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	d = sym_demangle(name);
	if (!d)
		return NULL;
	copy = arena_strdup(a, d);
	free(d);
	if (!copy)
		*err = -ENOMEM;
	return copy;
}

/*
 * C: DW_AT_name is the whole story. C++/Rust: DW_AT_name lacks the class /
 * namespace / path, so prefer the demangled linkage name when we can
 * demangle; otherwise the plain name (a raw mangled string reads worse).
 */
static const char *die_function_name(Dwarf_Die *die, int lang, struct arena *a, int *err)
{
	const char *name = dwarf_diename(die);

	if (!lang_is_c(lang)) {
		Dwarf_Attribute mem, *attr = dwarf_attr_integrate(die, DW_AT_linkage_name, &mem);
		const char *link, *d;

		if (!attr)
			attr = dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &mem);
		link = attr ? dwarf_formstring(attr) : NULL;
		d = link ? demangled(link, a, err) : NULL;
		if (d)
			return d;
		if (!name)
			name = link;
	}
	return name;
}

static void call_site(Dwarf_Die *inlined, Dwarf_Files *files, struct sym_frame *f)
{
	Dwarf_Attribute mem;
	Dwarf_Word v;

	if (files && dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &mem), &v) == 0)
		f->file = dwarf_filesrc(files, v, NULL, NULL);
	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &mem), &v) == 0 && v <= INT32_MAX)
		f->line = (int)v;
}

struct cu_range {
	uint64_t lo, hi;
	Dwarf_Off off;
};

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cu_index_build(Dwarf *dw, struct cu_index *idx)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	size_t cap = 0;

	idx->built = true;
	while (dwarf_get_units(dw, cu, &cu, NULL, NULL, &cudie, NULL) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (lo >= hi)
				continue;
			if (idx->n == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct cu_range *nr = realloc(idx->ranges, ncap * sizeof(*nr));

				if (!nr) {
					/* Partial and unsorted: drop it,
					 * the next lookup tries again. */
					cu_index_release(idx);
					return -ENOMEM;
				}
				idx->ranges = nr;
				cap = ncap;
			}
			idx->ranges[idx->n++] = (struct cu_range){ lo, hi, dwarf_dieoffset(&cudie) };
		}
	}
	if (idx->n) /* qsort(NULL, 0, ...) is undefined */
		qsort(idx->ranges, idx->n, sizeof(*idx->ranges), range_cmp);
	return 0;
}

void cu_index_release(struct cu_index *idx)
{
	free(idx->ranges);
	idx->ranges = NULL;
	idx->n = 0;
	idx->built = false;
}

/* The CU containing pc when libdwfl cannot tell (no .debug_aranges). */
static Dwarf_Die *cu_index_find(Dwfl_Module *mod, struct cu_index *idx, uint64_t pc,
				Dwarf_Die *mem, Dwarf_Addr *ret_bias, int *err)
{
	Dwarf_Addr bias;
	Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
	size_t lo;

	if (!dw)
		return NULL;
	if (!idx->built && (*err = cu_index_build(dw, idx)) < 0)
		return NULL;
	lo = addr_first_above(idx->ranges, idx->n, sizeof(idx->ranges[0]), offsetof(struct cu_range, lo),
			      pc - bias);
	/* Ranges of different CUs do not overlap in sane DWARF; look back a
	 * little in case they do. */
	for (size_t i = lo, k = 0; i-- > 0 && k < 8; k++) {
		if (pc - bias < idx->ranges[i].hi && dwarf_offdie(dw, idx->ranges[i].off, mem)) {
			*ret_bias = bias;
			return mem;
		}
	}
	return NULL;
}

/* Scope nesting deeper than this is not followed (hostile DWARF). */
#define MAX_SCOPE_DEPTH 256

/*
 * The child of parent whose address ranges contain addr, looking through
 * DIEs that group code without having addresses of their own (C++
 * namespaces and classes). Descending only into the matching child keeps a
 * lookup proportional to the siblings on the path, where dwarf_getscopes
 * followed by dwarf_getscopes_die walk the CU's DIE tree twice.
 */
static bool find_child(Dwarf_Die *parent, Dwarf_Addr addr, bool look_in_types, int nest,
		       Dwarf_Die *ret)
{
	Dwarf_Die child;

	if (nest > 16 || dwarf_child(parent, &child) != 0)
		return false;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_entry_point:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			if (dwarf_haspc(&child, addr) == 1) {
				*ret = child;
				return true;
			}
			break;
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_interface_type:
			if (!look_in_types)
				break;
			/* fall through */
		case DW_TAG_namespace:
		case DW_TAG_module:
			if (dwarf_haschildren(&child) &&
			    find_child(&child, addr, look_in_types, nest + 1, ret))
				return true;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* Frames from DWARF; 0 if the PC lies in no known function. */
static int dwarf_frames(Dwarf_Die *cudie, Dwarf_Addr bias, uint64_t pc, const char *src,
			int lineno, struct arena *a, struct sym_frame *frames,
			Dwarf_Addr *ret_entry_off, bool *ret_have_entry, int *err)
{
	Dwarf_Die *path, *inner = NULL, cur = *cudie;
	Dwarf_Files *files = NULL;
	int depth = 0, n = 0, lang = dwarf_srclang(cudie);

	path = malloc(MAX_SCOPE_DEPTH * sizeof(*path));
	if (!path) {
		*err = -ENOMEM;
		return 0;
	}
	/* Outermost to innermost scope containing the PC. */
	while (depth < MAX_SCOPE_DEPTH &&
	       find_child(&cur, pc - bias, !lang_is_c(lang), 0, &path[depth]))
		cur = path[depth++];
	if (dwarf_getsrcfiles(cudie, &files, NULL) != 0)
		files = NULL;

	for (int i = depth - 1; i >= 0 && n < SYM_MAX_FRAMES; i--) {
		Dwarf_Die *d = &path[i];
		int tag = dwarf_tag(d), decl;
		struct sym_frame *f = &frames[n];

		if (!is_function_scope(tag))
			continue;
		memset(f, 0, sizeof(*f));
		f->function = die_function_name(d, lang, a, err);
		if (*err)
			break;
		if (dwarf_decl_line(d, &decl) == 0 && decl > 0)
			f->function_start_line = decl;
		f->inlined = tag == DW_TAG_inlined_subroutine;
		if (!inner) {
			f->file = src;
			f->line = lineno;
		} else {
			call_site(inner, files, f);
		}
		n++;
		inner = d;
		if (!f->inlined) {
			Dwarf_Addr entry;

			if (dwarf_entrypc(d, &entry) == 0 && pc - bias >= entry) {
				*ret_entry_off = pc - bias - entry;
				*ret_have_entry = true;
			}
			break;
		}
	}
	/* A chain that ends in an inlined instance (truncated or odd DWARF)
	 * has nothing outside it that we know of. */
	if (n > 0)
		frames[n - 1].inlined = false;
	free(path);
	return n;
}

int sym_resolve_dwfl(Dwfl_Module *mod, struct cu_index *idx, bool names_only, uint64_t pc,
		     struct arena *strings, struct sym_frame *frames)
{
	Dwarf_Die cumem, *cudie;
	Dwarf_Addr bias = 0;
	GElf_Off symoff = 0;
	GElf_Sym sym;
	const char *symname = NULL, *src = NULL;
	Dwfl_Line *line;
	Dwarf_Addr entry_off = 0;
	bool have_entry = false;
	int lineno = 0, n = 0, err = 0;

	cudie = names_only ? NULL : dwfl_module_addrdie(mod, pc, &bias);
	if (!cudie && !names_only) {
		cudie = cu_index_find(mod, idx, pc, &cumem, &bias, &err);
		if (err)
			return err;
	}
	line = names_only ? NULL : dwfl_module_getsrc(mod, pc);
	if (line) {
		src = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
	} else if (cudie) {
		Dwarf_Line *dl = dwarf_getsrc_die(cudie, pc - bias);

		if (dl) {
			src = dwarf_linesrc(dl, NULL, NULL);
			if (dwarf_lineno(dl, &lineno) != 0)
				lineno = 0;
		}
	}
	if (lineno < 0)
		lineno = 0;

	if (cudie) {
		n = dwarf_frames(cudie, bias, pc, src, lineno, strings, frames, &entry_off,
				 &have_entry, &err);
		if (err)
			return err;
	}
	/* C++ and Rust: an outer function whose DWARF has no linkage name
	 * (members of a local class, a lambda's operator(), std::thread's
	 * _M_run) is only its short name, which several functions share: its
	 * ELF symbol, demangled as c++filt prints it (scopes, template and
	 * parameters), says which one it is. */
	bool wants_linkage = n > 0 && cudie && !lang_is_c(dwarf_srclang(cudie)) &&
			     frames[n - 1].function && !strchr(frames[n - 1].function, '(');
	/* The ELF symbol search is a linear scan in libdwfl: only when DWARF
	 * left something open. */
	if (n == 0 || !frames[n - 1].function || !have_entry || wants_linkage) {
		symname = dwfl_module_addrinfo(mod, pc, &symoff, &sym, NULL, NULL, NULL);
		if (symname && symname[0] == '\0')
			symname = NULL;
		symname = unversioned(symname, strings, &err);
		if (err)
			return err;
	}
	if (n > 0) {
		struct sym_frame *outer = &frames[n - 1];

		if (wants_linkage && symname) {
			const char *full = demangled(symname, strings, &err);
			if (err)
				return err;
			if (full)
				outer->function = full;
		}
		if (!outer->function)
			outer->function = symname;
		outer->function_offset = have_entry ? entry_off : (symname ? symoff : 0);
		return n;
	}
	if (!symname && !src)
		return 0;
	memset(&frames[0], 0, sizeof(frames[0]));
	frames[0].function = demangled(symname, strings, &err);
	if (err)
		return err;
	if (!frames[0].function)
		frames[0].function = symname;
	frames[0].file = src;
	frames[0].line = lineno;
	frames[0].function_offset = symname ? symoff : 0;
	return 1;
}

int sym_resolve_data(Dwfl_Module *mod, uint64_t addr, struct arena *strings, struct sym_frame *frames)
{
	GElf_Off off;
	GElf_Sym sym;
	int err = 0;
	const char *name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
	/* Only an object whose size covers the address: the nearest symbol
	 * below a heap-like gap is not its name. */
	if (!name || !name[0] || GELF_ST_TYPE(sym.st_info) != STT_OBJECT || off >= sym.st_size)
		return 0;
	name = unversioned(name, strings, &err);
	const char *full = err ? NULL : demangled(name, strings, &err);
	if (err)
		return err;
	memset(&frames[0], 0, sizeof(frames[0]));
	frames[0].function = full ? full : name;
	frames[0].function_offset = off;
	return 1;
}
