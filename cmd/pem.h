/* diag-attach pem DIR: a bundle through a log pipeline (unpem.h: back). */
#ifndef DIAG_CMD_PEM_H
#define DIAG_CMD_PEM_H

int cmd_pem(int argc, char **argv);

#endif
