/* Helpers of the subcommands: option values and messages. */
#include "cmd/cli/util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
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

/* One line on stderr: prefix, the message, a newline. */
static void message(const char *prefix, const char *fmt, va_list ap)
{
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void die_message(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	message("diag-attach: ", fmt, ap);
	va_end(ap);
}

void hint_message(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	message("hint: ", fmt, ap);
	va_end(ap);
}

void cli_install_stop_handlers(void (*handler)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	/* Restart syscalls: a signal must never cut a ptrace wait short in a
	 * way that leaves a thread held; the loops check the flag instead. */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* Never be stopped by job control while we may hold threads (a stopped
	 * tool freezes the target), and get EPIPE/EFBIG instead of dying. */
	signal(SIGTSTP, SIG_IGN);
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
}
