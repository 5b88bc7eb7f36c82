/*
 * options: the option loop and the option values the subcommands share,
 * so that every subcommand answers --help, an unknown option, --color and
 * --top in the same words.
 *
 * Every function that can fail prints why (die_message) and returns the
 * exit status for the subcommand to return; CLI_CONTINUE means "no
 * failure, go on".
 */
#ifndef DIAG_CMD_CLI_OPTIONS_H
#define DIAG_CMD_CLI_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

/* Not an exit status: every exit status is >= 0. */
#define CLI_CONTINUE (-1)

/* A subcommand's options as getopt_long sees them. */
struct cli_command {
	const char *name;	       /* "report": the subcommand as typed */
	const char *shortopts;	       /* getopt's string; must hold 'h' */
	const struct option *longopts; /* must hold {"help", no_argument, NULL, 'h'} */
	void (*usage)(FILE *out);      /* the --help text */
	/* One option c other than 'h' (its argument in arg, NULL for none):
	 * store it in ctx. Returns CLI_CONTINUE, or the exit status to return
	 * after printing why (an invalid value). */
	int (*take)(void *ctx, int c, const char *arg);
	/* After the options: how many operands, and the one-line synopsis
	 * ("report [--json | --html FILE] DIR") printed as "usage: diag-attach
	 * SYNOPSIS" when there are fewer or more. */
	int min_operands, max_operands;
	const char *synopsis;
};

/* Run getopt_long over argv from its start (the subcommand's name is
 * argv[0]), then count the operands. Returns CLI_CONTINUE with the operands
 * from optind on, or the status to exit with now: EXIT_OK after --help
 * (printed to stdout), EXIT_USAGE after an unknown option or missing
 * argument (getopt's message plus "Try 'diag-attach NAME --help'") or a
 * wrong number of operands (the synopsis), or what take returned. */
int cli_parse_options(const struct cli_command *cmd, int argc, char **argv, void *ctx);

/* Print the synopsis as a usage error (for a rule the operand count does
 * not express, e.g. a required option) and return EXIT_USAGE. */
int cli_usage_error(const struct cli_command *cmd);

/* --color[=WHEN]: NULL or "always" 1, "never" 0, "auto" -1 (into *ret).
 * Otherwise prints the accepted words and returns EXIT_USAGE. */
int cli_parse_color(const char *arg, int *ret);
/* Whether to colour standard output for a --color value: auto means a
 * terminal and no NO_COLOR in the environment. */
bool cli_use_color(int color);

/* --top N: a whole number from 1 to max. Otherwise prints why and returns
 * EXIT_USAGE. */
int cli_parse_top(const char *arg, long max, long *ret);

#endif
