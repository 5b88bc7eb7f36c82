/*
 * engine: the capture engine. Attach to a process and fill a bundle: a
 * one-shot consistent snapshot of every thread, or a sampled capture (CPU
 * and wall-clock profiles, the /proc timeline and its leak watchdog), with
 * the goroutines of a Go target. It wires attach/ (stop and copy),
 * symbolize/worker/ (unwind and name, sandboxed), timeline/ and bundle/
 * together; the subcommands (cmd/capture.c) parse options, call it, and
 * turn what it returns into messages and exit statuses.
 *
 * Errors follow the library rule: 0 or a negative errno, nothing printed
 * (but the opt-in DIAG_ATTACH_TRACE lines of capture_trace_phase). What
 * failed is said by the stage (enum capture_stage), so that the caller can
 * tell "the process exited" (-ESRCH while attaching) from "the disk is
 * full" (-ENOSPC while writing).
 *
 * Stop requests: the caller's SIGINT/SIGTERM/SIGHUP handler counts into
 * *opt->stop_requests. The sampling loop keeps those three signals blocked
 * while it works and lets them in only while it sleeps (ppoll), so one that
 * arrives mid-tick ends the next sleep at once. One request ends the
 * capture and writes the bundle; two abandon the writing (-EINTR).
 */
#ifndef DIAG_CMD_ENGINE_H
#define DIAG_CMD_ENGINE_H

#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "attach/attach.h"

#define MAX_ANNOTATIONS 64
#define MAX_LEAK_THRESHOLDS 32
#define BINARIES_DEFAULT_CAP (1024ull << 20) /* 1 GiB */

/* What the sampling loop reports a few times a second (for a progress
 * line on a terminal). */
struct capture_progress {
	pid_t pid;
	uint64_t elapsed_ns;
	uint64_t duration_ns; /* requested; 0: until stopped */
	uint64_t samples;
	size_t threads;
	double rate_hz;       /* ticks per second so far */
	bool final;           /* the last report, once sampling ended */
};

struct stackagg;
struct symtab;
struct unwound_stack;

/* What a live view (diag-attach top) is given at each refresh: the CPU
 * samples the engine took since the last one, named, and every thread as
 * the latest tick saw it. Valid during the call only. */
struct capture_live {
	/* Values {samples, cpu ns}; labels "tid=N\x1fthread_comm=C"
	 * (stackagg.h, profile labels). Unwound and amended (Python frames)
	 * as a capture's are. */
	const struct stackagg *cpu;
	/* Names every address of cpu and of stacks: frame_lookup_address
	 * of each (profile_out.h), kernel, Go and Python frames included. */
	const struct symtab *symbols;
	/* The latest tick's threads (comm, state, on-CPU time from
	 * schedstat) and each one's stack there: its latest sample, or its
	 * resting stack read from /proc (n 0: none). NULL before a tick. */
	const struct process_capture *threads;
	const struct unwound_stack *stacks;
	/* The manifest's "target" object (exe, go, python and whether its
	 * frames are readable, and why not). */
	const cJSON *target;
	uint64_t window_ns;       /* since the last refresh */
	const char *cpu_engine;   /* "perf", or "ptrace" (stops) */
	int perf_refused;         /* why not perf (-errno), 0 if perf */
	uint64_t lost;            /* samples the kernel dropped, in the window */
	/* Threads the engine stopped in the window (the ptrace engine; with
	 * perf, a sleeping thread read once for its registers), and for how
	 * long: the longest stop and all added up. */
	uint64_t stops, hold_max_ns, hold_total_ns;
};

/* A leak the watchdog found, the moment it finds it. */
struct capture_leak {
	const char *counter;      /* "rss_bytes", "open_fds", ... */
	double slope_per_s, first, last;
	size_t n_samples;
	const char *bundle_dir;   /* the evidence is in bundle_dir/evidence */
	const char *evidence;     /* "leak/open_fds-1/" */
};

/* Where CPU samples come from (snapshots are ptrace captures either
 * way). */
enum capture_cpu_engine {
	CAPTURE_CPU_AUTO,   /* perf events, or ptrace when they are refused */
	CAPTURE_CPU_PERF,   /* perf events or fail */
	CAPTURE_CPU_PTRACE, /* stops, each sample weighted by the thread's CPU time since its last */
};

/* Where wall-clock samples come from. */
enum capture_wall_engine {
	/* With the perf CPU engine: no stops (each thread's latest perf
	 * sample, switch-outs included, or its resting stack from /proc);
	 * otherwise ptrace stops. */
	CAPTURE_WALL_AUTO,
	CAPTURE_WALL_PTRACE, /* ptrace stops of the threads that ran since the last tick */
};

/* How perf's CPU-time (cpu-clock) events are laid out (attach/perf.h,
 * per_cpu). */
enum capture_cpu_events {
	/* Per CPU for one process; per thread in a group capture, where each
	 * process's own per-CPU events would sample every CPU again. */
	CAPTURE_CPU_EVENTS_AUTO,
	CAPTURE_CPU_EVENTS_PER_THREAD,
	CAPTURE_CPU_EVENTS_PER_CPU,
};

/* What a sampled capture measured, for its summary line. */
struct capture_summary {
	/* The target exec'd a program that is not dumpable and the capture
	 * ended there (no --force): the exit is EXIT_NOT_DUMPABLE. */
	bool ended_by_exec_not_dumpable;
	bool sampled;            /* false: a snapshot (nothing below is set) */
	const char *cpu_engine;  /* "perf" or "ptrace" */
	const char *wall_engine; /* "perf" (no stops) or "ptrace" */
	uint64_t thread_samples; /* wall-clock: a thread at a tick */
	uint64_t samples_without_stack; /* of those, without a stack */
	int perf_refused;        /* why perf events were not used (-errno), 0 if they were */
	double target_cpu_s;     /* the target's CPU time over the capture, from /proc */
	double hz;
	uint64_t cpu_samples;
	double cpu_samples_expected; /* target_cpu_s x hz: what its CPU time asks for */
	/* The hypervisor's share of the machine's CPU time over the capture
	 * (steal in /proc/stat); -1 when unknown. */
	double steal_share;
	/* perf: cpu.pprof's CPU time as sampled and as weighed to the
	 * threads' schedstat (cpu_weigh.h); both 0 when not weighed. */
	double cpu_sampled_s, cpu_weighed_s;
	uint64_t lost, throttled;
	uint64_t threads_without_event; /* perf: threads we could not open an event for */
	bool per_cpu_events;     /* perf: cpu-clock events per CPU (a thread's own are switch-outs) */
	uint64_t stops;          /* ptrace stops (wall-clock samples and the final snapshot) */
	/* Set for snapshots too: what dead interpretation workers lost
	 * (interp_losses). */
	uint64_t worker_restarts, stacks_lost, symbol_batches_lost;
	/* Workers their sandbox's filter stopped, and the last call it
	 * stopped (-1: none). */
	uint64_t workers_denied;
	int32_t denied_syscall;
	/* A Go target whose goroutines were read cut short (a forged
	 * runtime.allglen, the read budget, the time the target could be
	 * held) or lost: the one line that says so, as the worker wrote it
	 * (print it escaped); "" if none. */
	char go_warning[512];
	/* --growth or --leak-watch asked for where memory grows and who
	 * creates threads, and one of them was not recorded: why, in one
	 * line (also the manifest's capture.growth_not_recorded); "" if
	 * both were. */
	char growth_warning[256];
};

struct capture_options {
	pid_t pid;
	bool snapshot;
	uint64_t duration_ns;      /* 0: until a stop request or target exit */
	unsigned frequency_hz;     /* 0: no stack sampling */
	uint64_t interval_ns;      /* timeline interval */
	bool debuginfod;
	bool record_environ;        /* put the target's environ (redacted) in the manifest */
	bool force;                 /* capture a non-dumpable process anyway */
	/* --subprocesses: the most processes captured at once (each capture
	 * is a process of ours with two sandboxed workers and their brokers). */
	unsigned max_processes;
	bool not_dumpable;          /* the probe found it not dumpable (recorded) */
	bool names_only;            /* --symbols names */
	uint64_t with_binaries_cap; /* 0: do not copy binaries into the bundle */
	unsigned watchdog_ms;       /* for the caller, who starts attach's watchdog; 0: none */
	const char *annotations[MAX_ANNOTATIONS]; /* "key=value" */
	size_t nannotations;
	bool leak_watch;
	/* --growth (and --leak-watch): page-fault samples into growth.pprof,
	 * where the target's memory grows (needs perf events). */
	bool growth;
	bool leak_repeat;
	unsigned leak_window;
	const char *leak_thresholds[MAX_LEAK_THRESHOLDS];
	size_t nleak_thresholds;
	struct attach_options attach;
	enum capture_cpu_engine cpu_engine;
	enum capture_wall_engine wall_engine;
	bool no_kernel_frames;      /* leave the kernel call chain out of CPU samples */
	enum capture_cpu_events cpu_events;
	size_t perf_stack_bytes;    /* user stack per perf sample; 0: 32 KiB */
	/* Stack copies of perf CPU samples kept to unwind after the capture
	 * (cpu_perf.h); unwind_later_set false: the default, 64 MiB. 0:
	 * every sample is unwound as it is drained. */
	uint64_t unwind_later_bytes;
	bool unwind_later_set;
	/* How often a sampler with perf events wakes (wall_window.h);
	 * wake_hz_set false: the default, 0: at every tick. */
	unsigned wake_hz;
	bool wake_hz_set;
	/* diag-attach dump (with snapshot): print the snapshot's threads
	 * grouped by stack to dump_to, as text or JSON (dump_out.h), and in
	 * text a Go program's goroutines after them. Then the bundle
	 * directory may be NULL: no bundle. */
	FILE *dump_to;
	bool dump_json;
	volatile sig_atomic_t *stop_requests; /* required */
	/* Told as things happen (NULL: not told); all get callback_arg. */
	void (*progress)(const struct capture_progress *p, void *arg);
	void (*leak_found)(const struct capture_leak *l, void *arg);
	/* Once, when sampling is set up (perf events open, the timeline
	 * started) and before the first tick, or before a snapshot: the
	 * caller lets a target it holds stopped run from here. */
	void (*ready)(void *arg);
	/* A live view instead of a bundle (diag-attach top): every
	 * live_every_ns of sampling, live gets the samples of the window
	 * (capture_live); a nonzero return ends the capture. With live the
	 * session has no bundle: no timeline, no final snapshot, nothing
	 * written; CPU samples are unwound as they are drained. */
	int (*live)(const struct capture_live *l, void *arg);
	uint64_t live_every_ns;
	void *callback_arg;
};

enum capture_stage {
	CAPTURE_STAGE_NONE,
	CAPTURE_STAGE_TARGET,   /* opening the target (-ESRCH, -EBUSY: another diag-attach) */
	CAPTURE_STAGE_SETUP,    /* starting the workers, the manifest (-ENOMEM) */
	CAPTURE_STAGE_OUTPUT,   /* creating the output directory */
	CAPTURE_STAGE_ATTACH,   /* attaching, stopping, sampling (-ESRCH, -EPERM, -ENOMEM) */
	CAPTURE_STAGE_PERF,     /* perf events refused with --cpu-engine perf */
	CAPTURE_STAGE_WRITE,    /* writing members (-ENOSPC, ..., -EINTR: abandoned on request) */
	CAPTURE_STAGE_FINALIZE, /* the manifest and the final fsyncs */
	CAPTURE_STAGE_PRINT,    /* printing a dump to dump_to (-EPIPE, -ENOSPC, -EDQUOT, -EIO) */
};

struct capture_session;

/* Open the target, fork the interpretation workers, create the bundle
 * directory dir (new, or empty and ours; NULL for a dump that writes no
 * bundle: then capture_session_finish writes nothing) and start the
 * manifest. On
 * failure *ret_stage says which (TARGET, SETUP or OUTPUT) and nothing is
 * left behind (dir is not removed if it existed). opt must outlive the
 * session. 0 or -errno. */
int capture_session_new(const struct capture_options *opt, const char *dir,
			struct capture_session **ret, enum capture_stage *ret_stage);

/* Run the capture opt asks for (snapshot or sampling) into the bundle.
 * 0 or -errno; capture_session_stage() says where it failed. */
int capture_session_run(struct capture_session *s);

/* Write the manifest (temp file, fsync, rename): from here on the
 * directory is a bundle. 0 or -errno (stage FINALIZE). */
int capture_session_finish(struct capture_session *s);

/* Add item (taken) under key at the manifest's top level, replacing one
 * there; before capture_session_finish. For what the caller knows and the
 * engine does not (a launched command's argv and exit status). */
void capture_session_note(struct capture_session *s, const char *key, cJSON *item);

enum capture_stage capture_session_stage(const struct capture_session *s);
/* After a successful run. */
void capture_session_summary(const struct capture_session *s, struct capture_summary *ret);
/* The manifest as it stands once the session is open (bundle_id, tool,
 * target, host, started_at, annotations), as compact JSON text
 * (malloc'd; NULL on ENOMEM): what a bundle salvaged after the tool was
 * killed can still say (attach_watchdog_set_epilogue). */
char *capture_session_manifest_text(const struct capture_session *s);
/* Did the target exit while we captured it? */
bool capture_session_target_exited(const struct capture_session *s);

/* Release everything; a bundle that was not finished is abandoned (its
 * partial members removed, no manifest). NULL is a no-op. */
void capture_session_free(struct capture_session *s);

/* With DIAG_ATTACH_TRACE set in the environment, prints "diag-attach:
 * trace +MS what" to stderr, MS counted from the first call: where the
 * time of a slow exit goes, on a machine where a profiler cannot be used
 * on the profiler. Otherwise does nothing. (The one output of the engine:
 * debug level, asked for by name.) */
void capture_trace_phase(const char *what);

#endif
