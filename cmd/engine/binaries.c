#include "cmd/engine/binaries.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int open_regular(int dirfd, const char *path, bool in_root, uint64_t *ret_size)
{
	int fd;
	if (in_root) {
		/* The target's view of its files: absolute symlinks inside a
		 * container must not lead to host files. */
		struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
				       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
		fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	} else {
		fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	}
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	*ret_size = (uint64_t)st.st_size;
	return fd;
}

static int read_whole(int fd, uint64_t size, uint8_t **ret)
{
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return -ENOMEM;
	uint64_t off = 0;
	while (off < size) {
		ssize_t n = pread(fd, buf + off, size - off, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return n < 0 ? -errno : -EIO;
		}
		off += (uint64_t)n;
	}
	*ret = buf;
	return 0;
}

/* Is data an ELF file whose GNU build-id note is hex? A file found by
 * name (a debug file beside the module, the module by its path) is the
 * target's to choose: a link to /etc/shadow, or any other file, must not
 * be copied as the module's. libelf parses the copy in memory, bounded by
 * its size. */
static bool elf_has_build_id(const uint8_t *data, size_t size, const char *hex)
{
	if (elf_version(EV_CURRENT) == EV_NONE || size < EI_NIDENT ||
	    memcmp(data, ELFMAG, SELFMAG) != 0)
		return false;
	Elf *e = elf_memory((char *)data, size);
	const void *id = NULL;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
	bool match = n > 0 && n <= 64 && strlen(hex) == 2 * (size_t)n;
	for (ssize_t k = 0; match && k < n; k++) {
		char byte[3];
		snprintf(byte, sizeof(byte), "%02x", ((const unsigned char *)id)[k]);
		match = memcmp(byte, hex + 2 * k, 2) == 0;
	}
	elf_end(e);
	return match;
}

static void skipped(cJSON *arr, const struct sym_module *m, const char *reason)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "build_id", m->build_id);
	cJSON_AddStringToObject(o, "path", m->path);
	cJSON_AddStringToObject(o, "reason", reason);
	cJSON_AddItemToArray(arr, o);
}

int binaries_copy(struct bundle *b, pid_t pid, const struct symtab *st, uint64_t cap, cJSON *out)
{
	const struct sym_module *mods;
	size_t n = symtab_modules(st, &mods);
	cJSON_AddNumberToObject(out, "cap_bytes", (double)cap);
	cJSON *copied = cJSON_AddArrayToObject(out, "copied");
	cJSON *skips = cJSON_AddArrayToObject(out, "skipped");
	char root[64];
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t used = 0;
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i++) {
		const struct sym_module *m = &mods[i];
		if (!m->build_id[0] || m->path[0] != '/')
			continue; /* [vdso] and friends: nothing to copy */
		bool dup = false;
		for (size_t k = 0; k < i && !dup; k++)
			dup = strcmp(mods[k].build_id, m->build_id) == 0;
		if (dup)
			continue;

		const char *base = strrchr(m->path, '/') + 1;
		/* The ELF that ran, as <basename>: pprof matches it by build-id.
		 * Its debug file, if the host has one, as <basename>.debug next to
		 * it, where binutils (which pprof runs) looks for a
		 * .gnu_debuglink of the conventional name. */
		for (int which = 0; which < 2 && r == 0; which++) {
			char path[1200];
			uint64_t size = 0;
			int fd = -1;
			bool by_name = true; /* not the mapped file itself */
			const char *source;
			if (which == 0) {
				source = "mapped";
				snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
					 (unsigned long long)m->start, (unsigned long long)m->limit);
				fd = open_regular(AT_FDCWD, path, false, &size);
				by_name = fd < 0;
				if (fd < 0 && rootfd >= 0)
					fd = open_regular(rootfd, m->path, true, &size);
			} else {
				source = "debug";
				snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug",
					 m->build_id, m->build_id + 2);
				fd = open_regular(AT_FDCWD, path, false, &size);
				/* Found by name only: nothing here parses the ELF to
				 * read its debuglink. */
				char dir[512];
				snprintf(dir, sizeof(dir), "%.*s", (int)(base - m->path), m->path);
				for (int k = 0; fd < 0 && rootfd >= 0 && k < 2; k++) {
					snprintf(path, sizeof(path),
						 k == 0 ? "%s%s.debug" : "%s.debug/%s.debug", dir, base);
					fd = open_regular(rootfd, path, true, &size);
				}
				if (fd < 0)
					continue; /* no separate debug file: fine */
			}
			if (fd < 0) {
				skipped(skips, m, "unreadable");
				continue;
			}
			if (size > cap - used) {
				close(fd);
				skipped(skips, m, "over --with-binaries cap");
				continue;
			}
			uint8_t *data = NULL;
			int e = read_whole(fd, size, &data);
			close(fd);
			if (e < 0) {
				skipped(skips, m, e == -ENOMEM ? "out of memory" : "read failed");
				continue;
			}
			if (by_name && !elf_has_build_id(data, size, m->build_id)) {
				free(data);
				skipped(skips, m, which ? "debug file is not an ELF of the module's build-id"
							: "file at the module's path is not the module");
				continue;
			}
			char member[600];
			snprintf(member, sizeof(member), "binaries/%s/%s%s", m->build_id, base,
				 which ? ".debug" : "");
			r = bundle_write_member(b, member, data, size);
			free(data);
			if (r < 0)
				break;
			used += size;
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "build_id", m->build_id);
			cJSON_AddStringToObject(o, "member", member);
			cJSON_AddStringToObject(o, "source", source);
			cJSON_AddNumberToObject(o, "bytes", (double)size);
			cJSON_AddItemToArray(copied, o);
		}
	}
	if (rootfd >= 0)
		close(rootfd);
	return r;
}
