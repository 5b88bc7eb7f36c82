/* Offline unwinding of captured threads with libunwind's remote API.
 *
 * A module's tables are copied out of its file with pread, not mmap'd: a
 * target (or anyone) that truncates a mapped file would turn our reads of
 * an mmap into SIGBUS, and this code also runs inside the tool when the
 * worker cannot be forked. The copy is the .eh_frame_hdr and .eh_frame
 * part of one segment (184 KiB for libc), once per module and unwinder.
 * Out of memory: a module whose copy cannot be allocated has no tables. */
#include "symbolize/target_access.h"
#include "symbolize/unwind/unwind.h"
#include "symbolize/unwind/step_cache.h"
#include "symbolize/arrays.h"

#include <stddef.h>
#include <elf.h>
#include <errno.h>
#include <libunwind.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE_CACHE_SLOTS 256
#define PAGE_BYTES 4096u
/* The most of one module's file we copy: .eh_frame_hdr to the end of its
 * segment (.eh_frame, .gcc_except_table). A few MiB for the biggest real
 * programs; beyond the cap the rest is read from the target's memory. */
#define IMAGE_MAX_BYTES (128u << 20)
#define MAX_PHDRS 256
#define VDSO_MAX_BYTES (1u << 20) /* a vdso is a few pages */
/* .eh_frame_hdr's binary-search table: "datarel | sdata4", the only one
 * dwarf_search_unwind_table's remote lookup understands. */
#define DW_EH_PE_datarel_sdata4 0x3b
#define DW_EH_PE_omit 0xff

/* Exported by libunwind-x86_64.so.8 but not declared in its headers: the
 * .eh_frame_hdr table search behind _UPT_find_proc_info, which reads every
 * byte through our access_mem. */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/* A module's unwind tables, read once from the descriptor the opener gave. */
struct module_image {
	bool usable;           /* false: refused or unusable, walk by frame pointers */
	unw_dyn_info_t di;     /* the remote table, in runtime addresses */
	uint64_t data_start;   /* runtime address of data[0] */
	size_t data_len;       /* a multiple of 8 */
	uint8_t *data;         /* file bytes from .eh_frame(_hdr) to the segment's end */
};

struct exec_mapping {
	uint64_t start, limit, offset;
	bool vdso;                /* [vdso]: no file; its image is read from the target */
	char *line;               /* the maps line: identity across maps updates */
	struct module_image *img; /* NULL until first needed */
};

enum page_state { PAGE_EMPTY, PAGE_READ, PAGE_UNREADABLE };

struct cached_page {
	uint64_t addr; /* page address */
	enum page_state state;
	uint8_t bytes[PAGE_BYTES];
};

struct unwinder {
	pid_t pid;
	unw_addr_space_t as;
	struct unwind_opener opener;
	bool have_opener;
	struct exec_mapping *maps; /* in address order */
	size_t nmaps;
	const struct module_image *last_img; /* access_mem's last hit */
	struct cached_page *pages; /* direct-mapped cache of live read-only memory */
	/* The thread being unwound right now (libunwind's arg is ours too,
	 * but a static pointer keeps the accessors simple). */
	const struct thread_capture *tc;
	uint64_t stack_map_start, stack_map_end; /* mapping holding tc's stack */
	/* Bounds of every mapping, in address order, for finding a stack's
	 * mapping by binary search. */
	uint64_t *all_starts, *all_ends;
	size_t nall, all_cap;
	struct step_cache *steps; /* register rules by PC range, filled as walks need them */
	bool use_steps;           /* false: every step is unw_step (the reference) */
};

static struct unwinder *current;

static void image_free(struct module_image *img)
{
	if (img) {
		free(img->data);
		free(img);
	}
}

static void free_exec_mappings(struct exec_mapping *maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(maps[i].line);
		image_free(maps[i].img);
	}
	free(maps);
}

/* ---- reading a module's tables from its file ---- */

static bool pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return true;
}

/* Where a module's bytes come from: its file (the opener's descriptor),
 * or, for the vdso, which has no file, a copy of its image out of the
 * target's memory: the kernel maps it whole, so an offset in the ELF is an
 * offset in the mapping. Either is parsed as hostile. */
struct image_src {
	int fd;             /* -1: mem */
	const uint8_t *mem;
	uint64_t size;
};

static bool src_read(const struct image_src *s, void *buf, size_t len, uint64_t off)
{
	if (s->fd >= 0)
		return pread_all(s->fd, buf, len, off);
	if (off > s->size || len > s->size - off)
		return false;
	memcpy(buf, s->mem + off, len);
	return true;
}

/* Decode one encoded pointer of .eh_frame_hdr at hdr[*pos], where hdr (len
 * bytes) sits at link-time address hdr_vaddr. Only what a header can hold
 * without dereferencing anything: fixed-size formats, absolute, pc- or
 * hdr-relative. false on anything else or on running off the end. */
static bool read_encoded(const uint8_t *hdr, size_t len, size_t *pos, uint8_t enc,
			 uint64_t hdr_vaddr, uint64_t *ret)
{
	size_t size;
	uint64_t v = 0;
	bool sign = false;

	switch (enc & 0x0f) {
	case 0x00: size = 8; break; /* absptr */
	case 0x02: size = 2; break; /* udata2 */
	case 0x03: size = 4; break; /* udata4 */
	case 0x04: size = 8; break; /* udata8 */
	case 0x0a: size = 2; sign = true; break; /* sdata2 */
	case 0x0b: size = 4; sign = true; break; /* sdata4 */
	case 0x0c: size = 8; break; /* sdata8 */
	default: return false;
	}
	if (*pos > len || len - *pos < size)
		return false;
	for (size_t i = 0; i < size; i++)
		v |= (uint64_t)hdr[*pos + i] << (8 * i);
	if (sign && size < 8 && (v >> (8 * size - 1)) & 1)
		v |= ~(uint64_t)0 << (8 * size);
	switch (enc & 0xf0) {
	case 0x00: break;                               /* absolute */
	case 0x10: v += hdr_vaddr + *pos; break;        /* pcrel */
	case 0x30: v += hdr_vaddr; break;               /* datarel: from the header */
	default: return false;                          /* indirect, textrel, ... */
	}
	*pos += size;
	*ret = v;
	return true;
}

static const Elf64_Phdr *load_containing_offset(const Elf64_Phdr *ph, size_t n, uint64_t off,
						uint64_t len)
{
	for (size_t i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && off >= ph[i].p_offset &&
		    off - ph[i].p_offset <= ph[i].p_filesz &&
		    ph[i].p_filesz - (off - ph[i].p_offset) >= len)
			return &ph[i];
	return NULL;
}

/* Fill img from fd, the file mapped executable at m. Every number below
 * comes from the target's file: offsets are compared by subtraction so that
 * nothing wraps. Returns false when the module cannot have tables. */
static bool image_read(struct module_image *img, const struct image_src *src,
		       const struct exec_mapping *m)
{
	Elf64_Ehdr eh;
	uint64_t size = src->size;
	if (size < sizeof(eh))
		return false;
	if (!src_read(src, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_X86_64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum == 0 || eh.e_phnum > MAX_PHDRS || eh.e_phoff > size ||
	    (size - eh.e_phoff) / sizeof(Elf64_Phdr) < eh.e_phnum)
		return false;
	Elf64_Phdr ph[MAX_PHDRS];
	size_t nph = eh.e_phnum;
	if (!src_read(src, ph, nph * sizeof(Elf64_Phdr), eh.e_phoff))
		return false;

	/* The load bias, from the executable segment the mapping shows:
	 * runtime address of m->start minus its link-time address. */
	const Elf64_Phdr *text = load_containing_offset(ph, nph, m->offset, 1);
	if (!text || !(text->p_flags & PF_X))
		return false;
	uint64_t bias = m->start - (text->p_vaddr + (m->offset - text->p_offset));

	const Elf64_Phdr *eh_frame = NULL;
	for (size_t i = 0; i < nph && !eh_frame; i++)
		if (ph[i].p_type == PT_GNU_EH_FRAME)
			eh_frame = &ph[i];
	/* 4 bytes of version and encodings, then two encoded values. */
	if (!eh_frame || eh_frame->p_filesz < 8 || eh_frame->p_filesz > IMAGE_MAX_BYTES)
		return false;
	uint64_t hdr_off = eh_frame->p_offset, hdr_vaddr = eh_frame->p_vaddr;
	size_t hdr_len = (size_t)eh_frame->p_filesz;
	/* The header must be in the file and inside a read-only segment, at
	 * the address that segment gives it: what libunwind is told is then
	 * what the target has mapped there. */
	const Elf64_Phdr *seg = load_containing_offset(ph, nph, hdr_off, hdr_len);
	if (!seg || (seg->p_flags & PF_W) || hdr_off > size || size - hdr_off < hdr_len ||
	    hdr_vaddr - seg->p_vaddr != hdr_off - seg->p_offset)
		return false;

	uint8_t h[24];
	size_t hl = hdr_len < sizeof(h) ? hdr_len : sizeof(h), pos = 4;
	uint64_t eh_frame_vaddr = 0, fde_count;
	if (!src_read(src, h, hl, hdr_off) || h[0] != 1 || h[3] != DW_EH_PE_datarel_sdata4 ||
	    h[2] == DW_EH_PE_omit || (h[2] & 0x70) != 0)
		return false;
	bool have_eh_frame = h[1] != DW_EH_PE_omit;
	if (have_eh_frame && !read_encoded(h, hl, &pos, h[1], hdr_vaddr, &eh_frame_vaddr))
		return false;
	if (!read_encoded(h, hl, &pos, h[2], hdr_vaddr, &fde_count))
		return false;
	size_t table_off = pos; /* from the header's start */
	if (fde_count == 0 || fde_count > (hdr_len - table_off) / 8)
		return false;

	/* What we copy: from .eh_frame (when it precedes the header in the
	 * same segment) or the header, to the end of the segment's file
	 * bytes; the FDEs the table points at live there. */
	uint64_t seg_end = size - seg->p_offset < seg->p_filesz ? size : seg->p_offset + seg->p_filesz;
	uint64_t from = hdr_off;
	if (have_eh_frame && eh_frame_vaddr - seg->p_vaddr < hdr_off - seg->p_offset)
		from = seg->p_offset + (eh_frame_vaddr - seg->p_vaddr);
	if (seg_end - from > IMAGE_MAX_BYTES)
		from = hdr_off;
	if (seg_end - from > IMAGE_MAX_BYTES)
		seg_end = from + IMAGE_MAX_BYTES;
	if (seg_end < hdr_off + table_off + fde_count * 8)
		return false;
	/* Whole words: libunwind reads 8 aligned bytes at a time. */
	uint64_t a_from = from & ~(uint64_t)7, a_end = (seg_end + 7) & ~(uint64_t)7;
	size_t len = (size_t)(a_end - a_from);
	img->data = calloc(1, len);
	if (!img->data)
		return false;
	size_t avail = (size_t)((a_end < size ? a_end : size) - a_from);
	if (!src_read(src, img->data, avail, a_from)) {
		free(img->data);
		img->data = NULL;
		return false;
	}
	img->data_len = len;
	img->data_start = bias + seg->p_vaddr + (a_from - seg->p_offset);

	memset(&img->di, 0, sizeof(img->di));
	img->di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	img->di.start_ip = m->start;
	img->di.end_ip = m->limit;
	img->di.u.rti.segbase = bias + hdr_vaddr;
	img->di.u.rti.table_data = bias + hdr_vaddr + table_off;
	/* In unw_word_t units: one 8-byte {start, fde} pair each. */
	img->di.u.rti.table_len = fde_count * 8 / sizeof(unw_word_t);
	return true;
}

/* The image of m, opened and read on first need. NULL only on ENOMEM; a
 * module without tables gets an image with usable == false. */
static struct module_image *image_for(struct unwinder *u, struct exec_mapping *m)
{
	if (m->img)
		return m->img;
	struct module_image *img = calloc(1, sizeof(*img));
	if (!img)
		return NULL;
	if (m->vdso) {
		/* Its CFI is in target memory: without it a thread caught in
		 * clock_gettime lost every caller. */
		size_t len = (size_t)(m->limit - m->start);
		uint8_t *copy = len <= VDSO_MAX_BYTES ? malloc(len) : NULL;
		if (copy && target_read(u->pid, m->start, copy, len) == 0) {
			struct image_src src = {.fd = -1, .mem = copy, .size = len};
			img->usable = image_read(img, &src, m);
		}
		free(copy);
	} else if (u->have_opener) {
		struct unwind_module mod = {
			.start = m->start, .limit = m->limit, .offset = m->offset,
			.maps_line = m->line, .maps_line_len = strlen(m->line),
		};
		int fd = u->opener.open(u->opener.arg, &mod);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
			struct image_src src = {.fd = fd, .size = (uint64_t)st.st_size};
			img->usable = image_read(img, &src, m);
		}
		if (fd >= 0)
			close(fd);
	}
	m->img = img;
	return img;
}

/* ---- maps ---- */

static int note_mapping(struct unwinder *u, uint64_t start, uint64_t limit)
{
	if (u->nall == u->all_cap) {
		size_t cap = u->all_cap ? u->all_cap * 2 : 256;
		uint64_t *s = realloc(u->all_starts, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		u->all_starts = s;
		uint64_t *e = realloc(u->all_ends, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		u->all_ends = e;
		u->all_cap = cap;
	}
	u->all_starts[u->nall] = start;
	u->all_ends[u->nall] = limit;
	u->nall++;
	return 0;
}

int unwinder_update_maps(struct unwinder *u, const char *text, size_t len)
{
	/* Maps change all the time (every large malloc); the modules rarely
	 * do. Tables of modules whose line is unchanged are kept. */
	struct exec_mapping *old = u->maps;
	size_t nold = u->nmaps, cap = 64;
	u->maps = calloc(cap, sizeof(*u->maps));
	u->nmaps = 0;
	u->nall = 0;
	u->last_img = NULL;
	int r = u->maps ? 0 : -ENOMEM;
	for (size_t i = 0; i < len && r == 0;) {
		const char *p = text + i, *nl = memchr(p, '\n', len - i);
		size_t l = nl ? (size_t)(nl - p) : len - i;
		i += l + (nl ? 1 : 0);
		/* "start-limit perms offset dev inode path"; the numbers fit in
		 * a short prefix, so parse a bounded, terminated copy. */
		char buf[128];
		size_t bl = l < sizeof(buf) - 1 ? l : sizeof(buf) - 1;
		memcpy(buf, p, bl);
		buf[bl] = '\0';
		char *end;
		uint64_t start = strtoull(buf, &end, 16);
		uint64_t limit = *end == '-' ? strtoull(end + 1, &end, 16) : 0;
		if (limit <= start)
			continue;
		r = note_mapping(u, start, limit);
		/* perms follow a space; the path (if any) starts at the first '/'. */
		bool exec = (size_t)(end - buf) + 5 <= bl && end[3] == 'x';
		uint64_t offset = exec ? strtoull(end + 5, NULL, 16) : 0;
		bool vdso = exec && l >= 6 && memcmp(p + l - 6, "[vdso]", 6) == 0;
		if (r < 0 || !exec || (!memchr(p, '/', l) && !vdso))
			continue;
		if (u->nmaps == cap) {
			cap *= 2;
			struct exec_mapping *m = realloc(u->maps, cap * sizeof(*m));
			if (!m) {
				r = -ENOMEM;
				break;
			}
			u->maps = m;
		}
		struct exec_mapping *m = &u->maps[u->nmaps];
		*m = (struct exec_mapping){.start = start, .limit = limit, .offset = offset, .vdso = vdso};
		m->line = strndup(p, l);
		if (!m->line) {
			r = -ENOMEM;
			break;
		}
		u->nmaps++;
		for (size_t k = 0; k < nold; k++) {
			if (old[k].img && strcmp(old[k].line, m->line) == 0) {
				m->img = old[k].img;
				old[k].img = NULL;
				break;
			}
		}
	}
	/* A module that went away may come back elsewhere (or another in its
	 * place): drop libunwind's cached unwind state with it. */
	bool dropped = false;
	for (size_t i = 0; i < nold; i++)
		dropped |= old[i].img != NULL;
	free_exec_mappings(old, nold);
	if (dropped) {
		unw_flush_cache(u->as, 0, 0);
		step_cache_clear(u->steps);
	}
	for (size_t i = 0; i < PAGE_CACHE_SLOTS; i++)
		u->pages[i].state = PAGE_EMPTY;
	return r;
}

static struct exec_mapping *mapping_for(struct unwinder *u, uint64_t ip)
{
	/* The first mapping that ends above ip is the only one that can hold it. */
	size_t lo = addr_first_above(u->maps, u->nmaps, sizeof(u->maps[0]),
				     offsetof(struct exec_mapping, limit), ip);
	if (lo < u->nmaps && u->maps[lo].start <= ip)
		return &u->maps[lo];
	/* Not in kernel order (hand-made maps text): look at every one. */
	for (size_t i = 0; i < u->nmaps; i++)
		if (ip >= u->maps[i].start && ip < u->maps[i].limit)
			return &u->maps[i];
	return NULL;
}

/* ---- libunwind accessors ---- */

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	struct unwinder *u = current;
	struct exec_mapping *m = mapping_for(u, ip);
	struct module_image *img = m ? image_for(u, m) : NULL;
	if (!img || !img->usable)
		return -UNW_ENOINFO;
	return _Ux86_64_dwarf_search_unwind_table(as, ip, &img->di, pi, need_unwind_info, arg);
}

/* Only called for UNW_INFO_FORMAT_DYNAMIC, which we never hand out: the
 * unwind info of our tables is libunwind's own and freed by it. */
static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	return -UNW_ENOINFO;
}

static bool read_live(struct unwinder *u, uint64_t addr, void *out, size_t len)
{
	uint64_t page = addr & ~(uint64_t)(PAGE_BYTES - 1);
	if (addr + len > page + PAGE_BYTES)
		return target_read(u->pid, addr, out, len) == 0;
	struct cached_page *slot = &u->pages[(page / PAGE_BYTES) % PAGE_CACHE_SLOTS];
	if (slot->state == PAGE_EMPTY || slot->addr != page) {
		slot->addr = page;
		/* A page is readable as a whole or not at all: a failure is
		 * remembered too (hostile stack words make libunwind probe
		 * many unmapped addresses, each a syscall otherwise). */
		slot->state = target_read(u->pid, page, slot->bytes, PAGE_BYTES) == 0
				      ? PAGE_READ
				      : PAGE_UNREADABLE;
	}
	if (slot->state != PAGE_READ)
		return false;
	memcpy(out, slot->bytes + (addr - page), len);
	return true;
}

static bool image_has(const struct module_image *img, uint64_t addr)
{
	return img->data && addr >= img->data_start && addr - img->data_start <= img->data_len &&
	       img->data_len - (addr - img->data_start) >= sizeof(unw_word_t);
}

/* The copied tables holding addr, if any. libunwind reads a table byte by
 * byte (each an aligned word), so the last hit comes first. */
static const struct module_image *image_at(struct unwinder *u, uint64_t addr)
{
	if (u->last_img && image_has(u->last_img, addr))
		return u->last_img;
	for (size_t i = 0; i < u->nmaps; i++) {
		const struct module_image *img = u->maps[i].img;
		if (img && img->usable && image_has(img, addr))
			return u->last_img = img, img;
	}
	return NULL;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
	struct unwinder *u = current;
	const struct thread_capture *tc = u->tc;
	if (write)
		return -UNW_EINVAL; /* never modify the target */
	/* Offsets, not sums: addr comes from the target and may be near 2^64. */
	if (addr >= tc->stack_start && addr - tc->stack_start <= tc->stack_len &&
	    tc->stack_len - (addr - tc->stack_start) >= sizeof(*val)) {
		memcpy(val, tc->stack + (addr - tc->stack_start), sizeof(*val));
		return 0;
	}
	/* The live stack has moved on since the capture: reading it would mix
	 * two moments into one stack. Below SP or beyond the copy is off limits. */
	if (addr >= u->stack_map_start && addr < u->stack_map_end)
		return -UNW_EINVAL;
	/* Unwind tables: from the file we opened and checked, as it is mapped
	 * (file offset - segment offset + segment address + bias). */
	const struct module_image *img = image_at(u, addr);
	if (img) {
		memcpy(val, img->data + (addr - img->data_start), sizeof(*val));
		return 0;
	}
	return read_live(u, addr, val, sizeof(*val)) ? 0 : -UNW_EINVAL;
}

static const unw_word_t *reg_slot(const struct user_regs_struct *r, unw_regnum_t reg)
{
	switch (reg) {
	case UNW_X86_64_RAX: return (const unw_word_t *)&r->rax;
	case UNW_X86_64_RDX: return (const unw_word_t *)&r->rdx;
	case UNW_X86_64_RCX: return (const unw_word_t *)&r->rcx;
	case UNW_X86_64_RBX: return (const unw_word_t *)&r->rbx;
	case UNW_X86_64_RSI: return (const unw_word_t *)&r->rsi;
	case UNW_X86_64_RDI: return (const unw_word_t *)&r->rdi;
	case UNW_X86_64_RBP: return (const unw_word_t *)&r->rbp;
	case UNW_X86_64_RSP: return (const unw_word_t *)&r->rsp;
	case UNW_X86_64_R8: return (const unw_word_t *)&r->r8;
	case UNW_X86_64_R9: return (const unw_word_t *)&r->r9;
	case UNW_X86_64_R10: return (const unw_word_t *)&r->r10;
	case UNW_X86_64_R11: return (const unw_word_t *)&r->r11;
	case UNW_X86_64_R12: return (const unw_word_t *)&r->r12;
	case UNW_X86_64_R13: return (const unw_word_t *)&r->r13;
	case UNW_X86_64_R14: return (const unw_word_t *)&r->r14;
	case UNW_X86_64_R15: return (const unw_word_t *)&r->r15;
	case UNW_X86_64_RIP: return (const unw_word_t *)&r->rip;
	default: return NULL;
	}
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
	if (write)
		return -UNW_EREADONLYREG;
	const unw_word_t *slot = reg_slot(&current->tc->regs, reg);
	if (!slot)
		return -UNW_EBADREG;
	*val = *slot;
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
			void *arg)
{
	return -UNW_EBADREG;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	return -UNW_EINVAL; /* never resume or redirect the target */
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
			 unw_word_t *offp, void *arg)
{
	/* Names come from symbolize/ (libdw); libunwind's ELF symbol reader
	 * crashes on hostile files (reliability.md 1.8). */
	return -UNW_ENOINFO;
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

int unwinder_new(pid_t pid, const char *maps_text, size_t maps_len,
		 const struct unwind_opener *opener, struct unwinder **ret)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->pid = attach_memory_tid(pid);
	if (opener && opener->open) {
		u->opener = *opener;
		u->have_opener = true;
	}
	u->pages = calloc(PAGE_CACHE_SLOTS, sizeof(*u->pages));
	u->as = unw_create_addr_space(&accessors, 0);
	u->use_steps = true;
	if (!u->pages || !u->as || step_cache_new(&u->steps) < 0) {
		unwinder_free(u);
		return -ENOMEM;
	}
	/* Unwind rules are cached by step_cache, not by libunwind: its cache
	 * masks every signal around each lookup (two system calls a step),
	 * and it is keyed by PC alone, so a PC met first as a leaf (looked
	 * up at ip) was later stepped as a caller (at ip - 1) by the leaf's
	 * rule, or the other way round. */
	unw_set_caching_policy(u->as, UNW_CACHE_NONE);
	int r = unwinder_update_maps(u, maps_text, maps_len);
	if (r < 0) {
		unwinder_free(u);
		return r;
	}
	*ret = u;
	return 0;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	free_exec_mappings(u->maps, u->nmaps);
	free(u->all_starts);
	free(u->all_ends);
	if (u->as)
		unw_destroy_addr_space(u->as);
	free(u->pages);
	step_cache_free(u->steps);
	free(u);
}

void unwinder_use_step_cache(struct unwinder *u, bool on)
{
	u->use_steps = on;
}

static bool stack_word(const struct thread_capture *tc, uint64_t addr, uint64_t *val)
{
	if (addr < tc->stack_start || addr - tc->stack_start > tc->stack_len ||
	    tc->stack_len - (addr - tc->stack_start) < 8 || (addr & 7))
		return false;
	memcpy(val, tc->stack + (addr - tc->stack_start), 8);
	return true;
}

/* Continue with the frame-pointer chain from rbp: [rbp] is the caller's rbp,
 * [rbp+8] the return address. Only words of the stack copy are trusted,
 * and the chain must move towards the stack's top. */
static size_t walk_frame_pointers(const struct thread_capture *tc, uint64_t rbp, uint64_t *pcs,
				  size_t n, size_t max, bool *complete)
{
	*complete = false;
	while (n < max) {
		uint64_t next, ra;
		if (!stack_word(tc, rbp, &next) || !stack_word(tc, rbp + 8, &ra))
			return n;
		if (ra == 0) {
			*complete = true;
			return n;
		}
		pcs[n++] = ra;
		if (next == 0) {
			*complete = true;
			return n;
		}
		if (next <= rbp)
			return n;
		rbp = next;
	}
	return n;
}

static void find_stack_mapping(struct unwinder *u, uint64_t sp)
{
	size_t lo = addr_first_above(u->all_ends, u->nall, sizeof(u->all_ends[0]), 0, sp);
	bool found = lo < u->nall && u->all_starts[lo] <= sp;
	u->stack_map_start = found ? u->all_starts[lo] : 0;
	u->stack_map_end = found ? u->all_ends[lo] : 0;
}

/* How the next step of a walk is taken. libunwind's cursor knows how the
 * next frame's PC is to be looked up (at ip for the leaf and for a frame
 * a signal interrupted, at ip - 1 for the callers of ordinary frames:
 * a return address may be past its function's end, after a noreturn
 * call), and only unw_step sets that; applying held rules does not. */
enum walk_mode {
	WALK_LEAF_HELD,  /* the leaf by held rules (at ip), if there are any */
	WALK_ALL_HELD,   /* after it: held rules (ip - 1) or start again */
	WALK_LEAF,       /* the leaf by unw_step, which sets the callers' look-up */
	WALK_CALLERS,    /* after it: held rules (ip - 1), else unw_step */
	WALK_LIBUNWIND,  /* past a signal frame: unw_step to the end */
};

/* walk_step's answer when the walk must start again with WALK_LEAF. */
#define WALK_AGAIN INT_MIN

static int hold_range(void *token, void *state, size_t size, unw_word_t start, unw_word_t end)
{
	int r = step_cache_add(token, start, end, state, size);
	return r == -ENOMEM ? -UNW_ENOMEM : 0;
}

/* The rules for pc: held ones, or else those of the function libunwind
 * finds for the cursor (a copy of it runs unw_reg_states_iterate, which
 * hands over that whole function's rules, all held from then on). NULL
 * when pc has none even then: no CFI there, or the cursor's function is
 * not pc's. */
static const void *rules_for(struct unwinder *u, const unw_cursor_t *cursor, uint64_t pc)
{
	const void *rules = step_cache_find(u->steps, pc);
	if (rules)
		return rules;
	unw_cursor_t probe = *cursor;
	if (unw_reg_states_iterate(&probe, hold_range, u->steps) < 0)
		return NULL;
	return step_cache_find(u->steps, pc);
}

/* The step unw_step takes, by rules: 1 stepped, 0 the outermost frame,
 * < 0 libunwind's error. */
static int apply_rules(unw_cursor_t *cursor, const void *rules)
{
	int r = unw_apply_reg_state(cursor, (void *)rules);
	/* unw_step's end of the chain on x86-64: an undefined rbp, as well
	 * as an undefined return address. */
	unw_save_loc_t rbp;
	if (r > 0 && unw_get_save_loc(cursor, UNW_X86_64_RBP, &rbp) == 0 &&
	    rbp.type == UNW_SLT_NONE)
		r = 0;
	return r;
}

/* libunwind's frame-chain guess (x86-64 Gstep.c, a frame without CFI
 * after one whose rsp is unknown) reads an rsp it never set: whatever an
 * earlier call left on our stack, often a pointer into it, whose word in
 * the target then becomes a "caller". Zeroing the stack it is about to
 * use makes that rsp 0: unreadable, and the guess gives up as it should,
 * the same way every time. */
static __attribute__((noinline, no_sanitize_address)) void scrub_stack_below(void)
{
	unsigned char below[4096];
	explicit_bzero(below, sizeof(below));
	__asm__ volatile("" : : "r"(below) : "memory");
}

/* One step up, as unw_step takes it (an unw_step with libunwind's cache
 * off, which reads and runs the function's CFI program every time: the
 * reference). Held rules, read once per function, take its place
 * wherever the look-up is known; see walk_mode. WALK_AGAIN: a frame
 * past a leaf stepped by rules needs libunwind. */
static int walk_step(struct unwinder *u, unw_cursor_t *cursor, enum walk_mode *mode)
{
	bool signal_frame = unw_is_signal_frame(cursor) > 0;
	unw_word_t ip = 0;
	unw_get_reg(cursor, UNW_REG_IP, &ip);
	const void *rules;
	switch (*mode) {
	case WALK_LEAF_HELD:
		*mode = WALK_LEAF;
		if (signal_frame || !(rules = rules_for(u, cursor, ip)))
			break; /* nothing done yet: unw_step it */
		*mode = WALK_ALL_HELD;
		return apply_rules(cursor, rules);
	case WALK_ALL_HELD:
		/* The cursor still looks up at ip, not ip - 1: the copy's
		 * function is the caller's unless the call ended a function
		 * (noreturn), and then its rules are found only if held. */
		if (signal_frame || ip == 0 || !(rules = rules_for(u, cursor, ip - 1)))
			return WALK_AGAIN;
		return apply_rules(cursor, rules);
	case WALK_CALLERS:
		if (!signal_frame && ip != 0 && (rules = rules_for(u, cursor, ip - 1)))
			return apply_rules(cursor, rules);
		break;
	case WALK_LEAF:
	case WALK_LIBUNWIND:
		break;
	}
	if (signal_frame)
		*mode = WALK_LIBUNWIND;
	else if (*mode == WALK_LEAF)
		*mode = u->use_steps ? WALK_CALLERS : WALK_LIBUNWIND;
	scrub_stack_below();
	return unw_step(cursor);
}

/* Step with libunwind from u->tc's registers, appending the callers
 * found to pcs[*n..max); *complete when it reached the outermost frame.
 * *first_cfa: the SP after the first step (the CFA of u->tc's frame), 0
 * if that step failed. */
static void cfi_walk(struct unwinder *u, uint64_t *pcs, size_t *n, size_t max, bool *complete,
		     uint64_t *last_rbp, uint64_t *first_cfa)
{
	size_t n0 = *n;
	uint64_t rbp0 = *last_rbp;
	enum walk_mode mode = u->use_steps ? WALK_LEAF_HELD : WALK_LEAF;
again:
	*n = n0;
	*last_rbp = rbp0;
	*first_cfa = 0;
	unw_cursor_t cursor;
	if (unw_init_remote(&cursor, u->as, u) != 0)
		return;
	uint64_t prev_ip = u->tc->regs.rip, prev_sp = u->tc->regs.rsp;
	while (*n < max) {
		int r = walk_step(u, &cursor, &mode);
		if (r == WALK_AGAIN) {
			mode = WALK_LEAF;
			goto again;
		}
		if (r == 0) {
			*complete = true;
			break;
		}
		if (r < 0)
			break;
		unw_word_t ip, sp, bp;
		unw_get_reg(&cursor, UNW_REG_IP, &ip);
		unw_get_reg(&cursor, UNW_REG_SP, &sp);
		if (unw_get_reg(&cursor, UNW_X86_64_RBP, &bp) == 0)
			*last_rbp = bp;
		if (ip == 0) {
			*complete = true;
			break;
		}
		if (!*first_cfa)
			*first_cfa = sp;
		/* Guard against unwind info that does not advance. */
		if (ip == prev_ip && sp == prev_sp)
			break;
		pcs[(*n)++] = ip;
		prev_ip = ip;
		prev_sp = sp;
	}
}

/* The general register an x86-64 'pop' writes (0: rax ... 15: r15),
 * in r; NULL for rsp. */
static unsigned long long *pop_target(struct user_regs_struct *r, unsigned reg)
{
	switch (reg) {
	case 0: return &r->rax;
	case 1: return &r->rcx;
	case 2: return &r->rdx;
	case 3: return &r->rbx;
	case 5: return &r->rbp;
	case 6: return &r->rsi;
	case 7: return &r->rdi;
	case 8: return &r->r8;
	case 9: return &r->r9;
	case 10: return &r->r10;
	case 11: return &r->r11;
	case 12: return &r->r12;
	case 13: return &r->r13;
	case 14: return &r->r14;
	case 15: return &r->r15;
	default: return NULL;
	}
}

#define EPILOGUE_MAX_BYTES 24

/* When the code at tc's PC is the tail of an epilogue, only pops of
 * registers and then a ret ('pop %rbp; ret', 'pop %r12; pop %rbp;
 * ret'...), run it on a copy of the registers, from the stack copy: out
 * gets the caller's registers. Those instructions are all that runs until
 * the caller, so the result is exact. false for any other code. */
static bool run_epilogue(struct unwinder *u, const struct thread_capture *tc,
			 struct user_regs_struct *out)
{
	uint8_t code[EPILOGUE_MAX_BYTES];
	uint64_t pc = tc->regs.rip;
	/* Up to the end of pc's page, then from the next if that is mapped:
	 * the code may end at the end of its mapping. */
	size_t len = PAGE_BYTES - (size_t)(pc & (PAGE_BYTES - 1));
	if (len > sizeof(code))
		len = sizeof(code);
	if (!read_live(u, pc, code, len))
		return false;
	if (len < sizeof(code) && read_live(u, pc + len, code + len, sizeof(code) - len))
		len = sizeof(code);
	*out = tc->regs;
	for (size_t i = 0; i < len; i++) {
		unsigned reg;
		if (code[i] == 0xc3 || (code[i] == 0xf3 && i + 1 < len && code[i + 1] == 0xc3)) {
			uint64_t ra;
			if (!stack_word(tc, out->rsp, &ra) || !ra)
				return false;
			out->rip = ra;
			out->rsp += 8;
			return true;
		}
		if (code[i] >= 0x58 && code[i] <= 0x5f)
			reg = code[i] - 0x58u;
		else if (code[i] == 0x41 && i + 1 < len && code[i + 1] >= 0x58 && code[i + 1] <= 0x5f)
			reg = 8u + (code[++i] - 0x58u);
		else
			return false;
		unsigned long long *dst = pop_target(out, reg);
		uint64_t v;
		if (!dst || !stack_word(tc, out->rsp, &v))
			return false;
		*dst = v;
		out->rsp += 8;
	}
	return false;
}

/* With its CFA just above the return address, the frame tc stands in
 * holds nothing of its caller's: it has not saved a register yet, or has
 * restored them all (an epilogue's pops are done; what is left ends in a
 * ret or a tail call's jmp). Its registers are then its caller's, but for
 * rip and rsp: out gets those. GCC's CFI after such pops still puts the
 * saved registers at their slots, below SP, outside a stack copy that
 * starts at SP (perf's), and the first caller whose CFA is rbp-based
 * fails. false for any other CFA (0: the CFI had no step for the PC). */
static bool frame_torn_down(const struct thread_capture *tc, uint64_t cfa,
			    struct user_regs_struct *out)
{
	uint64_t ra;
	if (cfa != tc->regs.rsp + 8 || !stack_word(tc, tc->regs.rsp, &ra) || !ra)
		return false;
	*out = tc->regs;
	out->rip = ra;
	out->rsp = cfa;
	return true;
}

int unwinder_unwind(struct unwinder *u, const struct thread_capture *tc, uint64_t *pcs,
		    size_t max, size_t *ret_n, bool *ret_truncated)
{
	*ret_n = 0;
	*ret_truncated = true;
	if (tc->outcome != THREAD_CAPTURED || max == 0)
		return -EINVAL;
	current = u;
	u->tc = tc;
	find_stack_mapping(u, tc->regs.rsp);

	size_t n = 0;
	bool complete = false;
	uint64_t last_rbp = tc->regs.rbp;
	pcs[n++] = tc->regs.rip;

	/* Caught in an epilogue's last pops or on its ret, the frame is
	 * torn down (or nearly): what is left to run is done here, and the
	 * unwind goes on from the caller. libunwind would follow the CFI,
	 * which after 'pop %rbp' still says the caller's rbp is saved at
	 * CFA-16, below SP: outside a copy that starts at SP (perf's), so
	 * the first frame whose CFA is rbp-based failed, and the frame chain
	 * from there ran out in code without frame pointers (libc's). */
	struct user_regs_struct caller;
	struct thread_capture returned;
	if (n < max && run_epilogue(u, tc, &caller)) {
		returned = *tc;
		returned.regs = caller;
		u->tc = &returned;
		last_rbp = caller.rbp;
		pcs[n++] = caller.rip;
	}
	uint64_t cfa;
	cfi_walk(u, pcs, &n, max, &complete, &last_rbp, &cfa);
	/* The CFI failed on the way out of a frame torn down by its epilogue
	 * (postgres's tuplestore: 'pop %rbp; jmp *%rax', 3-12 truncated
	 * stacks in 4000 samples): once more from its caller. The first
	 * walk's frames are kept unless this one goes all the way. */
	if (!complete && n < max && u->tc == tc && frame_torn_down(tc, cfa, &caller)) {
		uint64_t *first = malloc(n * sizeof(*pcs));
		if (first) {
			size_t first_n = n;
			uint64_t first_rbp = last_rbp;
			memcpy(first, pcs, n * sizeof(*pcs));
			returned = *tc;
			returned.regs = caller;
			u->tc = &returned;
			n = 1;
			last_rbp = caller.rbp;
			pcs[n++] = caller.rip;
			cfi_walk(u, pcs, &n, max, &complete, &last_rbp, &cfa);
			if (!complete) {
				memcpy(pcs, first, first_n * sizeof(*pcs));
				n = first_n;
				last_rbp = first_rbp;
			}
			free(first);
		}
	}
	if (!complete && n < max) {
		/* CFI ran out (JIT code, hand-written assembly, a module whose
		 * tables we could not read): fall back to the frame chain. */
		n = walk_frame_pointers(tc, last_rbp, pcs, n, max, &complete);
	}
	current = NULL;
	*ret_n = n;
	*ret_truncated = !complete;
	return 0;
}
