/* diag-attach unpem FILE -o DIR: a bundle rebuilt from pem's blocks in a
 * log, refused whole when anything in it is not what a bundle holds;
 * options and messages (the format is pem_codec's). */
#include "cmd/unpem.h"

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

static void unpem_usage(FILE *out)
{
	fprintf(out,
		"Usage:\n"
		" diag-attach unpem [options] -o DIR [FILE]\n\n"
		"Rebuild a bundle from the blocks 'diag-attach pem' printed, found anywhere\n"
		"in FILE (or standard input, or '-'), e.g. a saved log. Other log lines,\n"
		"CRLF line ends, repeated blocks and a fixed-width prefix on every line\n"
		"(timestamps, pod names) are tolerated. Each file is decoded into DIR as\n"
		"its block is read, and kept if it matches the size and sha256 in its\n"
		"block; the manifest is written last, and the result is verified as\n"
		"'diag-attach verify' does. A block whose member name would leave DIR,\n"
		"holds a control character or repeats another's is refused, as is a\n"
		"member larger than the reader's limit (%llu MiB; manifest.json %llu MiB)\n"
		"or a bundle whose members come to more than the budget below, from the\n"
		"blocks' headers, before they are decoded. A refused or failed rebuild\n"
		"leaves nothing in DIR (and no DIR, if unpem made it).\n\n"
		"Options:\n"
		" -o, --output DIR         the bundle directory to create (absent or empty)\n"
		"     --bundle ID          the bundle to rebuild when the log holds several\n"
		"                          (default: the first one found)\n"
		"     --max-total MIB      the most the bundle's members may come to in all\n"
		"                          (default %llu MiB)\n"
		" -h, --help               display this help\n\n"
		"Exit status:\n"
		"  0  rebuilt and verified\n"
		"  1  no blocks found, a block is missing or damaged, or the rebuilt\n"
		"     bundle does not verify\n"
		"  2  usage error\n"
		"  9  DIR exists and is not empty, or cannot be created\n"
		" 10  writing the bundle failed\n"
		" 11  internal error (out of memory)\n"
		" 16  a block names a member outside DIR (an absolute or '..' name), one\n"
		"     with a control character or that no bundle can hold, or a member\n"
		"     twice: nothing is written\n"
		" 17  a member is larger than the reader's limit, or the members come to\n"
		"     more than --max-total: nothing is written\n\n"
		"See diag-attach(1).\n",
		BUNDLE_MAX_MEMBER_BYTES >> 20, BUNDLE_MAX_MANIFEST_BYTES >> 20,
		(unsigned long long)(PEM_MAX_TOTAL_BYTES >> 20));
}

/* unpem's options: -o, --bundle, --max-total. */
struct pem_args {
	const char *output, *want;
	uint64_t max_total; /* bytes */
};

enum { OPT_BUNDLE = 256, OPT_MAX_TOTAL };

static int take_option(void *ctx, int c, const char *arg)
{
	struct pem_args *o = ctx;
	if (c == 'o') {
		o->output = arg;
	} else if (c == OPT_BUNDLE) {
		o->want = arg;
	} else if (c == OPT_MAX_TOTAL) {
		char *end;
		errno = 0;
		unsigned long long mib = strtoull(arg, &end, 10);
		/* Up to 1 PiB: past that the MiB no longer fit in bytes. */
		if (*arg < '0' || *arg > '9' || *end || errno || mib == 0 || mib > (1ull << 30)) {
			die_message("invalid --max-total '%s': a positive number of MiB", arg);
			return EXIT_USAGE;
		}
		o->max_total = (uint64_t)mib << 20;
	}
	return CLI_CONTINUE;
}

/* What the log names (members, the bundle id) is whatever its writer
 * wanted: it reaches the terminal through escape_text only. */
static void verify_problem(void *ctx, const char *member, const char *problem)
{
	(void)ctx;
	fputs("diag-attach: ", stderr);
	escape_text_put(member, stderr);
	fprintf(stderr, ": %s\n", problem);
}

/* A malloc'd escaped form of name (len bytes; a NUL among them is shown
 * as \x00), cut after SHOWN_MAX bytes: the start of a hostile name is
 * enough to tell it, and the message stays one line. NULL on ENOMEM. */
#define SHOWN_MAX 120
static char *shown(const char *name, size_t len)
{
	/* escape_text writes at most 4 bytes per byte of name (\xNN). */
	size_t size = 4 * len + 8;
	char *out = malloc(size);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0;;) {
		escape_text(name + i, out + o, size - o);
		o += strlen(out + o);
		i += strlen(name + i);
		if (i >= len)
			break;
		memcpy(out + o, "\\x00", 5);
		o += 4;
		i++;
	}
	if (o > SHOWN_MAX) {
		o = SHOWN_MAX;
		while (o && ((unsigned char)out[o] & 0xc0) == 0x80)
			o--; /* not inside a UTF-8 character */
		memcpy(out + o, "...", 4);
	}
	return out;
}

/* The one line that says why b is not written. */
static void say_refusal(const struct pem_bundle *b)
{
	char *name = shown(b->refused_name, b->refused_len);
	const char *n = name ? name : "?";
	switch (b->refusal) {
	case PEM_NAME_ESCAPES:
		die_message("member name '%s' (part %zu) escapes the output directory; nothing "
			    "was written",
			    n, b->refused_part);
		break;
	case PEM_NAME_CONTROL:
		die_message("member name '%s' (part %zu) holds a control character; nothing was "
			    "written",
			    n, b->refused_part);
		break;
	case PEM_NAME_INVALID:
		die_message("member name '%s' (part %zu) is not a name a bundle member can have; "
			    "nothing was written",
			    n, b->refused_part);
		break;
	case PEM_NAME_DUPLICATE:
		die_message("duplicate member '%s' (parts %zu and %zu); nothing was written", n,
			    b->other_part, b->refused_part);
		break;
	case PEM_NAME_NESTED: {
		const char *dir = b->files[b->other_part - 1].name;
		char *d = shown(dir, strlen(dir));
		die_message("member '%s' (part %zu) is inside member '%s' (part %zu), which is a "
			    "file; nothing was written",
			    n, b->refused_part, d ? d : "?", b->other_part);
		free(d);
		break;
	}
	case PEM_WRITABLE:
		break;
	}
	free(name);
}

/* The one line for a block past a limit (b->past). */
static void say_past(const struct pem_bundle *b, const char *id)
{
	char *name = shown(b->past_name, strlen(b->past_name));
	const char *n = name ? name : "?";
	if (b->past == PEM_PAST_MEMBER) {
		bool manifest = strcmp(b->past_name, "manifest.json") == 0;
		die_message("refusing bundle %s: member '%s' (part %zu) is %llu bytes, more than "
			    "%llu MiB, the bundle reader's limit for %s; nothing was written",
			    id, n, b->past_part, (unsigned long long)b->past_size,
			    (unsigned long long)((manifest ? b->limits.manifest_bytes
							   : b->limits.member_bytes) >>
						 20),
			    manifest ? "a manifest" : "a member");
	} else {
		die_message(
			"refusing bundle %s: with member '%s' (part %zu, %llu bytes) its members "
			"come to more than %llu MiB, unpem's budget (--max-total); nothing was "
			"written",
			id, n, b->past_part, (unsigned long long)b->past_size,
			(unsigned long long)(b->limits.total_bytes >> 20));
	}
	free(name);
}

/* Why bundle_create refused the output directory: exit 9 and its line
 * (as for capture), or a plainer failure. */
static int say_dir_error(int e, const char *output)
{
	if (e == -EEXIST || e == -ENOTDIR || e == -EACCES || e == -ENOENT || e == -ELOOP ||
	    e == -EROFS || e == -EPERM || e == BUNDLE_UNSAFE_DIR) {
		die_message("cannot create bundle directory '%s': %s", output,
			    e == -EEXIST  ? "it exists and is not empty"
			    : e == -ELOOP ? "it, or a directory in it, is a symbolic link; "
					    "refusing to follow it"
			    : e == BUNDLE_UNSAFE_DIR
				? "it is another user's, or writable by others; refusing it"
				: strerror(-e));
		return EXIT_OUTPUT_DIR;
	}
	die_message("cannot create bundle directory '%s': %s", output, strerror(-e));
	return e == -ENOMEM ? EXIT_INTERNAL : EXIT_WRITE_FAILED;
}

/* What unpem says and returns once pem_bundle_commit returned e. */
static int unpem_result(int e, const char *output, const char *id)
{
	if (e == -EEXIST || e == -ENOTDIR || e == -EACCES || e == -ENOENT || e == -ELOOP ||
	    e == BUNDLE_UNSAFE_DIR)
		return say_dir_error(e, output); /* exit 9, as for capture */
	if (e == -EINVAL) { /* pem_decode refuses these first: a last line of defence */
		die_message("refusing a member name of bundle %s; nothing was written", id);
		return EXIT_UNSAFE_NAME;
	}
	if (e == -ENODATA) {
		die_message("bundle %s has no manifest.json block; nothing was written", id);
		hint_message("the input must contain the output of 'diag-attach pem'");
		return EXIT_VERIFY_FAILED;
	}
	if (e < 0) {
		die_message("cannot write bundle '%s': %s", output, strerror(-e));
		return e == -ENOMEM ? EXIT_INTERNAL : EXIT_WRITE_FAILED;
	}
	size_t members = 0;
	int v = bundle_verify_listed(output, verify_problem, NULL, &members);
	if (v != 0) {
		die_message("rebuilt bundle '%s' does not verify", output);
		return EXIT_VERIFY_FAILED;
	}
	/* What verify says, and no more: the manifest came with the log. */
	fprintf(stderr,
		"diag-attach: rebuilt bundle %s in %s: %zu %s the size and sha256 the manifest "
		"lists; the manifest itself is not signed\n",
		id, output, members, members == 1 ? "member matches" : "members match");
	return EXIT_OK;
}

/* Read the log at fd into d a piece at a time: the log is never held
 * whole, whatever its length. 0, the decoder's error, or a read error
 * (*ret_read set). */
static int feed_log(int fd, struct pem_decoder *d, bool *ret_read)
{
	static char buf[64 * 1024];
	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			*ret_read = true;
			return -errno;
		}
		if (k == 0)
			return 0;
		int e = pem_decoder_feed(d, buf, (size_t)k);
		if (e < 0)
			return e;
	}
}

int cmd_unpem(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"bundle", required_argument, NULL, OPT_BUNDLE},
		{"max-total", required_argument, NULL, OPT_MAX_TOTAL},
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
	struct pem_limits lim = PEM_LIMITS_DEFAULT;
	if (o.max_total)
		lim.total_bytes = o.max_total;
	const char *input = optind < argc ? argv[optind] : "-";
	int fd = strcmp(input, "-") == 0 ? STDIN_FILENO : open(input, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		die_message("cannot read '%s': %s", input, strerror(errno));
		return EXIT_USAGE;
	}
	/* The directory first: members are decoded into it as their blocks
	 * are read (spools, which no reader takes for members), and it is
	 * discarded whole, or left as it was found, unless the bundle is
	 * rebuilt. */
	struct bundle *out;
	int e = bundle_create(output, &out);
	if (e < 0) {
		if (fd != STDIN_FILENO)
			close(fd);
		return say_dir_error(e, output);
	}
	struct pem_decoder *d;
	struct pem_bundle *b = NULL;
	bool read_failed = false;
	e = pem_decoder_new(want, &lim, out, &d);
	if (e == 0) {
		e = feed_log(fd, d, &read_failed);
		if (e < 0)
			pem_decoder_free(d);
		else
			e = pem_decoder_finish(d, &b);
	}
	if (fd != STDIN_FILENO)
		close(fd);
	if (e < 0) {
		bundle_discard(out);
		if (read_failed) {
			die_message("cannot read '%s': %s", input, strerror(-e));
			return EXIT_USAGE;
		}
		if (e == -ENOENT) {
			if (want)
				die_message("no blocks of bundle %s in '%s'", want, input);
			else
				die_message("no '" PEM_LABEL "' blocks in '%s'", input);
			hint_message("the input must contain the output of 'diag-attach pem'");
			return EXIT_VERIFY_FAILED;
		}
		if (e == -ENOMEM) {
			die_message("out of memory");
			return EXIT_INTERNAL;
		}
		die_message("cannot write bundle '%s': %s", output, strerror(-e));
		return EXIT_WRITE_FAILED;
	}
	/* First, and alone: a log that names a member outside DIR was not
	 * printed by pem, whatever else is wrong with it. */
	if (b->refusal != PEM_WRITABLE) {
		bundle_discard(out);
		say_refusal(b);
		pem_bundle_free(b);
		return EXIT_UNSAFE_NAME;
	}
	char *id = shown(b->bundle_id, strlen(b->bundle_id));
	if (!id) {
		bundle_discard(out);
		pem_bundle_free(b);
		die_message("out of memory");
		return EXIT_INTERNAL;
	}
	if (b->past != PEM_WITHIN) {
		bundle_discard(out);
		say_past(b, id);
		pem_bundle_free(b);
		free(id);
		return EXIT_PAST_CAP;
	}
	if (b->other_bundles)
		fprintf(stderr, "diag-attach: warning: skipped %zu block(s) of other bundles%s\n",
			b->other_bundles, want ? "" : " (choose one with --bundle ID)");
	size_t missing = 0;
	for (size_t i = 0; i < b->parts; i++)
		if (!b->have[i] && ++missing <= 10)
			die_message("block %zu of %zu of bundle %s is missing or damaged", i + 1,
				    b->parts, id);
	if (missing > 10)
		die_message("... and %zu more blocks missing or damaged", missing - 10);
	if (missing) {
		bundle_discard(out);
		if (b->bad_blocks)
			hint_message(
				"%zu block(s) failed their size or sha256 check: the log pipeline "
				"changed or cut lines (a prefix of varying width is not supported)",
				b->bad_blocks);
		else
			hint_message("the log was truncated or lines were dropped; print it again "
				     "with 'diag-attach pem'");
		pem_bundle_free(b);
		free(id);
		return EXIT_VERIFY_FAILED;
	}
	e = pem_bundle_commit(b, out);
	pem_bundle_free(b);
	rc = unpem_result(e, output, id);
	free(id);
	return rc;
}
