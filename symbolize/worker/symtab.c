#include "symbolize/worker/symtab.h"
#include "symbolize/arrays.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Caps that bound what a (possibly compromised) worker can make us
 * allocate while decoding. */
#define MAX_FRAMES_PER_PC 256
#define MAX_STRING 65536
#define MAX_MODULES 65536
#define MAX_NAMER_FRAMES 64

struct node {
	struct sym_location loc;
	long module_index; /* -1: none */
	struct sym_frame *frames;
};

struct symtab {
	struct node **nodes; /* insertion order */
	size_t nnodes, nodes_cap;
	size_t *slots; /* open addressing: index + 1 into nodes, 0 empty */
	size_t nslots;
	struct sym_module *modules;
	size_t nmodules;
	char *main_build_id;
	/* Interned strings (function and file names repeat a lot). */
	char **strings;
	size_t nstrings, strings_cap;
	size_t *string_slots;
	size_t nstring_slots;
};

static size_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x;
}

static size_t hash_str(const char *s)
{
	size_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

struct symtab *symtab_new(void)
{
	struct symtab *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->main_build_id = strdup("");
	if (!st->main_build_id) {
		free(st);
		return NULL;
	}
	return st;
}

void symtab_free(struct symtab *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->nnodes; i++) {
		free(st->nodes[i]->frames);
		free(st->nodes[i]);
	}
	free(st->nodes);
	free(st->slots);
	free(st->modules);
	for (size_t i = 0; i < st->nstrings; i++)
		free(st->strings[i]);
	free(st->strings);
	free(st->string_slots);
	free(st->main_build_id);
	free(st);
}

static const char *intern(struct symtab *st, const char *s)
{
	if (!s)
		return NULL;
	if ((st->nstrings + 1) * 2 > st->nstring_slots) {
		size_t n = st->nstring_slots ? st->nstring_slots * 2 : 256;
		size_t *slots = calloc(n, sizeof(*slots));
		if (!slots)
			return NULL;
		for (size_t i = 0; i < st->nstrings; i++) {
			size_t h = hash_str(st->strings[i]) % n;
			while (slots[h])
				h = (h + 1) % n;
			slots[h] = i + 1;
		}
		free(st->string_slots);
		st->string_slots = slots;
		st->nstring_slots = n;
	}
	size_t h = hash_str(s) % st->nstring_slots;
	while (st->string_slots[h]) {
		const char *have = st->strings[st->string_slots[h] - 1];
		if (strcmp(have, s) == 0)
			return have;
		h = (h + 1) % st->nstring_slots;
	}
	if (array_reserve(&st->strings, &st->strings_cap, st->nstrings + 1, sizeof(char *), 128) < 0)
		return NULL;
	char *copy = strdup(s);
	if (!copy)
		return NULL;
	st->strings[st->nstrings++] = copy;
	st->string_slots[h] = st->nstrings;
	return copy;
}

static struct node *find(const struct symtab *st, uint64_t pc)
{
	if (!st->nslots)
		return NULL;
	size_t h = hash_u64(pc) % st->nslots;
	while (st->slots[h]) {
		struct node *n = st->nodes[st->slots[h] - 1];
		if (n->loc.pc == pc)
			return n;
		h = (h + 1) % st->nslots;
	}
	return NULL;
}

static int grow_slots(struct symtab *st)
{
	if ((st->nnodes + 1) * 2 <= st->nslots)
		return 0;
	size_t n = st->nslots ? st->nslots * 2 : 1024;
	size_t *slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < st->nnodes; i++) {
		size_t h = hash_u64(st->nodes[i]->loc.pc) % n;
		while (slots[h])
			h = (h + 1) % n;
		slots[h] = i + 1;
	}
	free(st->slots);
	st->slots = slots;
	st->nslots = n;
	return 0;
}

/* Record pc unless known. Strings are interned (copied). */
static int add(struct symtab *st, uint64_t pc, long module_index, uint64_t module_offset,
	       const struct sym_frame *frames, size_t nframes)
{
	if (find(st, pc))
		return 0;
	if (grow_slots(st) < 0)
		return -ENOMEM;
	if (array_reserve(&st->nodes, &st->nodes_cap, st->nnodes + 1, sizeof(struct node *), 256) < 0)
		return -ENOMEM;
	struct node *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	if (nframes) {
		n->frames = calloc(nframes, sizeof(*n->frames));
		if (!n->frames) {
			free(n);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < nframes; i++) {
		n->frames[i] = frames[i];
		n->frames[i].function = intern(st, frames[i].function);
		n->frames[i].file = intern(st, frames[i].file);
	}
	n->loc.pc = pc;
	n->loc.module_offset = module_offset;
	n->loc.nframes = nframes;
	n->loc.frames = n->frames;
	n->module_index = module_index;
	st->nodes[st->nnodes++] = n;
	size_t h = hash_u64(pc) % st->nslots;
	while (st->slots[h])
		h = (h + 1) % st->nslots;
	st->slots[h] = st->nnodes;
	return 0;
}

/* Point every location at its module, once the module array is final. */
static void link_modules(struct symtab *st)
{
	for (size_t i = 0; i < st->nnodes; i++) {
		long m = st->nodes[i]->module_index;
		st->nodes[i]->loc.module =
			(m >= 0 && (size_t)m < st->nmodules) ? &st->modules[m] : NULL;
	}
}

static int set_modules(struct symtab *st, const struct sym_module *mods, size_t n)
{
	st->modules = calloc(n ? n : 1, sizeof(*st->modules));
	if (!st->modules)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		st->modules[i] = mods[i];
		st->modules[i].path = intern(st, mods[i].path ? mods[i].path : "");
		st->modules[i].build_id = intern(st, mods[i].build_id ? mods[i].build_id : "");
		if (!st->modules[i].path || !st->modules[i].build_id)
			return -ENOMEM;
	}
	st->nmodules = n;
	link_modules(st);
	return 0;
}

int symtab_name_unnamed(struct symtab *st, symtab_namer_fn namer, void *arg)
{
	struct sym_frame frames[MAX_NAMER_FRAMES];
	for (size_t i = 0; i < st->nnodes; i++) {
		struct node *n = st->nodes[i];
		if (n->loc.nframes)
			continue;
		size_t nf = namer(arg, n->loc.pc, frames, MAX_NAMER_FRAMES);
		if (nf == 0)
			continue;
		struct sym_frame *copy = calloc(nf, sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		for (size_t k = 0; k < nf; k++) {
			copy[k] = frames[k];
			copy[k].function = intern(st, frames[k].function);
			copy[k].file = intern(st, frames[k].file);
		}
		free(n->frames);
		n->frames = copy;
		n->loc.frames = copy;
		n->loc.nframes = nf;
	}
	return 0;
}

int symtab_fill(struct symtab *st, struct symbolizer *sym, const uint64_t *addrs, size_t n)
{
	/* Lookups first: they set the modules' has_* flags. */
	const struct sym_location **locs = calloc(n ? n : 1, sizeof(*locs));
	if (!locs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (symbolizer_lookup(sym, addrs[i], &locs[i]) < 0)
			locs[i] = NULL;
	const struct sym_module *mods;
	size_t nmods = symbolizer_modules(sym, &mods);
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		if (!locs[i]) {
			r = add(st, addrs[i], -1, 0, NULL, 0);
			continue;
		}
		long mi = -1;
		for (size_t k = 0; k < nmods; k++)
			if (locs[i]->module == &mods[k])
				mi = (long)k;
		r = add(st, addrs[i], mi, locs[i]->module_offset, locs[i]->frames, locs[i]->nframes);
	}
	free(locs);
	if (r == 0 && !st->modules)
		r = set_modules(st, mods, nmods);
	if (r == 0) {
		char *b = strdup(symbolizer_main_build_id(sym));
		if (!b)
			return -ENOMEM;
		free(st->main_build_id);
		st->main_build_id = b;
	}
	return r;
}

int symtab_fill_from_maps(struct symtab *st, const char *maps_text, size_t maps_len,
			  const uint64_t *addrs, size_t n)
{
	struct maps m;
	if (maps_parse(maps_text ? maps_text : "", maps_len, &m) < 0)
		m = (struct maps){0}; /* no modules: every address stays unknown */
	struct sym_module *mods = calloc(m.count ? m.count : 1, sizeof(*mods));
	long *index_of = calloc(m.count ? m.count : 1, sizeof(*index_of));
	int r = mods && index_of ? 0 : -ENOMEM;
	size_t nmods = 0;
	for (size_t i = 0; i < m.count && r == 0; i++) {
		const struct maps_entry *e = &m.entries[i];
		index_of[i] = -1;
		if (e->perms[2] != 'x' || e->path[0] != '/')
			continue;
		mods[nmods] = (struct sym_module){.start = e->start, .limit = e->limit,
						  .offset = e->offset, .path = e->path,
						  .build_id = ""};
		index_of[i] = (long)nmods++;
	}
	for (size_t k = 0; k < n && r == 0; k++) {
		const struct maps_entry *e = maps_find(&m, addrs[k]);
		long mi = e ? index_of[e - m.entries] : -1;
		r = add(st, addrs[k], mi, mi >= 0 ? addrs[k] - e->start + e->offset : 0, NULL, 0);
	}
	if (r == 0 && !st->modules)
		r = set_modules(st, mods, nmods);
	free(mods);
	free(index_of);
	maps_release(&m);
	return r;
}

const struct sym_location *symtab_lookup(const struct symtab *st, uint64_t pc)
{
	struct node *n = find(st, pc);
	return n ? &n->loc : NULL;
}

size_t symtab_modules(const struct symtab *st, const struct sym_module **ret)
{
	*ret = st->modules;
	return st->nmodules;
}

const char *sym_location_unnamed(const struct sym_location *loc, char *buf, size_t size)
{
	if (!loc || !loc->module || !loc->module->path)
		return NULL;
	const char *base = strrchr(loc->module->path, '/');
	snprintf(buf, size, "%s+0x%llx", base ? base + 1 : loc->module->path,
		 (unsigned long long)loc->module_offset);
	return buf;
}

const char *symtab_main_build_id(const struct symtab *st)
{
	return st->main_build_id;
}

/* ---- wire format: little-endian u32/u64, strings as u32 length + bytes
 * with 0xffffffff for NULL. ---- */

static void put_u32(struct byte_buf *o, uint32_t v)
{
	byte_buf_put(o, &v, 4);
}

static void put_u64(struct byte_buf *o, uint64_t v)
{
	byte_buf_put(o, &v, 8);
}

static void put_str(struct byte_buf *o, const char *s)
{
	if (!s) {
		put_u32(o, UINT32_MAX);
		return;
	}
	size_t n = strlen(s);
	if (n > MAX_STRING)
		n = MAX_STRING;
	put_u32(o, (uint32_t)n);
	byte_buf_put(o, s, n);
}

int symtab_encode(const struct symtab *st, uint8_t **ret, size_t *ret_len)
{
	struct byte_buf o = {0};
	put_str(&o, st->main_build_id);
	put_u32(&o, (uint32_t)st->nmodules);
	for (size_t i = 0; i < st->nmodules; i++) {
		const struct sym_module *m = &st->modules[i];
		put_u64(&o, m->start);
		put_u64(&o, m->limit);
		put_u64(&o, m->offset);
		put_str(&o, m->path);
		put_str(&o, m->build_id);
		put_u32(&o, (uint32_t)(m->has_functions | m->has_filenames << 1 | m->has_line_numbers << 2));
	}
	put_u32(&o, (uint32_t)st->nnodes);
	for (size_t i = 0; i < st->nnodes; i++) {
		const struct node *n = st->nodes[i];
		put_u64(&o, n->loc.pc);
		put_u32(&o, (uint32_t)(int32_t)n->module_index);
		put_u64(&o, n->loc.module_offset);
		size_t nf = n->loc.nframes > MAX_FRAMES_PER_PC ? MAX_FRAMES_PER_PC : n->loc.nframes;
		put_u32(&o, (uint32_t)nf);
		for (size_t k = 0; k < nf; k++) {
			const struct sym_frame *f = &n->frames[k];
			put_str(&o, f->function);
			put_str(&o, f->file);
			put_u32(&o, (uint32_t)f->line);
			put_u32(&o, (uint32_t)f->function_start_line);
			put_u64(&o, f->function_offset);
			put_u32(&o, f->inlined);
		}
	}
	if (o.failed) {
		free(o.p);
		return -ENOMEM;
	}
	*ret = o.p;
	*ret_len = o.len;
	return 0;
}

struct in_buf {
	const uint8_t *p;
	size_t len, off;
	bool bad;
	char scratch[2][MAX_STRING + 1];
};

static bool get(struct in_buf *in, void *d, size_t n)
{
	if (in->bad || n > in->len - in->off) {
		in->bad = true;
		memset(d, 0, n);
		return false;
	}
	memcpy(d, in->p + in->off, n);
	in->off += n;
	return true;
}

static uint32_t get_u32(struct in_buf *in)
{
	uint32_t v = 0;
	get(in, &v, 4);
	return v;
}

static uint64_t get_u64(struct in_buf *in)
{
	uint64_t v = 0;
	get(in, &v, 8);
	return v;
}

/* Returns a pointer into scratch[which] (valid until the next call with
 * the same slot), or NULL. */
static const char *get_str(struct in_buf *in, int which)
{
	uint32_t n = get_u32(in);
	if (n == UINT32_MAX)
		return NULL;
	if (n > MAX_STRING) {
		in->bad = true;
		return NULL;
	}
	if (!get(in, in->scratch[which], n))
		return NULL;
	in->scratch[which][n] = '\0';
	/* Names are text: a NUL inside would silently shorten them. */
	if (memchr(in->scratch[which], '\0', n))
		in->bad = true;
	return in->scratch[which];
}

int symtab_decode(const uint8_t *buf, size_t len, struct symtab **ret)
{
	struct in_buf *in = calloc(1, sizeof(*in));
	struct symtab *st = symtab_new();
	struct sym_module *mods = NULL;
	struct sym_frame *frames = NULL;
	int r = -ENOMEM;
	if (!in || !st)
		goto out;
	in->p = buf;
	in->len = len;
	const char *bid = get_str(in, 0);
	if (bid) {
		free(st->main_build_id);
		st->main_build_id = strdup(bid);
		if (!st->main_build_id)
			goto out;
	}
	uint32_t nmods = get_u32(in);
	if (nmods > MAX_MODULES) {
		r = -EBADMSG;
		goto out;
	}
	mods = calloc(nmods ? nmods : 1, sizeof(*mods));
	if (!mods)
		goto out;
	for (uint32_t i = 0; i < nmods && !in->bad; i++) {
		mods[i].start = get_u64(in);
		mods[i].limit = get_u64(in);
		mods[i].offset = get_u64(in);
		mods[i].path = intern(st, get_str(in, 0));
		mods[i].build_id = intern(st, get_str(in, 1));
		uint32_t flags = get_u32(in);
		mods[i].has_functions = flags & 1;
		mods[i].has_filenames = flags & 2;
		mods[i].has_line_numbers = flags & 4;
	}
	uint32_t nlocs = get_u32(in);
	frames = calloc(MAX_FRAMES_PER_PC, sizeof(*frames));
	if (!frames)
		goto out;
	for (uint32_t i = 0; i < nlocs && !in->bad; i++) {
		uint64_t pc = get_u64(in);
		int32_t mi = (int32_t)get_u32(in);
		uint64_t moff = get_u64(in);
		uint32_t nf = get_u32(in);
		if (nf > MAX_FRAMES_PER_PC || mi < -1 || (mi >= 0 && (uint32_t)mi >= nmods)) {
			in->bad = true;
			break;
		}
		for (uint32_t k = 0; k < nf && !in->bad; k++) {
			/* Intern at once: the scratch buffers are reused. */
			frames[k].function = intern(st, get_str(in, 0));
			frames[k].file = intern(st, get_str(in, 1));
			frames[k].line = (int)get_u32(in);
			frames[k].function_start_line = (int)get_u32(in);
			frames[k].function_offset = get_u64(in);
			frames[k].inlined = get_u32(in) != 0;
		}
		if (!in->bad && add(st, pc, mi, moff, frames, nf) < 0)
			goto out;
	}
	if (in->bad) {
		r = -EBADMSG;
		goto out;
	}
	r = set_modules(st, mods, nmods);
	if (r == 0) {
		*ret = st;
		st = NULL;
	}
out:
	free(frames);
	free(mods);
	free(in);
	symtab_free(st);
	return r;
}

struct addrset {
	uint64_t *items;
	size_t n, cap;
	uint64_t *slots; /* value + 1; 0 empty (address UINT64_MAX is never a PC) */
	size_t nslots;
};

struct addrset *addrset_new(void)
{
	return calloc(1, sizeof(struct addrset));
}

void addrset_free(struct addrset *s)
{
	if (!s)
		return;
	free(s->items);
	free(s->slots);
	free(s);
}

int addrset_add(struct addrset *s, uint64_t addr)
{
	if ((s->n + 1) * 2 > s->nslots) {
		size_t n = s->nslots ? s->nslots * 2 : 1024;
		uint64_t *slots = calloc(n, sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		for (size_t i = 0; i < s->n; i++) {
			size_t h = hash_u64(s->items[i]) % n;
			while (slots[h])
				h = (h + 1) % n;
			slots[h] = s->items[i] + 1;
		}
		free(s->slots);
		s->slots = slots;
		s->nslots = n;
	}
	size_t h = hash_u64(addr) % s->nslots;
	while (s->slots[h]) {
		if (s->slots[h] == addr + 1)
			return 0;
		h = (h + 1) % s->nslots;
	}
	if (array_reserve(&s->items, &s->cap, s->n + 1, sizeof(uint64_t), 512) < 0)
		return -ENOMEM;
	s->items[s->n++] = addr;
	s->slots[h] = addr + 1;
	return 0;
}

const uint64_t *addrset_items(const struct addrset *s, size_t *ret_n)
{
	*ret_n = s->n;
	return s->items;
}
