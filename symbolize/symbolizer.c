/*
 * The symbolizer: maps snapshot -> libdwfl modules -> cached PC lookups.
 *
 * We report modules to libdwfl ourselves, one per mapped instance of a file
 * ("group": the consecutive maps lines of one file with rising offsets),
 * passing an fd we opened safely (fileopen.c) and a bias we computed from the
 * mapping (elfinfo.c). dwfl_linux_proc_maps_report would open paths itself,
 * outside the target's root, and cannot take the vdso from a snapshot.
 *
 * Everything a caller gets back lives in the arena or in libdw's own data,
 * both released only by symbolizer_free.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "symbolize/internal.h"
#include "symbolize/target_access.h"

struct sym_group {
	size_t first, last; /* maps indices of its first and last line */
	size_t exec;        /* an executable line of it, or SIZE_MAX */
	bool vdso;
	Dwfl_Module *mod;   /* NULL when it could not be opened or parsed */
	/* The group whose module names this one's PCs: itself, or the first
	 * instance of the same file (report_group says why); and the bias of
	 * each, so a PC here is pc - bias + groups[owner].bias there. */
	size_t owner;
	uint64_t bias;
	struct sym_debug_ctx debug; /* mod's userdata, for sym_find_debuginfo */
	struct cu_index cus;
	const char *build_id;
	bool reported; /* handed to libdwfl (whether or not it took it) */
};

struct symbolizer {
	pid_t pid;      /* the process (its perf map is named after it) */
	pid_t proc_pid; /* whose /proc entry reaches its memory and files */
	struct maps maps;
	int rootfd;          /* /proc/PID/root, O_PATH, or -1 */
	bool foreign_root;   /* the target's / is not ours */
	Dwfl *dwfl;
	Dwfl_Callbacks callbacks;
	char *debuginfo_path; /* NULL: libdwfl's default ":.debug:/usr/lib/debug" */
	struct arena arena;

	struct sym_group *groups;
	size_t ngroups;
	int *entry_group;  /* per maps line: group index or -1 */
	int *entry_module; /* per maps line: module index or -1 */
	struct sym_module *modules;
	size_t nmodules;
	const char *main_build_id;

	bool names_only;     /* symbolize_options.names_only */
	bool lazy;           /* symbolize_options.lazy_modules */
	struct pc_cache cache;
	struct perfmap *perfmap;
	bool perfmap_tried;
};

static bool is_vdso(const struct maps_entry *e)
{
	return strcmp(e->path, "[vdso]") == 0;
}

static bool is_file_backed(const struct maps_entry *e)
{
	return e->path[0] == '/';
}

static bool is_exec(const struct maps_entry *e)
{
	return e->perms[2] == 'x';
}

static bool same_file(const struct maps_entry *a, const struct maps_entry *b)
{
	return a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && a->deleted == b->deleted &&
	       strcmp(a->path, b->path) == 0;
}

/* Nobody is told where the ELF is: every module comes with its fd. */
static int no_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	return -1;
}

static int build_groups(struct symbolizer *s)
{
	const struct maps *m = &s->maps;
	struct sym_group *cur = NULL;

	s->groups = calloc(m->count ? m->count : 1, sizeof(*s->groups));
	s->entry_group = malloc((m->count ? m->count : 1) * sizeof(int));
	s->entry_module = malloc((m->count ? m->count : 1) * sizeof(int));
	s->modules = calloc(m->count ? m->count : 1, sizeof(*s->modules));
	if (!s->groups || !s->entry_group || !s->entry_module || !s->modules)
		return -ENOMEM;

	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];
		bool vdso = is_vdso(e);

		s->entry_group[i] = -1;
		s->entry_module[i] = -1;
		if (!vdso && !is_file_backed(e))
			continue;
		/* A file mapped again (dlmopen, or by hand) restarts at a
		 * lower offset: that is a new instance with its own bias. */
		if (vdso || !cur || cur->vdso || !same_file(&m->entries[cur->last], e) ||
		    e->offset <= m->entries[cur->last].offset) {
			cur = &s->groups[s->ngroups++];
			*cur = (struct sym_group){ .first = i, .last = i, .exec = SIZE_MAX,
						   .vdso = vdso, .build_id = "",
						   .owner = s->ngroups - 1 };
		}
		cur->last = i;
		s->entry_group[i] = (int)(cur - s->groups);
		if (is_exec(e)) {
			struct sym_module *mod = &s->modules[s->nmodules];

			if (cur->exec == SIZE_MAX)
				cur->exec = i;
			mod->start = e->start;
			mod->limit = e->limit;
			mod->offset = e->offset;
			mod->path = e->path;
			mod->build_id = "";
			s->entry_module[i] = (int)s->nmodules++;
		}
	}
	return 0;
}

/* The bias of the file behind fd, and whether it is whole enough to hand
 * to libdwfl at all (sym_elf_within). */
static int fd_bias(int fd, const struct maps_entry *e, uint64_t *ret_bias)
{
	struct stat st;
	Elf *elf;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	r = sym_elf_within(elf, (uint64_t)st.st_size);
	if (r == 0)
		r = sym_elf_bias(elf, e, ret_bias);
	elf_end(elf);
	return r;
}

/* The vdso goes to libdwfl as a memfd: dwfl_report_elf wants an fd, and
 * this way libdwfl owns its copy like any file. */
static int vdso_fd(struct symbolizer *s, const struct maps_entry *e, uint64_t *ret_bias)
{
	void *buf;
	size_t len;
	Elf *elf;
	int fd, r;

	r = sym_read_vdso(s->proc_pid, e, &buf, &len);
	if (r < 0)
		return r;
	elf = elf_memory(buf, len);
	r = elf ? sym_elf_within(elf, len) : -ENOEXEC;
	if (r == 0)
		r = sym_elf_bias(elf, e, ret_bias);
	elf_end(elf);
	if (r < 0)
		goto out;
	fd = memfd_create("diag-vdso", MFD_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	if (write(fd, buf, len) != (ssize_t)len) {
		r = -EIO;
		close(fd);
		goto out;
	}
	r = fd;
out:
	free(buf);
	return r;
}

/* An earlier group of the same file that has a module, or NULL. */
static struct sym_group *first_instance(struct symbolizer *s, const struct sym_group *g)
{
	const struct maps_entry *e = &s->maps.entries[g->exec];
	for (struct sym_group *o = s->groups; o < g; o++)
		if (o->mod && o->owner == (size_t)(o - s->groups) && !o->vdso &&
		    same_file(&s->maps.entries[o->exec], e))
			return o;
	return NULL;
}

/* A file mapped a second time is named through its first instance's
 * module, never reported again: libdwfl places an ET_EXEC at its link
 * addresses whatever base it is given, so a second report of it (node
 * remaps part of its own text, executable, at a high address) has the
 * first one's name and range, fails with DWFL_E_OVERLAP and marks the
 * first module for collection at dwfl_report_end, which frees it under
 * our pointer. A PC of the second instance is moved to the first by the
 * two biases (same file offset, same symbol). */
static int alias_group(struct symbolizer *s, struct sym_group *g, struct sym_group *first)
{
	Dwarf_Addr ignored;
	Elf *elf = dwfl_module_getelf(first->mod, &ignored);
	if (!elf || sym_elf_bias(elf, &s->maps.entries[g->exec], &g->bias) < 0)
		return -ENOEXEC;
	g->owner = (size_t)(first - s->groups);
	return 0;
}

static int report_group(struct symbolizer *s, struct sym_group *g)
{
	const struct maps_entry *e = &s->maps.entries[g->exec];
	char root_path[PATH_MAX + 64];
	const char *file_name = e->path;
	uint64_t bias;
	int fd, r;

	g->owner = (size_t)(g - s->groups);
	if (!g->vdso) {
		struct sym_group *first = first_instance(s, g);
		if (first)
			return alias_group(s, g, first);
	}
	if (g->vdso) {
		fd = vdso_fd(s, e, &bias);
		if (fd < 0)
			return fd;
	} else {
		fd = sym_open_mapped(s->rootfd, s->proc_pid, e);
		if (fd < 0)
			return fd;
		r = fd_bias(fd, e, &bias);
		if (r < 0) {
			close(fd);
			return r;
		}
		/* libdwfl looks for .gnu_debuglink files next to file_name:
		 * for a target in another root, that is inside its root. */
		if (s->foreign_root) {
			snprintf(root_path, sizeof(root_path), "/proc/%d/root%s", (int)s->proc_pid, e->path);
			file_name = root_path;
		}
	}
	g->mod = dwfl_report_elf(s->dwfl, e->path, file_name, fd, bias, true);
	if (!g->mod) {
		close(fd); /* consumed only on success */
		return -ENOEXEC;
	}
	/* The bias libdwfl applies (for an ET_EXEC, 0 whatever we said). */
	Dwarf_Addr applied = bias;
	if (dwfl_module_getelf(g->mod, &applied))
		bias = applied;
	g->bias = bias;
	void **userdata;
	g->debug = (struct sym_debug_ctx){.path = e->path, .rootfd = s->rootfd,
					  .foreign_root = s->foreign_root};
	if (dwfl_module_info(g->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
		*userdata = &g->debug;
	return 0;
}

/* dwfl_getmodules callback: mark the groups whose module survived. */
struct live_modules {
	struct symbolizer *s;
	bool *live;
};

static int note_live(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
		     void *arg)
{
	struct live_modules *lm = arg;
	for (size_t i = 0; i < lm->s->ngroups; i++)
		if (lm->s->groups[i].mod == mod)
			lm->live[i] = true;
	return DWARF_CB_OK;
}

/* Whatever libdwfl collected at dwfl_report_end (a module a later report
 * marked, as above, or any other way) is no module of ours any more:
 * forget it, and the groups named through it, rather than follow a
 * freed pointer. */
static int drop_collected(struct symbolizer *s)
{
	bool *live = calloc(s->ngroups ? s->ngroups : 1, sizeof(*live));
	if (!live)
		return -ENOMEM;
	struct live_modules lm = {.s = s, .live = live};
	(void)dwfl_getmodules(s->dwfl, note_live, &lm, 0);
	for (size_t i = 0; i < s->ngroups; i++)
		if (s->groups[i].mod && !live[i])
			s->groups[i].mod = NULL;
	free(live);
	return 0;
}

static const char *module_build_id(struct symbolizer *s, Dwfl_Module *mod)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &bits, &vaddr);
	char *hex;

	if (len <= 0 || len > 1024)
		return "";
	hex = arena_alloc(&s->arena, 2 * (size_t)len + 1);
	if (!hex)
		return NULL;
	sym_hex(bits, (size_t)len, hex);
	return hex;
}

/* The build-ids of every group reported so far, on the groups and on the
 * modules list. */
static int note_build_ids(struct symbolizer *s)
{
	for (size_t i = 0; i < s->ngroups; i++) {
		struct sym_group *g = &s->groups[i];

		if (!g->mod)
			continue;
		g->build_id = module_build_id(s, g->mod);
		if (!g->build_id)
			return -ENOMEM;
	}
	/* Second instances: their first instance's module and build-id. */
	for (size_t i = 0; i < s->ngroups; i++) {
		struct sym_group *g = &s->groups[i];

		if (g->exec != SIZE_MAX && g->owner != i && s->groups[g->owner].mod)
			g->build_id = s->groups[g->owner].build_id;
	}
	for (size_t i = 0; i < s->maps.count; i++)
		if (s->entry_module[i] >= 0)
			s->modules[s->entry_module[i]].build_id =
				s->groups[s->entry_group[i]].build_id;
	return 0;
}

static int report_all(struct symbolizer *s)
{
	dwfl_report_begin(s->dwfl);
	for (size_t i = 0; i < s->ngroups; i++) {
		/* Groups without executable lines never contain a PC we are
		 * asked about; a failure to open one only leaves it unknown. */
		s->groups[i].reported = true;
		if (s->groups[i].exec != SIZE_MAX)
			(void)report_group(s, &s->groups[i]);
	}
	if (dwfl_report_end(s->dwfl, NULL, NULL) != 0)
		return -EIO;
	if (drop_collected(s) < 0)
		return -ENOMEM;
	return note_build_ids(s);
}

/* lazy_modules: report group gi now, after any earlier instance of its
 * file (through which report_group then names it, as report_all would).
 * Modules reported before are kept (dwfl_report_begin_add). */
static int report_lazily(struct symbolizer *s, size_t gi)
{
	struct sym_group *g = &s->groups[gi];
	if (g->reported || g->exec == SIZE_MAX)
		return 0;
	for (size_t o = 0; o < gi && !g->vdso; o++) {
		const struct sym_group *og = &s->groups[o];
		if (!og->reported && !og->vdso && og->exec != SIZE_MAX &&
		    same_file(&s->maps.entries[og->exec], &s->maps.entries[g->exec])) {
			int r = report_lazily(s, o);
			if (r < 0)
				return r;
		}
	}
	g->reported = true;
	dwfl_report_begin_add(s->dwfl);
	(void)report_group(s, g);
	if (dwfl_report_end(s->dwfl, NULL, NULL) != 0)
		return -EIO;
	if (drop_collected(s) < 0)
		return -ENOMEM;
	return note_build_ids(s);
}

/*
 * The main executable is whatever /proc/PID/exe is: match its dev/inode
 * (immune to renames), else its path. Without access to either, the first
 * file mapping is the executable for anything ld.so or the kernel loaded.
 */
static size_t find_main(struct symbolizer *s)
{
	char link[80], target[PATH_MAX];
	struct stat st;
	bool have_stat, have_link;
	ssize_t n;

	/* Through target_access.h: a sandboxed worker stats the descriptor
	 * its broker opened, and has no link to read. */
	int exe = target_open_file(s->proc_pid, TARGET_FILE_EXE);
	have_stat = exe >= 0 && fstat(exe, &st) == 0;
	if (exe >= 0)
		close(exe);
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)s->proc_pid);
	n = target_access_broker() ? -1 : readlink(link, target, sizeof(target) - 1);
	have_link = n > 0;
	if (have_link) {
		static const char del[] = " (deleted)";

		target[n] = '\0';
		if ((size_t)n > sizeof(del) - 1 && strcmp(target + n - (sizeof(del) - 1), del) == 0)
			target[n - (sizeof(del) - 1)] = '\0';
	}
	for (size_t i = 0; i < s->ngroups; i++) {
		const struct maps_entry *e = &s->maps.entries[s->groups[i].first];

		if (s->groups[i].vdso)
			continue;
		if (have_stat && e->inode == st.st_ino && e->dev_major == major(st.st_dev) &&
		    e->dev_minor == minor(st.st_dev))
			return i;
	}
	for (size_t i = 0; i < s->ngroups; i++) {
		const struct maps_entry *e = &s->maps.entries[s->groups[i].first];

		if (s->groups[i].vdso)
			continue;
		if ((have_link && strcmp(e->path, target) == 0) || (!have_stat && !have_link))
			return i;
	}
	return SIZE_MAX;
}

static void open_root(struct symbolizer *s)
{
	char path[64];
	struct stat ours, theirs;

	/* A sandboxed worker has no root to open: its broker opens in it. */
	if (target_access_broker()) {
		s->foreign_root = target_foreign_root(s->proc_pid);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/root", (int)s->proc_pid);
	s->rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->rootfd >= 0 && fstat(s->rootfd, &theirs) == 0 && stat("/", &ours) == 0)
		s->foreign_root = theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino;
}

int symbolizer_new(pid_t pid, const char *maps_text, size_t maps_len,
		   const struct symbolize_options *opts, struct symbolizer **ret)
{
	struct symbolizer *s;
	int r;

	if (pid <= 0 || !ret || (!maps_text && maps_len))
		return -EINVAL;
	/* libdwfl falls back to debuginfod whenever DEBUGINFOD_URLS is set,
	 * and a slow server stalls every miss. The variable is read per query,
	 * so clearing it here is enough; it is process-wide by nature. */
	if (!opts || !opts->allow_debuginfod)
		unsetenv("DEBUGINFOD_URLS");

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->pid = pid;
	s->proc_pid = opts && opts->proc_pid > 0 ? opts->proc_pid : pid;
	s->rootfd = -1;
	s->names_only = opts && opts->names_only;
	s->lazy = opts && opts->lazy_modules;
	r = maps_parse(maps_text ? maps_text : "", maps_len, &s->maps);
	if (r < 0) {
		free(s);
		return r;
	}
	r = build_groups(s);
	if (r < 0)
		goto fail;

	open_root(s);
	s->callbacks.find_elf = no_find_elf;
	/* Not dwfl_standard_find_debuginfo: it opens the target's paths
	 * blindly (debuginfo.c). */
	s->callbacks.find_debuginfo = sym_find_debuginfo;
	s->callbacks.section_address = dwfl_offline_section_address;
	s->callbacks.debuginfo_path = &s->debuginfo_path;
	s->dwfl = dwfl_begin(&s->callbacks);
	if (!s->dwfl) {
		r = -ENOMEM;
		goto fail;
	}
	r = s->lazy ? 0 : report_all(s);
	if (r < 0)
		goto fail;
	size_t main_group = find_main(s);
	if (main_group != SIZE_MAX && s->lazy)
		r = report_lazily(s, main_group);
	if (r < 0)
		goto fail;
	s->main_build_id = main_group != SIZE_MAX ? s->groups[main_group].build_id : "";
	*ret = s;
	return 0;
fail:
	symbolizer_free(s);
	return r;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	if (s->dwfl)
		dwfl_end(s->dwfl);
	if (s->rootfd >= 0)
		close(s->rootfd);
	perfmap_free(s->perfmap);
	pc_cache_release(&s->cache);
	arena_release(&s->arena);
	for (size_t i = 0; i < s->ngroups; i++)
		cu_index_release(&s->groups[i].cus);
	free(s->groups);
	free(s->entry_group);
	free(s->entry_module);
	free(s->modules);
	maps_release(&s->maps);
	free(s);
}

/* JIT code: anonymous (or non-ELF) executable memory named by perf-PID.map. */
static int resolve_jit(struct symbolizer *s, uint64_t pc, struct sym_frame *f)
{
	uint64_t start;
	const char *name;

	if (!s->perfmap_tried) {
		s->perfmap_tried = true;
		if (perfmap_load(s->pid, &s->perfmap) == -ENOMEM)
			return -ENOMEM;
	}
	if (!s->perfmap)
		return 0;
	name = perfmap_find(s->perfmap, pc, &start);
	if (!name)
		return 0;
	memset(f, 0, sizeof(*f));
	f->function = name;
	f->function_offset = pc - start;
	return 1;
}

/* The group with code whose data a non-code mapping holds: the mappings
 * of one file laid end to end before it (the RELRO remap repeats an
 * offset, which starts a group of its own), and a .bss larger than the
 * file's last page continues in the anonymous mapping right after it.
 * -1 when there is none. */
static int data_group(const struct symbolizer *s, size_t idx)
{
	const struct maps_entry *m = s->maps.entries;
	for (size_t j = idx;; j--) {
		int g = s->entry_group[j];
		if (g >= 0 && s->groups[g].exec != SIZE_MAX && !s->groups[g].vdso)
			return g;
		if (j == 0 || m[j - 1].limit != m[j].start)
			return -1;
		bool anonymous_bss = j == idx && !is_file_backed(&m[j]) && !is_vdso(&m[j]) &&
				     m[j].path[0] == '\0';
		if (!anonymous_bss && !(is_file_backed(&m[j]) && same_file(&m[j - 1], &m[j])))
			return -1;
	}
}

int symbolizer_lookup(struct symbolizer *s, uint64_t pc, const struct sym_location **ret)
{
	struct sym_frame tmp[SYM_MAX_FRAMES];
	const struct sym_location *hit = pc_cache_get(&s->cache, pc);
	const struct maps_entry *e;
	struct sym_location *loc;
	struct sym_module *mod = NULL;
	int n = 0;

	if (hit) {
		*ret = hit;
		return 0;
	}
	loc = arena_alloc(&s->arena, sizeof(*loc));
	if (!loc)
		return -ENOMEM;
	memset(loc, 0, sizeof(*loc));
	loc->pc = pc;

	e = maps_find(&s->maps, pc);
	if (e) {
		size_t idx = (size_t)(e - s->maps.entries);
		int g = s->entry_group[idx];
		if (g >= 0 && s->lazy && is_exec(e)) {
			int r = report_lazily(s, (size_t)g);
			if (r < 0)
				return r;
		}

		if (s->entry_module[idx] >= 0)
			mod = &s->modules[s->entry_module[idx]];
		loc->module_offset = pc - e->start + e->offset;
		if (!is_exec(e))
			g = data_group(s, idx);
		if (g >= 0 && s->lazy && !is_exec(e)) {
			int r = report_lazily(s, (size_t)g);
			if (r < 0)
				return r;
		}
		/* Code has frames; a data address (a lock a thread sleeps on)
		 * only the object symbol that covers it, never the nearest
		 * function. */
		struct sym_group *named = g >= 0 ? &s->groups[s->groups[g].owner] : NULL;
		if (is_exec(e) && named && named->mod)
			n = sym_resolve_dwfl(named->mod, &named->cus, s->names_only,
					     pc - s->groups[g].bias + named->bias, &s->arena, tmp);
		else if (is_exec(e))
			n = resolve_jit(s, pc, tmp);
		else if (named && named->mod)
			n = sym_resolve_data(named->mod, pc - s->groups[g].bias + named->bias, &s->arena, tmp);
		if (n < 0)
			return n;
	}
	loc->module = mod;
	if (n > 0) {
		struct sym_frame *frames = arena_alloc(&s->arena, (size_t)n * sizeof(*frames));

		if (!frames)
			return -ENOMEM;
		memcpy(frames, tmp, (size_t)n * sizeof(*frames));
		loc->frames = frames;
		loc->nframes = (size_t)n;
	}
	if (pc_cache_put(&s->cache, pc, loc) < 0)
		return -ENOMEM;
	if (mod) {
		for (int i = 0; i < n; i++) {
			mod->has_functions |= tmp[i].function != NULL;
			mod->has_filenames |= tmp[i].file != NULL;
			mod->has_line_numbers |= tmp[i].line > 0;
		}
	}
	*ret = loc;
	return 0;
}

size_t symbolizer_modules(struct symbolizer *s, const struct sym_module **ret)
{
	*ret = s->modules;
	return s->nmodules;
}

size_t symbolizer_loaded_modules(const struct symbolizer *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->ngroups; i++)
		n += s->groups[i].mod != NULL;
	return n;
}

const char *symbolizer_main_build_id(struct symbolizer *s)
{
	return s->main_build_id;
}

void symbolizer_cache_stats(const struct symbolizer *s, uint64_t *ret_hits, uint64_t *ret_misses)
{
	if (ret_hits)
		*ret_hits = s->cache.hits;
	if (ret_misses)
		*ret_misses = s->cache.misses;
}
