/* diag-attach unpem FILE -o DIR: a bundle back from pem's blocks in a log. */
#ifndef DIAG_CMD_UNPEM_H
#define DIAG_CMD_UNPEM_H

int cmd_unpem(int argc, char **argv);

#endif
