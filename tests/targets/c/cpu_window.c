/*
 * cpu_window: a bounded amount of known work, for checking CPU profiles
 * against the kernel's own accounting. Prints "ready", waits for a line on
 * stdin, runs its workers for BURN_MS of wall time, and each worker then
 * prints "tid TID cpu_ns N" (its own CPU time, RUSAGE_THREAD) and parks,
 * alive and idle, until the next line (or EOF) on stdin makes the process
 * exit. Its CPU time is then the parent's wait4() rusage: nearly all of it
 * spent between "go" and the reports, a ground truth no profiler's own
 * start-up or shut-down can skew.
 *
 *   cpu_window spin N BURN_MS    N threads: spin_heavy (3 units) and
 *                                spin_light (1 unit) alternately, no syscalls
 *   cpu_window duty N BURN_MS    N threads: 2 ms of duty_work, then 8 ms
 *                                asleep in poll(), again and again
 *   cpu_window clock N BURN_MS   N threads reading the clock in a loop
 *                                (clock_main -> clock_loop -> clock_gettime):
 *                                their time goes to the vdso
 *   cpu_window leaf N BURN_MS    N threads calling a leaf of a few instructions
 *                                in a loop (leaf_main -> leaf_loop -> leaf_step):
 *                                about one sample in eight lands on its ret,
 *                                after 'pop %rbp' (frame pointers kept)
 *   cpu_window tail N BURN_MS    N threads calling tail_hop in a loop (tail_main
 *                                -> tail_loop -> tail_hop), which ends in
 *                                'pop %rbx; pop %rbp', a slow div and 'jmp *%r11'
 *                                to tail_land, with GCC's CFI for it (rbp
 *                                still "saved" below SP): most of its samples
 *                                land after the pops
 *   cpu_window pipe 1 BURN_MS    one thread writes 64 KiB blocks into a pipe
 *                                (pipe_writer), another reads them (pipe_reader):
 *                                the time goes to the kernel's pipe paths
 *
 * Expected stacks: spin_units <- spin_heavy|spin_light <- spin_main <-
 * start_thread; duty_work <- duty_main; leaf_step <- leaf_loop <- leaf_main; tail_hop|tail_land <- tail_loop <-
 * tail_main; __vdso_clock_gettime <-
 * clock_gettime <- clock_loop <- clock_main; write <- pipe_writer.
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;
static unsigned long long burn_until_ns;
static int pipe_fds[2];
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static int leaving;

/* Report this worker's CPU time, then stay alive and idle until main says
 * to leave: a sampler then sees the thread after its last burst. */
static void report_self(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	unsigned long long ns = ((unsigned long long)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
				((unsigned long long)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
	pthread_mutex_lock(&out_lock);
	printf("tid %ld cpu_ns %llu\n", (long)syscall(SYS_gettid), ns);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
	pthread_mutex_lock(&park_lock);
	while (!leaving)
		pthread_cond_wait(&park_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);
}

/* The work itself: a multiply-xor chain the compiler cannot fold. */
NOINLINE void spin_units(unsigned units);
NOINLINE void spin_units(unsigned units)
{
	for (unsigned long i = units * 100000ul; i; i--)
		sink ^= i * 2654435761ul;
}

NOINLINE void spin_heavy(void);
NOINLINE void spin_light(void);
NOINLINE void spin_heavy(void) { spin_units(3); }
NOINLINE void spin_light(void) { spin_units(1); }

NOINLINE void *spin_main(void *arg);
NOINLINE void *spin_main(void *arg)
{
	(void)arg;
	while (now_ns() < burn_until_ns) {
		spin_heavy();
		spin_light();
	}
	report_self();
	return NULL;
}

/* Loop iterations per millisecond of duty_work, measured once before
 * "ready": the work itself then reads no clock (a clock_gettime in the
 * loop put 0-7 % of the samples in the vdso, varying from run to run). */
static unsigned long duty_iters_per_ms;

NOINLINE void duty_work(unsigned long iters);
NOINLINE void duty_work(unsigned long iters)
{
	for (unsigned long i = 0; i < iters; i++)
		sink += i;
}

static void calibrate_duty(void)
{
	unsigned long iters = 100000;
	for (;;) {
		unsigned long long t0 = now_ns();
		duty_work(iters);
		unsigned long long dt = now_ns() - t0;
		if (dt >= 20000000ull) {
			duty_iters_per_ms = (unsigned long)(iters * 1000000ull / dt);
			return;
		}
		iters *= 2;
	}
}

NOINLINE void *duty_main(void *arg);
NOINLINE void *duty_main(void *arg)
{
	(void)arg;
	while (now_ns() < burn_until_ns) {
		duty_work(2 * duty_iters_per_ms);
		poll(NULL, 0, 8);
	}
	report_self();
	return NULL;
}

NOINLINE void clock_loop(void);
NOINLINE void clock_loop(void)
{
	while (now_ns() < burn_until_ns)
		;
}

NOINLINE void *clock_main(void *arg);
NOINLINE void *clock_main(void *arg)
{
	(void)arg;
	clock_loop();
	report_self();
	return NULL;
}

/* A slot on the stack gives it a frame (GCC keeps none in a leaf that
 * needs no stack, frame pointers or not): 'push %rbp ... pop %rbp; ret'. */
NOINLINE unsigned long leaf_step(unsigned long x);
NOINLINE unsigned long leaf_step(unsigned long x)
{
	volatile unsigned long slot = x;
	return (slot * 2654435761ul) ^ (slot >> 7);
}

NOINLINE void leaf_loop(void);
NOINLINE void leaf_loop(void)
{
	unsigned long x = 1;
	while (now_ns() < burn_until_ns)
		for (int i = 0; i < 4096; i++)
			x = leaf_step(x + (unsigned long)i);
	sink = x;
}

NOINLINE void *leaf_main(void *arg);
NOINLINE void *leaf_main(void *arg)
{
	(void)arg;
	leaf_loop();
	report_self();
	return NULL;
}

/* The tail call postgres's tuplestore makes millions of times a second,
 * written out so that no compiler flag changes it: a frame-pointer frame
 * torn down by pops, then an indirect jump. The div between them is slow,
 * so that timer interrupts land there (on it, or on the jmp after it).
 * GCC's CFI for the jmp gives the CFA as rsp+8 but keeps rbx and rbp
 * "saved" at CFA-24 and CFA-16, below SP, outside a stack copy that
 * starts at SP (perf's). */
NOINLINE unsigned long tail_land(unsigned long x);
NOINLINE unsigned long tail_land(unsigned long x)
{
	return x ^ (x >> 7);
}

unsigned long tail_hop(unsigned long x);
__asm__(".text\n"
	".globl tail_hop\n"
	".type tail_hop, @function\n"
	"tail_hop:\n"
	".cfi_startproc\n"
	"	push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"	push %rbx\n"
	".cfi_offset %rbx, -24\n"
	"	imul $40503, %rdi, %rbx\n"
	"	mov %rbx, %rdi\n"
	"	lea tail_land(%rip), %r11\n"
	"	pop %rbx\n"
	"	pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"	mov %rdi, %rax\n"
	"	xor %edx, %edx\n"
	"	mov $7, %ecx\n"
	"	div %rcx\n"
	"	jmp *%r11\n"
	".cfi_endproc\n"
	".size tail_hop, .-tail_hop\n");

NOINLINE void tail_loop(void);
NOINLINE void tail_loop(void)
{
	unsigned long x = 1;
	while (now_ns() < burn_until_ns)
		for (int i = 0; i < 4096; i++)
			x = tail_hop(x + (unsigned long)i);
	sink = x;
}

NOINLINE void *tail_main(void *arg);
NOINLINE void *tail_main(void *arg)
{
	(void)arg;
	tail_loop();
	report_self();
	return NULL;
}

/* Both ends of the pipe, one thread each; the writer stops at the end of
 * the burst and its close ends the reader. */
static char pipe_block[65536];

NOINLINE void *pipe_writer(void *arg);
NOINLINE void *pipe_writer(void *arg)
{
	(void)arg;
	while (now_ns() < burn_until_ns && write(pipe_fds[1], pipe_block, sizeof(pipe_block)) > 0)
		;
	close(pipe_fds[1]);
	report_self();
	return NULL;
}

NOINLINE void *pipe_reader(void *arg);
NOINLINE void *pipe_reader(void *arg)
{
	static char sink_block[sizeof(pipe_block)];
	(void)arg;
	while (read(pipe_fds[0], sink_block, sizeof(sink_block)) > 0)
		;
	report_self();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: cpu_window spin|duty|clock|leaf|tail|pipe N BURN_MS\n");
		return 2;
	}
	int n = atoi(argv[2]);
	unsigned long long burn_ns = strtoull(argv[3], NULL, 10) * 1000000ull;
	if (n < 1 || n > 64)
		return 2;
	if (strcmp(argv[1], "duty") == 0)
		calibrate_duty();
	printf("ready\n");
	fflush(stdout);
	char line[64];
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	burn_until_ns = now_ns() + burn_ns;
	pthread_t th[65];
	int nth = 0;
	if (strcmp(argv[1], "pipe") == 0) {
		if (pipe(pipe_fds) < 0)
			return 1;
		pthread_create(&th[nth++], NULL, pipe_reader, NULL);
		pthread_create(&th[nth++], NULL, pipe_writer, NULL);
	} else {
		void *(*fn)(void *) = strcmp(argv[1], "duty") == 0    ? duty_main
				      : strcmp(argv[1], "clock") == 0 ? clock_main
				      : strcmp(argv[1], "leaf") == 0  ? leaf_main
				      : strcmp(argv[1], "tail") == 0  ? tail_main
								      : spin_main;
		for (int i = 0; i < n; i++)
			pthread_create(&th[nth++], NULL, fn, NULL);
	}
	/* Any next line, or EOF: leave. */
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	pthread_mutex_lock(&park_lock);
	leaving = 1;
	pthread_cond_broadcast(&park_cond);
	pthread_mutex_unlock(&park_lock);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	return 0;
}
