/* Who waits on whom, read back from threads.txt (thread_waits.h). */
#include "bundle/views/thread_waits.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* "DEADLOCK: ..." or "N thread(s) wait(s) for ..." */
static bool summary_line(const char *l, size_t len)
{
	if (len > 10 && strncmp(l, "DEADLOCK: ", 10) == 0)
		return true;
	size_t i = 0;
	while (i < len && isdigit((unsigned char)l[i]))
		i++;
	if (i == 0)
		return false;
	static const char *const forms[] = {" thread waits for ", " threads wait for "};
	for (size_t k = 0; k < 2; k++)
		if (len - i > strlen(forms[k]) && strncmp(l + i, forms[k], strlen(forms[k])) == 0)
			return true;
	return false;
}

int thread_waits_summary(const char *txt, cJSON *list)
{
	for (const char *l = txt; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		if (strncmp(l, "Thread ", 7) == 0)
			break;
		if (summary_line(l, len)) {
			char *s = strndup(l, len);
			cJSON *item = s ? cJSON_CreateString(s) : NULL;
			free(s);
			if (!item)
				return -ENOMEM;
			cJSON_AddItemToArray(list, item);
		}
		l = nl ? nl + 1 : NULL;
	}
	return 0;
}

char *thread_waits_line(const char *header)
{
	const char *l = strchr(header, '\n');
	/* The thread's indented lines, up to its first frame. */
	while (l && *++l == ' ') {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		const char *t = l;
		while (*t == ' ')
			t++;
		len -= (size_t)(t - l);
		if (*t == '#' || *t == '(')
			return NULL;
		if (strncmp(t, "waits for ", 10) == 0 || strncmp(t, "not run for ", 12) == 0)
			return strndup(t, len);
		l = nl;
	}
	return NULL;
}
