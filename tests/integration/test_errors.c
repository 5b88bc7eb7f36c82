/*
 * Bad input: each refusal gets one clear line, its own exit status, no
 * bundle directory, and an untouched target. Reliability catalogue
 * (reliability.md section 4) group D, and E7.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cli/exit_codes.h"
#include "harness.h"

static void expect_refusal(const char *pid, int code, const char *msg_part)
{
	char dir[256], out[300];
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/bundle", dir);
	struct tool_result r;
	const char *args[] = {"-p", pid, "--snapshot", "-o", out, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, code, "pid %s: exit %d, want %d: %s", pid, r.exit_code, code, r.err);
	cr_expect(strstr(r.err, msg_part), "message lacks '%s': %s", msg_part, r.err);
	cr_expect(strncmp(r.err, "diag-attach: ", 13) == 0, "message format: %s", r.err);
	struct stat st;
	cr_expect(stat(out, &st) != 0, "a bundle directory was left behind");
	rm_rf(dir);
}

Test(errors, nonexistent_pid)
{
	/* pid_max is at most 4194304: this one cannot exist. */
	expect_refusal("4194305", 3, "no such process");
}

Test(errors, kernel_thread)
{
	expect_refusal("2", 5, "kernel thread");
}

Test(errors, zombie)
{
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	/* Let it exit but do not reap it. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
	for (int i = 0; i < 500; i++) {
		char *st = read_file(path, NULL);
		bool z = st && strstr(st, ") Z ");
		free(st);
		if (z)
			break;
		usleep(2000);
	}
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)child);
	expect_refusal(pid, 4, "zombie");
	waitpid(child, NULL, 0);
}

Test(errors, already_traced)
{
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target t = target_start(argv, "ready");
	cr_assert(ptrace(PTRACE_SEIZE, t.pid, 0, 0) == 0);
	char pid[16], want[64];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	snprintf(want, sizeof(want), "already traced by pid %d", (int)getpid());
	expect_refusal(pid, 7, want);
	ptrace(PTRACE_DETACH, t.pid, 0, 0);
	target_kill(&t);
}

Test(errors, non_empty_output_dir)
{
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target_run g;
	/* g.out is the foreign file; the output directory is g.dir */
	run_begin(&g, argv, "ready", "something");
	FILE *f = fopen(g.out, "w");
	fputs("x", f);
	fclose(f);
	struct tool_result r;
	const char *args[] = {"-p", g.pid, "--snapshot", "-o", g.dir, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 9, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "not empty"), "%s", r.err);
	char manifest[300];
	snprintf(manifest, sizeof(manifest), "%s/manifest.json", g.dir);
	struct stat st;
	cr_expect(stat(manifest, &st) != 0, "a manifest was written into a foreign directory");
	char why[256];
	cr_expect(target_healthy(g.t.pid, false, why, sizeof(why)), "%s", why);
	run_end(&g);
}

Test(errors, symlink_output_refused)
{
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target_run g;
	/* g.out is the link, to g.dir/real */
	run_begin(&g, argv, "ready", "link");
	char real[300];
	snprintf(real, sizeof(real), "%s/real", g.dir);
	mkdir(real, 0700);
	cr_assert(symlink(real, g.out) == 0);
	struct tool_result r;
	const char *args[] = {"-p", g.pid, "--snapshot", "-o", g.out, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 9, "exit %d: %s", r.exit_code, r.err);
	run_end(&g);
}

Test(errors, usage)
{
	struct tool_result r;
	const char *a1[] = {"--snapshot", NULL};
	tool_run(&r, a1);
	cr_expect_eq(r.exit_code, 2, "%s", r.err);
	const char *a2[] = {"-p", "abc", NULL};
	tool_run(&r, a2);
	cr_expect_eq(r.exit_code, 2, "%s", r.err);
	const char *a3[] = {"-p", "1", "-d", "soon", NULL};
	tool_run(&r, a3);
	cr_expect_eq(r.exit_code, 2, "%s", r.err);
	const char *a4[] = {"verify", NULL};
	tool_run(&r, a4);
	cr_expect_eq(r.exit_code, 2, "%s", r.err);
	const char *a5[] = {"--help", NULL};
	tool_run(&r, a5);
	cr_expect_eq(r.exit_code, 0);
	cr_expect(strstr(r.out, "Exit status:"), "help lacks exit statuses");
}

/* A thread's id (as top -H or a log line shows it) is taken for its
 * process, said in one line, and the bundle is the process's. */
Test(errors, a_thread_id_is_taken_for_its_process)
{
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target_run g;
	run_begin(&g, argv, "ready", "bundle");
	pid_t other = other_thread_of(g.t.pid);
	cr_assert(other > 0, "chains_fp has no thread but its main one");
	char tid[16];
	snprintf(tid, sizeof(tid), "%d", (int)other);
	struct tool_result r;
	const char *args[] = {"-p", tid, "--snapshot", "-q", "-o", g.out, NULL};
	tool_run(&r, args);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	char note[128];
	snprintf(note, sizeof(note), "%s is a thread of process %s", tid, g.pid);
	cr_expect(strstr(r.err, note), "no '%s' in: %s", note, r.err);
	cJSON *m = manifest_need(g.out);
	cr_expect_eq(number_at(m, "target", "pid"), atof(g.pid), "the bundle is not the process's");
	cJSON_Delete(m);
	run_end(&g);
}

/* A snapshot is of one process: a second -p (or a list) is refused with
 * it, never quietly dropped (a sampled capture takes several:
 * integration-group); and -p means a process in every subcommand (export
 * names its profile with --profile only). */
Test(errors, one_process_per_snapshot_and_p_is_always_a_process)
{
	struct tool_result r;
	const char *two[] = {"-p", "1", "-p", "2", "--snapshot", NULL};
	tool_run(&r, two);
	cr_expect_eq(r.exit_code, 2, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "--snapshot is of one process"), "%s", r.err);
	const char *list[] = {"-p", "1,2", "--snapshot", NULL};
	tool_run(&r, list);
	cr_expect_eq(r.exit_code, 2, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "--snapshot is of one process"), "%s", r.err);
	const char *top[] = {"top", "-p", "1", "-p", "2", NULL};
	tool_run(&r, top);
	cr_expect_eq(r.exit_code, 2, "exit %d: %s", r.exit_code, r.err);
	const char *exp[] = {"export", "-p", "cpu", "/nonexistent", NULL};
	tool_run(&r, exp);
	cr_expect_eq(r.exit_code, 2, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "--profile"), "%s", r.err);
}

Test(errors, verify_not_a_bundle)
{
	char dir[256];
	make_tmpdir(dir, sizeof(dir));
	struct tool_result r;
	const char *args[] = {"verify", dir, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 1, "%s", r.err);
	cr_expect(strstr(r.err, "no manifest"), "%s", r.err);
	rm_rf(dir);
}

/* ---- helpers for the catalogue tests below ---- */

/* An ordinary user: nobody:nogroup. */
#define NOBODY 65534

static const char *tool_exe(void)
{
	const char *p = getenv("DIAG_ATTACH");
	cr_assert(p, "DIAG_ATTACH not set (run through meson test)");
	return p;
}

/* The refusal format of STYLE.md: exactly one line "diag-attach: ..."
 * naming the failure (with what), then one "hint: ..." line (with
 * hint_part). */
static void expect_message(const char *err, const char *what, const char *hint_part)
{
	const char *nl = strchr(err, '\n');
	cr_expect(strncmp(err, "diag-attach: ", 13) == 0 && nl, "message format: %s", err);
	if (!nl)
		return;
	cr_expect(memmem(err, (size_t)(nl - err), what, strlen(what)), "first line lacks '%s': %s",
		  what, err);
	const char *hint = nl + 1, *end = strchr(hint, '\n');
	cr_expect(strncmp(hint, "hint: ", 6) == 0 && end, "no hint line: %s", err);
	if (!end)
		return;
	cr_expect(memmem(hint, (size_t)(end - hint), hint_part, strlen(hint_part)),
		  "hint lacks '%s': %s", hint_part, err);
	cr_expect(end[1] == '\0', "more than a message and a hint: %s", err);
}

static void expect_no_dir(const char *out)
{
	struct stat st;
	cr_expect(lstat(out, &st) != 0, "a refused capture left %s behind", out);
}

static void expect_untouched(pid_t pid, const char *what)
{
	char why[256];
	cr_expect(target_healthy(pid, false, why, sizeof(why)), "%s: %s", what, why);
}

/* A temp dir that nobody can create the output in, so that a refusal of
 * an unprivileged tool is about ptrace, never about the directory. */
static void make_world_tmpdir(char *buf, size_t size)
{
	make_tmpdir(buf, size);
	cr_assert_eq(chmod(buf, 0777), 0);
}

/* Skip unless we are root and nobody can run the tool and the target
 * (the build tree may sit under a private home directory). */
static void need_nobody(const char *target)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: the test drops the tool to uid %d", NOBODY);
	if (access("/usr/bin/setpriv", X_OK) != 0)
		cr_skip_test("/usr/bin/setpriv (util-linux) is missing");
	if (!can_exec_as(NOBODY, NOBODY, tool_exe()) || !can_exec_as(NOBODY, NOBODY, target))
		cr_skip_test("uid %d cannot execute %s or %s: the build tree is not world-readable",
			     NOBODY, tool_exe(), target);
}

/* chains_fp running as nobody (setpriv drops, then execs: the exec makes
 * it dumpable again, as any program started by that user). The test stays
 * its parent. */
static struct target start_as_nobody(void)
{
	const char *argv[] = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			      target_path("chains_fp"), NULL};
	return target_start(argv, "ready");
}

/* Run sh -c script with $0 = the tool and $1 = arg1, under a KILL timeout
 * of 60 s (status 137 then), stderr into err. Returns the exit status. */
static int run_script(const char *script, const char *arg1, char *out, size_t out_size, char *err,
		      size_t err_size)
{
	char errp[] = "/tmp/diag-test-err-XXXXXX";
	int efd = mkstemp(errp);
	cr_assert(efd >= 0);
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "timeout -s KILL 60 sh -c '%s' '%s' '%s' 2>'%s'", script,
		 tool_exe(), arg1, errp);
	int status = shell_output(cmd, out, out_size);
	ssize_t n = read(efd, err, err_size - 1);
	err[n > 0 ? n : 0] = '\0';
	close(efd);
	unlink(errp);
	return status;
}

/* A script's run in a fresh directory: out (dir/bundle) is its $1, sout
 * and err what it wrote, status its exit status (as run_script). */
struct script_run {
	char dir[256], out[300], sout[4096], err[4096];
	int status;
};

static void script_in_tmpdir(struct script_run *s, const char *script)
{
	make_tmpdir(s->dir, sizeof(s->dir));
	snprintf(s->out, sizeof(s->out), "%s/bundle", s->dir);
	s->status = run_script(script, s->out, s->sout, sizeof(s->sout), s->err, sizeof(s->err));
}

/* cr_expect that the /proc status lines a script printed say untraced and
 * not stopped; who names the process in the message. */
static void expect_status_untraced(const char *sout, const char *who)
{
	cr_expect(strstr(sout, "TracerPid:\t0\n") && !strstr(sout, "(tracing stop)") &&
			  !strstr(sout, "(stopped)"),
		  "the %s was left traced or stopped:\n%s", who, sout);
}

/* A struct target_run (harness.h) for t with a world-writable directory (the
 * unprivileged tool writes into it), out = dir/bundle. */
static void world_run_begin(struct target_run *g, struct target t)
{
	g->t = t;
	make_world_tmpdir(g->dir, sizeof(g->dir));
	snprintf(g->out, sizeof(g->out), "%s/bundle", g->dir);
	snprintf(g->pid, sizeof(g->pid), "%d", (int)t.pid);
}

/* ---- D2: another user's process, as a non-root tool ---- */

/* A tool running as nobody, without capabilities, on a root process: the
 * kernel would refuse; we refuse first, say whose process it is and what
 * would let us (its uid, or CAP_SYS_PTRACE). */
Test(errors, d2_other_users_process_not_permitted)
{
	need_nobody(target_path("chains_fp"));
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target_run g;
	world_run_begin(&g, target_start(argv, "ready"));
	struct tool_result r;
	const char *args[] = {"-p", g.pid, "--snapshot", "-o", g.out, NULL};
	tool_run_as(&r, NOBODY, NOBODY, args);
	cr_expect_eq(r.exit_code, EXIT_NOT_PERMITTED, "exit %d, want %d: %s", r.exit_code,
		     EXIT_NOT_PERMITTED, r.err);
	expect_message(r.err, "not permitted", "CAP_SYS_PTRACE");
	cr_expect(strstr(r.err, "uid 0"), "the hint does not name the owner's uid: %s", r.err);
	expect_no_dir(g.out);
	expect_untouched(g.t.pid, "d2 refused");
	run_end(&g);
}

/* The counterpart: the same unprivileged tool on a process of its own
 * user works. Root is not needed. */
Test(errors, d2_same_user_without_root_works)
{
	need_nobody(target_path("chains_fp"));
	struct target_run g;
	world_run_begin(&g, start_as_nobody());
	struct tool_result r;
	const char *args[] = {"-p", g.pid, "--snapshot", "-q", "-o", g.out, NULL};
	tool_run_as(&r, NOBODY, NOBODY, args);
	cr_expect_eq(r.exit_code, 0, "a non-root tool on its own user's process: exit %d: %s",
		     r.exit_code, r.err);
	expect_verified(g.out, "d2 same user");
	char *txt = read_in(g.out, "threads.txt");
	cr_expect(txt && strstr(txt, "chains_fp"), "no stack of the target:\n%s", txt ? txt : "");
	free(txt);
	struct stat st;
	cr_expect(stat(g.out, &st) == 0 && st.st_uid == NOBODY, "the bundle is not nobody's");
	expect_untouched(g.t.pid, "d2 same user");
	run_end(&g);
}

/* ---- D6: ourselves, our own tracer, our parent shell ---- */

Test(errors, d6_self_refused)
{
	struct script_run s;
	/* exec: the shell's $$ becomes the tool's own pid. */
	script_in_tmpdir(&s, "exec \"$0\" -p $$ --snapshot -o \"$1\"");
	cr_expect_eq(s.status, EXIT_SELF, "exit %d, want %d: %s", s.status, EXIT_SELF, s.err);
	expect_message(s.err, "diag-attach itself", "deadlock");
	expect_no_dir(s.out);
	rm_rf(s.dir);
}

/* Tracing our own tracer would deadlock both (strace #178): refused, and
 * promptly (the script runs under a 60 s KILL timeout: 137 = hung). */
Test(errors, d6_own_tracer_refused)
{
	if (!have_program("strace"))
		cr_skip_test("strace is not installed");
	struct script_run s;
	/* strace takes the shell's pid and runs the tool as its tracee, which
	 * is then asked to attach to strace. LeakSanitizer (an ASan build)
	 * refuses to run under ptrace: leaks are not checked in this one.
	 * strace exits with its tracee's status. */
	script_in_tmpdir(&s, "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" "
			     "exec strace -f -o /dev/null \"$0\" -p $$ --snapshot -o \"$1\"");
	cr_expect_neq(s.status, 137, "the tool hung attaching to its own tracer: %s", s.err);
	cr_expect_eq(s.status, EXIT_SELF, "exit %d, want %d: %s", s.status, EXIT_SELF, s.err);
	expect_message(s.err, "traces it", "deadlock");
	expect_no_dir(s.out);
	rm_rf(s.dir);
}

/* The shell that started us is an ordinary target: it is blocked in
 * wait4 for us, which restarts after our stop. It must go on unharmed. */
Test(errors, d6_parent_shell_works)
{
	struct script_run s;
	script_in_tmpdir(&s, "\"$0\" -p $$ --snapshot -q -o \"$1\"; echo tool=$?; "
			     "grep -E \"^(State|TracerPid):\" /proc/$$/status; echo shell-alive");
	cr_expect_eq(s.status, 0, "the shell exited %d: %s", s.status, s.err);
	cr_expect(strstr(s.sout, "tool=0\n"), "tool on its parent shell failed: %s%s", s.sout,
		  s.err);
	/* The shell is waiting for grep: S, never t (traced) or T. */
	expect_status_untraced(s.sout, "shell");
	cr_expect(strstr(s.sout, "shell-alive\n"), "the shell did not go on: %s", s.sout);
	expect_verified(s.out, "d6 parent shell");
	rm_rf(s.dir);
}

/* ---- D7: Yama ---- */

/* kernel.yama.ptrace_scope=1: only ancestors may trace (unless the target
 * names a tracer with PR_SET_PTRACER, which /proc does not show, so the
 * kernel's EPERM is what tells). A non-root tool on a sibling of the same
 * user must be refused with a hint naming the sysctl. Scope 3 is not
 * tested: it cannot be lowered again until reboot. */
Test(errors, d7_yama_ptrace_scope)
{
	const char *scope_path = "/proc/sys/kernel/yama/ptrace_scope";
	char *old = read_file(scope_path, NULL);
	if (!old)
		cr_skip_test("%s does not exist: this kernel has no Yama, D7 cannot run here",
			     scope_path);
	need_nobody(target_path("chains_fp"));
	if (atoi(old) == 3) {
		free(old);
		cr_skip_test("kernel.yama.ptrace_scope is 3 (cannot be changed until reboot)");
	}
	/* The target is our child and the tool our child: not its descendant. */
	struct target t = start_as_nobody();
	FILE *f = fopen(scope_path, "w");
	cr_assert(f, "cannot write %s: %s", scope_path, strerror(errno));
	fputs("1\n", f);
	cr_assert(fclose(f) == 0, "cannot set ptrace_scope 1");

	char dir[256], out[300], pid[16];
	make_world_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/bundle", dir);
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result r;
	const char *args[] = {"-p", pid, "--snapshot", "-o", out, NULL};
	tool_run_as(&r, NOBODY, NOBODY, args);

	/* Restore before any assertion can end the test. */
	f = fopen(scope_path, "w");
	bool restored = f && fputs(old, f) >= 0;
	restored = f && fclose(f) == 0 && restored;
	cr_expect(restored, "could not restore ptrace_scope %s", old);
	free(old);

	cr_expect_eq(r.exit_code, EXIT_NOT_PERMITTED, "exit %d, want %d: %s", r.exit_code,
		     EXIT_NOT_PERMITTED, r.err);
	expect_message(r.err, "not permitted", "kernel.yama.ptrace_scope");
	expect_no_dir(out);
	expect_untouched(t.pid, "d7");
	target_kill(&t);
	rm_rf(dir);
}

/* ---- D9: pid namespaces ---- */

static void need_pid_namespaces(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to create pid namespaces");
	if (system("unshare -p -f --kill-child true >/dev/null 2>&1") != 0)
		cr_skip_test("cannot create a pid namespace here (unshare -p -f failed)");
}

/* The trap: a tool in a child pid namespace whose /proc is still the
 * host's (`unshare -p -f` without --mount-proc) would read /proc/PID of
 * one process while ptrace and pidfd_open, which take pids of its own
 * namespace, act on another. Refused before anything is traced. */
Test(errors, d9_foreign_procfs_refused)
{
	need_pid_namespaces();
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target_run g;
	run_begin(&g, argv, "ready", "bundle");
	char sout[4096], err[4096], script[512];
	snprintf(script, sizeof(script),
		 "exec unshare -p -f --kill-child \"$0\" -p %s --snapshot -o \"$1\"", g.pid);
	int status = run_script(script, g.out, sout, sizeof(sout), err, sizeof(err));
	cr_expect_eq(status, EXIT_FOREIGN_PROCFS, "exit %d, want %d: %s", status, EXIT_FOREIGN_PROCFS,
		     err);
	expect_message(err, "does not belong to this pid namespace", "--mount-proc");
	expect_no_dir(g.out);
	expect_untouched(g.t.pid, "d9 refused");
	run_end(&g);
}

/* The counterpart: tool and target in one pid namespace with its own
 * /proc: an ordinary capture. */
Test(errors, d9_inside_namespace_with_own_proc_works)
{
	need_pid_namespaces();
	struct script_run s;
	char script[1024];
	snprintf(script, sizeof(script),
		 "exec unshare -p -f --kill-child --mount-proc sh -c "
		 "\"%s > \\\"\\$1.ready\\\" & "
		 "for i in \\$(seq 500); do "
		 "grep -q ready \\\"\\$1.ready\\\" && break; sleep 0.02; done; "
		 "\\\"\\$0\\\" -p \\$! --snapshot -q -o \\\"\\$1\\\"; echo tool=\\$?; "
		 "grep -E \\\"^(State|TracerPid):\\\" /proc/\\$!/status; kill -9 \\$!\" \"$0\" \"$1\"",
		 target_path("chains_fp"));
	script_in_tmpdir(&s, script);
	cr_expect_eq(s.status, 0, "exit %d: %s", s.status, s.err);
	cr_expect(strstr(s.sout, "tool=0\n"), "capture inside the namespace failed:\n%s%s", s.sout,
		  s.err);
	expect_status_untraced(s.sout, "target");
	expect_verified(s.out, "d9 inside");
	rm_rf(s.dir);
}

/* From the host, a process inside a pid namespace: the manifest keeps the
 * pid it has in there too ("ns_pid"), the one its own logs use. */
Test(errors, d9_host_view_records_ns_pid)
{
	need_pid_namespaces();
	const char *argv[] = {"/usr/bin/unshare", "-p", "-f", "--kill-child", "--mount-proc",
			      target_path("chains_fp"), NULL};
	struct target t = target_start(argv, "ready");
	char path[64], *kids;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)t.pid, (int)t.pid);
	kids = read_file(path, NULL);
	pid_t inner = kids ? (pid_t)atoi(kids) : 0;
	free(kids);
	cr_assert(inner > 0, "no child of unshare %d", (int)t.pid);
	char dir[256], out[300], pid[16];
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/bundle", dir);
	snprintf(pid, sizeof(pid), "%d", (int)inner);
	struct tool_result r;
	const char *args[] = {"-p", pid, "--snapshot", "-q", "-o", out, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	expect_untouched(inner, "d9 host view");
	cJSON *m = manifest_load(out);
	cJSON *target = cJSON_GetObjectItem(m, "target");
	cJSON *p = cJSON_GetObjectItem(target, "pid"), *np = cJSON_GetObjectItem(target, "ns_pid");
	cr_expect(cJSON_IsNumber(p) && p->valueint == inner, "target.pid is not the host pid %d",
		  (int)inner);
	cr_expect(cJSON_IsNumber(np) && np->valueint == 1,
		  "target.ns_pid is not 1 (the namespace's init)");
	cJSON_Delete(m);
	kill(inner, SIGKILL);
	target_kill(&t);
	rm_rf(dir);
}

/* ---- E7: the bundle's own permissions and foreign output directories ---- */

static void expect_private_modes(const char *path, int *ndirs, int *nfiles)
{
	struct stat st;
	cr_assert(lstat(path, &st) == 0, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		cr_expect_eq(st.st_mode & 07777, 0700, "directory %s has mode %04o, want 0700", path,
			     st.st_mode & 07777);
		(*ndirs)++;
		DIR *d = opendir(path);
		cr_assert(d);
		struct dirent *e;
		while ((e = readdir(d))) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			char sub[4096];
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			expect_private_modes(sub, ndirs, nfiles);
		}
		closedir(d);
		return;
	}
	cr_expect(S_ISREG(st.st_mode), "%s is not a regular file", path);
	cr_expect_eq(st.st_mode & 07777, 0600, "member %s has mode %04o, want 0600", path,
		     st.st_mode & 07777);
	(*nfiles)++;
}

/* Stacks, argv and binaries can be sensitive: the bundle is 0700 and
 * every member 0600, at every depth (binaries/<build-id>/), whatever the
 * umask (the tool runs with umask 0 here, so a mode that only came from
 * the umask fails). */
Test(errors, e7_bundle_modes_private)
{
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target_run g;
	run_begin(&g, argv, "ready", "bundle");
	struct tool_result r;
	const char *args[] = {"-p", g.pid, "--snapshot", "-q", "--with-binaries=64M",
			      "-o", g.out, NULL};
	mode_t old = umask(0);
	tool_run(&r, args);
	umask(old);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	expect_verified(g.out, "e7");
	int ndirs = 0, nfiles = 0;
	expect_private_modes(g.out, &ndirs, &nfiles);
	/* The bundle, binaries/ and at least one binaries/<build-id>/. */
	cr_expect(ndirs >= 3, "only %d directories walked: no subdirectory was checked", ndirs);
	cr_expect(nfiles >= 4, "only %d members walked", nfiles);
	expect_untouched(g.t.pid, "e7");
	run_end(&g);
}

/* An (empty) output directory that another user made, say in /tmp before
 * us, is theirs to read and swap: refused, and left exactly as it was. */
Test(errors, e7_other_users_output_dir_refused)
{
	const char *argv[] = {target_path("chains_fp"), NULL};
	struct target t = target_start(argv, "ready");
	char dir[256], out[300], pid[16];
	make_tmpdir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/theirs", dir);
	cr_assert(mkdir(out, 0755) == 0);
	if (chown(out, NOBODY, NOBODY) != 0) {
		target_kill(&t);
		rm_rf(dir);
		cr_skip_test("cannot chown to uid %d (not root?): %s", NOBODY, strerror(errno));
	}
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result r;
	const char *args[] = {"-p", pid, "--snapshot", "-o", out, NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, EXIT_OUTPUT_DIR, "exit %d, want %d: %s", r.exit_code,
		     EXIT_OUTPUT_DIR, r.err);
	expect_message(r.err, "belongs to uid 65534", "-o");
	struct stat st;
	cr_expect(stat(out, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == NOBODY &&
			  st.st_gid == NOBODY && (st.st_mode & 07777) == 0755,
		  "the foreign directory was changed or removed");
	DIR *d = opendir(out);
	int entries = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		entries += e->d_name[0] != '.';
	if (d)
		closedir(d);
	cr_expect_eq(entries, 0, "something was written into the foreign directory");
	expect_untouched(t.pid, "e7 foreign dir");
	target_kill(&t);
	rm_rf(dir);
}

/* ---- D8 for top (capture's D8 is in test_reliability_hostile.c) ---- */

/* top shows stacks as much as a bundle does: a process that asked not to
 * be inspected is refused without --force, and watched with it. */
Test(errors, d8_top_refuses_non_dumpable_unless_forced)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: the target drops to another uid");
	char dir[256], file[300];
	make_tmpdir(dir, sizeof(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	/* A page of zeros, then a pause() loop at byte 4096 for the target's
	 * thread to sleep in (hostile_target.c). */
	unsigned char img[8192] = {0};
	const unsigned char pause_loop[] = {0xB8, 0x22, 0, 0, 0, 0x0F, 0x05, 0xEB, 0xF7};
	memcpy(img + 4096, pause_loop, sizeof(pause_loop));
	snprintf(file, sizeof(file), "%s/f.so", dir);
	FILE *f = fopen(file, "wb");
	cr_assert(f && fwrite(img, sizeof(img), 1, f) == 1 && fclose(f) == 0);
	const char *argv[] = {target_path("reliability/hostile_target"), "--user", "65534",
			      "--no-dump", file, NULL};
	struct target t = target_start(argv, "ready");
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);

	struct tool_result r;
	const char *args[] = {"top", "-p", pid, "-n", "1", NULL};
	tool_run(&r, args);
	cr_expect_eq(r.exit_code, EXIT_NOT_DUMPABLE, "top: exit %d, want %d: %s", r.exit_code,
		     EXIT_NOT_DUMPABLE, r.err);
	expect_message(r.err, "not dumpable", "--force");
	expect_untouched(t.pid, "top refused");

	const char *forced[] = {"top", "-p", pid, "-n", "1", "--force", NULL};
	tool_run(&r, forced);
	cr_expect_eq(r.exit_code, 0, "top --force: exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.out, "f.so+0x100"), "top --force did not show the thread:\n%s", r.out);
	expect_untouched(t.pid, "top forced");
	target_kill(&t);
	rm_rf(dir);
}

/* ---- D8 on exec ---- */

/* A target that execs a set-user-ID program mid-capture meets the policy
 * it would have met at attach: the capture ends at the timeline point
 * that sees the exec, with a whole bundle, exit 13 and --force named; with
 * --force the capture goes on. The exec comes 5 s after the target is up,
 * well after the tool has attached even under the sanitizers on a loaded
 * box (attached first, the refusal would be attach's, with no bundle). The
 * program is a set-user-ID root copy of
 * sleep run by nobody: its /proc files turn root's while its gid stays
 * nobody's, which is how the kernel says "not dumpable". */
static struct target start_nobody_then_setuid(const char *suid_prog)
{
	char script[600];
	snprintf(script, sizeof(script), "echo ready; sleep 5; exec %s 60", suid_prog);
	const char *argv[] = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
			      "/bin/sh", "-c", script, NULL};
	return target_start(argv, "ready");
}

Test(errors, d8_exec_of_a_setuid_program_ends_the_capture_unless_forced, .timeout = 120)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: the target drops to nobody and execs a set-user-ID copy");
	if (access("/usr/bin/setpriv", X_OK) != 0)
		cr_skip_test("/usr/bin/setpriv (util-linux) is missing");
	char dir[256], prog[300];
	make_tmpdir(dir, sizeof(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	snprintf(prog, sizeof(prog), "%s/suid-sleep", dir);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "cp /bin/sleep '%s' && chmod 4755 '%s'", prog, prog);
	cr_assert_eq(sh(cmd), 0);

	for (int forced = 0; forced < 2; forced++) {
		struct target t = start_nobody_then_setuid(prog);
		char pid[16], out[320];
		snprintf(pid, sizeof(pid), "%d", (int)t.pid);
		snprintf(out, sizeof(out), "%s/b%d", dir, forced);
		const char *args[] = {"-p", pid, "-q", "-o", out, "-d", "10s", "-i", "200ms",
				      forced ? "--force" : NULL, NULL};
		struct tool_result r;
		tool_run(&r, args);
		if (forced) {
			cr_expect_eq(r.exit_code, 0, "--force: exit %d: %s", r.exit_code, r.err);
		} else {
			cr_expect_eq(r.exit_code, EXIT_NOT_DUMPABLE, "exit %d, want %d: %s", r.exit_code,
				     EXIT_NOT_DUMPABLE, r.err);
			expect_message(r.err, "not dumpable", "--force");
		}
		expect_verified(out, forced ? "forced capture" : "capture ended at the exec");
		cJSON *m = manifest_need(out);
		const cJSON *cap = cJSON_GetObjectItem(m, "capture");
		const char *ended = cJSON_GetStringValue(cJSON_GetObjectItem(cap, "ended_by"));
		cr_expect(ended && strcmp(ended, forced ? "duration" : "exec_not_dumpable") == 0,
			  "ended_by %s", ended ? ended : "(none)");
		const cJSON *target = cJSON_GetObjectItem(m, "target");
		cr_expect(cJSON_GetArraySize(cJSON_GetObjectItem(target, "exec_from")) == 1,
			  "the exec is not in target.exec_from");
		const char *exe = cJSON_GetStringValue(cJSON_GetObjectItem(target, "exe"));
		cr_expect(exe && strstr(exe, "suid-sleep"), "target.exe %s", exe ? exe : "(none)");
		if (!forced)
			cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(target, "dumpable")),
				  "target.dumpable is not false");
		cJSON_Delete(m);
		expect_untouched(t.pid, forced ? "forced capture" : "capture ended at the exec");
		target_kill(&t);
	}
	rm_rf(dir);
}

/* One policy for a closed standard output, through real pipelines as a
 * shell runs them: the reader gone (| true) ends quietly with 141, as
 * SIGPIPE would (the target released, a bundle closed whole); a full disk
 * says so, exit 10. */
Test(errors, e9_a_closed_pipe_ends_quietly_with_141_and_a_full_disk_says_so)
{
	const char *args[] = {"convoy", NULL};
	struct target t = target_start_args("waits", args, "ready");
	char dir[256], cmd[1024], out[4096];
	make_tmpdir(dir, sizeof(dir));
	const char *tool = getenv("DIAG_ATTACH");
	cr_assert(tool);
	static const char *const forms[] = {"dump -p %d", "dump -p %d --json", "-p %d --snapshot -q -o %s/b"};
	for (size_t i = 0; i < 3; i++) {
		char line[512];
		snprintf(line, sizeof(line), forms[i], (int)t.pid, dir);
		snprintf(cmd, sizeof(cmd), "bash -c '%s %s 2>%s/err | true; echo ${PIPESTATUS[0]}'", tool, line, dir);
		shell_output(cmd, out, sizeof(out));
		cr_expect_eq(atoi(out), 141, "%s | true: exit %s", line, out);
		char *err = read_in(dir, "err");
		cr_expect(!err || !*err, "%s | true printed: %s", line, err ? err : "");
		free(err);
	}
	char why[256];
	cr_expect(target_healthy(t.pid, false, why, sizeof(why)), "%s", why);
	char bundle[300];
	snprintf(bundle, sizeof(bundle), "%s/b", dir);
	expect_verified(bundle, "the bundle whose path could not be printed");
	snprintf(cmd, sizeof(cmd), "bash -c '%s report %s/b 2>/dev/null | true; echo ${PIPESTATUS[0]}'", tool, dir);
	shell_output(cmd, out, sizeof(out));
	cr_expect_eq(atoi(out), 141, "report | true: exit %s", out);
	snprintf(cmd, sizeof(cmd), "bash -c '%s dump -p %d > /dev/full 2>%s/err; echo $?'", tool, (int)t.pid, dir);
	shell_output(cmd, out, sizeof(out));
	cr_expect_eq(atoi(out), 10, "dump > /dev/full: exit %s", out);
	char *err = read_in(dir, "err");
	cr_expect(err && strstr(err, "No space left on device"), "dump > /dev/full said: %s", err ? err : "");
	free(err);
	target_kill(&t);
	rm_rf(dir);
}
