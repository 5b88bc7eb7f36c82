#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "pprof_read.h"

static int gunzip(const void *gz, size_t len, uint8_t **ret, size_t *ret_len)
{
	size_t cap = len * 4 + 1024, n = 0;
	uint8_t *out = malloc(cap);
	z_stream zs;
	int zr;

	if (!out)
		return -ENOMEM;
	memset(&zs, 0, sizeof(zs));
	/* 15 + 16: gzip only. pprof's files must be gzipped, and a test
	 * should notice if they are not. */
	if (inflateInit2(&zs, 15 + 16) != Z_OK) {
		free(out);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)gz;
	zs.avail_in = (uInt)len;
	do {
		if (n == cap) {
			uint8_t *o = realloc(out, cap *= 2);
			if (!o) {
				zr = Z_MEM_ERROR;
				break;
			}
			out = o;
		}
		zs.next_out = out + n;
		zs.avail_out = (uInt)(cap - n);
		zr = inflate(&zs, Z_NO_FLUSH);
		n = cap - zs.avail_out;
	} while (zr == Z_OK);
	inflateEnd(&zs);
	if (zr != Z_STREAM_END) {
		free(out);
		return zr == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
	}
	*ret = out;
	*ret_len = n;
	return 0;
}

int pprof_read_buf(const void *gz, size_t len, Perftools__Profiles__Profile **ret)
{
	Perftools__Profiles__Profile *p;
	uint8_t *raw;
	size_t rlen;
	int r = gunzip(gz, len, &raw, &rlen);

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
	struct stat st;
	uint8_t *buf;
	size_t off = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	r = pprof_read_buf(buf, off, ret);
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
