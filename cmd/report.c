/* diag-attach report: option parsing and output choice; the numbers come
 * from report_model, the drawing from report_text and html. */
#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/views/html.h"
#include "bundle/views/output_file.h"
#include "bundle/views/report_model.h"
#include "bundle/views/report_text.h"
#include "bundle/text.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/open_bundle.h"
#include "cmd/cli/options.h"
#include "cmd/cli/util.h"

static void usage(FILE *out)
{
	fputs("Usage:\n"
	      " diag-attach report [options] DIR\n\n"
	      "Summarize the bundle in DIR: the target and capture window, pause\n"
	      "statistics, the hottest functions by CPU and wall time, threads (and\n"
	      "goroutines) grouped by identical stack with their state and wait channel,\n"
	      "a sparkline per timeline counter and the leak findings.\n\n"
	      "Options:\n"
	      " -j, --json               print the report as one JSON object instead\n"
	      "     --html FILE          write a self-contained HTML page (flame graphs,\n"
	      "                          timeline charts, thread groups) to FILE ('-': stdout)\n"
	      " -n, --top N              functions per table (default 15)\n"
	      "     --color[=WHEN]       colour the text: auto (default: only on a terminal\n"
	      "                          and without NO_COLOR), always, never\n"
	      " -h, --help               display this help\n\n",
	      out);
	cli_print_reader_caps(out);
	fputs("Exit status:\n"
	      "  0  report written\n"
	      "  1  DIR is not a bundle (no or malformed manifest.json), or a member is\n"
	      "     missing or altered (the report is still printed, with warnings)\n"
	      "  2  usage error\n"
	      " 10  the HTML file could not be written\n"
	      " 11  internal error (out of memory)\n"
	      " 17  a member is past a limit above: no report is made\n\n"
	      "See diag-attach(1).\n",
	      out);
}

struct report_args {
	bool json;
	const char *html;
	long top;
	int color;
};

enum { OPT_HTML = 256, OPT_COLOR };

static int take_option(void *ctx, int c, const char *arg)
{
	struct report_args *o = ctx;
	switch (c) {
	case 'j':
		o->json = true;
		break;
	case OPT_HTML:
		o->html = arg;
		break;
	case 'n':
		return cli_parse_top(arg, 100000, &o->top);
	case OPT_COLOR:
		return cli_parse_color(arg, &o->color);
	}
	return CLI_CONTINUE;
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"html", required_argument, NULL, OPT_HTML},
		{"top", required_argument, NULL, 'n'},
		{"color", optional_argument, NULL, OPT_COLOR},
		{"colour", optional_argument, NULL, OPT_COLOR},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const struct cli_command cmd = {
		.name = "report", .shortopts = "jn:h", .longopts = opts, .usage = usage,
		.take = take_option, .min_operands = 1, .max_operands = 1,
		.synopsis = "report [--json | --html FILE] DIR"};
	struct report_args o = {.top = 15, .color = -1 /* auto */};
	int rc = cli_parse_options(&cmd, argc, argv, &o);
	if (rc != CLI_CONTINUE)
		return rc;
	if (o.json && o.html) {
		die_message("--json and --html are alternatives; pick one");
		return EXIT_USAGE;
	}
	const char *dir = argv[optind];
	struct bundle_reader *r;
	rc = cli_open_bundle(dir, &r);
	if (rc != EXIT_OK)
		return rc;
	bool intact = cli_bundle_intact(r, BUNDLE_VERIFY_ALL);
	if (!intact)
		hint_message("the bundle is damaged; what follows is what could still be read");

	struct report_options ro = {.top = (size_t)o.top, .with_flame = o.html != NULL};
	cJSON *doc;
	int e = report_build_json(r, &ro, &doc);
	if (e == BUNDLE_PAST_CAP) {
		rc = cli_reader_refused(r);
		bundle_reader_free(r);
		return rc;
	}
	if (e < 0) {
		bundle_reader_free(r);
		die_message("out of memory");
		return EXIT_INTERNAL;
	}
	rc = intact ? EXIT_OK : EXIT_VERIFY_FAILED;
	if (o.json) {
		char *s = json_print(doc, true);
		if (!s) {
			rc = EXIT_INTERNAL;
		} else {
			puts(s);
			free(s);
		}
	} else if (o.html) {
		e = html_write_file(doc, o.html);
		if (e < 0) {
			die_message("cannot write '%s': %s", o.html, output_file_strerror(e));
			rc = e == -ENOMEM ? EXIT_INTERNAL : EXIT_WRITE_FAILED;
		} else if (strcmp(o.html, "-") != 0) {
			fprintf(stderr, "diag-attach: wrote %s\n", o.html);
		}
	} else {
		report_print_text(doc, stdout, cli_use_color(o.color), (size_t)o.top);
	}
	if (fflush(stdout) != 0 && rc == EXIT_OK)
		rc = EXIT_WRITE_FAILED;
	cJSON_Delete(doc);
	bundle_reader_free(r);
	return rc;
}
