/* SPDX-License-Identifier: MIT */
/*
 * Shared by the leak targets: argument parsing, the "ready" handshake and a
 * drift-free periodic tick. Each target is a single file plus this header,
 * so a reader sees the whole program in one place.
 *
 * Protocol (what the integration tests rely on): print "ready\n" on stdout
 * once set up, then run until killed, making progress every tick. Nothing
 * else is printed on stdout.
 */
#ifndef LEAK_COMMON_H
#define LEAK_COMMON_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* argv[idx] as a rate per second, def if absent; exits 2 if malformed.
 * Zero is accepted only where the caller says it means something. */
static inline double leak_arg_rate(int argc, char **argv, int idx, double def, int allow_zero)
{
	char *end;
	double r;

	if (argc <= idx)
		return def;
	r = strtod(argv[idx], &end);
	if (end == argv[idx] || *end || !(r > 0 || (allow_zero && r == 0)) || r > 1e6) {
		fprintf(stderr, "%s: bad rate '%s' (a positive number per second)\n",
			argv[0], argv[idx]);
		exit(2);
	}
	return r;
}

static inline void leak_ready(void)
{
	fputs("ready\n", stdout);
	fflush(stdout);
}

/* Calls tick(n) every period seconds forever, on an absolute schedule so a
 * slow tick does not stretch the rate. */
static inline void leak_run(double period, void (*tick)(unsigned long n))
{
	struct timespec next;
	long long step = (long long)(period * 1e9);

	clock_gettime(CLOCK_MONOTONIC, &next);
	for (unsigned long n = 0;; n++) {
		tick(n);
		next.tv_nsec += step % 1000000000;
		next.tv_sec += step / 1000000000 + next.tv_nsec / 1000000000;
		next.tv_nsec %= 1000000000;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
}

/* main() of a target whose ticks start threads: attr gets 64 KiB stacks
 * (a long run leaks threads, not gigabytes of address space), then
 * "ready", then tick(n) every 1/rate s, rate from argv[1] (def if absent). */
static inline void leak_threads_main(int argc, char **argv, double def, pthread_attr_t *attr,
				     void (*tick)(unsigned long n))
{
	double rate = leak_arg_rate(argc, argv, 1, def, 0);

	pthread_attr_init(attr);
	pthread_attr_setstacksize(attr, 64 * 1024);
	leak_ready();
	leak_run(1 / rate, tick);
}

#endif
