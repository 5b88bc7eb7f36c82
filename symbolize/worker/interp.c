/* The interpretation worker and its client. Protocol over a SOCK_STREAM
 * socketpair, one request and one reply at a time:
 *
 *   request:  u8 kind, u32 body length, body
 *   reply:    u32 body length, body
 *
 *   'U' unwind:    u32 maps_len, maps, u32 nthreads, per thread
 *                  {u32 tid, u32 outcome, regs, u64 stack_start, u32 stack_len,
 *                  stack bytes}  ->  u64 worker CPU ns so far, per thread
 *                  {u32 n, u32 truncated, n x u64}
 *                  (maps_len MAPS_UNCHANGED, no maps: the ones of this
 *                  worker's previous 'U'; a sampling tick's maps rarely
 *                  change, and a large process's are hundreds of KiB)
 *   'P' prepare:   u32 maps_len, maps  ->  empty
 *   'S' symbolize: u32 maps_len, maps, u32 n, n x u64  ->  symtab_encode()
 *   'W' warm:      as 'S'  ->  empty (the symbols stay in the worker's cache)
 *   'Y' python:    u32 maps_len, maps, u32 want_frames  ->  i32 status,
 *                  u32 hexversion, u64 eval_start, u64 eval_end, u32 nthreads,
 *                  per thread {u64 tid, u32 flags (1 GIL, 2 truncated, 4 moved),
 *                  u32 nframes, per frame {u32 entry, i32 line, u32 len,
 *                  function, u32 len, file}}
 *                  (the worker reads the interpreter's memory itself, with
 *                  process_vm_readv: its frames are a linked list in the
 *                  heap, parsed where nothing the target controls can hurt)
 *
 *   'g' 'a' 'h' 'r' 'o' 'd' 'j' 'c' 'n': a Go target's requests
 *                  (go_serve.h), carried here as opaque bodies and replies
 *
 * Three workers run this same code: one is sent the unwinding ('U'), one
 * symbolization ('P', 'S', 'W'), and a Go target's requests go to a third,
 * started on first use: it keeps the parsed Go binary and the last
 * goroutine capture, and reads while every thread is held, so it is never
 * lowered in priority and never waits behind a tick or a warm-up. Loading a module's DWARF (libc's
 * compressed debug info: tens of milliseconds, seconds on a loaded box)
 * then never delays a tick's unwinding, and can start while the capture
 * runs: a warm request is sent without waiting for its reply, so that by
 * the time the capture ends (after Ctrl-C, which must be quick) the final
 * batch is mostly cache hits.
 *
 * Everything the worker sends back is validated: it parsed hostile files
 * and may be confused or compromised. */
#include "symbolize/worker/interp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach/tool_priority.h"
#include "symbolize/python/pyframes.h"
#include "symbolize/unwind/unwind.h"
#include "symbolize/worker/broker.h"
#include "symbolize/worker/go_serve.h"
#include "symbolize/worker/sandbox.h"
#include "symbolize/worker/unwind_gate.h"
#include "symbolize/worker/wire.h"
#include "symbolize/arrays.h"
#include "symbolize/target_access.h"

/* CLOCK_MONOTONIC in nanoseconds: the workers' deadlines. */
static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define MAX_MESSAGE (1u << 30)
#define UNWIND_TIMEOUT_MS 10000
#define PYTHON_READ_TIMEOUT_MS 500
#define SYMBOLIZE_TIMEOUT_MS 300000
#define MAX_RESTARTS 8
#define MAPS_UNCHANGED UINT32_MAX

/* One worker and the socket to it. */
struct channel {
	pid_t worker;
	int fd;
	unsigned restarts;
	unsigned lost; /* workers killed after a failed request */
	unsigned generation; /* which worker: one more at each start */
	bool pending; /* a warm request whose reply is not read yet */
	/* Shared with the worker (sandbox.h): how far its sandbox got and
	 * the call its filter stopped, if any. */
	volatile struct sandbox_status *status;
	unsigned denied;        /* workers their filter stopped */
	int32_t denied_syscall; /* the last such call */
};

struct interp {
	pid_t pid;
	struct symbolize_options opts;
	struct channel unwinding, symbols, go;
	/* The maps the unwinding worker of generation uw_maps_gen last got
	 * (NULL: none it is known to hold). */
	char *uw_maps_sent;
	size_t uw_maps_sent_len;
	unsigned uw_maps_gen;
	/* The unwinding workers' CPU, summed over restarts, from the value
	 * each reply carries (uw_cpu_last, of worker uw_cpu_gen). */
	uint64_t uw_cpu_ns, uw_cpu_last;
	unsigned uw_cpu_gen;
	bool sandboxed; /* false: interpreting in this process */
	uint64_t stacks_lost, batches_lost;
	/* In-process fallback state. */
	struct unwind_gate *gate;
	struct unwinder *uw;
	struct symbolizer *sym;
	char *sym_maps;
};

/* ---- byte plumbing ---- */

/* One message, header and body, in one call: one socket buffer and one
 * wake-up of the reader instead of one per piece. */
static int writev_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EPIPE;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* One read of at most len bytes, waiting for them until the deadline (0:
 * none). Returns the bytes read or -errno (-EPIPE at the end). */
static ssize_t read_some(int fd, void *buf, size_t len, uint64_t deadline_ns)
{
	for (;;) {
		if (deadline_ns) {
			uint64_t now = monotonic_ns();
			if (now >= deadline_ns)
				return -ETIMEDOUT;
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			int r = poll(&pfd, 1, (int)((deadline_ns - now) / 1000000ull) + 1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0)
				return -ETIMEDOUT;
		}
		ssize_t n = read(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		return n;
	}
}

/* Read exactly len bytes, giving up at the deadline (0: none). */
static int read_all(int fd, void *buf, size_t len, uint64_t deadline_ns)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = read_some(fd, p, len, deadline_ns);
		if (n < 0)
			return (int)n;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* What the first read of a message takes: a tick's unwind request (a
 * few threads' stacks, about 10 KiB here) and its reply fit. */
#define FIRST_READ_BYTES 65536

/* One message: a head of head_len bytes (4 or more) that ends with the
 * body's length, then the body, malloc'd into *ret_body. A channel has one
 * message in flight at a time, each written in one writev, so the first read
 * takes the head and as much of the body as its buffer holds: a tick's
 * message costs one read (and one wait) instead of two of each. Bytes past
 * the body are a peer that broke the protocol: -EBADMSG. */
static int read_message(int fd, uint8_t *head, size_t head_len, uint8_t **ret_body, uint32_t *ret_len,
			uint64_t deadline_ns)
{
	uint8_t first[FIRST_READ_BYTES];
	size_t got = 0;
	while (got < head_len) {
		ssize_t n = read_some(fd, first + got, sizeof(first) - got, deadline_ns);
		if (n < 0)
			return (int)n;
		got += (size_t)n;
	}
	memcpy(head, first, head_len);
	uint32_t len;
	memcpy(&len, first + head_len - 4, 4);
	size_t early = got - head_len;
	if (len > MAX_MESSAGE || early > len)
		return -EBADMSG;
	uint8_t *body = malloc(len ? len : 1);
	if (!body)
		return -ENOMEM;
	memcpy(body, first + head_len, early);
	int r = read_all(fd, body + early, len - early, deadline_ns);
	if (r < 0) {
		free(body);
		return r;
	}
	*ret_body = body;
	*ret_len = len;
	return 0;
}

/* ---- the worker ---- */

struct worker_state {
	pid_t pid;
	struct symbolize_options opts;
	struct unwind_gate *gate;
	struct unwinder *uw;
	char *uw_maps;
	size_t uw_maps_len;
	struct symbolizer *sym;
	char *sym_maps;
	size_t sym_maps_len;
	struct thread_capture tc;
	/* What the last 'Y' found, for these module lines. */
	char *py_maps;
	size_t py_maps_len;
	int py_status;
	uint32_t py_hexversion;
	struct py_symbols py_syms;
	struct py_layout py_layout;
	/* A Go target (go_serve.h), opened by its first request. */
	struct go_served *go;
};

static bool same_maps(const char *a, size_t alen, const uint8_t *b, size_t blen)
{
	return a && alen == blen && memcmp(a, b, blen) == 0;
}

static char *dup_bytes(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

/* The lines of a maps text that symbolization depends on: executable,
 * file-backed mappings. Heap and anonymous mappings change all the time
 * (every large malloc) and must not throw the symbol cache away. */
static char *module_lines(const uint8_t *maps, size_t len, size_t *ret_len)
{
	char *out = malloc(len + 1);
	size_t n = 0;
	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		const uint8_t *nl = memchr(maps + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (maps + i)) + 1 : len - i;
		const uint8_t *line = maps + i;
		const uint8_t *sp = memchr(line, ' ', l);
		bool exec = sp && (size_t)(sp - line) + 4 < l && sp[3] == 'x';
		if (exec && memchr(line, '/', l)) {
			memcpy(out + n, line, l);
			n += l;
		}
		i += l;
	}
	out[n] = '\0';
	*ret_len = n;
	return out;
}

/* Should fresh replace cur? Not when it could open none of the files cur
 * has open: it was made as the target went (an exiting process's maps
 * read empty, and its /proc/PID/root and map_files are gone), and cur is
 * still right for every PC seen before. */
static bool supersedes(struct symbolizer *fresh, struct symbolizer *cur)
{
	return !cur || symbolizer_loaded_modules(fresh) > 0 || symbolizer_loaded_modules(cur) == 0;
}

/* Keep the symbolizer of the newest modules that could be loaded: after
 * the target exits a new one cannot open its files, and the old one (which
 * holds them open) is still right for every PC seen before. */
static void worker_sym_for(struct worker_state *w, const uint8_t *maps, size_t len)
{
	size_t mlen;
	char *modtext = module_lines(maps, len, &mlen);
	if (!modtext)
		return;
	bool same = same_maps(w->sym_maps, w->sym_maps_len, (const uint8_t *)modtext, mlen);
	free(modtext);
	if (same && w->sym)
		return;
	char *copy = dup_bytes(maps, len);
	struct symbolizer *s = NULL;
	w->opts.proc_pid = w->pid; /* its broker finds a live thread */
	if (copy && symbolizer_new(w->pid, copy, len, &w->opts, &s) == 0) {
		if (!supersedes(s, w->sym)) {
			symbolizer_free(s);
			free(copy);
			return;
		}
		symbolizer_free(w->sym);
		free(w->sym_maps);
		w->sym = s;
		w->sym_maps = module_lines(maps, len, &w->sym_maps_len);
		free(copy);
		return;
	}
	free(copy);
}

/* This process's CPU time so far: a worker is one thread. */
static uint64_t own_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void worker_unwind(struct worker_state *w, struct cursor *c, struct byte_buf *out)
{
	uint32_t maps_len = take_u32(c);
	const uint8_t *maps = NULL;
	if (maps_len == MAPS_UNCHANGED) {
		maps = (const uint8_t *)w->uw_maps;
		maps_len = (uint32_t)w->uw_maps_len;
	} else {
		maps = take(c, maps_len);
	}
	if (!maps)
		return;
	if (!same_maps(w->uw_maps, w->uw_maps_len, maps, maps_len)) {
		char *copy = dup_bytes(maps, maps_len);
		if (!copy)
			return;
		/* The unwinder opens no file itself: it asks the gate
		 * (unwind_gate.h), once per module. */
		struct unwind_opener op = unwind_gate_opener(w->gate);
		if (w->uw)
			unwinder_update_maps(w->uw, copy, maps_len);
		else if (unwinder_new(w->pid, copy, maps_len, &op, &w->uw) < 0)
			w->uw = NULL;
		free(w->uw_maps);
		w->uw_maps = copy;
		w->uw_maps_len = maps_len;
	}
	uint32_t n = take_u32(c);
	uint64_t pcs[UNWIND_MAX_FRAMES_DEFAULT];
	size_t cpu_at = out->len;
	uint64_t cpu = 0;
	byte_buf_put(out, &cpu, 8);
	for (uint32_t i = 0; i < n && !c->bad; i++) {
		struct thread_capture *tc = &w->tc;
		tc->tid = (pid_t)take_u32(c);
		tc->outcome = (enum thread_outcome)take_u32(c);
		const void *regs = take(c, sizeof(tc->regs));
		if (regs)
			memcpy(&tc->regs, regs, sizeof(tc->regs));
		tc->stack_start = take_u64(c);
		uint32_t slen = take_u32(c);
		tc->stack = (uint8_t *)take(c, slen);
		tc->stack_len = tc->stack ? slen : 0;
		size_t got = 0;
		bool truncated = true;
		if (w->uw && tc->outcome == THREAD_CAPTURED)
			unwinder_unwind(w->uw, tc, pcs, UNWIND_MAX_FRAMES_DEFAULT, &got, &truncated);
		msg_u32(out, (uint32_t)got);
		msg_u32(out, truncated);
		byte_buf_put(out, pcs, got * sizeof(uint64_t));
	}
	w->tc.stack = NULL;
	cpu = own_cpu_ns();
	if (!out->failed)
		memcpy(out->p + cpu_at, &cpu, 8);
}

static void worker_symbolize(struct worker_state *w, struct cursor *c, struct byte_buf *out)
{
	uint32_t maps_len = take_u32(c);
	const uint8_t *maps = take(c, maps_len);
	uint32_t n = take_u32(c);
	const uint8_t *raw = take(c, (size_t)n * 8);
	if (!maps || !raw)
		return;
	worker_sym_for(w, maps, maps_len);
	struct symtab *st = symtab_new();
	uint64_t *addrs = malloc((size_t)n * 8 + 8);
	if (st && addrs && w->sym) {
		memcpy(addrs, raw, (size_t)n * 8);
		if (symtab_fill(st, w->sym, addrs, n) == 0) {
			uint8_t *enc;
			size_t len;
			if (symtab_encode(st, &enc, &len) == 0) {
				byte_buf_put(out, enc, len);
				free(enc);
			}
		}
	}
	free(addrs);
	symtab_free(st);
}

/* ---- Python ---- */

static int worker_py_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return target_read(*(const pid_t *)ctx, addr, buf, len);
}

/* Find the interpreter (once per set of modules) and its version. */
static void worker_py_locate(struct worker_state *w, const uint8_t *maps, size_t len)
{
	size_t mlen;
	char *modtext = module_lines(maps, len, &mlen);
	if (!modtext)
		return;
	if (same_maps(w->py_maps, w->py_maps_len, (const uint8_t *)modtext, mlen)) {
		free(modtext);
		return;
	}
	free(w->py_maps);
	w->py_maps = modtext;
	w->py_maps_len = mlen;
	w->py_hexversion = 0;
	memset(&w->py_syms, 0, sizeof(w->py_syms));
	struct maps m;
	char *copy = dup_bytes(maps, len);
	if (!copy || maps_parse(copy, len, &m) < 0) {
		free(copy);
		w->py_status = -ENOMEM;
		return;
	}
	/* The worker's broker opens in the target's root (target_access.h). */
	int rootfd = -1;
	w->py_status = py_symbols_find(w->pid, rootfd, &m, &w->py_syms);
	if (rootfd >= 0)
		close(rootfd);
	maps_release(&m);
	free(copy);
	if (w->py_status < 0)
		return;
	pid_t mem = w->pid; /* read through the mem descriptor */
	uint32_t hex = 0;
	/* Py_Version exists from 3.11 on: an older CPython is told apart
	 * from one whose memory cannot be read. */
	if (!w->py_syms.version)
		w->py_status = -ENOTSUP;
	else if ((w->py_status = worker_py_read(&mem, w->py_syms.version, &hex, 4)) == 0) {
		w->py_hexversion = hex;
		const struct py_layout *known = py_layout_for(hex);
		if (!known) {
			w->py_status = -ENOTSUP;
			return;
		}
		w->py_layout = *known;
		/* 3.13 on: the offsets the interpreter publishes win over ours
		 * (a distribution's build may differ). A block that is there
		 * but makes no sense is refused rather than half trusted. */
		uint8_t block[1024];
		if (worker_py_read(&mem, w->py_syms.runtime, block, sizeof(block)) == 0) {
			int d = py_layout_from_debug_offsets(block, sizeof(block), hex, &w->py_layout);
			if (d == -EBADMSG)
				w->py_status = -EBADMSG;
		}
	}
}

static void worker_python(struct worker_state *w, struct cursor *c, struct byte_buf *out)
{
	uint32_t maps_len = take_u32(c);
	const uint8_t *maps = take(c, maps_len);
	uint32_t want_frames = take_u32(c);
	if (!maps)
		return;
	/* Test-only: a read of the frames kills the worker (an interpreter
	 * whose memory crashes or stalls the walker), to prove the capture
	 * goes on without Python frames and says so. */
	if (want_frames && getenv("DIAG_ATTACH_TEST_PYTHON_READ_CRASH"))
		raise(SIGSEGV);
	worker_py_locate(w, maps, maps_len);
	struct py_stacks *st = NULL;
	int status = w->py_status;
	if (status == 0 && want_frames) {
		pid_t mem = w->pid; /* read through the mem descriptor */
		status = py_stacks_read(&w->py_layout, w->py_syms.runtime,
					worker_py_read, &mem, NULL, &st);
	}
	msg_u32(out, (uint32_t)status);
	msg_u32(out, w->py_hexversion);
	byte_buf_put(out, &w->py_syms.eval_start, 8);
	byte_buf_put(out, &w->py_syms.eval_end, 8);
	msg_u32(out, st ? (uint32_t)st->nthreads : 0);
	for (size_t i = 0; st && i < st->nthreads; i++) {
		const struct py_thread *t = &st->threads[i];
		byte_buf_put(out, &t->native_tid, 8);
		msg_u32(out, (t->holds_gil ? 1u : 0u) | (t->truncated ? 2u : 0u) | (t->moved ? 4u : 0u));
		msg_u32(out, (uint32_t)t->nframes);
		for (size_t k = 0; k < t->nframes; k++) {
			msg_u32(out, t->frames[k].entry);
			msg_u32(out, (uint32_t)t->frames[k].line);
			msg_string(out, t->frames[k].function);
			msg_string(out, t->frames[k].file);
		}
	}
	py_stacks_free(st);
}

static void worker_main(int fd, pid_t pid, const struct symbolize_options *opts,
			volatile struct sandbox_status *status)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "diag-interp");
	signal(SIGINT, SIG_IGN); /* Ctrl-C is for our parent to handle */
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_IGN);
	struct worker_state w = {.pid = pid, .opts = *opts, .gate = unwind_gate_new(pid)};
	if (!w.gate)
		_exit(4);
	/* Everything that needs the tool's rights happens now, before a byte
	 * the target controls is read: the broker (which keeps them, to open
	 * files), the target's memory (opened read-only), the demangler
	 * (loaded from a file). Then the sandbox takes the rest away. */
	symbolize_preload();
	if (broker_start(pid, opts->allow_debuginfod) < 0)
		_exit(3);
	if (sandbox_enter(status) < 0)
		_exit(3);
	/* Test-only: crash on the Nth unwind request, to prove that a crash
	 * in interpretation loses only the samples in flight. */
	const char *crash = getenv("DIAG_ATTACH_TEST_WORKER_CRASH_AT");
	long crash_at = crash ? atol(crash) : 0;
	long unwinds = 0;
	for (;;) {
		uint8_t head[5];
		uint8_t *body = NULL;
		uint32_t len = 0;
		int got = read_message(fd, head, sizeof(head), &body, &len, 0);
		if (got == -ENOMEM)
			_exit(4);
		if (got < 0)
			_exit(0);
		uint8_t kind = head[0];
		struct cursor c = {.p = body, .len = len};
		struct byte_buf out = {0};
		if (kind == 'U' && crash_at && ++unwinds == crash_at)
			raise(SIGSEGV);
		/* Test-only: every symbol request crashes (a file that kills
		 * libdw), to prove the loss is said, not hidden. */
		if (kind == 'S' && getenv("DIAG_ATTACH_TEST_SYMBOLS_CRASH"))
			raise(SIGSEGV);
		if (kind == 'U')
			worker_unwind(&w, &c, &out);
		else if (kind == 'S' || kind == 'W') {
			worker_symbolize(&w, &c, &out);
			if (kind == 'W')
				out.len = 0; /* only the cache was wanted */
		}
		else if (kind == 'Y')
			worker_python(&w, &c, &out);
		else if (go_serve_handles(kind)) {
			/* Test-only: the Go worker crashes on this request (a
			 * binary or a runtime whose memory kills the parser),
			 * to prove the capture goes on without goroutines and
			 * the target is released. */
			const char *go_crash = getenv("DIAG_ATTACH_TEST_GO_WORKER_CRASH");
			if (go_crash && go_crash[0] == (char)kind)
				raise(SIGSEGV);
			go_serve(&w.go, w.pid, kind, &c, &out);
		}
		else if (kind == 'P') {
			uint32_t ml = take_u32(&c);
			const uint8_t *maps = take(&c, ml);
			if (maps)
				worker_sym_for(&w, maps, ml);
		}
		free(body);
		uint32_t olen = out.failed ? 0 : (uint32_t)out.len;
		struct iovec iov[2] = {{&olen, 4}, {out.p, olen}};
		if (writev_all(fd, iov, olen ? 2 : 1) < 0)
			_exit(0);
		free(out.p);
	}
}

/* ---- the client ---- */

/* Close the socket and SIGKILL the worker; reap_worker collects it. */
static void kill_worker(struct channel *ch)
{
	if (ch->fd >= 0)
		close(ch->fd);
	ch->fd = -1;
	ch->pending = false;
	if (ch->worker > 0)
		kill(ch->worker, SIGKILL);
}

/* Wait for the killed worker (our own child, never a tracee: exactly it),
 * until deadline_ns (0: however long it takes); one still alive then is
 * left for init to reap once we exit. */
static void reap_worker(struct channel *ch, uint64_t deadline_ns)
{
	if (ch->worker > 0 && !deadline_ns)
		waitpid(ch->worker, NULL, __WALL);
	while (ch->worker > 0 && deadline_ns && waitpid(ch->worker, NULL, __WALL | WNOHANG) == 0 &&
	       monotonic_ns() < deadline_ns) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	ch->worker = 0;
}

/* A worker that its filter stopped wrote the call first (sandbox.h). */
static void note_denied(struct channel *ch)
{
	if (ch->status && ch->status->denied_syscall >= 0) {
		ch->denied++;
		ch->denied_syscall = ch->status->denied_syscall;
		ch->status->denied_syscall = -1;
	}
}

static void stop_worker(struct channel *ch)
{
	if (ch->worker > 0)
		ch->lost++;
	kill_worker(ch);
	reap_worker(ch, 0);
	note_denied(ch);
}

static int start_worker(struct interp *in, struct channel *ch)
{
	if (!ch->status) {
		void *page = mmap(NULL, sizeof(struct sandbox_status), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED)
			return -errno;
		ch->status = page;
	}
	/* Unknown until the worker says. */
	ch->status->namespaces_errno = ch->status->uid_errno = ch->status->seccomp_errno = -1;
	ch->status->denied_syscall = -1;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return -e;
	}
	if (pid == 0) {
		close(sv[0]);
		/* Keep nothing of the tool's but stdio and our socket. Above all
		 * not the target's capture lock (attach/target.c), a socket that
		 * is released only when its last holder is gone: held here it
		 * outlives a SIGKILLed tool until PDEATHSIG has reaped us, and a
		 * capture started right then is refused as "already traced" by
		 * a dead pid. (Nor the other worker's socket.) */
		if (sv[1] > 3)
			syscall(SYS_close_range, 3u, (unsigned)sv[1] - 1, 0u);
		syscall(SYS_close_range, (unsigned)sv[1] + 1, ~0u, 0u);
		worker_main(sv[1], in->pid, &in->opts, ch->status);
		_exit(0);
	}
	close(sv[1]);
	ch->worker = pid;
	ch->fd = sv[0];
	ch->generation++;
	return 0;
}

int interp_new(pid_t pid, const struct symbolize_options *opts, struct interp **ret)
{
	struct interp *in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->pid = pid;
	in->opts = *opts;
	in->unwinding.fd = in->symbols.fd = in->go.fd = -1;
	in->sandboxed = start_worker(in, &in->unwinding) == 0;
	if (in->sandboxed && start_worker(in, &in->symbols) < 0) {
		stop_worker(&in->unwinding);
		in->sandboxed = false;
	}
	*ret = in;
	return 0;
}

void interp_free(struct interp *in)
{
	if (!in)
		return;
	/* Killed, and reaped only if already dead: a worker tears its address
	 * space down after SIGKILL, which takes milliseconds (2 s seen for one
	 * full of decompressed debug info under ASan on a loaded box), and
	 * nothing of ours needs to wait for that: it holds nothing of the
	 * target's, and whatever is left is reaped by init once we exit.
	 * (Waiting was the last 1.5-7 ms of every snapshot.) */
	kill_worker(&in->unwinding);
	kill_worker(&in->symbols);
	kill_worker(&in->go);
	uint64_t give_up = monotonic_ns(); /* one look, no wait */
	reap_worker(&in->unwinding, give_up);
	reap_worker(&in->symbols, give_up);
	reap_worker(&in->go, give_up);
	struct channel *chs[] = {&in->unwinding, &in->symbols, &in->go};
	for (size_t i = 0; i < 3; i++)
		if (chs[i]->status)
			munmap((void *)chs[i]->status, sizeof(struct sandbox_status));
	free(in->uw_maps_sent);
	unwinder_free(in->uw);
	unwind_gate_free(in->gate);
	symbolizer_free(in->sym);
	free(in->sym_maps);
	free(in);
}

/* Read and drop the reply to the warm request in flight, waiting for it
 * until the deadline (0: only if it is already there). On a failure the
 * worker is stopped, to be restarted by the next request. */
static void drain_pending(struct channel *ch, uint64_t deadline_ns)
{
	if (!ch->pending)
		return;
	if (!deadline_ns) {
		struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
		if (poll(&pfd, 1, 0) <= 0)
			return;
		deadline_ns = monotonic_ns() + SYMBOLIZE_TIMEOUT_MS * 1000000ull;
	}
	uint8_t head[4];
	uint8_t *reply = NULL;
	uint32_t rlen = 0;
	int r = read_message(ch->fd, head, sizeof(head), &reply, &rlen, deadline_ns);
	free(reply);
	ch->pending = false;
	if (r < 0)
		stop_worker(ch);
}

/* Send one request; a channel without a worker gets one first (a bounded
 * number of times). */
static int send_request(struct interp *in, struct channel *ch, uint8_t kind, const struct byte_buf *body)
{
	if (ch->fd < 0) {
		if (ch->restarts >= MAX_RESTARTS || start_worker(in, ch) < 0)
			return -ECHILD;
		ch->restarts++;
	}
	uint32_t len = (uint32_t)body->len;
	struct iovec iov[3] = {{&kind, 1}, {&len, 4}, {body->p, body->len}};
	int r = writev_all(ch->fd, iov, body->len ? 3 : 2);
	if (r < 0)
		stop_worker(ch);
	return r;
}

/* One round trip. *reply is malloc'd (may be empty). On any failure the
 * worker is killed (it is confused, crashed or hung) and restarted for the
 * next request. */
static int round_trip(struct interp *in, struct channel *ch, uint8_t kind, const struct byte_buf *body,
		      uint8_t **reply, size_t *reply_len, unsigned timeout_ms)
{
	*reply = NULL;
	*reply_len = 0;
	uint64_t deadline = monotonic_ns() + (uint64_t)timeout_ms * 1000000ull;
	/* A warm request still being worked on: its reply comes first. */
	drain_pending(ch, deadline);
	int r = send_request(in, ch, kind, body);
	if (r < 0)
		return r;
	uint8_t head[4];
	uint8_t *buf = NULL;
	uint32_t rlen = 0;
	r = read_message(ch->fd, head, sizeof(head), &buf, &rlen, deadline);
	if (r < 0) {
		stop_worker(ch);
		return r;
	}
	*reply = buf;
	*reply_len = rlen;
	return 0;
}

static void maps_body(struct byte_buf *m, const char *maps, size_t len)
{
	msg_u32(m, (uint32_t)len);
	byte_buf_put(m, maps, len);
}

static void leaf_only(const struct process_capture *pc, struct unwound_stack *stacks)
{
	for (size_t i = 0; i < pc->nthreads; i++) {
		stacks[i].n = pc->threads[i].outcome == THREAD_CAPTURED ? 1 : 0;
		stacks[i].pcs[0] = pc->threads[i].regs.rip;
		stacks[i].truncated = true;
	}
}

/* What the unwinding worker now holds (text NULL: unknown). */
static void remember_maps_sent(struct interp *in, const char *text, size_t len)
{
	free(in->uw_maps_sent);
	in->uw_maps_sent = text ? (char *)dup_bytes((const uint8_t *)text, len) : NULL;
	in->uw_maps_sent_len = in->uw_maps_sent ? len : 0;
	in->uw_maps_gen = in->unwinding.generation;
}

/* The worker's CPU so far, as its reply says. The worker may be
 * compromised (it parses the target's files): what it adds is capped by
 * how long the round trip took, so it cannot make our ticks look dear. */
static void note_unwinder_cpu(struct interp *in, uint64_t worker_cpu_ns, uint64_t took_ns)
{
	bool same_worker = in->uw_cpu_gen == in->unwinding.generation;
	uint64_t base = same_worker ? in->uw_cpu_last : 0;
	uint64_t add = worker_cpu_ns > base ? worker_cpu_ns - base : 0;
	in->uw_cpu_ns += add < took_ns ? add : took_ns;
	in->uw_cpu_last = worker_cpu_ns;
	in->uw_cpu_gen = in->unwinding.generation;
}

void interp_unwind(struct interp *in, const struct process_capture *pc,
		   struct unwound_stack *stacks)
{
	if (!in->sandboxed) {
		if (!in->gate)
			in->gate = unwind_gate_new(pc->pid);
		struct unwind_opener op = unwind_gate_opener(in->gate);
		if (!in->gate ||
		    (!in->uw && unwinder_new(pc->pid, pc->maps_text, pc->maps_len, &op, &in->uw) < 0)) {
			leaf_only(pc, stacks);
			return;
		}
		unwinder_update_maps(in->uw, pc->maps_text, pc->maps_len);
		for (size_t i = 0; i < pc->nthreads; i++) {
			stacks[i].n = 0;
			stacks[i].truncated = true;
			if (pc->threads[i].outcome == THREAD_CAPTURED)
				unwinder_unwind(in->uw, &pc->threads[i], stacks[i].pcs,
						UNWIND_MAX_FRAMES_DEFAULT, &stacks[i].n,
						&stacks[i].truncated);
		}
		return;
	}
	/* Nothing to unwind (a perf-engine tick reads no stack: every
	 * thread's stack comes from its perf samples): no round trip. The
	 * worker would answer each thread with no frames, truncated. */
	size_t captured = 0;
	for (size_t i = 0; i < pc->nthreads; i++)
		captured += pc->threads[i].outcome == THREAD_CAPTURED;
	if (captured == 0) {
		for (size_t i = 0; i < pc->nthreads; i++) {
			stacks[i].n = 0;
			stacks[i].truncated = true;
		}
		return;
	}
	struct byte_buf m = {0};
	/* The worker that will get this holds these maps already: it is
	 * alive (one started by send_request holds none) and was sent them. */
	bool maps_known = in->unwinding.fd >= 0 && in->uw_maps_sent &&
			  in->uw_maps_gen == in->unwinding.generation &&
			  same_maps(in->uw_maps_sent, in->uw_maps_sent_len,
				    (const uint8_t *)pc->maps_text, pc->maps_len);
	if (maps_known)
		msg_u32(&m, MAPS_UNCHANGED);
	else
		maps_body(&m, pc->maps_text, pc->maps_len);
	msg_u32(&m, (uint32_t)pc->nthreads);
	for (size_t i = 0; i < pc->nthreads; i++) {
		const struct thread_capture *tc = &pc->threads[i];
		uint32_t slen = tc->outcome == THREAD_CAPTURED ? (uint32_t)tc->stack_len : 0;
		msg_u32(&m, (uint32_t)tc->tid);
		msg_u32(&m, (uint32_t)tc->outcome);
		byte_buf_put(&m, &tc->regs, sizeof(tc->regs));
		byte_buf_put(&m, &tc->stack_start, 8);
		msg_u32(&m, slen);
		byte_buf_put(&m, tc->stack, slen);
	}
	uint8_t *reply = NULL;
	size_t rlen = 0;
	uint64_t sent_ns = monotonic_ns();
	int r = m.failed ? -ENOMEM : round_trip(in, &in->unwinding, 'U', &m, &reply, &rlen, UNWIND_TIMEOUT_MS);
	uint64_t took_ns = monotonic_ns() - sent_ns;
	free(m.p);
	struct cursor c = {.p = reply, .len = rlen};
	if (r == 0)
		note_unwinder_cpu(in, take_u64(&c), took_ns);
	if (r == 0 && !maps_known)
		remember_maps_sent(in, pc->maps_text, pc->maps_len);
	else if (r < 0)
		remember_maps_sent(in, NULL, 0);
	for (size_t i = 0; i < pc->nthreads; i++) {
		uint32_t n = r == 0 ? take_u32(&c) : 0;
		uint32_t truncated = r == 0 ? take_u32(&c) : 1;
		const void *pcs = n <= UNWIND_MAX_FRAMES_DEFAULT ? take(&c, (size_t)n * 8) : NULL;
		if (r < 0 || c.bad || !pcs) {
			/* Lost with the worker: keep the leaf so the sample counts. */
			stacks[i].n = pc->threads[i].outcome == THREAD_CAPTURED ? 1 : 0;
			stacks[i].pcs[0] = pc->threads[i].regs.rip;
			stacks[i].truncated = true;
			if (stacks[i].n)
				in->stacks_lost++;
			continue;
		}
		memcpy(stacks[i].pcs, pcs, (size_t)n * 8);
		stacks[i].n = n;
		stacks[i].truncated = truncated != 0;
	}
	free(reply);
}

/* A string of a 'Y' reply: at most 4096 bytes, copied and kept in st. */
static const char *take_string(struct cursor *c, struct py_stacks *st, size_t *cap, bool *oom)
{
	uint32_t n = take_u32(c);
	const void *p = n <= 4096 ? take(c, n) : NULL;
	if (!p) {
		c->bad = true;
		return NULL;
	}
	char *copy = dup_bytes(p, n);
	if (!copy || array_reserve((void **)&st->strings, cap, st->nstrings + 1, sizeof(char *), 64) < 0) {
		free(copy);
		*oom = true;
		return NULL;
	}
	/* Embedded NULs end the name early: the text goes on to escaping
	 * writers as a C string. */
	st->strings[st->nstrings++] = copy;
	return copy;
}

static int decode_python(struct cursor *c, struct py_stacks **ret)
{
	uint32_t nthreads = take_u32(c);
	if (c->bad || nthreads > 65536)
		return -EBADMSG;
	struct py_stacks *st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	size_t strings_cap = 0;
	bool oom = false;
	st->threads = calloc(nthreads ? nthreads : 1, sizeof(*st->threads));
	if (!st->threads)
		oom = true;
	for (uint32_t i = 0; !oom && !c->bad && i < nthreads; i++) {
		struct py_thread *t = &st->threads[i];
		const void *tid = take(c, 8);
		uint32_t flags = take_u32(c), nframes = take_u32(c);
		if (!tid || c->bad || nframes > 65536) {
			c->bad = true;
			break;
		}
		st->nthreads++;
		memcpy(&t->native_tid, tid, 8);
		t->holds_gil = flags & 1;
		t->truncated = flags & 2;
		t->moved = flags & 4;
		t->frames = calloc(nframes ? nframes : 1, sizeof(*t->frames));
		if (!t->frames) {
			oom = true;
			break;
		}
		for (uint32_t k = 0; k < nframes && !c->bad && !oom; k++) {
			struct py_frame *f = &t->frames[k];
			f->entry = take_u32(c) != 0;
			f->line = (int)take_u32(c);
			f->function = take_string(c, st, &strings_cap, &oom);
			f->file = take_string(c, st, &strings_cap, &oom);
			if (f->file)
				t->nframes++;
		}
	}
	if (oom || c->bad) {
		py_stacks_free(st);
		return oom ? -ENOMEM : -EBADMSG;
	}
	*ret = st;
	return 0;
}

int interp_python(struct interp *in, const char *maps_text, size_t maps_len, bool frames,
		  struct interp_python *ret)
{
	memset(ret, 0, sizeof(*ret));
	/* Never in this process: the interpreter's memory is the target's
	 * to forge, and only the sandboxed worker parses it. */
	if (!in->sandboxed) {
		ret->status = -ECHILD;
		return 0;
	}
	struct byte_buf m = {0};
	maps_body(&m, maps_text, maps_len);
	msg_u32(&m, frames);
	uint8_t *reply = NULL;
	size_t rlen = 0;
	/* The unwinding worker: never left busy with a warm-up (the symbols
	 * one may be, for seconds), so a sampling tick's read is not held up. */
	/* A read of the frames may run while every thread is held: a walk that
	 * takes longer than this (a hostile interpreter's lists are bounded,
	 * but long) loses the worker and its frames, not the target's time.
	 * Finding the interpreter parses ELF files: the usual patience. */
	unsigned timeout = frames ? PYTHON_READ_TIMEOUT_MS : UNWIND_TIMEOUT_MS;
	int r = m.failed ? -ENOMEM : round_trip(in, &in->unwinding, 'Y', &m, &reply, &rlen, timeout);
	free(m.p);
	if (r < 0) {
		ret->status = r == -ENOMEM ? r : -ECHILD;
		return r == -ENOMEM ? r : 0;
	}
	struct cursor c = {.p = reply, .len = rlen};
	ret->status = (int32_t)take_u32(&c);
	ret->hexversion = take_u32(&c);
	ret->eval_start = take_u64(&c);
	ret->eval_end = take_u64(&c);
	if (ret->status > 0 || ret->status < -4095 || ret->eval_end < ret->eval_start)
		c.bad = true;
	if (!c.bad)
		r = decode_python(&c, &ret->stacks);
	free(reply);
	if (c.bad || r == -EBADMSG) {
		/* A worker that answers nonsense is restarted. */
		stop_worker(&in->unwinding);
		remember_maps_sent(in, NULL, 0);
		memset(ret, 0, sizeof(*ret));
		ret->status = -EBADMSG;
		return 0;
	}
	if (r < 0) {
		ret->status = r;
		return r;
	}
	return 0;
}

void interp_prepare(struct interp *in, const char *maps_text, size_t maps_len)
{
	if (!in->sandboxed) {
		if (in->sym_maps && strcmp(in->sym_maps, maps_text) == 0)
			return;
		struct symbolizer *s = NULL;
		char *copy = strndup(maps_text, maps_len);
		in->opts.proc_pid = attach_memory_tid(in->pid);
		if (copy && symbolizer_new(in->pid, maps_text, maps_len, &in->opts, &s) == 0 &&
		    !supersedes(s, in->sym)) {
			symbolizer_free(s);
			free(copy);
		} else if (s) {
			symbolizer_free(in->sym);
			free(in->sym_maps);
			in->sym = s;
			in->sym_maps = copy;
		} else {
			free(copy);
		}
		return;
	}
	struct byte_buf m = {0};
	maps_body(&m, maps_text, maps_len);
	uint8_t *reply = NULL;
	size_t rlen = 0;
	if (!m.failed)
		round_trip(in, &in->symbols, 'P', &m, &reply, &rlen, SYMBOLIZE_TIMEOUT_MS);
	free(m.p);
	free(reply);
}

int interp_symbolize(struct interp *in, const char *maps_text, size_t maps_len,
		     const uint64_t *addrs, size_t n, struct symtab **ret)
{
	if (!in->sandboxed) {
		interp_prepare(in, maps_text, maps_len);
		struct symtab *st = symtab_new();
		if (!st)
			return -ENOMEM;
		if (in->sym && symtab_fill(st, in->sym, addrs, n) < 0) {
			symtab_free(st);
			return -ENOMEM;
		}
		*ret = st;
		return 0;
	}
	struct byte_buf m = {0};
	maps_body(&m, maps_text, maps_len);
	msg_u32(&m, (uint32_t)n);
	byte_buf_put(&m, addrs, n * 8);
	uint8_t *reply = NULL;
	size_t rlen = 0;
	int r = m.failed ? -ENOMEM : round_trip(in, &in->symbols, 'S', &m, &reply, &rlen, SYMBOLIZE_TIMEOUT_MS);
	free(m.p);
	struct symtab *st = NULL;
	if (r == 0 && rlen > 0 && symtab_decode(reply, rlen, &st) == 0) {
		free(reply);
		*ret = st;
		return 0;
	}
	free(reply);
	/* Lost or garbled: what the maps alone say (module+0xOFF frames,
	 * which a user can still give to addr2line), and the loss counted
	 * for the warnings (interp_losses). */
	in->batches_lost++;
	st = symtab_new();
	if (!st)
		return -ENOMEM;
	if (symtab_fill_from_maps(st, maps_text, maps_len, addrs, n) < 0) {
		symtab_free(st);
		return -ENOMEM;
	}
	*ret = st;
	return 0;
}

bool interp_warm(struct interp *in, const char *maps_text, size_t maps_len, const uint64_t *addrs,
		 size_t n)
{
	if (!in->sandboxed)
		return true; /* the final batch does it all, in this process */
	struct channel *ch = &in->symbols;
	drain_pending(ch, 0);
	if (ch->pending)
		return false;
	struct byte_buf m = {0};
	maps_body(&m, maps_text, maps_len);
	msg_u32(&m, (uint32_t)n);
	byte_buf_put(&m, addrs, n * 8);
	bool sent = !m.failed && send_request(in, ch, 'W', &m) == 0;
	free(m.p);
	ch->pending = sent;
	return sent;
}

bool interp_warm_busy(struct interp *in)
{
	drain_pending(&in->symbols, 0);
	return in->symbols.pending;
}

/* A live worker's on-CPU time so far, in ns (0 if unknown). The workers are
 * not waited for at the end (interp_free), so their CPU never reaches the
 * tool's rusage: the manifest says it instead. (A worker that crashed and
 * was restarted was waited for: its CPU is in the tool's rusage.) */
static uint64_t worker_cpu_ns(const struct channel *ch)
{
	char path[64], buf[128];
	if (ch->worker <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)ch->worker);
	return attach_read_small_file_at(AT_FDCWD, path, buf, sizeof(buf)) ? strtoull(buf, NULL, 10) : 0;
}

void interp_yield_to_target(struct interp *in, bool keep_pace)
{
	/* Both workers at the main thread's level, never SCHED_IDLE (see
	 * tool_priority.c): a leak dump during the capture symbolizes through
	 * the symbols worker and must not starve on a busy box. */
	if (in->unwinding.worker > 0)
		tool_priority_yield(in->unwinding.worker, keep_pace);
	if (in->symbols.worker > 0)
		tool_priority_yield(in->symbols.worker, keep_pace);
}

void interp_normal_priority(struct interp *in)
{
	if (in->unwinding.worker > 0)
		tool_priority_normal(in->unwinding.worker);
	if (in->symbols.worker > 0)
		tool_priority_normal(in->symbols.worker);
}

uint64_t interp_unwinder_cpu_ns(struct interp *in)
{
	return in->uw_cpu_ns;
}

/* The Go workers lost: its first start (on first use) is no restart, and
 * one lost by the last request of a capture is never restarted. */
static unsigned go_restarts(const struct interp *in)
{
	return in->go.lost;
}

int interp_go_call(struct interp *in, uint8_t kind, const struct byte_buf *body, uint8_t **reply,
		   size_t *reply_len, unsigned timeout_ms)
{
	*reply = NULL;
	*reply_len = 0;
	/* Never in this process: a Go binary and its runtime's memory are
	 * the target's to forge. */
	if (!in->sandboxed)
		return -ECHILD;
	if (body->failed)
		return -ENOMEM;
	return round_trip(in, &in->go, kind, body, reply, reply_len, timeout_ms);
}

int interp_go_call_running(struct interp *in, uint8_t kind, const struct byte_buf *body, uint8_t **reply,
			   size_t *reply_len, unsigned timeout_ms)
{
	*reply = NULL;
	*reply_len = 0;
	if (in->go.fd < 0)
		return -ECHILD;
	return interp_go_call(in, kind, body, reply, reply_len, timeout_ms);
}

void interp_go_done(struct interp *in)
{
	/* Waited for: it parsed one ELF header and holds little, and a
	 * zombie would stay our child (and in /proc's list of them) for the
	 * whole capture. */
	unsigned lost = in->go.lost;
	stop_worker(&in->go);
	in->go.lost = lost;
}

void interp_losses(const struct interp *in, struct interp_losses *ret)
{
	ret->worker_restarts = in->unwinding.restarts + in->symbols.restarts + go_restarts(in);
	ret->stacks_lost = in->stacks_lost;
	ret->symbol_batches_lost = in->batches_lost;
	const struct channel *chs[] = {&in->unwinding, &in->symbols, &in->go};
	ret->denied = 0;
	ret->denied_syscall = -1;
	for (size_t i = 0; i < 3; i++) {
		ret->denied += chs[i]->denied;
		if (chs[i]->denied)
			ret->denied_syscall = chs[i]->denied_syscall;
	}
}

/* One field of /proc/PID/status ("Uid:", ...): its text up to the end of
 * the line, or "" if unknown. */
static void status_field(const char *status, const char *name, char *out, size_t size)
{
	const char *p = status ? strstr(status, name) : NULL;
	out[0] = '\0';
	if (!p)
		return;
	p += strlen(name);
	p += strspn(p, " \t");
	size_t n = strcspn(p, "\n");
	snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), p);
}

/* Is a worker's namespace of this kind another than ours? 1 yes, 0 no,
 * -1 unknown (a non-root tool may not read the links of a worker that
 * entered a user namespace of its own). */
static int own_namespace(pid_t worker, const char *kind)
{
	char a[64], b[64], la[64] = "", lb[64] = "";
	snprintf(a, sizeof(a), "/proc/%d/ns/%s", (int)worker, kind);
	snprintf(b, sizeof(b), "/proc/self/ns/%s", kind);
	ssize_t na = readlink(a, la, sizeof(la) - 1), nb = readlink(b, lb, sizeof(lb) - 1);
	if (na <= 0 || nb <= 0)
		return -1;
	return strcmp(la, lb) != 0;
}

/* The sandbox as the kernel shows it for a live worker (never as the
 * worker says: it may be compromised), and what the worker said of the
 * steps that failed. */
static void describe_sandbox(const struct interp *in, cJSON *o)
{
	const struct channel *ch = in->unwinding.worker > 0 ? &in->unwinding : &in->symbols;
	cJSON *sb = cJSON_AddObjectToObject(o, "sandbox");
	if (!sb)
		return;
	struct interp_losses l;
	interp_losses(in, &l);
	cJSON_AddNumberToObject(sb, "workers_stopped_by_filter", l.denied);
	if (l.denied)
		cJSON_AddNumberToObject(sb, "denied_syscall", l.denied_syscall);
	if (!in->sandboxed || ch->worker <= 0) {
		cJSON_AddStringToObject(sb, "state", in->sandboxed ? "no live worker" : "in process");
		return;
	}
	char path[64], text[4096], field[128];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)ch->worker);
	const char *status = attach_read_small_file_at(AT_FDCWD, path, text, sizeof(text)) ? text : NULL;
	status_field(status, "Uid:", field, sizeof(field));
	cJSON_AddNumberToObject(sb, "uid", field[0] ? atof(field) : -1);
	status_field(status, "CapEff:", field, sizeof(field));
	cJSON_AddStringToObject(sb, "cap_eff", field);
	status_field(status, "NoNewPrivs:", field, sizeof(field));
	cJSON_AddNumberToObject(sb, "no_new_privs", field[0] ? atof(field) : -1);
	status_field(status, "Seccomp:", field, sizeof(field));
	cJSON_AddNumberToObject(sb, "seccomp", field[0] ? atof(field) : -1);
	static const char *const kinds[] = {"mnt", "net", "ipc", "user"};
	int own[4];
	bool unknown = false;
	for (size_t i = 0; i < 4; i++) {
		own[i] = own_namespace(ch->worker, kinds[i]);
		unknown |= own[i] < 0;
	}
	/* Not for us to read: the worker's account, and said to be. It
	 * enters mnt, net and ipc, and user only when the tool is not root. */
	int32_t e = ch->status ? ch->status->namespaces_errno : -1;
	for (size_t i = 0; unknown && i < 4; i++)
		own[i] = e == 0 && (i < 3 || geteuid() != 0);
	cJSON *ns = cJSON_AddArrayToObject(sb, "namespaces");
	for (size_t i = 0; ns && i < 4; i++)
		if (own[i] > 0)
			cJSON_AddItemToArray(ns, cJSON_CreateString(kinds[i]));
	if (unknown)
		cJSON_AddStringToObject(sb, "namespaces_from",
					"the worker's own account (its /proc/PID/ns is not ours to read)");
	if (e > 0)
		cJSON_AddStringToObject(sb, "namespaces_refused", strerror(e));
	e = ch->status ? ch->status->uid_errno : -1;
	if (e > 0)
		cJSON_AddStringToObject(sb, "privileges_kept", strerror(e));
}

void interp_describe(const struct interp *in, cJSON *o)
{
	double cpu_ns = (double)(worker_cpu_ns(&in->unwinding) + worker_cpu_ns(&in->symbols) +
				 worker_cpu_ns(&in->go));
	cJSON_AddNumberToObject(o, "worker_cpu_ms", cpu_ns / 1e6);
	cJSON_AddBoolToObject(o, "sandboxed", in->sandboxed);
	cJSON_AddNumberToObject(o, "worker_restarts",
				in->unwinding.restarts + in->symbols.restarts + go_restarts(in));
	cJSON_AddNumberToObject(o, "stacks_lost", (double)in->stacks_lost);
	cJSON_AddNumberToObject(o, "symbol_batches_lost", (double)in->batches_lost);
	describe_sandbox(in, o);
	/* "names": no file:line or inline frames were looked for. */
	cJSON_AddStringToObject(o, "symbols", in->opts.names_only ? "names" : "full");
}
