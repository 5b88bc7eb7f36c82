/* diag-attach top -p PID: a live view of the hottest functions and of what
 * each thread is doing now, refreshed every second; q quits and detaches. */
#ifndef DIAG_CMD_TOP_H
#define DIAG_CMD_TOP_H

int cmd_top(int argc, char **argv);

#endif
