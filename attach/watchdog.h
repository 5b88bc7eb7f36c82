/*
 * watchdog: private to attach/. The capture path marks the window in which
 * it holds target threads; the watchdog process started by
 * attach_watchdog_start() (attach.h) watches that mark.
 */
#ifndef DIAG_ATTACH_WATCHDOG_H
#define DIAG_ATTACH_WATCHDOG_H

#include <stdbool.h>

/* Open (true) or close (false) the hold window: stores to shared memory,
 * and a write to the watchdog's eventfd when it sleeps; a no-op without a
 * watchdog. */
void watchdog_window(bool open);

#endif
