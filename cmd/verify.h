/* diag-attach verify DIR: re-hash every member of a bundle. */
#ifndef DIAG_CMD_VERIFY_H
#define DIAG_CMD_VERIFY_H

int cmd_verify(int argc, char **argv);

#endif
