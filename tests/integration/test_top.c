/*
 * diag-attach top, driven as a person would: in tmux, read the screen with
 * capture-pane, quit with q, and check the target was released.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

Test(top, live_view_in_tmux_quits_on_q)
{
	if (!have_program("tmux"))
		cr_skip_test("tmux not installed");
	const char *argv[] = {target_path("burner"), "1", NULL};
	struct target t = target_start(argv, "ready");
	char session[64], cmd[2048];
	snprintf(session, sizeof(session), "diagtop%d", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "tmux new-session -d -s %s -x 120 -y 50 '%s top -p %d; echo TOP-EXIT=$?; sleep 30'",
		 session, getenv("DIAG_ATTACH"), (int)t.pid);
	cr_assert_eq(sh(cmd), 0, "tmux did not start");

	/* Wait for a refresh that names the hot function. */
	char screen[300];
	snprintf(screen, sizeof(screen), "/tmp/%s.screen", session);
	bool hot = false;
	for (int i = 0; i < 100 && !hot; i++) {
		usleep(100000);
		snprintf(cmd, sizeof(cmd), "tmux capture-pane -p -t %s > %s", session, screen);
		sh(cmd);
		char *text = read_file(screen, NULL);
		hot = text && strstr(text, "spin_units") && strstr(text, "SELF%");
		free(text);
	}
	cr_expect(hot, "top never showed spin_units");

	snprintf(cmd, sizeof(cmd), "tmux send-keys -t %s q", session);
	sh(cmd);
	bool exited = false;
	for (int i = 0; i < 50 && !exited; i++) {
		usleep(100000);
		snprintf(cmd, sizeof(cmd), "tmux capture-pane -p -t %s > %s", session, screen);
		sh(cmd);
		char *text = read_file(screen, NULL);
		exited = text && strstr(text, "TOP-EXIT=0");
		free(text);
	}
	cr_expect(exited, "top did not quit with exit 0 on q");
	char why[256];
	cr_expect(target_healthy(t.pid, false, why, sizeof(why)), "%s", why);
	snprintf(cmd, sizeof(cmd), "tmux kill-session -t %s 2>/dev/null; rm -f %s", session, screen);
	sh(cmd);
	target_kill(&t);
}
