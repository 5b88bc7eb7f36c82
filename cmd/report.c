/* diag-attach report: option parsing and output choice; the numbers come
 * from report_model, the drawing from report_text and html. */
#include "report.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "cmd/cli/exit_codes.h"
#include "bundle/read/html.h"
#include "bundle/read/report_model.h"
#include "bundle/read/report_text.h"
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
	      " -h, --help               display this help\n\n"
	      "Exit status:\n"
	      "  0  report written\n"
	      "  1  DIR is not a bundle (no or malformed manifest.json), or a member is\n"
	      "     missing or altered (the report is still printed, with warnings)\n"
	      "  2  usage error\n"
	      " 10  the HTML file could not be written\n"
	      " 11  internal error (out of memory)\n\n"
	      "See diag-attach(1).\n",
	      out);
}

int report_open_bundle(const char *dir, struct bundle_reader **ret)
{
	int e = bundle_reader_open(dir, ret);
	if (e == 0)
		return EXIT_OK;
	if (e == -ENOENT) {
		die_message("'%s' is not a bundle: no manifest.json", dir);
		hint_message("a capture that was interrupted leaves no manifest; capture again");
	} else if (e == -EBADMSG) {
		die_message("'%s': manifest.json is malformed", dir);
	} else if (e == -ENOMEM) {
		die_message("out of memory");
		return EXIT_INTERNAL;
	} else {
		die_message("cannot read bundle '%s': %s", dir, strerror(-e));
	}
	return EXIT_VERIFY_FAILED;
}

static void warn_problem(void *ctx, const char *member, const char *problem)
{
	bool *intact = ctx;
	*intact = false;
	fprintf(stderr, "diag-attach: warning: %s: %s\n", member, problem);
}

bool report_check_intact(const char *dir)
{
	bool intact = true;
	int r = bundle_verify(dir, warn_problem, &intact);
	return r == 0 && intact;
}

int cmd_report(int argc, char **argv)
{
	enum { OPT_HTML = 256, OPT_COLOR };
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"html", required_argument, NULL, OPT_HTML},
		{"top", required_argument, NULL, 'n'},
		{"color", optional_argument, NULL, OPT_COLOR},
		{"colour", optional_argument, NULL, OPT_COLOR},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false;
	const char *html = NULL;
	long top = 15;
	int color = -1; /* auto */
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "jn:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case OPT_HTML:
			html = optarg;
			break;
		case 'n': {
			char *end;
			top = strtol(optarg, &end, 10);
			if (*end || top <= 0 || top > 100000) {
				die_message("invalid --top '%s': a positive number", optarg);
				return EXIT_USAGE;
			}
			break;
		}
		case OPT_COLOR:
			if (!optarg || strcmp(optarg, "always") == 0)
				color = 1;
			else if (strcmp(optarg, "never") == 0)
				color = 0;
			else if (strcmp(optarg, "auto") == 0)
				color = -1;
			else {
				die_message("invalid --color '%s': auto, always or never", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			fputs("Try 'diag-attach report --help' for more information.\n", stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		die_message("usage: diag-attach report [--json | --html FILE] DIR");
		return EXIT_USAGE;
	}
	if (json && html) {
		die_message("--json and --html are alternatives; pick one");
		return EXIT_USAGE;
	}
	const char *dir = argv[optind];
	struct bundle_reader *r;
	int rc = report_open_bundle(dir, &r);
	if (rc != EXIT_OK)
		return rc;
	bool intact = report_check_intact(dir);
	if (!intact)
		hint_message("the bundle is damaged; what follows is what could still be read");

	struct report_options ro = {.top = (size_t)top, .with_flame = html != NULL};
	cJSON *doc;
	if (report_build_json(r, &ro, &doc) < 0) {
		bundle_reader_free(r);
		die_message("out of memory");
		return EXIT_INTERNAL;
	}
	rc = intact ? EXIT_OK : EXIT_VERIFY_FAILED;
	if (json) {
		char *s = cJSON_Print(doc);
		if (!s) {
			rc = EXIT_INTERNAL;
		} else {
			puts(s);
			free(s);
		}
	} else if (html) {
		int e = html_write_file(doc, html);
		if (e < 0) {
			die_message("cannot write '%s': %s", html, strerror(-e));
			rc = e == -ENOMEM ? EXIT_INTERNAL : EXIT_WRITE_FAILED;
		} else if (strcmp(html, "-") != 0) {
			fprintf(stderr, "diag-attach: wrote %s\n", html);
		}
	} else {
		bool use_color =
			color == 1 || (color == -1 && isatty(STDOUT_FILENO) && !getenv("NO_COLOR"));
		report_print_text(doc, stdout, use_color, (size_t)top);
	}
	if (fflush(stdout) != 0 && rc == EXIT_OK)
		rc = EXIT_WRITE_FAILED;
	cJSON_Delete(doc);
	bundle_reader_free(r);
	return rc;
}
