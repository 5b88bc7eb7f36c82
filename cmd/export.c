/* diag-attach export: choose a profile and a format; export_format does
 * the writing. */
#include "export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle/views/export_format.h"
#include "bundle/views/flame_svg.h"
#include "bundle/views/output_file.h"
#include "bundle/reader.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/open_bundle.h"
#include "cmd/cli/options.h"
#include "cmd/cli/util.h"

static void usage(FILE *out)
{
	fputs("Usage:\n"
	      " diag-attach export [options] DIR\n\n"
	      "Write a profile of the bundle in DIR in a format other viewers read.\n\n"
	      "Options:\n"
	      " -f, --format FORMAT      collapsed (default): folded stacks for FlameGraph\n"
	      "                          and inferno, one \"root;...;leaf VALUE\" line per stack;\n"
	      "                          speedscope: speedscope's JSON, one profile per thread;\n"
	      "                          svg: an interactive flame graph in one file (click to\n"
	      "                          zoom, Search or Ctrl-F for a regular expression)\n"
	      "     --profile NAME       cpu (default), wall, threads (the snapshot),\n"
	      "                          goroutine (Go targets), or any member ending in .pprof\n"
	      "     --value WHAT         samples (default for collapsed) or time (default for\n"
	      "                          speedscope; nanoseconds of CPU or wall time)\n"
	      " -t, --per-thread         collapsed, svg: add \"comm/tid\" as the outermost frame\n"
	      " -o, --output FILE        write to FILE instead of standard output\n"
	      " -h, --help               display this help\n\n"
	      "A bundle without cpu.pprof (a --snapshot capture) exports threads.pprof\n"
	      "unless --profile says otherwise.\n\n",
	      out);
	cli_print_reader_caps(out);
	fputs("Exit status:\n"
	      "  0  written\n"
	      "  1  DIR is not a bundle, or the profile cannot be decoded\n"
	      "  2  usage error, or the bundle has no such profile\n"
	      " 10  the output could not be written\n"
	      " 11  internal error (out of memory)\n"
	      " 17  the profile is past a limit above: nothing is written\n\n"
	      "See diag-attach(1).\n",
	      out);
}

struct export_args {
	const char *format, *profile, *value, *output;
	bool per_thread;
};

enum { OPT_VALUE = 256 };

static int take_option(void *ctx, int c, const char *arg)
{
	struct export_args *o = ctx;
	switch (c) {
	case 'f':
		o->format = arg;
		break;
	case 'P':
		o->profile = arg;
		break;
	case 'p':
		/* -p is a process everywhere else: never a profile here. */
		die_message("export: -p is not a profile (elsewhere it is a process id)");
		hint_message("name the profile with --profile cpu|wall|threads|NAME.pprof");
		return EXIT_USAGE;
	case OPT_VALUE:
		o->value = arg;
		break;
	case 't':
		o->per_thread = true;
		break;
	case 'o':
		o->output = arg;
		break;
	}
	return CLI_CONTINUE;
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{"format", required_argument, NULL, 'f'},
		{"profile", required_argument, NULL, 'P'},
		{"value", required_argument, NULL, OPT_VALUE},
		{"per-thread", no_argument, NULL, 't'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const struct cli_command cmd = {
		.name = "export", .shortopts = "f:p:to:h", .longopts = opts, .usage = usage,
		.take = take_option, .min_operands = 1, .max_operands = 1,
		.synopsis = "export [--format collapsed|speedscope|svg] [--profile cpu|wall] DIR"};
	struct export_args o = {.format = "collapsed"};
	int rc = cli_parse_options(&cmd, argc, argv, &o);
	if (rc != CLI_CONTINUE)
		return rc;
	return export_run(argv[optind], o.format, o.profile, o.value, o.per_thread, o.output);
}

int export_run(const char *dir, const char *format, const char *profile, const char *value,
	       bool per_thread, const char *output)
{
	int rc;
	bool speedscope = strcmp(format, "speedscope") == 0, svg = strcmp(format, "svg") == 0;
	if (!speedscope && !svg && strcmp(format, "collapsed") != 0) {
		die_message("unknown format '%s'", format);
		hint_message("formats: collapsed, speedscope, svg");
		return EXIT_USAGE;
	}
	if (value && strcmp(value, "samples") != 0 && strcmp(value, "time") != 0) {
		die_message("invalid --value '%s': samples or time", value);
		return EXIT_USAGE;
	}
	struct bundle_reader *r;
	rc = cli_open_bundle(dir, &r);
	if (rc != EXIT_OK)
		return rc;

	char member[256];
	if (!profile)
		profile = bundle_reader_has(r, "cpu.pprof") ? "cpu" : "threads";
	size_t plen = strlen(profile);
	if (plen > 6 && strcmp(profile + plen - 6, ".pprof") == 0)
		snprintf(member, sizeof(member), "%s", profile);
	else
		snprintf(member, sizeof(member), "%s.pprof", profile);
	if (!bundle_reader_has(r, member)) {
		die_message("bundle '%s' has no %s", dir, member);
		const cJSON *m;
		char list[512] = "";
		cJSON_ArrayForEach(
			m, cJSON_GetObjectItemCaseSensitive(bundle_reader_manifest(r), "members"))
		{
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(m, "name");
			size_t l = cJSON_IsString(n) ? strlen(n->valuestring) : 0;
			if (l > 6 && strcmp(n->valuestring + l - 6, ".pprof") == 0 &&
			    strlen(list) + l + 3 < sizeof(list))
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
					 *list ? ", " : "", n->valuestring);
		}
		hint_message("profiles in this bundle: %s", *list ? list : "none");
		bundle_reader_free(r);
		return EXIT_USAGE;
	}
	const struct bundle_profile *p;
	int e = bundle_reader_profile(r, member, &p);
	if (e == BUNDLE_PAST_CAP) {
		rc = cli_reader_refused(r);
		bundle_reader_free(r);
		return rc;
	}
	if (e < 0 && e != -ENOMEM && bundle_reader_failure(r)) {
		/* Not read at all (altered, missing, behind a link): said as
		 * such, not as a decoding error. */
		rc = cli_reader_failed(r, e);
		bundle_reader_free(r);
		return rc;
	}
	if (e < 0) {
		die_message("cannot decode %s/%s: %s", dir, member,
			    e == -EBADMSG ? "not a gzipped pprof profile" : strerror(-e));
		hint_message("check the bundle with: diag-attach verify %s", dir);
		bundle_reader_free(r);
		return e == -ENOMEM ? EXIT_INTERNAL : EXIT_VERIFY_FAILED;
	}
	bool by_time = value ? strcmp(value, "time") == 0 : speedscope || svg;
	size_t vi = by_time && p->nvalues ? p->nvalues - 1 : 0;

	struct output_file of;
	e = output_file_open(&of, output);
	if (e < 0) {
		die_message("cannot write '%s': %s", output, output_file_strerror(e));
		bundle_reader_free(r);
		return EXIT_WRITE_FAILED;
	}
	FILE *out = of.fp;
	if (speedscope || svg) {
		char who[200], name[256];
		snprintf(name, sizeof(name), "%s %s",
			 bundle_target_describe(bundle_reader_manifest(r), who, sizeof(who)), profile);
		e = svg ? export_svg(p, vi, per_thread, name, out) : export_speedscope(p, vi, name, out);
	} else {
		e = export_collapsed(p, vi, per_thread, out);
	}
	if (fflush(out) != 0 && e == 0)
		e = -EIO;
	e = output_file_close(&of, e);
	bundle_reader_free(r);
	if (e == -ENOMEM) {
		die_message("out of memory");
		return EXIT_INTERNAL;
	}
	if (e < 0) {
		die_message("cannot write %s: %s", output ? output : "standard output",
			    strerror(-e));
		return EXIT_WRITE_FAILED;
	}
	return EXIT_OK;
}
