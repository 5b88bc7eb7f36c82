/*
 * symbolize/unwind/step_cache: the register rules of each PC range, as
 * libunwind computed them (unw_reg_states_iterate's opaque states), so
 * that a step through a PC seen before is one unw_apply_reg_state.
 *
 * Why: libunwind's own cache of these rules sits behind a lock that masks
 * every signal around each lookup, two system calls per unw_step, and on
 * this kind of VM a system call is the dearest thing a sampler does. The
 * rules of a range depend only on the module mapped there, so the cache is
 * cleared whenever a module goes away.
 *
 * Ranges never overlap: a range that overlaps one already held is not
 * added (the first one stays, as a lookup would have found it first).
 */
#ifndef DIAG_STEP_CACHE_H
#define DIAG_STEP_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* At most this many ranges: the ranges of a few thousand functions. When
 * full, it is emptied and fills again with what is in use. */
#define STEP_CACHE_MAX_RANGES 16384

struct step_cache;

int step_cache_new(struct step_cache **ret);
void step_cache_free(struct step_cache *c);

/* Forget every range (a module went away). */
void step_cache_clear(struct step_cache *c);

/* The state for pc, NULL if no range holds it. Valid until the next add
 * or clear. */
const void *step_cache_find(const struct step_cache *c, uint64_t pc);

/* Hold state (size bytes, copied) for [start, end). 0 when added or
 * left out as an overlap or an empty range; -EINVAL for a size other
 * than the first one added; -ENOMEM. */
int step_cache_add(struct step_cache *c, uint64_t start, uint64_t end, const void *state,
		   size_t size);

/* Ranges held now. */
size_t step_cache_ranges(const struct step_cache *c);

#endif
