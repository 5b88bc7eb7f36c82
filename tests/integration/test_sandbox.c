/*
 * The interpretation workers' sandbox (symbolize/worker/sandbox.h and
 * broker.h), checked on the shipped tool while it captures a real
 * process, as the finding of issue 54 was made: their privileges read from
 * /proc, then a worker driven with gdb `call` (standing in for a memory bug
 * in a parser) trying what an attacker would: open the tracer's memory,
 * create a file in /etc, have the broker hand out a root-only file, write
 * another process's memory. No test-only build or mode.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* A child of tool named comm ("diag-interp"), waited for up to 10 s. */
static pid_t child_named(pid_t parent, const char *comm)
{
	for (int tries = 0; tries < 1000; tries++) {
		DIR *d = opendir("/proc");
		struct dirent *de;
		pid_t found = 0;
		while (d && !found && (de = readdir(d))) {
			pid_t p = (pid_t)atoi(de->d_name);
			char path[64], buf[512];
			if (p <= 0)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
			FILE *f = fopen(path, "re");
			if (!f)
				continue;
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[n] = '\0';
			char *open = strchr(buf, '('), *close = strrchr(buf, ')');
			if (!open || !close)
				continue;
			*close = '\0';
			int ppid = 0;
			char state;
			if (sscanf(close + 2, "%c %d", &state, &ppid) == 2 && ppid == parent &&
			    strcmp(open + 1, comm) == 0 && state != 'Z')
				found = p;
		}
		if (d)
			closedir(d);
		if (found)
			return found;
		sleep_ms(10);
	}
	return 0;
}

/* The value of a /proc/PID/status field, up to the end of its line. */
static void status_field(pid_t pid, const char *name, char *out, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	char *text = read_file(path, NULL);
	cr_assert(text, "cannot read %s", path);
	char *p = strstr(text, name);
	cr_assert(p, "%s has no %s", path, name);
	p += strlen(name);
	p += strspn(p, " \t");
	snprintf(out, size, "%.*s", (int)strcspn(p, "\n"), p);
	free(text);
}

static void expect_own_namespace(pid_t pid, const char *kind)
{
	char a[64], b[64], la[64] = "", lb[64] = "";
	snprintf(a, sizeof(a), "/proc/%d/ns/%s", (int)pid, kind);
	snprintf(b, sizeof(b), "/proc/self/ns/%s", kind);
	cr_assert_gt(readlink(a, la, sizeof(la) - 1), 0, "readlink %s", a);
	cr_assert_gt(readlink(b, lb, sizeof(lb) - 1), 0, "readlink %s", b);
	cr_expect_str_neq(la, lb, "the worker shares our %s namespace", kind);
}

/* Run gdb on pid with the commands (each an -ex), its output into out.
 * Its files are read on the host (sysroot /, the tool's binary named):
 * gdb would look for them in the worker's mount namespace, where /tmp is
 * an empty tmpfs and a checkout under /tmp is not there. */
static void gdb_batch(pid_t pid, const char *const *cmds, char *out, size_t size)
{
	char cmd[4096];
	const char *tool = getenv("DIAG_ATTACH");
	cr_assert(tool, "DIAG_ATTACH not set (run through meson test)");
	int n = snprintf(cmd, sizeof(cmd),
			 "gdb -nx -batch -iex 'set sysroot /' -ex 'set confirm off' "
			 "-ex 'set unwindonsignal on' -ex 'handle SIGSYS nostop noprint pass'");
	for (size_t i = 0; cmds[i]; i++)
		n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " -ex '%s'", cmds[i]);
	snprintf(cmd + n, sizeof(cmd) - (size_t)n, " '%s' %d 2>&1", tool, (int)pid);
	shell_output(cmd, out, size);
}

/* The value gdb printed as $k (a number), or LONG_MIN when it did not. */
static long gdb_value(const char *out, int k)
{
	char key[16];
	snprintf(key, sizeof(key), "$%d = ", k);
	const char *p = strstr(out, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -999999;
}

Test(sandbox, worker_has_no_privilege_and_its_attacks_fail, .timeout = 120)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: the finding is about a root tool's workers");
	if (!have_program("gdb"))
		cr_skip_test("gdb is not installed (the worker is driven with gdb call)");
	const char *argv[] = {target_path("demo"), NULL};
	struct target t = target_start(argv, NULL);
	struct capture c;
	capture_start(&c, t.pid, "8s", "49");
	pid_t worker = child_named(c.tool, "diag-interp");
	cr_assert_gt(worker, 0, "no diag-interp worker under the tool (pid %d)", (int)c.tool);
	pid_t broker = child_named(worker, "diag-broker");
	cr_expect_gt(broker, 0, "the worker has no diag-broker child");

	/* What the kernel shows of the worker, once it is set up (its
	 * filter is the last step). */
	char v[256];
	for (int i = 0; i < 500; i++) {
		status_field(worker, "Seccomp:", v, sizeof(v));
		if (strcmp(v, "2") == 0)
			break;
		sleep_ms(10);
	}
	status_field(worker, "Uid:", v, sizeof(v));
	cr_expect_str_eq(v, "65534\t65534\t65534\t65534", "Uid: %s", v);
	status_field(worker, "Gid:", v, sizeof(v));
	cr_expect_str_eq(v, "65534\t65534\t65534\t65534", "Gid: %s", v);
	status_field(worker, "Groups:", v, sizeof(v));
	cr_expect_str_eq(v, "", "Groups: %s", v);
	status_field(worker, "CapEff:", v, sizeof(v));
	cr_expect_str_eq(v, "0000000000000000", "CapEff: %s", v);
	status_field(worker, "CapPrm:", v, sizeof(v));
	cr_expect_str_eq(v, "0000000000000000", "CapPrm: %s", v);
	status_field(worker, "NoNewPrivs:", v, sizeof(v));
	cr_expect_str_eq(v, "1", "NoNewPrivs: %s", v);
	status_field(worker, "Seccomp:", v, sizeof(v));
	cr_expect_str_eq(v, "2", "Seccomp: %s", v);
	expect_own_namespace(worker, "net");
	expect_own_namespace(worker, "mnt");
	expect_own_namespace(worker, "ipc");

	/* A secret only root may read, and a file that is the broker's to
	 * hand out (an ELF file of the target). */
	char secret_dir[256], secret[300], probe[300];
	make_tmpdir(secret_dir, sizeof(secret_dir));
	chmod(secret_dir, 0700);
	snprintf(secret, sizeof(secret), "%s/secret", secret_dir);
	int fd = open(secret, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "HUNTER2\n", 8), 8);
	close(fd);
	snprintf(probe, sizeof(probe), "/etc/diag-attach-sandbox-probe-%d", (int)getpid());
	unlink(probe);

	char cmds[6][600];
	snprintf(cmds[0], sizeof(cmds[0]), "print (int)open(\"/proc/%d/mem\", 2)", (int)c.tool);
	snprintf(cmds[1], sizeof(cmds[1]), "print (int)creat(\"%s\", 0600)", probe);
	snprintf(cmds[2], sizeof(cmds[2]), "print (int)target_open_debug(-1, 0, \"%s\")", secret);
	snprintf(cmds[3], sizeof(cmds[3]), "print (int)target_open_debug(-1, 0, \"%s\")",
		 target_path("demo"));
	/* process_vm_writev (311) into the tool: the filter ends the worker. */
	snprintf(cmds[4], sizeof(cmds[4]), "print (long)syscall(311, %d, 0, 1, 0, 1, 0)", (int)c.tool);
	const char *list[] = {cmds[0], cmds[1], cmds[2], cmds[3], cmds[4], NULL};
	static char out[65536];
	gdb_batch(worker, list, out, sizeof(out));
	cr_expect_eq(gdb_value(out, 1), -1, "open of the tracer's memory: %s", out);
	cr_expect_eq(gdb_value(out, 2), -1, "creat in /etc: %s", out);
	struct stat st;
	cr_expect_neq(stat(probe, &st), 0, "the worker created %s", probe);
	unlink(probe);
	/* -ENOEXEC: a root-only file that is no ELF never leaves the broker. */
	cr_expect_eq(gdb_value(out, 3), -8, "the broker handed out %s: %s", secret, out);
	cr_expect_geq(gdb_value(out, 4), 0, "the broker refused an ELF of the target: %s", out);
	cr_expect(strstr(out, "exited with code 0237"),
		  "process_vm_writev did not end the worker (exit 159): %s", out);

	/* The capture goes on, with a new worker, and says what happened. */
	char *err = capture_finish(&c, capture_end_ms(8000, 49, 2));
	cr_expect(err && strstr(err, "stopped by the sandbox's filter at system call 311"),
		  "no warning about the stopped worker: %s", err ? err : "(none)");
	free(err);
	cJSON *m = manifest_need(c.out);
	const cJSON *sb = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "interpretation"), "sandbox");
	cr_assert(sb, "no interpretation.sandbox in the manifest");
	cr_expect_geq(cJSON_GetNumberValue(cJSON_GetObjectItem(sb, "workers_stopped_by_filter")), 1);
	cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(sb, "denied_syscall")), 311);
	cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(sb, "uid")), 65534);
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(sb, "cap_eff")), "0000000000000000");
	cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(sb, "seccomp")), 2);
	cJSON_Delete(m);
	target_kill(&t);
	rm_rf(c.dir);
	rm_rf(secret_dir);
}
