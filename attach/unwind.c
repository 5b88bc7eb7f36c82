/* Offline unwinding of captured threads with libunwind's remote API. */
#include "unwind.h"

#include <errno.h>
#include <libunwind-ptrace.h>
#include <libunwind.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_CACHE_SLOTS 256
#define PAGE_BYTES 4096u

struct exec_mapping {
	uint64_t start, limit;
	char *path;
	void *upt;     /* libunwind-ptrace handle for this module, created lazily */
	bool owns_upt; /* false when shared with another mapping of the same file */
};

struct cached_page {
	uint64_t addr; /* page address, or UINT64_MAX when empty / unreadable */
	bool valid;
	uint8_t bytes[PAGE_BYTES];
};

struct unwinder {
	pid_t pid;
	unw_addr_space_t as;
	struct exec_mapping *maps;
	size_t nmaps;
	struct cached_page *pages; /* direct-mapped cache of live read-only memory */
	/* The thread being unwound right now. libunwind hands our accessors the
	 * argument we pass to unw_init_remote, but _UPT_find_proc_info passes
	 * its own UPT handle to them when it searches tables, so the accessors
	 * cannot rely on it: they use this instead. */
	const struct thread_capture *tc;
	uint64_t stack_map_start, stack_map_end; /* mapping holding tc's stack */
	char *maps_text;
	/* Bounds of every mapping, in address order, for finding a stack's
	 * mapping by binary search. */
	uint64_t *all_starts, *all_ends;
	size_t nall, all_cap;
};

static struct unwinder *current;

static void free_exec_mappings(struct exec_mapping *maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(maps[i].path);
		if (maps[i].upt && maps[i].owns_upt)
			_UPT_destroy(maps[i].upt);
	}
	free(maps);
}

static void free_maps(struct unwinder *u)
{
	free_exec_mappings(u->maps, u->nmaps);
	u->maps = NULL;
	u->nmaps = 0;
	free(u->maps_text);
	u->maps_text = NULL;
}

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
	 * do. Handles of modules still mapped at the same place are kept, so
	 * libunwind's per-module caches survive. */
	struct exec_mapping *old = u->maps;
	size_t nold = u->nmaps;
	u->maps = NULL;
	u->nmaps = 0;
	free(u->maps_text);
	u->nall = 0;
	u->maps_text = strndup(text, len);
	size_t cap = 64;
	u->maps = calloc(cap, sizeof(*u->maps));
	if (!u->maps_text || !u->maps) {
		free_exec_mappings(old, nold);
		return -ENOMEM;
	}
	int r = 0;
	for (const char *p = u->maps_text; p && *p && r == 0;) {
		char *end;
		uint64_t start = strtoull(p, &end, 16);
		uint64_t limit = (*end == '-') ? strtoull(end + 1, &end, 16) : 0;
		const char *nl = strchr(p, '\n');
		const char *line_end = nl ? nl : p + strlen(p);
		/* perms follow a space; the path (if any) starts at the first '/'. */
		bool exec = end + 3 < line_end && end[3] == 'x';
		const char *path = memchr(end, '/', (size_t)(line_end - end));
		if (limit > start)
			r = note_mapping(u, start, limit);
		if (r == 0 && exec && path && limit > start) {
			if (u->nmaps == cap) {
				cap *= 2;
				struct exec_mapping *m = realloc(u->maps, cap * sizeof(*m));
				if (!m) {
					r = -ENOMEM;
					break;
				}
				u->maps = m;
			}
			struct exec_mapping *m = &u->maps[u->nmaps++];
			memset(m, 0, sizeof(*m));
			m->start = start;
			m->limit = limit;
			m->path = strndup(path, (size_t)(line_end - path));
			if (!m->path) {
				r = -ENOMEM;
				break;
			}
			for (size_t i = 0; i < nold; i++) {
				if (old[i].upt && old[i].owns_upt && old[i].start == start &&
				    old[i].limit == limit && strcmp(old[i].path, m->path) == 0) {
					m->upt = old[i].upt;
					m->owns_upt = true;
					old[i].upt = NULL;
					break;
				}
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	/* Shared handles of dropped owners must not dangle. */
	for (size_t i = 0; i < u->nmaps; i++)
		if (u->maps[i].upt && !u->maps[i].owns_upt)
			u->maps[i].upt = NULL;
	/* A module that went away may come back elsewhere (or another in its
	 * place): drop libunwind's cached unwind state with it. */
	bool dropped = false;
	for (size_t i = 0; i < nold; i++)
		dropped |= old[i].upt && old[i].owns_upt;
	free_exec_mappings(old, nold);
	if (dropped)
		unw_flush_cache(u->as, 0, 0);
	for (size_t i = 0; i < PAGE_CACHE_SLOTS; i++)
		u->pages[i].valid = false;
	return r;
}

static struct exec_mapping *mapping_for(struct unwinder *u, uint64_t ip)
{
	for (size_t i = 0; i < u->nmaps; i++)
		if (ip >= u->maps[i].start && ip < u->maps[i].limit)
			return &u->maps[i];
	return NULL;
}

/* The UPT handle of the module holding ip. One per module, because each
 * handle caches a single ELF image and its table: sharing one across
 * modules would re-read /proc/PID/maps and re-map the file at every module
 * switch. Handles for modules with the same path are shared. */
static void *upt_for(struct unwinder *u, uint64_t ip)
{
	struct exec_mapping *m = mapping_for(u, ip);
	if (!m)
		return NULL;
	if (m->upt)
		return m->upt;
	for (size_t i = 0; i < u->nmaps; i++)
		if (u->maps[i].upt && u->maps[i].owns_upt && strcmp(u->maps[i].path, m->path) == 0)
			return m->upt = u->maps[i].upt, m->upt;
	m->upt = _UPT_create(u->pid);
	m->owns_upt = m->upt != NULL;
	return m->upt;
}

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	struct unwinder *u = current;
	void *upt = upt_for(u, ip);
	if (!upt)
		return -UNW_ENOINFO;
	return _UPT_find_proc_info(as, ip, pi, need_unwind_info, upt);
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	_UPT_put_unwind_info(as, pi, NULL);
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	return -UNW_ENOINFO;
}

static bool read_live(struct unwinder *u, uint64_t addr, void *out, size_t len)
{
	uint64_t page = addr & ~(uint64_t)(PAGE_BYTES - 1);
	if (addr + len > page + PAGE_BYTES)
		return attach_read_memory(u->pid, addr, out, len) == (ssize_t)len;
	struct cached_page *slot = &u->pages[(page / PAGE_BYTES) % PAGE_CACHE_SLOTS];
	if (!slot->valid || slot->addr != page) {
		slot->addr = page;
		slot->valid = attach_read_memory(u->pid, page, slot->bytes, PAGE_BYTES) == PAGE_BYTES;
		if (!slot->valid)
			return attach_read_memory(u->pid, addr, out, len) == (ssize_t)len;
	}
	memcpy(out, slot->bytes + (addr - page), len);
	return true;
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

int unwinder_new(pid_t pid, const char *maps_text, size_t maps_len, struct unwinder **ret)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->pid = pid;
	u->pages = calloc(PAGE_CACHE_SLOTS, sizeof(*u->pages));
	u->as = unw_create_addr_space(&accessors, 0);
	if (!u->pages || !u->as) {
		unwinder_free(u);
		return -ENOMEM;
	}
	/* Unwind info of a module does not change while it is mapped; cache
	 * it across threads and captures. */
	unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
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
	free_maps(u);
	free(u->all_starts);
	free(u->all_ends);
	if (u->as)
		unw_destroy_addr_space(u->as);
	free(u->pages);
	free(u);
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
	size_t lo = 0, hi = u->nall;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (u->all_ends[mid] <= sp)
			lo = mid + 1;
		else
			hi = mid;
	}
	bool found = lo < u->nall && u->all_starts[lo] <= sp;
	u->stack_map_start = found ? u->all_starts[lo] : 0;
	u->stack_map_end = found ? u->all_ends[lo] : 0;
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

	unw_cursor_t cursor;
	size_t n = 0;
	bool complete = false;
	uint64_t last_rbp = tc->regs.rbp;
	pcs[n++] = tc->regs.rip;

	if (unw_init_remote(&cursor, u->as, u) == 0) {
		uint64_t prev_ip = tc->regs.rip, prev_sp = tc->regs.rsp;
		while (n < max) {
			int r = unw_step(&cursor);
			if (r == 0) {
				complete = true;
				break;
			}
			if (r < 0)
				break;
			unw_word_t ip, sp, bp;
			unw_get_reg(&cursor, UNW_REG_IP, &ip);
			unw_get_reg(&cursor, UNW_REG_SP, &sp);
			if (unw_get_reg(&cursor, UNW_X86_64_RBP, &bp) == 0)
				last_rbp = bp;
			if (ip == 0) {
				complete = true;
				break;
			}
			/* Guard against unwind info that does not advance. */
			if (ip == prev_ip && sp == prev_sp)
				break;
			pcs[n++] = ip;
			prev_ip = ip;
			prev_sp = sp;
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
