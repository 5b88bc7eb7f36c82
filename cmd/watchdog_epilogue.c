/* diag-attach __watchdog-epilogue: see watchdog_epilogue.h. */
#include "cmd/watchdog_epilogue.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attach/attach.h"
#include "bundle/bundle.h"
#include "bundle/text.h"
#include "cmd/cli/exit_codes.h"
#include "cmd/cli/util.h"

void watchdog_epilogue_arm(const struct capture_session *s, const char *dir)
{
	char *draft = capture_session_manifest_text(s);
	/* A manifest too large to pass (a recorded environment) still
	 * leaves a bundle that says what happened, with less around it. */
	if (!draft ||
	    attach_watchdog_set_epilogue((const char *[]){WATCHDOG_EPILOGUE, dir, draft, NULL}) < 0)
		attach_watchdog_set_epilogue((const char *[]){WATCHDOG_EPILOGUE, dir, "{}", NULL});
	free(draft);
}

static bool parse_ms(const char *s, unsigned long long *ret)
{
	char *end;
	errno = 0;
	*ret = strtoull(s, &end, 10);
	return *s >= '0' && *s <= '9' && !*end && errno == 0;
}

int cmd_watchdog_epilogue(int argc, char **argv)
{
	unsigned long long limit_ms, held_ms;
	if (argc != 5 || !parse_ms(argv[3], &limit_ms) || !parse_ms(argv[4], &held_ms)) {
		die_message("%s is run by the watchdog, not by hand", WATCHDOG_EPILOGUE);
		return EXIT_USAGE;
	}
	const char *dir = argv[1];
	cJSON *m = cJSON_Parse(argv[2]);
	if (!cJSON_IsObject(m)) {
		cJSON_Delete(m);
		m = cJSON_CreateObject();
	}
	double pid = cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "target"), "pid"));
	/* The manifest says it first: whoever reads the bundle learns that
	 * the capture did not finish, and why, before anything else. */
	cJSON *cap = cJSON_CreateObject();
	cJSON_AddFalseToObject(cap, "complete");
	cJSON_AddStringToObject(cap, "ended_by", "watchdog");
	cJSON_AddNumberToObject(cap, "watchdog_ms", (double)limit_ms);
	cJSON_AddNumberToObject(cap, "held_ms", (double)held_ms);
	cJSON_AddStringToObject(cap, "note",
				"diag-attach held the target's threads past --watchdog and was killed "
				"(SIGKILL), which released them; the members are what it had written "
				"by then");
	cJSON_DeleteItemFromObject(m, "capture");
	cJSON_AddItemToObject(m, "capture", cap);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	char when[32];
	format_rfc3339_ms((uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec, when);
	cJSON_AddStringToObject(m, "ended_at", when);
	int r = bundle_salvage(dir, m);
	char where[512];
	escape_text(dir, where, sizeof(where));
	if (r == -EEXIST)
		return EXIT_OK; /* finished after all: nothing to add */
	if (r < 0) {
		die_message("the watchdog killed diag-attach after it held pid %.0f for %llu ms "
			    "(--watchdog %llu); the bundle in %s could not be given a manifest: %s",
			    pid, held_ms, limit_ms, where, strerror(-r));
		return EXIT_WRITE_FAILED;
	}
	die_message("the watchdog killed diag-attach after it held pid %.0f for %llu ms "
		    "(--watchdog %llu), which released it; %s is incomplete, and its manifest "
		    "says so (capture.ended_by)",
		    pid, held_ms, limit_ms, where);
	return EXIT_OK;
}
