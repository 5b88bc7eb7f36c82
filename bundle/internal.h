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

#define BUNDLE_MANIFEST "manifest.json"

/* write(2) until len bytes are written; retries EINTR. A short write that
 * makes no progress is reported as -ENOSPC (what a full file system means
 * by it). 0 or -errno. */
int bundle_write_all(int fd, const void *data, size_t len);

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

/* 64-bit hash of bytes, continuing from h (start with BUNDLE_HASH_SEED). */
#define BUNDLE_HASH_SEED 0xcbf29ce484222325ULL
uint64_t bundle_hash_bytes(uint64_t h, const void *data, size_t len);

#endif
