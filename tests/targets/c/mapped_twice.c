/*
 * mapped_twice: an executable that maps its own text a second time,
 * executable, at an address the kernel picks, and runs a thread there,
 * as node does (it remaps part of its text high). Printed "ready" once
 * the thread "alias" sleeps in spin_in_alias at its second address,
 * called from alias_thread_main at its first; the main thread pauses.
 *
 * Built -no-pie (ET_EXEC: libdwfl places it at its link addresses
 * whatever base it is told, which is what crashed the symbolizer) and
 * PIE. Never instrumented: code run from the copy may make no call and
 * touch no global (both are relative to where it runs).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Sleeps forever with raw nanosleep system calls: no call, no global. */
void spin_in_alias(void);

__attribute__((noinline, noipa)) void spin_in_alias(void)
{
	struct timespec ts = {1, 0};
	for (;;) {
		long r;
		__asm__ volatile("syscall"
				 : "=a"(r)
				 : "0"(35L), "D"(&ts), "S"(0L)
				 : "rcx", "r11", "memory");
	}
}

static void (*alias_entry)(void);

__attribute__((noinline, noipa)) static void *alias_thread_main(void *arg)
{
	pthread_setname_np(pthread_self(), "alias");
	alias_entry();
	return arg;
}

/* The executable mapping of our own file that holds spin_in_alias. */
static int own_text(uintptr_t *start, uintptr_t *end, unsigned long *offset)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uintptr_t fn = (uintptr_t)&spin_in_alias;
	int found = -1;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long s, e, off;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s %lx", &s, &e, perms, &off) == 4 && perms[2] == 'x' &&
		    fn >= s && fn < e) {
			*start = s;
			*end = e;
			*offset = off;
			found = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

int main(void)
{
	uintptr_t start, end;
	unsigned long offset;
	if (own_text(&start, &end, &offset) < 0) {
		fprintf(stderr, "no text mapping\n");
		return 1;
	}
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	void *copy = fd < 0 ? MAP_FAILED
			    : mmap(NULL, end - start, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)offset);
	if (copy == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	close(fd);
	alias_entry = (void (*)(void))((uintptr_t)copy + ((uintptr_t)&spin_in_alias - start));
	pthread_t t;
	if (pthread_create(&t, NULL, alias_thread_main, NULL) != 0)
		return 1;
	usleep(100 * 1000); /* let it reach its sleep */
	printf("ready %p\n", (void *)alias_entry);
	fflush(stdout);
	for (;;)
		pause();
}
