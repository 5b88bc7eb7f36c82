/* diag-attach: dispatch to a subcommand. The capture command is the
 * default (diag-attach -p PID ...), as on the design card. */
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "diff.h"
#include "exit_codes.h"
#include "export.h"
#include "pem.h"
#include "report.h"
#include "top.h"
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
};

int main(int argc, char **argv)
{
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
