/*
 * Shared helpers for the libFuzzer harnesses in tests/fuzz/ (header-only:
 * every harness is one translation unit plus the module sources it fuzzes,
 * compiled by tests/fuzz/run with clang).
 *
 * Input layout convention: the payload (ELF bytes, text, a gzip stream)
 * comes from the front of the input and the harness's parameters are
 * consumed from its tail, as LLVM's FuzzedDataProvider does. Committed seeds
 * can therefore be plain files (a real ELF, a real stat line), whose last
 * bytes merely double as parameters.
 *
 * The harnesses are C, like the project, so FuzzedDataProvider.h (C++) is
 * not used; struct fz is the few lines of it we need.
 *
 * FUZZ_CHECK(cond) is the harnesses' assertion: a broken invariant aborts,
 * which libFuzzer reports as a crash with the input saved.
 */
#ifndef DIAG_FUZZ_COMMON_H
#define DIAG_FUZZ_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__,       \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* ---- parameters from the tail of the input ---- */

struct fz {
	const uint8_t *p;
	size_t n; /* bytes not yet consumed; the tail is consumed first */
};

static inline struct fz fz_init(const uint8_t *data, size_t size)
{
	return (struct fz){.p = data, .n = size};
}

/* Up to 8 bytes from the tail as an integer; 0 once the input is used up. */
static inline uint64_t fz_bits(struct fz *f, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes && f->n; i++)
		v = (v << 8) | f->p[--f->n];
	return v;
}

static inline uint64_t fz_u64(struct fz *f)
{
	return fz_bits(f, 8);
}

static inline uint32_t fz_u32(struct fz *f)
{
	return (uint32_t)fz_bits(f, 4);
}

static inline uint8_t fz_u8(struct fz *f)
{
	return (uint8_t)fz_bits(f, 1);
}

static inline bool fz_bool(struct fz *f)
{
	return fz_bits(f, 1) & 1;
}

/* A value in [lo, hi]. */
static inline uint64_t fz_range(struct fz *f, uint64_t lo, uint64_t hi)
{
	uint64_t span = hi - lo, v;

	if (span == UINT64_MAX)
		return fz_u64(f);
	v = fz_bits(f, span <= 0xff ? 1 : span <= 0xffff ? 2 : span <= 0xffffffffu ? 4 : 8);
	return lo + v % (span + 1);
}

/* ---- a private scratch directory per fuzzing process ---- */

static char fz_dir_path[256];

static inline int fz_rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((type == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT)
		fprintf(stderr, "fuzz: could not remove %s: %s\n", path, strerror(errno));
	return 0;
}

/* Remove a tree we created (never follows symlinks). */
static inline void fz_rm_rf(const char *path)
{
	if (path[0])
		nftw(path, fz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static inline void fz_cleanup(void)
{
	fz_rm_rf(fz_dir_path);
}

/* A directory under $FUZZ_TMPDIR (default /dev/shm, else /tmp) that lives
 * as long as the process; removed at normal exit. Aborts on failure: a
 * harness without scratch space cannot run. */
static inline const char *fz_dir(void)
{
	const char *base;

	if (fz_dir_path[0])
		return fz_dir_path;
	base = getenv("FUZZ_TMPDIR");
	if (!base || !*base)
		base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(fz_dir_path, sizeof(fz_dir_path), "%s/diag-fuzz.XXXXXX", base);
	if (!mkdtemp(fz_dir_path)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	atexit(fz_cleanup);
	return fz_dir_path;
}

/* Replace path with exactly len bytes of data. Aborts on failure (a full
 * scratch disk is not a finding). */
static inline void fz_write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t off = 0;

	if (fd < 0) {
		perror(path);
		abort();
	}
	while (off < len) {
		ssize_t n = write(fd, (const char *)data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			perror(path);
			abort();
		}
		off += (size_t)n;
	}
	close(fd);
}

/* data as a NUL-terminated malloc'd string (embedded NULs kept). */
static inline char *fz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* data gzipped in memory, as a bundle's profile members are (malloc'ed,
 * *len bytes): for harnesses that write a member from raw fuzz bytes. */
static inline uint8_t *fz_gzip(const uint8_t *data, size_t size, size_t *len)
{
	z_stream zs;
	size_t cap = deflateBound(NULL, (uLong)size) + 64;
	uint8_t *out = malloc(cap);

	FUZZ_CHECK(out != NULL);
	memset(&zs, 0, sizeof(zs));
	FUZZ_CHECK(deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
	zs.next_in = (Bytef *)data;
	zs.avail_in = (uInt)size;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	FUZZ_CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
	*len = cap - zs.avail_out;
	deflateEnd(&zs);
	return out;
}

#endif
