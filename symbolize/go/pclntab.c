/* SPDX-License-Identifier: MIT */
/*
 * .gopclntab, read the way the runtime reads it (symtab.go): findfunc,
 * pcvalue, funcline, funcdata, the inline tree. Names always come from here,
 * never from DWARF (generic shape names) or .symtab (".abi0" suffixes).
 *
 * Formats: pcHeader magic 0xfffffff0 (Go 1.18, 1.19) and 0xfffffff1
 * (1.20+). Differences: _func grows startLine at +36 (40 -> 44 bytes) and
 * inlinedCall shrinks from 20 to 16 bytes (recipe §4.3).
 */
#include "internal.h"

#include <errno.h>
#include <gelf.h>
#include <string.h>

/* Does p (len bytes to the end of its section) start a pcHeader? Its
 * magic (1.18-1.19, 1.20+), pad, minLC 1, ptrSize 8, some functions, and
 * its tables' offsets in order and inside the section. */
static bool looks_like_pcheader(const uint8_t *p, size_t len)
{
	if (len < 72)
		return false;
	uint32_t magic = go_u32(p);
	if ((magic != 0xfffffff0 && magic != 0xfffffff1) || p[4] || p[5] || p[6] != 1 || p[7] != 8)
		return false;
	uint64_t nfunc = go_u64(p + 8);
	uint64_t off[5];
	for (int i = 0; i < 5; i++)
		off[i] = go_u64(p + 32 + 8 * i);
	if (nfunc == 0 || nfunc > len / 8 || off[0] < 72)
		return false;
	for (int i = 0; i < 4; i++)
		if (off[i] > off[i + 1])
			return false;
	return off[4] < len;
}

static const uint8_t *find_pclntab(struct go_target *t, size_t *ret_len)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(t->elf, &shstrndx) != 0)
		return NULL;
	for (Elf_Scn *scn = elf_nextscn(t->elf, NULL); scn; scn = elf_nextscn(t->elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		const char *n = elf_strptr(t->elf, shstrndx, sh.sh_name);
		/* internal linking: .gopclntab; PIE: .data.rel.ro.gopclntab */
		if (n && (strcmp(n, ".gopclntab") == 0 || strcmp(n, ".data.rel.ro.gopclntab") == 0)) {
			if (sh.sh_offset > t->map_len || sh.sh_size > t->map_len - sh.sh_offset)
				return NULL;
			*ret_len = sh.sh_size;
			t->pcln_addr = sh.sh_addr;
			return t->map + sh.sh_offset;
		}
	}
	/* External linking (cgo) of a PIE before Go 1.26: gcc's linker merged
	 * the pclntab into .data.rel.ro with no name of its own. Its header is
	 * found there (8-aligned, checked field by field); its length is what
	 * is left of the section, every table bounded by it. */
	static const char *const merged[] = {".data.rel.ro", ".rodata"};
	for (size_t k = 0; k < 2; k++) {
		GElf_Shdr sh;
		if (!go_find_section(t->elf, merged[k], &sh) || sh.sh_type == SHT_NOBITS ||
		    sh.sh_offset > t->map_len || sh.sh_size > t->map_len - sh.sh_offset)
			continue;
		const uint8_t *base = t->map + sh.sh_offset;
		for (size_t off = 0; off + 72 <= sh.sh_size; off += 8) {
			if (looks_like_pcheader(base + off, sh.sh_size - off)) {
				*ret_len = sh.sh_size - off;
				t->pcln_addr = sh.sh_addr + off;
				return base + off;
			}
		}
	}
	return NULL;
}

static bool sub_table(const struct go_target *t, uint64_t off, uint64_t end, const uint8_t **p, size_t *len)
{
	if (off > end || end > t->pcln_len)
		return false;
	*p = t->pcln + off;
	*len = end - off;
	return true;
}

int go_pclntab_init(struct go_target *t)
{
	const uint8_t *h = find_pclntab(t, &t->pcln_len);
	if (!h || t->pcln_len < 72)
		return -ENOTSUP;
	t->pcln = h;
	t->magic = go_u32(h);
	if (t->magic != 0xfffffff0 && t->magic != 0xfffffff1)
		return -ENOTSUP; /* 1.16/1.17 (0xfffffffa) and older: not supported */
	if (h[4] != 0 || h[5] != 0 || h[6] != 1 || h[7] != 8)
		return -ENOTSUP; /* minLC 1, ptrSize 8: amd64 */
	t->func_size = t->magic == 0xfffffff0 ? 40 : 44;
	t->inl_size = t->magic == 0xfffffff0 ? 20 : 16;
	t->nfunc = go_u64(h + 8);
	t->text_start = go_u64(h + 24);
	uint64_t fn = go_u64(h + 32), cu = go_u64(h + 40), ft = go_u64(h + 48), pc = go_u64(h + 56),
		 pl = go_u64(h + 64);
	if (!sub_table(t, fn, cu, &t->funcnametab, &t->funcnametab_len) ||
	    !sub_table(t, cu, ft, &t->cutab, &t->cutab_len) ||
	    !sub_table(t, ft, pc, &t->filetab, &t->filetab_len) ||
	    !sub_table(t, pc, pl, &t->pctab, &t->pctab_len) ||
	    !sub_table(t, pl, t->pcln_len, &t->ftab, &t->ftab_len))
		return -EINVAL;
	/* (nfunc + 1) * 8 > ftab_len, without the multiplication: a forged
	 * nfunc near 2^61 wrapped it and the loop below read past the file */
	if (t->nfunc == 0 || t->nfunc >= t->ftab_len / 8)
		return -EINVAL;

	/* funcIDs are renumbered between releases: learn the ones we need by
	 * name. The wrapper ID is the enum's last value, hence the maximum. */
	t->fid_wrapper = t->fid_gopanic = t->fid_sigpanic = t->fid_panicwrap = -1;
	t->fid_asyncpreempt = t->fid_debugcall = -1;
	int maxid = 0;
	for (uint64_t i = 0; i < t->nfunc; i++) {
		uint32_t foff = go_u32(t->ftab + 8 * i + 4);
		if ((uint64_t)foff + t->func_size > t->ftab_len)
			continue;
		const uint8_t *f = t->ftab + foff;
		uint8_t id = f[t->func_size == 40 ? 36 : 40];
		if (id > maxid)
			maxid = id;
		if (id == 0)
			continue;
		const char *name = go_funcname_off(t, (int32_t)go_u32(f + 4));
		if (!name || strncmp(name, "runtime.", 8) != 0)
			continue;
		name += 8;
		if (strcmp(name, "gopanic") == 0)
			t->fid_gopanic = id;
		else if (strcmp(name, "sigpanic") == 0)
			t->fid_sigpanic = id;
		else if (strcmp(name, "panicwrap") == 0)
			t->fid_panicwrap = id;
		else if (strcmp(name, "asyncPreempt") == 0)
			t->fid_asyncpreempt = id;
		else if (strcmp(name, "debugCallV2") == 0)
			t->fid_debugcall = id;
	}
	t->fid_wrapper = maxid;
	return 0;
}

static void decode_func(const struct go_target *t, const uint8_t *f, struct go_func *ret)
{
	ret->raw = f;
	ret->entry = t->text_start + go_u32(f);
	ret->nameoff = (int32_t)go_u32(f + 4);
	ret->pcsp = go_u32(f + 16);
	ret->pcfile = go_u32(f + 20);
	ret->pcln = go_u32(f + 24);
	ret->npcdata = go_u32(f + 28);
	ret->cu_offset = go_u32(f + 32);
	if (t->func_size == 40) {
		ret->start_line = 0;
		ret->funcid = f[36];
		ret->flag = f[37];
		ret->nfuncdata = f[39];
	} else {
		ret->start_line = (int32_t)go_u32(f + 36);
		ret->funcid = f[40];
		ret->flag = f[41];
		ret->nfuncdata = f[43];
	}
}

bool go_func_by_name(const struct go_target *t, const char *name, uint64_t *ret_entry, uint64_t *ret_end)
{
	for (uint64_t i = 0; i < t->nfunc; i++) {
		uint32_t foff = go_u32(t->ftab + 8 * i + 4);
		if ((uint64_t)foff + t->func_size > t->ftab_len)
			continue;
		const char *n = go_funcname_off(t, (int32_t)go_u32(t->ftab + foff + 4));
		if (!n || strcmp(n, name) != 0)
			continue;
		/* ftab[i + 1] exists: ftab[nfunc] is the end sentinel */
		*ret_entry = t->text_start + go_u32(t->ftab + 8 * i);
		*ret_end = t->text_start + go_u32(t->ftab + 8 * (i + 1));
		return *ret_end > *ret_entry;
	}
	return false;
}

bool go_findfunc(const struct go_target *t, uint64_t pc, struct go_func *ret)
{
	if (pc < t->text_start)
		return false;
	uint64_t off = pc - t->text_start;
	/* ftab[nfunc] is the end sentinel */
	if (off < go_u32(t->ftab) || off >= go_u32(t->ftab + 8 * t->nfunc))
		return false;
	uint64_t lo = 0, hi = t->nfunc; /* invariant: ftab[lo].entry <= off < ftab[hi].entry */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (go_u32(t->ftab + 8 * mid) <= off)
			lo = mid;
		else
			hi = mid;
	}
	uint32_t foff = go_u32(t->ftab + 8 * lo + 4);
	if ((uint64_t)foff + t->func_size > t->ftab_len)
		return false;
	decode_func(t, t->ftab + foff, ret);
	uint64_t need = t->func_size + 4ull * ret->npcdata + 4ull * ret->nfuncdata;
	if (foff + need > t->ftab_len)
		return false;
	return true;
}

/* runtime.step / pcvalue: zig-zag value deltas, PC deltas (PCQuantum 1). */
int32_t go_pcvalue(const struct go_target *t, const struct go_func *f, uint32_t off, uint64_t targetpc)
{
	if (off == 0 || off >= t->pctab_len)
		return -1;
	const uint8_t *p = t->pctab + off, *end = t->pctab + t->pctab_len;
	uint64_t pc = f->entry;
	int32_t val = -1;
	bool first = true;
	for (;;) {
		uint32_t uv = 0, pcd = 0;
		for (int s = 0;; s += 7) {
			if (p >= end || s > 28)
				return -1;
			uint8_t b = *p++;
			uv |= (uint32_t)(b & 0x7f) << s;
			if (!(b & 0x80))
				break;
		}
		if (uv == 0 && !first)
			return -1;
		first = false;
		val += (int32_t)(-(uv & 1) ^ (uv >> 1));
		for (int s = 0;; s += 7) {
			if (p >= end || s > 28)
				return -1;
			uint8_t b = *p++;
			pcd |= (uint32_t)(b & 0x7f) << s;
			if (!(b & 0x80))
				break;
		}
		pc += pcd;
		if (targetpc < pc)
			return val;
	}
}

int32_t go_pcdata(const struct go_target *t, const struct go_func *f, uint32_t table, uint64_t pc)
{
	if (table >= f->npcdata)
		return -1;
	return go_pcvalue(t, f, go_u32(f->raw + t->func_size + 4 * table), pc);
}

uint64_t go_funcdata(const struct go_target *t, const struct go_func *f, uint8_t idx)
{
	if (idx >= f->nfuncdata || !t->gofunc)
		return 0;
	uint32_t off = go_u32(f->raw + t->func_size + 4 * f->npcdata + 4 * idx);
	if (off == 0xffffffff)
		return 0;
	return t->gofunc + off;
}

const char *go_funcname_off(const struct go_target *t, int32_t nameoff)
{
	if (nameoff < 0 || (size_t)nameoff >= t->funcnametab_len)
		return NULL;
	const char *s = (const char *)t->funcnametab + nameoff;
	if (!memchr(s, 0, t->funcnametab_len - (size_t)nameoff))
		return NULL;
	return s;
}

const char *go_funcname(const struct go_target *t, const struct go_func *f)
{
	const char *n = go_funcname_off(t, f->nameoff);
	return n ? n : "?";
}

const char *go_funcline(const struct go_target *t, const struct go_func *f, uint64_t pc, int *ret_line)
{
	int32_t fileno = go_pcvalue(t, f, f->pcfile, pc);
	int32_t line = go_pcvalue(t, f, f->pcln, pc);
	*ret_line = 0;
	if (fileno < 0 || line < 0)
		return "?";
	uint64_t ci = (uint64_t)f->cu_offset + (uint64_t)fileno;
	if ((ci + 1) * 4 > t->cutab_len)
		return "?";
	uint32_t foff = go_u32(t->cutab + 4 * ci);
	if (foff == 0xffffffff || foff >= t->filetab_len)
		return "?";
	const char *s = (const char *)t->filetab + foff;
	if (!memchr(s, 0, t->filetab_len - foff))
		return "?";
	*ret_line = line;
	return s;
}

bool go_inltree_at(const struct go_target *t, uint64_t tree, int32_t ix, struct go_inl *ret)
{
	if (ix < 0 || ix > (1 << 20))
		return false;
	const uint8_t *e = go_file_at(t, tree + (uint64_t)ix * t->inl_size, t->inl_size);
	if (!e)
		return false;
	if (t->inl_size == 20) { /* 1.18/1.19: parent i16, funcID u8, _, file, line, func_, parentPc */
		ret->funcid = e[2];
		ret->nameoff = (int32_t)go_u32(e + 12);
		ret->parent_pc = (int32_t)go_u32(e + 16);
		ret->start_line = 0;
	} else { /* 1.20+: funcID u8, _[3], nameOff, parentPc, startLine */
		ret->funcid = e[0];
		ret->nameoff = (int32_t)go_u32(e + 4);
		ret->parent_pc = (int32_t)go_u32(e + 8);
		ret->start_line = (int32_t)go_u32(e + 12);
	}
	return true;
}

/* funcNamePiecesForPrint (1.21+): everything inside the outermost [...]
 * becomes "...". 1.18-1.20 already store that form, so applying it always
 * is right. */
void go_print_name(const char *name, char *buf, size_t len)
{
	const char *i = strchr(name, '[');
	const char *j = strrchr(name, ']');
	if (!i || !j || j <= i) {
		snprintf(buf, len, "%s", name);
		return;
	}
	snprintf(buf, len, "%.*s[...]%s", (int)(i - name), name, j + 1);
}

int go_target_symbolize_pc(const struct go_target *t, uint64_t addr, go_frame_fn cb, void *ctx)
{
	struct go_func f;
	uint64_t pc = addr - t->bias;
	if (!go_findfunc(t, pc, &f))
		return 0;
	int n = 0;
	uint64_t tree = go_funcdata(t, &f, FUNCDATA_INLTREE);
	uint64_t tracepc = pc;
	char name[512];
	/* runtime.Frames.Next: a wrapper is dropped unless it called gopanic,
	 * sigpanic or panicwrap (elideWrapperCalling), looking at the frame
	 * before it (for allFrames, within this PC: normal at first) */
	int last = 0;
#define ELIDED(id) ((id) == t->fid_wrapper && (id) >= 0 && last != t->fid_gopanic && \
		    last != t->fid_sigpanic && last != t->fid_panicwrap)
	/* A sane binary inlines a few levels deep (the inliner's budget);
	 * a hostile inline tree can point a call at itself forever. */
	for (int depth = 0; tree && depth < GO_MAX_INLINE_DEPTH; depth++) {
		int32_t ix = go_pcdata(t, &f, PCDATA_INLTREE, tracepc);
		struct go_inl ic;
		if (ix < 0 || !go_inltree_at(t, tree, ix, &ic))
			break;
		const char *symbol = go_funcname_off(t, ic.nameoff);
		if (!symbol)
			symbol = "?";
		go_print_name(symbol, name, sizeof(name));
		struct go_frame fr = {.function = name,
				      .symbol_name = symbol,
				      .entry = f.entry + t->bias,
				      .start_line = ic.start_line,
				      .inlined = true};
		fr.file = go_funcline(t, &f, tracepc, &fr.line);
		fr.pprof_elided = ELIDED((int)ic.funcid);
		last = ic.funcid;
		int r = cb(ctx, &fr);
		if (r)
			return r;
		n++;
		tracepc = f.entry + (uint64_t)(int64_t)ic.parent_pc;
	}
	const char *symbol = go_funcname(t, &f); /* "?" when unreadable */
	go_print_name(symbol, name, sizeof(name));
	struct go_frame fr = {.function = name,
			      .symbol_name = symbol,
			      .entry = f.entry + t->bias,
			      .start_line = f.start_line};
	fr.file = go_funcline(t, &f, tracepc, &fr.line);
	fr.pprof_elided = ELIDED((int)f.funcid);
#undef ELIDED
	int r = cb(ctx, &fr);
	return r ? r : n + 1;
}
