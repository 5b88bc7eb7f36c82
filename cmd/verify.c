#include "verify.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bundle/bundle.h"
#include "bundle/text.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/util.h"

/* The names come from the manifest, which anyone may have written. */
static void report_problem(void *ctx, const char *member, const char *problem)
{
	(void)ctx;
	escape_text_put(member, stdout);
	printf(": %s\n", problem);
}

int cmd_verify(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		puts("Usage: diag-attach verify DIR\n\n"
		     "Re-hash every member of the bundle in DIR against its manifest.json, and\n"
		     "look for files the manifest does not list. The manifest itself is not\n"
		     "signed: verify finds what was truncated, lost or changed after the\n"
		     "capture, not a bundle rewritten together with its manifest.\n\n"
		     "Exit status:\n"
		     "  0  intact: every listed member has its size and sha256, nothing unlisted\n"
		     "  1  not intact: a member is missing, altered or not listed (each is\n"
		     "     named), or the manifest itself is missing or malformed\n"
		     "  2  usage error");
		return EXIT_OK;
	}
	if (argc != 2) {
		die_message("usage: diag-attach verify DIR");
		return EXIT_USAGE;
	}
	size_t members = 0;
	int r = bundle_verify_listed(argv[1], report_problem, NULL, &members);
	if (r == 0) {
		/* Exactly what was checked: a manifest can be rewritten along
		 * with the members, and nothing here would notice. */
		printf("%s: intact: %zu %s the size and sha256 the manifest lists, no file is "
		       "unlisted; the manifest itself is not signed\n",
		       argv[1], members, members == 1 ? "member matches" : "members match");
		return EXIT_OK;
	}
	if (r == 1) {
		die_message("bundle '%s' is damaged", argv[1]);
		return EXIT_VERIFY_FAILED;
	}
	if (r == -ENOENT)
		die_message("'%s' is not a bundle: no manifest.json (a capture that did not finish?)", argv[1]);
	else if (r == -EBADMSG)
		die_message("'%s': manifest.json is malformed", argv[1]);
	else
		die_message("cannot verify '%s': %s", argv[1], strerror(-r));
	return EXIT_VERIFY_FAILED;
}
