/*
 * redact: what the bundle may keep of the strings a target chose.
 *
 * A bundle is meant to be shared, and a process's words about itself
 * carry secrets: its argv and its children's, its environment, even a
 * thread's name. Every such string enters the bundle through
 * bundle_target_string or bundle_target_name (below), or a memo of the
 * latter: redacted by the rules of bundle_redact_argv and
 * bundle_redact_env, then, for text, escaped as bundle/text.h's
 * escape_text does, so that a name can neither leak a credential nor
 * drive a terminal. A writer never puts /proc/PID/cmdline, environ or
 * comm into a member any other way; the one exception is the manifest's
 * "argv", an array kept word by word, which bundle_redact_argv itself
 * makes (and json_print spells).
 *
 * Paths (exe, mappings, open files) and symbol names are the system's
 * names, not the target's words: they are only escaped (bundle/text.h).
 */
#ifndef DIAG_BUNDLE_REDACT_H
#define DIAG_BUNDLE_REDACT_H

#include <stddef.h>

#define BUNDLE_REDACTED "[REDACTED]"

/* ---- the one way in ---- */

enum target_string_kind {
	/* A thread's or a process's name (comm, prctl PR_SET_NAME): redacted
	 * as one argument of a command line with no program. */
	TARGET_NAME,
	/* argv as /proc/PID/cmdline holds it: words each ended by a NUL (the
	 * last NUL may be missing, len says where it ends). Trailing empty
	 * words (a process title written over argv) are dropped, the words
	 * redacted as bundle_redact_argv does (argv[0] kept) and joined with
	 * single spaces. */
	TARGET_CMDLINE,
	/* One environment entry "NAME=value": bundle_redact_env. */
	TARGET_ENVIRON,
};

enum target_string_form {
	/* escape_text's spelling: for text members (threads.txt, leak
	 * evidence) and pprof labels, one line that no terminal obeys. */
	TARGET_FOR_TEXT,
	/* Redacted only: a JSON string value, which json_print spells. */
	TARGET_FOR_JSON,
};

/* s[0..len) (NAME and ENVIRON stop at a NUL before len too) as the bundle
 * may hold it. malloc'd, the caller frees; NULL on ENOMEM, and then the
 * caller writes nothing of it (never s itself). */
char *bundle_target_string(enum target_string_kind kind, enum target_string_form form, const char *s,
			   size_t len);

/* Big enough for any comm (15 bytes) redacted and escaped. */
#define BUNDLE_NAME_TEXT_SIZE 320

/* A name as bundle_target_string(TARGET_NAME, TARGET_FOR_TEXT) spells it,
 * into out (size > 0, cut between characters when it does not fit):
 * BUNDLE_REDACTED whole when memory runs out. Returns out. */
char *bundle_target_name(const char *name, char *out, size_t size);

/*
 * Names recur: a thread keeps its name from one sample to the next, and
 * the sampler labels every sample with it. A memo of the names last
 * spelled saves redacting one per sample (and the allocations that
 * costs). Embedded: zero it to init, bundle_name_memo_release frees what
 * it holds. One thread at a time.
 */
#define BUNDLE_NAME_MEMO_SLOTS 64
struct bundle_name_memo {
	struct {
		char *name, *text;
	} slot[BUNDLE_NAME_MEMO_SLOTS];
};

/* name as bundle_target_name spells it; the string belongs to the memo
 * and lives until its next call. Never NULL (BUNDLE_REDACTED on ENOMEM). */
const char *bundle_name_memo_get(struct bundle_name_memo *m, const char *name);
void bundle_name_memo_release(struct bundle_name_memo *m);

/* ---- the rules ---- */

/* Returns a newly allocated copy of argv[0..argc) with credential values
 * replaced by BUNDLE_REDACTED. Free with bundle_redacted_free. NULL on
 * ENOMEM. argv[0] is copied verbatim. The result has argc + 1 entries, the
 * last NULL. Redacting the result again changes nothing (argv is
 * redacted until it settles; see redact.c).
 *
 * Names: a flag, variable, header or key whose name looks like a
 * credential (password, passwd, pwd, pw, pass, passphrase, token, secret,
 * key, auth, credential, cookie, session, private, dsn...) has its value
 * redacted. Names are matched by component (split at - _ . and camelCase,
 * case-insensitive, plural allowed), so "api-key", "apiKey", "DB_PASSWORD"
 * match but "keyboard", "author" do not; a component that ends with
 * password, passwd, passphrase, secret, token, apikey, pwd, pw or pass
 * matches too ("PGPASSWORD", "PGPWD", "LDAP_BINDPW", "SSHPASS", "dbpass";
 * not "bypass" or "compass"); a name whose last component is
 * file/path/dir is not a credential (its value is a path), nor are the
 * shell's PWD and OLDPWD when they hold an absolute path. This covers
 * "--flag=value" and "--flag value" (the next argument, unless it starts
 * with '-'), single-dash long flags ("-password x", "-Dfoo.password=x"),
 * NAME=value arguments, "Header: value" arguments (curl -H), credential
 * keys in key=value lists after ';' ',' '?' '&' (ODBC/ADO.NET connection
 * strings, braced values included, mount options, URL queries, where
 * "sig" and "signature" count too: a pre-signed URL's signature, Azure
 * SAS "sig=", "X-Amz-Signature="; "--sig=9" is kept), and the members of
 * JSON (or Python, JavaScript) literals whose key is a credential name
 * ({"password":"[REDACTED]"}; true, false, null, objects and arrays
 * kept).
 *
 * One-letter options are read only under a program that defines them,
 * named by argv[0] or by any later word ("sudo mysql ..."): -pPW of
 * mysql*, mariadb* and 7z* (a bare -p prompts: the next word is kept);
 * -p of sshpass and mongo*, -a of redis-cli, -w of ldap*, -P of sqlcmd,
 * zip and unzip, attached or as the next word; curl's -u and -U take
 * user:password, as --user and --proxy-user do for any program: the user
 * is kept, the password redacted (a numeric uid:gid is kept, except under
 * curl). Other one-letter options ("-p 8080") are left alone.
 *
 * Anywhere in an argument: user:password@ with or without a scheme
 * ("admin:pw@db:5432", not "mailto:a@b"), secret webhook paths (Slack,
 * Discord, Teams), recognizable tokens (AKIA..., ghp_, xoxb-, glpat-,
 * sk_live_, AIza..., eyJ JWTs...), openssl's "pass:PHRASE", and a
 * -----BEGIN ... PRIVATE KEY block (the whole argument). An option,
 * NAME= or header whose name itself holds a token or URL goes whole.
 *
 * Values inside a word are redacted as words: an option's "=value", an
 * assignment's value, a one-letter option's attached value. A word with
 * blanks in it that no rule took whole is redacted as a command line
 * ("sh -c 'mysql -pX'"): split into shell words with POSIX quoting, each
 * redacted with these rules; unchanged words and the text between words
 * are kept as written, a redacted word is re-quoted if it needs it. */
char **bundle_redact_argv(char *const *argv, size_t argc);
void bundle_redacted_free(char **argv, size_t argc);

/* One environment entry "NAME=value", newly allocated (free()), NULL on
 * ENOMEM: NAME=[REDACTED] when NAME looks like a credential (as above),
 * else the value redacted as one argument of a command line with no
 * program, so options, URLs, lists and tokens in it are found as in argv
 * ("JAVA_TOOL_OPTIONS=-Xmx1g -Dx.password=[REDACTED]",
 * "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/[REDACTED]"). */
char *bundle_redact_env(const char *entry);

#endif
