/* diag-attach diff A B: options and output choice; the comparison is
 * diff_model's, the drawing diff_text's. */
#include "diff.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "bundle/views/diff_model.h"
#include "bundle/views/diff_text.h"
#include "bundle/text.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/open_bundle.h"
#include "cmd/cli/options.h"
#include "cmd/cli/util.h"

static void usage(FILE *out)
{
	fputs("Usage:\n"
	      " diag-attach diff [options] A B\n\n"
	      "Compare two bundles of the same program (A before, B after): timeline\n"
	      "counters whose level or growth rate changed, with those that grow in B\n"
	      "(a leak finding, or a slope above the leak-watch floor) first; functions\n"
	      "whose share of CPU or wall time moved most; thread and goroutine groups\n"
	      "that appeared or grew.\n\n"
	      "Options:\n"
	      " -j, --json               print the comparison as one JSON object\n"
	      " -n, --top N              functions per table (default 10)\n"
	      "     --color[=WHEN]       auto (default), always, never\n"
	      " -h, --help               display this help\n\n",
	      out);
	cli_print_reader_caps(out);
	fputs("Exit status:\n"
	      "  0  compared (whatever the differences)\n"
	      "  1  A or B is not a bundle (no or malformed manifest.json)\n"
	      "  2  usage error\n"
	      " 11  internal error (out of memory)\n"
	      " 17  a member of A or B is past a limit above: nothing is compared\n\n"
	      "See diag-attach(1).\n",
	      out);
}

struct diff_args {
	bool json;
	long top;
	int color;
};

enum { OPT_COLOR = 256 };

static int take_option(void *ctx, int c, const char *arg)
{
	struct diff_args *o = ctx;
	switch (c) {
	case 'j':
		o->json = true;
		break;
	case 'n':
		return cli_parse_top(arg, LONG_MAX, &o->top);
	case OPT_COLOR:
		return cli_parse_color(arg, &o->color);
	}
	return CLI_CONTINUE;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"top", required_argument, NULL, 'n'},
		{"color", optional_argument, NULL, OPT_COLOR},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const struct cli_command cmd = {
		.name = "diff", .shortopts = "jn:h", .longopts = opts, .usage = usage,
		.take = take_option, .min_operands = 2, .max_operands = 2,
		.synopsis = "diff [--json] A B"};
	struct diff_args o = {.top = 10, .color = -1};
	int rc = cli_parse_options(&cmd, argc, argv, &o);
	if (rc != CLI_CONTINUE)
		return rc;
	struct bundle_reader *a, *b;
	rc = cli_open_bundle(argv[optind], &a);
	if (rc != EXIT_OK)
		return rc;
	rc = cli_open_bundle(argv[optind + 1], &b);
	if (rc != EXIT_OK) {
		bundle_reader_free(a);
		return rc;
	}
	cJSON *d = NULL;
	char *s = NULL;
	int e = diff_build_json(a, b, (size_t)o.top, &d);
	if (e == BUNDLE_PAST_CAP) {
		rc = cli_reader_refused(bundle_reader_refusal(a) ? a : b);
	} else if (e < 0 || (o.json && !(s = json_print(d, true)))) {
		rc = EXIT_INTERNAL;
		die_message("out of memory");
	} else if (o.json) {
		puts(s);
	} else {
		diff_print_text(d, stdout, cli_use_color(o.color));
	}
	free(s);
	cJSON_Delete(d);
	bundle_reader_free(a);
	bundle_reader_free(b);
	return rc;
}
