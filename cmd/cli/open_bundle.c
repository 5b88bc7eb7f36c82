/* open_bundle: see open_bundle.h. */
#include "cmd/cli/open_bundle.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bundle/bundle.h"
#include "bundle/text.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/util.h"

int cli_open_bundle(const char *dir, struct bundle_reader **ret)
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
	/* The name is the manifest's, which anyone may have written. */
	fputs("diag-attach: warning: ", stderr);
	escape_text_put(member, stderr);
	fprintf(stderr, ": %s\n", problem);
}

bool cli_bundle_intact(const char *dir)
{
	bool intact = true;
	int r = bundle_verify(dir, warn_problem, &intact);
	return r == 0 && intact;
}
