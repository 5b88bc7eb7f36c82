/* Helpers of the subcommands: option values and messages. */
#include "cmd/cli/util.h"

#include <errno.h>
#include <ftw.h>
#include <unistd.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nanoseconds in one of a duration's units, or 0 for no unit known.
 * *len is how many characters the unit takes. */
static double unit_ns(const char *u, size_t *len)
{
	static const struct {
		const char *name;
		double ns;
	} units[] = {{"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {"h", 3600e9}, {"m", 60e9}, {"s", 1e9}};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].name);
		if (strncmp(u, units[i].name, n) == 0) {
			*len = n;
			return units[i].ns;
		}
	}
	return 0;
}

int parse_duration_ns(const char *s, uint64_t *ret)
{
	/* A bare number is seconds; otherwise one or more NUMBER UNIT
	 * terms, as Go's time.ParseDuration takes them: 500ms, 1h30m,
	 * 2m30s, 1.5s. */
	double ns = 0;
	const char *p = s;
	do {
		char *end;
		errno = 0;
		if (*p < '0' || *p > '9') {
			if (*p != '.')
				return -EINVAL;
		}
		double v = strtod(p, &end);
		if (end == p || errno || !isfinite(v) || v < 0)
			return -EINVAL;
		size_t ulen = 0;
		double scale = unit_ns(end, &ulen);
		if (scale == 0) {
			if (*end != '\0' || p != s)
				return -EINVAL; /* a bare number is the whole duration */
			scale = 1e9;
		}
		ns += v * scale;
		if (ns > 1e18)
			return -EINVAL;
		p = end + ulen;
	} while (*p);
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
	/* A hangup ignored when we started (nohup) stays ignored: the
	 * operator asked for the capture to outlive the terminal. Taking it
	 * over would also lose one that came before this point, when the
	 * kernel discarded it, and leave the capture running unasked. */
	struct sigaction hup;
	if (sigaction(SIGHUP, NULL, &hup) != 0 || hup.sa_handler != SIG_IGN)
		sigaction(SIGHUP, &sa, NULL);
	/* Never be stopped by job control while we may hold threads (a stopped
	 * tool freezes the target), and get EPIPE/EFBIG instead of dying. */
	signal(SIGTSTP, SIG_IGN);
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (type == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}

int cli_remove_tree(const char *dir)
{
	return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
}

int parse_uint_at_most(const char *s, unsigned long max, unsigned long *ret)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (end == s || *end || errno || v > max || s[0] == '-')
		return -EINVAL;
	*ret = v;
	return 0;
}

int parse_size_bytes(const char *s, uint64_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s || errno || s[0] == '-')
		return -EINVAL;
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	else if (*end)
		return -EINVAL;
	if (shift && end[1])
		return -EINVAL;
	if (v > (UINT64_MAX >> shift) || v == 0)
		return -EINVAL;
	*ret = (uint64_t)v << shift;
	return 0;
}
