/*
 * Bundle writer: members are written whole (tmp, rename) and recorded, and
 * all synced to disk at finalize; manifest.json is written (tmp, fsync,
 * rename, directory fsync) last, so its presence is what marks a bundle
 * complete.
 *
 * Out-of-memory policy: report -ENOMEM and leave the bundle usable; nothing
 * here aborts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nettle/sha2.h>

#include "bundle/bundle.h"
#include "bundle/internal.h"
#include "bundle/text.h"

struct member {
	char *name;
	uint64_t bytes;
	char sha256[65];
};

struct bundle_stream {
	struct bundle *b;
	struct bundle_stream *next;
	char *name;
	int fd;
};

struct bundle_spool {
	struct bundle *b;
	struct bundle_spool *prev, *next; /* b->spools: those not committed */
	char tmp[NAME_MAX + 1];
	int fd; /* -1 once closed */
	uint64_t bytes;
	char sha256[65];
	struct sha256_ctx ctx;
};

struct bundle {
	char *dir;
	int dirfd;
	bool made;    /* bundle_create made dir (bundle_discard removes it) */
	bool discard; /* bundle_discard_on_failure */
	struct member *members;
	size_t nmembers, cap;
	struct bundle_stream *streams;
	struct bundle_spool *spools;
};

int bundle_opendir_dup(int fd, DIR **ret)
{
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	if (dfd < 0)
		return -errno;
	*ret = fdopendir(dfd);
	if (!*ret) {
		int r = -errno;
		close(dfd);
		return r;
	}
	return 0;
}

static int dir_is_empty(int fd)
{
	struct dirent *de;
	DIR *d;
	int r = bundle_opendir_dup(fd, &d);

	if (r < 0)
		return r;
	r = 1;
	errno = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			r = 0;
			break;
		}
	}
	if (!de && errno)
		r = -errno;
	closedir(d);
	return r;
}

bool bundle_dir_shared(const struct stat *st)
{
	return (st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX);
}

/* An existing directory is ours alone: our own, and no one else may add
 * or swap entries in it (the sticky bit stops them swapping ours). */
static bool dir_safe(const struct stat *st)
{
	return st->st_uid == geteuid() && !bundle_dir_shared(st);
}

int bundle_create(const char *dir, struct bundle **ret)
{
	struct bundle *b;
	struct stat st;
	bool made = false;
	char *path;
	size_t len;
	int fd, r;

	if (!dir || !*dir || !ret)
		return -EINVAL;
	/* "link/" would make lstat and O_NOFOLLOW follow a symlink: strip
	 * trailing slashes so the checks apply to the name itself. */
	path = strdup(dir);
	if (!path)
		return -ENOMEM;
	for (len = strlen(path); len > 1 && path[len - 1] == '/'; len--)
		path[len - 1] = '\0';
	if (lstat(path, &st) < 0) {
		if (errno != ENOENT)
			goto fail_errno;
		/* 0700: argv, environment-derived labels and stacks can be
		 * sensitive; the user can widen access afterwards. */
		if (mkdir(path, 0700) == 0)
			made = true;
		else if (errno != EEXIST)
			goto fail_errno;
		if (lstat(path, &st) < 0)
			goto fail_errno;
	}
	r = S_ISLNK(st.st_mode) ? -ELOOP : !S_ISDIR(st.st_mode) ? -ENOTDIR : 0;
	if (r < 0)
		goto fail;
	if (!made && !dir_safe(&st)) {
		r = BUNDLE_UNSAFE_DIR;
		goto fail;
	}
	/* O_NOFOLLOW closes the window between lstat and open in which the
	 * directory could be swapped for a symlink. */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		goto fail_errno;
	/* mkdir's mode is filtered by the umask; ours is deliberate. */
	if (made)
		(void)fchmod(fd, 0700);
	r = dir_is_empty(fd);
	if (r <= 0) {
		close(fd);
		r = r == 0 ? -EEXIST : r;
		goto fail;
	}
	/* An existing empty directory we cannot write into (read-only mount,
	 * immutable, no permission) must be refused now, before the caller
	 * attaches to anything, not at the first member write. AT_EACCESS:
	 * the effective ids are the ones that will write. */
	if (faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) < 0) {
		r = -errno;
		close(fd);
		if (made)
			(void)rmdir(path);
		goto fail;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		close(fd);
		r = -ENOMEM;
		goto fail;
	}
	b->dir = path;
	b->dirfd = fd;
	b->made = made;
	*ret = b;
	return 0;
fail_errno:
	r = -errno;
fail:
	free(path);
	return r;
}

const char *bundle_dir(const struct bundle *b)
{
	return b ? b->dir : NULL;
}

static bool name_taken(const struct bundle *b, const char *name)
{
	for (size_t i = 0; i < b->nmembers; i++)
		if (strcmp(b->members[i].name, name) == 0)
			return true;
	for (const struct bundle_stream *s = b->streams; s; s = s->next)
		if (strcmp(s->name, name) == 0)
			return true;
	return false;
}

/* Reserve a slot before touching the disk, so a file is never written that
 * the manifest then cannot list. */
static struct member *member_reserve(struct bundle *b, const char *name)
{
	struct member *m;

	if (b->nmembers == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;
		m = realloc(b->members, cap * sizeof(*m));
		if (!m)
			return NULL;
		b->members = m;
		b->cap = cap;
	}
	m = &b->members[b->nmembers];
	memset(m, 0, sizeof(*m));
	m->name = strdup(name);
	return m->name ? m : NULL;
}

int bundle_write_member(struct bundle *b, const char *name, const void *data, size_t len)
{
	const char *leaf;
	struct member *m;
	int pfd, r;

	if (!b || (!data && len))
		return -EINVAL;
	if (!bundle_name_valid(name))
		return -EINVAL;
	if (name_taken(b, name))
		return -EEXIST;
	m = member_reserve(b, name);
	if (!m)
		return -ENOMEM;
	pfd = bundle_open_parent(b->dirfd, name, true, &leaf);
	if (pfd < 0) {
		r = pfd;
		goto fail;
	}
	/* Not synced here: one fsync per member, each a journal commit of its
	 * own between our other work, made the end of a capture (after
	 * Ctrl-C, when it must be quick) take seconds on a busy disk. Members
	 * are synced together at finalize, before the manifest that vouches
	 * for them; a bundle killed before that has no manifest. */
	r = bundle_write_unsynced_at(pfd, leaf, data ? data : "", len);
	close(pfd);
	if (r < 0)
		goto fail;
	m->bytes = len;
	bundle_sha256_hex(data ? data : "", len, m->sha256);
	b->nmembers++;
	return 0;
fail:
	free(m->name);
	return r;
}

int bundle_stream_open(struct bundle *b, const char *name, struct bundle_stream **ret)
{
	struct bundle_stream *s;
	const char *leaf;
	int pfd, fd;

	if (!b || !ret)
		return -EINVAL;
	if (!bundle_name_valid(name))
		return -EINVAL;
	if (name_taken(b, name))
		return -EEXIST;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(name))) {
		free(s);
		return -ENOMEM;
	}
	pfd = bundle_open_parent(b->dirfd, name, true, &leaf);
	if (pfd < 0) {
		free(s->name);
		free(s);
		return pfd;
	}
	/* Written in place, not via a temp file: after a kill the lines
	 * written so far must be there under the real name. O_RDWR so
	 * finalize can hash it through the same fd. */
	fd = openat(pfd, leaf, O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0) {
		int r = -errno;
		close(pfd);
		free(s->name);
		free(s);
		return r;
	}
	close(pfd);
	(void)fchmod(fd, 0600); /* as for members: independent of the umask */
	s->fd = fd;
	s->b = b;
	s->next = b->streams;
	b->streams = s;
	*ret = s;
	return 0;
}

int bundle_stream_append(struct bundle_stream *s, const void *data, size_t len)
{
	if (!s || (!data && len))
		return -EINVAL;
	if (s->fd < 0)
		return -EBADF;
	/* write(2) straight to the kernel: no stdio buffer to lose if the
	 * capture is killed. */
	return bundle_write_all(s->fd, data, len);
}

int bundle_spool_open(struct bundle *b, struct bundle_spool **ret)
{
	struct bundle_spool *s;

	if (!b || !ret)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	/* In the bundle's own directory, so that committing is a rename on
	 * one file system; ".tmp" keeps it out of every member's way. */
	s->fd = bundle_open_temp(b->dirfd, "spool", 0600, s->tmp, sizeof(s->tmp));
	if (s->fd < 0) {
		int r = s->fd;
		free(s);
		return r;
	}
	(void)fchmod(s->fd, 0600); /* as for members: independent of the umask */
	sha256_init(&s->ctx);
	s->b = b;
	s->next = b->spools;
	if (b->spools)
		b->spools->prev = s;
	b->spools = s;
	*ret = s;
	return 0;
}

int bundle_spool_write(struct bundle_spool *s, const void *data, size_t len)
{
	if (!s || (!data && len))
		return -EINVAL;
	if (s->fd < 0)
		return -EBADF;
	int r = bundle_write_all(s->fd, data, len);
	if (r < 0)
		return r;
	sha256_update(&s->ctx, len, data);
	s->bytes += len;
	return 0;
}

int bundle_spool_close(struct bundle_spool *s, uint64_t *ret_bytes, char ret_sha256[65])
{
	int r = 0;

	if (!s)
		return -EINVAL;
	if (s->fd >= 0) {
		/* The write-back starts now, as for an unsynced member;
		 * finalize fsyncs it with the others. */
		if (s->bytes && sync_file_range(s->fd, 0, 0, SYNC_FILE_RANGE_WRITE) < 0 &&
		    errno != ESPIPE && errno != EINVAL && errno != ENOSYS)
			r = -errno;
		if (close(s->fd) < 0 && r == 0)
			r = -errno;
		s->fd = -1;
		bundle_sha256_digest_hex(&s->ctx, s->sha256);
	}
	if (r < 0)
		return r;
	if (ret_bytes)
		*ret_bytes = s->bytes;
	if (ret_sha256)
		memcpy(ret_sha256, s->sha256, 65);
	return 0;
}

static void spool_unlist(struct bundle_spool *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		s->b->spools = s->next;
	if (s->next)
		s->next->prev = s->prev;
}

static void spool_free(struct bundle_spool *s, bool remove)
{
	if (s->fd >= 0)
		close(s->fd);
	if (remove)
		(void)unlinkat(s->b->dirfd, s->tmp, 0);
	free(s);
}

void bundle_spool_drop(struct bundle_spool *s)
{
	if (!s)
		return;
	spool_unlist(s);
	spool_free(s, true);
}

/* The directories of name, deepest first, as long as they are empty: what
 * a member that is gone, or was never written, leaves behind. */
static void remove_empty_dirs(int rootfd, const char *name)
{
	char *copy = strdup(name);
	const char *leaf;

	if (!copy)
		return;
	for (char *sl = strrchr(copy, '/'); sl; sl = strrchr(copy, '/')) {
		*sl = '\0';
		int pfd = bundle_open_parent(rootfd, copy, false, &leaf);
		if (pfd < 0)
			break;
		int r = unlinkat(pfd, leaf, AT_REMOVEDIR);
		close(pfd);
		if (r < 0)
			break; /* not empty: another member's, and so are those above */
	}
	free(copy);
}

int bundle_spool_commit(struct bundle_spool *s, const char *name)
{
	const char *leaf;
	struct member *m;
	int pfd, r;

	if (!s || s->fd >= 0)
		return -EINVAL; /* not closed: its hash is not final */
	struct bundle *b = s->b;
	if (!bundle_name_valid(name))
		return -EINVAL;
	if (name_taken(b, name))
		return -EEXIST;
	m = member_reserve(b, name);
	if (!m)
		return -ENOMEM;
	pfd = bundle_open_parent(b->dirfd, name, true, &leaf);
	if (pfd < 0) {
		r = pfd;
		goto fail;
	}
	/* RENAME_NOREPLACE: a name is taken once, never over a file or a
	 * directory that is already there. */
	r = renameat2(b->dirfd, s->tmp, pfd, leaf, RENAME_NOREPLACE) < 0 ? -errno : 0;
	close(pfd);
	if (r < 0)
		goto fail;
	m->bytes = s->bytes;
	memcpy(m->sha256, s->sha256, sizeof(m->sha256));
	b->nmembers++;
	spool_unlist(s);
	spool_free(s, false);
	return 0;
fail:
	free(m->name);
	remove_empty_dirs(b->dirfd, name);
	return r;
}

static void streams_free(struct bundle *b)
{
	struct bundle_stream *s = b->streams, *next;

	for (; s; s = next) {
		next = s->next;
		if (s->fd >= 0)
			close(s->fd);
		free(s->name);
		free(s);
	}
	b->streams = NULL;
}

/* A spool never committed is no member: its temporary goes. */
static void spools_drop(struct bundle *b)
{
	while (b->spools)
		bundle_spool_drop(b->spools);
}

static void bundle_free(struct bundle *b)
{
	streams_free(b);
	spools_drop(b);
	for (size_t i = 0; i < b->nmembers; i++)
		free(b->members[i].name);
	free(b->members);
	if (b->dirfd >= 0)
		close(b->dirfd);
	free(b->dir);
	free(b);
}

void bundle_abandon(struct bundle *b)
{
	if (b)
		bundle_free(b);
}

void bundle_discard(struct bundle *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nmembers; i++) {
		const char *name = b->members[i].name, *leaf;
		int pfd = bundle_open_parent(b->dirfd, name, false, &leaf);
		if (pfd >= 0) {
			(void)unlinkat(pfd, leaf, 0);
			close(pfd);
		}
		remove_empty_dirs(b->dirfd, name);
	}
	for (const struct bundle_stream *s = b->streams; s; s = s->next) {
		const char *leaf;
		int pfd = bundle_open_parent(b->dirfd, s->name, false, &leaf);
		if (pfd >= 0) {
			(void)unlinkat(pfd, leaf, 0);
			close(pfd);
		}
		remove_empty_dirs(b->dirfd, s->name);
	}
	char *dir = b->made ? strdup(b->dir) : NULL;
	bundle_free(b); /* the spools' temporaries, and the directory's fd */
	/* rmdir refuses a directory that is not empty: whatever could not be
	 * removed above keeps it, visibly partial (no manifest). */
	if (dir)
		(void)rmdir(dir);
	free(dir);
}

void bundle_discard_on_failure(struct bundle *b)
{
	if (b)
		b->discard = true;
}

/* Every member written so far, and its directory entry, on disk. */
static int sync_members(struct bundle *b)
{
	for (size_t i = 0; i < b->nmembers; i++) {
		const char *name = b->members[i].name, *leaf;
		int pfd = bundle_open_parent(b->dirfd, name, false, &leaf);
		if (pfd < 0)
			return pfd;
		int fd = openat(pfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		int r = fd < 0 || fsync(fd) < 0 ? -errno : 0;
		if (fd >= 0)
			close(fd);
		/* A subdirectory's entries: the root is synced by the caller. */
		if (r == 0 && strchr(name, '/') && fsync(pfd) < 0)
			r = -errno;
		close(pfd);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Sync, hash (by re-reading what actually reached the file) and record each
 * stream as an ordinary member. */
static int streams_close(struct bundle *b)
{
	for (struct bundle_stream *s = b->streams; s; s = s->next) {
		struct member *m;
		int r;

		if (fsync(s->fd) < 0)
			return -errno;
		m = member_reserve(b, s->name);
		if (!m)
			return -ENOMEM;
		r = bundle_sha256_fd(s->fd, m->sha256, &m->bytes);
		if (r < 0) {
			free(m->name);
			return r;
		}
		b->nmembers++;
		r = close(s->fd);
		s->fd = -1;
		if (r < 0)
			return -errno;
	}
	return 0;
}

static int member_cmp(const void *a, const void *b)
{
	return strcmp(((const struct member *)a)->name, ((const struct member *)b)->name);
}

static int manifest_add_members(struct bundle *b, cJSON *manifest)
{
	cJSON *arr = cJSON_CreateArray();

	if (!arr)
		return -ENOMEM;
	if (b->nmembers)
		qsort(b->members, b->nmembers, sizeof(*b->members), member_cmp);
	for (size_t i = 0; i < b->nmembers; i++) {
		const struct member *m = &b->members[i];
		cJSON *o = cJSON_CreateObject();

		if (!o) {
			cJSON_Delete(arr);
			return -ENOMEM;
		}
		cJSON_AddItemToArray(arr, o);
		if (!cJSON_AddStringToObject(o, "name", m->name) ||
		    !cJSON_AddNumberToObject(o, "bytes", (double)m->bytes) ||
		    !cJSON_AddStringToObject(o, "sha256", m->sha256)) {
			cJSON_Delete(arr);
			return -ENOMEM;
		}
	}
	/* Ours is authoritative: replace any "members" the caller put in. */
	cJSON_DeleteItemFromObjectCaseSensitive(manifest, "members");
	cJSON_AddItemToObject(manifest, "members", arr);
	return 0;
}

/* The bundle directory's own entry in its parent; best effort, as some file
 * systems refuse fsync on directories. */
static void sync_parent(const char *dir)
{
	char *copy = strdup(dir);
	int fd;

	if (!copy)
		return;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	free(copy);
}

/* With every member synced: the directory, then the manifest text, then
 * the directory again; that order is what lets a manifest vouch for its
 * members. Does not free b. */
static int finish(struct bundle *b, const void *manifest, size_t len)
{
	int r;

	/* Member renames must be durable before the manifest that vouches
	 * for them can be. */
	if (fsync(b->dirfd) < 0)
		return -errno;
	r = bundle_atomic_write_at(b->dirfd, BUNDLE_MANIFEST, manifest, len);
	if (r < 0)
		return r;
	if (fsync(b->dirfd) < 0) {
		r = -errno;
		/* Not durable means not done: a manifest that may vanish on
		 * crash must not be reported as a finished bundle now. */
		(void)unlinkat(b->dirfd, BUNDLE_MANIFEST, 0);
		return r;
	}
	sync_parent(b->dir);
	return 0;
}

/* cJSON's layout, spelled as all our JSON is (json_print: the target's
 * names are not always UTF-8), plus the final newline every manifest of
 * ours ends in. */
static int manifest_text(cJSON *manifest, char **ret, size_t *ret_len)
{
	char *text = json_print(manifest, true);
	size_t len;

	if (!text)
		return -ENOMEM;
	len = strlen(text);
	char *nl = realloc(text, len + 2);
	if (!nl) {
		free(text);
		return -ENOMEM;
	}
	nl[len++] = '\n';
	nl[len] = '\0';
	*ret = nl;
	*ret_len = len;
	return 0;
}

int bundle_finalize(struct bundle *b, cJSON *manifest)
{
	char *text = NULL;
	size_t len;
	int r;

	if (!b) {
		cJSON_Delete(manifest);
		return -EINVAL;
	}
	if (!manifest)
		manifest = cJSON_CreateObject();
	if (!manifest) {
		r = -ENOMEM;
		goto out;
	}
	if (!cJSON_IsObject(manifest)) {
		r = -EINVAL;
		goto out;
	}
	spools_drop(b); /* before the manifest: no stray file beside it */
	r = sync_members(b);
	if (r < 0)
		goto out;
	r = streams_close(b);
	if (r < 0)
		goto out;
	r = manifest_add_members(b, manifest);
	if (r < 0)
		goto out;
	r = manifest_text(manifest, &text, &len);
	if (r < 0)
		goto out;
	r = finish(b, text, len);
out:
	free(text);
	cJSON_Delete(manifest);
	if (r < 0 && b->discard)
		bundle_discard(b);
	else
		bundle_free(b);
	return r;
}

/* Directories below a salvaged bundle: a capture's go three deep. */
#define SALVAGE_MAX_DEPTH 16

static bool is_temporary(const char *name)
{
	size_t n = strlen(name);
	return n >= 4 && strcmp(name + n - 4, ".tmp") == 0;
}

/* Every regular file below dfd (whose path in the bundle is prefix) into
 * b's members, leftover temporaries removed. */
static int salvage_walk(struct bundle *b, int dfd, const char *prefix, int depth)
{
	DIR *d;
	struct dirent *de;
	int r = bundle_opendir_dup(dfd, &d);

	if (r < 0)
		return r;
	while (r == 0 && (de = readdir(d))) {
		const char *name = de->d_name;
		struct stat st;
		char path[PATH_MAX];

		if (!strcmp(name, ".") || !strcmp(name, "..") ||
		    (!*prefix && !strcmp(name, BUNDLE_MANIFEST)))
			continue;
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    snprintf(path, sizeof(path), "%s%s", prefix, name) >= (int)sizeof(path))
			continue;
		if (S_ISDIR(st.st_mode) && depth < SALVAGE_MAX_DEPTH) {
			int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0 && strlen(path) + 2 < sizeof(path)) {
				strcat(path, "/");
				r = salvage_walk(b, sub, path, depth + 1);
			}
			if (sub >= 0)
				close(sub);
		} else if (S_ISREG(st.st_mode) && is_temporary(name)) {
			(void)unlinkat(dfd, name, 0);
		} else if (S_ISREG(st.st_mode) && bundle_name_valid(path)) {
			int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			struct member *m = fd >= 0 ? member_reserve(b, path) : NULL;
			if (fd >= 0 && !m)
				r = -ENOMEM;
			/* Durable before the manifest that vouches for it. */
			if (m && fsync(fd) == 0 && bundle_sha256_fd(fd, m->sha256, &m->bytes) == 0)
				b->nmembers++;
			else if (m)
				free(m->name);
			if (fd >= 0)
				close(fd);
		}
	}
	closedir(d);
	return r;
}

int bundle_salvage(const char *dir, cJSON *manifest)
{
	struct bundle *b = NULL;
	char *text = NULL;
	size_t len;
	struct stat st;
	int r;

	if (!dir || !cJSON_IsObject(manifest)) {
		r = -EINVAL;
		goto out;
	}
	b = calloc(1, sizeof(*b));
	if (b)
		b->dirfd = -1;
	if (!b || !(b->dir = strdup(dir))) {
		r = -ENOMEM;
		goto out;
	}
	b->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (b->dirfd < 0) {
		r = -errno;
		goto out;
	}
	if (fstatat(b->dirfd, BUNDLE_MANIFEST, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) {
		r = -EEXIST; /* finished after all, or something there we will not replace */
		goto out;
	}
	r = salvage_walk(b, b->dirfd, "", 0);
	if (r == 0)
		r = manifest_add_members(b, manifest);
	if (r == 0)
		r = manifest_text(manifest, &text, &len);
	if (r == 0)
		r = finish(b, text, len);
out:
	free(text);
	cJSON_Delete(manifest);
	if (b)
		bundle_free(b);
	return r;
}

int bundle_finalize_verbatim(struct bundle *b, const void *manifest, size_t len)
{
	int r;

	if (!b)
		return -EINVAL;
	spools_drop(b);
	if (b->streams || (!manifest && len))
		r = -EINVAL; /* nothing would hash the streams into the text */
	else if ((r = sync_members(b)) == 0)
		r = finish(b, manifest ? manifest : "", len);
	if (r < 0 && b->discard)
		bundle_discard(b);
	else
		bundle_free(b);
	return r;
}
