/* open_bundle: see open_bundle.h. */
#include "cmd/cli/open_bundle.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bundle/bundle.h"
#include "bundle/text.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/util.h"

void cli_no_manifest(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) < 0 && (errno == ENOENT || errno == ENOTDIR)) {
		die_message("'%s': no such directory", dir);
	} else if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		die_message("'%s' is not a directory (a bundle is one)", dir);
	} else {
		die_message("'%s' is not a bundle: no manifest.json", dir);
		hint_message("a capture that was interrupted leaves no manifest; capture again");
	}
}

int cli_open_bundle(const char *dir, struct bundle_reader **ret)
{
	int e = bundle_reader_open(dir, ret);
	if (e == 0)
		return EXIT_OK;
	if (e == -ENOENT) {
		cli_no_manifest(dir);
	} else if (e == -EBADMSG) {
		die_message("'%s': manifest.json is malformed", dir);
	} else if (e == -ELOOP) {
		/* Every member is read below the bundle's own directory,
		 * opened once; a link to it is not followed. */
		die_message("'%s' is a symbolic link; refusing to follow it", dir);
		hint_message("name the directory it points to: readlink -f %s", dir);
	} else if (e == BUNDLE_PAST_CAP) {
		return cli_refused(dir, "manifest.json", BUNDLE_CAP_MANIFEST_BYTES);
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
	/* The name is the manifest's, which anyone may have written. */
	fputs("diag-attach: warning: ", stderr);
	escape_text_put(member, stderr);
	fprintf(stderr, ": %s\n", problem);
}

bool cli_bundle_intact(const struct bundle_reader *r, unsigned what)
{
	bool intact = true;
	int e = bundle_reader_verify(r, what, warn_problem, &intact, NULL);
	return e == 0 && intact;
}

const char *cli_member_problem(int e)
{
	switch (e) {
	case BUNDLE_ALTERED:
		return "its size or sha256 is not the one the manifest lists (it was changed, "
		       "perhaps while it was read); refusing it";
	case -ELOOP:
		return "a symbolic link is in its path; refusing to follow it";
	case -EINVAL:
		return "not a regular file";
	case -ENOENT:
	case -ENOTDIR:
		return "missing";
	case -EBADMSG:
		return "the manifest lists it without a size or sha256";
	default:
		return strerror(-e);
	}
}

int cli_reader_failed(const struct bundle_reader *r, int e)
{
	const struct bundle_read_failure *f = bundle_reader_failure(r);
	const char *dir = bundle_reader_dir(r);
	if (!f) {
		die_message("cannot read bundle '%s': %s", dir, strerror(-e));
		return EXIT_VERIFY_FAILED;
	}
	char m[512];
	escape_text(f->member, m, sizeof(m));
	die_message("cannot read %s/%s: %s", dir, m, cli_member_problem(f->error));
	hint_message("see: diag-attach verify %s", dir);
	return EXIT_VERIFY_FAILED;
}

/* "128 MiB" or "1000000". */
static void format_limit(const struct bundle_cap_info *c, char *out, size_t size)
{
	if (c->bytes)
		snprintf(out, size, "%llu", (unsigned long long)(c->limit >> 20));
	else
		snprintf(out, size, "%llu", (unsigned long long)c->limit);
}

int cli_refused(const char *dir, const char *member, enum bundle_cap cap)
{
	const struct bundle_cap_info *c = bundle_cap_info(cap);
	char limit[32];
	format_limit(c, limit, sizeof(limit));
	/* One line: a script greps it, a person reads what to blame. The
	 * member name is the manifest's, shown escaped. */
	char m[512];
	escape_text(member, m, sizeof(m));
	die_message("refusing %s/%s: more than %s %s (a limit of the bundle reader; see "
		    "SECURITY in diag-attach(1))",
		    dir, m, limit, c->what);
	return EXIT_PAST_CAP;
}

int cli_reader_refused(const struct bundle_reader *r)
{
	const struct bundle_refusal *f = bundle_reader_refusal(r);
	return cli_refused(bundle_reader_dir(r), f ? f->member : "?",
			   f ? f->cap : BUNDLE_CAP_DECODED_BYTES);
}

void cli_print_reader_caps(FILE *out)
{
	fputs("Limits (a bundle past one is refused, exit status 17):\n", out);
	for (int i = 0; i < BUNDLE_NCAPS; i++) {
		const struct bundle_cap_info *c = bundle_cap_info((enum bundle_cap)i);
		char limit[32];
		format_limit(c, limit, sizeof(limit));
		fprintf(out, "  %-14s %s %s\n", c->applies_to, limit, c->what);
	}
	fputc('\n', out);
}
