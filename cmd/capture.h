/*
 * capture: the default command. Attach to a process and write a bundle,
 * either a one-shot thread snapshot (--snapshot) or a sampled capture
 * (sampler.h) with a timeline.
 */
#ifndef DIAG_CMD_CAPTURE_H
#define DIAG_CMD_CAPTURE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "attach/attach.h"
#include "bundle/bundle.h"
#include "symbolize/symbolize.h"

struct go_session;
struct interp;

#define MAX_ANNOTATIONS 64
#define MAX_LEAK_THRESHOLDS 32

struct capture_options {
	pid_t pid;
	const char *output;        /* NULL: ./diag-PID-YYYYmmdd-HHMMSS */
	bool snapshot;
	uint64_t duration_ns;      /* 0: until Ctrl-C / SIGTERM / target exit */
	unsigned frequency_hz;     /* 0: no stack sampling */
	uint64_t interval_ns;      /* timeline interval */
	bool quiet;
	bool debuginfod;
	bool record_environ;        /* put the target's environ (redacted) in the manifest */
	bool force;                 /* capture a non-dumpable process anyway */
	bool names_only; /* --symbols names */
	uint64_t with_binaries_cap; /* 0: do not copy binaries into the bundle */
	unsigned watchdog_ms;       /* 0: no watchdog */
	const char *annotations[MAX_ANNOTATIONS];
	size_t nannotations;
	bool leak_watch;
	bool leak_repeat;
	unsigned leak_window;
	const char *leak_thresholds[MAX_LEAK_THRESHOLDS];
	size_t nleak_thresholds;
	struct attach_options attach;
};

/* State shared by the snapshot and sampling paths. */
struct capture_session {
	const struct capture_options *opt;
	struct attach_target target;
	struct bundle *bundle;
	cJSON *manifest;
	uint64_t started_wall_ns;
	struct symbolize_options symopt;
	struct go_session *go;     /* NULL unless the target is a Go program */
	struct interp *interp;     /* unwinding and symbols (sandboxed worker) */
};

/* Set by SIGINT/SIGTERM/SIGHUP: the number of such signals received. */
extern volatile sig_atomic_t capture_stop_requests;

int cmd_capture(int argc, char **argv);

/* Implemented in sampler.c: run the sampled capture, filling the bundle
 * and the manifest. Returns an exit code. */
int sampler_run(struct capture_session *s);

/* Explain why pid cannot be captured (one line + a hint) and return the
 * matching exit status. */
int capture_refuse(pid_t pid, const struct attach_probe *pr);

/* Probe pid (result in *ret) and refuse, with a message, what must be
 * refused before anything is touched: every refusal of the probe, and a
 * process that is not dumpable unless force. Returns EXIT_OK or the exit
 * status. Shared by capture and top. */
int capture_check_target(pid_t pid, bool force, struct attach_probe *ret);

/* Report a bundle write failure; returns EXIT_WRITE_FAILED. */
int write_error_exit(const char *dir, int err);

/* Add the pause statistics of a set of per-stop hold times to o. */
void add_pause_stats(cJSON *o, uint64_t *holds_ns, size_t n);

#endif
