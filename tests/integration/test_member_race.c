/*
 * Issue 54, race-free member reads, as the attack was reported: an
 * unprivileged user (nobody) builds an honest bundle with the bundle
 * writer, a 30 MB member and a member x/shadow, and while root runs
 * `diag-attach pem` on it, swaps the directory x (renameat2
 * RENAME_EXCHANGE, timed by inotify on the big member's opens) for a
 * symlink to a root-only directory holding its own "shadow", or for a
 * real directory whose "shadow" has other bytes. pem must never print
 * anything but the honest bytes: it succeeds with them, or fails with one
 * line naming the member. The swap is tried on the big member's first
 * open (while pem reads the members) and on its second (where the old pem
 * read them again after verifying: the reported attack), for both kinds,
 * a bounded number of times.
 *
 * Then a FIFO planted as a member: no reading command waits on it; and
 * the single-file outputs (pem -o, report --html, export -o) are 0600.
 *
 * Needs root (it plants as nobody and makes files nobody may not read);
 * skips without it. The secret is this test's own root-only file, never
 * anything of the system's.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "cmd/cli/exit_codes.h"
#include "craft.h"
#include "harness.h"

#define NOBODY 65534
#define HONEST "HONEST-shadow-7d2a\n"
#define SECRET "SECRET-MARKER-54-e1b9\n"
#define DECOY  "DECOY-bytes-of-the-attacker\n"
#define BIG    (30u << 20)

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

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
	cr_assert_eq(chmod(path, mode), 0);
}

static void become_nobody(void)
{
	if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
	    setresuid(NOBODY, NOBODY, NOBODY) < 0)
		_exit(126);
}

static int exchange(const char *a, const char *b)
{
	return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
}

struct scene {
	char base[256];	     /* root's, 0711 */
	char play[300];	     /* nobody's, 0700: the attacker's playground */
	char bundle[320];    /* play/b, made by nobody with the bundle writer */
	char x[340], big[340];
	char lnk[320];	     /* play/lnk -> secret (a symlink nobody made) */
	char alt[320];	     /* play/alt/shadow = DECOY (a real directory) */
	char secret[300];    /* root's 0700 directory; shadow = SECRET, 0600 */
	char runs[300];	     /* root's: pem's output and errors */
};

/* Everything but the bundle as root; the bundle, the link and the decoy
 * as nobody, as the attacker would have them. */
static void scene_make(struct scene *s)
{
	make_tmpdir(s->base, sizeof(s->base));
	cr_assert_eq(chmod(s->base, 0711), 0);
	snprintf(s->play, sizeof(s->play), "%s/play", s->base);
	snprintf(s->bundle, sizeof(s->bundle), "%s/b", s->play);
	snprintf(s->x, sizeof(s->x), "%s/x", s->bundle);
	snprintf(s->big, sizeof(s->big), "%s/big.pprof", s->bundle);
	snprintf(s->lnk, sizeof(s->lnk), "%s/lnk", s->play);
	snprintf(s->alt, sizeof(s->alt), "%s/alt", s->play);
	snprintf(s->secret, sizeof(s->secret), "%s/secret", s->base);
	snprintf(s->runs, sizeof(s->runs), "%s/runs", s->base);
	cr_assert_eq(mkdir(s->secret, 0700), 0);
	cr_assert_eq(mkdir(s->runs, 0700), 0);
	char p[400];
	snprintf(p, sizeof(p), "%s/shadow", s->secret);
	write_text(p, SECRET, 0600);
	cr_assert_eq(mkdir(s->play, 0700), 0);
	cr_assert_eq(chown(s->play, NOBODY, NOBODY), 0);

	/* The big member starts like gzip, so pem ships it as it is (no
	 * compression to wait for): the window is the read alone. */
	uint8_t *big = malloc(BIG);
	cr_assert(big);
	uint32_t v = 54;
	for (size_t i = 0; i < BIG; i++) {
		v = v * 1103515245u + 12345u;
		big[i] = (uint8_t)(v >> 24);
	}
	big[0] = 0x1f;
	big[1] = 0x8b;
	pid_t c = fork();
	cr_assert(c >= 0);
	if (c == 0) {
		become_nobody();
		const struct craft_member m[] = {{"big.pprof", big, BIG},
						 {"x/shadow", HONEST, strlen(HONEST)}};
		char *manifest = craft_manifest("\"bundle_id\":\"race-54\",", m, 2);
		char d[400];
		snprintf(d, sizeof(d), "%s/shadow", s->alt);
		if (!manifest || craft_bundle(s->bundle, m, 2, manifest) < 0 ||
		    symlink(s->secret, s->lnk) < 0 || mkdir(s->alt, 0700) < 0)
			_exit(1);
		FILE *f = fopen(d, "w");
		if (!f || fputs(DECOY, f) < 0 || fclose(f) != 0)
			_exit(1);
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	free(big);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "nobody could not build the bundle");
	expect_verified(s->bundle, "the attacker's bundle, before the attack");
}

/* The attacker, as nobody: on the trigger-th open of the big member,
 * exchange x with other; exit 0 once swapped. Writes a byte to ready once
 * it watches. */
static pid_t attacker_start(const struct scene *s, const char *other, int trigger)
{
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t a = fork();
	cr_assert(a >= 0);
	if (a == 0) {
		close(p[0]);
		become_nobody();
		int in = inotify_init1(IN_CLOEXEC);
		if (in < 0 || inotify_add_watch(in, s->big, IN_OPEN) < 0)
			_exit(2);
		if (write(p[1], "r", 1) != 1)
			_exit(2);
		int opens = 0;
		for (;;) {
			char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
			ssize_t k = read(in, buf, sizeof(buf));
			if (k <= 0)
				_exit(2);
			for (char *e = buf; e < buf + k;
			     e += sizeof(struct inotify_event) + ((struct inotify_event *)e)->len)
				if (((struct inotify_event *)e)->mask & IN_OPEN)
					opens++;
			if (opens >= trigger)
				_exit(exchange(s->x, other) == 0 ? 0 : 3);
		}
	}
	close(p[1]);
	char c;
	cr_assert_eq(read(p[0], &c, 1), 1, "the attacker did not start");
	close(p[0]);
	return a;
}

/* Did the attacker swap? It is stopped if it is still waiting. */
static bool attacker_end(pid_t a)
{
	int st;
	if (waitpid(a, &st, WNOHANG) == 0) {
		kill(a, SIGKILL);
		waitpid(a, &st, 0);
	}
	cr_assert(!WIFEXITED(st) || WEXITSTATUS(st) == 0, "the attacker failed (exit %d)",
		  WEXITSTATUS(st));
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The bytes of member's block in the PEM text (gzip+base64 or base64),
 * malloc'd; NULL when there is no such block. */
static uint8_t *block_bytes(const char *text, const char *member, size_t *ret_len)
{
	char hdr[300];
	snprintf(hdr, sizeof(hdr), "\nMember: %s\n", member);
	const char *h = strstr(text, hdr);
	if (!h)
		return NULL;
	const char *enc = strstr(h, "\nEncoding: ");
	const char *body = enc ? strstr(enc, "\n\n") : NULL;
	const char *end = body ? strstr(body, "-----END") : NULL;
	cr_assert(end, "a block of %s without its encoding or end", member);
	bool gz = strncmp(enc + 11, "gzip+base64", 11) == 0;
	size_t cap = (size_t)(end - body), n = 0;
	uint8_t *raw = malloc(cap + 1);
	uint32_t acc = 0;
	int bits = 0;
	for (const char *c = body; c < end; c++) {
		const char *at = *c ? strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					    "0123456789+/",
					    *c)
				    : NULL;
		if (!at)
			continue;
		acc = acc << 6 | (uint32_t)(at - "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
						 "0123456789+/");
		if ((bits += 6) >= 8)
			raw[n++] = (uint8_t)(acc >> (bits -= 8));
	}
	if (!gz) {
		*ret_len = n;
		return raw;
	}
	size_t outcap = 1 << 20;
	uint8_t *out = malloc(outcap);
	z_stream z = {.next_in = raw, .avail_in = (uInt)n, .next_out = out, .avail_out = (uInt)outcap};
	cr_assert_eq(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
	int zr = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	free(raw);
	cr_assert_eq(zr, Z_STREAM_END, "the block of %s does not inflate", member);
	*ret_len = z.total_out;
	return out;
}

static int count_lines_with(const char *text, const char *prefix)
{
	int n = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		n += strncmp(l, prefix, strlen(prefix)) == 0;
	return n;
}

/* One attempt: pem by root while the attacker swaps x with other on the
 * trigger-th open of the big member. Returns true if pem refused. */
static bool attempt(const struct scene *s, const char *other, int trigger, const char *kind,
		    int it)
{
	char outp[400], errp[400];
	snprintf(outp, sizeof(outp), "%s/%s-%d.pem", s->runs, kind, it);
	snprintf(errp, sizeof(errp), "%s/%s-%d.err", s->runs, kind, it);
	write_text(outp, "", 0600); /* tool_spawn's files must exist */
	write_text(errp, "", 0600);
	pid_t a = attacker_start(s, other, trigger);
	pid_t pem = tool_spawn((const char *[]){"pem", s->bundle, NULL}, outp, errp);
	int code = tool_wait(pem, 120000);
	bool swapped = attacker_end(a);
	/* Put x back (root may rename in nobody's directory). */
	struct stat st;
	if (swapped)
		cr_assert_eq(exchange(s->x, other), 0, "restore: %s", strerror(errno));
	cr_assert(lstat(s->x, &st) == 0 && S_ISDIR(st.st_mode), "x is not back");

	size_t outlen, errlen, n;
	char *out = read_file(outp, &outlen), *err = read_file(errp, &errlen);
	cr_assert(out && err);
	cr_assert_neq(code, -2, "%s %d: pem hung", kind, it);
	uint8_t *shadow = block_bytes(out, "x/shadow", &n);
	if (code == EXIT_OK) {
		cr_assert(shadow, "%s %d: pem exited 0 without x/shadow", kind, it);
		cr_expect(n == strlen(HONEST) && memcmp(shadow, HONEST, n) == 0,
			  "%s %d: pem printed x/shadow as '%.*s', not the honest bytes", kind, it,
			  (int)n, (const char *)shadow);
	} else {
		cr_expect_eq(code, EXIT_VERIFY_FAILED, "%s %d: pem exit %d: %s", kind, it, code,
			     err);
		cr_expect_null(shadow, "%s %d: pem failed but printed x/shadow", kind, it);
		cr_expect_eq(outlen, 0, "%s %d: pem failed but printed %zu bytes", kind, it,
			     outlen);
		cr_expect_eq(count_lines_with(err, "diag-attach:"), 1,
			     "%s %d: not one error line: %s", kind, it, err);
		cr_expect(strstr(err, "x/shadow"), "%s %d: the member is not named: %s", kind,
			  it, err);
	}
	cr_expect(!memmem(out, outlen, SECRET, strlen(SECRET)) &&
		  !(shadow && memmem(shadow, n, SECRET, strlen(SECRET))),
		  "%s %d: the root-only secret was printed", kind, it);
	cr_expect(!(shadow && memmem(shadow, n, DECOY, strlen(DECOY))),
		  "%s %d: bytes the manifest does not vouch for were printed", kind, it);
	free(shadow);
	free(out);
	free(err);
	unlink(outp);
	return code != EXIT_OK;
}

Test(member_race, pem_never_prints_what_it_did_not_verify, .timeout = 600)
{
	need_root();
	struct scene s;
	scene_make(&s);
	/* Each kind: swaps on the first open (inside pem's one read of
	 * every member: the swap lands before x/shadow is opened) and on
	 * the second (the reported attack: there is none now). */
	int refused_link = 0, refused_decoy = 0;
	REL_REPEAT(it, 3)
	{
		for (int trigger = 1; trigger <= 2; trigger++) {
			bool r1 = attempt(&s, s.lnk, trigger, "link", it);
			bool r2 = attempt(&s, s.alt, trigger, "decoy", it);
			if (trigger == 1) {
				refused_link += r1;
				refused_decoy += r2;
			}
		}
	}
	/* The attack was really run: the swap landed in time at least once
	 * of each kind (each time in practice: reading 30 MB takes far
	 * longer than inotify takes to wake the attacker). */
	cr_expect_gt(refused_link, 0, "the symlink swap never landed before x/shadow was read");
	cr_expect_gt(refused_decoy, 0, "the directory swap never landed before x/shadow was read");
	expect_verified(s.bundle, "the bundle, put back");
	rm_rf(s.base);
}

/* A snapshot bundle of the demo target, in dir. */
static void make_snapshot(const char *dir)
{
	struct target t = target_start_args("demo", (const char *[]){NULL}, NULL);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)t.pid);
	struct tool_result r;
	tool_run(&r, (const char *[]){"-p", pid, "--snapshot", "-q", "-o", dir, NULL});
	target_kill(&t);
	cr_assert_eq(r.exit_code, EXIT_OK, "snapshot: %s", r.err);
}

/* A FIFO under a listed member's name: every reading command ends, and
 * pem and verify say which member. Nobody writes to the FIFO, so an open
 * that blocks would block for good; the harness kills after 20 s. */
Test(member_race, planted_fifo_blocks_no_reader, .timeout = 300)
{
	char d[256], b[300], fifo[400], outp[400], errp[400];
	make_tmpdir(d, sizeof(d));
	snprintf(b, sizeof(b), "%s/b", d);
	make_snapshot(b);
	snprintf(fifo, sizeof(fifo), "%s/threads.txt", b);
	cr_assert_eq(unlink(fifo), 0);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	snprintf(outp, sizeof(outp), "%s/out", d);
	snprintf(errp, sizeof(errp), "%s/err", d);
	write_text(outp, "", 0600); /* tool_spawn's files must exist */
	write_text(errp, "", 0600);
	const char *const cmds[][4] = {
		{"pem", b, NULL},    {"verify", b, NULL},	   {"report", b, NULL},
		{"diff", b, b, NULL}, {"export", "--profile", "threads", NULL},
	};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *args[6] = {cmds[i][0], cmds[i][1], cmds[i][2], cmds[i][3], NULL};
		if (strcmp(args[0], "export") == 0)
			args[3] = b;
		int code = tool_wait(tool_spawn(args, outp, errp), 20000);
		char *err = read_file(errp, NULL);
		cr_expect_neq(code, -2, "%s hung on a FIFO member", args[0]);
		if (strcmp(args[0], "pem") == 0 || strcmp(args[0], "verify") == 0) {
			cr_expect_eq(code, EXIT_VERIFY_FAILED, "%s: exit %d", args[0], code);
			char *out = read_file(outp, NULL);
			cr_expect((err && strstr(err, "threads.txt") &&
				   strstr(err, "not a regular file")) ||
					  (out && strstr(out, "threads.txt: not a regular file")),
				  "%s does not say the member is no regular file: %s %s", args[0],
				  err, out);
			free(out);
		}
		free(err);
	}
	rm_rf(d);
}

/* pem -o, report --html and export -o make files only their owner can
 * read, as the bundle's members are, whatever the umask. */
Test(member_race, single_file_outputs_are_0600, .timeout = 120)
{
	char d[256], b[300], p[400];
	make_tmpdir(d, sizeof(d));
	snprintf(b, sizeof(b), "%s/b", d);
	make_snapshot(b);
	mode_t old = umask(022);
	const char *outs[] = {"out.pem", "page.html", "stacks.txt", "flame.svg"};
	struct tool_result r;
	for (size_t i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/%s", d, outs[i]);
		if (i == 0)
			tool_run(&r, (const char *[]){"pem", "-o", p, b, NULL});
		else if (i == 1)
			tool_run(&r, (const char *[]){"report", "--html", p, b, NULL});
		else
			tool_run(&r, (const char *[]){"export", "--profile", "threads", "--format",
						      i == 2 ? "collapsed" : "svg", "-o", p, b,
						      NULL});
		cr_expect_eq(r.exit_code, EXIT_OK, "%s: %s", outs[i], r.err);
		struct stat st;
		cr_expect(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600, "%s has mode %04o",
			  outs[i], st.st_mode & 07777);
	}
	umask(old);
	rm_rf(d);
}
