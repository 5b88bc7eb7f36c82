/*
 * stackagg: aggregate raw stacks (arrays of PCs) with labels into counted
 * samples, merging identical (stack, labels) pairs as they arrive so memory
 * stays bounded by the number of distinct stacks, not by capture length.
 * Nothing here symbolizes: PCs are kept raw until the capture ends.
 */
#ifndef DIAG_STACKAGG_H
#define DIAG_STACKAGG_H

#include <stddef.h>
#include <stdint.h>

#define STACKAGG_MAX_VALUES 4

struct stackagg;

/* nvalues <= STACKAGG_MAX_VALUES. NULL on ENOMEM. */
struct stackagg *stackagg_new(size_t nvalues);
void stackagg_free(struct stackagg *a);

/* Add values to the entry for (pcs[0..npcs) leaf first, labels). labels is
 * an opaque string key (e.g. "tid=12\x1fthread_comm=worker\x1fstate=R")
 * compared bytewise; may be NULL. Copies what it keeps. 0 or -ENOMEM. */
int stackagg_add(struct stackagg *a, const uint64_t *pcs, size_t npcs, const char *labels,
		 const int64_t *values);

size_t stackagg_count(const struct stackagg *a);
/* The number of values each entry has (stackagg_new's nvalues). */
size_t stackagg_nvalues(const struct stackagg *a);

/* Visit every entry (in insertion order). Stop early if fn returns nonzero,
 * and return that value. */
typedef int (*stackagg_visit_fn)(void *ctx, const uint64_t *pcs, size_t npcs, const char *labels,
				 const int64_t *values);
int stackagg_foreach(const struct stackagg *a, stackagg_visit_fn fn, void *ctx);

/* Multiply values[index] of every entry by what factor returns for its
 * labels (rounded to the nearest integer, never below 0). */
typedef double (*stackagg_factor_fn)(void *ctx, const char *labels);
void stackagg_scale(struct stackagg *a, size_t index, stackagg_factor_fn factor, void *ctx);

#endif
