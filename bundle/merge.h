/*
 * merge: one bundle of several processes, made from the finished bundles
 * of one process each that were captured side by side (`-p 1,2`,
 * `--subprocesses`).
 *
 * What a reader finds (manifest "format_version" 2):
 *  - "target" is a list, one entry per process: the part's own target
 *    object plus its "started_at", "ended_at", "target_exited", "capture",
 *    "pause", "interpretation" and "findings";
 *  - every profile (*.pprof) is one profile: the parts' samples side by
 *    side, each with the labels "pid" (numeric) and "process" (its comm),
 *    so `go tool pprof -tagfocus pid=42` or `-tagroot process` splits them;
 *    a part whose sample types differ from the first part's is left out of
 *    that profile and kept whole under processes/PID/;
 *  - runtime.jsonl is the totals (same schema: gauges summed over the
 *    processes alive at that interval, cumulative counters as the sum of
 *    what each grew since its first point, so their rates never jump when
 *    a process comes or goes), and processes/PID/runtime.jsonl each
 *    process's own series;
 *  - text members at the top level (threads.txt, goroutine.txt...) are the
 *    parts' texts one after another, each under a line
 *    "=== process PID (COMM) ===";
 *  - binaries/<build-id>/... is shared (one copy per build-id); every
 *    other member (leak evidence...) goes under processes/PID/, and the
 *    findings that point at it are rewritten to say so.
 * A bundle of one process is not merged: it is what a capture writes.
 *
 * The parts are bundles this tool wrote a moment ago, but they are read
 * through bundle_reader and its caps all the same, and every index in
 * them is checked before it is followed.
 *
 * 0 or a negative errno (-EBADMSG: a part is not what its manifest says,
 * -ENOMEM, write errors of bundle_write_member). Nothing is printed.
 */
#ifndef DIAG_BUNDLE_MERGE_H
#define DIAG_BUNDLE_MERGE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "bundle/bundle.h"

/* Write the merge of the finished bundles part_dirs[0..n) (n >= 1, in the
 * order their processes should be listed) into out, and return in
 * *ret_manifest the merged manifest without "members" (the caller adds
 * what only it knows and passes it to bundle_finalize). On failure out
 * may hold some members: abandon it. */
int bundle_merge(struct bundle *out, const char *const *part_dirs, size_t n,
		 cJSON **ret_manifest);

/* Merge gzipped pprof profiles parts[0..n) into one (*ret malloc'd, gzipped),
 * adding to each sample of part i the labels pid = pids[i] and
 * process = comms[i]. included[i] (may be NULL) is set to whether part i
 * went in: it does not when its sample types differ from the first
 * part's. -EBADMSG for a part that is not a valid profile. Exposed for the
 * fuzz harness and the tests. */
int bundle_merge_pprof(const void *const *parts, const size_t *lens, const long *pids,
		       const char *const *comms, size_t n, bool *included, void **ret,
		       size_t *ret_len);

#endif
