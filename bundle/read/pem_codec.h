/*
 * pem_codec: a bundle as PEM-armoured text blocks that survive a log
 * pipeline (the idea of kopia's pprof-to-logs dumps), and back.
 *
 * One block per file, manifest.json first:
 *
 *   -----BEGIN DIAG-ATTACH BUNDLE-----
 *   Bundle: 736eca02-5ecc-4e7b-bfa3-b21b37eb84ae
 *   Part: 2/6
 *   Member: cpu.pprof
 *   Size: 1380
 *   Sha256: b3be8170...
 *   Encoding: base64            (or gzip+base64 for members not already gzipped)
 *
 *   H4sIAAAAAAAA/+xd...        (64 columns)
 *   -----END DIAG-ATTACH BUNDLE-----
 *
 * Size and Sha256 describe the file itself, so a rebuilt file is checked
 * byte for byte; "Part: i/N" says how many blocks make the bundle, so a
 * lost block is named rather than guessed.
 *
 * Decoding accepts what log pipelines do to text: a prefix on every line
 * (timestamps, pod names, "stdout F "), as long as it has the same width
 * on every line of a block; CRLF line ends; dropped empty lines; other log
 * lines between blocks;
 * the same block repeated (the first good copy wins); blocks of other
 * bundles (only the chosen bundle's are used).
 *
 * What a log pipeline never does is refused, before anything is written:
 * a member name that would leave the output directory, that holds a
 * control character, or that no member can have, and two parts that name
 * the same member (or a member and a directory of another). The log was
 * then not what 'diag-attach pem' printed.
 *
 * Functions return 0 or a negative errno and never print.
 */
#ifndef DIAG_CMD_PEM_CODEC_H
#define DIAG_CMD_PEM_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bundle/reader.h"

#define PEM_LABEL "DIAG-ATTACH BUNDLE"

/* Write every block of the bundle r (manifest.json, then each member in
 * manifest order) to out. Every member is read first, once, through
 * bundle_reader_read (checked against the manifest on the bytes read, no
 * symlink followed) and held in memory; nothing is written unless all
 * were read, and what is written is those bytes. -EIO if a write failed,
 * -ENOMEM, or the error of reading a member (-ENOENT: missing,
 * BUNDLE_ALTERED, -ELOOP, ...: bundle_reader_failure names it). */
int pem_encode_bundle(const struct bundle_reader *r, FILE *out);

struct pem_file {
	char *name;
	uint8_t *data;
	size_t len;
};

/* More parts than this in "Part: i/N" make a block bad: a bundle has tens
 * of members, and N sizes what decoding allocates. */
#define PEM_MAX_PARTS 65536

/* Why a decoded bundle must not be written. */
enum pem_refusal {
	PEM_WRITABLE = 0,
	PEM_NAME_ESCAPES,  /* absolute, or a ".." component: it would leave the directory */
	PEM_NAME_CONTROL,  /* a NUL, another control character or DEL */
	PEM_NAME_INVALID,  /* a name no member can have: empty, "." or empty components,
			    * a trailing '/', ".tmp" (bundle_name_valid) */
	PEM_NAME_DUPLICATE, /* two parts name the same member */
	PEM_NAME_NESTED,    /* one part's member is a directory of another's ("a", "a/b") */
};

struct pem_bundle {
	char *bundle_id;
	size_t parts;		/* N of "Part: i/N" */
	struct pem_file *files; /* decoded and checked (size, sha256); index = part - 1 */
	bool *have;		/* parts entries: was part i+1 found intact */
	size_t other_bundles;	/* blocks of other bundle ids that were skipped */
	size_t bad_blocks;	/* blocks of this bundle that failed their checks */
	/* The first reason found not to write the bundle, PEM_WRITABLE if
	 * none. A block of this bundle whose name is refused is refused
	 * whatever its size and sha256 say (and not kept), so the reason is
	 * the name, never a "damaged" block. */
	enum pem_refusal refusal;
	char *refused_name;	/* that name as the block spells it, NULs kept */
	size_t refused_len;	/* its length in bytes */
	size_t refused_part;	/* its block's part (1-based) */
	size_t other_part;	/* DUPLICATE: the other part of that name; NESTED: the
				 * part whose member is the directory */
};

/* Decode all blocks of one bundle found in text. want_id NULL: the first
 * bundle seen. -ENOENT: no block (of that bundle) at all. Missing parts
 * and refusals are not errors here: see have[] and refusal. Free with
 * pem_bundle_free. */
int pem_decode(const char *text, size_t len, const char *want_id, struct pem_bundle **ret);
void pem_bundle_free(struct pem_bundle *b);

/* The refusal (PEM_NAME_ESCAPES, _CONTROL or _INVALID, in that order of
 * precedence) that the member name of len bytes, NULs perhaps among them,
 * earns, or PEM_WRITABLE. "manifest.json" is the manifest's part and
 * passes. */
enum pem_refusal pem_name_check(const char *name, size_t len);

/* Write the decoded files into dir (absent, or an empty directory) through
 * the bundle module's writer, as a capture does: members first (atomic,
 * 0700 directories, 0600 files, no symlink followed in any component of a
 * member's name), manifest.json last and byte for byte as decoded.
 * Checked before dir is touched: -EINVAL if b has a refusal (or a name
 * pem_name_check refuses, or two parts that collide), -ENODATA unless
 * every part is present, manifest.json among them. Then bundle_create's
 * errors for dir (-EEXIST: not empty, -ELOOP: a symlink, -ENOTDIR,
 * -EACCES, ...); -ELOOP / -ENOTDIR also when a directory in a member's
 * path is a symlink or not a directory; write errors as
 * bundle_write_member's. On failure dir has no manifest (a partial bundle). */
int pem_bundle_write(const struct pem_bundle *b, const char *dir);

#endif
