/* diag-attach report DIR [--json | --html FILE]: what a bundle says, for a
 * person at a terminal, a script, or a browser. */
#ifndef DIAG_CMD_REPORT_H
#define DIAG_CMD_REPORT_H

int cmd_report(int argc, char **argv);

#endif
