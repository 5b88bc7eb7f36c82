/* diag-attach pem / unpem: options and messages; the format is in
 * pem_codec. */
#include "pem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/read/output_file.h"
#include "bundle/read/pem_codec.h"
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
	      "gzipped first; every block carries the file's size and sha256.\n\n"
	      "Options:\n"
	      " -o, --output FILE        write to FILE instead of standard output\n"
	      " -h, --help               display this help\n\n"
	      "Exit status:\n"
	      "  0  printed\n"
	      "  1  DIR is not a bundle, or a member is missing or altered\n"
	      "  2  usage error\n"
	      " 10  the output could not be written\n"
	      " 11  internal error (out of memory)\n"
	      " 16  a member is larger than the reader's limit (see report --help)\n\n"
	      "See diag-attach(1).\n",
	      out);
}

static void unpem_usage(FILE *out)
{
	fputs("Usage:\n"
	      " diag-attach unpem [options] -o DIR [FILE]\n\n"
	      "Rebuild a bundle from the blocks 'diag-attach pem' printed, found anywhere\n"
	      "in FILE (or standard input, or '-'), e.g. a saved log. Other log lines,\n"
	      "CRLF line ends, repeated blocks and a fixed-width prefix on every line\n"
	      "(timestamps, pod names) are tolerated. Each file is checked against the\n"
	      "size and sha256 in its block, the manifest is written last, and the\n"
	      "result is verified as 'diag-attach verify' does.\n\n"
	      "Options:\n"
	      " -o, --output DIR         the bundle directory to create (absent or empty)\n"
	      "     --bundle ID          the bundle to rebuild when the log holds several\n"
	      "                          (default: the first one found)\n"
	      " -h, --help               display this help\n\n"
	      "Exit status:\n"
	      "  0  rebuilt and verified\n"
	      "  1  no blocks found, a block is missing or damaged, or the rebuilt\n"
	      "     bundle does not verify\n"
	      "  2  usage error\n"
	      "  9  DIR exists and is not empty, or cannot be created\n"
	      " 10  writing the bundle failed\n"
	      " 11  internal error (out of memory)\n\n"
	      "See diag-attach(1).\n",
	      out);
}

/* pem's and unpem's options: -o and, for unpem, --bundle. */
struct pem_args {
	const char *output, *want;
};

enum { OPT_BUNDLE = 256 };

static int take_option(void *ctx, int c, const char *arg)
{
	struct pem_args *o = ctx;
	if (c == 'o')
		o->output = arg;
	else if (c == OPT_BUNDLE)
		o->want = arg;
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
	 * somewhere harder to look at: refuse up front. */
	if (!cli_bundle_intact(dir)) {
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
		bundle_reader_free(r);
		return rc;
	}
	bundle_reader_free(r);
	if (e == -ENOMEM || w == -ENOMEM) {
		die_message("out of memory");
		return EXIT_INTERNAL;
	}
	if ((e == 0 || e == -EIO) && w < 0) {
		die_message("cannot write %s: %s", output ? output : "standard output",
			    strerror(-w));
		return EXIT_WRITE_FAILED;
	}
	if (e < 0) {
		die_message("cannot read bundle '%s': %s", dir, strerror(-e));
		return EXIT_VERIFY_FAILED;
	}
	return EXIT_OK;
}

static int read_all(const char *path, char **ret, size_t *ret_len)
{
	int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	int e = buf ? 0 : -ENOMEM;
	while (e == 0) {
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb) {
				e = -ENOMEM;
				break;
			}
			buf = nb;
		}
		ssize_t k = read(fd, buf + n, cap - n - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			e = -errno;
		else if (k == 0)
			break;
		else
			n += (size_t)k;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	if (e < 0) {
		free(buf);
		return e;
	}
	buf[n] = '\0';
	*ret = buf;
	*ret_len = n;
	return 0;
}

static void verify_problem(void *ctx, const char *member, const char *problem)
{
	(void)ctx;
	fprintf(stderr, "diag-attach: %s: %s\n", member, problem);
}

int cmd_unpem(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"bundle", required_argument, NULL, OPT_BUNDLE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const struct cli_command cmd = {
		.name = "unpem", .shortopts = "o:h", .longopts = opts, .usage = unpem_usage,
		.take = take_option, .min_operands = 0, .max_operands = 1,
		.synopsis = "unpem -o DIR [FILE]"};
	struct pem_args o = {0};
	int rc = cli_parse_options(&cmd, argc, argv, &o);
	if (rc != CLI_CONTINUE)
		return rc;
	const char *output = o.output, *want = o.want;
	if (!output)
		return cli_usage_error(&cmd);
	const char *input = optind < argc ? argv[optind] : "-";
	char *text = NULL;
	size_t len = 0;
	int e = read_all(input, &text, &len);
	if (e < 0) {
		die_message("cannot read '%s': %s", input, strerror(-e));
		return e == -ENOMEM ? EXIT_INTERNAL : EXIT_USAGE;
	}
	struct pem_bundle *b;
	e = pem_decode(text, len, want, &b);
	free(text);
	if (e == -ENOENT) {
		if (want)
			die_message("no blocks of bundle %s in '%s'", want, input);
		else
			die_message("no '" PEM_LABEL "' blocks in '%s'", input);
		hint_message("the input must contain the output of 'diag-attach pem'");
		return EXIT_VERIFY_FAILED;
	}
	if (e < 0) {
		die_message("out of memory");
		return EXIT_INTERNAL;
	}
	if (b->other_bundles)
		fprintf(stderr, "diag-attach: warning: skipped %zu block(s) of other bundles%s\n",
			b->other_bundles, want ? "" : " (choose one with --bundle ID)");
	size_t missing = 0;
	for (size_t i = 0; i < b->parts; i++)
		if (!b->have[i]) {
			missing++;
			die_message("block %zu of %zu of bundle %s is missing or damaged", i + 1,
				    b->parts, b->bundle_id);
		}
	if (missing) {
		if (b->bad_blocks)
			hint_message(
				"%zu block(s) failed their size or sha256 check: the log pipeline "
				"changed or cut lines (a prefix of varying width is not supported)",
				b->bad_blocks);
		else
			hint_message("the log was truncated or lines were dropped; print it again "
				     "with 'diag-attach pem'");
		pem_bundle_free(b);
		return EXIT_VERIFY_FAILED;
	}
	e = pem_bundle_write(b, output);
	char id[128];
	snprintf(id, sizeof(id), "%s", b->bundle_id);
	size_t parts = b->parts;
	pem_bundle_free(b);
	if (e == -EEXIST || e == -ENOTDIR || e == -EACCES || e == -ENOENT || e == -ELOOP ||
	    e == BUNDLE_UNSAFE_DIR) {
		die_message("cannot create bundle directory '%s': %s", output,
			    e == -EEXIST  ? "it exists and is not empty"
			    : e == -ELOOP ? "it, or a directory in it, is a symbolic link; "
					    "refusing to follow it"
			    : e == BUNDLE_UNSAFE_DIR
				? "it is another user's, or writable by others; refusing it"
				: strerror(-e));
		return EXIT_OUTPUT_DIR;
	}
	if (e == -EINVAL) {
		die_message("refusing a member name that leaves the bundle directory");
		return EXIT_VERIFY_FAILED;
	}
	if (e < 0) {
		die_message("cannot write bundle '%s': %s", output, strerror(-e));
		return e == -ENOMEM ? EXIT_INTERNAL : EXIT_WRITE_FAILED;
	}
	int v = bundle_verify(output, verify_problem, NULL);
	if (v != 0) {
		die_message("rebuilt bundle '%s' does not verify", output);
		return EXIT_VERIFY_FAILED;
	}
	fprintf(stderr, "diag-attach: rebuilt bundle %s in %s (%zu files), verified\n", id, output,
		parts);
	return EXIT_OK;
}
