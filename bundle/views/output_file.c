/* output_file: see output_file.h. */
#include "bundle/views/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/bundle.h"

/* Split path into its directory (opened, O_DIRECTORY) and leaf. */
static int open_parent(const char *path, const char **ret_leaf)
{
	const char *slash = strrchr(path, '/');
	const char *leaf = slash ? slash + 1 : path;
	if (!*leaf || strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0)
		return -EISDIR;
	char dir[PATH_MAX];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	/* The directory the operator typed resolves normally. */
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	/* Another user who may add and rename entries there could swap the
	 * file between our write and the viewer's open; with the sticky bit
	 * (/tmp) they cannot touch ours. */
	if (bundle_dir_shared(&st)) {
		close(fd);
		return BUNDLE_UNSAFE_DIR;
	}
	*ret_leaf = leaf;
	return fd;
}

const char *output_file_strerror(int e)
{
	if (e == BUNDLE_UNSAFE_DIR)
		return "its directory is writable by other users (and not sticky); refusing it";
	return strerror(-e);
}

int output_file_open(struct output_file *of, const char *path)
{
	*of = (struct output_file){.fp = stdout, .path = path, .dirfd = -1};
	if (!path || strcmp(path, "-") == 0)
		return 0;
	const char *leaf;
	int dirfd = open_parent(path, &leaf);
	if (dirfd < 0)
		return dirfd;
	/* An existing directory (or a link to one) under that name: renaming
	 * over it would fail at the end, after all the work. */
	struct stat st;
	if (fstatat(dirfd, leaf, &st, 0) == 0 && S_ISDIR(st.st_mode)) {
		close(dirfd);
		return -EISDIR;
	}
	char tmp[NAME_MAX + 1];
	/* 0600, as bundle members are: a page, an export or a PEM text holds
	 * what the bundle holds (stacks, thread names, a target's argv),
	 * which its owner shares on purpose, not through the file's mode.
	 * Exactly 0600 whatever the umask (fchmod below). */
	int fd = bundle_open_temp(dirfd, leaf, 0600, tmp, sizeof(tmp));
	if (fd < 0) {
		close(dirfd);
		return fd;
	}
	if (fchmod(fd, 0600) < 0) {
		int e = -errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		close(dirfd);
		return e;
	}
	of->fp = fdopen(fd, "w");
	of->tmp = strdup(tmp);
	of->leaf = strdup(leaf);
	if (!of->fp || !of->tmp || !of->leaf) {
		if (of->fp)
			fclose(of->fp);
		else
			close(fd);
		unlinkat(dirfd, tmp, 0);
		close(dirfd);
		free(of->tmp);
		free(of->leaf);
		*of = (struct output_file){.fp = stdout, .path = path, .dirfd = -1};
		return -ENOMEM;
	}
	of->dirfd = dirfd;
	return 0;
}

int output_file_close(struct output_file *of, int e)
{
	if (fflush(of->fp) != 0 && e == 0)
		e = errno ? -errno : -EIO;
	if (!of->tmp)
		return e;
	if (fclose(of->fp) != 0 && e == 0)
		e = errno ? -errno : -EIO;
	/* rename replaces whatever has the name, a planted symlink included,
	 * and never writes through it. */
	if (e == 0 && renameat(of->dirfd, of->tmp, of->dirfd, of->leaf) < 0)
		e = -errno;
	if (e < 0)
		unlinkat(of->dirfd, of->tmp, 0);
	close(of->dirfd);
	free(of->tmp);
	free(of->leaf);
	of->tmp = of->leaf = NULL;
	of->fp = NULL;
	of->dirfd = -1;
	return e;
}
