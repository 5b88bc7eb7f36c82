/*
 * argv and environment redaction. The bundle is meant to be shared
 * (attached to tickets, sent to vendors), and command lines routinely
 * carry secrets. The rules err towards redacting: a false positive costs
 * one readable argument, a false negative leaks a credential.
 *
 * Flag and variable names are split into components at '-', '_', '.' and
 * camelCase boundaries and matched component-wise, so "api-key", "apiKey"
 * and "DB_PASSWORD" match while "keyboard" or "author" do not; a component
 * that ends with a long credential word matches too ("PGPASSWORD").
 *
 * Each argument is one word; a rule that finds a value inside it (an
 * option's "=value", an assignment's value, a one-letter option's attached
 * value, the words of a "sh -c" line) redacts that value as a word of its
 * own, so every rule applies at every level. Redaction is idempotent:
 * redacting the output again changes nothing (fuzz_redact checks it). A
 * name a rule keeps must therefore read the same afterwards (scan_keeps),
 * and what rules do to each other across a line is settled by redacting
 * until nothing changes (bundle_redact_argv).
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bundle/redact.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Values inside values: "--a=--b=..." or quotes within quotes. Real
 * command lines nest two or three deep; a word deeper than this is
 * redacted whole (and the recursion is bounded on hostile input). */
#define MAX_DEPTH 8

static const char *const cred_words[] = {
	"password", "passwd", "pwd", "pw", "pass", "passphrase", "token", "secret", "key",
	"auth", "credential", "cookie", "session", "private", "dsn",
	/* common run-together forms */
	"apikey", "authorization", "bearer", "sessionid", "accesskey", "secretkey",
	"privatekey", "authtoken", "accesstoken", "refreshtoken", "jwt",
};

/* A component that ends with one of these is a credential name of its
 * own: "PGPASSWORD", "MYSQLPASSWORD", "dbpassword", "GITLABTOKEN", and
 * the short forms run together that tools document: "PGPWD", "DBPASS",
 * "SSHPASS" (sshpass -e), "LDAP_BINDPW". No ordinary word ends with "pw"
 * or "pwd" (the shell's OLDPWD is kept by is_cwd_var, below); "key"
 * stays out, as it would take "monkey", and "pass" is taken except in
 * the ordinary words of pass_words. */
static const char *const cred_suffixes[] = {
	"password", "passwd", "passphrase", "secret", "token", "apikey", "pwd", "pw", "pass",
};

/* Words that end with "pass" and name no password. */
static const char *const pass_words[] = {
	"bypass", "compass", "encompass", "surpass", "overpass", "underpass", "trespass",
	"multipass", "onepass", "twopass",
};

/* Names that are credentials only as the key of a URL query: the
 * signature of a pre-signed URL (Azure SAS "sig=", AWS
 * "X-Amz-Signature=", GCS "X-Goog-Signature=", CloudFront "Signature="),
 * which lets anyone holding the URL use it until it expires. Elsewhere
 * "sig" is a signal number ("--sig=9") and "signature" a file or an
 * algorithm, so they are not credential words. */
static const char *const query_words[] = { "sig", "signature" };

/* A flag that names where a secret lives ("--password-file /run/x") has a
 * path, not a secret, as its value. */
static const char *const path_words[] = { "file", "path", "dir" };

static bool word_in(const char *w, size_t n, const char *const *list, size_t nlist, bool plural)
{
	for (size_t i = 0; i < nlist; i++) {
		size_t l = strlen(list[i]);
		if ((n == l || (plural && n == l + 1 && tolower((unsigned char)w[l]) == 's')) &&
		    strncasecmp(w, list[i], l) == 0)
			return true;
	}
	return false;
}

static bool ends_with_cred(const char *w, size_t n)
{
	if (word_in(w, n, pass_words, NELEM(pass_words), true))
		return false;
	for (size_t i = 0; i < NELEM(cred_suffixes); i++) {
		size_t l = strlen(cred_suffixes[i]);
		if (n > l && strncasecmp(w + n - l, cred_suffixes[i], l) == 0)
			return true;
	}
	return false;
}

static bool is_sep(char c)
{
	return c == '-' || c == '_' || c == '.';
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Does name[0..len) look like the name of a credential? In a URL query
 * (in_query), the words of query_words count too. */
static bool name_is_credential_in(const char *name, size_t len, bool in_query)
{
	bool cred = false, last_is_path = false;
	size_t i = 0;

	while (i < len) {
		size_t start;

		while (i < len && is_sep(name[i]))
			i++;
		if (i == len)
			break;
		start = i++;
		while (i < len && !is_sep(name[i]) &&
		       !(islower((unsigned char)name[i - 1]) && isupper((unsigned char)name[i])))
			i++;
		cred |= word_in(name + start, i - start, cred_words, NELEM(cred_words), true) ||
			ends_with_cred(name + start, i - start) ||
			(in_query &&
			 word_in(name + start, i - start, query_words, NELEM(query_words), false));
		last_is_path = word_in(name + start, i - start, path_words, NELEM(path_words), false);
	}
	return cred && !last_is_path;
}

static bool name_is_credential(const char *name, size_t len)
{
	return name_is_credential_in(name, len, false);
}

/* The shell's working directory: PWD and OLDPWD as every shell exports
 * them, an absolute path. Not a password, though "pwd" is one as a word
 * ("Pwd=" in an ODBC string, which the ';' keeps from looking like a
 * path here). Its value is still redacted as any other. */
static bool is_cwd_var(const char *name, size_t len, const char *value)
{
	return ((len == 3 && !strncmp(name, "PWD", 3)) || (len == 6 && !strncmp(name, "OLDPWD", 6))) &&
	       value[0] == '/' && !strchr(value, ';');
}

/* ---- output buffer ---- */

struct sbuf {
	char *s;
	size_t n, cap;
	bool oom;
};

static void sb_add(struct sbuf *b, const char *p, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *s = realloc(b->s, cap);
		if (!s) {
			b->oom = true;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
	memcpy(b->s + b->n, p, n);
	b->n += n;
	b->s[b->n] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static char *sb_finish(struct sbuf *b)
{
	if (!b->s && !b->oom)
		sb_add(b, "", 0);
	if (b->oom) {
		free(b->s);
		return NULL;
	}
	return b->s;
}

/* ---- recognizable tokens inside an argument ---- */

static size_t run(const char *s, const char *set_extra, bool upper_only)
{
	size_t n = 0;

	for (; s[n]; n++) {
		unsigned char c = (unsigned char)s[n];
		bool ok = upper_only ? (isupper(c) || isdigit(c)) : isalnum(c);
		if (!ok && !(set_extra && strchr(set_extra, c)))
			break;
	}
	return n;
}

/* Length of a credential token starting at s, or 0. */
static size_t token_at(const char *s)
{
	/* Issuers' documented prefixes. min is the shortest run after the
	 * prefix taken as a token: 4 where the prefix alone is specific,
	 * more where it is short enough to start an ordinary identifier
	 * ("hf_hub", "sk-lang"). */
	static const struct {
		const char *prefix;
		size_t min;
	} prefixes[] = {
		{ "ghp_", 4 },	 { "gho_", 4 },	     { "ghu_", 4 },	  { "ghs_", 4 },
		{ "ghr_", 4 },	 { "github_pat_", 4 }, { "xoxb-", 4 },	  { "xoxp-", 4 },
		{ "xoxa-", 4 },	 { "xoxr-", 4 },     { "xoxs-", 4 },	  { "xoxe-", 4 },
		{ "xapp-", 4 },	 { "glpat-", 4 },    { "sk_live_", 4 },	  { "rk_live_", 4 },
		{ "sk_test_", 4 }, { "npm_", 30 },   { "hf_", 30 },	  { "pypi-AgE", 40 },
		{ "sk-ant-", 20 }, { "sk-proj-", 20 }, { "sk-", 32 },	  { "AIza", 30 },
	};
	size_t n;

	/* AWS access key ids: AKIA (long-term) / ASIA (temporary) + 16. */
	if (!strncmp(s, "AKIA", 4) || !strncmp(s, "ASIA", 4)) {
		n = run(s + 4, NULL, true);
		return n >= 16 ? 4 + n : 0;
	}
	for (size_t i = 0; i < NELEM(prefixes); i++) {
		size_t l = strlen(prefixes[i].prefix);
		if (!strncmp(s, prefixes[i].prefix, l)) {
			n = run(s + l, "_-", false);
			return n >= prefixes[i].min ? l + n : 0;
		}
	}
	/* JWT: base64url('{"...') . payload . signature. "eyJ" then a dot is
	 * specific enough; take the whole dotted base64url run. */
	if (!strncmp(s, "eyJ", 3)) {
		n = run(s + 3, "_-", false);
		if (n >= 2 && s[3 + n] == '.')
			return 3 + run(s + 3, "_-.", false);
	}
	return 0;
}

static bool word_boundary(const char *s, size_t i)
{
	return i == 0 || !(isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_');
}

/* URLs whose path is the credential: anyone who has it can post. */
static const char *const secret_paths[] = {
	"hooks.slack.com/services/",	 "hooks.slack.com/workflows/",
	"hooks.slack.com/triggers/",	 "discord.com/api/webhooks/",
	"discordapp.com/api/webhooks/", "webhook.office.com/webhookb2/",
};

/* Where an authority ("user:pw@host", with or without a scheme) ends. */
#define AUTH_END "/?# \t\n\r\"'"

static bool user_char(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("._~%+-", c));
}

/* The last '@' in the authority that starts at p, or NULL. The cache
 * holds the authority of an earlier start in the same run (no AUTH_END
 * byte in between, so the same end): each run is searched once, or an
 * argument of "=a:x=a:x..." would cost its length squared. */
struct auth_cache {
	size_t end;
	const char *last_at;
};

static const char *auth_last_at(const char *s, size_t p, struct auth_cache *c)
{
	if (p >= c->end) {
		c->end = p + strcspn(s + p, AUTH_END);
		c->last_at = memrchr(s + p, '@', c->end - p);
	}
	return c->last_at && c->last_at >= s + p ? c->last_at : NULL;
}

/* "user:password@host" with no scheme ("admin:pw@db:5432/x" in a DSN or
 * DATABASE_URL) at s + i, where a word starts: sets *ret_ulen to the
 * user's length and returns the offset of the '@', or 0. "mailto:a@b" is
 * an address. A password with a '/' in it ends the authority early and is
 * missed, as it would be in a URL (where it must be written %2F). */
static size_t userinfo_at(const char *s, size_t i, struct auth_cache *c, size_t *ret_ulen)
{
	size_t u = 0;
	const char *at;

	if (i > 0 && !strchr(" \t\n\r\"'=,;(<", s[i - 1]))
		return 0;
	while (user_char(s[i + u]))
		u++;
	if (!u || s[i + u] != ':' || (u == 6 && !strncasecmp(s + i, "mailto", 6)))
		return 0;
	at = auth_last_at(s, i + u + 1, c);
	if (!at || at == s + i + u + 1 || !(isalnum((unsigned char)at[1]) || at[1] == '['))
		return 0;
	*ret_ulen = u;
	return (size_t)(at - (s + i));
}

/* s follows sep, one of ";,?&" that separate key=value pairs: ODBC and
 * ADO.NET connection strings ("Server=db;Pwd=x;", keys case-insensitive,
 * a value may be braced: "Pwd={a;b}"), mount options ("user=u,password=p"),
 * URL queries ("?access_token=x&page=2"). If a credential key starts s,
 * sets *ret_value to its value's offset and returns the value's end, else
 * 0. A value ends at its list's separator, or at a quote or blank (the end
 * of a shell word) where the list cannot hold one. */
static size_t pair_at(const char *s, char sep, size_t *ret_value)
{
	size_t k = sep == ';' ? strspn(s, " \t") : 0, key = k, v;

	while (isalnum((unsigned char)s[k]) || s[k] == '_' || s[k] == '.' || s[k] == '-')
		k++;
	if (k == key || !name_is_credential_in(s + key, k - key, sep == '?' || sep == '&'))
		return 0;
	if (sep == ';')
		k += strspn(s + k, " \t");
	if (s[k] != '=')
		return 0;
	v = ++k;
	if (sep == ';') {
		/* ODBC escapes '}' inside braces as "}}". */
		if (s[v] == '{')
			for (v++; s[v]; v++)
				if (s[v] == '}' && s[++v] != '}')
					break;
		v += strcspn(s + v, ";\"'\n");
	} else {
		v += strcspn(s + v, sep == ',' ? ", \t\n\r\"'" : "&# \t\n\r\"'");
	}
	if (v == k)
		return 0;
	*ret_value = k;
	return v;
}

/* A member of a JSON object (or of a Python or JavaScript literal, with
 * single quotes) whose key names a credential, at s, a quote:
 * {"password":"v"}, {'db_pass': 'v'}, {"secret": 1234}. Sets *ret_value to
 * the offset of the value's first byte (past its opening quote) and
 * returns the offset of its end (its closing quote, or the end of an
 * unterminated string or bare value), or 0. A string value's escapes are
 * skipped; an empty string, true, false, null, an object or an array hold
 * no secret of their own (an object's keys are scanned as they come). */
static size_t json_member_at(const char *s, size_t *ret_value)
{
	char q = s[0];
	size_t k = 1, v;

	while (isalnum((unsigned char)s[k]) || s[k] == '_' || s[k] == '.' || s[k] == '-')
		k++;
	if (s[k] != q || k == 1 || !name_is_credential(s + 1, k - 1))
		return 0;
	k++;
	k += strspn(s + k, " \t");
	if (s[k] != ':')
		return 0;
	k++;
	k += strspn(s + k, " \t");
	if (s[k] == '"' || s[k] == '\'') {
		char vq = s[k];

		v = ++k;
		while (s[k] && s[k] != vq)
			k += s[k] == '\\' && s[k + 1] ? 2 : 1;
	} else if (s[k] == '{' || s[k] == '[') {
		/* An object or array; "[REDACTED]" is what a second pass sees
		 * of a bare value redacted by the first. */
		if (strncmp(s + k, BUNDLE_REDACTED, strlen(BUNDLE_REDACTED)))
			return 0;
		v = k;
		k += strlen(BUNDLE_REDACTED);
	} else {
		v = k;
		k += strcspn(s + k, ",}] \t\n\r\"'");
		if ((k - v == 4 && (!strncmp(s + v, "true", 4) || !strncmp(s + v, "null", 4))) ||
		    (k - v == 5 && !strncmp(s + v, "false", 5)))
			return 0;
	}
	if (k == v)
		return 0;
	*ret_value = v;
	return k;
}

static void scan_prefix(struct sbuf *b, const char *s, size_t n);

/* Copy s, replacing what needs no context to be recognized: URL and
 * scheme-less passwords, credential keys in key=value lists, secret URL
 * paths and recognizable tokens. */
static void scan(struct sbuf *b, const char *s)
{
	struct auth_cache ac = { 0, NULL };
	size_t i = 0, ulen, at, t;

	while (s[i]) {
		/* Before the token rule: a token as the user ("ghp_x:pw@h")
		 * would otherwise hide the password behind it. */
		if ((at = userinfo_at(s, i, &ac, &ulen))) {
			scan_prefix(b, s + i, ulen);
			sb_add(b, ":", 1);
			sb_str(b, BUNDLE_REDACTED);
			i += at;
			continue;
		}
		t = word_boundary(s, i) ? token_at(s + i) : 0;
		if (t) {
			sb_str(b, BUNDLE_REDACTED);
			i += t;
			/* The rest of the word goes too: left behind, it would start
			 * a new word that a second pass might redact (redaction must
			 * be idempotent), and it is likely part of the secret. */
			while (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-')
				i++;
			continue;
		}
		for (size_t k = 0; k < NELEM(secret_paths) && !t; k++) {
			size_t l = strlen(secret_paths[k]);
			if (!strncasecmp(s + i, secret_paths[k], l)) {
				size_t path = strcspn(s + i + l, " \t\n\r\"'<>?#");
				sb_add(b, s + i, l);
				if (path)
					sb_str(b, BUNDLE_REDACTED);
				t = l + path;
			}
		}
		if (t) {
			i += t;
			continue;
		}
		if (!strncmp(s + i, "://", 3)) {
			const char *auth = s + i + 3;
			size_t alen = strcspn(auth, "/?# \t\n");
			const char *at_p = memrchr(auth, '@', alen);
			const char *colon = at_p ? memchr(auth, ':', (size_t)(at_p - auth)) : NULL;

			sb_add(b, "://", 3);
			i += 3;
			if (colon) {
				/* user:pass@host -> user:[REDACTED]@host; a token in
				 * the user part (https://ghp_...:x@github.com) goes
				 * too. It holds no '/', so this recursion stops at one
				 * level. */
				scan_prefix(b, auth, (size_t)(colon - auth));
				sb_add(b, ":", 1);
				sb_str(b, BUNDLE_REDACTED);
				i += (size_t)(at_p - auth);
			}
			continue;
		}
		if ((s[i] == '"' || s[i] == '\'') && (t = json_member_at(s + i, &at))) {
			/* The key is kept, scanned as a list's key is. */
			scan_prefix(b, s + i, at);
			sb_str(b, BUNDLE_REDACTED);
			i += t;
			continue;
		}
		if (strchr(";,?&", s[i])) {
			size_t value, end = pair_at(s + i + 1, s[i], &value);

			sb_add(b, s + i, 1);
			i++;
			if (end) {
				scan_prefix(b, s + i, value);
				sb_str(b, BUNDLE_REDACTED);
				i += end;
			}
			continue;
		}
		sb_add(b, s + i, 1);
		i++;
	}
}

/* The first n bytes of s, kept as a URL's user or a list's key: scanned
 * all the same, as a token may hide there too ("https://<ghp_...:x@host"). */
static void scan_prefix(struct sbuf *b, const char *s, size_t n)
{
	char *name = strndup(s, n);
	if (!name) {
		b->oom = true;
		return;
	}
	scan(b, name);
	free(name);
}

/* Does the scan leave s[0..n) as it is? A name that it would change (a
 * token, a URL in it) is no name, and the word it names goes whole:
 * redacting inside the name would rename it, and the new name may read
 * differently on a second pass ("--password-ghp_file" would become the
 * credential flag "--password-[REDACTED]" and take the next argument; a
 * webhook path would swallow the '=' after it). Redaction must be
 * idempotent. */
static bool scan_keeps(struct sbuf *b, const char *s, size_t n)
{
	struct sbuf t = { 0 };
	bool same;

	scan_prefix(&t, s, n);
	if (t.oom)
		b->oom = true;
	same = !t.oom && t.n == n && (!n || memcmp(t.s, s, n) == 0);
	free(t.s);
	return same;
}

/* ---- programs whose one-letter option is the password ---- */

/*
 * A letter means different things to different programs ("-p" is the
 * port of psql and ssh, the password of mysql), so one-letter options are
 * read only under a program whose manual says so: argv[0], or any later
 * word that names one ("sudo mysql ...", "env X=1 mysql ...", the first
 * word of a "sh -c" line). Programs seen so far add up and never drop out,
 * so a value that happens to name another program ("curl -d zip -u a:b")
 * cannot switch a rule off.
 */
enum short_kind { SHORT_PASSWORD, SHORT_USERPASS };

static const struct short_cred {
	const char *prog;
	bool prefix; /* "mysql" for mysqldump, mysqladmin, mysqlsh... */
	const char *letters;
	enum short_kind kind;
	bool separate; /* "-L VALUE" as well as "-LVALUE" */
} short_creds[] = {
	/* "-pPW" only: a bare -p prompts, and the word after it is the
	 * database. */
	{ "mysql", true, "p", SHORT_PASSWORD, false },
	{ "mariadb", true, "p", SHORT_PASSWORD, false },
	{ "7z", true, "p", SHORT_PASSWORD, false },
	{ "sshpass", false, "p", SHORT_PASSWORD, true },
	{ "redis-cli", false, "a", SHORT_PASSWORD, true },
	{ "mongo", true, "p", SHORT_PASSWORD, true },
	{ "ldap", true, "w", SHORT_PASSWORD, true }, /* ldapsearch, ldapmodify... */
	{ "sqlcmd", false, "P", SHORT_PASSWORD, true },
	{ "zip", false, "P", SHORT_PASSWORD, true },
	{ "unzip", false, "P", SHORT_PASSWORD, true },
	/* -u user:password, -U proxyuser:password */
	{ "curl", false, "uU", SHORT_USERPASS, true },
};

/* The short_creds entries a word names, as a bit set. */
static uint32_t programs_of(const char *word)
{
	const char *base = strrchr(word, '/');
	uint32_t set = 0;

	base = base ? base + 1 : word;
	for (const char *p = base; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '+'))
			return 0;
	for (size_t i = 0; *base && i < NELEM(short_creds); i++) {
		const char *prog = short_creds[i].prog;
		bool named = short_creds[i].prefix ? !strncmp(base, prog, strlen(prog))
						   : !strcmp(base, prog);
		if (named)
			set |= 1u << i;
	}
	return set;
}

static bool curl_in(uint32_t progs)
{
	for (size_t i = 0; i < NELEM(short_creds); i++)
		if ((progs & (1u << i)) && !strcmp(short_creds[i].prog, "curl"))
			return true;
	return false;
}

static const struct short_cred *short_cred_for(uint32_t progs, char letter)
{
	for (size_t i = 0; letter && i < NELEM(short_creds); i++)
		if ((progs & (1u << i)) && strchr(short_creds[i].letters, letter))
			return &short_creds[i];
	return NULL;
}

/* ---- words ---- */

enum next_kind { NEXT_NONE, NEXT_SECRET, NEXT_USERPASS };

/* The state of one command line (argv, or a "sh -c" word) from one word
 * to the next. */
struct line {
	uint32_t progs; /* short_creds entries in force */
	enum next_kind next;
	int depth;
};

static void redact_word(struct sbuf *b, struct line *st, const char *arg, const char *next);

/* A value inside a word, redacted as a word: it has no next word, and
 * what it would say about one is dropped. */
static void redact_sub(struct sbuf *b, const struct line *st, const char *s)
{
	struct line sub = { st->progs, NEXT_NONE, st->depth + 1 };

	redact_word(b, &sub, s, NULL);
}

static bool has_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (is_blank(s[i]))
			return true;
	return false;
}

/* "user:password" given to curl -u or any program's --user: the user is
 * kept. A user with more than a name in it ("DB_PASSWORD=a:b") or with a
 * token in it is not kept either: the whole value goes ("[REDACTED]:..."
 * would read as such a user on a second pass). A numeric "uid:gid" is
 * what --user means to docker and podman and is kept, but not under curl,
 * where 1000:1234 is a user and a password. */
static void redact_userpass(struct sbuf *b, const struct line *st, const char *v)
{
	const char *colon = strchr(v, ':');
	size_t ulen = colon ? (size_t)(colon - v) : 0;

	if (!colon || !colon[1]) {
		redact_sub(b, st, v);
		return;
	}
	for (size_t k = 0; k < ulen; k++)
		if ((!user_char(v[k]) && v[k] != '@') || (word_boundary(v, k) && token_at(v + k))) {
			sb_str(b, BUNDLE_REDACTED);
			return;
		}
	if (!curl_in(st->progs) && ulen && strspn(v, "0123456789") == ulen &&
	    strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
		sb_str(b, v);
		return;
	}
	sb_add(b, v, ulen);
	sb_add(b, ":", 1);
	sb_str(b, BUNDLE_REDACTED);
}

static bool is_env_key(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || is_sep(s[i])))
			return false;
	return true;
}

/* "Authorization: Bearer x", "X-Api-Key: x" as passed to curl -H. */
static bool is_header_name(const char *s, size_t n)
{
	if (n == 0 || !isalpha((unsigned char)s[0]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '-' || s[i] == '_'))
			return false;
	return true;
}

static bool is_user_flag(const char *name, size_t n)
{
	return (n == 4 && !strncasecmp(name, "user", 4)) ||
	       (n == 10 && !strncasecmp(name, "proxy-user", 10));
}

/* An option ("-x", "--x", "-x=v", "--x=v"). Returns false when no option
 * rule took the whole word, which is then redacted as text. */
static bool redact_option(struct sbuf *b, struct line *st, const char *arg, const char *eq,
			  const char *next)
{
	bool dbl = arg[1] == '-';
	const char *name = arg + (dbl ? 2 : 1);
	size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
	/* "--token x" as one word is two words (a "sh -c" line, an env
	 * value), not an option named "token x". */
	bool one_name = !has_blank(name, nlen);
	bool next_is_value = next && next[0] != '-';
	const struct short_cred *sc = dbl ? NULL : short_cred_for(st->progs, name[0]);

	/* A name with blanks is not used as a name below (only its
	 * first letter, or as text). */
	if (one_name && !scan_keeps(b, name, nlen)) {
		sb_str(b, BUNDLE_REDACTED);
		return true;
	}
	if (sc) {
		if (!name[1]) {
			if (sc->separate && next_is_value)
				st->next = sc->kind == SHORT_PASSWORD ? NEXT_SECRET : NEXT_USERPASS;
			sb_str(b, arg);
			return true;
		}
		sb_add(b, arg, 2);
		if (sc->kind == SHORT_PASSWORD)
			sb_str(b, BUNDLE_REDACTED);
		else
			redact_userpass(b, st, arg + 2);
		/* "-password V" is mysql's -p"assword" and a Go-style
		 * -password flag: both readings are redacted. */
		if (!eq && one_name && name_is_credential(name, nlen) && next_is_value)
			st->next = NEXT_SECRET;
		return true;
	}
	if (dbl && one_name && is_user_flag(name, nlen)) {
		if (eq) {
			sb_add(b, arg, (size_t)(eq + 1 - arg));
			redact_userpass(b, st, eq + 1);
		} else {
			if (next_is_value)
				st->next = NEXT_USERPASS;
			sb_str(b, arg);
		}
		return true;
	}
	/* Other one-letter options ("-p x") are left alone: one letter says
	 * too little to tell "-p password" from "-p port". */
	if (one_name && (dbl || nlen > 1) && name_is_credential(name, nlen)) {
		if (eq && eq[1]) {
			sb_add(b, arg, (size_t)(eq - arg) + 1);
			sb_str(b, BUNDLE_REDACTED);
			return true;
		}
		/* "--token -" conventionally means stdin, and a
		 * following option is not a value. */
		if (!eq && next_is_value)
			st->next = NEXT_SECRET;
		return false;
	}
	/* "--header=X-Api-Key: k", "--env=PGPASSWORD=x", "--db=u:pw@h". */
	if (dbl && one_name && eq) {
		sb_add(b, arg, (size_t)(eq - arg) + 1);
		redact_sub(b, st, eq + 1);
		return true;
	}
	/* A one-letter option's attached value ("-HAuthorization: Bearer x",
	 * "-Dk=v", "-c mysql -pX"); one that goes on with a '-' is not
	 * one ("-a-b"), or every dash would nest a level. */
	if (!dbl && name[1] && name[1] != '-') {
		sb_add(b, arg, 2);
		redact_sub(b, st, arg + 2);
		return true;
	}
	return false;
}

/* A word that is not an option. Returns false when no rule took it. */
static bool redact_plain(struct sbuf *b, const struct line *st, const char *arg, const char *eq)
{
	const char *colon = strchr(arg, ':');

	/* NAME=VALUE, as env(1), docker -e and make take it. */
	if (eq && is_env_key(arg, (size_t)(eq - arg))) {
		size_t klen = (size_t)(eq - arg);

		if (!scan_keeps(b, arg, klen)) {
			sb_str(b, BUNDLE_REDACTED);
			return true;
		}
		sb_add(b, arg, klen + 1);
		if (eq[1] && name_is_credential(arg, klen) && !is_cwd_var(arg, klen, eq + 1))
			sb_str(b, BUNDLE_REDACTED);
		else
			redact_sub(b, st, eq + 1);
		return true;
	}
	if (colon && colon[1] != '/' && is_header_name(arg, (size_t)(colon - arg)) &&
	    name_is_credential(arg, (size_t)(colon - arg))) {
		size_t ws = strspn(colon + 1, " \t");
		if (colon[1 + ws]) {
			if (scan_keeps(b, arg, (size_t)(colon - arg)))
				sb_add(b, arg, (size_t)(colon - arg) + 1 + ws);
			sb_str(b, BUNDLE_REDACTED);
			return true;
		}
	}
	/* openssl's -passin/-passout/-pass argument: "pass:PHRASE". */
	if (!strncmp(arg, "pass:", 5) && arg[5]) {
		sb_str(b, "pass:" BUNDLE_REDACTED);
		return true;
	}
	return false;
}

/* ---- a word that is a command line ---- */

/* Outside quotes these end a shell word. */
#define SHELL_SEPS " \t\n\r;|&()<>"

struct shword {
	size_t start, end; /* the word as written, quotes and all */
	char *value;	   /* as the program it runs would see it */
};

/* The next shell word of s from *pos, with POSIX quoting: '...' literal,
 * "..." with \" \\ \$ \` escapes, a backslash outside quotes escaping any
 * byte. No expansion: "$PW" stays as written. An unterminated quote runs
 * to the end. Returns false at the end of s. */
static bool shword_next(const char *s, size_t *pos, struct shword *w, struct sbuf *val)
{
	size_t i = *pos + strspn(s + *pos, SHELL_SEPS);
	char q = 0;

	if (!s[i])
		return false;
	w->start = i;
	while (s[i] && (q || !strchr(SHELL_SEPS, s[i]))) {
		char c = s[i];

		if (q == '\'' && c != '\'') {
			sb_add(val, s + i++, 1);
		} else if (q && c == q) {
			q = 0;
			i++;
		} else if (q == '"' && c == '\\' && s[i + 1] && strchr("\"\\$`\n", s[i + 1])) {
			sb_add(val, s + i + 1, 1);
			i += 2;
		} else if (!q && (c == '\'' || c == '"')) {
			q = c;
			i++;
		} else if (!q && c == '\\' && s[i + 1]) {
			sb_add(val, s + i + 1, 1);
			i += 2;
		} else {
			sb_add(val, s + i++, 1);
		}
	}
	w->end = *pos = i;
	return true;
}

/* A redacted word back into the line: bare when it can be, else in
 * double quotes, so that the line splits the same way again. */
static void shword_emit(struct sbuf *b, const char *s)
{
	if (*s && !s[strcspn(s, SHELL_SEPS "'\"\\$`")]) {
		sb_str(b, s);
		return;
	}
	sb_add(b, "\"", 1);
	for (; *s; s++) {
		if (strchr("\"\\$`", *s))
			sb_add(b, "\\", 1);
		sb_add(b, s, 1);
	}
	sb_add(b, "\"", 1);
}

static char *redact_arg(struct line *st, const char *arg, const char *next);

/*
 * A word with blanks in it ("sh -c 'mysql --password=x -h db'", su -c,
 * ssh's remote command, an env value of options) is redacted as the
 * command line it most likely is: split into shell words, each redacted
 * with the argv rules (the first naming the program). Unchanged words and
 * everything between words are copied as written, so a line that holds no
 * secret comes back byte for byte.
 */
static void redact_line(struct sbuf *b, const char *s, int depth)
{
	struct line st = { 0, NEXT_NONE, depth + 1 };
	struct shword *w = NULL;
	size_t n = 0, cap = 0, pos = 0, copied = 0;

	for (;;) {
		struct sbuf val = { 0 };
		struct shword one;

		if (!shword_next(s, &pos, &one, &val)) {
			free(val.s);
			break;
		}
		one.value = sb_finish(&val);
		if (one.value && n == cap) {
			struct shword *nw = realloc(w, (cap ? cap * 2 : 16) * sizeof(*w));
			if (!nw) {
				free(one.value);
				one.value = NULL;
			} else {
				w = nw;
				cap = cap ? cap * 2 : 16;
			}
		}
		if (!one.value) {
			b->oom = true;
			goto done;
		}
		w[n++] = one;
	}
	for (size_t k = 0; k < n; k++) {
		char *r = redact_arg(&st, w[k].value, k + 1 < n ? w[k + 1].value : NULL);

		if (!r) {
			b->oom = true;
			goto done;
		}
		sb_add(b, s + copied, w[k].start - copied);
		if (!strcmp(r, w[k].value))
			sb_add(b, s + w[k].start, w[k].end - w[k].start);
		else
			shword_emit(b, r);
		copied = w[k].end;
		free(r);
	}
	sb_str(b, s + copied);
done:
	for (size_t k = 0; k < n; k++)
		free(w[k].value);
	free(w);
}

/* One word: the option and plain rules, then a private key anywhere, then
 * the context-free scan, and a word that still has blanks in it is split
 * as a command line. The scan comes first so that a value with blanks of
 * its own ("Pwd={a b}") is taken whole before the split could cut it. */
static void redact_word(struct sbuf *b, struct line *st, const char *arg, const char *next)
{
	const char *eq = strchr(arg, '=');
	struct sbuf text = { 0 };

	if (st->depth > MAX_DEPTH) {
		sb_str(b, BUNDLE_REDACTED);
		return;
	}
	if (arg[0] == '-' && arg[1] && strcmp(arg, "--") != 0) {
		if (redact_option(b, st, arg, eq, next))
			return;
	} else if (redact_plain(b, st, arg, eq)) {
		return;
	}
	if (strstr(arg, "-----BEGIN") && strstr(arg, "PRIVATE KEY")) {
		sb_str(b, BUNDLE_REDACTED);
		return;
	}
	scan(&text, arg);
	if (text.oom)
		b->oom = true;
	else if (text.s && has_blank(text.s, text.n))
		redact_line(b, text.s, st->depth);
	else if (text.s)
		sb_add(b, text.s, text.n);
	free(text.s);
}

/* The next word of a line: a value a previous word asked for, or a word
 * of its own, which may name a program of short_creds. Decided on the
 * redacted word, which a second pass sees, so both passes agree. */
static char *redact_arg(struct line *st, const char *arg, const char *next)
{
	struct sbuf b = { 0 };
	enum next_kind as_value = st->next;

	st->next = NEXT_NONE;
	if (as_value == NEXT_SECRET) {
		sb_str(&b, BUNDLE_REDACTED);
	} else if (as_value == NEXT_USERPASS) {
		redact_userpass(&b, st, arg);
	} else {
		redact_word(&b, st, arg, next);
		if (b.s && !b.oom)
			st->progs |= programs_of(b.s);
	}
	return sb_finish(&b);
}

static char **redact_argv_once(char *const *argv, size_t argc)
{
	char **out = calloc(argc + 1, sizeof(*out));
	struct line st = { 0, NEXT_NONE, 0 };

	if (!out)
		return NULL;
	for (size_t i = 0; i < argc; i++) {
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

		if (!argv[i])
			continue;
		if (i == 0) {
			/* The program path is kept verbatim. */
			out[i] = strdup(argv[i]);
			st.progs = programs_of(argv[i]);
		} else {
			out[i] = redact_arg(&st, argv[i], next);
		}
		if (!out[i]) {
			bundle_redacted_free(out, argc);
			return NULL;
		}
	}
	return out;
}

/* Passes before words that still change are given up on (below). */
#define MAX_PASSES 4

static bool same_word(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/*
 * The rules read a word both as text (the scan) and as shell words, and
 * one word decides about the next ("--token x"): a redacted word put back
 * into its line (re-quoted, or without the quote that ended a "Pwd="
 * value), or a neighbour that now starts differently, can read otherwise
 * the next time. Rather than chase every such meeting of two rules, argv
 * is redacted again until no word changes, so that redacting the output
 * changes nothing by construction. A pass only takes more away. After
 * MAX_PASSES, the words still changing go whole, and after as many more
 * every word does: "[REDACTED]" is left as it is by every rule, whatever
 * came before it, so this ends.
 */
char **bundle_redact_argv(char *const *argv, size_t argc)
{
	char **out = redact_argv_once(argv, argc);

	for (int pass = 1; out; pass++) {
		char **again = redact_argv_once(out, argc);
		bool changed = false;

		if (!again)
			break;
		for (size_t i = 0; i < argc; i++)
			changed |= !same_word(out[i], again[i]);
		if (!changed) {
			bundle_redacted_free(again, argc);
			return out;
		}
		if (pass < MAX_PASSES) {
			bundle_redacted_free(out, argc);
			out = again;
			continue;
		}
		for (size_t i = 1; i < argc; i++) {
			if (!out[i] || (same_word(out[i], again[i]) && pass < 2 * MAX_PASSES))
				continue;
			free(out[i]);
			out[i] = strdup(BUNDLE_REDACTED);
			if (!out[i]) {
				bundle_redacted_free(again, argc);
				bundle_redacted_free(out, argc);
				return NULL;
			}
		}
		bundle_redacted_free(again, argc);
	}
	bundle_redacted_free(out, argc);
	return NULL;
}

/* One pass over an environment entry. */
static void redact_env_once(struct sbuf *b, const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t klen = eq ? (size_t)(eq - entry) : 0;
	struct line st = { 0, NEXT_NONE, 0 };

	if (!eq) {
		redact_word(b, &st, entry, NULL);
		return;
	}
	/* Any name: the environment is not only what a shell would take. */
	if (!scan_keeps(b, entry, klen)) {
		sb_str(b, BUNDLE_REDACTED);
		return;
	}
	sb_add(b, entry, klen + 1);
	if (eq[1] && name_is_credential(entry, klen) && !is_cwd_var(entry, klen, eq + 1))
		sb_str(b, BUNDLE_REDACTED);
	else
		redact_word(b, &st, eq + 1, NULL);
}

/* Settled as argv is (above); an entry is a line of its own. */
char *bundle_redact_env(const char *entry)
{
	char *cur = NULL;

	for (int pass = 0; pass < MAX_PASSES; pass++) {
		struct sbuf one = { 0 };
		char *r;

		redact_env_once(&one, cur ? cur : entry);
		r = sb_finish(&one);
		if (!r) {
			free(cur);
			return NULL;
		}
		if (cur && !strcmp(r, cur)) {
			free(r);
			return cur;
		}
		free(cur);
		cur = r;
	}
	free(cur);
	return strdup(BUNDLE_REDACTED);
}

void bundle_redacted_free(char **argv, size_t argc)
{
	if (!argv)
		return;
	for (size_t i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}
