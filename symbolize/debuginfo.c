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
#include "symbolize/target_access.h"

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

/* Does the ELF open as fd carry this build-id? */
static bool has_build_id(int fd, const unsigned char *want, size_t want_len)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *got = NULL;
	ssize_t got_len = elf ? dwelf_elf_gnu_build_id(elf, &got) : -1;
	bool same = got_len > 0 && (size_t)got_len == want_len && memcmp(got, want, want_len) == 0;

	elf_end(elf);
	return same;
}

/* Is fd the debug file of mod? */
static bool is_debug_file_of(Dwfl_Module *mod, int fd, uint32_t crc)
{
	const unsigned char *want;
	GElf_Addr vaddr;
	int want_len = dwfl_module_build_id(mod, &want, &vaddr);

	if (want_len > 0)
		return has_build_id(fd, want, (size_t)want_len);
	return crc_matches(fd, crc);
}

/* The host's debug store, where debug files are found by build-id. */
static const char debug_store[] = "/usr/lib/debug";

/* fd (a candidate opened as name, or -errno) if it carries the build-id,
 * its name in *ret_name; else -1, closed. */
static int keep_if_build_id(int fd, const unsigned char *id, size_t len, const char *name,
			    char **ret_name)
{
	if (fd < 0)
		return -1;
	if (!has_build_id(fd, id, len)) {
		close(fd);
		return -1;
	}
	*ret_name = strdup(name);
	return fd;
}

/* By build-id in the host's debug store, through target_access.h (a
 * sandboxed worker opens no path itself): what libdwfl's
 * dwfl_build_id_find_debuginfo does, without debuginfod. */
static int open_by_build_id(const unsigned char *id, size_t len, char **ret_name)
{
	char path[sizeof(debug_store) + 32 + 2 * 64];
	size_t n;

	if (len < 2 || len > 64)
		return -1;
	n = (size_t)snprintf(path, sizeof(path), "%s/.build-id/%02x/", debug_store, id[0]);
	for (size_t i = 1; i < len; i++)
		n += (size_t)snprintf(path + n, sizeof(path) - n, "%02x", id[i]);
	snprintf(path + n, sizeof(path) - n, ".debug");
	int fd = target_open_debug(-1, false, path);
	const struct target_broker *b = target_access_broker();
	if (fd < 0 && b && b->fetch_debuginfo) {
		fd = b->fetch_debuginfo(b->arg, id, len);
		snprintf(path, sizeof(path), "debuginfod");
	}
	return keep_if_build_id(fd, id, len, path, ret_name);
}

/* Set while a dwz alt file is looked for: dwfl_module_getdwarf, called for
 * the alt link's build-id, must never load the module's DWARF again (a
 * worker is one thread). */
static bool in_alt_lookup;

/* The dwz alternate debug file of mod (libdw asks for it with crc 0 and
 * the .gnu_debugaltlink name, once the module's DWARF is loaded): by the
 * build-id the link names, else the name itself on the host. */
static int find_alt(Dwfl_Module *mod, const char *altlink, char **ret_name)
{
	Dwarf_Addr bias;
	Dwarf *dw;
	const char *altname;
	const void *id;
	ssize_t idlen;
	int fd;

	if (in_alt_lookup)
		return -1;
	in_alt_lookup = true;
	dw = dwfl_module_getdwarf(mod, &bias);
	in_alt_lookup = false;
	idlen = dw ? dwelf_dwarf_gnu_debugaltlink(dw, &altname, &id) : -1;
	if (idlen <= 0)
		return -1;
	fd = open_by_build_id(id, (size_t)idlen, ret_name);
	if (fd >= 0 || altlink[0] != '/')
		return fd;
	return keep_if_build_id(target_open_debug(-1, false, altlink), id, (size_t)idlen, altlink,
				ret_name);
}

/* By build-id: libdwfl's own lookup (which may ask debuginfod) when this
 * process may open paths, else ours through the broker. */
static int find_by_build_id(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			    const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			    char **debuginfo_file_name)
{
	if (!target_access_broker())
		return dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name,
						    debuglink_file, debuglink_crc,
						    debuginfo_file_name);
	if (debuglink_crc == 0 && debuglink_file && strchr(debuglink_file, '/'))
		return find_alt(mod, debuglink_file, debuginfo_file_name);
	const unsigned char *id;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &id, &vaddr);
	return len > 0 ? open_by_build_id(id, (size_t)len, debuginfo_file_name) : -1;
}

int sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
		       char **debuginfo_file_name)
{
	const struct sym_debug_ctx *ctx = *userdata;
	int fd = find_by_build_id(mod, userdata, modname, base, file_name, debuglink_file,
				  debuglink_crc, debuginfo_file_name);

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

		if (in_root && ctx->rootfd < 0 && !target_access_broker())
			continue;
		fd = target_open_debug(ctx->rootfd, in_root, cand[i]);
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
