/*
 * pyimage: a CPython's memory as the frame walker read it, saved to a file
 * and served back (tests only). A capture records every range a read of a
 * live interpreter touched; a replay serves exactly those ranges, so the
 * walker sees the same bytes on a machine without that interpreter (Debian
 * 12 has only 3.11: the 3.12 and 3.13 images were captured from pyenv
 * builds by py_capture_image and are committed).
 *
 * File: "PYIMG1\n", u32 hexversion, u64 _PyRuntime address, u32 count,
 * then count records {u64 address, u32 length, bytes}; little-endian.
 */
#ifndef DIAG_TESTS_PYIMAGE_H
#define DIAG_TESTS_PYIMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pyimage {
	uint32_t hexversion;
	uint64_t runtime;
	size_t n, cap;
	struct pyimage_record {
		uint64_t addr;
		uint32_t len;
		uint8_t *bytes;
	} * records;
	pid_t pid; /* capture: the live process read through */
};

/* A py_read_fn: capture reads pid (process_vm_readv) and records. */
int pyimage_record_read(void *ctx, uint64_t addr, void *buf, size_t len);
/* A py_read_fn: replay serves a recorded range, or -EFAULT. */
int pyimage_replay_read(void *ctx, uint64_t addr, void *buf, size_t len);

int pyimage_save(const struct pyimage *im, const char *path);
int pyimage_load(struct pyimage *im, const char *path);
void pyimage_release(struct pyimage *im);

#endif
