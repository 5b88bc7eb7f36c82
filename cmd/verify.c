#include "verify.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bundle/bundle.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/open_bundle.h"
#include "cmd/cli/util.h"

static void report_problem(void *ctx, const char *member, const char *problem)
{
	(void)ctx;
	printf("%s: %s\n", member, problem);
}

int cmd_verify(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		puts("Usage: diag-attach verify DIR\n\n"
		     "Re-hash every member of the bundle in DIR against its manifest.json.\n"
		     "Members are hashed, not decoded: an intact bundle can still be past a\n"
		     "limit of the reader, which report, diff and export then refuse (see\n"
		     "'diag-attach report --help').\n");
		printf("Limits (a bundle past one is refused, exit status 16):\n"
		       "  manifest.json  %llu MiB on disk\n\n",
		       (unsigned long long)(BUNDLE_MAX_MANIFEST_BYTES >> 20));
		puts("Exit status:\n"
		     "  0  intact\n"
		     "  1  not intact: a member is missing, altered or not listed (each is\n"
		     "     named), or the manifest itself is missing or malformed\n"
		     "  2  usage error\n"
		     " 16  manifest.json is past its limit");
		return EXIT_OK;
	}
	if (argc != 2) {
		die_message("usage: diag-attach verify DIR");
		return EXIT_USAGE;
	}
	int r = bundle_verify(argv[1], report_problem, NULL);
	if (r == 0) {
		printf("%s: intact\n", argv[1]);
		return EXIT_OK;
	}
	if (r == 1) {
		die_message("bundle '%s' is damaged", argv[1]);
		return EXIT_VERIFY_FAILED;
	}
	if (r == BUNDLE_PAST_CAP)
		return cli_refused(argv[1], "manifest.json", BUNDLE_CAP_MANIFEST_BYTES);
	if (r == -ENOENT)
		die_message("'%s' is not a bundle: no manifest.json (a capture that did not finish?)", argv[1]);
	else if (r == -EBADMSG)
		die_message("'%s': manifest.json is malformed", argv[1]);
	else
		die_message("cannot verify '%s': %s", argv[1], strerror(-r));
	return EXIT_VERIFY_FAILED;
}
