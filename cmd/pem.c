/* diag-attach pem DIR: a bundle as text blocks for a log pipeline;
 * options and messages (the format is pem_codec's; unpem.c goes back). */
#include "pem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/views/output_file.h"
#include "bundle/views/pem_codec.h"
#include "bundle/text.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/open_bundle.h"
#include "cmd/cli/options.h"
#include "cmd/cli/util.h"

static void pem_usage(FILE *out)
{
	fputs("Usage:\n"
	      " diag-attach pem [options] DIR\n\n"
	      "Print the bundle in DIR as PEM-armoured text blocks (\"-----BEGIN " PEM_LABEL
	      "-----\"),\n"
	      "one per file, that survive a log pipeline: print them where logs are\n"
	      "collected (kubectl logs, journald, CI output), and rebuild the bundle\n"
	      "elsewhere with 'diag-attach unpem'. Members that are not gzip already are\n"
	      "gzipped first; every block carries the file's size and sha256. Every\n"
	      "member is read once, without following a symbolic link, and checked\n"
	      "against the manifest before anything is printed: what is printed is what\n"
	      "was checked (the bundle is held in memory meanwhile).\n\n"
	      "Options:\n"
	      " -o, --output FILE        write to FILE instead of standard output\n"
	      " -h, --help               display this help\n\n"
	      "Exit status:\n"
	      "  0  printed\n"
	      "  1  DIR is not a bundle, a member is missing, altered, not a regular\n"
	      "     file or behind a symbolic link, or a file is not listed\n"
	      "  2  usage error\n"
	      " 10  the output could not be written\n"
	      " 11  internal error (out of memory)\n"
	      " 17  a member is larger than the reader's limit (see report --help)\n\n"
	      "See diag-attach(1).\n",
	      out);
}

/* pem's one option: -o FILE. */
struct pem_args {
	const char *output;
};

static int take_option(void *ctx, int c, const char *arg)
{
	struct pem_args *o = ctx;
	if (c == 'o')
		o->output = arg;
	return CLI_CONTINUE;
}

int cmd_pem(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const struct cli_command cmd = {
		.name = "pem", .shortopts = "o:h", .longopts = opts, .usage = pem_usage,
		.take = take_option, .min_operands = 1, .max_operands = 1,
		.synopsis = "pem [-o FILE] DIR"};
	struct pem_args o = {0};
	int rc = cli_parse_options(&cmd, argc, argv, &o);
	if (rc != CLI_CONTINUE)
		return rc;
	const char *output = o.output;
	const char *dir = argv[optind];
	struct bundle_reader *r;
	rc = cli_open_bundle(dir, &r);
	if (rc != EXIT_OK)
		return rc;
	/* Shipping a damaged bundle through logs only moves the problem
	 * somewhere harder to look at: refuse up front. Here only what needs
	 * no member opened (files the manifest does not list); each member
	 * is checked as pem_encode_bundle reads it, once, on the very bytes
	 * it encodes: a check here and a second read to encode would leave
	 * a window to swap the file (or a directory on its path) between
	 * the two. */
	if (!cli_bundle_intact(r, BUNDLE_VERIFY_UNLISTED)) {
		die_message("bundle '%s' is damaged; not encoding it", dir);
		hint_message("see: diag-attach verify %s", dir);
		bundle_reader_free(r);
		return EXIT_VERIFY_FAILED;
	}
	struct output_file of;
	int e = output_file_open(&of, output);
	if (e < 0) {
		die_message("cannot write '%s': %s", output, output_file_strerror(e));
		bundle_reader_free(r);
		return EXIT_WRITE_FAILED;
	}
	/* A failure to read the bundle and one to write the text are told
	 * apart; either leaves no output file. */
	e = pem_encode_bundle(r, of.fp);
	int w = ferror(of.fp) ? -EIO : 0;
	w = output_file_close(&of, e < 0 ? e : w);
	if (e == BUNDLE_PAST_CAP) {
		rc = cli_reader_refused(r);
	} else if (e == -ENOMEM || w == -ENOMEM) {
		die_message("out of memory");
		rc = EXIT_INTERNAL;
	} else if ((e == 0 || e == -EIO) && w < 0) {
		die_message("cannot write %s: %s", output ? output : "standard output",
			    strerror(-w));
		rc = EXIT_WRITE_FAILED;
	} else if (e < 0) {
		/* Which member, and why: nothing was printed. */
		rc = cli_reader_failed(r, e);
	}
	bundle_reader_free(r);
	return rc;
}
