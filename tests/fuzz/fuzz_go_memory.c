/*
 * fuzz_go_memory: symbolize/go's readers of a Go target's memory, which the
 * target controls: go_capture (allgs, allm, every g, its stack, its pprof
 * labels), go_capture_parked, the unwinder and the debug=2, debug=1 and
 * pprof writers on what was read, the threadcreate profile of the Ms read,
 * go_heap_capture (the bucket list), go_contention_capture (the block and
 * mutex bucket lists) and go_read_counters. They run in the sandboxed Go
 * worker, partly during the hold; a hostile g or bucket must cost neither
 * a crash nor unbounded memory.
 *
 * The binary is real (FUZZ_GO_BASES, as fuzz_go_binary: its layouts and
 * .symtab addresses hold; the plain builds are used, since a stripped one
 * is opened the same way once its globals are known); the memory is the
 * input: byte 0 picks the base, then records {addr u64, len u16, bytes}
 * (little endian). A read succeeds when one record covers it, else fails
 * as process_vm_readv does for an unmapped address.
 *
 * Seeds cannot be committed: a binary's addresses depend on the path it
 * was built at. tests/fuzz/run records them instead: with
 * FUZZ_GO_RECORD=DIR, the harness starts each base (the Go fixture), lets
 * the library read it once as the tool does, writes every read as a
 * record to DIR/seed-N and exits.
 *
 * Invariants: every call returns 0 or a negative errno; a snapshot's
 * counts are consistent (user goroutines <= goroutines <= allglen).
 * Memory: libFuzzer's -malloc_limit_mb (2 GiB in tests/fuzz/run) catches an
 * allocation sized by a hostile count.
 */
#include "tests/fuzz/fuzz_common.h"

#include <signal.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "symbolize/go/goheap.h"
#include "symbolize/go/goprofiles.h"
#include "symbolize/go/goroutines.h"

enum { MAX_BASES = 8, MAX_RECORDS = 4096 };

static struct go_target *targets[MAX_BASES];
static char *paths[MAX_BASES];
static size_t nbases;

struct record {
	uint64_t addr;
	size_t len;
	const uint8_t *bytes;
};

struct memory {
	struct record rec[MAX_RECORDS];
	size_t n;
};

static int fake_read(void *ctx, const struct go_mem_range *ranges, size_t n)
{
	const struct memory *m = ctx;
	for (size_t i = 0; i < n; i++) {
		const struct go_mem_range *r = &ranges[i];
		bool done = false;
		for (size_t k = m->n; k-- > 0 && !done;) {
			const struct record *c = &m->rec[k];
			if (r->addr >= c->addr && r->addr - c->addr <= c->len && r->len <= c->len - (r->addr - c->addr)) {
				memcpy(r->buf, c->bytes + (r->addr - c->addr), r->len);
				done = true;
			}
		}
		if (!done)
			return -EFAULT;
	}
	return 0;
}

/* ---- recording the seeds ---- */

static FILE *record_out;
static pid_t record_pid;

static int recording_read(void *ctx, const struct go_mem_range *ranges, size_t n)
{
	(void)ctx;
	for (size_t i = 0; i < n; i++) {
		struct iovec l = {ranges[i].buf, ranges[i].len}, r = {(void *)(uintptr_t)ranges[i].addr, ranges[i].len};
		if (process_vm_readv(record_pid, &l, 1, &r, 1, 0) != (ssize_t)ranges[i].len)
			return -EFAULT;
		/* one record per read, split to the u16 length field */
		for (size_t off = 0; off < ranges[i].len; off += 65535) {
			size_t len = ranges[i].len - off > 65535 ? 65535 : ranges[i].len - off;
			uint64_t a = ranges[i].addr + off;
			uint16_t l16 = (uint16_t)len;
			fwrite(&a, 8, 1, record_out);
			fwrite(&l16, 2, 1, record_out);
			fwrite((uint8_t *)ranges[i].buf + off, 1, len, record_out);
		}
	}
	return 0;
}

static void record_seeds(const char *dir)
{
	for (size_t b = 0; b < nbases; b++) {
		int to_child[2], from_child[2];
		FUZZ_CHECK(pipe(to_child) == 0 && pipe(from_child) == 0);
		pid_t pid = fork();
		FUZZ_CHECK(pid >= 0);
		if (pid == 0) {
			dup2(to_child[0], 0);
			dup2(from_child[1], 1);
			execl(paths[b], paths[b], (char *)NULL);
			_exit(127);
		}
		close(to_child[0]);
		close(from_child[1]);
		char line[64] = "";
		FILE *in = fdopen(from_child[0], "r");
		FUZZ_CHECK(in && fgets(line, sizeof(line), in) && !strncmp(line, "pid ", 4));
		char seed[400];
		snprintf(seed, sizeof(seed), "%s/seed-%zu", dir, b);
		record_out = fopen(seed, "w");
		FUZZ_CHECK(record_out);
		uint8_t which = (uint8_t)b;
		fwrite(&which, 1, 1, record_out);
		record_pid = pid;
		struct go_target *t = targets[b];
		go_target_set_bias(t, 0);
		struct go_snapshot *s = NULL;
		if (go_capture(t, recording_read, NULL, NULL, 0, NULL, &s) == 0)
			go_capture_parked(s, recording_read, NULL);
		go_snapshot_free(s);
		struct go_heap *h = NULL;
		if (go_heap_supported(t) && go_heap_capture(t, recording_read, NULL, &h) == 0)
			go_heap_free(h);
		for (int k = 0; k < 2; k++) {
			struct go_contention *c = NULL;
			if (go_contention_capture(t, (enum go_contention_kind)k, recording_read, NULL, &c) == 0)
				go_contention_free(c);
		}
		go_read_counters(t, recording_read, NULL, NULL, NULL);
		fclose(record_out);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fclose(in);
		close(to_child[1]);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *list = getenv("FUZZ_GO_BASES");
	if (!list || !*list) {
		fprintf(stderr, "fuzz_go_memory: FUZZ_GO_BASES is not set (tests/fuzz/run sets it)\n");
		abort();
	}
	char *copy = strdup(list);
	for (char *save = NULL, *p = strtok_r(copy, ":", &save); p && nbases < MAX_BASES;
	     p = strtok_r(NULL, ":", &save)) {
		/* the plain builds: the stripped ones differ only in where the
		 * globals' addresses come from */
		if (strstr(p, "stripped"))
			continue;
		FUZZ_CHECK(go_target_open(0, p, &targets[nbases]) == 0);
		paths[nbases++] = strdup(p);
	}
	free(copy);
	FUZZ_CHECK(nbases > 0);
	const char *rec = getenv("FUZZ_GO_RECORD");
	if (rec) {
		record_seeds(rec);
		exit(0);
	}
	return 0;
}

static int count_sample(void *ctx, const struct go_sample *s)
{
	size_t *n = ctx;
	FUZZ_CHECK(s->nlocs == 0 || s->locs);
	*n += s->count;
	return 0;
}

static int count_threads(void *ctx, const struct go_threadcreate_sample *smp)
{
	FUZZ_CHECK(smp->count > 0 && (smp->nlocs == 0 || smp->locs));
	(*(size_t *)ctx)++;
	return 0;
}

static int count_contention(void *ctx, const struct go_contention_record *r)
{
	FUZZ_CHECK(r->nlocs == 0 || r->locs);
	(*(size_t *)ctx)++;
	return 0;
}

static int count_record(void *ctx, const struct go_heap_record *r)
{
	(void)r;
	(*(size_t *)ctx)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	static struct memory m;
	m.n = 0;
	struct go_target *t = targets[data[0] % nbases];
	for (size_t i = 1; i + 10 <= size && m.n < MAX_RECORDS;) {
		uint64_t addr;
		uint16_t len;
		memcpy(&addr, data + i, 8);
		memcpy(&len, data + i + 8, 2);
		i += 10;
		if (len > size - i)
			len = (uint16_t)(size - i);
		m.rec[m.n++] = (struct record){addr, len, data + i};
		i += len;
	}
	const struct go_capture_limits lim = {.max_goroutines = 100000, .defer_parked_stacks = true};
	struct go_snapshot *s = NULL;
	int r = go_capture(t, fake_read, &m, NULL, 0, &lim, &s);
	FUZZ_CHECK(r <= 0);
	if (r == 0) {
		FUZZ_CHECK(go_capture_parked(s, fake_read, &m) <= 0);
		struct go_capture_stats st;
		go_snapshot_stats(s, &st);
		FUZZ_CHECK(st.user_goroutines <= st.goroutines && st.goroutines <= st.allglen);
		FUZZ_CHECK(go_snapshot_unwind(s) <= 0);
		FILE *null = fopen("/dev/null", "w");
		FUZZ_CHECK(null);
		FUZZ_CHECK(go_snapshot_write_debug2(s, null) <= 0);
		FUZZ_CHECK(go_snapshot_write_debug1(s, null) <= 0);
		fclose(null);
		size_t samples = 0;
		FUZZ_CHECK(go_snapshot_foreach_sample(s, count_sample, &samples) <= 0);
		size_t tc = 0;
		FUZZ_CHECK(go_snapshot_foreach_threadcreate(s, count_threads, &tc) <= 0);
		go_snapshot_free(s);
	} else {
		FUZZ_CHECK(s == NULL);
	}
	if (go_heap_supported(t)) {
		struct go_heap *h = NULL;
		r = go_heap_capture(t, fake_read, &m, &h);
		FUZZ_CHECK(r <= 0);
		if (r == 0) {
			size_t n = 0;
			FUZZ_CHECK(go_heap_foreach_record(h, count_record, &n) <= 0);
			go_heap_free(h);
		}
	}
	for (int k = 0; k < 2; k++) {
		struct go_contention *c = NULL;
		r = go_contention_capture(t, (enum go_contention_kind)k, fake_read, &m, &c);
		FUZZ_CHECK(r <= 0);
		if (r == 0) {
			struct go_contention_info info;
			go_contention_info(c, &info);
			size_t n = 0;
			FUZZ_CHECK(go_contention_foreach(c, count_contention, &n) <= 0);
			FUZZ_CHECK(n == info.buckets);
			go_contention_free(c);
		}
	}
	int64_t goroutines, live;
	FUZZ_CHECK(go_read_counters(t, fake_read, &m, &goroutines, &live) <= 0);
	return 0;
}
