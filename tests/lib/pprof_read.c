#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "bundle/gzip.h"
#include "bundle/reader.h"
#include "pprof_read.h"

int pprof_read_buf(const void *gz, size_t len, Perftools__Profiles__Profile **ret)
{
	Perftools__Profiles__Profile *p;
	uint8_t *raw;
	size_t rlen;
	int r = bundle_gunzip(gz, len, SIZE_MAX, &raw, &rlen);

	if (r < 0)
		return r;
	p = perftools__profiles__profile__unpack(NULL, rlen, raw);
	free(raw);
	if (!p)
		return -EBADMSG;
	*ret = p;
	return 0;
}

int pprof_read_file(const char *path, Perftools__Profiles__Profile **ret)
{
	char *buf;
	size_t len;
	int r = bundle_read_file_at(AT_FDCWD, path, SIZE_MAX, &buf, &len);

	if (r < 0)
		return r;
	r = pprof_read_buf(buf, len, ret);
	free(buf);
	return r;
}

const char *pprof_str(const Perftools__Profiles__Profile *p, int64_t idx)
{
	if (!p || idx < 0 || (uint64_t)idx >= p->n_string_table)
		return NULL;
	return p->string_table[idx];
}

/* The element of arr[0..n) whose id is want, or NULL: locations and
 * functions are looked up the same way (a GNU statement expression, so it
 * keeps each array's element type). */
#define FIND_BY_ID(arr, n, want)                                                                   \
	({                                                                                         \
		__typeof__(*(arr)) found_ = NULL;                                                  \
		for (size_t i_ = 0; i_ < (n) && !found_; i_++)                                     \
			if ((arr)[i_]->id == (want))                                               \
				found_ = (arr)[i_];                                                \
		found_;                                                                            \
	})

const Perftools__Profiles__Location *pprof_location(const Perftools__Profiles__Profile *p,
						    uint64_t id)
{
	return p ? FIND_BY_ID(p->location, p->n_location, id) : NULL;
}

const Perftools__Profiles__Function *pprof_function(const Perftools__Profiles__Profile *p,
						    uint64_t id)
{
	return p ? FIND_BY_ID(p->function, p->n_function, id) : NULL;
}

int pprof_sample_frames(const Perftools__Profiles__Profile *p,
			const Perftools__Profiles__Sample *s, const char **names, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n_location_id; i++) {
		const Perftools__Profiles__Location *loc = pprof_location(p, s->location_id[i]);
		if (!loc)
			return -EBADMSG;
		for (size_t j = 0; j < loc->n_line; j++) {
			const Perftools__Profiles__Function *f =
				pprof_function(p, loc->line[j]->function_id);
			const char *name = f ? pprof_str(p, f->name) : NULL;
			if (!name)
				return -EBADMSG;
			if (n < max)
				names[n++] = name;
		}
	}
	return (int)n;
}

int pprof_write_unsymbolized(const char *in_path, const char *out_path)
{
	Perftools__Profiles__Profile *p;
	int r = pprof_read_file(in_path, &p);

	if (r < 0)
		return r;
	/* Hidden from pack, then restored: free_unpacked frees each repeated
	 * element it is told about. */
	size_t n_function = p->n_function;
	size_t *n_line = calloc(p->n_location + 1, sizeof(*n_line));
	if (!n_line) {
		perftools__profiles__profile__free_unpacked(p, NULL);
		return -ENOMEM;
	}
	p->n_function = 0;
	for (size_t i = 0; i < p->n_location; i++) {
		n_line[i] = p->location[i]->n_line;
		p->location[i]->n_line = 0;
	}
	for (size_t i = 0; i < p->n_mapping; i++) {
		p->mapping[i]->has_functions = false;
		p->mapping[i]->has_filenames = false;
		p->mapping[i]->has_line_numbers = false;
		p->mapping[i]->has_inline_frames = false;
	}
	size_t len = perftools__profiles__profile__get_packed_size(p);
	uint8_t *raw = malloc(len ? len : 1);
	if (raw)
		perftools__profiles__profile__pack(p, raw);
	p->n_function = n_function;
	for (size_t i = 0; i < p->n_location; i++)
		p->location[i]->n_line = n_line[i];
	free(n_line);
	perftools__profiles__profile__free_unpacked(p, NULL);
	if (!raw)
		return -ENOMEM;
	gzFile gz = gzopen(out_path, "wb");
	r = gz && gzwrite(gz, raw, (unsigned)len) == (int)len ? 0 : -EIO;
	if (gz && gzclose(gz) != Z_OK)
		r = -EIO;
	free(raw);
	return r;
}
