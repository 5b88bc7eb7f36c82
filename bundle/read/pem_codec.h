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
 * manifest order) to out. -EIO if a write failed, -ENOMEM, or the error
 * of reading a member (-ENOENT: listed but missing). */
int pem_encode_bundle(const struct bundle_reader *r, FILE *out);

struct pem_file {
	char *name;
	uint8_t *data;
	size_t len;
};

struct pem_bundle {
	char *bundle_id;
	size_t parts;		/* N of "Part: i/N" */
	struct pem_file *files; /* decoded and checked (size, sha256); index = part - 1 */
	bool *have;		/* parts entries: was part i+1 found intact */
	size_t other_bundles;	/* blocks of other bundle ids that were skipped */
	size_t bad_blocks;	/* blocks of this bundle that failed their checks */
};

/* Decode all blocks of one bundle found in text. want_id NULL: the first
 * bundle seen. -ENOENT: no block (of that bundle) at all. Missing parts
 * are not an error here: see have[]. Free with pem_bundle_free. */
int pem_decode(const char *text, size_t len, const char *want_id, struct pem_bundle **ret);
void pem_bundle_free(struct pem_bundle *b);

/* Write the decoded files into dir (absent, or an empty directory) through
 * the bundle module's writer, as a capture does: members first (atomic,
 * 0700 directories, 0600 files, no symlink followed in any component of a
 * member's name), manifest.json last and byte for byte as decoded. Every
 * part must be present, manifest.json among them (-ENODATA otherwise).
 * bundle_create's errors for dir (-EEXIST: not empty, -ELOOP: a symlink,
 * -ENOTDIR, -EACCES, ...); -EINVAL: a member name that would leave dir or
 * that a bundle cannot hold; -ELOOP / -ENOTDIR also when a directory in a
 * member's path is a symlink or not a directory; write errors as
 * bundle_write_member's. On failure dir has no manifest (a partial bundle). */
int pem_bundle_write(const struct pem_bundle *b, const char *dir);

#endif
