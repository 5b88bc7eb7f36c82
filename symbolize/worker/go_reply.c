/* The tracer's side of the Go worker's protocol (go_serve.h): decoding
 * and checking what the worker sends back. Apart from go_serve.c so that a
 * fuzz harness (tests/fuzz/fuzz_go_reply.c) can take it alone. */
#include "symbolize/worker/go_serve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the tracer's side: decoding ---- */

struct go_name_entry {
	uint64_t addr;
	size_t first, n; /* into frames */
};

struct go_names {
	struct go_name_entry *entries; /* sorted by addr */
	size_t nentries;
	struct sym_frame *frames;
	size_t nframes, frames_cap;
	char **strings;
	size_t nstrings, strings_cap;
};

void go_names_free(struct go_names *names)
{
	if (!names)
		return;
	for (size_t i = 0; i < names->nstrings; i++)
		free(names->strings[i]);
	free(names->strings);
	free(names->frames);
	free(names->entries);
	free(names);
}

/* A name from the reply: NUL-terminated at its first NUL (it goes on to
 * writers as a C string), owned by names. NULL for an empty one. */
static const char *keep_string(struct go_names *names, struct cursor *c, bool *oom)
{
	size_t len;
	const char *p = take_bytes(c, GO_NAMES_MAX_STRING, &len);
	if (!p || !len)
		return NULL;
	char *copy = strndup(p, len);
	if (!copy ||
	    array_reserve(&names->strings, &names->strings_cap, names->nstrings + 1, sizeof(char *), 64) < 0) {
		free(copy);
		*oom = true;
		return NULL;
	}
	names->strings[names->nstrings++] = copy;
	return copy;
}

static int by_addr(const void *a, const void *b)
{
	const struct go_name_entry *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int go_names_decode(const uint8_t *reply, size_t len, const uint64_t *addrs, size_t n,
		    struct go_names **ret)
{
	struct go_names *names = calloc(1, sizeof(*names));
	if (!names || !(names->entries = calloc(n ? n : 1, sizeof(*names->entries)))) {
		free(names);
		return -ENOMEM;
	}
	struct cursor c = {.p = reply, .len = len};
	bool oom = false;
	for (size_t i = 0; i < n && !c.bad && !oom; i++) {
		uint32_t nf = take_u32(&c);
		if (nf > GO_NAMES_MAX_FRAMES) {
			c.bad = true;
			break;
		}
		struct go_name_entry *e = &names->entries[names->nentries++];
		e->addr = addrs[i];
		e->first = names->nframes;
		if (array_reserve(&names->frames, &names->frames_cap, names->nframes + nf,
				  sizeof(struct sym_frame), 256) < 0) {
			oom = true;
			break;
		}
		for (uint32_t k = 0; k < nf && !c.bad && !oom; k++) {
			struct sym_frame *f = &names->frames[names->nframes];
			memset(f, 0, sizeof(*f));
			f->line = (int)take_u32(&c);
			f->function_start_line = (int)take_u32(&c);
			f->inlined = take_u32(&c) != 0;
			f->function_offset = take_u64(&c);
			f->function = keep_string(names, &c, &oom);
			f->file = keep_string(names, &c, &oom);
			/* A frame without a function name is not a name. */
			if (!c.bad && !oom && f->function) {
				names->nframes++;
				e->n++;
			}
		}
	}
	if (c.bad || oom || c.off != c.len) {
		go_names_free(names);
		return oom ? -ENOMEM : -EBADMSG;
	}
	qsort(names->entries, names->nentries, sizeof(*names->entries), by_addr);
	*ret = names;
	return 0;
}

size_t go_names_frames(const struct go_names *names, uint64_t addr, struct sym_frame *out,
		       size_t max)
{
	if (!names)
		return 0;
	struct go_name_entry key = {.addr = addr};
	const struct go_name_entry *e =
		bsearch(&key, names->entries, names->nentries, sizeof(key), by_addr);
	if (!e)
		return 0;
	size_t n = e->n < max ? e->n : max;
	if (n) /* a reply that named nothing has no frame array at all */
		memcpy(out, names->frames + e->first, n * sizeof(*out));
	return n;
}

/* A scalar of the worker's JSON, copied (strings clipped); NULL if the
 * item is not a scalar. */
static cJSON *copy_scalar(const cJSON *item)
{
	if (cJSON_IsString(item)) {
		char buf[GO_JSON_MAX_STRING + 1];
		snprintf(buf, sizeof(buf), "%s", item->valuestring);
		return cJSON_CreateString(buf);
	}
	if (cJSON_IsNumber(item))
		return cJSON_CreateNumber(item->valuedouble);
	if (cJSON_IsBool(item))
		return cJSON_CreateBool(cJSON_IsTrue(item));
	return NULL;
}

static int copy_members(cJSON *dst, const cJSON *src, bool nested)
{
	size_t n = 0;
	for (const cJSON *it = src->child; it && n < 64; it = it->next, n++) {
		if (!it->string)
			continue;
		cJSON *copy = copy_scalar(it);
		if (!copy && nested && cJSON_IsObject(it)) {
			copy = cJSON_CreateObject();
			if (copy && copy_members(copy, it, false) < 0) {
				cJSON_Delete(copy);
				return -ENOMEM;
			}
		}
		if (!copy)
			continue; /* not a shape the manifest takes from a worker */
		cJSON_DeleteItemFromObject(dst, it->string);
		if (!cJSON_AddItemToObject(dst, it->string, copy)) {
			cJSON_Delete(copy);
			return -ENOMEM;
		}
	}
	return 0;
}

int go_json_copy(cJSON *dst, const char *text, size_t len)
{
	cJSON *src = cJSON_ParseWithLength(text, len);
	if (!cJSON_IsObject(src)) {
		cJSON_Delete(src);
		return -EBADMSG;
	}
	int r = copy_members(dst, src, true);
	cJSON_Delete(src);
	return r;
}
