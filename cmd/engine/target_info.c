#include "cmd/engine/target_info.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/redact.h"
#include "bundle/text.h"
#include "symbolize/direct_open.h"
#include "symbolize/symbolize.h"

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

/* Read a NUL-separated /proc file (cmdline, environ) of the target: up to
 * CMDLINE_MAX bytes, split into at most ARGV_MAX strings pointing into
 * *ret_buf (caller frees). Returns the count; 0 when unreadable. */
static size_t read_nul_list(const struct attach_target *t, const char *name, char **ret_buf,
			    char **list)
{
	*ret_buf = NULL;
	int fd = openat(t->proc_dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
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
		return 0;
	size_t count = 0;
	for (ssize_t off = 0; off < len && count < ARGV_MAX;) {
		list[count++] = buf + off;
		off += (ssize_t)strlen(buf + off) + 1;
	}
	*ret_buf = buf;
	return count;
}

/* A JSON string of s, which the target wrote, as it is: the manifest is
 * printed by json_print, which spells what is not UTF-8. */
static void add_target_string(cJSON *arr_or_obj, const char *key, const char *s)
{
	if (key)
		cJSON_AddStringToObject(arr_or_obj, key, s);
	else
		cJSON_AddItemToArray(arr_or_obj, cJSON_CreateString(s));
}

static cJSON *argv_json(const struct attach_target *t)
{
	cJSON *arr = cJSON_CreateArray();
	if (!arr)
		return NULL;
	char *buf = NULL, **args = malloc(ARGV_MAX * sizeof(*args));
	size_t argc = args ? read_nul_list(t, "cmdline", &buf, args) : 0;
	/* A process that rewrote its title over argv (nginx's "nginx: worker
	 * process", postgres, sshd) leaves the rest of the area as NULs: not
	 * dozens of empty arguments. */
	while (argc > 1 && args[argc - 1][0] == '\0')
		argc--;
	if (argc) {
		/* argv often carries credentials: only the redacted form is kept,
		 * word by word (redact.h's rules; the manifest keeps the array). */
		char **red = bundle_redact_argv(args, argc);
		if (red) {
			for (size_t i = 0; i < argc; i++)
				add_target_string(arr, NULL, red[i]);
			bundle_redacted_free(red, argc);
		}
	}
	/* Also when empty (a zombie leader's cmdline): the buffer was read. */
	free(buf);
	free(args);
	return arr;
}

/* environ, only on request (--record-environ): each entry as redact.h
 * spells it (a credential's name kept, its value not; any other value
 * redacted with the argv rules). */
static cJSON *environ_json(const struct attach_target *t)
{
	cJSON *arr = cJSON_CreateArray();
	if (!arr)
		return NULL;
	char *buf = NULL, **vars = malloc(ARGV_MAX * sizeof(*vars));
	size_t n = vars ? read_nul_list(t, "environ", &buf, vars) : 0;
	for (size_t i = 0; i < n; i++) {
		char *red = bundle_target_string(TARGET_ENVIRON, TARGET_FOR_JSON, vars[i], strlen(vars[i]));
		/* Out of memory: drop the entry rather than keep a secret. */
		if (red)
			add_target_string(arr, NULL, red);
		free(red);
	}
	free(buf);
	free(vars);
	return arr;
}

long target_inner_pid(const struct attach_target *t)
{
	char buf[4096];
	if (!attach_read_small_file_at(t->proc_dirfd, "status", buf, sizeof(buf)))
		return 0;
	char *p = strstr(buf, "\nNSpid:");
	if (!p)
		return 0;
	p += 7;
	char *eol = strchr(p, '\n');
	if (eol)
		*eol = '\0'; /* strtol would skip the newline into the next line */
	long last = 0;
	for (char *end;; p = end) {
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		last = v;
	}
	return last;
}

/* The JIT map, when there is one: whether its frames will be named from
 * it, or why it is refused (symbolize.h). */
static void add_perf_map(cJSON *o, pid_t pid)
{
	char path[64], why[128] = "";
	int fd = perfmap_open(pid, path);
	if (fd == -ENOENT)
		return;
	cJSON *m = cJSON_AddObjectToObject(o, "perf_map");
	cJSON_AddStringToObject(m, "path", path);
	int r = fd < 0 ? fd : perfmap_check(fd, pid, why, sizeof(why));
	if (fd >= 0)
		close(fd);
	cJSON_AddBoolToObject(m, "used", r == 0);
	if (r < 0)
		cJSON_AddStringToObject(m, "refused", r == -EPERM ? why : strerror(-r));
}

/* The path the program was started by, when it names the executable
 * under another name (Debian's redis-server, a symlink to
 * redis-check-rdb): argv[0] as the target resolves it (from its cwd when
 * relative; beside the executable when a bare name), kept only when it is
 * the very file /proc/PID/exe is (argv[0] up to its first space, as a
 * process title leaves it). The stat follows links inside the
 * target's root only as far as /proc/PID/root does; anything else just
 * fails to match. */
static void add_invoked_as(cJSON *o, const struct attach_target *t, const char *exe)
{
	char *buf = NULL, **args = malloc(ARGV_MAX * sizeof(*args)), none[1] = "";
	size_t argc = args ? read_nul_list(t, "cmdline", &buf, args) : 0;
	char *argv0 = argc ? args[0] : none; /* written to below */
	/* A program that set its own title (redis, postgres, nginx) has one
	 * string of words in argv[0]: the first is what it was started by. */
	argv0[strcspn(argv0, " ")] = '\0';
	const char *exe_base = strrchr(exe, '/');
	char path[4200], cand[4096];
	struct stat want, got;
	if (!*argv0 || !exe_base || fstatat(t->proc_dirfd, "exe", &want, 0) != 0)
		goto out;
	bool from_cwd = argv0[0] != '/' && strchr(argv0, '/');
	if (argv0[0] == '/')
		snprintf(cand, sizeof(cand), "%s", argv0);
	else if (from_cwd)
		snprintf(cand, sizeof(cand), "cwd/%s", argv0);
	else
		snprintf(cand, sizeof(cand), "%.*s/%s", (int)(exe_base - exe), exe, argv0);
	const char *base = strrchr(cand, '/') + 1;
	if (strcmp(base, exe_base + 1) == 0)
		goto out; /* the same name: nothing to add */
	snprintf(path, sizeof(path), "%s%s", from_cwd ? "" : "root", cand);
	if (fstatat(t->proc_dirfd, path, &got, 0) != 0 || got.st_dev != want.st_dev ||
	    got.st_ino != want.st_ino)
		goto out;
	if (from_cwd) {
		/* Relative to the cwd: said as the target's cwd names it. */
		char cwd[4096];
		ssize_t n = readlinkat(t->proc_dirfd, "cwd", cwd, sizeof(cwd) - 1);
		if (n <= 0)
			goto out;
		cwd[n] = '\0';
		if (snprintf(cand, sizeof(cand), "%s/%s", strcmp(cwd, "/") ? cwd : "", argv0) >= (int)sizeof(cand))
			goto out;
	}
	add_target_string(o, "invoked_as", cand);
out:
	free(buf);
	free(args);
}

cJSON *target_info_json(const struct attach_target *t, bool record_environ)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "pid", t->pid);
	long ns_pid = target_inner_pid(t);
	if (ns_pid > 0 && ns_pid != t->pid)
		cJSON_AddNumberToObject(o, "ns_pid", (double)ns_pid);
	char exe[4096];
	ssize_t n = readlinkat(t->proc_dirfd, "exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		add_target_string(o, "exe", exe);
		add_invoked_as(o, t, exe);
	}
	cJSON_AddItemToObject(o, "argv", argv_json(t));
	if (record_environ)
		cJSON_AddItemToObject(o, "environ", environ_json(t));
	/* The process names itself (prctl, or comm): redacted as its words are. */
	char *comm = bundle_target_string(TARGET_NAME, TARGET_FOR_JSON, t->comm, strlen(t->comm));
	add_target_string(o, "comm", comm ? comm : BUNDLE_REDACTED);
	free(comm);
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t btime = boot_time_s();
	if (hz > 0 && btime) {
		uint64_t ns = btime * 1000000000ull + t->starttime * (1000000000ull / (uint64_t)hz);
		char when[32];
		format_rfc3339_ms(ns, when);
		cJSON_AddStringToObject(o, "start_time", when);
	}
	add_perf_map(o, t->pid);
	return o;
}

int target_info_follow_exec(struct attach_target *t, cJSON *target, bool record_environ)
{
	char exe[4096];
	ssize_t n = readlinkat(t->proc_dirfd, "exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0; /* exited, or a kernel we cannot read: nothing to say */
	exe[n] = '\0';
	const cJSON *was = cJSON_GetObjectItemCaseSensitive(target, "exe");
	if (!cJSON_IsString(was) || strcmp(was->valuestring, exe) == 0)
		return 0;
	/* The name is the new image's from now on (the kernel sets comm
	 * from the file at exec). */
	int fd = openat(t->proc_dirfd, "comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char comm[sizeof(t->comm)];
		ssize_t c = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (c > 0) {
			comm[c] = '\0';
			comm[strcspn(comm, "\n")] = '\0';
			memcpy(t->comm, comm, sizeof(comm));
		}
	}
	cJSON *now = target_info_json(t, record_environ);
	if (!now)
		return -ENOMEM;
	/* What it was, oldest first, each with when it stopped being it. */
	cJSON *before = cJSON_CreateObject();
	static const char *const keys[] = {"exe", "invoked_as", "argv", "comm"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(target, keys[i]);
		if (v)
			cJSON_AddItemToObject(before, keys[i], v);
		cJSON *x = cJSON_DetachItemFromObjectCaseSensitive(now, keys[i]);
		if (x)
			cJSON_AddItemToObject(target, keys[i], x);
	}
	char when[32];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	format_rfc3339_ms((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec, when);
	cJSON_AddStringToObject(before, "seen_until", when);
	cJSON *hist = cJSON_GetObjectItemCaseSensitive(target, "exec_from");
	if (!hist)
		hist = cJSON_AddArrayToObject(target, "exec_from");
	cJSON_AddItemToArray(hist, before);
	cJSON_Delete(now);
	return 1;
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
