/* Helpers of the subcommands: option values and messages. */
#include "cmd/cli/util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int parse_duration_ns(const char *s, uint64_t *ret)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return -EINVAL;
	double scale;
	if (*end == '\0' || strcmp(end, "s") == 0)
		scale = 1e9;
	else if (strcmp(end, "ms") == 0)
		scale = 1e6;
	else if (strcmp(end, "us") == 0)
		scale = 1e3;
	else if (strcmp(end, "m") == 0)
		scale = 60e9;
	else if (strcmp(end, "h") == 0)
		scale = 3600e9;
	else
		return -EINVAL;
	double ns = v * scale;
	if (ns > 1e18)
		return -EINVAL;
	*ret = (uint64_t)ns;
	return 0;
}

void die_message(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("diag-attach: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void hint_message(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("hint: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
