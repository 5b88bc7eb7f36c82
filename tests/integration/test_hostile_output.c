/*
 * Issue 18, the writer and the opener (items 1, 2, 3, 6), as the attacks
 * were reproduced: a real unprivileged target (setpriv to nobody) that
 * links its debug file to a host secret; another user's and world-writable
 * output directories; symlinks planted where report, export and pem put
 * their temporaries and outputs; FIFOs planted, by another user, under the
 * names of a capture's temporaries. Each test asserts the refusal or that
 * nothing was written through or waited on. Needs root (it plants as
 * nobody, and makes files nobody may not read); skips without it.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cli/exit_codes.h"
#include "harness.h"

#define NOBODY 65534
#define SECRET "SECRET-MARKER-6c1f0e"

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (plants files as another user)");
}

static void write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	chmod(path, mode);
}

/* Does any regular file under dir contain needle? */
static const char *grep_needle;
static char grep_hit[1024];
static int grep_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)f;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	size_t len;
	char *data = read_file(path, &len);
	if (data && memmem(data, len, grep_needle, strlen(grep_needle)))
		snprintf(grep_hit, sizeof(grep_hit), "%s", path);
	free(data);
	return 0;
}

static bool tree_contains(const char *dir, const char *needle)
{
	grep_needle = needle;
	grep_hit[0] = '\0';
	nftw(dir, grep_one, 16, FTW_PHYS);
	return grep_hit[0] != '\0';
}

/* A snapshot bundle of the demo target, in dir. */
static void make_bundle(const char *dir)
{
	struct target t = target_start_args("demo", (const char *[]){NULL}, NULL);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result r;
	tool_run(&r, (const char *[]){"-p", pid, "--snapshot", "-q", "-o", dir, NULL});
	target_kill(&t);
	cr_assert_eq(r.exit_code, EXIT_OK, "snapshot: %s", r.err);
}

/* Item 1: app.debug -> a root-only file, beside a binary an unprivileged
 * target runs. --with-binaries must not copy it, and say why. */
Test(hostile_output, i1_debug_file_link_to_host_secret, .timeout = 120)
{
	need_root();
	char d[256], secret_dir[256], app[400], dbg[400], secret[400], out[400], cmd[1200];
	make_tmpdir(d, sizeof(d));
	make_tmpdir(secret_dir, sizeof(secret_dir));
	chmod(d, 0755);
	snprintf(app, sizeof(app), "%s/app", d);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0755 '%s'", target_path("demo"), app, app);
	cr_assert_eq(system(cmd), 0);
	snprintf(secret, sizeof(secret), "%s/shadow", secret_dir);
	write_text(secret, SECRET "\n", 0600);
	snprintf(dbg, sizeof(dbg), "%s/app.debug", d);
	cr_assert_eq(symlink(secret, dbg), 0);
	/* The .debug/ directory form too, as a second try. */
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/.debug' && ln -s '%s' '%s/.debug/app.debug'", d,
		 secret, d);
	cr_assert_eq(system(cmd), 0);

	cr_assert(can_exec_as(NOBODY, NOBODY, app), "nobody cannot run %s", app);
	char uid[32];
	snprintf(uid, sizeof(uid), "--reuid=%d", NOBODY);
	const char *argv[] = {"/usr/bin/setpriv", uid, "--regid=65534", "--clear-groups", app, NULL};
	struct target t = target_start(argv, NULL);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	snprintf(out, sizeof(out), "%s/bundle", d);
	struct tool_result r;
	tool_run(&r, (const char *[]){"-p", pid, "--snapshot", "-q", "--with-binaries", "-o", out,
				      NULL});
	target_kill(&t);
	cr_assert_eq(r.exit_code, EXIT_OK, "capture: %s", r.err);
	expect_verified(out, "i1");
	cr_expect(!tree_contains(out, SECRET), "the secret was copied into the bundle: %s",
		  grep_hit);

	cJSON *m = manifest_need(out);
	const cJSON *bin = cJSON_GetObjectItem(m, "binaries");
	cr_assert(bin, "no binaries section in the manifest");
	bool said = false;
	const cJSON *s;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(bin, "skipped"))
	{
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(s, "reason"));
		const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(s, "path"));
		if (why && path && strstr(why, "build-id") && strcmp(path, app) == 0)
			said = true;
	}
	cr_expect(said, "the manifest does not say why app.debug was skipped");
	/* The binary that ran is still copied. */
	bool copied_app = false;
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(bin, "copied"))
	{
		const char *member = cJSON_GetStringValue(cJSON_GetObjectItem(c, "member"));
		size_t n = member ? strlen(member) : 0;
		if (n > 4 && strcmp(member + n - 4, "/app") == 0)
			copied_app = true;
	}
	cr_expect(copied_app, "the target's own binary was not copied");
	cJSON_Delete(m);
	rm_rf(d);
	rm_rf(secret_dir);
}

static void expect_unpem_refused(const char *pem, const char *dir, const char *what)
{
	struct tool_result r;
	tool_run(&r, (const char *[]){"unpem", "-o", dir, pem, NULL});
	cr_expect_eq(r.exit_code, EXIT_OUTPUT_DIR, "unpem into %s: exit %d: %s", what, r.exit_code,
		     r.err);
	cr_expect(strchr(r.err, '\n') == strrchr(r.err, '\n'), "not one line: %s", r.err);
}

static bool dir_empty(const char *dir)
{
	char cmd[600], out[64];
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	return shell_output(cmd, out, sizeof(out)) == 0 && atoi(out) == 0;
}

/* Item 2 (and 6's root cause): unpem and capture refuse a directory that
 * is another user's, writable by others without the sticky bit, or a
 * symlink; a sticky one of our own is accepted. */
Test(hostile_output, i2_output_dirs_of_others_refused, .timeout = 120)
{
	need_root();
	char d[256], bundle[400], pem[400], dir[400], target[400];
	make_tmpdir(d, sizeof(d));
	snprintf(bundle, sizeof(bundle), "%s/bundle", d);
	make_bundle(bundle);
	snprintf(pem, sizeof(pem), "%s/log.pem", d);
	struct tool_result r;
	tool_run(&r, (const char *[]){"pem", "-o", pem, bundle, NULL});
	cr_assert_eq(r.exit_code, EXIT_OK, "pem: %s", r.err);

	snprintf(dir, sizeof(dir), "%s/nobodys", d);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chown(dir, NOBODY, NOBODY), 0);
	expect_unpem_refused(pem, dir, "another user's empty directory");
	cr_expect(dir_empty(dir), "something was written into %s", dir);

	snprintf(dir, sizeof(dir), "%s/open", d);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, 0777), 0);
	expect_unpem_refused(pem, dir, "a world-writable directory");
	cr_expect(dir_empty(dir), "something was written into %s", dir);
	/* A capture too: this is where FIFOs were planted (item 6). */
	struct target t = target_start_args("demo", (const char *[]){NULL}, NULL);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	tool_run(&r, (const char *[]){"-p", pid, "--snapshot", "-q", "-o", dir, NULL});
	cr_expect_eq(r.exit_code, EXIT_OUTPUT_DIR, "capture into a world-writable dir: %d %s",
		     r.exit_code, r.err);
	cr_expect(dir_empty(dir), "the capture wrote into %s", dir);
	target_kill(&t);

	snprintf(target, sizeof(target), "%s/real", d);
	cr_assert_eq(mkdir(target, 0700), 0);
	snprintf(dir, sizeof(dir), "%s/link", d);
	cr_assert_eq(symlink(target, dir), 0);
	expect_unpem_refused(pem, dir, "a symlink to an empty directory");
	cr_expect(dir_empty(target), "unpem wrote through the link");

	snprintf(dir, sizeof(dir), "%s/sticky", d);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, 01777), 0);
	tool_run(&r, (const char *[]){"unpem", "-o", dir, pem, NULL});
	cr_expect_eq(r.exit_code, EXIT_OK, "unpem into our own sticky directory: %s", r.err);
	rm_rf(d);
}

/* Item 3: a symlink planted under the output's name, or under the old
 * predictable temporary name, is never written through. */
Test(hostile_output, i3_planted_links_at_outputs, .timeout = 120)
{
	need_root();
	char d[256], bundle[400], victim[400], path[700], tmp[720];
	make_tmpdir(d, sizeof(d));
	snprintf(bundle, sizeof(bundle), "%s/bundle", d);
	make_bundle(bundle);
	snprintf(victim, sizeof(victim), "%s/victim", d);
	write_text(victim, "VICTIM\n", 0644);

	const char *kinds[] = {"html", "export", "pem"};
	for (int k = 0; k < 3; k++) {
		snprintf(path, sizeof(path), "%s/out.%s", d, kinds[k]);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		cr_assert_eq(symlink(victim, tmp), 0);
		cr_assert_eq(symlink(victim, path), 0);
		struct tool_result r;
		if (k == 0)
			tool_run(&r, (const char *[]){"report", "--html", path, bundle, NULL});
		else if (k == 1)
			tool_run(&r, (const char *[]){"export", "-o", path, bundle, NULL});
		else
			tool_run(&r, (const char *[]){"pem", "-o", path, bundle, NULL});
		cr_expect_eq(r.exit_code, EXIT_OK, "%s: %s", kinds[k], r.err);
		size_t len;
		char *v = read_file(victim, &len);
		cr_expect(v && strcmp(v, "VICTIM\n") == 0, "%s wrote through a planted link", kinds[k]);
		free(v);
		struct stat st;
		cr_expect(lstat(path, &st) == 0 && S_ISREG(st.st_mode),
			  "%s: the output is not a regular file in place of the link", kinds[k]);
		cr_expect(lstat(tmp, &st) == 0 && S_ISLNK(st.st_mode),
			  "%s: the planted temporary link was touched", kinds[k]);
	}

	/* An output in a directory others may swap entries in is refused. */
	char open_dir[400];
	snprintf(open_dir, sizeof(open_dir), "%s/open", d);
	cr_assert_eq(mkdir(open_dir, 0777), 0);
	cr_assert_eq(chmod(open_dir, 0777), 0);
	snprintf(path, sizeof(path), "%s/page.html", open_dir);
	struct tool_result r;
	tool_run(&r, (const char *[]){"report", "--html", path, bundle, NULL});
	cr_expect_neq(r.exit_code, EXIT_OK, "report --html into a world-writable directory");
	cr_expect(strstr(r.err, "writable by other users"), "no reason given: %s", r.err);
	cr_expect(dir_empty(open_dir), "something was written into %s", open_dir);
	rm_rf(d);
}

/* Item 6: another user plants FIFOs under the names a capture's
 * temporaries had, in a sticky world-writable directory we own, while the
 * capture runs. It must finish (it used to block forever in open). */
Test(hostile_output, i6_fifos_planted_during_capture, .timeout = 120)
{
	need_root();
	char d[256], out[400];
	make_tmpdir(d, sizeof(d));
	chmod(d, 0755);
	snprintf(out, sizeof(out), "%s/bundle", d);
	cr_assert_eq(mkdir(out, 0700), 0);
	cr_assert_eq(chmod(out, 01777), 0);

	struct target t = target_start_args("demo", (const char *[]){NULL}, NULL);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	pid_t tool = tool_spawn((const char *[]){"-p", pid, "-d", "3s", "-q", "-o", out, NULL},
				NULL, NULL);
	/* Past the capture's emptiness check: its first timeline line. */
	for (int i = 0; i < 200 && !path_exists(out, "timeline.jsonl"); i++)
		sleep_ms(10);
	pid_t planter = fork();
	cr_assert(planter >= 0);
	if (planter == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(126);
		const char *names[] = {"manifest.json.tmp", "threads.txt.tmp", "cpu.pprof.tmp",
				       "wall.pprof.tmp",    "threads.pprof.tmp", "timeline.jsonl.tmp",
				       "report.txt.tmp"};
		for (int round = 0; round < 200; round++) {
			for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
				char p[600];
				snprintf(p, sizeof(p), "%s/%s", out, names[i]);
				mkfifo(p, 0666);
			}
			usleep(10000);
		}
		_exit(0);
	}
	int code = tool_wait(tool, 60000);
	kill(planter, SIGKILL);
	waitpid(planter, NULL, 0);
	target_kill(&t);
	cr_expect_neq(code, -2, "the capture hung on a planted FIFO");
	cr_expect_eq(code, EXIT_OK, "capture exit %d", code);
	cr_expect(path_exists(out, "manifest.json"), "no manifest");
	rm_rf(d);
}
