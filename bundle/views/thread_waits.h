/*
 * thread_waits: who waits on whom, as a snapshot's threads.txt says it
 * (cmd/engine/waits.h writes it): the lines before the first thread (a
 * "DEADLOCK: ..." per cycle, then "N threads wait for X held by T ...")
 * and each thread's own "waits for ..." / "not run for ..." line under its
 * header. The text is the bundle's: readers print it escaped.
 */
#ifndef DIAG_BUNDLE_VIEWS_THREAD_WAITS_H
#define DIAG_BUNDLE_VIEWS_THREAD_WAITS_H

#include <cjson/cJSON.h>

/* Append the summary lines of threads.txt (txt, NUL-terminated) to list,
 * deadlocks first as the file has them. 0 or -ENOMEM. */
int thread_waits_summary(const char *txt, cJSON *list);

/* The wait line of the thread whose "Thread TID ..." header starts at
 * header, malloc'd, or NULL (none, or ENOMEM). */
char *thread_waits_line(const char *header);

#endif
