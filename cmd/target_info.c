#include "target_info.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "util.h"

#define CMDLINE_MAX (64 * 1024)
#define ARGV_MAX 4096

static uint64_t boot_time_s(void)
{
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return 0;
	char line[256];
	uint64_t btime = 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "btime ", 6) == 0) {
			btime = strtoull(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return btime;
}

static cJSON *argv_json(const struct attach_target *t)
{
	cJSON *arr = cJSON_CreateArray();
	if (!arr)
		return NULL;
	int fd = openat(t->proc_dirfd, "cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return arr;
	char *buf = malloc(CMDLINE_MAX + 1);
	ssize_t len = 0;
	if (buf) {
		ssize_t n;
		while (len < CMDLINE_MAX && (n = read(fd, buf + len, (size_t)(CMDLINE_MAX - len))) > 0)
			len += n;
		buf[len] = '\0';
	}
	close(fd);
	if (!buf)
		return arr;
	char *args[ARGV_MAX];
	size_t argc = 0;
	for (ssize_t off = 0; off < len && argc < ARGV_MAX;) {
		args[argc++] = buf + off;
		off += (ssize_t)strlen(buf + off) + 1;
	}
	/* argv often carries credentials: only the redacted form is kept. */
	char **red = bundle_redact_argv(args, argc);
	if (red) {
		for (size_t i = 0; i < argc; i++)
			cJSON_AddItemToArray(arr, cJSON_CreateString(red[i]));
		bundle_redacted_free(red, argc);
	}
	free(buf);
	return arr;
}

cJSON *target_info_json(const struct attach_target *t)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "pid", t->pid);
	char exe[4096];
	ssize_t n = readlinkat(t->proc_dirfd, "exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		cJSON_AddStringToObject(o, "exe", exe);
	}
	cJSON_AddItemToObject(o, "argv", argv_json(t));
	cJSON_AddStringToObject(o, "comm", t->comm);
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t btime = boot_time_s();
	if (hz > 0 && btime) {
		uint64_t ns = btime * 1000000000ull + t->starttime * (1000000000ull / (uint64_t)hz);
		char when[32];
		format_rfc3339_ms(ns, when);
		cJSON_AddStringToObject(o, "start_time", when);
	}
	return o;
}

cJSON *host_info_json(void)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	struct utsname u;
	if (uname(&u) == 0) {
		cJSON_AddStringToObject(o, "kernel", u.release);
		cJSON_AddStringToObject(o, "arch", u.machine);
		cJSON_AddStringToObject(o, "hostname", u.nodename);
	}
	cJSON_AddNumberToObject(o, "num_cpu", (double)sysconf(_SC_NPROCESSORS_ONLN));
	return o;
}
