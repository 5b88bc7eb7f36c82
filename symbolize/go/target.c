/* SPDX-License-Identifier: MIT */
/*
 * go_target: everything read from the executable file before the pause.
 *
 * We work in link-time addresses against a private read-only mmap of the
 * file; the Go linker writes link-time pointer values into the file even
 * for PIE (checked with go1.19 -buildmode=pie: runtime.firstmoduledata's
 * first word is the link address of the pcHeader), so static tables such as
 * waitReasonStrings can be read without touching the target.
 */
#include "symbolize/target_access.h"
#include "internal.h"

#include <elf.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A Go string header {ptr, len} at a link address, copied out of the file. */
static char *file_gostring(const struct go_target *t, uint64_t hdr_addr)
{
	const uint8_t *h = go_file_at(t, hdr_addr, 16);
	if (!h)
		return NULL;
	uint64_t p = go_u64(h), n = go_u64(h + 8);
	if (n > 4096)
		return NULL;
	const uint8_t *s = n ? go_file_at(t, p, n) : (const uint8_t *)"";
	if (!s)
		return NULL;
	return strndup((const char *)s, n);
}

static uint64_t uvarint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static void set_version(struct go_target *t, const char *v, size_t n)
{
	if (n >= sizeof(t->version))
		n = sizeof(t->version) - 1;
	memcpy(t->version, v, n);
	t->version[n] = 0;
	if (strncmp(t->version, "go1.", 4) == 0)
		t->minor = atoi(t->version + 4);
}

/* src/debug/buildinfo/buildinfo.go readRawBuildInfo, both header formats. */
static void version_from_buildinfo(struct go_target *t)
{
	GElf_Shdr sh;
	if (!go_find_section(t->elf, ".go.buildinfo", &sh) || sh.sh_type == SHT_NOBITS)
		return;
	if (sh.sh_offset > t->map_len || sh.sh_size > t->map_len - sh.sh_offset || sh.sh_size < 32)
		return;
	const uint8_t *b = t->map + sh.sh_offset, *end = b + sh.sh_size;
	if (memcmp(b, "\xff Go buildinf:", 14) != 0)
		return;
	if (b[15] & 2) { /* Go 1.18+: inline uvarint-prefixed strings */
		const uint8_t *p = b + 32;
		uint64_t n = uvarint(&p, end);
		if (n > 0 && n <= (uint64_t)(end - p))
			set_version(t, (const char *)p, n);
	} else if (b[14] == 8) { /* before 1.18: pointer to a string header */
		char *s = file_gostring(t, go_u64(b + 16));
		if (s) {
			set_version(t, s, strlen(s));
			free(s);
		}
	}
}

/* Stripped binaries without .go.buildinfo (seen: esbuild, Go 1.26.5) still
 * carry runtime.buildVersion's bytes in .rodata. */
static void version_from_rodata(struct go_target *t)
{
	GElf_Shdr sh;
	if (!go_find_section(t->elf, ".rodata", &sh) || sh.sh_type == SHT_NOBITS)
		return;
	if (sh.sh_offset > t->map_len || sh.sh_size > t->map_len - sh.sh_offset)
		return;
	const uint8_t *b = t->map + sh.sh_offset, *end = b + sh.sh_size;
	for (const uint8_t *p = b; (p = memmem(p, (size_t)(end - p), "go1.", 4)) != NULL; p++) {
		const uint8_t *q = p + 4;
		while (q < end && ((*q >= '0' && *q <= '9') || *q == '.'))
			q++;
		/* at least "go1.N" and not preceded by a letter (e.g. "cargo1.") */
		if (q - p >= 5 && p[4] >= '0' && p[4] <= '9' && (p == b || !((p[-1] | 0x20) >= 'a' && (p[-1] | 0x20) <= 'z'))) {
			set_version(t, (const char *)p, (size_t)(q - p));
			return;
		}
	}
}

struct want_sym {
	const char *name;
	uint64_t *addr;
	uint64_t *size;
};

static void read_symbols(struct go_target *t, uint64_t *wr_addr, uint64_t *wr_size, uint64_t *bv_addr,
			 uint64_t *fmd_addr, uint64_t *gofunc_sym)
{
	struct want_sym want[] = {
		{"runtime.allglen", &t->sym_allglen, NULL},
		{"runtime.allgptr", &t->sym_allgptr, NULL},
		{"runtime.allgs", &t->sym_allgs, NULL},
		{"runtime.allm", &t->sym_allm, NULL},
		{"runtime.fingRunning", &t->sym_fingrunning, NULL},
		{"runtime.fingStatus", &t->sym_fingstatus, NULL},
		{"runtime.sched", &t->sym_sched, NULL},
		{"runtime.allp", &t->sym_allp, NULL},
		{"runtime.gcController", &t->sym_gccontroller, NULL},
		{"runtime.mbuckets", &t->sym_mbuckets, NULL},
		{"runtime.mProfCycle", &t->sym_mprofcycle, NULL},
		{"runtime.mProf", &t->sym_mprof, NULL},
		{"runtime.MemProfileRate", &t->sym_memprofilerate, NULL},
		{"runtime.disableMemoryProfiling", &t->sym_disablememprof, NULL},
		{"runtime.bbuckets", &t->sym_bbuckets, NULL},
		{"runtime.xbuckets", &t->sym_xbuckets, NULL},
		{"runtime.blockprofilerate", &t->sym_blockrate, NULL},
		{"runtime.mutexprofilerate", &t->sym_mutexrate, NULL},
		{"runtime.ticks", &t->sym_ticks, NULL},
		{"runtime.waitReasonStrings", wr_addr, wr_size},
		{"runtime.buildVersion", bv_addr, NULL},
		{"runtime.firstmoduledata", fmd_addr, NULL},
		{"go.func.*", gofunc_sym, NULL},   /* 1.18, 1.19 */
		{"go:func.*", gofunc_sym, NULL},   /* 1.20+ */
	};
	GElf_Shdr sh;
	Elf_Scn *scn = go_find_section(t->elf, ".symtab", &sh);
	if (!scn)
		return;
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !sh.sh_entsize)
		return;
	size_t n = sh.sh_size / sh.sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(d, (int)i, &sym))
			continue;
		const char *name = elf_strptr(t->elf, sh.sh_link, sym.st_name);
		if (!name || (strncmp(name, "runtime.", 8) != 0 && strncmp(name, "go", 2) != 0))
			continue;
		for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
			if (strcmp(name, want[k].name) == 0) {
				*want[k].addr = sym.st_value;
				if (want[k].size)
					*want[k].size = sym.st_size;
			}
		}
	}
}

/* ---- DWARF layouts ---- */

static bool die_named(Dwarf_Die *die, const char *name)
{
	const char *n = dwarf_diename(die);
	return n && strcmp(n, name) == 0;
}

/* Offset of a member path "a.b.c" inside struct s, following member types
 * through typedefs; -1 if any step is missing. */
static int member_offset(Dwarf_Die *s, const char *path)
{
	Dwarf_Die cur = *s;
	int total = 0;
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", path);
	char *save = NULL;
	for (char *part = strtok_r(buf, ".", &save); part; part = strtok_r(NULL, ".", &save)) {
		Dwarf_Die child;
		bool found = false;
		if (dwarf_child(&cur, &child) != 0)
			return -1;
		do {
			if (dwarf_tag(&child) != DW_TAG_member || !die_named(&child, part))
				continue;
			Dwarf_Attribute a;
			Dwarf_Word off;
			/* a forged offset: no runtime struct is 64 KiB */
			if (!dwarf_attr(&child, DW_AT_data_member_location, &a) || dwarf_formudata(&a, &off) != 0 ||
			    off > 65536 || total > 65536)
				return -1;
			total += (int)off;
			found = true;
			break;
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			return -1;
		/* descend into the member's type for the next part */
		Dwarf_Attribute ta;
		Dwarf_Die type;
		if (dwarf_attr(&child, DW_AT_type, &ta) && dwarf_formref_die(&ta, &type)) {
			while (dwarf_tag(&type) == DW_TAG_typedef && dwarf_attr(&type, DW_AT_type, &ta) &&
			       dwarf_formref_die(&ta, &type))
				;
			cur = type;
		}
	}
	return total;
}

static bool read_dwarf_layout(struct go_target *t)
{
	Dwarf *dw = dwarf_begin_elf(t->elf, DWARF_C_READ, NULL);
	if (!dw)
		return false;
	enum { S_G, S_M, S_MD, S_SCHED, S_P, S_GC, S_BUCKET, S_MEMREC, S_MEMCYC, S_N };
	static const char *const names[S_N] = {"runtime.g", "runtime.m", "runtime.moduledata", "runtime.schedt",
					       "runtime.p", "runtime.gcControllerState", "runtime.bucket",
					       "runtime.memRecord", "runtime.memRecordCycle"};
	Dwarf_Die found[S_N];
	bool have[S_N] = {0};
	int nfound = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (nfound < S_N && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, die;
		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &die) == 0) {
			do {
				if (dwarf_tag(&die) != DW_TAG_structure_type)
					continue;
				const char *n = dwarf_diename(&die);
				if (!n || strncmp(n, "runtime.", 8) != 0)
					continue;
				for (int k = 0; k < S_N; k++) {
					if (!have[k] && strcmp(n, names[k]) == 0) {
						found[k] = die;
						have[k] = true;
						nfound++;
					}
				}
			} while (nfound < S_N && dwarf_siblingof(&die, &die) == 0);
		}
		off = next;
	}
	if (have[S_BUCKET] && have[S_MEMREC] && have[S_MEMCYC]) {
		struct go_heap_layout *H = &t->HL;
		Dwarf_Die *b = &found[S_BUCKET], *mr = &found[S_MEMREC], *c = &found[S_MEMCYC];
		H->bucket_size = dwarf_bytesize(b);
		H->b_allnext = member_offset(b, "allnext");
		H->b_typ = member_offset(b, "typ");
		H->b_size = member_offset(b, "size");
		H->b_nstk = member_offset(b, "nstk");
		H->mr_active = member_offset(mr, "active");
		H->mr_future = member_offset(mr, "future");
		H->cyc_size = dwarf_bytesize(c);
		H->cyc_allocs = member_offset(c, "allocs");
		H->cyc_frees = member_offset(c, "frees");
		H->cyc_alloc_bytes = member_offset(c, "alloc_bytes");
		H->cyc_free_bytes = member_offset(c, "free_bytes");
		/* The binary's DWARF is the target's to forge: every field must
		 * lie inside its struct, and the structs be of a sane size
		 * (readers copy bucket_size bytes and index into them). */
#define INSIDE(off, size) ((off) >= 0 && (off) + 8 <= (size))
#define INSIDE_OR_ABSENT(off, size) ((off) == -1 || INSIDE(off, size))
		t->have_heap_layout = H->bucket_size > 0 && H->bucket_size <= 4096 && H->cyc_size > 0 &&
				      H->cyc_size <= 256 && INSIDE(H->b_allnext, H->bucket_size) &&
				      INSIDE(H->b_size, H->bucket_size) && INSIDE(H->b_nstk, H->bucket_size) &&
				      INSIDE_OR_ABSENT(H->b_typ, H->bucket_size) && H->mr_active >= 0 &&
				      H->mr_active <= 4096 && H->mr_future >= 0 && H->mr_future <= 4096 &&
				      INSIDE(H->cyc_allocs, H->cyc_size) && INSIDE(H->cyc_frees, H->cyc_size) &&
				      INSIDE_OR_ABSENT(H->cyc_alloc_bytes, H->cyc_size) &&
				      INSIDE_OR_ABSENT(H->cyc_free_bytes, H->cyc_size);
#undef INSIDE
#undef INSIDE_OR_ABSENT
	}
	bool ok = false;
	if (have[S_G] && have[S_M]) {
		struct go_layout *L = &t->L;
		Dwarf_Die *g = &found[S_G], *m = &found[S_M];
		L->g_stack_lo = member_offset(g, "stack.lo");
		L->g_stack_hi = member_offset(g, "stack.hi");
		L->g_m = member_offset(g, "m");
		L->g_sched_sp = member_offset(g, "sched.sp");
		L->g_sched_pc = member_offset(g, "sched.pc");
		L->g_sched_bp = member_offset(g, "sched.bp");
		L->g_syscallsp = member_offset(g, "syscallsp");
		L->g_syscallpc = member_offset(g, "syscallpc");
		/* uint32 up to 1.19, atomic.Uint32{value} from 1.20: same offset */
		L->g_atomicstatus = member_offset(g, "atomicstatus");
		L->g_goid = member_offset(g, "goid");
		L->g_waitsince = member_offset(g, "waitsince");
		L->g_waitreason = member_offset(g, "waitreason");
		L->g_lockedm = member_offset(g, "lockedm");
		L->g_gopc = member_offset(g, "gopc");
		L->g_startpc = member_offset(g, "startpc");
		L->g_labels = member_offset(g, "labels");
		L->g_parentgoid = member_offset(g, "parentGoid"); /* 1.21+ */
		L->m_procid = member_offset(m, "procid");
		L->m_curg = member_offset(m, "curg");
		L->m_alllink = member_offset(m, "alllink");
		L->m_vdsosp = member_offset(m, "vdsoSP");
		L->m_vdsopc = member_offset(m, "vdsoPC");
		L->m_createstack = member_offset(m, "createstack");
		L->md_gofunc = have[S_MD] ? member_offset(&found[S_MD], "gofunc") : -1;
		L->md_text = have[S_MD] ? member_offset(&found[S_MD], "text") : -1;
		L->sched_gfree_n = have[S_SCHED] ? member_offset(&found[S_SCHED], "gFree.n") : -1;
		L->sched_ngsys = have[S_SCHED] ? member_offset(&found[S_SCHED], "ngsys") : -1;
		L->p_gfree_n = have[S_P] ? member_offset(&found[S_P], "gFree.n") : -1;
		/* uint64 in 1.18/1.19, atomic.Uint64{value} from 1.20: same offset */
		L->gc_heaplive = have[S_GC] ? member_offset(&found[S_GC], "heapLive") : -1;
		ok = L->g_stack_lo >= 0 && L->g_stack_hi >= 0 && L->g_sched_sp >= 0 && L->g_sched_pc >= 0 &&
		     L->g_atomicstatus >= 0 && L->g_goid >= 0 && L->g_startpc >= 0 && L->g_gopc >= 0 &&
		     L->m_procid >= 0 && L->m_curg >= 0 && L->m_alllink >= 0 && L->g_m >= 0;
	}
	dwarf_end(dw);
	return ok;
}

static void layout_sizes(struct go_layout *L)
{
	int gf[] = {L->g_stack_lo, L->g_stack_hi, L->g_m, L->g_sched_sp, L->g_sched_pc, L->g_sched_bp,
		    L->g_syscallsp, L->g_syscallpc, L->g_atomicstatus, L->g_goid, L->g_waitsince,
		    L->g_waitreason, L->g_lockedm, L->g_gopc, L->g_startpc, L->g_labels, L->g_parentgoid};
	int mf[] = {L->m_procid, L->m_curg, L->m_alllink, L->m_vdsosp, L->m_vdsopc,
		    L->m_createstack >= 0 ? L->m_createstack + 8 * (GO_CREATESTACK - 1) : -1};
	L->g_read = 0;
	for (size_t i = 0; i < sizeof(gf) / sizeof(gf[0]); i++)
		if (gf[i] >= 0 && (size_t)gf[i] + 8 > L->g_read)
			L->g_read = (size_t)gf[i] + 8;
	L->m_read = 0;
	for (size_t i = 0; i < sizeof(mf) / sizeof(mf[0]); i++)
		if (mf[i] >= 0 && (size_t)mf[i] + 8 > L->m_read)
			L->m_read = (size_t)mf[i] + 8;
}

/* AT_ENTRY minus e_entry: simpler than matching the exe in /proc/PID/maps,
 * and right for deleted or foreign-namespace executables. */
static int bias_from_auxv(pid_t pid, uint64_t e_entry, uint64_t *ret)
{
	int fd = target_open_file(pid, TARGET_FILE_AUXV);
	if (fd < 0)
		return fd;
	uint64_t av[2];
	int r = -ENOENT;
	while (read(fd, av, sizeof(av)) == (ssize_t)sizeof(av) && av[0] != AT_NULL) {
		if (av[0] == AT_ENTRY) {
			*ret = av[1] - e_entry;
			r = 0;
			break;
		}
	}
	close(fd);
	return r;
}

static void load_waitreasons(struct go_target *t, uint64_t addr, uint64_t size)
{
	size_t n = size / 16;
	if (!addr || n == 0 || n > 256)
		return;
	t->waitreasons = calloc(n, sizeof(char *));
	if (!t->waitreasons)
		return;
	t->nwaitreasons = n;
	for (size_t i = 0; i < n; i++)
		t->waitreasons[i] = file_gostring(t, addr + 16 * i);
}

/* A Go string header in the file: its bytes if they look like a wait
 * reason (short, printable), else NULL. */
static const uint8_t *waitreason_at(const struct go_target *t, uint64_t hdr, uint64_t *ret_len)
{
	const uint8_t *h = go_file_at(t, hdr, 16);
	if (!h)
		return NULL;
	uint64_t n = go_u64(h + 8);
	const uint8_t *b = n && n <= 64 ? go_file_at(t, go_u64(h), n) : NULL;
	for (uint64_t i = 0; b && i < n; i++)
		if (b[i] < 0x20 || b[i] > 0x7e)
			return NULL;
	*ret_len = n;
	return b;
}

/* runtime.waitReasonStrings without .symtab: an array of string headers
 * in .data whose element 0 is "" (waitReasonZero) and element 1 "GC assist
 * marking", the first reason in every release from 1.11 to 1.27; it ends
 * at the first element that is not a short printable string. */
static void waitreasons_from_data(struct go_target *t, uint64_t *ret_addr, uint64_t *ret_size)
{
	static const char first[] = "GC assist marking";
	GElf_Shdr sh;
	/* a section header is the binary's to write: scan no more than the file */
	if (!go_find_section(t->elf, ".data", &sh) || sh.sh_type == SHT_NOBITS || sh.sh_size > t->map_len)
		return;
	for (uint64_t a = sh.sh_addr + 16; a + 16 <= sh.sh_addr + sh.sh_size; a += 8) {
		uint64_t n = 0;
		const uint8_t *b = waitreason_at(t, a, &n);
		const uint8_t *zero = go_file_at(t, a - 16, 16);
		if (!b || n != sizeof(first) - 1 || memcmp(b, first, n) != 0 || !zero || go_u64(zero + 8) != 0)
			continue;
		uint64_t count = 2;
		while (count < 256 && a + 16 * count <= sh.sh_addr + sh.sh_size &&
		       waitreason_at(t, a - 16 + 16 * count, &n))
			count++;
		*ret_addr = a - 16;
		*ret_size = 16 * count;
		return;
	}
}

int go_target_open(pid_t pid, const char *exe_path, struct go_target **ret)
{
	elf_version(EV_CURRENT);
	struct go_target *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->fd = -1;
	int r;
	/* NULL: the target's own executable, through target_access.h (a
	 * sandboxed worker opens no path itself). */
	t->fd = exe_path ? open(exe_path, O_RDONLY | O_CLOEXEC) : target_open_file(pid, TARGET_FILE_EXE);
	if (t->fd < 0) {
		r = exe_path ? -errno : t->fd;
		t->fd = -1;
		goto fail;
	}
	struct stat st;
	if (fstat(t->fd, &st) != 0) {
		r = -errno;
		goto fail;
	}
	t->map_len = (size_t)st.st_size;
	/* writable private mapping: libelf decompresses SHF_COMPRESSED
	 * .debug_* sections (Go 1.19 writes zlib ones) in place */
	void *m = mmap(NULL, t->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE, t->fd, 0);
	if (m == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	t->map = m;
	t->elf = elf_memory((char *)m, t->map_len);
	GElf_Ehdr eh;
	if (!t->elf || elf_kind(t->elf) != ELF_K_ELF || !gelf_getehdr(t->elf, &eh)) {
		r = -ENOTSUP;
		goto fail;
	}
	if (eh.e_machine != EM_X86_64) {
		r = -ENOTSUP;
		goto fail;
	}
	size_t nph;
	if (elf_getphdrnum(t->elf, &nph) != 0) {
		r = -EINVAL;
		goto fail;
	}
	for (size_t i = 0; i < nph && t->nloads < 16; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(t->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			t->loads[t->nloads++] = (struct go_load){ph.p_vaddr, ph.p_offset, ph.p_filesz};
	}

	/* Not Go: said before the symbol table is walked (milliseconds for a
	 * large C++ binary, paid by every dump). Every Go toolchain since 1.13
	 * writes .go.buildinfo, and its linker the pclntab and build-id note. */
	static const char *const go_sections[] = {".go.buildinfo", ".gopclntab",
						  ".data.rel.ro.gopclntab", ".note.go.buildid"};
	bool go = false;
	for (size_t i = 0; i < sizeof(go_sections) / sizeof(go_sections[0]) && !go; i++) {
		GElf_Shdr sh;
		go = go_find_section(t->elf, go_sections[i], &sh);
	}
	if (!go) {
		r = -ENOTSUP;
		goto fail;
	}

	uint64_t wr_addr = 0, wr_size = 0, bv_addr = 0, fmd = 0, gofunc_sym = 0;
	read_symbols(t, &wr_addr, &wr_size, &bv_addr, &fmd, &gofunc_sym);
	t->globals_source = t->sym_allgs && t->sym_allglen && t->sym_allm ? "symtab" : "none";

	r = go_pclntab_init(t);
	if (r < 0)
		goto fail;

	version_from_buildinfo(t);
	if (!t->version[0] && bv_addr) {
		char *s = file_gostring(t, bv_addr);
		if (s) {
			set_version(t, s, strlen(s));
			free(s);
		}
	}
	if (!t->version[0])
		version_from_rodata(t);
	if (!t->version[0]) {
		/* Only the pclntab era is known; assume its oldest release. */
		snprintf(t->version, sizeof(t->version), "go1.x?");
		t->minor = t->magic == 0xfffffff0 ? 18 : 20;
	}

	t->have_layout = read_dwarf_layout(t);
	t->layout_source = t->have_layout ? "dwarf" : "none";
	struct go_layout table;
	struct go_heap_layout heap_table;
	bool have_table = go_layout_for_version(t->minor, &table, &heap_table);
	if (!t->have_layout && have_table) {
		t->L = table;
		t->have_layout = true;
		t->layout_source = "table";
	}
	if (t->have_layout)
		layout_sizes(&t->L);
	/* every g and m read copies this much: a forged layout is refused */
	if (t->have_layout && (t->L.g_read > 65536 || t->L.m_read > 65536))
		t->have_layout = false;
	if (!t->have_heap_layout && have_table) {
		t->HL = heap_table;
		t->have_heap_layout = true;
	}

	/* funcdata base: moduledata.gofunc, else the go.func.* symbol. */
	int md_gofunc = t->have_layout ? t->L.md_gofunc : -1;
	if (md_gofunc < 0) /* a release without a row (layouts.c): 1.27 moved it to +344 */
		md_gofunc = t->minor >= 27 ? 344 : t->minor >= 20 ? 320 : 304;
	if (!fmd) {
		/* Stripped: moduledata starts with a pointer to the pcHeader
		 * (eBPF profiler doc/gopclntab.md); scan the data sections. */
		static const char *const secs[] = {".noptrdata", ".data", ".go.module"};
		uint64_t want = t->pcln_addr;
		for (size_t k = 0; want && !fmd && k < 3; k++) {
			GElf_Shdr sh;
			if (!go_find_section(t->elf, secs[k], &sh) || sh.sh_type == SHT_NOBITS ||
			    sh.sh_size > t->map_len)
				continue;
			for (uint64_t a = sh.sh_addr; a + 8 <= sh.sh_addr + sh.sh_size; a += 8) {
				const uint8_t *p = go_file_at(t, a, 8);
				if (p && go_u64(p) == want) {
					fmd = a;
					break;
				}
			}
		}
	}
	if (fmd) {
		const uint8_t *p = go_file_at(t, fmd + (uint64_t)md_gofunc, 8);
		if (p)
			t->gofunc = go_u64(p);
		/* moduledata.text: +176 in every release from 1.18 to 1.27
		 * (the Go matrix test checks it against runtime.text in each
		 * plain build); DWARF, where present, says it itself. Without
		 * this a stripped 1.26+ binary, whose pcHeader.textStart is 0,
		 * had every PC looked up against the wrong base. */
		int md_text = t->have_layout && t->L.md_text >= 0 ? t->L.md_text : 176;
		if (t->text_start == 0 && (p = go_file_at(t, fmd + (uint64_t)md_text, 8)))
			t->text_start = go_u64(p);
	}
	if (!t->gofunc)
		t->gofunc = gofunc_sym;
	if (t->text_start == 0) {
		/* pcHeader.textStart is 0 in some binaries (Go 1.26.5, recipe §15.2) */
		GElf_Shdr sh;
		if (go_find_section(t->elf, ".text", &sh))
			t->text_start = sh.sh_addr;
	}
	if (!wr_addr)
		waitreasons_from_data(t, &wr_addr, &wr_size);
	go_heap_globals_from_code(t);
	go_contention_globals_from_code(t);
	load_waitreasons(t, wr_addr, wr_size);

	if (pid > 0 && eh.e_type == ET_DYN) {
		uint64_t bias = 0;
		if (bias_from_auxv(pid, eh.e_entry, &bias) == 0)
			t->bias = bias;
	}
	*ret = t;
	return 0;
fail:
	go_target_free(t);
	return r;
}

void go_target_free(struct go_target *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nwaitreasons; i++)
		free(t->waitreasons[i]);
	free(t->waitreasons);
	if (t->elf)
		elf_end(t->elf);
	if (t->map)
		munmap((void *)t->map, t->map_len);
	if (t->fd >= 0)
		close(t->fd);
	free(t);
}

const char *go_target_version(const struct go_target *t)
{
	return t->version;
}

void go_target_set_bias(struct go_target *t, uint64_t bias)
{
	t->bias = bias;
}

uint64_t go_target_bias(const struct go_target *t)
{
	return t->bias;
}

bool go_target_can_list_goroutines(const struct go_target *t)
{
	return t->have_layout && t->sym_allglen && (t->sym_allgptr || t->sym_allgs) && t->sym_allm;
}

const char *go_target_heap_globals_source(const struct go_target *t)
{
	return t->heap_globals_source;
}

const char *go_target_globals_source(const struct go_target *t)
{
	return t->globals_source;
}

const char *go_target_layout_source(const struct go_target *t)
{
	return t->layout_source;
}

const char *go_target_goroutines_unreadable_because(const struct go_target *t)
{
	if (go_target_can_list_goroutines(t))
		return NULL;
	if (!t->have_layout)
		return "no DWARF and no built-in struct layout for this Go release";
	if (!t->sym_allglen || !(t->sym_allgptr || t->sym_allgs) || !t->sym_allm) {
		if (t->globals_error == -ENOENT)
			return "no .symtab, and runtime.allgs and allm were not found in the target's "
			       "memory";
		if (t->globals_error == -E2BIG)
			return "no .symtab, and the search for runtime.allgs and allm in the target's "
			       "memory gave up (more candidates than a Go program has)";
		if (t->globals_error < 0)
			return "no .symtab, and the target's memory could not be read to find "
			       "runtime.allgs and allm";
		return "no .symtab: the addresses of runtime.allgs, allglen and allm are not known "
		       "(stripped binary)";
	}
	return "unknown";
}

int go_target_check_layout_table(const struct go_target *t, char *why, size_t size)
{
	struct go_layout L;
	struct go_heap_layout H;
	if (strcmp(t->layout_source, "dwarf") != 0 || !go_layout_for_version(t->minor, &L, &H))
		return -ENOENT;
#define SAME(a, b, f)                                                                              \
	if ((a).f != (b).f) {                                                                      \
		snprintf(why, size, "go1.%d %s: table %d, DWARF %d", t->minor, #f, (int)(a).f,     \
			 (int)(b).f);                                                              \
		return 0;                                                                          \
	}
	SAME(L, t->L, g_stack_lo) SAME(L, t->L, g_stack_hi) SAME(L, t->L, g_m)
	SAME(L, t->L, g_sched_sp) SAME(L, t->L, g_sched_pc) SAME(L, t->L, g_sched_bp)
	SAME(L, t->L, g_syscallsp) SAME(L, t->L, g_syscallpc) SAME(L, t->L, g_atomicstatus)
	SAME(L, t->L, g_goid) SAME(L, t->L, g_waitsince) SAME(L, t->L, g_waitreason)
	SAME(L, t->L, g_lockedm) SAME(L, t->L, g_gopc) SAME(L, t->L, g_startpc)
	SAME(L, t->L, g_labels) SAME(L, t->L, g_parentgoid) SAME(L, t->L, m_procid)
	SAME(L, t->L, m_curg) SAME(L, t->L, m_alllink) SAME(L, t->L, m_vdsosp)
	SAME(L, t->L, m_vdsopc) SAME(L, t->L, m_createstack) SAME(L, t->L, md_gofunc)
	SAME(L, t->L, md_text)
	SAME(L, t->L, sched_gfree_n) SAME(L, t->L, sched_ngsys) SAME(L, t->L, p_gfree_n)
	SAME(L, t->L, gc_heaplive)
	if (t->have_heap_layout) {
		SAME(H, t->HL, bucket_size) SAME(H, t->HL, b_allnext) SAME(H, t->HL, b_typ)
		SAME(H, t->HL, b_size) SAME(H, t->HL, b_nstk) SAME(H, t->HL, mr_active)
		SAME(H, t->HL, mr_future) SAME(H, t->HL, cyc_size) SAME(H, t->HL, cyc_allocs)
		SAME(H, t->HL, cyc_frees) SAME(H, t->HL, cyc_alloc_bytes)
		SAME(H, t->HL, cyc_free_bytes)
	}
#undef SAME
	return 1;
}
