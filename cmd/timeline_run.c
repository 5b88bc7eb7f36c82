#include "timeline_run.h"

#include <errno.h>
#include <stdlib.h>

/* Placeholder until the timeline module lands. */
int timeline_run_new(struct capture_session *s, struct timeline_run **ret)
{
	(void)s;
	*ret = NULL;
	return 0;
}

int timeline_run_tick(struct timeline_run *t)
{
	(void)t;
	return 0;
}

int timeline_run_finish(struct timeline_run *t, cJSON *manifest)
{
	(void)t;
	(void)manifest;
	return 0;
}

void timeline_run_free(struct timeline_run *t)
{
	free(t);
}
