/* SPDX-License-Identifier: MIT */
/*
 * leak_heap [KIB_PER_SECOND=1024]
 *
 * A leak on a heap that other code shares: a hundred times a second,
 * cache_insert mallocs an entry (KIB_PER_SECOND / 100 KiB), fills it and
 * keeps it forever, while handle_request mallocs, fills and frees twenty
 * buffers of 64 bytes to 48 KiB and session_rotate keeps a few sessions
 * that it frees a second later. Only cache_insert's memory stays: the
 * growth belongs to it, as heaptrack's record of the allocations still
 * live says.
 */
#include <string.h>

#include "leak_common.h"

#define TICKS_PER_S 100
#define NOINLINE __attribute__((noinline))

struct entry {
	struct entry *next;
	char data[];
};

static struct entry *cache;
static size_t entry_bytes;
static unsigned seed = 12345;
static volatile unsigned sink;

static unsigned next_rand(void)
{
	seed = seed * 1103515245u + 12345u;
	return seed >> 8;
}

NOINLINE void cache_insert(void);
NOINLINE void cache_insert(void)
{
	struct entry *e = malloc(sizeof(*e) + entry_bytes);
	if (!e)
		return;
	memset(e->data, 0x5a, entry_bytes);
	e->next = cache;
	cache = e;
}

NOINLINE void handle_request(void);
NOINLINE void handle_request(void)
{
	for (int i = 0; i < 20; i++) {
		size_t n = 64 + next_rand() % (48 * 1024);
		char *b = malloc(n);
		if (!b)
			continue;
		memset(b, (int)i, n);
		sink += (unsigned char)b[n / 2];
		free(b);
	}
}

#define SESSIONS 64
static char *sessions[SESSIONS];

NOINLINE void session_rotate(unsigned long n);
NOINLINE void session_rotate(unsigned long n)
{
	size_t k = n % SESSIONS;
	free(sessions[k]);
	size_t len = 1024 + next_rand() % 8192;
	sessions[k] = malloc(len);
	if (sessions[k])
		memset(sessions[k], 1, len);
}

static void tick(unsigned long n)
{
	handle_request();
	cache_insert();
	session_rotate(n);
}

int main(int argc, char **argv)
{
	double kib = leak_arg_rate(argc, argv, 1, 1024, 0);
	entry_bytes = (size_t)(kib * 1024 / TICKS_PER_S);
	leak_ready();
	leak_run(1.0 / TICKS_PER_S, tick);
}
