/* SPDX-License-Identifier: MIT */
/*
 * After the pause: unwind each copied stack with the runtime's pcsp tables
 * and print what the runtime itself would print. The functions mirror
 * runtime/traceback.go (gentraceback, traceback1, showfuncinfo, printArgs,
 * printcreatedby, goroutineheader) and runtime/pprof (printCountProfile,
 * printStackRecord) of Go 1.19; where later releases differ the branch is
 * marked with the version.
 */
#include "internal.h"
#include "symbolize/arrays.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PFRAMES = 16384 };

static bool stk_u64(const struct go_snapshot *s, const struct go_g *g, uint64_t addr, uint64_t *v)
{
	if (!g->copy_ok || addr < g->start_sp || addr - g->start_sp > g->copy_len || g->copy_len - (addr - g->start_sp) < 8)
		return false;
	memcpy(v, s->arena + g->copy_off + (addr - g->start_sp), 8);
	return true;
}

static bool is_injected(const struct go_target *t, uint8_t id)
{
	if (id == t->fid_sigpanic)
		return true;
	/* 1.21+: asyncPreempt and debugCallV2 frames are traps too */
	return t->minor >= 21 && (id == t->fid_asyncpreempt || id == t->fid_debugcall);
}

/* gentraceback's frame walk (amd64: no LR, fp = sp + spdelta + 8). */
static int unwind_g(const struct go_snapshot *s, struct go_g *g)
{
	const struct go_target *t = s->t;
	if (!g->have_start || !g->copy_ok)
		return 0;
	uint64_t pc = g->start_pc, sp = g->start_sp;
	bool trap = g->start_trap;
	if (pc == 0) { /* nil func call: start in the caller */
		if (!stk_u64(s, g, sp, &pc))
			return 0;
		sp += 8;
		trap = false;
	}
	size_t cap = 64;
	g->frames = malloc(cap * sizeof(*g->frames));
	if (!g->frames)
		return -ENOMEM;
	for (size_t n = 0; n < MAX_PFRAMES; n++) {
		struct go_func f;
		if (!go_findfunc(t, pc - t->bias, &f) || f.pcsp == 0)
			break; /* no frame information: the runtime stops too */
		uint8_t flag = f.flag;
		if (n == 0 && pc == g->syscall_pc && sp == g->syscall_sp)
			flag &= (uint8_t)~FUNCFLAG_SPWRITE; /* SP written only after entersyscall */
		int32_t delta = go_pcvalue(t, &f, f.pcsp, pc - t->bias);
		uint64_t fp = sp + (uint64_t)(int64_t)delta + 8;
		uint64_t lr = 0;
		if (!(flag & (FUNCFLAG_TOPFRAME | FUNCFLAG_SPWRITE)) && !stk_u64(s, g, fp - 8, &lr))
			lr = 0; /* beyond the copied bytes: a truncated stack */
		if (g->nframes == cap) {
			struct go_pframe *nf = realloc(g->frames, (cap *= 2) * sizeof(*nf));
			if (!nf)
				return -ENOMEM;
			g->frames = nf;
		}
		g->frames[g->nframes++] = (struct go_pframe){pc, sp, fp, trap};
		struct go_func nf;
		if (!lr || !go_findfunc(t, lr - t->bias, &nf))
			break;
		if (lr == pc && fp == sp)
			break; /* stuck */
		trap = is_injected(t, f.funcid);
		pc = lr;
		sp = fp;
	}
	return 0;
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* isSystemGoroutine(gp, false) */
static bool is_system(const struct go_snapshot *s, const struct go_g *g)
{
	const struct go_target *t = s->t;
	struct go_func f;
	if (!go_findfunc(t, g->startpc - t->bias, &f))
		return false;
	const char *name = go_funcname(t, &f);
	if (!strcmp(name, "runtime.main") || !strcmp(name, "runtime.handleAsyncEvent") ||
	    !strcmp(name, "runtime.corostart") /* 1.23+ */)
		return false;
	if (!strcmp(name, "runtime.runfinq") || !strcmp(name, "runtime.runFinalizers") ||
	    !strcmp(name, "runtime.runCleanups") /* newer names */)
		return !s->fing_running;
	return has_prefix(name, "runtime.");
}

static bool elide_wrapper_calling(const struct go_target *t, int callee)
{
	return !(callee == t->fid_gopanic || callee == t->fid_sigpanic || callee == t->fid_panicwrap);
}

static bool show_funcinfo(const struct go_target *t, const char *name, bool first, int funcid, int callee)
{
	if (funcid == t->fid_wrapper && elide_wrapper_calling(t, callee))
		return false;
	if (!strcmp(name, "runtime.gopanic") && !first)
		return true;
	if (!strchr(name, '.'))
		return false;
	if (!has_prefix(name, "runtime."))
		return true;
	/* isExportedRuntime; 1.19: only A-Z after "runtime." */
	return name[8] >= 'A' && name[8] <= 'Z';
}

/* The symbolization pc of a physical frame (the runtime's tracepc). */
static uint64_t frame_tracepc(const struct go_pframe *fr, const struct go_func *f, uint64_t bias)
{
	uint64_t pc = fr->pc - bias;
	return (!fr->trap && pc > f->entry) ? pc - 1 : pc;
}

/* Go's pcbuf for one goroutine (gentraceback with pcbuf, as saveg calls
 * it) plus the pprof Location addresses. */
static int build_pcs(const struct go_snapshot *s, struct go_g *g)
{
	const struct go_target *t = s->t;
	size_t max = t->minor >= 23 ? 128 : 32; /* profile depth: 32, 128 from 1.23 */
	g->pcs = calloc(max, sizeof(uint64_t));
	g->locs = calloc(max, sizeof(uint64_t));
	if (!g->pcs || !g->locs)
		return -ENOMEM;
	int last = 0; /* funcID_normal */
	for (size_t i = 0; i < g->nframes && g->npcs < max; i++) {
		const struct go_pframe *fr = &g->frames[i];
		struct go_func f;
		if (!go_findfunc(t, fr->pc - t->bias, &f))
			break;
		uint64_t pc = fr->pc - t->bias, tracepc = pc;
		if (fr->trap || pc == f.entry)
			pc++;
		else
			tracepc--;
		size_t before = g->npcs;
		uint64_t loc = tracepc;
		uint64_t tree = go_funcdata(t, &f, FUNCDATA_INLTREE);
		for (int d = 0; tree && d < GO_MAX_INLINE_DEPTH; d++) {
			int32_t ix = go_pcdata(t, &f, PCDATA_INLTREE, tracepc);
			struct go_inl ic;
			if (ix < 0 || !go_inltree_at(t, tree, ix, &ic))
				break;
			if (!(ic.funcid == t->fid_wrapper && elide_wrapper_calling(t, last)) && g->npcs < max)
				g->pcs[g->npcs++] = pc + t->bias;
			last = ic.funcid;
			tracepc = f.entry + (uint64_t)(int64_t)ic.parent_pc;
			pc = tracepc + 1;
		}
		if (!(f.funcid == t->fid_wrapper && elide_wrapper_calling(t, last)) && g->npcs < max)
			g->pcs[g->npcs++] = pc + t->bias;
		last = f.funcid;
		if (g->npcs > before && strcmp(go_funcname(t, &f), "runtime.goexit") != 0)
			g->locs[g->nlocs++] = loc + t->bias;
	}
	return 0;
}

/* ---- strconv.Quote ---- */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (array_reserve(&b->p, &b->cap, b->len + n + 1, 1, 256) < 0) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(tmp)) {
		sb_add(b, tmp, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb_add(b, big, (size_t)n);
	free(big);
}

/* Decodes one UTF-8 rune; *w = bytes used; -1 if invalid (w = 1). */
static int32_t utf8_rune(const unsigned char *s, size_t n, size_t *w)
{
	*w = 1;
	if (s[0] < 0x80)
		return s[0];
	int len = s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	if (!len || (size_t)len > n)
		return -1;
	int32_t r = s[0] & (0x7f >> len);
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		r = (r << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && r < 0x800) || (len == 4 && (r < 0x10000 || r > 0x10ffff)) || (r >= 0xd800 && r <= 0xdfff))
		return -1;
	*w = (size_t)len;
	return r;
}

/* Go's strconv.Quote. unicode.IsPrint is approximated for non-ASCII: C1
 * controls, U+00AD and the specials block print escaped, the rest as is. */
static void sb_quote(struct sbuf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str);
	sb_add(b, "\"", 1);
	for (size_t i = 0; i < n;) {
		size_t w;
		int32_t r = utf8_rune(s + i, n - i, &w);
		if (r < 0) {
			sb_printf(b, "\\x%02x", s[i]);
		} else if (r == '"' || r == '\\') {
			char e[2] = {'\\', (char)r};
			sb_add(b, e, 2);
		} else if ((r >= 0x20 && r < 0x7f) ||
			   (r >= 0xa0 && r != 0xad && !(r >= 0xfff9 && r <= 0xfffb) && r != 0xfeff && !(r >= 0x2028 && r <= 0x2029))) {
			sb_add(b, (const char *)s + i, w);
		} else {
			switch (r) {
			case '\a': sb_str(b, "\\a"); break;
			case '\b': sb_str(b, "\\b"); break;
			case '\f': sb_str(b, "\\f"); break;
			case '\n': sb_str(b, "\\n"); break;
			case '\r': sb_str(b, "\\r"); break;
			case '\t': sb_str(b, "\\t"); break;
			case '\v': sb_str(b, "\\v"); break;
			default:
				if (r < 0x20 || r == 0x7f)
					sb_printf(b, "\\x%02x", (unsigned)r);
				else if (r < 0x10000)
					sb_printf(b, "\\u%04x", (unsigned)r);
				else
					sb_printf(b, "\\U%08x", (unsigned)r);
			}
		}
		i += w;
	}
	sb_add(b, "\"", 1);
}

struct qpair {
	char *text;
	struct go_label l;
};

static int cmp_qpair(const void *a, const void *b)
{
	return strcmp(((const struct qpair *)a)->text, ((const struct qpair *)b)->text);
}

/* labelMap.String(): sorted "%q:%q" pairs joined by ", " in braces. */
static int format_labelset(struct go_labelset *ls)
{
	struct qpair *q = calloc(ls->n + 1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	int r = 0;
	for (size_t i = 0; i < ls->n; i++) {
		struct sbuf b = {0};
		sb_quote(&b, ls->labels[i].key);
		sb_add(&b, ":", 1);
		sb_quote(&b, ls->labels[i].value);
		q[i] = (struct qpair){b.p, ls->labels[i]};
		if (b.oom || !b.p)
			r = -ENOMEM;
	}
	if (r == 0) {
		qsort(q, ls->n, sizeof(*q), cmp_qpair);
		struct sbuf b = {0};
		sb_add(&b, "{", 1);
		for (size_t i = 0; i < ls->n; i++) {
			if (i)
				sb_add(&b, ", ", 2);
			sb_str(&b, q[i].text);
			ls->labels[i] = q[i].l;
		}
		sb_add(&b, "}", 1);
		ls->text = b.p;
		if (b.oom)
			r = -ENOMEM;
	}
	for (size_t i = 0; i < ls->n; i++)
		free(q[i].text);
	free(q);
	return r;
}

int go_snapshot_unwind(struct go_snapshot *s)
{
	if (s->unwound)
		return 0;
	s->stats.user_goroutines = 0;
	for (size_t i = 0; i < s->ngs; i++) {
		struct go_g *g = &s->gs[i];
		g->user = !is_system(s, g);
		if (g->user)
			s->stats.user_goroutines++;
		int r = unwind_g(s, g);
		if (r == 0)
			r = build_pcs(s, g);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < s->nlsets; i++) {
		int r = format_labelset(&s->lsets[i]);
		if (r < 0)
			return r;
	}
	s->unwound = true;
	return 0;
}

/* ---- debug=2 ---- */

static const char *status_text(const struct go_snapshot *s, const struct go_g *g)
{
	static const char *const names[] = {"idle",      "runnable",  "running", "syscall",
					    "waiting",   "",          "dead",    "",
					    "copystack", "preempted", "leaked",  "waiting for cgo callback"};
	uint32_t st = g->status & ~(uint32_t)G_SCAN;
	if ((st == G_WAITING || st == G_LEAKED) && g->waitreason != 0) {
		if (g->waitreason < s->t->nwaitreasons && s->t->waitreasons[g->waitreason])
			return s->t->waitreasons[g->waitreason];
		return "unknown wait reason";
	}
	return st < sizeof(names) / sizeof(names[0]) ? names[st] : "???";
}

static void print_header(struct sbuf *b, const struct go_snapshot *s, const struct go_g *g)
{
	uint32_t st = g->status & ~(uint32_t)G_SCAN;
	sb_printf(b, "goroutine %" PRId64 " [%s", (int64_t)g->goid, status_text(s, g));
	if (st == G_LEAKED)
		sb_str(b, " (leaked)");
	if (g->status & G_SCAN)
		sb_str(b, " (scan)");
	int64_t waitfor = 0;
	if ((st == G_WAITING || st == G_SYSCALL) && g->waitsince != 0)
		/* wrapping as Go's int64 does: waitsince is the target's to write */
		waitfor = (int64_t)((uint64_t)s->nanotime - (uint64_t)g->waitsince) / 60000000000ll;
	if (waitfor >= 1)
		sb_printf(b, ", %" PRId64 " minutes", waitfor);
	if (g->lockedm)
		sb_str(b, ", locked to thread");
	sb_str(b, "]:\n");
}

/* printArgs (Go 1.17+ register ABI argument info). */
static void print_args(struct sbuf *b, const struct go_snapshot *s, const struct go_g *g, const struct go_func *f,
		       uint64_t argp, uint64_t tracepc)
{
	const struct go_target *t = s->t;
	enum { END = 0xff, START_AGG = 0xfe, END_AGG = 0xfd, DOTS = 0xfc, TOO_LARGE = 0xfb, MAXLEN = (5 * 3 + 2) * 10 + 1 };
	uint64_t p = go_funcdata(t, f, FUNCDATA_ARGINFO);
	if (!p)
		return;
	uint64_t live = go_funcdata(t, f, FUNCDATA_ARGLIVE);
	int32_t live_idx = go_pcdata(t, f, PCDATA_ARGLIVE, tracepc);
	uint8_t start_off = 0xff;
	const uint8_t *lp = live ? go_file_at(t, live, 1) : NULL;
	if (lp)
		start_off = *lp;
	bool start = true;
	uint8_t slot = 0;
	for (int pi = 0; pi < MAXLEN;) {
		const uint8_t *op = go_file_at(t, p + (uint64_t)pi++, 1);
		if (!op)
			break;
		uint8_t o = *op;
		if (o == END)
			break;
		if (o == START_AGG) {
			if (!start)
				sb_str(b, ", ");
			sb_str(b, "{");
			start = true;
			continue;
		}
		if (o == END_AGG) {
			sb_str(b, "}");
		} else if (o == DOTS) {
			if (!start)
				sb_str(b, ", ");
			sb_str(b, "...");
		} else if (o == TOO_LARGE) {
			if (!start)
				sb_str(b, ", ");
			sb_str(b, "_");
		} else {
			if (!start)
				sb_str(b, ", ");
			const uint8_t *szp = go_file_at(t, p + (uint64_t)pi++, 1);
			uint8_t sz = szp ? *szp : 8;
			uint64_t x = 0;
			stk_u64(s, g, argp + o, &x);
			if (sz < 8)
				x = x << (64 - sz * 8) >> (64 - sz * 8);
			sb_printf(b, "0x%" PRIx64, x);
			bool is_live = true;
			if (lp && live_idx > 0 && o >= start_off) {
				const uint8_t *bits = go_file_at(t, live + (uint64_t)live_idx + slot / 8, 1);
				is_live = bits && ((*bits >> (slot % 8)) & 1);
			}
			if (!is_live)
				sb_str(b, "?");
			if (o >= start_off)
				slot++;
		}
		start = false;
	}
}

/* One goroutine's frames as gentraceback prints them; returns nprint.
 * With lines != NULL (1.21+) each logical frame's text goes into its own
 * buffer instead, for the 50+50 elision. */
static size_t print_frames(struct sbuf *b, const struct go_snapshot *s, const struct go_g *g, bool all,
			   struct sbuf **lines, size_t *nlines, size_t maxlines)
{
	const struct go_target *t = s->t;
	size_t nprint = 0;
	int last = 0;
	char name[1024];
	size_t maxphys = lines ? g->nframes : 100; /* _TracebackMaxFrames before 1.21 */
	for (size_t i = 0; i < g->nframes && i < maxphys; i++) {
		const struct go_pframe *fr = &g->frames[i];
		struct go_func f;
		if (!go_findfunc(t, fr->pc - t->bias, &f))
			break;
		uint64_t tracepc = frame_tracepc(fr, &f, t->bias);
		uint64_t tree = go_funcdata(t, &f, FUNCDATA_INLTREE);
		for (int d = 0; tree && d < GO_MAX_INLINE_DEPTH; d++) {
			int32_t ix = go_pcdata(t, &f, PCDATA_INLTREE, tracepc);
			struct go_inl ic;
			if (ix < 0 || !go_inltree_at(t, tree, ix, &ic))
				break;
			const char *raw = go_funcname_off(t, ic.nameoff);
			raw = raw ? raw : "?";
			if (all || show_funcinfo(t, raw, nprint == 0, ic.funcid, last)) {
				struct sbuf *o = b;
				if (lines && (*nlines >= maxlines || (o = lines[(*nlines)++] = calloc(1, sizeof(struct sbuf))) == NULL))
					return nprint;
				int line;
				const char *file = go_funcline(t, &f, tracepc, &line);
				go_print_name(raw, name, sizeof(name));
				sb_printf(o, "%s(...)\n\t%s:%d\n", name, file, line);
				nprint++;
			}
			last = ic.funcid;
			tracepc = f.entry + (uint64_t)(int64_t)ic.parent_pc;
		}
		const char *raw = go_funcname(t, &f);
		if (all || show_funcinfo(t, raw, nprint == 0, f.funcid, last)) {
			struct sbuf *o = b;
			if (lines && (*nlines >= maxlines || (o = lines[(*nlines)++] = calloc(1, sizeof(struct sbuf))) == NULL))
				return nprint;
			int line;
			const char *file = go_funcline(t, &f, tracepc, &line);
			if (!strcmp(raw, "runtime.gopanic"))
				raw = "panic";
			go_print_name(raw, name, sizeof(name));
			sb_printf(o, "%s(", name);
			print_args(o, s, g, &f, fr->fp, tracepc);
			sb_printf(o, ")\n\t%s:%d", file, line);
			if (fr->pc - t->bias > f.entry)
				sb_printf(o, " +0x%" PRIx64, fr->pc - t->bias - f.entry);
			sb_str(o, "\n");
			nprint++;
		}
		last = f.funcid;
	}
	return nprint;
}

static void print_createdby(struct sbuf *b, const struct go_snapshot *s, const struct go_g *g)
{
	const struct go_target *t = s->t;
	struct go_func f;
	if (g->goid == 1 || !go_findfunc(t, g->gopc - t->bias, &f))
		return;
	const char *raw = go_funcname(t, &f);
	if (!show_funcinfo(t, raw, false, 0, 0))
		return;
	char name[1024];
	go_print_name(raw, name, sizeof(name));
	sb_printf(b, "created by %s", name);
	if (t->minor >= 21 && g->parent_goid)
		sb_printf(b, " in goroutine %" PRIu64, g->parent_goid);
	uint64_t pc = g->gopc - t->bias, tracepc = pc > f.entry ? pc - 1 : pc;
	int line;
	const char *file = go_funcline(t, &f, tracepc, &line);
	sb_printf(b, "\n\t%s:%d", file, line);
	if (pc > f.entry)
		sb_printf(b, " +0x%" PRIx64, pc - f.entry);
	sb_str(b, "\n");
}

static void print_traceback(struct sbuf *b, const struct go_snapshot *s, const struct go_g *g)
{
	const struct go_target *t = s->t;
	if (g->nframes == 0) {
		sb_str(b, "\tgoroutine running on other thread; stack unavailable\n");
		print_createdby(b, s, g);
		return;
	}
	if (t->minor < 21) {
		size_t n = print_frames(b, s, g, false, NULL, NULL, 0);
		if (n == 0)
			n = print_frames(b, s, g, true, NULL, NULL, 0);
		if (n == 100) /* gentraceback returns nprint; the quirk of §10.5 */
			sb_str(b, "...additional frames elided...\n");
	} else {
		/* 1.21+: first 50 and last 50 shown frames (traceback2) */
		size_t cap = g->nframes * 8 + 16, nl = 0;
		struct sbuf **lines = calloc(cap, sizeof(*lines));
		if (!lines) {
			b->oom = true;
			return;
		}
		size_t n = print_frames(b, s, g, false, lines, &nl, cap);
		if (n == 0)
			n = print_frames(b, s, g, true, lines, &nl, cap);
		for (size_t i = 0; i < nl; i++) {
			if (nl <= 100 || i < 50 || i >= nl - 50)
				sb_str(b, lines[i]->p ? lines[i]->p : "");
			else if (i == 50)
				sb_printf(b, "...%zu frames elided...\n", nl - 100);
			free(lines[i]->p);
			free(lines[i]);
		}
		free(lines);
	}
	print_createdby(b, s, g);
}

static int flush_sbuf(struct sbuf *b, FILE *out)
{
	int r = 0;
	if (b->oom)
		r = -ENOMEM;
	else if (b->len && fwrite(b->p, 1, b->len, out) != b->len)
		r = -EIO;
	free(b->p);
	return r;
}

int go_snapshot_write_debug2(struct go_snapshot *s, FILE *out)
{
	int r = go_snapshot_unwind(s);
	if (r < 0)
		return r;
	struct sbuf b = {0};
	bool first = true;
	for (size_t i = 0; i < s->ngs; i++) {
		const struct go_g *g = &s->gs[i];
		if (!g->user)
			continue;
		if (!first)
			sb_str(&b, "\n");
		first = false;
		print_header(&b, s, g);
		print_traceback(&b, s, g);
	}
	return flush_sbuf(&b, out);
}

/* ---- aggregation (debug=1 and debug=0) ---- */

struct agg {
	char *key;
	const struct go_g *g; /* the first goroutine with this key */
	size_t count;
};

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct agg *)a)->key, ((const struct agg *)b)->key);
}

/* keysByCount: count descending, then key */
static int cmp_count(const void *a, const void *b)
{
	const struct agg *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->key, y->key);
}

static void free_aggs(struct agg *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(a[i].key);
	free(a);
}

/* Groups the user goroutines by printCountProfile's key; *ret sorted. */
static int aggregate(struct go_snapshot *s, struct agg **ret, size_t *ret_n, size_t *ret_total)
{
	int r = go_snapshot_unwind(s);
	if (r < 0)
		return r;
	struct agg *a = calloc(s->ngs + 1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < s->ngs; i++) {
		const struct go_g *g = &s->gs[i];
		if (!g->user)
			continue;
		struct sbuf b = {0};
		sb_str(&b, "@");
		for (size_t k = 0; k < g->npcs; k++)
			sb_printf(&b, " 0x%" PRIx64, g->pcs[k]);
		if (g->labelset >= 0) {
			sb_str(&b, "\n# labels: ");
			sb_str(&b, s->lsets[g->labelset].text ? s->lsets[g->labelset].text : "{}");
		}
		if (b.oom || !b.p) {
			free(b.p);
			free_aggs(a, n);
			return -ENOMEM;
		}
		a[n++] = (struct agg){b.p, g, 1};
	}
	qsort(a, n, sizeof(*a), cmp_key);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && strcmp(a[m - 1].key, a[i].key) == 0) {
			a[m - 1].count++;
			free(a[i].key);
			/* keep the earliest goroutine, like index[k] in Go */
			if (a[i].g < a[m - 1].g)
				a[m - 1].g = a[i].g;
		} else {
			a[m++] = a[i];
		}
	}
	qsort(a, m, sizeof(*a), cmp_count);
	*ret = a;
	*ret_n = m;
	*ret_total = n;
	return 0;
}

int go_snapshot_foreach_sample(struct go_snapshot *s, go_sample_fn cb, void *ctx)
{
	struct agg *a;
	size_t n, total;
	int r = aggregate(s, &a, &n, &total);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct go_g *g = a[i].g;
		struct go_sample sm = {.count = a[i].count, .locs = g->locs, .nlocs = g->nlocs, .pcs = g->pcs, .npcs = g->npcs};
		if (g->labelset >= 0) {
			sm.has_labels = true;
			sm.labels = s->lsets[g->labelset].labels;
			sm.nlabels = s->lsets[g->labelset].n;
		}
		r = cb(ctx, &sm);
	}
	free_aggs(a, n);
	return r;
}

/* printStackRecord: one frame per PC (CallersFrames semantics). */
static void print_stack_record(struct sbuf *b, const struct go_snapshot *s, const struct go_g *g, bool all)
{
	const struct go_target *t = s->t;
	bool show = all;
	size_t mark = b->len;
	char name[1024];
	for (size_t i = 0; i < g->npcs; i++) {
		struct go_func f;
		uint64_t pc = g->pcs[i] - t->bias;
		if (!go_findfunc(t, pc, &f))
			continue; /* no cgo symbolizer: the runtime drops the PC */
		if (pc > f.entry)
			pc--;
		const char *raw = go_funcname(t, &f);
		uint64_t tree = go_funcdata(t, &f, FUNCDATA_INLTREE);
		struct go_inl ic;
		if (tree && go_inltree_at(t, tree, go_pcdata(t, &f, PCDATA_INLTREE, pc), &ic)) {
			const char *in = go_funcname_off(t, ic.nameoff);
			raw = in ? in : "?";
		}
		go_print_name(raw, name, sizeof(name));
		if (!strcmp(name, "runtime.goexit") || (!show && has_prefix(name, "runtime.")))
			continue;
		show = true;
		int line;
		const char *file = go_funcline(t, &f, pc, &line);
		sb_printf(b, "#\t0x%" PRIx64 "\t%s+0x%" PRIx64 "\t%s:%d\n", pc + t->bias, name, pc - f.entry, file, line);
	}
	if (!show) {
		b->len = mark;
		print_stack_record(b, s, g, true);
		return;
	}
	sb_str(b, "\n");
}

/* ---- text/tabwriter(minwidth 1, tabwidth 8, padding 1, '\t', 0) ---- */

struct tw_line {
	const char **cells;
	size_t *widths; /* in runes */
	size_t ncells;  /* the last one is not tab-terminated */
};

static size_t rune_count(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			c++;
	return c;
}

struct tw {
	struct tw_line *lines;
	size_t nlines;
	size_t *widths;
	size_t nwidths;
	struct sbuf *out;
};

static void tw_write_lines(struct tw *w, size_t l0, size_t l1)
{
	for (size_t i = l0; i < l1; i++) {
		const struct tw_line *ln = &w->lines[i];
		for (size_t j = 0; j < ln->ncells; j++) {
			const char *c = ln->cells[j];
			size_t len = j + 1 < ln->ncells ? (size_t)(ln->cells[j + 1] - c - 1) : strlen(c);
			sb_add(w->out, c, len);
			if (j < w->nwidths && j + 1 < ln->ncells) {
				size_t cellw = (w->widths[j] + 7) / 8 * 8;
				size_t pad = cellw - ln->widths[j];
				for (size_t k = 0; k < (pad + 7) / 8; k++)
					sb_add(w->out, "\t", 1);
			}
		}
		if (i + 1 < w->nlines)
			sb_add(w->out, "\n", 1);
	}
}

static void tw_format(struct tw *w, size_t l0, size_t l1)
{
	size_t column = w->nwidths;
	for (size_t this = l0; this < l1; this++) {
		if (column + 1 >= w->lines[this].ncells)
			continue;
		tw_write_lines(w, l0, this);
		l0 = this;
		size_t width = 1; /* minwidth */
		for (; this < l1; this++) {
			const struct tw_line *ln = &w->lines[this];
			if (column + 1 >= ln->ncells)
				break;
			if (ln->widths[column] + 1 > width)
				width = ln->widths[column] + 1;
		}
		w->widths[w->nwidths++] = width;
		tw_format(w, l0, this);
		w->nwidths--;
		l0 = this;
	}
	tw_write_lines(w, l0, l1);
}

/* Aligns text (NUL-terminated, modified in place) into out. */
static int tabwrite(char *text, struct sbuf *out)
{
	size_t nl = 1;
	for (char *p = text; *p; p++)
		nl += *p == '\n';
	struct tw w = {.out = out};
	w.lines = calloc(nl, sizeof(*w.lines));
	if (!w.lines)
		return -ENOMEM;
	size_t maxcells = 1;
	char *p = text;
	for (size_t i = 0; i < nl; i++) {
		char *e = strchr(p, '\n');
		if (e)
			*e = 0;
		size_t nc = 1;
		for (char *q = p; *q; q++)
			nc += *q == '\t';
		struct tw_line *ln = &w.lines[w.nlines++];
		ln->cells = calloc(nc, sizeof(char *));
		ln->widths = calloc(nc, sizeof(size_t));
		if (!ln->cells || !ln->widths)
			break;
		ln->ncells = nc;
		char *c = p;
		for (size_t k = 0; k < nc; k++) {
			char *tab = strchr(c, '\t');
			size_t len = tab ? (size_t)(tab - c) : strlen(c);
			ln->cells[k] = c;
			ln->widths[k] = rune_count(c, len);
			c += len + 1;
		}
		if (nc > maxcells)
			maxcells = nc;
		if (!e)
			break;
		p = e + 1;
	}
	w.widths = calloc(maxcells + 1, sizeof(size_t));
	int r = 0;
	if (w.widths)
		tw_format(&w, 0, w.nlines);
	else
		r = -ENOMEM;
	for (size_t i = 0; i < w.nlines; i++) {
		free(w.lines[i].cells);
		free(w.lines[i].widths);
	}
	free(w.lines);
	free(w.widths);
	return r;
}

int go_snapshot_write_debug1(struct go_snapshot *s, FILE *out)
{
	struct agg *a;
	size_t n, total;
	int r = aggregate(s, &a, &n, &total);
	if (r < 0)
		return r;
	struct sbuf b = {0};
	sb_printf(&b, "goroutine profile: total %zu\n", total);
	for (size_t i = 0; i < n; i++) {
		sb_printf(&b, "%zu %s\n", a[i].count, a[i].key);
		print_stack_record(&b, s, a[i].g, false);
	}
	free_aggs(a, n);
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	struct sbuf o = {0};
	r = tabwrite(b.p ? b.p : (char[]){""}, &o);
	free(b.p);
	if (r < 0) {
		free(o.p);
		return r;
	}
	return flush_sbuf(&o, out);
}
