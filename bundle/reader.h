/*
 * reader: load a finished bundle for the commands that look at one
 * (report, diff, export, pem): the manifest, its members' bytes, the pprof
 * profiles decoded into plain arrays of symbolized stacks, and the JSONL
 * timeline as one numeric series per counter.
 *
 * Members are read race-free: below the bundle's directory, opened once
 * (O_DIRECTORY | O_NOFOLLOW), with no symlink followed at any component
 * and without blocking on a FIFO, and each is read once and hashed as it
 * is read: the bytes an accessor hands out (or decodes) are exactly those
 * whose size and sha256 the manifest lists, else it fails with
 * BUNDLE_ALTERED. Only listed members can be read (and manifest.json,
 * which comes from the copy bundle_reader_open read and parsed). A member
 * that is listed but unreadable, altered or undecodable is an error of
 * that accessor only, so a report can still show what survived.
 *
 * Ownership: the reader owns everything it hands out. Profiles and the
 * timeline are decoded on first use and cached; every pointer returned
 * stays valid until bundle_reader_free. Nothing is thread-safe.
 *
 * Errors: 0 or a negative errno, never printed. -ENOENT: no such member
 * (or not listed, or no manifest.json), -EBADMSG: malformed (manifest not
 * JSON, a listed member without its size or sha256, profile not gzip or
 * not a pprof Profile), -EINVAL: an unsafe member name (absolute, or with
 * "." / ".." components) or a member that is not a regular file (a FIFO,
 * a directory), -ELOOP: a symlink at some component of the member's path
 * (or the bundle directory is one), BUNDLE_ALTERED: the member's bytes are
 * not those the manifest hashed, BUNDLE_PAST_CAP: past one of the reader's
 * caps (below), -ENOMEM.
 * Out-of-memory policy: reported as -ENOMEM, never aborts; the caller
 * decides.
 */
#ifndef DIAG_BUNDLE_READER_H
#define DIAG_BUNDLE_READER_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "bundle/bundle.h"

struct bundle_reader;

/* A listed member whose size or sha256 is not the manifest's: changed
 * since the bundle was written or verified, or while it was being read. */
#define BUNDLE_ALTERED (-EUCLEAN)

/* ---- limits ----
 *
 * verify proves that a bundle is what its manifest says, not that it is
 * small: an 8 MB gzip member that inflates to 8 GiB, a timeline with a
 * million counter names or a profile whose location ids are sparse all
 * verify "intact". So the reader, which every reading command goes
 * through, refuses a member past one of these caps (its accessor returns
 * BUNDLE_PAST_CAP and bundle_reader_refusal says which cap) instead of
 * letting it take the machine's memory or minutes of CPU.
 *
 * They are generous for real bundles: a 15-minute capture of a big process
 * has profiles of a few hundred thousand samples and locations with stacks
 * some tens of frames deep (a frame decoded costs about 50 bytes), 20-40
 * counters and one timeline point per interval (1 s by default, 10 ms at
 * least: 90,000 points in 15 minutes). Together they keep one reader
 * within about 2 GiB: 1.5 GiB of decoded profiles, the one profile being
 * inflated (128 MiB) and the timeline (under 100 MiB). What a command
 * builds from it comes on top, in proportion: the HTML page's flame graph
 * about 100 bytes a frame, the rest far less.
 *
 * Lookups are sorted or hashed (by id, by name): no input makes decoding
 * quadratic.
 */
#define BUNDLE_PAST_CAP (-EFBIG)

enum bundle_cap {
	BUNDLE_CAP_MANIFEST_BYTES, /* manifest.json on disk (verify too) */
	BUNDLE_CAP_MEMBER_BYTES,   /* any member read whole, on disk */
	BUNDLE_CAP_INFLATED_BYTES, /* a gzipped profile, decompressed */
	BUNDLE_CAP_SAMPLES,	   /* samples in one profile */
	BUNDLE_CAP_LOCATIONS,	   /* locations in one profile */
	BUNDLE_CAP_FUNCTIONS,	   /* functions in one profile */
	BUNDLE_CAP_FRAMES,	   /* stack frames summed over a profile's samples */
	BUNDLE_CAP_DECODED_BYTES,  /* memory of all profiles one reader decoded */
	BUNDLE_CAP_COUNTERS,	   /* timeline counters (distinct names) */
	BUNDLE_CAP_POINTS,	   /* timeline points (lines) */
	BUNDLE_CAP_VALUES,	   /* timeline counters x points */
	BUNDLE_CAP_LINE_BYTES,	   /* one timeline line */
	BUNDLE_NCAPS
};

#define BUNDLE_MAX_MANIFEST_BYTES (8ull << 20)
#define BUNDLE_MAX_MEMBER_BYTES	  (256ull << 20)
#define BUNDLE_MAX_INFLATED_BYTES (128ull << 20)
#define BUNDLE_MAX_SAMPLES	  1000000ull
#define BUNDLE_MAX_LOCATIONS	  1000000ull
#define BUNDLE_MAX_FUNCTIONS	  1000000ull
#define BUNDLE_MAX_FRAMES	  16000000ull
#define BUNDLE_MAX_DECODED_BYTES  (1536ull << 20)
#define BUNDLE_MAX_COUNTERS	  1024ull
#define BUNDLE_MAX_POINTS	  1000000ull
#define BUNDLE_MAX_VALUES	  4000000ull
#define BUNDLE_MAX_LINE_BYTES	  (1ull << 20)

struct bundle_cap_info {
	uint64_t limit; /* the default, one of the BUNDLE_MAX_* above */
	bool bytes;	/* limit is a size */
	/* What is counted, as it reads after "more than LIMIT" (LIMIT in MiB
	 * for a size): "MiB on disk", "samples". */
	const char *what;
	const char *applies_to; /* "any member", "a profile", "the timeline" ... */
};

/* The table of caps, indexed by enum bundle_cap (static, never NULL for a
 * valid cap). */
const struct bundle_cap_info *bundle_cap_info(enum bundle_cap cap);

/* Lower (or raise) one cap of r, for the members it decodes from now on;
 * the fuzzer and the tests use it to stay small. manifest.json is read by
 * bundle_reader_open, under the default. */
void bundle_reader_set_limit(struct bundle_reader *r, enum bundle_cap cap, uint64_t limit);

struct bundle_refusal {
	const char *member; /* as the manifest names it: "cpu.pprof" */
	enum bundle_cap cap;
};

/* The first member r refused (each accessor that hit a cap returned
 * BUNDLE_PAST_CAP), or NULL if none was. Owned by r. */
const struct bundle_refusal *bundle_reader_refusal(const struct bundle_reader *r);

/* The first listed member r could not read for what the bundle holds
 * (missing, altered, behind a symlink, not a regular file, unreadable:
 * not a cap, not out of memory), and the accessor's error; NULL if none
 * was. Owned by r. */
struct bundle_read_failure {
	const char *member; /* as the manifest names it */
	int error;	    /* BUNDLE_ALTERED, -ELOOP, -EINVAL, -ENOENT, ... */
};
const struct bundle_read_failure *bundle_reader_failure(const struct bundle_reader *r);

/* Open the bundle in dir: opens the directory (O_DIRECTORY | O_NOFOLLOW:
 * -ELOOP if dir is a symlink, -ENOTDIR if not a directory) and keeps it
 * open for every later read, reads dir/manifest.json once and parses it.
 * -ENOENT without a manifest (a partial bundle), -EBADMSG if it is not a
 * JSON object (or not a regular file), BUNDLE_PAST_CAP if it is larger
 * than BUNDLE_MAX_MANIFEST_BYTES. *ret untouched on failure. */
int bundle_reader_open(const char *dir, struct bundle_reader **ret);
/* Free the reader and everything it handed out. NULL is a no-op. */
void bundle_reader_free(struct bundle_reader *r);

const char *bundle_reader_dir(const struct bundle_reader *r);
/* The parsed manifest (read-only, owned by the reader). */
const cJSON *bundle_reader_manifest(const struct bundle_reader *r);
/* Is name listed in the manifest's "members"? */
bool bundle_reader_has(const struct bundle_reader *r, const char *name);

/* Whole member file as bytes plus a terminating NUL (not counted in
 * *ret_len), read once and checked against the manifest's size and
 * sha256 (BUNDLE_ALTERED if they differ). It must be listed (-ENOENT
 * otherwise), except "manifest.json": the bytes bundle_reader_open read
 * and parsed. BUNDLE_PAST_CAP above BUNDLE_CAP_MEMBER_BYTES. The caller
 * owns and frees *ret. */
int bundle_reader_read(const struct bundle_reader *r, const char *name, char **ret,
		       size_t *ret_len);

/* bundle_verify (bundle.h) of r's bundle: through the directory r opened
 * and against the manifest r parsed, with the same problems, results and
 * *ret_members. what: BUNDLE_VERIFY_MEMBERS (re-hash every listed
 * member), BUNDLE_VERIFY_UNLISTED (name every file that is not listed;
 * opens none), or both. */
enum {
	BUNDLE_VERIFY_MEMBERS = 1,
	BUNDLE_VERIFY_UNLISTED = 2,
	BUNDLE_VERIFY_ALL = 3,
};
int bundle_reader_verify(const struct bundle_reader *r, unsigned what, bundle_problem_fn fn,
			 void *ctx, size_t *ret_members);

/* Read the whole regular file path (relative to dirfd, or AT_FDCWD) plus a
 * terminating NUL (not counted in *ret_len): never through a symlink at
 * the last component, never blocking on a FIFO. For files that are not a
 * bundle's members (a test's); members go through bundle_reader_read.
 * -EINVAL: not a regular file; -EFBIG: more than max_len bytes (SIZE_MAX:
 * no bound). The caller owns and frees *ret. */
int bundle_read_file_at(int dirfd, const char *path, size_t max_len, char **ret, size_t *ret_len);

/* ---- profiles ---- */

struct bundle_frame {
	const char *function; /* never NULL: "0x<address>" when unsymbolized */
	const char *file;     /* "" when unknown */
	int64_t line;	      /* 0 when unknown */
	uint64_t address;
	bool inlined; /* an inlined callee (not the location's last Line) */
};

struct bundle_sample {
	const struct bundle_frame *frames; /* leaf first, inline chains expanded */
	size_t nframes;
	const int64_t *values;	 /* bundle_profile.nvalues entries */
	int64_t tid;		 /* "tid" label, -1 without one */
	const char *thread_comm; /* "thread_comm" label or NULL */
	const char *state;	 /* "state" label ("R", "S", ...) or NULL */
};

struct bundle_profile {
	size_t nvalues;
	const char **value_type; /* e.g. "samples", "cpu" */
	const char **value_unit; /* e.g. "count", "nanoseconds" */
	const struct bundle_sample *samples;
	size_t nsamples;
	int64_t time_nanos, duration_nanos, period;
	const char *period_type;
};

/* Decode the gzipped pprof member name (e.g. "cpu.pprof"). The result is
 * cached per name. BUNDLE_PAST_CAP when it inflates past
 * BUNDLE_CAP_INFLATED_BYTES, has more samples, locations, functions or
 * frames than their caps, or would take the memory of this reader's
 * decoded profiles past BUNDLE_CAP_DECODED_BYTES. */
int bundle_reader_profile(struct bundle_reader *r, const char *name,
			  const struct bundle_profile **ret);

/* ---- timeline ---- */

struct bundle_counter {
	const char *name; /* JSONL key; nested objects flattened: "fds_by_type.pipe" */
	const double *v;  /* npoints values; NAN where absent or negative (-1 is
			    * how the sampler writes "not available") */
	size_t nvalid;	  /* how many are not NAN */
};

struct bundle_timeline {
	size_t npoints;
	const double *t;  /* seconds since the epoch, one per line */
	size_t ncounters; /* counters with at least one value, in first-seen order */
	const struct bundle_counter *counters;
	size_t bad_lines; /* lines that were not a JSON object with a "t" */
};

/* Parse the timeline member named by manifest "timeline"."member"
 * (default "runtime.jsonl"), streamed line by line and hashed as it
 * streams: nothing is kept unless the whole file is what the manifest
 * lists (BUNDLE_ALTERED). -ENOENT for a bundle without one (a snapshot). A line cut short by a killed capture is
 * counted in bad_lines, not an error. BUNDLE_PAST_CAP past the caps on
 * counters, points, values or the length of one line. */
int bundle_reader_timeline(struct bundle_reader *r, const struct bundle_timeline **ret);

/* The target of a manifest (or of report's JSON, which copies it) as a
 * person names it: "demo (pid 42)", or for a bundle of several processes
 * (manifest format 2: "target" is a list) "3 processes: nginx (pid 1),
 * nginx (pid 7), ..." cut to fit. Raw names from the target: escape
 * before printing. Returns out. */
char *bundle_target_describe(const cJSON *manifest, char *out, size_t size);

/* Is the timeline counter called name a running total since the process
 * started (CPU time, faults, context switches, I/O bytes), read as a rate,
 * rather than a level? */
bool bundle_counter_cumulative(const char *name);

/* "2026-11-30T06:12:01.123Z" (UTC, fraction optional) to seconds since the
 * epoch. -EINVAL if it does not parse. */
int bundle_parse_time(const char *s, double *ret);

#endif
