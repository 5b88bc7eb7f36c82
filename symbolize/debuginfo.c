/*
 * Finding a module's separate debug file without trusting the target.
 *
 * libdwfl's dwfl_standard_find_debuginfo opens paths built from the module's
 * file name: the file itself (it tries the main file's own name as a
 * candidate), its .gnu_debuglink name next to it, in .debug/ and under
 * /usr/lib/debug. Those names are the target's: a FIFO planted at the
 * mapped path blocks it forever (open without O_NONBLOCK), and for a
 * container, "/proc/PID/root/DIR/LINK" follows an absolute symlink the
 * container put at DIR/LINK to a host file, which it then reads whole for
 * the CRC check. A debuglink name may also hold "../". So we look ourselves:
 *
 *  1. by build-id, in the host's debug store (and debuginfod when allowed):
 *     libdwfl's own dwfl_build_id_find_debuginfo, which checks the id;
 *  2. by .gnu_debuglink (a plain file name, nothing else), next to the
 *     module and in its .debug/ directory inside the target's root, opened
 *     like the module itself (fileopen.c: confined to that root, no
 *     symlink at the end, regular files only, never blocking), and under
 *     the host's /usr/lib/debug for a target that shares our root;
 *
 * and accept a candidate only if it is the module's: the same build-id
 * when the module has one, else the CRC that the debuglink names.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include "symbolize/internal.h"

/* CRC-32 as .gnu_debuglink uses it (zlib's: reflected, 0xedb88320). */
static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

static bool crc_matches(int fd, uint32_t want)
{
	unsigned char buf[65536];
	uint32_t crc = 0;
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		crc = crc32_update(crc, buf, (size_t)n);
		off += n;
	}
	return n == 0 && crc == want;
}

/* Is fd the debug file of mod? */
static bool is_debug_file_of(Dwfl_Module *mod, int fd, uint32_t crc)
{
	const unsigned char *want;
	GElf_Addr vaddr;
	int want_len = dwfl_module_build_id(mod, &want, &vaddr);

	if (want_len > 0) {
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		const void *got = NULL;
		ssize_t got_len = elf ? dwelf_elf_gnu_build_id(elf, &got) : -1;
		bool same = got_len == want_len && memcmp(got, want, (size_t)want_len) == 0;

		elf_end(elf);
		return same;
	}
	return crc_matches(fd, crc);
}

static int open_regular_at(int dirfd, const char *path, bool in_root)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC,
		.resolve =
			in_root ? RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS : RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > SYM_MAX_FILE_SIZE) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
		       char **debuginfo_file_name)
{
	const struct sym_debug_ctx *ctx = *userdata;
	int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
					      debuglink_file, debuglink_crc, debuginfo_file_name);

	if (fd >= 0 || !ctx || !debuglink_file || !debuglink_file[0] ||
	    strchr(debuglink_file, '/') || strcmp(debuglink_file, ".") == 0 ||
	    strcmp(debuglink_file, "..") == 0)
		return fd >= 0 ? fd : -1;

	const char *slash = strrchr(ctx->path, '/');
	int dirlen = slash ? (int)(slash - ctx->path) : 0;
	char cand[3][PATH_MAX + 64];
	int n = 0;

	snprintf(cand[n++], sizeof(cand[0]), "%.*s/%s", dirlen, ctx->path, debuglink_file);
	snprintf(cand[n++], sizeof(cand[0]), "%.*s/.debug/%s", dirlen, ctx->path, debuglink_file);
	/* Debian's older -dbg packages: /usr/lib/debug + the file's directory.
	 * Only the host's own files belong in the host's debug tree. */
	if (!ctx->foreign_root)
		snprintf(cand[n++], sizeof(cand[0]), "/usr/lib/debug%.*s/%s", dirlen, ctx->path,
			 debuglink_file);
	for (int i = 0; i < n; i++) {
		bool in_root = i < 2;

		if (in_root && ctx->rootfd < 0)
			continue;
		fd = open_regular_at(in_root ? ctx->rootfd : AT_FDCWD, cand[i], in_root);
		if (fd < 0)
			continue;
		if (is_debug_file_of(mod, fd, debuglink_crc)) {
			*debuginfo_file_name = strdup(cand[i]);
			return fd;
		}
		close(fd);
	}
	return -1;
}
