/* bench-floor: the ptrace floor. The least a consistent capture can pause a
 * target on this machine: for every thread, PTRACE_SEIZE + PTRACE_INTERRUPT,
 * then wait for each stop, PTRACE_GETREGS and one process_vm_readv of its
 * live stack, then PTRACE_DETACH every thread. Thread enumeration and the
 * maps read happen once, outside the timed window (a real tool must do them
 * per capture, but outside the hold too). Every pause figure of the
 * benchmark is read as a multiple of this.
 *
 *   bench-floor PID REPS [MAX_THREADS [rt]]
 *
 * Prints one JSON line: hold p50/p99/max in microseconds over REPS captures
 * taken about 10 ms apart. "rt" runs the hold window SCHED_FIFO, as
 * diag-attach does.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STACK_MAX (512u * 1024u)
#define MAX_MAPS 8192

struct map {
	uint64_t start, end;
};

static struct map maps[MAX_MAPS];
static size_t nmaps;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void load_maps(pid_t pid)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	while (nmaps < MAX_MAPS && fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		if (sscanf(line, "%llx-%llx", &s, &e) == 2)
			maps[nmaps++] = (struct map){s, e};
	}
	fclose(f);
}

static uint64_t map_end(uint64_t addr)
{
	for (size_t i = 0; i < nmaps; i++)
		if (addr >= maps[i].start && addr < maps[i].end)
			return maps[i].end;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench-floor PID REPS [MAX_THREADS [rt]]\n");
		return 2;
	}
	pid_t pid = (pid_t)atoi(argv[1]);
	int reps = atoi(argv[2]);
	size_t maxt = argc > 3 ? (size_t)atol(argv[3]) : 0;
	bool rt = argc > 4 && strcmp(argv[4], "rt") == 0;

	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d) {
		perror("bench-floor: opendir");
		return 1;
	}
	size_t ntids = 0, cap = 64;
	pid_t *tids = malloc(cap * sizeof(*tids));
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (maxt && ntids == maxt)
			break;
		if (ntids == cap)
			tids = realloc(tids, (cap *= 2) * sizeof(*tids));
		tids[ntids++] = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	load_maps(pid);

	uint8_t *buf = malloc(STACK_MAX);
	int *sig = calloc(ntids, sizeof(int));
	uint64_t *holds = calloc((size_t)reps, sizeof(uint64_t));
	uint64_t copied = 0;
	int failures = 0;
	if (!buf || !sig || !holds)
		return 1;

	struct sched_param sp = {.sched_priority = 1};
	for (int r = 0; r < reps; r++) {
		if (rt)
			sched_setscheduler(0, SCHED_FIFO, &sp);
		uint64_t t0 = now_ns();
		for (size_t i = 0; i < ntids; i++) {
			if (ptrace(PTRACE_SEIZE, tids[i], 0, 0) < 0 ||
			    ptrace(PTRACE_INTERRUPT, tids[i], 0, 0) < 0)
				failures++;
		}
		for (size_t i = 0; i < ntids; i++) {
			int status;
			sig[i] = 0;
			if (waitpid(tids[i], &status, __WALL) < 0 || !WIFSTOPPED(status)) {
				failures++;
				continue;
			}
			if ((status >> 16) == 0)
				sig[i] = WSTOPSIG(status); /* signal-delivery-stop: hand it on */
			struct user_regs_struct regs;
			if (ptrace(PTRACE_GETREGS, tids[i], 0, &regs) < 0) {
				failures++;
				continue;
			}
			uint64_t end = map_end(regs.rsp);
			size_t want = end > regs.rsp ? (size_t)(end - regs.rsp) : 65536;
			if (want > STACK_MAX)
				want = STACK_MAX;
			struct iovec l = {buf, want}, rm = {(void *)(uintptr_t)regs.rsp, want};
			ssize_t n = process_vm_readv(pid, &l, 1, &rm, 1, 0);
			if (n > 0)
				copied += (uint64_t)n;
		}
		for (size_t i = 0; i < ntids; i++)
			ptrace(PTRACE_DETACH, tids[i], 0, (void *)(long)sig[i]);
		holds[r] = now_ns() - t0;
		if (rt) {
			struct sched_param sp0 = {.sched_priority = 0};
			sched_setscheduler(0, SCHED_OTHER, &sp0);
		}
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	/* The first capture by a fresh tracer is what a one-shot snapshot
	 * pays; report it apart from the steady state. */
	double first = (double)holds[0] / 1000;
	qsort(holds, (size_t)reps, sizeof(*holds), cmp_u64);
	double p50 = (double)holds[(size_t)(reps - 1) / 2] / 1000;
	double p99 = (double)holds[(size_t)((reps - 1) * 0.99 + 0.5)] / 1000;
	double mx = (double)holds[reps - 1] / 1000;
	printf("{\"threads\":%zu,\"reps\":%d,\"rt\":%s,\"hold_p50_us\":%.1f,\"hold_p99_us\":%.1f,"
	       "\"hold_max_us\":%.1f,\"first_us\":%.1f,\"per_thread_p50_us\":%.2f,\"stack_bytes_avg\":%.0f,"
	       "\"failures\":%d}\n",
	       ntids, reps, rt ? "true" : "false", p50, p99, mx, first, ntids ? p50 / (double)ntids : 0,
	       ntids && reps ? (double)copied / (double)ntids / reps : 0, failures);
	return 0;
}
