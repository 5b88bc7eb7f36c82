/*
 * bundle: the on-disk bundle directory and everything written into it.
 *
 * A bundle is a directory of members plus manifest.json, which names and
 * sha256-hashes every member and is written last (temp file, fsync, rename).
 * A directory with a manifest is therefore always complete; a directory
 * without one is partial and must never be presented as a bundle.
 *
 * Functions return 0 or a negative errno and never print. -ENOSPC, -EFBIG,
 * -EDQUOT and -EIO from writes are passed through so cmd/ can report a full
 * disk distinctly.
 */
#ifndef DIAG_BUNDLE_H
#define DIAG_BUNDLE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cjson/cJSON.h>

/* argv and environment redaction, and the one way into the bundle for a
 * string a target chose (argv, environ, thread names): its own header. */
#include "bundle/redact.h"

struct bundle;

/* The manifest's "format_version" (absent: 1). 2: "target" may be a list,
 * one entry per process, in a bundle of several (merge.h); a bundle of one
 * process is laid out as in 1. */
#define BUNDLE_FORMAT_VERSION 2

/* Open dir for writing a bundle. dir must not exist (it is created 0700)
 * or be an empty directory that is not a symlink. -EEXIST if it is not empty,
 * -ENOTDIR if it is a file, -ELOOP if a symlink, BUNDLE_UNSAFE_DIR if it is
 * owned by another user or writable by group or others without the sticky
 * bit (they could read what we write, or swap it), -EROFS / -EACCES /
 * -EPERM if it cannot be written into, other -errno on failure. */
#define BUNDLE_UNSAFE_DIR (-EBADFD)

struct stat;
/* May users other than the owner add, rename or remove entries in the
 * directory st describes (writable by group or others, no sticky bit)?
 * Then nothing written there stays ours: refused as BUNDLE_UNSAFE_DIR. */
bool bundle_dir_shared(const struct stat *st);

/* The one way this tool creates a temporary file: in dirfd, named
 * "<leaf>.<random>.tmp" (written to tmp, size bytes), O_EXCL and
 * O_NOFOLLOW, with mode. Returns a write-only fd or -errno. */
int bundle_open_temp(int dirfd, const char *leaf, mode_t mode, char *tmp, size_t size);
int bundle_create(const char *dir, struct bundle **ret);

/* Write a whole member atomically: <name>.tmp, fsync, rename to name,
 * recorded (size + sha256) for the manifest. name may contain subdirectories
 * ("leak/open_fds-1/threads.txt"); they are created 0700, members are 0600.
 * -EINVAL for a name that is empty, absolute, has "." / ".." / empty
 * components, ends in ".tmp" or is "manifest.json"; -EEXIST if the name was
 * already written or opened as a stream. On failure the temp file is removed
 * and nothing is recorded. */
int bundle_write_member(struct bundle *b, const char *name, const void *data, size_t len);

/* The name rule of bundle_write_member, bundle_stream_open and
 * bundle_verify: a relative path of non-empty components, none of them
 * "." or "..", not ending in ".tmp", not the manifest itself, short
 * enough for its temporary. For a caller that must refuse a bad name
 * before it writes anything (unpem). */
bool bundle_name_valid(const char *name);

/* A member written incrementally (runtime.jsonl): appended and flushed line
 * by line so a killed capture still leaves a usable file. It is hashed when
 * the bundle is finalized. Same name rules as bundle_write_member. The
 * stream is owned by the bundle: it stays valid until bundle_finalize or
 * bundle_abandon, which close it; there is no separate close. Each append
 * is one write(2) loop straight to the kernel (no user-space buffer). */
struct bundle_stream;
int bundle_stream_open(struct bundle *b, const char *name, struct bundle_stream **ret);
int bundle_stream_append(struct bundle_stream *s, const void *data, size_t len);

/* A member whose bytes arrive in pieces and whose fate is known only once
 * it is whole (unpem decodes a block straight to disk and keeps it only if
 * its size and sha256 hold, and only names it once every block has been
 * seen): a temporary file in the bundle's directory ("spool.<random>.tmp",
 * a name no member can have), hashed as it is written. Owned by the
 * bundle: bundle_finalize, _finalize_verbatim, _abandon and _discard
 * remove the temporary of a spool that was never committed and free it.
 *
 * bundle_spool_write appends; bundle_spool_close ends the writing
 * (closes the file, starts its write-back) and says how many bytes it
 * holds and their sha256; then exactly one of bundle_spool_commit, which
 * makes it member name (bundle_write_member's rules and errors, recorded
 * for the manifest with that size and sha256; on failure the temporary
 * stays the spool's), or bundle_spool_drop, which removes it and frees s
 * (a no-op on NULL). At most one spool is open for writing at a time in
 * practice: each holds a file descriptor until it is closed. */
struct bundle_spool;
int bundle_spool_open(struct bundle *b, struct bundle_spool **ret);
int bundle_spool_write(struct bundle_spool *s, const void *data, size_t len);
int bundle_spool_close(struct bundle_spool *s, uint64_t *ret_bytes, char ret_sha256[65]);
int bundle_spool_commit(struct bundle_spool *s, const char *name);
void bundle_spool_drop(struct bundle_spool *s);

/* Finalize: close streams, hash them, add "members" [{name, bytes, sha256}]
 * sorted by name to manifest (which the caller filled with everything else;
 * an existing "members" key is replaced; NULL means an empty object;
 * ownership of manifest passes to the bundle), write manifest.json last
 * (manifest.json.tmp, fsync, rename, fsync the directory).
 *
 * Finalize ENDS the bundle's life whatever it returns: b is freed, like
 * fclose(). Do not call bundle_abandon (or bundle_dir) on b afterwards;
 * copy bundle_dir(b) first if you need it. On failure (-ENOSPC, -EFBIG,
 * -EIO, ...) no manifest.json and no manifest.json.tmp are left: the
 * directory is partial, exactly as after bundle_abandon. */
int bundle_finalize(struct bundle *b, cJSON *manifest);

/* Finalize with manifest.json given as exact bytes, for a bundle rebuilt
 * from a copy (unpem) whose manifest must stay byte for byte what was
 * shipped. Members are synced and the bytes written as bundle_finalize
 * writes its manifest (manifest.json.tmp, fsync, rename, fsync the
 * directory), but nothing is added or checked: the caller vouches that the
 * text lists what was written, and bundle_verify is how to find out.
 * -EINVAL if a stream is open (its hash would be in no manifest). Ends b's
 * life whatever it returns, exactly like bundle_finalize. */
int bundle_finalize_verbatim(struct bundle *b, const void *manifest, size_t len);

/* Abandon: close everything, leave no manifest, free b. Files written so
 * far stay (the directory is visibly partial). Safe on NULL. Use this or
 * bundle_finalize, exactly once. */
void bundle_abandon(struct bundle *b);

/* Discard: as bundle_abandon, and then remove what b wrote (its members,
 * streams and spools, and the directories made for them) and the
 * directory itself if bundle_create made it (an existing directory, empty
 * when b was created, is left empty). For a writer that must not leave a
 * partial bundle behind when it gives up (unpem). Best effort: what
 * cannot be removed stays, and still has no manifest. Safe on NULL. */
void bundle_discard(struct bundle *b);
/* Have bundle_finalize and _finalize_verbatim discard b, not abandon it,
 * when they fail: a writer that leaves nothing or a whole bundle. */
void bundle_discard_on_failure(struct bundle *b);

/* Salvage: finish the bundle in dir that its writer left without a
 * manifest (it was killed: the watchdog's epilogue, attach.h). Every
 * regular file below dir is a member as it stands (members are renamed
 * into place whole; a stream has the lines written so far), hashed and
 * listed in manifest's "members"; leftover temporaries (".tmp") are
 * removed; anything else (a symlink, a FIFO) is left unlisted, for verify
 * to name. manifest.json is written last, as bundle_finalize writes it.
 * dir must not be a symbolic link (-ELOOP); -EEXIST if it has a manifest
 * already (then nothing is touched). Ownership of manifest passes to the
 * call, whatever it returns. */
int bundle_salvage(const char *dir, cJSON *manifest);

/* Path of the bundle directory. */
const char *bundle_dir(const struct bundle *b);

/* Verification of a finished bundle. The callback is called once per
 * problem with a short description ("missing", "size mismatch",
 * "sha256 mismatch", "not listed in manifest"; rarer: "invalid name" for a
 * manifest entry with an unsafe path, "symbolic link in its path" (at any
 * component: none is followed), "not a regular file", "unreadable") and
 * the member name (a path relative to dir). dir itself must not be a
 * symbolic link (-ELOOP). Listed members are checked
 * in manifest order, then unlisted entries (any non-directory, symlinks
 * included and never followed, at any depth; manifest.json itself excepted)
 * in sorted order. fn may be NULL.
 * Returns 0 intact, 1 problems found, or -errno if the manifest cannot be
 * read/parsed (-ENOENT no manifest, -EBADMSG malformed, -EFBIG larger than
 * the reader's BUNDLE_MAX_MANIFEST_BYTES). Members are hashed, never
 * decoded: a bundle can be intact and still past a cap of the reader. */
typedef void (*bundle_problem_fn)(void *ctx, const char *member, const char *problem);
int bundle_verify(const char *dir, bundle_problem_fn fn, void *ctx);
/* The same, also saying how much was vouched for: *ret_members (may be
 * NULL) is the number of members the manifest lists, each of them checked,
 * when the result is 0 or 1 (untouched otherwise). Nothing vouches for
 * the manifest itself: it is not signed, so a bundle whose members and
 * manifest were rewritten together verifies too. */
int bundle_verify_listed(const char *dir, bundle_problem_fn fn, void *ctx, size_t *ret_members);

/* sha256 (nettle) of a buffer as 64 lowercase hex chars + NUL. */
void bundle_sha256_hex(const void *data, size_t len, char out[65]);

#endif
