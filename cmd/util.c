#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void format_rfc3339_ms(uint64_t epoch_ns, char out[32])
{
	time_t secs = (time_t)(epoch_ns / 1000000000ull);
	unsigned ms = (unsigned)((epoch_ns / 1000000ull) % 1000ull);
	struct tm tm;
	gmtime_r(&secs, &tm);
	char base[24];
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 32, "%s.%03uZ", base, ms);
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

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

void make_uuid(char out[37])
{
	unsigned char b[16];
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		/* Uniqueness, not secrecy, is what a bundle id needs. */
		uint64_t t = clock_ns(CLOCK_REALTIME) ^ clock_ns(CLOCK_MONOTONIC);
		for (int i = 0; i < 16; i++)
			b[i] = (unsigned char)(t >> ((i % 8) * 8)) ^ (unsigned char)(i * 37);
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

const char *syscall_name(long nr)
{
	/* The syscalls a stuck thread is usually found in. */
	static const struct {
		long nr;
		const char *name;
	} table[] = {
		{SYS_read, "read"}, {SYS_write, "write"}, {SYS_poll, "poll"},
		{SYS_select, "select"}, {SYS_pselect6, "pselect6"}, {SYS_ppoll, "ppoll"},
		{SYS_nanosleep, "nanosleep"}, {SYS_clock_nanosleep, "clock_nanosleep"},
		{SYS_futex, "futex"}, {SYS_epoll_wait, "epoll_wait"},
		{SYS_epoll_pwait, "epoll_pwait"}, {SYS_accept, "accept"}, {SYS_accept4, "accept4"},
		{SYS_connect, "connect"}, {SYS_recvfrom, "recvfrom"}, {SYS_recvmsg, "recvmsg"},
		{SYS_sendto, "sendto"}, {SYS_sendmsg, "sendmsg"}, {SYS_wait4, "wait4"},
		{SYS_waitid, "waitid"}, {SYS_pause, "pause"}, {SYS_rt_sigsuspend, "rt_sigsuspend"},
		{SYS_rt_sigtimedwait, "rt_sigtimedwait"}, {SYS_semop, "semop"},
		{SYS_semtimedop, "semtimedop"}, {SYS_msgrcv, "msgrcv"}, {SYS_flock, "flock"},
		{SYS_fcntl, "fcntl"}, {SYS_ioctl, "ioctl"}, {SYS_openat, "openat"},
		{SYS_pread64, "pread64"}, {SYS_pwrite64, "pwrite64"}, {SYS_readv, "readv"},
		{SYS_writev, "writev"}, {SYS_fsync, "fsync"}, {SYS_fdatasync, "fdatasync"},
		{SYS_sched_yield, "sched_yield"}, {SYS_io_getevents, "io_getevents"},
		{SYS_io_uring_enter, "io_uring_enter"}, {SYS_sync, "sync"}, {SYS_vfork, "vfork"},
		{SYS_clone, "clone"}, {SYS_clone3, "clone3"}, {SYS_execve, "execve"},
		{SYS_exit_group, "exit_group"}, {SYS_mmap, "mmap"}, {SYS_munmap, "munmap"},
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].nr == nr)
			return table[i].name;
	return NULL;
}

/* Length of the valid UTF-8 character at s (1 to 4), or 0 when s does not
 * start one (stray continuation byte, overlong form, surrogate, beyond
 * U+10FFFF, cut short). s is NUL-terminated, which is never a continuation. */
static size_t utf8_char_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	size_t n = s[0] >= 0xc2 && s[0] <= 0xdf   ? 2
		   : s[0] >= 0xe0 && s[0] <= 0xef ? 3
		   : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
						  : 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

/* The escaped form of the character at s into e (at most 5 bytes + NUL);
 * returns how many bytes of s it stands for. */
static size_t escape_one(const char *s, char e[8])
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = utf8_char_len(u);
	if (n > 1) {
		memcpy(e, s, n);
		e[n] = '\0';
		return n;
	}
	if (u[0] == '\\')
		snprintf(e, 8, "\\\\");
	else if (u[0] == '\n')
		snprintf(e, 8, "\\n");
	else if (u[0] == '\t')
		snprintf(e, 8, "\\t");
	else if (u[0] == '\r')
		snprintf(e, 8, "\\r");
	else if (u[0] < 0x20 || u[0] >= 0x7f)
		snprintf(e, 8, "\\x%02x", u[0]);
	else
		snprintf(e, 8, "%c", u[0]);
	return 1;
}

char *escape_text(const char *s, char *out, size_t out_size)
{
	size_t len = 0;
	out[0] = '\0';
	while (*s) {
		char e[8];
		size_t used = escape_one(s, e), el = strlen(e);
		if (len + el >= out_size)
			break;
		memcpy(out + len, e, el + 1);
		len += el;
		s += used;
	}
	return out;
}

void escape_text_put(const char *s, FILE *f)
{
	while (*s) {
		char e[8];
		s += escape_one(s, e);
		fputs(e, f);
	}
}

char *utf8_sanitize(const char *s)
{
	size_t n = 0;
	for (const char *p = s; *p; n++) {
		size_t l = utf8_char_len((const unsigned char *)p);
		p += l ? l : 1;
		n += l ? l - 1 : 2; /* U+FFFD is 3 bytes */
	}
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	while (*s) {
		size_t l = utf8_char_len((const unsigned char *)s);
		if (l) {
			memcpy(o, s, l);
			o += l;
			s += l;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			s++;
		}
	}
	*o = '\0';
	return out;
}

void trace_phase(const char *what)
{
	static int enabled = -1;
	static uint64_t first;
	if (enabled < 0)
		enabled = getenv("DIAG_ATTACH_TRACE") != NULL;
	if (!enabled)
		return;
	uint64_t now = monotonic_ns();
	if (!first)
		first = now;
	fprintf(stderr, "diag-attach: trace +%.1f ms %s\n", (double)(now - first) / 1e6, what);
}

size_t read_small_file_at(int dirfd, const char *path, char *buf, size_t size)
{
	if (size == 0)
		return 0;
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return (size_t)n;
}
