/* diag-attach report DIR [--json | --html FILE]: what a bundle says, for a
 * person at a terminal, a script, or a browser. */
#ifndef DIAG_CMD_REPORT_H
#define DIAG_CMD_REPORT_H

#include "bundle/reader.h"

int cmd_report(int argc, char **argv);

/* For every command that reads a bundle: open dir, printing the failure
 * ("not a bundle", "malformed manifest") with a hint. Returns EXIT_OK with
 * *ret set, or the exit status to return (EXIT_VERIFY_FAILED for a missing
 * or malformed manifest, EXIT_INTERNAL for out of memory). */
int report_open_bundle(const char *dir, struct bundle_reader **ret);

/* Re-hash the bundle's members; print each problem to stderr as a
 * warning. Returns true if intact. */
bool report_check_intact(const char *dir);

#endif
