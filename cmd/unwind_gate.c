/* The checks behind unwind_gate.h. */
#include "unwind_gate.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Verdicts of the previous call, by exact line text. */
struct verdict {
	char *line;
	bool ok;
};

struct unwind_gate {
	pid_t pid;
	struct verdict *v;
	size_t nv;
};

struct unwind_gate *unwind_gate_new(pid_t pid)
{
	struct unwind_gate *g = calloc(1, sizeof(*g));
	if (g)
		g->pid = pid;
	return g;
}

static void verdicts_free(struct verdict *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].line);
	free(v);
}

void unwind_gate_free(struct unwind_gate *g)
{
	if (!g)
		return;
	verdicts_free(g->v, g->nv);
	free(g);
}

/* A pointer encoding of .eh_frame_hdr that libunwind can read without
 * dereferencing anything (no DW_EH_PE_indirect) and without running off
 * the end (fixed-size formats only), or DW_EH_PE_omit. */
static bool encoding_ok(uint8_t e)
{
	if (e == 0xff)
		return true;
	uint8_t fmt = e & 0x0f, app = e & 0x70;
	bool fixed = fmt == 0x00 || fmt == 0x02 || fmt == 0x03 || fmt == 0x04 || fmt == 0x0a ||
		     fmt == 0x0b || fmt == 0x0c;
	return !(e & 0x80) && fixed && (app == 0x00 || app == 0x10 || app == 0x30);
}

/* libunwind 1.6 dwarf_find_unwind_table reads, from the file as mapped:
 * the program headers (e_phoff, e_phnum unchecked), the .eh_frame_hdr at
 * PT_GNU_EH_FRAME's p_offset, and PT_DYNAMIC entries up to DT_NULL. Each
 * must lie in the file. Its binary-search table must be the standard
 * datarel|sdata4 one: other encodings take paths we have not vetted. */
static bool headers_sane(int fd, uint64_t size)
{
	Elf64_Ehdr eh;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > size ||
	    eh.e_phnum > (size - eh.e_phoff) / sizeof(Elf64_Phdr))
		return false;
	size_t phlen = (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
	Elf64_Phdr *ph = malloc(phlen ? phlen : 1);
	if (!ph || pread(fd, ph, phlen, (off_t)eh.e_phoff) != (ssize_t)phlen) {
		free(ph);
		return false;
	}
	bool ok = true, eh_frame = false;
	for (size_t i = 0; ok && i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_GNU_EH_FRAME)
			continue;
		/* version, 3 encodings, eh_frame_ptr and fde_count (<= 8 each) */
		uint8_t h[4];
		eh_frame = true;
		ok = ph[i].p_offset <= size && size - ph[i].p_offset >= 20 &&
		     pread(fd, h, sizeof(h), (off_t)ph[i].p_offset) == (ssize_t)sizeof(h) &&
		     h[0] == 1 && encoding_ok(h[1]) && encoding_ok(h[2]) && h[3] == 0x3b;
	}
	for (size_t i = 0; ok && eh_frame && i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_DYNAMIC)
			continue;
		bool terminated = false;
		for (uint64_t off = ph[i].p_offset;
		     !terminated && off <= size && size - off >= 16;) {
			Elf64_Dyn d[256];
			ssize_t n = pread(fd, d, sizeof(d), (off_t)off);
			if (n < (ssize_t)sizeof(Elf64_Dyn))
				break;
			for (size_t k = 0; k < (size_t)n / sizeof(Elf64_Dyn) && !terminated; k++)
				terminated = d[k].d_tag == DT_NULL;
			off += (uint64_t)n / sizeof(Elf64_Dyn) * sizeof(Elf64_Dyn);
		}
		ok = terminated;
	}
	free(ph);
	return ok;
}

struct line_fields {
	uint64_t start, limit;
	unsigned dev_major, dev_minor;
	uint64_t inode;
	const char *path; /* the raw text libunwind takes: to the end of the line */
	size_t path_len;
	bool exec;
};

static bool parse_line(const char *line, size_t len, struct line_fields *f)
{
	char perms[5];
	unsigned long long start, limit, offset, inode;
	int used = 0;
	char buf[512];
	/* The numbers fit in the first 512 bytes of any maps line. */
	size_t n = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;
	memcpy(buf, line, n);
	buf[n] = '\0';
	if (sscanf(buf, "%llx-%llx %4s %llx %x:%x %llu%n", &start, &limit, perms, &offset,
		   &f->dev_major, &f->dev_minor, &inode, &used) != 7)
		return false;
	f->start = start;
	f->limit = limit;
	f->inode = inode;
	f->exec = perms[2] == 'x';
	const char *p = line + used;
	while (p < line + len && (*p == ' ' || *p == '\t'))
		p++;
	f->path = p;
	f->path_len = (size_t)(line + len - p);
	return true;
}

static bool same_times(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static bool check(struct unwind_gate *g, int rootfd, const struct line_fields *f)
{
	char path[4200];
	if (rootfd < 0 || f->path_len == 0 || f->path[0] != '/' || f->path_len >= sizeof(path))
		return false;
	/* Relative to the root, as libunwind's "/proc/PID/root" + path is. */
	memcpy(path, f->path + 1, f->path_len - 1);
	path[f->path_len - 1] = '\0';
	if (!path[0])
		return false;
	struct open_how how = {
		.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		/* Without any symlink, the host's resolution of
		 * /proc/PID/root/PATH (libunwind's) and ours are the same walk. */
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	if (fd < 0)
		return false;
	struct stat st;
	bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		  st.st_size >= (off_t)sizeof(Elf64_Ehdr);
	if (ok && !(st.st_ino == f->inode && major(st.st_dev) == f->dev_major &&
		    minor(st.st_dev) == f->dev_minor)) {
		char mf[96];
		struct stat mapped;
		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)g->pid,
			 f->start, f->limit);
		ok = stat(mf, &mapped) == 0 && same_times(&st, &mapped);
	}
	ok = ok && headers_sane(fd, (uint64_t)st.st_size);
	close(fd);
	return ok;
}

char *unwind_gate_filter(struct unwind_gate *g, const char *maps, size_t len, size_t *ret_len)
{
	char *out = malloc(len + 1);
	size_t cap = 16, nv = 0, o = 0;
	struct verdict *v = malloc(cap * sizeof(*v));
	char root[64];
	snprintf(root, sizeof(root), "/proc/%d/root", (int)g->pid);
	int rootfd = -1;
	bool root_tried = false;
	if (!out || !v)
		goto fail;

	for (size_t i = 0; i < len;) {
		const char *line = maps + i, *nl = memchr(line, '\n', len - i);
		size_t l = nl ? (size_t)(nl - line) : len - i;
		struct line_fields f;
		size_t keep = l;
		if (parse_line(line, l, &f) && f.exec && f.path_len && f.path[0] == '/') {
			int known = -1;
			for (size_t k = 0; k < g->nv && known < 0; k++)
				if (strlen(g->v[k].line) == l && memcmp(g->v[k].line, line, l) == 0)
					known = g->v[k].ok;
			if (known < 0) {
				if (!root_tried) {
					root_tried = true;
					rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
				}
				known = check(g, rootfd, &f);
			}
			if (nv == cap) {
				cap *= 2;
				struct verdict *nvv = realloc(v, cap * sizeof(*v));
				if (!nvv)
					goto fail;
				v = nvv;
			}
			v[nv].line = strndup(line, l);
			if (!v[nv].line)
				goto fail;
			v[nv++].ok = known;
			if (!known) {
				keep = (size_t)(f.path - line);
				while (keep && (line[keep - 1] == ' ' || line[keep - 1] == '\t'))
					keep--;
			}
		}
		memcpy(out + o, line, keep);
		o += keep;
		if (nl)
			out[o++] = '\n';
		i += l + (nl ? 1 : 0);
	}
	out[o] = '\0';
	if (rootfd >= 0)
		close(rootfd);
	verdicts_free(g->v, g->nv);
	g->v = v;
	g->nv = nv;
	*ret_len = o;
	return out;
fail:
	if (rootfd >= 0)
		close(rootfd);
	verdicts_free(v, nv);
	free(out);
	return NULL;
}
