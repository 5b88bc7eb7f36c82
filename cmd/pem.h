/* diag-attach pem DIR / unpem FILE -o DIR: a bundle through a log
 * pipeline and back. */
#ifndef DIAG_CMD_PEM_H
#define DIAG_CMD_PEM_H

int cmd_pem(int argc, char **argv);
int cmd_unpem(int argc, char **argv);

#endif
