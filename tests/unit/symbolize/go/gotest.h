/* SPDX-License-Identifier: MIT */
/* Test-only helpers shared by test_goroutines.c and test_goheap.c: start a
 * Go fixture and open it, let it quit, read files, and a minimal protobuf
 * walker for Go's own pprof output (decoded here independently of
 * bundle/, on purpose: it is the reference the library is checked
 * against). */
#ifndef TESTS_GO_GOTEST_H
#define TESTS_GO_GOTEST_H

#include "goroutines.h"
#include "stopper.h"

#include <stddef.h>
#include <stdint.h>

/* Where the tests write the files they compare ($GO_TEST_OUTDIR, else
 * /tmp). */
const char *gotest_outdir(void);
/* A whole file, NUL-terminated; caller frees. NULL if unreadable. */
char *gotest_slurp(const char *path);

/* Spawn exe (no arguments) with envp into c and open it as a Go target
 * through /proc/PID/exe. Asserts on failure; the caller go_target_free()s
 * the target and child_kill()s c. */
struct go_target *gotest_start(struct child *c, const char *exe, char *const envp[]);
/* Ask the fixture to quit; assert that it exits 0, then reap it. */
void gotest_quit(struct child *c);

/* A release of the Go matrix (GO_MATRIX_VERSIONS, from
 * tests/targets/go/meson.build) whose toolchain is installed, and its
 * plain and stripped (-s -w) builds of the fixture. */
struct gotest_release {
	char version[16];
	char plain[512], stripped[512];
};
/* The installed releases, at most max; returns how many. */
size_t gotest_matrix(struct gotest_release *out, size_t max);

/* go_frame_fn: append "function;" to ctx, a char[GOTEST_NAMES] string. */
#define GOTEST_NAMES 8192
int gotest_add_name(void *ctx, const struct go_frame *f);

/* Protobuf wire format, enough for profile.proto. */
struct pb {
	const uint8_t *p, *end;
};
uint64_t pb_varint(struct pb *b);
/* Next field: returns its number (0 at the end or on a wire type it does
 * not know); varints in *v, length-delimited fields in *sub (and *v = the
 * length; *sub is zeroed for other fields). */
int pb_next(struct pb *b, uint64_t *v, struct pb *sub);

#endif
