/* /proc/kallsyms, sorted by address, looked up by bisection. */
#include "symbolize/kallsyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/arrays.h"

struct ksym {
	uint64_t addr;
	const char *name;   /* into names */
	const char *module; /* into names, "" for the kernel image */
};

struct kallsyms {
	struct ksym *syms;
	size_t n, cap;
	char *names; /* every name and module, NUL-separated */
	size_t names_len, names_cap;
};

static int cmp_ksym(const void *a, const void *b)
{
	uint64_t x = ((const struct ksym *)a)->addr, y = ((const struct ksym *)b)->addr;
	return x < y ? -1 : x > y;
}

/* Offsets into names while loading (names moves as it grows). */
static int add_name(struct kallsyms *k, const char *s, size_t *ret_off)
{
	size_t len = strlen(s) + 1;
	if (array_reserve(&k->names, &k->names_cap, k->names_len + len, 1, 1 << 20) < 0)
		return -ENOMEM;
	memcpy(k->names + k->names_len, s, len);
	*ret_off = k->names_len;
	k->names_len += len;
	return 0;
}

int kallsyms_load(const char *path, struct kallsyms **ret)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	struct kallsyms *k = calloc(1, sizeof(*k));
	if (!k) {
		fclose(f);
		return -ENOMEM;
	}
	size_t empty;
	int r = add_name(k, "", &empty);
	char line[512];
	bool any_address = false;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		char type, name[256], module[128] = "";
		unsigned long long addr;
		int got = sscanf(line, "%llx %c %255s [%127[^]]]", &addr, &type, name, module);
		if (got < 3)
			continue;
		/* Text symbols only: a PC is never in data. */
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		any_address |= addr != 0;
		size_t name_off, module_off = empty;
		r = add_name(k, name, &name_off);
		if (r == 0 && module[0])
			r = add_name(k, module, &module_off);
		if (r == 0 && array_reserve(&k->syms, &k->cap, k->n + 1, sizeof(*k->syms), 1 << 16) < 0)
			r = -ENOMEM;
		if (r == 0)
			k->syms[k->n++] = (struct ksym){.addr = addr,
							.name = (const char *)(uintptr_t)name_off,
							.module = (const char *)(uintptr_t)module_off};
	}
	fclose(f);
	if (r == 0 && !any_address)
		r = -EACCES;
	if (r < 0) {
		kallsyms_free(k);
		return r;
	}
	for (size_t i = 0; i < k->n; i++) {
		k->syms[i].name = k->names + (uintptr_t)k->syms[i].name;
		k->syms[i].module = k->names + (uintptr_t)k->syms[i].module;
	}
	qsort(k->syms, k->n, sizeof(*k->syms), cmp_ksym);
	*ret = k;
	return 0;
}

void kallsyms_free(struct kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->names);
	free(k);
}

const char *kallsyms_lookup(const struct kallsyms *k, uint64_t addr, uint64_t *ret_offset,
			    const char **ret_module)
{
	size_t i = addr_first_above(k->syms, k->n, sizeof(*k->syms), offsetof(struct ksym, addr), addr);
	if (i == 0)
		return NULL;
	const struct ksym *s = &k->syms[i - 1];
	if (ret_offset)
		*ret_offset = addr - s->addr;
	if (ret_module)
		*ret_module = s->module;
	return s->name;
}
