/*
 * Internal helpers shared by the bundle module's files. Not part of the
 * public interface: nothing outside bundle/ includes this.
 */
#ifndef DIAG_BUNDLE_INTERNAL_H
#define DIAG_BUNDLE_INTERNAL_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <nettle/sha2.h>

struct stat;

#define BUNDLE_MANIFEST "manifest.json"

/* write(2) until len bytes are written; retries EINTR. A short write that
 * makes no progress is reported as -ENOSPC (what a full file system means
 * by it). 0 or -errno. */
int bundle_write_all(int fd, const void *data, size_t len);

/* The sha256 of what went into ctx, as 64 lowercase hex chars + NUL
 * (ctx is a nettle struct sha256_ctx; it is reset). */
struct sha256_ctx;
void bundle_sha256_digest_hex(struct sha256_ctx *ctx, char out[65]);

/* Hash fd's contents from offset 0 to EOF. 0 or -errno. */
int bundle_sha256_fd(int fd, char out[65], uint64_t *ret_bytes);

/* Open the directory that will hold member `name` below rootfd, walking each
 * component with O_NOFOLLOW (a planted symlink cannot redirect writes).
 * With create, missing directories are made 0700. Returns a new fd the
 * caller closes, or -errno; *ret_leaf points into name at the last
 * component. */
int bundle_open_parent(int rootfd, const char *name, bool create, const char **ret_leaf);

/* Write leaf.tmp in dirfd (0600), fsync, rename to leaf. On failure the
 * temp file is removed and leaf is untouched. 0 or -errno. */
int bundle_atomic_write_at(int dirfd, const char *leaf, const void *data, size_t len);
/* The same without waiting for the disk: the write-back is started
 * (sync_file_range) and the caller must fsync leaf before anything vouches
 * for it (bundle_finalize does, for every member, before the manifest). */
int bundle_write_unsynced_at(int dirfd, const char *leaf, const void *data, size_t len);

/* A DIR stream over a duplicate of fd (fd itself stays open and the
 * caller's), positioned wherever fd's offset is. 0 or -errno. */
int bundle_opendir_dup(int fd, DIR **ret);

/* ---- reading a finished bundle's members (member_read.c) ---- */

/* What the manifest says a member is. */
struct bundle_member_want {
	uint64_t bytes;
	const char *sha256; /* 64 hex digits, either case */
};

/* A member's bytes counted and sha256-hashed as they are read. */
struct bundle_digest {
	struct sha256_ctx ctx;
	uint64_t bytes;
};
void bundle_digest_init(struct bundle_digest *d);
void bundle_digest_update(struct bundle_digest *d, const void *data, size_t len);
/* Are the bytes hashed so far exactly what want describes? Ends d. */
bool bundle_digest_matches(struct bundle_digest *d, const struct bundle_member_want *want);

/* Open member name (a relative path the caller has checked) below dirfd,
 * the bundle's directory, for reading: one openat2 with
 * RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS (a
 * component-wise O_NOFOLLOW walk where the kernel has no openat2),
 * O_NONBLOCK so a FIFO does not hang it. Returns the fd (its fstat in
 * *ret_st, if not NULL) or -ELOOP (a symlink at some component), -EINVAL
 * (not a regular file), -ENOENT, -ENOTDIR, other -errno. */
int bundle_member_open(int dirfd, const char *name, struct stat *ret_st);

/* Open the directory path (relative to dirfd, or AT_FDCWD) without
 * following a symlink at its last component: the fd, or -ELOOP if it is
 * a symlink, -ENOTDIR, other -errno. */
int bundle_open_dir_nofollow(int dirfd, const char *path);

/* Read fd to its end into a malloc'd buffer plus a NUL (not counted in
 * *ret_len), feeding d (if not NULL) with every byte. size_hint: the
 * size to expect. -EFBIG past max_len bytes (SIZE_MAX: no bound). */
int bundle_read_fd(int fd, size_t size_hint, size_t max_len, struct bundle_digest *d, char **ret,
		   size_t *ret_len);

/* Open member name as bundle_member_open does and read it whole, once,
 * hashing it as it is read; with want, the bytes read must be exactly
 * those the manifest describes, else BUNDLE_ALTERED (reader.h) and
 * nothing is returned. -EFBIG past max_len bytes. */
int bundle_member_read(int dirfd, const char *name, size_t max_len,
		       const struct bundle_member_want *want, char **ret, size_t *ret_len);

/* The bundle directory a reader opened (reader.c; owned by the reader). */
struct bundle_reader;
int bundle_reader_dirfd(const struct bundle_reader *r);

/* 64-bit hash of bytes, continuing from h (start with BUNDLE_HASH_SEED). */
#define BUNDLE_HASH_SEED 0xcbf29ce484222325ULL
uint64_t bundle_hash_bytes(uint64_t h, const void *data, size_t len);

#endif
