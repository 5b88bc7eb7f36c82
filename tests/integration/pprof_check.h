/* Assertions over decoded pprof profiles shared by the integration tests. */
#ifndef DIAG_TEST_PPROF_CHECK_H
#define DIAG_TEST_PPROF_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "pprof_read.h"

/* String label `key` of sample s, or NULL. */
const char *sample_str_label(const Perftools__Profiles__Profile *p,
			     const Perftools__Profiles__Sample *s, const char *key);
/* Numeric label `key` of sample s, or -1. */
int64_t sample_num_label(const Perftools__Profiles__Profile *p,
			 const Perftools__Profiles__Sample *s, const char *key);
/* Do the sample's frames (leaf first) contain want[0..n) in that order,
 * each immediately after the previous one? */
bool frames_contain_run(const Perftools__Profiles__Profile *p, const Perftools__Profiles__Sample *s,
			const char *const *want, size_t n);
/* Does any frame of the sample have this function name? */
bool frames_have(const Perftools__Profiles__Profile *p, const Perftools__Profiles__Sample *s,
		 const char *name);
/* Index of value type `type` in sample_type, or -1. */
int value_index(const Perftools__Profiles__Profile *p, const char *type);

#endif
