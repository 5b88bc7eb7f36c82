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
	int r = bundle_read_file_at(dirfd, BUNDLE_MANIFEST, BUNDLE_MAX_MANIFEST_BYTES, &buf, &len);

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
	const char *leaf;
	int pfd, fd, r;

	if (!bundle_name_valid(name)) {
		problem(v, name, "invalid name");
		return;
	}
	pfd = bundle_open_parent(dirfd, name, false, &leaf);
	if (pfd < 0) {
		problem(v, name, pfd == -ENOENT || pfd == -ENOTDIR ? "missing" : "unreadable");
		return;
	}
	fd = openat(pfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	r = -errno;
	close(pfd);
	if (fd < 0) {
		problem(v, name, r == -ENOENT ? "missing" : "unreadable");
		return;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		problem(v, name, "not a regular file");
		goto out;
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

static int check_members(struct verify *v, int dirfd, const cJSON *members)
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
		check_member(v, dirfd, cJSON_GetObjectItemCaseSensitive(m, "name")->valuestring,
			     cJSON_GetObjectItemCaseSensitive(m, "bytes")->valuedouble,
			     cJSON_GetObjectItemCaseSensitive(m, "sha256")->valuestring);
	}
	qsort(v->names, v->nnames, sizeof(*v->names), str_cmp);
	return 0;
}

int bundle_verify(const char *dir, bundle_problem_fn fn, void *ctx)
{
	return bundle_verify_listed(dir, fn, ctx, NULL);
}

int bundle_verify_listed(const char *dir, bundle_problem_fn fn, void *ctx, size_t *ret_members)
{
	struct verify v = { .fn = fn, .ctx = ctx };
	cJSON *manifest = NULL;
	const cJSON *members;
	int dirfd, r;

	if (!dir)
		return -EINVAL;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	r = read_manifest(dirfd, &manifest);
	if (r < 0)
		goto out;
	members = cJSON_GetObjectItemCaseSensitive(manifest, "members");
	if (!cJSON_IsArray(members)) {
		r = -EBADMSG;
		goto out;
	}
	r = check_members(&v, dirfd, members);
	if (r == 0)
		r = walk(&v, dirfd, "", 0);
	if (r == 0) {
		r = v.problems ? 1 : 0;
		if (ret_members)
			*ret_members = v.nnames;
	}
out:
	free(v.names);
	cJSON_Delete(manifest);
	close(dirfd);
	return r;
}
