/* Saved interpreter memory for the frame walker's tests (pyimage.h). */
#include "pyimage.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

int pyimage_record_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct pyimage *im = ctx;
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	ssize_t n = process_vm_readv(im->pid, &local, 1, &remote, 1, 0);
	if (n < 0 || (size_t)n != len)
		return n < 0 ? -errno : -EFAULT;
	if (im->n == im->cap) {
		size_t cap = im->cap ? im->cap * 2 : 256;
		void *p = realloc(im->records, cap * sizeof(*im->records));
		if (!p)
			return -ENOMEM;
		im->records = p;
		im->cap = cap;
	}
	struct pyimage_record *r = &im->records[im->n];
	r->bytes = malloc(len ? len : 1);
	if (!r->bytes)
		return -ENOMEM;
	memcpy(r->bytes, buf, len);
	r->addr = addr;
	r->len = (uint32_t)len;
	im->n++;
	return 0;
}

int pyimage_replay_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct pyimage *im = ctx;
	for (size_t i = 0; i < im->n; i++) {
		const struct pyimage_record *r = &im->records[i];
		if (addr >= r->addr && addr - r->addr <= r->len &&
		    len <= r->len - (addr - r->addr)) {
			memcpy(buf, r->bytes + (addr - r->addr), len);
			return 0;
		}
	}
	return -EFAULT;
}

int pyimage_save(const struct pyimage *im, const char *path)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -errno;
	uint32_t n = (uint32_t)im->n;
	fwrite("PYIMG1\n", 1, 7, f);
	fwrite(&im->hexversion, 4, 1, f);
	fwrite(&im->runtime, 8, 1, f);
	fwrite(&n, 4, 1, f);
	for (size_t i = 0; i < im->n; i++) {
		fwrite(&im->records[i].addr, 8, 1, f);
		fwrite(&im->records[i].len, 4, 1, f);
		fwrite(im->records[i].bytes, 1, im->records[i].len, f);
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

int pyimage_load(struct pyimage *im, const char *path)
{
	memset(im, 0, sizeof(*im));
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	char magic[7];
	uint32_t n = 0;
	int r = -EBADMSG;
	if (fread(magic, 1, 7, f) != 7 || memcmp(magic, "PYIMG1\n", 7) != 0 ||
	    fread(&im->hexversion, 4, 1, f) != 1 || fread(&im->runtime, 8, 1, f) != 1 ||
	    fread(&n, 4, 1, f) != 1 || n > 1000000)
		goto out;
	im->records = calloc(n ? n : 1, sizeof(*im->records));
	if (!im->records) {
		r = -ENOMEM;
		goto out;
	}
	im->cap = n;
	for (uint32_t i = 0; i < n; i++) {
		struct pyimage_record *rec = &im->records[i];
		if (fread(&rec->addr, 8, 1, f) != 1 || fread(&rec->len, 4, 1, f) != 1 ||
		    rec->len > (1u << 24))
			goto out;
		rec->bytes = malloc(rec->len ? rec->len : 1);
		if (!rec->bytes || fread(rec->bytes, 1, rec->len, f) != rec->len) {
			free(rec->bytes);
			goto out;
		}
		im->n++;
	}
	r = 0;
out:
	fclose(f);
	if (r < 0)
		pyimage_release(im);
	return r;
}

void pyimage_release(struct pyimage *im)
{
	for (size_t i = 0; i < im->n; i++)
		free(im->records[i].bytes);
	free(im->records);
	memset(im, 0, sizeof(*im));
}
