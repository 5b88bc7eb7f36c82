/*
 * open_bundle: how the subcommands that read a bundle (report, export,
 * pem, diff) open one and judge whether it is intact, in the same words
 * for all of them. Prints (it is cmd/'s); the reading itself is
 * bundle_reader's.
 */
#ifndef DIAG_CMD_CLI_OPEN_BUNDLE_H
#define DIAG_CMD_CLI_OPEN_BUNDLE_H

#include <stdbool.h>
#include <stdio.h>

#include "bundle/reader.h"

/* Say why dir has no manifest: no such directory, not a directory, or a
 * directory without one (an interrupted capture). */
void cli_no_manifest(const char *dir);

/* Open dir, printing the failure ("not a bundle", "malformed manifest",
 * "a symbolic link") with a hint. Returns EXIT_OK with *ret set (the caller frees it with
 * bundle_reader_free), or the exit status to return (EXIT_VERIFY_FAILED
 * for a missing or malformed manifest, EXIT_PAST_CAP for a manifest past
 * the reader's cap, EXIT_INTERNAL for out of memory). */
int cli_open_bundle(const char *dir, struct bundle_reader **ret);

/* Print the one line that says which member of dir was refused for which
 * cap of the reader ("diag-attach: refusing DIR/cpu.pprof: more than 128
 * MiB once decompressed (...)"). Returns EXIT_PAST_CAP. */
int cli_refused(const char *dir, const char *member, enum bundle_cap cap);
/* The same for what r refused (bundle_reader_refusal must be non-NULL). */
int cli_reader_refused(const struct bundle_reader *r);

/* The reader's caps, for the --help of the commands that read bundles:
 * one line each, indented like an option's description. */
void cli_print_reader_caps(FILE *out);

/* Verify r's bundle (what: BUNDLE_VERIFY_* of reader.h: re-hash the
 * members, look for unlisted files, or both) through the directory and
 * manifest r holds; print each problem to stderr as a warning. Returns
 * true if intact. */
bool cli_bundle_intact(const struct bundle_reader *r, unsigned what);

/* Why a member could not be read (an accessor's error, as
 * bundle_reader_failure gives it), in words: "missing", "not a regular
 * file", "its size or sha256 is not ...". Static. */
const char *cli_member_problem(int e);
/* Print the one line that says which member of r could not be read and
 * why (bundle_reader_failure; e, an accessor's error, if none is noted),
 * and a hint to verify. Returns EXIT_VERIFY_FAILED. */
int cli_reader_failed(const struct bundle_reader *r, int e);

#endif
