/* diag-attach: dispatch to a subcommand. The capture command is the
 * default (diag-attach -p PID ...), as on the design card. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "diff.h"
#include "cmd/cli/exit_codes.h"
#include "export.h"
#include "pem.h"
#include "unpem.h"
#include "report.h"
#include "top.h"
#include "watchdog_epilogue.h"
#include "verify.h"

struct subcommand {
	const char *name;
	int (*run)(int argc, char **argv);
};

static const struct subcommand subcommands[] = {
	{"verify", cmd_verify},
	{"capture", cmd_capture},
	{"report", cmd_report},
	{"export", cmd_export},
	{"pem", cmd_pem},
	{"unpem", cmd_unpem},
	{"diff", cmd_diff},
	{"top", cmd_top},
	{"dump", cmd_dump},
	/* Not for users: what the watchdog runs once it has killed us. */
	{WATCHDOG_EPILOGUE, cmd_watchdog_epilogue},
};

/* Started with stdin, stdout or stderr closed, the next file we open would
 * take that number: our children keep 0-2 as stdio, so the target's /proc
 * directory, or its capture lock, would live on in a worker (seen: a
 * refused run's lock outlived it in its dying worker, and the next run was
 * told the target was "already traced"), and our messages could land in
 * a bundle member. Fill them with /dev/null first. */
static void ensure_stdio_open(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		int null = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
		if (null >= 0 && null != fd) {
			dup2(null, fd);
			close(null);
		}
	}
}

int main(int argc, char **argv)
{
	ensure_stdio_open();
	if (argc >= 2 && argv[1][0] != '-') {
		for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
			if (strcmp(argv[1], subcommands[i].name) == 0)
				return subcommands[i].run(argc - 1, argv + 1);
		fprintf(stderr, "diag-attach: unknown command '%s'\n", argv[1]);
		fputs("Try 'diag-attach --help' for more information.\n", stderr);
		return EXIT_USAGE;
	}
	return cmd_capture(argc, argv);
}
