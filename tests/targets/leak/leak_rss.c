/* SPDX-License-Identifier: MIT */
/*
 * leak_rss [MIB_PER_SECOND=2] [SAWTOOTH_MIB=0]
 *
 * Maps anonymous memory ten times a second, touches every page so it is
 * resident, and never unmaps it: rss_bytes and rss_anon_bytes grow by the
 * rate. With SAWTOOTH_MIB > 0 it also holds a working set that grows to that
 * size over 10 s and is released at once, like a garbage collector's cycle,
 * on top of the leak. MIB_PER_SECOND 0 with a sawtooth is the GC pattern
 * alone, which must not fire.
 */
#include <string.h>
#include <sys/mman.h>

#include "leak_common.h"

#define TICKS_PER_S 10
#define MIB (1024UL * 1024)

static double rate, saw_mib;
static size_t leaked_carry; /* bytes owed from fractional ticks */
static char *saw;
static size_t saw_len;

static void touch_new(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED)
		memset(p, 0xa5, len);
}

static void tick(unsigned long n)
{
	size_t want;

	leaked_carry += (size_t)(rate * MIB / TICKS_PER_S);
	want = leaked_carry & ~(size_t)4095;
	if (want) {
		touch_new(want);
		leaked_carry -= want;
	}
	if (saw_mib > 0) {
		size_t target = (size_t)(saw_mib * MIB) * (n % (10 * TICKS_PER_S)) / (10 * TICKS_PER_S);

		target &= ~(size_t)4095;
		if (target < saw_len) {
			munmap(saw, saw_len);
			saw = NULL;
			saw_len = 0;
		}
		if (target > saw_len) {
			/* Grow by remapping: the old contents do not matter. */
			if (saw)
				munmap(saw, saw_len);
			saw = mmap(NULL, target, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (saw == MAP_FAILED) {
				saw = NULL;
				saw_len = 0;
				return;
			}
			memset(saw, 0x5a, target);
			saw_len = target;
		}
	}
}

int main(int argc, char **argv)
{
	rate = leak_arg_rate(argc, argv, 1, 2, 1);
	saw_mib = leak_arg_rate(argc, argv, 2, 0, 1);
	leak_ready();
	leak_run(1.0 / TICKS_PER_S, tick);
}
