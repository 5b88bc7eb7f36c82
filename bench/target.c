/* bench-target: the process the benchmarks attach to. It is a pause meter,
 * a CPU burner and a thread-count knob in one, so every figure about what a
 * profiler costs its target comes from the target's own point of view.
 *
 *   bench-target THREADS BUSY
 *
 * THREADS is the total thread count, the main thread included. The main
 * thread is the pause meter: a 1 ms ticker (absolute-deadline
 * clock_nanosleep) that records how late each wake-up is. A ptrace stop that
 * overlaps a deadline makes that tick late by about the rest of the stop.
 * BUSY threads (at most THREADS - 1) burn CPU through a noinline call chain
 * with a frameless leaf and count iterations (the throughput figure); they
 * also record every gap of >= GAP_MIN_NS in their own progress, which is what
 * a stop (or a preemption) looks like from a running thread. The remaining
 * threads sleep on a condition variable that is never signalled, like the
 * idle workers of a thread pool.
 *
 * Control is a line protocol on stdin/stdout, polled by the ticker between
 * ticks (no signals: they would interact with the tracer under test):
 *   "reset\n"  start a measurement window
 *   "report\n" print one JSON line about the window since the last reset
 *   "quit\n"   exit (EOF on stdin does the same)
 * It prints "ready" once every thread runs.
 *
 * Stacks, for checking profiles by eye:
 *   busy:   busy_main -> burn_outer -> burn_mid -> burn_leaf (no frame)
 *   sleep:  sleeper_main -> pthread_cond_wait
 *   ticker: main -> ticker_loop -> clock_nanosleep
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TICK_NS 1000000ull
#define GAP_MIN_NS 20000ull
/* Ring sizes: a 60 s window at 1 kHz fits the tick ring; gaps beyond the
 * ring are still counted and summed, only their percentiles use the last
 * ones. */
#define TICK_RING (1u << 17)
#define GAP_RING (1u << 15)

#ifdef BENCH_WITH_LIBS
void bench_libs_touch(void);
#endif

struct busy {
	pthread_t th;
	_Atomic uint64_t iters;
	_Atomic uint64_t gap_n;      /* gaps recorded so far */
	_Atomic uint64_t gap_sum_ns;
	uint32_t gap_us[GAP_RING];   /* written before gap_n is released */
	char pad[64];
};

static struct busy *busies;
static unsigned nbusy;
static pthread_mutex_t idle_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
static _Atomic unsigned started;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Frameless on purpose (no calls, so -O2 gives it no frame): the case where
 * frame-pointer unwinding loses the caller. */
__attribute__((noinline)) static uint64_t burn_leaf(uint64_t x)
{
	for (int i = 0; i < 256; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

__attribute__((noinline)) static uint64_t burn_mid(uint64_t x)
{
	x = burn_leaf(x);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

__attribute__((noinline)) static uint64_t burn_outer(uint64_t x)
{
	x = burn_mid(x);
	__asm__ volatile("" : "+r"(x));
	return x;
}

static void *busy_main(void *arg)
{
	struct busy *b = arg;
	uint64_t x = (uint64_t)(uintptr_t)b | 1;
	uint64_t last = now_ns();
	atomic_fetch_add(&started, 1);
	for (;;) {
		x = burn_outer(x);
		atomic_store_explicit(&b->iters, atomic_load_explicit(&b->iters, memory_order_relaxed) + 1,
				      memory_order_relaxed);
		uint64_t t = now_ns();
		if (t - last >= GAP_MIN_NS) {
			uint64_t n = atomic_load_explicit(&b->gap_n, memory_order_relaxed);
			b->gap_us[n % GAP_RING] = (uint32_t)((t - last) / 1000);
			atomic_store_explicit(&b->gap_sum_ns,
					      atomic_load_explicit(&b->gap_sum_ns, memory_order_relaxed) +
						      (t - last),
					      memory_order_relaxed);
			atomic_store_explicit(&b->gap_n, n + 1, memory_order_release);
		}
		last = t;
	}
	return NULL;
}

static void *sleeper_main(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	pthread_mutex_lock(&idle_mu);
	for (;;)
		pthread_cond_wait(&idle_cv, &idle_mu);
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(const uint32_t *sorted, size_t n, double p)
{
	if (n == 0)
		return 0;
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return sorted[i];
}

/* The measurement window. */
static uint64_t win_start;
static uint64_t *iters0, *gapn0, *gapsum0;
static uint32_t *ticks; /* lateness in us, ring */
static uint64_t nticks;
static uint32_t *scratch;

static void window_reset(void)
{
	win_start = now_ns();
	nticks = 0;
	for (unsigned i = 0; i < nbusy; i++) {
		iters0[i] = atomic_load(&busies[i].iters);
		gapn0[i] = atomic_load_explicit(&busies[i].gap_n, memory_order_acquire);
		gapsum0[i] = atomic_load(&busies[i].gap_sum_ns);
	}
}

static void window_report(unsigned nthreads)
{
	double el = (double)(now_ns() - win_start) / 1e9;
	uint64_t iters = 0, gap_n = 0, gap_sum = 0;
	size_t ns = 0;
	for (unsigned i = 0; i < nbusy; i++) {
		struct busy *b = &busies[i];
		uint64_t n1 = atomic_load_explicit(&b->gap_n, memory_order_acquire);
		iters += atomic_load(&b->iters) - iters0[i];
		gap_sum += atomic_load(&b->gap_sum_ns) - gapsum0[i];
		gap_n += n1 - gapn0[i];
		uint64_t from = n1 - gapn0[i] > GAP_RING ? n1 - GAP_RING : gapn0[i];
		for (uint64_t k = from; k < n1 && ns < (size_t)GAP_RING * 4; k++)
			scratch[ns++] = b->gap_us[k % GAP_RING];
	}
	qsort(scratch, ns, sizeof(*scratch), cmp_u32);
	double g50 = pct(scratch, ns, 0.5), g99 = pct(scratch, ns, 0.99),
	       gmax = ns ? scratch[ns - 1] : 0;

	size_t nt = nticks < TICK_RING ? (size_t)nticks : TICK_RING;
	memcpy(scratch, ticks, nt * sizeof(*scratch));
	qsort(scratch, nt, sizeof(*scratch), cmp_u32);
	printf("{\"threads\":%u,\"busy\":%u,\"elapsed_s\":%.6f,\"iters\":%llu,\"iters_per_s\":%.1f,"
	       "\"ticks\":%llu,\"tick_p50_us\":%.0f,\"tick_p99_us\":%.0f,\"tick_max_us\":%.0f,"
	       "\"gaps\":%llu,\"gap_sum_us\":%.0f,\"gap_p50_us\":%.0f,\"gap_p99_us\":%.0f,"
	       "\"gap_max_us\":%.0f,\"tick_top_us\":[",
	       nthreads, nbusy, el, (unsigned long long)iters, el > 0 ? (double)iters / el : 0,
	       (unsigned long long)nticks, pct(scratch, nt, 0.5), pct(scratch, nt, 0.99),
	       nt ? (double)scratch[nt - 1] : 0, (unsigned long long)gap_n, (double)gap_sum / 1000,
	       g50, g99, gmax);
	/* The latest 3 % of ticks, for a p99 pooled over many windows
	 * (bench/run): one window's p99 is its 15th worst tick of 1500, and
	 * jumps from window to window. */
	size_t top = (nt * 3 + 99) / 100;
	for (size_t i = 0; i < top; i++)
		printf("%s%u", i ? "," : "", scratch[nt - 1 - i]);
	printf("]}\n");
	fflush(stdout);
}

/* Returns false when told to quit. Non-blocking: called once per tick. */
static bool poll_control(unsigned nthreads)
{
	static char line[256];
	static size_t len;
	struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
	if (poll(&pfd, 1, 0) <= 0)
		return true;
	ssize_t n = read(STDIN_FILENO, line + len, sizeof(line) - 1 - len);
	if (n <= 0)
		return n < 0 && errno == EINTR;
	len += (size_t)n;
	line[len] = '\0';
	char *nl;
	while ((nl = strchr(line, '\n'))) {
		*nl = '\0';
		if (strcmp(line, "reset") == 0)
			window_reset();
		else if (strcmp(line, "report") == 0)
			window_report(nthreads);
		else if (strcmp(line, "quit") == 0)
			return false;
		size_t rest = len - (size_t)(nl + 1 - line);
		memmove(line, nl + 1, rest + 1);
		len = rest;
	}
	if (len == sizeof(line) - 1)
		len = 0; /* garbage: drop it */
	return true;
}

__attribute__((noinline)) static void ticker_loop(unsigned nthreads)
{
	uint64_t next = now_ns() + TICK_NS;
	for (;;) {
		struct timespec ts = {.tv_sec = (time_t)(next / 1000000000ull),
				      .tv_nsec = (long)(next % 1000000000ull)};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		uint64_t t = now_ns();
		ticks[nticks++ % TICK_RING] = (uint32_t)((t - next) / 1000);
		if (!poll_control(nthreads))
			return;
		next += TICK_NS;
		/* After a long stop, do not fire a burst of catch-up ticks: the
		 * lateness of the first one already says how long it was. */
		if (next < t)
			next = t + TICK_NS - (t - next) % TICK_NS;
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: bench-target THREADS BUSY\n");
		return 2;
	}
	unsigned nthreads = (unsigned)atoi(argv[1]);
	nbusy = (unsigned)atoi(argv[2]);
	if (nthreads < 1 || nbusy >= nthreads) {
		fprintf(stderr, "bench-target: need THREADS >= 1 and BUSY < THREADS\n");
		return 2;
	}
#ifdef BENCH_WITH_LIBS
	bench_libs_touch();
#endif
	busies = calloc(nbusy ? nbusy : 1, sizeof(*busies));
	iters0 = calloc(nbusy + 1, sizeof(uint64_t));
	gapn0 = calloc(nbusy + 1, sizeof(uint64_t));
	gapsum0 = calloc(nbusy + 1, sizeof(uint64_t));
	ticks = calloc(TICK_RING, sizeof(*ticks));
	scratch = calloc((size_t)GAP_RING * 4 + TICK_RING, sizeof(*scratch));
	if (!busies || !iters0 || !gapn0 || !gapsum0 || !ticks || !scratch)
		return 1;

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	/* Small stacks so 512 threads stay cheap; our frames are tiny. */
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (unsigned i = 0; i < nbusy; i++)
		if (pthread_create(&busies[i].th, &attr, busy_main, &busies[i]) != 0)
			return 1;
	for (unsigned i = nbusy + 1; i < nthreads; i++) {
		pthread_t th;
		if (pthread_create(&th, &attr, sleeper_main, NULL) != 0)
			return 1;
	}
	while (atomic_load(&started) < nthreads - 1)
		usleep(1000);
	window_reset();
	printf("ready\n");
	fflush(stdout);
	ticker_loop(nthreads);
	_exit(0); /* do not join threads that never return */
}
