/*
 * Bundle verification: every listed member must exist with the recorded
 * size and sha256, and nothing else may be in the tree (a stray file is
 * either a leftover of an interrupted write or something added later;
 * either way the manifest no longer describes the directory).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/internal.h"
#include "bundle/reader.h"

struct verify {
	bundle_problem_fn fn;
	void *ctx;
	const char **names; /* sorted, for the "not listed" walk */
	size_t nnames;
	int problems;
};

static void problem(struct verify *v, const char *member, const char *what)
{
	v->problems++;
	if (v->fn)
		v->fn(v->ctx, member, what);
}

static int read_manifest(int dirfd, cJSON **ret)
{
	char *buf;
	size_t len;
	/* The manifest is small (one entry per member); the reader's cap,
	 * so that what verifies can be opened. -EFBIG is BUNDLE_PAST_CAP. */
	int r = bundle_member_read(dirfd, BUNDLE_MANIFEST, BUNDLE_MAX_MANIFEST_BYTES, NULL, &buf,
				   &len);

	if (r == -EINVAL)
		return -EBADMSG; /* a FIFO or a directory is no manifest */
	if (r < 0)
		return r;
	*ret = cJSON_ParseWithLength(buf, len);
	free(buf);
	return *ret ? 0 : -EBADMSG;
}

static void check_member(struct verify *v, int dirfd, const char *name, double bytes,
			 const char *sha)
{
	char got[65];
	uint64_t size;
	struct stat st;
	int fd;

	if (!bundle_name_valid(name)) {
		problem(v, name, "invalid name");
		return;
	}
	fd = bundle_member_open(dirfd, name, &st);
	if (fd < 0) {
		problem(v, name,
			fd == -ENOENT || fd == -ENOTDIR ? "missing"
			: fd == -ELOOP			? "symbolic link in its path"
			: fd == -EINVAL			? "not a regular file"
							: "unreadable");
		return;
	}
	if ((double)st.st_size != bytes) {
		problem(v, name, "size mismatch");
		goto out;
	}
	if (bundle_sha256_fd(fd, got, &size) < 0) {
		problem(v, name, "unreadable");
		goto out;
	}
	/* Re-check the size we actually hashed: the file may be growing. */
	if ((double)size != bytes)
		problem(v, name, "size mismatch");
	else if (strcasecmp(got, sha) != 0)
		problem(v, name, "sha256 mismatch");
out:
	close(fd);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool listed(const struct verify *v, const char *rel)
{
	return bsearch(&rel, v->names, v->nnames, sizeof(*v->names), str_cmp) != NULL;
}

/* Walk dirfd (whose path relative to the bundle is prefix), reporting every
 * non-directory entry that is not listed. Entries are sorted so reports come
 * out in a stable order. Symlinks are reported, never followed. */
static int walk(struct verify *v, int dirfd, const char *prefix, int depth)
{
	char **ents = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int r;

	if (depth > 16)
		return -ELOOP;
	r = bundle_opendir_dup(dirfd, &d);
	if (r < 0)
		return r;
	rewinddir(d);
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 32;
			char **ne = realloc(ents, nc * sizeof(*ents));
			if (!ne) {
				r = -ENOMEM;
				goto out;
			}
			ents = ne;
			cap = nc;
		}
		if (!(ents[n] = strdup(de->d_name))) {
			r = -ENOMEM;
			goto out;
		}
		n++;
	}
	if (errno) {
		r = -errno;
		goto out;
	}
	if (n)
		qsort(ents, n, sizeof(*ents), str_cmp);
	for (size_t i = 0; i < n && r == 0; i++) {
		char rel[PATH_MAX];
		struct stat st;

		if (snprintf(rel, sizeof(rel), "%s%s", prefix, ents[i]) >= (int)sizeof(rel)) {
			r = -ENAMETOOLONG;
			break;
		}
		if (fstatat(dirfd, ents[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* vanished while we looked */
			r = -errno;
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, ents[i],
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				r = -errno;
				break;
			}
			strcat(rel, "/");
			r = walk(v, sub, rel, depth + 1);
			close(sub);
			continue;
		}
		if (depth == 0 && strcmp(ents[i], BUNDLE_MANIFEST) == 0)
			continue;
		if (!listed(v, rel))
			problem(v, rel, "not listed in manifest");
	}
out:
	for (size_t i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	closedir(d);
	return r;
}

static int check_members(struct verify *v, int dirfd, const cJSON *members, bool hash)
{
	const cJSON *m;
	size_t count = (size_t)cJSON_GetArraySize(members), i = 0;

	v->names = calloc(count ? count : 1, sizeof(*v->names));
	if (!v->names)
		return -ENOMEM;
	/* Validate the whole shape first: a malformed manifest is one error,
	 * not a list of per-member problems. */
	cJSON_ArrayForEach(m, members) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
		const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(m, "bytes");
		const cJSON *sha = cJSON_GetObjectItemCaseSensitive(m, "sha256");

		if (!cJSON_IsString(name) || !cJSON_IsNumber(bytes) || !cJSON_IsString(sha))
			return -EBADMSG;
		v->names[i++] = name->valuestring;
	}
	v->nnames = i;
	cJSON_ArrayForEach(m, members) {
		/* Opened only to hash them. */
		if (!hash)
			break;
		check_member(v, dirfd, cJSON_GetObjectItemCaseSensitive(m, "name")->valuestring,
			     cJSON_GetObjectItemCaseSensitive(m, "bytes")->valuedouble,
			     cJSON_GetObjectItemCaseSensitive(m, "sha256")->valuestring);
	}
	qsort(v->names, v->nnames, sizeof(*v->names), str_cmp);
	return 0;
}

/* Verify the bundle open at dirfd against manifest (what of it: the
 * BUNDLE_VERIFY_* bits). */
static int verify_at(int dirfd, const cJSON *manifest, unsigned what, bundle_problem_fn fn,
		     void *ctx, size_t *ret_members)
{
	struct verify v = { .fn = fn, .ctx = ctx };
	const cJSON *members = cJSON_GetObjectItemCaseSensitive(manifest, "members");
	int r;

	if (!cJSON_IsArray(members))
		return -EBADMSG;
	r = check_members(&v, dirfd, members, what & BUNDLE_VERIFY_MEMBERS);
	if (r == 0 && (what & BUNDLE_VERIFY_UNLISTED))
		r = walk(&v, dirfd, "", 0);
	if (r == 0) {
		r = v.problems ? 1 : 0;
		if (ret_members)
			*ret_members = v.nnames;
	}
	free(v.names);
	return r;
}

int bundle_verify(const char *dir, bundle_problem_fn fn, void *ctx)
{
	return bundle_verify_listed(dir, fn, ctx, NULL);
}

int bundle_verify_listed(const char *dir, bundle_problem_fn fn, void *ctx, size_t *ret_members)
{
	cJSON *manifest = NULL;
	int dirfd, r;

	if (!dir)
		return -EINVAL;
	/* As the reader opens a bundle: the directory itself, not a link
	 * to one, and every member below this one fd. */
	dirfd = bundle_open_dir_nofollow(AT_FDCWD, dir);
	if (dirfd < 0)
		return dirfd;
	r = read_manifest(dirfd, &manifest);
	if (r == 0)
		r = verify_at(dirfd, manifest, BUNDLE_VERIFY_ALL, fn, ctx, ret_members);
	cJSON_Delete(manifest);
	close(dirfd);
	return r;
}

int bundle_reader_verify(const struct bundle_reader *r, unsigned what, bundle_problem_fn fn,
			 void *ctx, size_t *ret_members)
{
	return verify_at(bundle_reader_dirfd(r), bundle_reader_manifest(r), what, fn, ctx,
			 ret_members);
}
