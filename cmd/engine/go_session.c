/* The tracer's side of a Go target: every request goes to the sandboxed Go
 * worker (symbolize/worker/go_serve.h), which parsed the binary and reads
 * the runtime; here only its answers are checked and written. */
#include "cmd/engine/go_session.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/text.h"
#include "cmd/engine/internal.h"
#include "symbolize/worker/go_serve.h"
#include "symbolize/worker/wire.h"

/* How long each request may take before the worker counts as lost. The
 * capture runs while every thread of the target is held: its bound is the
 * longest the target can be kept stopped by a hung worker, and never more
 * than the watchdog leaves (held_budget). Opening parses the binary (a
 * large one under ASan on a loaded box: seconds). */
#define OPEN_TIMEOUT_MS 60000
#define HELD_TIMEOUT_MS 5000
/* Less than this left before the watchdog: the goroutines are not read. */
#define HELD_MIN_MS 50
#define COUNTERS_TIMEOUT_MS 1000
#define LONG_TIMEOUT_MS 300000
#define MAX_HELD_THREADS 4096

struct go_session {
	struct interp *interp;
	pid_t ns_pid;
	bool listable;
	cJSON *describe;  /* the manifest's target.go, as the worker gave it */
	bool armed;
	bool held;        /* the last armed capture held the threads: the worker read them */
	int capture_lost; /* the worker was lost during the last capture: why */
	unsigned held_timeout_ms; /* what the last capture's request was given */
	char warning[512]; /* the last capture's goroutine_capture.warning, "" if none */
};

/* A request's body, starting as every one does (go_serve.h). */
static void body_start(struct go_session *g, struct byte_buf *m)
{
	msg_u32(m, (uint32_t)g->ns_pid);
}

static int call(struct go_session *g, enum go_request kind, struct byte_buf *body, uint8_t **reply,
		size_t *len, unsigned timeout_ms)
{
	int r = interp_go_call(g->interp, (uint8_t)kind, body, reply, len, timeout_ms);
	free(body->p);
	return r;
}

struct go_session *go_session_open(struct interp *in, pid_t ns_pid)
{
	struct go_session *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->interp = in;
	g->ns_pid = ns_pid;
	struct byte_buf m = {0};
	body_start(g, &m);
	uint8_t *reply;
	size_t len;
	int r = call(g, GO_REQ_OPEN, &m, &reply, &len, OPEN_TIMEOUT_MS);
	struct cursor c = {.p = reply, .len = len};
	int status = r == 0 ? (int32_t)take_u32(&c) : r;
	g->listable = take_u32(&c) != 0;
	size_t jlen;
	const char *json = take_bytes(&c, 65536, &jlen);
	g->describe = cJSON_CreateObject();
	/* Not a Go program (or the worker could not tell): no Go session,
	 * and no third worker for the rest of the capture. */
	if (status < 0 || c.bad || !g->describe || go_json_copy(g->describe, json, jlen) < 0) {
		free(reply);
		go_session_free(g);
		interp_go_done(in);
		return NULL;
	}
	free(reply);
	return g;
}

void go_session_free(struct go_session *g)
{
	if (!g)
		return;
	cJSON_Delete(g->describe);
	free(g);
}

void go_session_describe(struct go_session *g, cJSON *target)
{
	cJSON *copy = cJSON_Duplicate(g->describe, true);
	if (copy && !cJSON_AddItemToObject(target, "go", copy))
		cJSON_Delete(copy);
}

/* How long the held request may take, and how long the worker may read
 * (it must still answer, and we release the threads, before the watchdog
 * fires): a slow read then costs the goroutines that were not read, or at
 * worst this capture's goroutines, never the bundle. Without a watchdog,
 * the hung-worker bound alone. */
static void held_budget(unsigned *ret_timeout_ms, unsigned *ret_worker_ms)
{
	unsigned left = attach_watchdog_left_ms(), timeout = HELD_TIMEOUT_MS;
	if (left != UINT_MAX) {
		/* A quarter of what is left (at least 50 ms) for the release,
		 * the reply and a late scheduler. */
		unsigned margin = left / 4 > HELD_MIN_MS ? left / 4 : HELD_MIN_MS;
		unsigned usable = left > margin ? left - margin : 0;
		if (usable < timeout)
			timeout = usable;
	}
	/* The worker stops reading a fifth earlier, so that its answer,
	 * goroutines cut short and all, arrives in time. */
	unsigned slack = timeout / 5 > 10 ? timeout / 5 : 10;
	*ret_timeout_ms = timeout;
	*ret_worker_ms = timeout > slack ? timeout - slack : 0;
}

static void while_held(void *ctx, const struct process_capture *pc)
{
	struct go_session *g = ctx;
	unsigned timeout_ms, worker_ms;
	held_budget(&timeout_ms, &worker_ms);
	g->held_timeout_ms = timeout_ms;
	g->held = true;
	if (timeout_ms < HELD_MIN_MS) {
		/* The watchdog is about to fire (stopping the threads took its
		 * time): nothing is asked, the goroutines are lost, said. */
		g->capture_lost = -ETIME;
		return;
	}
	struct byte_buf m = {0};
	body_start(g, &m);
	msg_u32(&m, worker_ms);
	size_t count_at = m.len;
	uint32_t n = 0;
	msg_u32(&m, 0);
	for (size_t i = 0; i < pc->nthreads && n < MAX_HELD_THREADS; i++) {
		const struct thread_capture *tc = &pc->threads[i];
		if (tc->outcome != THREAD_CAPTURED)
			continue;
		msg_u32(&m, (uint32_t)tc->tid);
		msg_u64(&m, tc->regs.rip);
		msg_u64(&m, tc->regs.rsp);
		msg_u64(&m, tc->regs.rbp);
		msg_u64(&m, tc->regs.fs_base);
		n++;
	}
	if (!m.failed)
		memcpy(m.p + count_at, &n, 4);
	uint8_t *reply;
	size_t len;
	/* The statuses of the reply are the worker's to report in the
	 * manifest (GO_REQ_WRITE); here only whether it was lost. Only the
	 * worker armed for it: a new one would parse the binary in the pause. */
	g->capture_lost = m.failed ? -ENOMEM
				   : interp_go_call_running(g->interp, GO_REQ_HELD, &m, &reply, &len,
							    timeout_ms);
	free(m.p);
	free(reply);
}

void go_session_released(struct go_session *g)
{
	if (!g || !g->armed || !g->held || g->capture_lost)
		return;
	struct byte_buf m = {0};
	body_start(g, &m);
	uint8_t *reply;
	size_t len;
	/* A worker lost here loses the stacks it held: the write says so. */
	g->capture_lost = call(g, GO_REQ_RELEASED, &m, &reply, &len, LONG_TIMEOUT_MS);
	free(reply);
}

void go_session_arm(struct go_session *g, struct attach_options *opts)
{
	if (!g->listable)
		return;
	struct byte_buf m = {0};
	body_start(g, &m);
	uint8_t *reply;
	size_t len;
	/* The worker faults in the heap the capture will fill. A worker lost
	 * here is asked once more (the new one parses the binary now, not
	 * inside the pause); lost again, the capture holds nothing for Go. */
	int r = call(g, GO_REQ_ARM, &m, &reply, &len, LONG_TIMEOUT_MS);
	free(reply);
	if (r < 0 && r != -ENOMEM) {
		struct byte_buf again = {0};
		body_start(g, &again);
		r = call(g, GO_REQ_ARM, &again, &reply, &len, LONG_TIMEOUT_MS);
		free(reply);
	}
	g->armed = true;
	g->held = false;
	g->warning[0] = '\0';
	g->capture_lost = r < 0 ? r : 0;
	if (r < 0)
		return;
	opts->while_held = while_held;
	opts->while_held_ctx = g;
}

/* For the manifest: a lost worker, in words. */
static void describe_lost(struct go_session *g, cJSON *manifest_go, int why)
{
	if (!manifest_go)
		return;
	/* nothing of this capture's profiles either */
	static const char *const said[] = {"goroutine_capture", "heap_profile", "block_profile",
					   "mutex_profile"};
	for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++)
		cJSON_DeleteItemFromObject(manifest_go, said[i]);
	cJSON *o = cJSON_AddObjectToObject(manifest_go, "goroutine_capture");
	char text[200];
	if (why == -ETIME || why == -ETIMEDOUT)
		/* Said apart from a crash: the read took longer than the hold
		 * may last (held_budget), and was abandoned for the target. */
		snprintf(text, sizeof(text),
			 "no goroutines: reading them would have held the target past %u ms "
			 "(the watchdog's limit leaves no more)",
			 g->held_timeout_ms);
	else
		snprintf(text, sizeof(text), "Go interpretation worker lost (%s): no goroutines",
			 strerror(-why));
	cJSON_AddStringToObject(o, "error", text);
	snprintf(g->warning, sizeof(g->warning), "%s", text);
	/* capture_lost stays set until the next capture is armed: the dumps
	 * that follow ask no new worker for what this one lost. */
}

static int write_member(struct bundle *b, const char *prefix, const char *name,
			const char *bytes, size_t len)
{
	char path[256];
	snprintf(path, sizeof(path), "%s%s", prefix, name);
	return bundle_write_member(b, path, bytes, len);
}

int go_session_write(struct go_session *g, struct bundle *b, const char *prefix,
		     const struct symtab *st, cJSON *manifest_go)
{
	if (!g || !g->listable || !g->armed)
		return 0;
	if (g->capture_lost) {
		describe_lost(g, manifest_go, g->capture_lost);
		return 0;
	}
	/* The capture failed before it held the threads: the worker's
	 * goroutines are an earlier capture's, never to be shown as this
	 * one's. */
	if (!g->held) {
		if (manifest_go) {
			cJSON_DeleteItemFromObject(manifest_go, "goroutine_capture");
			cJSON *o = cJSON_AddObjectToObject(manifest_go, "goroutine_capture");
			cJSON_AddStringToObject(o, "error", "the threads were not held: no goroutines read");
		}
		return 0;
	}
	struct byte_buf m = {0};
	body_start(g, &m);
	uint8_t *enc = NULL;
	size_t enclen = 0;
	if (symtab_encode(st, &enc, &enclen) < 0) {
		free(m.p);
		return -ENOMEM;
	}
	byte_buf_put(&m, enc, enclen);
	free(enc);
	uint8_t *reply;
	size_t len;
	int r = call(g, GO_REQ_WRITE, &m, &reply, &len, LONG_TIMEOUT_MS);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		describe_lost(g, manifest_go, r);
		return 0;
	}
	/* The whole reply is checked before anything of it is kept: the
	 * manifest's fields, then the members, each a name of ours, once. */
	static const char *const members[] = {"goroutine.txt", "goroutine.labels.txt", "goroutine.pprof",
					      "threadcreate.pprof", "heap.pprof", "allocs.pprof",
					      "block.pprof", "mutex.pprof"};
	enum { NMEMBERS = sizeof(members) / sizeof(members[0]) };
	struct {
		const char *bytes;
		size_t len;
		bool there;
	} got[NMEMBERS] = {{0}};
	struct cursor c = {.p = reply, .len = len};
	size_t jlen;
	const char *json = take_bytes(&c, 1 << 20, &jlen);
	while (!c.bad && c.off < c.len) {
		size_t nlen, blen;
		const char *name = take_bytes(&c, 64, &nlen);
		const char *bytes = take_bytes(&c, c.len, &blen);
		size_t i = 0;
		while (!c.bad && i < NMEMBERS && (strlen(members[i]) != nlen || memcmp(members[i], name, nlen)))
			i++;
		if (c.bad || i == NMEMBERS || got[i].there) {
			c.bad = true;
			break;
		}
		got[i].bytes = bytes;
		got[i].len = blen;
		got[i].there = true;
	}
	cJSON *fields = cJSON_CreateObject();
	int jr = !fields ? -ENOMEM : c.bad ? -EBADMSG : go_json_copy(fields, json, jlen);
	if (jr == -ENOMEM) {
		cJSON_Delete(fields);
		free(reply);
		return jr;
	}
	if (jr < 0) {
		/* Nonsense from the worker: none of it is kept, the worker is
		 * stopped (a new one answers the next request), the loss said. */
		cJSON_Delete(fields);
		free(reply);
		interp_go_done(g->interp);
		describe_lost(g, manifest_go, -EBADMSG);
		return 0;
	}
	/* The one line a cut-short read earns at the end of the capture. */
	const char *warning = cJSON_GetStringValue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(fields, "goroutine_capture"), "warning"));
	snprintf(g->warning, sizeof(g->warning), "%s", warning ? warning : "");
	while (manifest_go && fields->child) {
		cJSON *it = cJSON_DetachItemViaPointer(fields, fields->child);
		cJSON_DeleteItemFromObject(manifest_go, it->string);
		cJSON_AddItemToObject(manifest_go, it->string, it); /* copies the key first */
	}
	for (size_t i = 0; i < NMEMBERS && r >= 0; i++)
		if (got[i].there)
			r = write_member(b, prefix, members[i], got[i].bytes, got[i].len);
	cJSON_Delete(fields);
	free(reply);
	return r;
}

const char *go_session_warning(const struct go_session *g)
{
	return g && g->warning[0] ? g->warning : NULL;
}

/* One line of the worker's dump, escaped for the terminal but for its
 * tabs, which the runtime's format has. */
static void print_escaped_line(FILE *f, char *line)
{
	for (char *tab; (tab = strchr(line, '\t')); line = tab + 1) {
		*tab = '\0';
		escape_text_put(line, f);
		fputc('\t', f);
	}
	escape_text_put(line, f);
}

/* A dump's request about the last armed capture: 0 and *reply, or -1
 * when that capture read no goroutines (none to list, lost, not held) or
 * the worker did not answer. */
static int ask_about_capture(struct go_session *g, enum go_request kind, uint8_t **reply, size_t *len)
{
	if (!g || !g->listable || !g->armed || !g->held || g->capture_lost)
		return -1;
	struct byte_buf m = {0};
	body_start(g, &m);
	return call(g, kind, &m, reply, len, LONG_TIMEOUT_MS) < 0 ? -1 : 0;
}

long go_session_print(struct go_session *g, FILE *f)
{
	uint8_t *reply;
	size_t len;
	if (ask_about_capture(g, GO_REQ_DUMP_TEXT, &reply, &len) < 0)
		return 0;
	struct cursor c = {.p = reply, .len = len};
	uint64_t shown = take_u64(&c), hidden = take_u64(&c);
	size_t tlen;
	const char *text = take_bytes(&c, c.len, &tlen);
	char *copy = !c.bad && tlen ? strndup(text, tlen) : NULL;
	free(reply);
	if (!copy)
		return 0;
	/* The runtime's own dump leaves its system goroutines out; so do we. */
	fprintf(f,
		"\nGoroutines: %llu, as the Go runtime's own dump (debug=2) prints them (%llu of "
		"the runtime's own not shown)\n\n",
		(unsigned long long)shown, (unsigned long long)hidden);
	char *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		print_escaped_line(f, line);
		fputc('\n', f);
	}
	free(copy);
	return (long)(shown > (uint64_t)1 << 40 ? 0 : shown);
}

int go_session_json(struct go_session *g, cJSON *doc)
{
	uint8_t *reply;
	size_t len;
	if (ask_about_capture(g, GO_REQ_DUMP_JSON, &reply, &len) < 0)
		return 0;
	struct cursor c = {.p = reply, .len = len};
	size_t jlen;
	const char *json = take_bytes(&c, c.len, &jlen);
	cJSON *src = !c.bad && jlen ? cJSON_ParseWithLength(json, jlen) : NULL;
	free(reply);
	/* Only the two members of this shape: what the worker says goes to
	 * the user's terminal as JSON (strings escaped by the printer). */
	cJSON *total = cJSON_DetachItemFromObject(src, "goroutines_total");
	cJSON *list = cJSON_DetachItemFromObject(src, "goroutines");
	cJSON_Delete(src);
	if (cJSON_IsNumber(total) && cJSON_IsArray(list)) {
		cJSON_AddItemToObject(doc, "goroutines_total", total);
		cJSON_AddItemToObject(doc, "goroutines", list);
		return 0;
	}
	cJSON_Delete(total);
	cJSON_Delete(list);
	return 0;
}

void go_session_counters(struct go_session *g, int64_t *goroutines, int64_t *heap_live)
{
	*goroutines = *heap_live = -1;
	struct byte_buf m = {0};
	body_start(g, &m);
	uint8_t *reply;
	size_t len;
	if (call(g, GO_REQ_COUNTERS, &m, &reply, &len, COUNTERS_TIMEOUT_MS) < 0)
		return;
	struct cursor c = {.p = reply, .len = len};
	int64_t n = (int64_t)take_u64(&c), live = (int64_t)take_u64(&c);
	if (!c.bad && c.off == c.len && n >= -1 && live >= -1) {
		*goroutines = n;
		*heap_live = live;
	}
	free(reply);
}

struct unnamed {
	uint64_t *addrs;
	size_t n, cap;
	int error;
};

/* First pass of symtab_name_unnamed: only collects what it is asked. */
static size_t collect_unnamed(void *arg, uint64_t addr, struct sym_frame *out, size_t max)
{
	(void)out;
	(void)max;
	struct unnamed *u = arg;
	if (array_reserve(&u->addrs, &u->cap, u->n + 1, sizeof(uint64_t), 256) < 0)
		u->error = -ENOMEM;
	else
		u->addrs[u->n++] = addr;
	return 0;
}

static size_t name_from_reply(void *arg, uint64_t addr, struct sym_frame *out, size_t max)
{
	return go_names_frames(arg, addr, out, max);
}

int go_session_name_unnamed(struct go_session *g, struct symtab *st)
{
	if (!g)
		return 0;
	struct unnamed u = {0};
	int r = symtab_name_unnamed(st, collect_unnamed, &u);
	if (r < 0 || u.error < 0 || u.n == 0) {
		free(u.addrs);
		return r < 0 ? r : u.error;
	}
	struct byte_buf m = {0};
	body_start(g, &m);
	msg_u32(&m, (uint32_t)u.n);
	byte_buf_put(&m, u.addrs, u.n * 8);
	uint8_t *reply;
	size_t len;
	r = call(g, GO_REQ_NAMES, &m, &reply, &len, LONG_TIMEOUT_MS);
	struct go_names *names = NULL;
	/* A lost or confused worker leaves them unnamed (module+0xOFF). */
	if (r == 0)
		r = go_names_decode(reply, len, u.addrs, u.n, &names);
	free(reply);
	free(u.addrs);
	if (r == 0)
		r = symtab_name_unnamed(st, name_from_reply, names);
	go_names_free(names);
	return r == -ENOMEM ? r : 0;
}
