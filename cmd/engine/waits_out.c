/* waits.h's text and JSON: what a thread waits for, the deadlocks, the
 * threads others wait for. Every name a target chose (a thread's, a
 * path, a symbol) is escaped (text) or redacted (names, JSON). */
#include "cmd/engine/waits.h"
#include "cmd/engine/fd_out.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/redact.h"
#include "bundle/text.h"

static const char *kind_word(enum wait_kind k)
{
	switch (k) {
	case WAIT_MUTEX: return "mutex";
	case WAIT_RWLOCK_READ: return "rwlock (to read)";
	case WAIT_RWLOCK_WRITE: return "rwlock (to write)";
	case WAIT_CONDVAR: return "condition variable";
	case WAIT_SEMAPHORE: return "semaphore";
	case WAIT_JOIN: return "thread exit";
	case WAIT_FUTEX: return "futex";
	case WAIT_FD: return "fd";
	case WAIT_FDSET: return "fds";
	case WAIT_CHILD: return "child";
	case WAIT_SIGNAL: return "signal";
	case WAIT_SLEEP: return "sleep";
	case WAIT_RESTART: return "restarted call";
	default: return "none";
	}
}

/* JSON's kind: one word. */
static const char *kind_key(enum wait_kind k)
{
	switch (k) {
	case WAIT_RWLOCK_READ: return "rwlock_read";
	case WAIT_RWLOCK_WRITE: return "rwlock_write";
	case WAIT_CONDVAR: return "condvar";
	case WAIT_JOIN: return "thread_exit";
	case WAIT_FDSET: return "fdset";
	case WAIT_RESTART: return "restart_syscall";
	default: return kind_word(k);
	}
}

static void put_duration(FILE *f, uint64_t ns)
{
	uint64_t ms = ns / 1000000;
	if (ms < 1000)
		fprintf(f, "%" PRIu64 "ms", ms);
	else if (ms < 60000)
		fprintf(f, "%.1fs", (double)ms / 1000.0);
	else if (ms < 3600000)
		fprintf(f, "%" PRIu64 "m%02" PRIu64 "s", ms / 60000, ms / 1000 % 60);
	else
		fprintf(f, "%" PRIu64 "h%02" PRIu64 "m", ms / 3600000, ms / 60000 % 60);
}

static const struct thread_capture *thread_of(const struct process_capture *pc, pid_t tid)
{
	long i = waits_thread_index(pc, tid);
	return i >= 0 ? &pc->threads[i] : NULL;
}

static void put_thread(FILE *f, const struct process_capture *pc, pid_t tid)
{
	const struct thread_capture *tc = thread_of(pc, tid);
	char comm[BUNDLE_NAME_TEXT_SIZE];
	fprintf(f, "%d", (int)tid);
	if (tc)
		fprintf(f, " (%s)", bundle_target_name(tc->comm, comm, sizeof(comm)));
}

static void put_lock_name(FILE *f, const struct thread_wait *w)
{
	if (w->name) {
		escape_text_put(w->name, f);
		if (w->name_offset)
			fprintf(f, "%+" PRId64, w->name_offset);
		fputc(' ', f);
	}
	fprintf(f, "(0x%" PRIx64 ")", w->addr);
}

/* What thread i waits for, without the time. */
static void put_what(FILE *f, const struct process_capture *pc, const struct wait_graph *g, size_t i)
{
	const struct thread_wait *w = &g->waits[i];
	const struct thread_capture *tc = &pc->threads[i];
	switch (w->kind) {
	case WAIT_MUTEX:
	case WAIT_RWLOCK_READ:
	case WAIT_RWLOCK_WRITE:
	case WAIT_FUTEX:
		fprintf(f, "%s ", kind_word(w->kind));
		put_lock_name(f, w);
		if (w->owner) {
			fputs(" held by ", f);
			put_thread(f, pc, w->owner);
		} else if (w->readers) {
			fprintf(f, " held by %u reader%s", w->readers, w->readers == 1 ? "" : "s");
		}
		break;
	case WAIT_CONDVAR:
		fputs("condition variable ", f);
		put_lock_name(f, w);
		fputs(" (nobody holds one: it waits to be signalled)", f);
		break;
	case WAIT_SEMAPHORE:
		fputs("semaphore ", f);
		put_lock_name(f, w);
		if (w->sem_value >= 0)
			fprintf(f, ", value %ld", w->sem_value);
		fputs(" (nobody holds one)", f);
		break;
	case WAIT_JOIN:
		fputs("thread ", f);
		if (w->owner)
			put_thread(f, pc, w->owner);
		else
			fputs("?", f);
		fputs(" to exit (pthread_join)", f);
		break;
	case WAIT_FD:
		fprintf(f, "%s on fd %d", attach_syscall_name(tc->syscall_nr) ? attach_syscall_name(tc->syscall_nr) : "a call", w->fd);
		if (w->fdi) {
			fputs(": ", f);
			fd_out_text(f, w->fdi);
		} else {
			fputs(" (no longer open)", f);
		}
		break;
	case WAIT_FDSET:
		fprintf(f, "%s on fd", attach_syscall_name(tc->syscall_nr));
		for (size_t k = 0; k < w->nfds; k++) {
			fputs(k ? ", " : " ", f);
			if (k < 4)
				fd_out_brief(f, pc->pid, w->fds[k]);
			else
				fprintf(f, "%d", w->fds[k]);
		}
		if (!w->nfds)
			fputs(" (none read)", f);
		if (w->fds_more)
			fprintf(f, " and %zu more", w->fds_more);
		break;
	case WAIT_CHILD:
		if (w->child > 0)
			fprintf(f, "child %ld to change state", w->child);
		else
			fputs("any child to change state", f);
		break;
	case WAIT_SIGNAL:
		fputs("a signal", f);
		break;
	case WAIT_SLEEP:
		fputs("the end of a sleep", f);
		if (w->sleep_ns) {
			fputs(" of ", f);
			put_duration(f, w->sleep_ns);
		}
		break;
	case WAIT_RESTART:
		fputs("the rest of a call a stop interrupted (restart_syscall", f);
		if (w->continues) {
			fputs(", in ", f);
			escape_text_put(w->continues, f);
		}
		fputc(')', f);
		break;
	default:
		break;
	}
}

void waits_print_thread(FILE *f, const char *indent, const struct process_capture *pc,
			const struct wait_graph *g, size_t i)
{
	const struct thread_wait *w = &g->waits[i];
	const struct thread_capture *tc = &pc->threads[i];
	bool ran = tc->not_run_error == 0;
	if (w->kind == WAIT_NONE && !ran)
		return;
	fputs(indent, f);
	if (w->kind != WAIT_NONE) {
		fputs("waits for ", f);
		put_what(f, pc, g, i);
		if (w->unknown[0])
			fprintf(f, "; %s", w->unknown);
	}
	if (ran) {
		fputs(w->kind != WAIT_NONE ? "; not run for >= " : "not run for >= ", f);
		put_duration(f, tc->not_run_ns);
	}
	fputc('\n', f);
}

static bool in_cycle(const struct wait_graph *g, size_t i)
{
	for (size_t k = 0; k < g->ncycles; k++)
		for (size_t j = 0; j < g->cycles[k].len; j++)
			if (g->cycle_members[g->cycles[k].first + j] == i)
				return true;
	return false;
}

/* "thread A waits for X held by B, which waits for Y held by A" */
static void put_cycle(FILE *f, const struct process_capture *pc, const struct wait_graph *g,
		      const struct wait_cycle *c)
{
	for (size_t j = 0; j < c->len; j++) {
		size_t i = g->cycle_members[c->first + j];
		if (j == 0) {
			fputs("thread ", f);
			put_thread(f, pc, pc->threads[i].tid);
		}
		fputs(j ? ", which waits for " : " waits for ", f);
		put_what(f, pc, g, i);
	}
}

bool waits_print_summary(FILE *f, const struct process_capture *pc, const struct wait_graph *g)
{
	bool any = false;
	for (size_t k = 0; k < g->ncycles; k++) {
		fputs("DEADLOCK: ", f);
		put_cycle(f, pc, g, &g->cycles[k]);
		fputc('\n', f);
		any = true;
	}
	/* The threads others wait for, outside the cycles: one line per
	 * (owner, lock), with what the owner itself is doing. */
	for (size_t i = 0; i < g->n; i++) {
		const struct thread_wait *w = &g->waits[i];
		if (!w->owner || in_cycle(g, i))
			continue;
		bool first = true;
		size_t count = 0;
		for (size_t j = 0; j < g->n; j++) {
			if (g->waits[j].owner == w->owner && g->waits[j].addr == w->addr &&
			    g->waits[j].kind == w->kind) {
				first = first && j >= i;
				count++;
			}
		}
		if (!first)
			continue;
		fprintf(f, "%zu thread%s wait%s for ", count, count == 1 ? "" : "s", count == 1 ? "s" : "");
		put_what(f, pc, g, i);
		const struct thread_capture *owner = thread_of(pc, w->owner);
		size_t oi = owner ? (size_t)(owner - pc->threads) : 0;
		if (owner && owner->state == 'R') {
			fputs(", which is running", f);
		} else if (owner) {
			if (owner->not_run_error == 0) {
				fputs(", which has not run for >= ", f);
				put_duration(f, owner->not_run_ns);
			}
			if (g->waits[oi].kind != WAIT_NONE) {
				fputs(owner->not_run_error == 0 ? " and waits for " : ", which waits for ", f);
				put_what(f, pc, g, oi);
			}
		}
		fputc('\n', f);
		any = true;
	}
	return any;
}

/* ---- JSON ---- */

void waits_thread_json(cJSON *t, const struct process_capture *pc, const struct wait_graph *g,
		       size_t i)
{
	const struct thread_wait *w = &g->waits[i];
	const struct thread_capture *tc = &pc->threads[i];
	if (tc->not_run_error == 0)
		cJSON_AddNumberToObject(t, "not_run_for_ms", (double)(tc->not_run_ns / 1000000));
	if (w->kind == WAIT_NONE)
		return;
	cJSON *o = cJSON_AddObjectToObject(t, "waits_for");
	char addr[24];
	cJSON_AddStringToObject(o, "kind", kind_key(w->kind));
	if (w->addr) {
		snprintf(addr, sizeof(addr), "0x%" PRIx64, w->addr);
		cJSON_AddStringToObject(o, "address", addr);
	}
	if (w->name) {
		cJSON_AddStringToObject(o, "name", w->name);
		if (w->name_offset)
			cJSON_AddNumberToObject(o, "name_offset", (double)w->name_offset);
	}
	if (w->owner)
		cJSON_AddNumberToObject(o, "owner_tid", w->owner);
	if (w->readers)
		cJSON_AddNumberToObject(o, "held_by_readers", w->readers);
	if (w->unknown[0])
		cJSON_AddStringToObject(o, "owner_unknown", w->unknown);
	if (w->kind == WAIT_SEMAPHORE && w->sem_value >= 0)
		cJSON_AddNumberToObject(o, "value", (double)w->sem_value);
	if (w->kind == WAIT_FD) {
		cJSON_AddNumberToObject(o, "fd", w->fd);
		if (w->fdi)
			cJSON_AddItemToObject(o, "fd_is", fd_out_json(w->fdi));
	}
	if (w->kind == WAIT_FDSET) {
		cJSON *fds = cJSON_AddArrayToObject(o, "fds");
		for (size_t k = 0; k < w->nfds; k++)
			cJSON_AddItemToArray(fds, cJSON_CreateNumber(w->fds[k]));
		cJSON_AddNumberToObject(o, "fds_more", (double)w->fds_more);
	}
	if (w->kind == WAIT_CHILD)
		cJSON_AddNumberToObject(o, "child", (double)w->child);
	if (w->kind == WAIT_SLEEP && w->sleep_ns)
		cJSON_AddNumberToObject(o, "sleep_ms", (double)(w->sleep_ns / 1000000));
	if (w->kind == WAIT_RESTART && w->continues)
		cJSON_AddStringToObject(o, "continues", w->continues);
}

cJSON *waits_deadlocks_json(const struct process_capture *pc, const struct wait_graph *g)
{
	cJSON *list = cJSON_CreateArray();
	for (size_t k = 0; list && k < g->ncycles; k++) {
		const struct wait_cycle *c = &g->cycles[k];
		cJSON *d = cJSON_CreateObject();
		cJSON *tids = cJSON_AddArrayToObject(d, "threads");
		for (size_t j = 0; j < c->len; j++)
			cJSON_AddItemToArray(tids, cJSON_CreateNumber(pc->threads[g->cycle_members[c->first + j]].tid));
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		if (f) {
			put_cycle(f, pc, g, c);
			fclose(f);
		}
		cJSON_AddStringToObject(d, "text", text ? text : "");
		free(text);
		cJSON_AddItemToArray(list, d);
	}
	return list;
}
