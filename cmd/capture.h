/* capture: the default command. Attach to a process and write a bundle,
 * a one-shot thread snapshot (--snapshot) or a sampled capture. */
#ifndef DIAG_CMD_CAPTURE_H
#define DIAG_CMD_CAPTURE_H

int cmd_capture(int argc, char **argv);
/* diag-attach dump: one snapshot printed to stdout, grouped by stack. */
int cmd_dump(int argc, char **argv);

#endif
