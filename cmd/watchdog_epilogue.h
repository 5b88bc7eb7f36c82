/*
 * watchdog_epilogue: what is left to do once the watchdog has killed a
 * capture that held its target too long. The killed tool can write
 * nothing, so the watchdog (attach.h) runs the tool's executable once
 * more as "diag-attach __watchdog-epilogue DIR MANIFEST LIMIT_MS HELD_MS":
 * it gives DIR, which has no manifest, one that lists what was written
 * and says the capture was ended by the watchdog (bundle_salvage), and
 * says so in one line on the killed tool's standard error.
 */
#ifndef DIAG_CMD_WATCHDOG_EPILOGUE_H
#define DIAG_CMD_WATCHDOG_EPILOGUE_H

#include "cmd/engine/engine.h"

#define WATCHDOG_EPILOGUE "__watchdog-epilogue"

/* Tell the running watchdog how to finish the bundle in dir of session s
 * should it fire (the manifest as it stands now goes with it). Best
 * effort: nothing is said when it cannot. */
void watchdog_epilogue_arm(const struct capture_session *s, const char *dir);

/* The subcommand the watchdog runs. Exit 0 when the bundle was salvaged
 * (or had a manifest already), 10 when it could not be written, 2 for
 * arguments that are not the watchdog's. */
int cmd_watchdog_epilogue(int argc, char **argv);

#endif
