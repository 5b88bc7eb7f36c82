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
 * Nor is a block's Size trusted with memory or disk: a member larger than
 * the bundle reader's cap for it (what no reading command would open) and
 * a bundle whose blocks come to more than a budget are refused from their
 * headers, before they are decoded (struct pem_limits). What is decoded
 * is streamed: a line at a time, base64 and gzip decoded as they come and
 * the bytes written out (to a spool of the bundle writer, or to memory)
 * and hashed as they go, never more of them than the block's Size.
 *
 * Functions return 0 or a negative errno and never print.
 */
#ifndef DIAG_BUNDLE_VIEWS_PEM_CODEC_H
#define DIAG_BUNDLE_VIEWS_PEM_CODEC_H

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
	uint8_t *data;		    /* decoded to memory (always for manifest.json) */
	struct bundle_spool *spool; /* or spooled into the decoder's bundle, which owns it */
	size_t len;
};

/* What decoding lets a log cost, from the blocks' own headers (Size),
 * before a byte of them is decoded. */
struct pem_limits {
	uint64_t member_bytes;	 /* one member: the reader's BUNDLE_MAX_MEMBER_BYTES */
	uint64_t manifest_bytes; /* manifest.json: BUNDLE_MAX_MANIFEST_BYTES */
	/* The Sizes of every block decoded, summed (a damaged block that is
	 * repeated counts each time it is decoded): what unpem writes to disk
	 * at most, and what it spends inflating. */
	uint64_t total_bytes;
};
/* unpem's default budget for a whole bundle: four members at the reader's
 * cap. A capture of a big process for 15 minutes is some tens of MiB. */
#define PEM_MAX_TOTAL_BYTES (4 * BUNDLE_MAX_MEMBER_BYTES)
#define PEM_LIMITS_DEFAULT                                                                         \
	((struct pem_limits){BUNDLE_MAX_MEMBER_BYTES, BUNDLE_MAX_MANIFEST_BYTES,                   \
			     PEM_MAX_TOTAL_BYTES})

/* A block past one of the limits. */
enum pem_past {
	PEM_WITHIN = 0,
	PEM_PAST_MEMBER, /* its Size is over member_bytes (manifest_bytes for the manifest) */
	PEM_PAST_TOTAL,	 /* with its Size, the blocks decoded come to more than total_bytes */
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
	/* The first block past a limit (its name passed pem_name_check), if
	 * any: it and every block after it were not decoded. A name refusal
	 * in a later block is still found, and comes first. */
	enum pem_past past;
	char *past_name;
	size_t past_part;
	uint64_t past_size;	  /* the Size it declared */
	uint64_t decoded_bytes;	  /* the Sizes of the blocks decoded, summed */
	struct pem_limits limits; /* what the decoding was held to */
};

/* Decode all blocks of one bundle found in text, to memory, under
 * PEM_LIMITS_DEFAULT. want_id NULL: the first bundle seen. -ENOENT: no
 * block (of that bundle) at all. Missing parts, refusals and limits are
 * not errors here: see have[], refusal and past. Free with
 * pem_bundle_free. */
int pem_decode(const char *text, size_t len, const char *want_id, struct pem_bundle **ret);
void pem_bundle_free(struct pem_bundle *b);

/* The same as a stream, for a log of any length: its text is fed in
 * pieces of any size (a line may straddle two), and a line is held only
 * up to PEM_MAX_LINE bytes (the rest of a longer one is dropped: pem's
 * lines are 64 columns and a prefix). With out, each member but the
 * manifest is decoded into a spool of out (bundle.h) as its block is
 * read, so memory stays flat whatever the members' sizes; without, to
 * memory as pem_decode. The decoder owns nothing of out.
 * pem_decoder_feed: 0, -ENOMEM, or the error of writing a spool
 * (-ENOSPC, -EIO...), after which decoding cannot go on.
 * pem_decoder_finish: the end of the log; as pem_decode, and d is freed
 * whatever it returns. pem_decoder_free: give up (NULL is a no-op). */
#define PEM_MAX_LINE (64 * 1024)
struct bundle;
struct pem_decoder;
int pem_decoder_new(const char *want_id, const struct pem_limits *limits, struct bundle *out,
		    struct pem_decoder **ret);
int pem_decoder_feed(struct pem_decoder *d, const char *text, size_t len);
int pem_decoder_finish(struct pem_decoder *d, struct pem_bundle **ret);
void pem_decoder_free(struct pem_decoder *d);

/* The refusal (PEM_NAME_ESCAPES, _CONTROL or _INVALID, in that order of
 * precedence) that the member name of len bytes, NULs perhaps among them,
 * earns, or PEM_WRITABLE. "manifest.json" is the manifest's part and
 * passes. */
enum pem_refusal pem_name_check(const char *name, size_t len);

/* Write the decoded files (in memory) into dir (absent, or an empty
 * directory) through the bundle module's writer, as a capture does:
 * members first (atomic, 0700 directories, 0600 files, no symlink
 * followed in any component of a member's name), manifest.json last and
 * byte for byte as decoded.
 * Checked before dir is touched: -EINVAL if b has a refusal (or a name
 * pem_name_check refuses, or two parts that collide), -EFBIG if a block
 * was past a limit, -ENODATA unless every part is present, manifest.json
 * among them. Then bundle_create's errors for dir (-EEXIST: not empty,
 * -ELOOP: a symlink, -ENOTDIR, -EACCES, ...); -ELOOP / -ENOTDIR also when
 * a directory in a member's path is a symlink or not a directory; write
 * errors as bundle_write_member's. On failure dir has no manifest (a
 * partial bundle). */
int pem_bundle_write(const struct pem_bundle *b, const char *dir);

/* The same for a bundle decoded into out (pem_decoder_new's): the same
 * checks, then each spool committed under its member's name and the
 * manifest written last. Ends out's life whatever it returns, as
 * bundle_finalize does: on failure out is discarded (bundle_discard), so
 * nothing of it is left. */
int pem_bundle_commit(const struct pem_bundle *b, struct bundle *out);

#endif
