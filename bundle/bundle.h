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

/* ---- argv and environment redaction ---- */

#define BUNDLE_REDACTED "[REDACTED]"
/* Returns a newly allocated copy of argv[0..argc) with credential values
 * replaced by BUNDLE_REDACTED. Free with bundle_redacted_free. NULL on
 * ENOMEM. argv[0] is copied verbatim. The result has argc + 1 entries, the
 * last NULL. Redacting the result again changes nothing (argv is
 * redacted until it settles; see redact.c).
 *
 * Names: a flag, variable, header or key whose name looks like a
 * credential (password, passwd, pwd, pass, passphrase, token, secret,
 * key, auth, credential, cookie, session, private, dsn...) has its value
 * redacted. Names are matched by component (split at - _ . and camelCase,
 * case-insensitive, plural allowed), so "api-key", "apiKey", "DB_PASSWORD"
 * match but "keyboard", "author" do not; a component that ends with
 * password, passwd, passphrase, secret, token or apikey matches too
 * ("PGPASSWORD"); a name whose last component is file/path/dir is not a
 * credential (its value is a path). This covers "--flag=value" and
 * "--flag value" (the next argument, unless it starts with '-'),
 * single-dash long flags ("-password x", "-Dfoo.password=x"), NAME=value
 * arguments, "Header: value" arguments (curl -H), and credential keys in
 * key=value lists after ';' ',' '?' '&' (ODBC/ADO.NET connection strings,
 * braced values included, mount options, URL queries).
 *
 * One-letter options are read only under a program that defines them,
 * named by argv[0] or by any later word ("sudo mysql ..."): -pPW of
 * mysql*, mariadb* and 7z* (a bare -p prompts: the next word is kept);
 * -p of sshpass and mongo*, -a of redis-cli, -w of ldap*, -P of sqlcmd,
 * zip and unzip, attached or as the next word; curl's -u and -U take
 * user:password, as --user and --proxy-user do for any program: the user
 * is kept, the password redacted (a numeric uid:gid is kept, except under
 * curl). Other one-letter options ("-p 8080") are left alone.
 *
 * Anywhere in an argument: user:password@ with or without a scheme
 * ("admin:pw@db:5432", not "mailto:a@b"), secret webhook paths (Slack,
 * Discord, Teams), recognizable tokens (AKIA..., ghp_, xoxb-, glpat-,
 * sk_live_, AIza..., eyJ JWTs...), openssl's "pass:PHRASE", and a
 * -----BEGIN ... PRIVATE KEY block (the whole argument). An option,
 * NAME= or header whose name itself holds a token or URL goes whole.
 *
 * Values inside a word are redacted as words: an option's "=value", an
 * assignment's value, a one-letter option's attached value. A word with
 * blanks in it that no rule took whole is redacted as a command line
 * ("sh -c 'mysql -pX'"): split into shell words with POSIX quoting, each
 * redacted with these rules; unchanged words and the text between words
 * are kept as written, a redacted word is re-quoted if it needs it. */
char **bundle_redact_argv(char *const *argv, size_t argc);
void bundle_redacted_free(char **argv, size_t argc);

/* One environment entry "NAME=value", newly allocated (free()), NULL on
 * ENOMEM: NAME=[REDACTED] when NAME looks like a credential (as above),
 * else the value redacted as one argument of a command line with no
 * program, so options, URLs, lists and tokens in it are found as in argv
 * ("JAVA_TOOL_OPTIONS=-Xmx1g -Dx.password=[REDACTED]",
 * "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/[REDACTED]"). */
char *bundle_redact_env(const char *entry);

#endif
