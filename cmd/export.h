/* diag-attach export DIR --format collapsed|speedscope: profiles for
 * FlameGraph, inferno and speedscope. */
#ifndef DIAG_CMD_EXPORT_H
#define DIAG_CMD_EXPORT_H

int cmd_export(int argc, char **argv);

#endif
