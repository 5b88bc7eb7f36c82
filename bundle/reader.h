/*
 * reader: load a finished bundle for the commands that look at one
 * (report, diff, export, pem): the manifest, its members' bytes, the pprof
 * profiles decoded into plain arrays of symbolized stacks, and the JSONL
 * timeline as one numeric series per counter.
 *
 * Nothing here verifies hashes (bundle_verify does); a member that is
 * listed but unreadable or undecodable is an error of that accessor only,
 * so a report can still show what survived.
 *
 * Ownership: the reader owns everything it hands out. Profiles and the
 * timeline are decoded on first use and cached; every pointer returned
 * stays valid until bundle_reader_free. Nothing is thread-safe.
 *
 * Errors: 0 or a negative errno, never printed. -ENOENT: no such member
 * (or no manifest.json), -EBADMSG: malformed (manifest not JSON, profile
 * not gzip or not a pprof Profile), -EINVAL: an unsafe member name
 * (absolute, or with "." / ".." components), -ENOMEM.
 * Out-of-memory policy: reported as -ENOMEM, never aborts; the caller
 * decides.
 */
#ifndef DIAG_BUNDLE_READER_H
#define DIAG_BUNDLE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

struct bundle_reader;

/* Open the bundle in dir: reads and parses dir/manifest.json.
 * -ENOENT without a manifest (a partial bundle), -EBADMSG if it is not a
 * JSON object. *ret untouched on failure. */
int bundle_reader_open(const char *dir, struct bundle_reader **ret);
/* Free the reader and everything it handed out. NULL is a no-op. */
void bundle_reader_free(struct bundle_reader *r);

const char *bundle_reader_dir(const struct bundle_reader *r);
/* The parsed manifest (read-only, owned by the reader). */
const cJSON *bundle_reader_manifest(const struct bundle_reader *r);
/* Is name listed in the manifest's "members"? */
bool bundle_reader_has(const struct bundle_reader *r, const char *name);

/* Whole member file as bytes plus a terminating NUL (not counted in
 * *ret_len). Need not be listed in the manifest (so manifest.json itself
 * can be read). The caller owns and frees *ret. */
int bundle_reader_read(const struct bundle_reader *r, const char *name, char **ret,
		       size_t *ret_len);

/* Read the whole regular file path (relative to dirfd, or AT_FDCWD) plus a
 * terminating NUL (not counted in *ret_len), as the reader reads members:
 * never through a symlink at the last component, never blocking on a
 * FIFO. -EINVAL: not a regular file; -EFBIG: more than max_len bytes
 * (SIZE_MAX: no bound). The caller owns and frees *ret. */
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
 * cached per name. */
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
 * (default "runtime.jsonl"). -ENOENT for a bundle without one (a
 * snapshot). A line cut short by a killed capture is counted in bad_lines,
 * not an error. */
int bundle_reader_timeline(struct bundle_reader *r, const struct bundle_timeline **ret);

/* "2026-11-30T06:12:01.123Z" (UTC, fraction optional) to seconds since the
 * epoch. -EINVAL if it does not parse. */
int bundle_parse_time(const char *s, double *ret);

#endif
