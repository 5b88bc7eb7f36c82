/* options: see options.h. */
#include "cmd/cli/options.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli/exit_codes.h"
#include "cmd/cli/util.h"

int cli_parse_options(const struct cli_command *cmd, int argc, char **argv, void *ctx)
{
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, cmd->shortopts, cmd->longopts, NULL)) != -1) {
		if (c == 'h') {
			cmd->usage(stdout);
			return EXIT_OK;
		}
		if (c == '?' || c == ':') {
			fprintf(stderr, "Try 'diag-attach %s --help' for more information.\n",
				cmd->name);
			return EXIT_USAGE;
		}
		int rc = cmd->take(ctx, c, optarg);
		if (rc != CLI_CONTINUE)
			return rc;
	}
	if (argc - optind < cmd->min_operands || argc - optind > cmd->max_operands)
		return cli_usage_error(cmd);
	return CLI_CONTINUE;
}

int cli_usage_error(const struct cli_command *cmd)
{
	die_message("usage: diag-attach %s", cmd->synopsis);
	return EXIT_USAGE;
}

int cli_parse_color(const char *arg, int *ret)
{
	if (!arg || strcmp(arg, "always") == 0)
		*ret = 1;
	else if (strcmp(arg, "never") == 0)
		*ret = 0;
	else if (strcmp(arg, "auto") == 0)
		*ret = -1;
	else {
		die_message("invalid --color '%s': auto, always or never", arg);
		return EXIT_USAGE;
	}
	return CLI_CONTINUE;
}

bool cli_use_color(int color)
{
	return color == 1 || (color == -1 && isatty(STDOUT_FILENO) && !getenv("NO_COLOR"));
}

int cli_parse_top(const char *arg, long max, long *ret)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (*end || v <= 0 || v > max) {
		die_message("invalid --top '%s': a positive number", arg);
		return EXIT_USAGE;
	}
	*ret = v;
	return CLI_CONTINUE;
}
