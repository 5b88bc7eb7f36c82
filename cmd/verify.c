#include "verify.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bundle/bundle.h"
#include "bundle/text.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/open_bundle.h"
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
		     "capture, not a bundle rewritten together with its manifest. Members are\n"
		     "hashed, not decoded: an intact bundle can still be past a limit of the\n"
		     "reader, which report, diff and export then refuse (see\n"
		     "'diag-attach report --help').\n");
		printf("Limits (a bundle past one is refused, exit status 17):\n"
		       "  manifest.json  %llu MiB on disk\n\n",
		       (unsigned long long)(BUNDLE_MAX_MANIFEST_BYTES >> 20));
		puts("Exit status:\n"
		     "  0  intact: every listed member has its size and sha256, nothing unlisted\n"
		     "  1  not intact: a member is missing, altered or not listed (each is\n"
		     "     named), or the manifest itself is missing or malformed\n"
		     "  2  usage error\n"
		     " 17  manifest.json is past its limit");
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
	if (r == BUNDLE_PAST_CAP)
		return cli_refused(argv[1], "manifest.json", BUNDLE_CAP_MANIFEST_BYTES);
	if (r == -ENOENT)
		cli_no_manifest(argv[1]);
	else if (r == -EBADMSG)
		die_message("'%s': manifest.json is malformed", argv[1]);
	else if (r == -ELOOP)
		die_message("'%s' is a symbolic link; refusing to follow it (name the directory it "
			    "points to)",
			    argv[1]);
	else
		die_message("cannot verify '%s': %s", argv[1], strerror(-r));
	return EXIT_VERIFY_FAILED;
}
