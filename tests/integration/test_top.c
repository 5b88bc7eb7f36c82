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

/* Every 100 ms, up to tries times, capture the tmux session's pane into
 * the file screen: true once it shows want (and want2, unless NULL). */
static bool screen_shows(const char *session, const char *screen, int tries, const char *want,
			 const char *want2)
{
	for (int i = 0; i < tries; i++) {
		usleep(100000);
		char cmd[1024];
		snprintf(cmd, sizeof(cmd), "tmux capture-pane -p -t %s > %s", session, screen);
		sh(cmd);
		char *text = read_file(screen, NULL);
		bool seen = text && strstr(text, want) && (!want2 || strstr(text, want2));
		free(text);
		if (seen)
			return true;
	}
	return false;
}

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
	bool hot = screen_shows(session, screen, 100, "spin_units", "SELF%");
	cr_expect(hot, "top never showed spin_units");

	snprintf(cmd, sizeof(cmd), "tmux send-keys -t %s q", session);
	sh(cmd);
	bool exited = screen_shows(session, screen, 50, "TOP-EXIT=0", NULL);
	cr_expect(exited, "top did not quit with exit 0 on q");
	char why[256];
	cr_expect(target_healthy(t.pid, false, why, sizeof(why)), "%s", why);
	snprintf(cmd, sizeof(cmd), "tmux kill-session -t %s 2>/dev/null; rm -f %s", session, screen);
	sh(cmd);
	target_kill(&t);
}
