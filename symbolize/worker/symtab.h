/*
 * symtab: the symbols of a set of addresses, as plain data. It is what the
 * interpretation worker (interp.h) sends back: frames per address and the
 * target's modules, with every string owned by the table. The writers of
 * threads.txt and the pprof profiles read only this, so they work the same
 * whether symbols were resolved in this process or in the sandboxed worker.
 */
#ifndef DIAG_SYMBOLIZE_WORKER_SYMTAB_H
#define DIAG_SYMBOLIZE_WORKER_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize/symbolize.h"

struct symtab;

/* NULL on ENOMEM. */
struct symtab *symtab_new(void);
void symtab_free(struct symtab *st);

/* Resolve addrs with a symbolizer and record them, then record the
 * symbolizer's modules (whose has_* flags are final only after the
 * lookups). 0 or -ENOMEM. */
int symtab_fill(struct symtab *st, struct symbolizer *sym, const uint64_t *addrs, size_t n);

/* What is known of addrs without their files (a lost worker): the
 * executable file mappings of the maps text as modules (no build-id, no
 * symbols), each address with its module and file offset, so that its
 * frame still reads module+0xOFF. 0 or -ENOMEM. */
int symtab_fill_from_maps(struct symtab *st, const char *maps_text, size_t maps_len,
			  const uint64_t *addrs, size_t n);

/* The location of pc, or NULL when pc was never recorded. Valid until
 * symtab_free. */
const struct sym_location *symtab_lookup(const struct symtab *st, uint64_t pc);
size_t symtab_modules(const struct symtab *st, const struct sym_module **ret);

/* How a frame nothing named is spelled everywhere (threads.txt, pprof,
 * report, top): "module+0xOFF", the module's file name and the file
 * offset (for addr2line), into buf. NULL, buf untouched, when loc has no
 * module. Not escaped: the caller escapes for where it writes. */
const char *sym_location_unnamed(const struct sym_location *loc, char *buf, size_t size);
const char *symtab_main_build_id(const struct symtab *st);

/* Name the recorded addresses that have no frames with namer (a second
 * source of names, such as a Go runtime's own tables for a stripped
 * binary): it fills up to max frames, innermost first, and returns their
 * count (0: it cannot name addr either). Strings are copied into the
 * table. 0 or -ENOMEM. */
typedef size_t (*symtab_namer_fn)(void *arg, uint64_t addr, struct sym_frame *out, size_t max);
int symtab_name_unnamed(struct symtab *st, symtab_namer_fn namer, void *arg);

/* A compact binary encoding for the worker's pipe. symtab_encode returns a
 * malloc'd buffer; symtab_decode validates every length and index (the
 * bytes come from a process that parsed hostile files). 0 or -errno
 * (-EBADMSG on malformed input). */
int symtab_encode(const struct symtab *st, uint8_t **ret, size_t *ret_len);
int symtab_decode(const uint8_t *buf, size_t len, struct symtab **ret);

/* A set of addresses to resolve, collected from stacks before one batch
 * goes to the worker. */
struct addrset;
struct addrset *addrset_new(void);
void addrset_free(struct addrset *s);
int addrset_add(struct addrset *s, uint64_t addr); /* 0 or -ENOMEM */
const uint64_t *addrset_items(const struct addrset *s, size_t *ret_n);

#endif
