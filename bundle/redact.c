/*
 * argv redaction. The bundle is meant to be shared (attached to tickets,
 * sent to vendors), and command lines routinely carry secrets. The rules
 * err towards redacting: a false positive costs one readable argument, a
 * false negative leaks a credential.
 *
 * Flag and variable names are split into components at '-', '_', '.' and
 * camelCase boundaries and matched component-wise, so "api-key", "apiKey"
 * and "DB_PASSWORD" match while "keyboard" or "author" do not.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bundle/bundle.h"

static const char *const cred_words[] = {
	"password", "passwd", "pwd", "pass", "passphrase", "token", "secret", "key",
	"auth", "credential", "cookie", "session", "private", "dsn",
	/* common run-together forms */
	"apikey", "authorization", "bearer", "sessionid", "accesskey", "secretkey",
	"privatekey", "authtoken", "accesstoken", "refreshtoken", "jwt",
};

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

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static bool is_sep(char c)
{
	return c == '-' || c == '_' || c == '.';
}

/* Does name[0..len) look like the name of a credential? */
static bool name_is_credential(const char *name, size_t len)
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
		cred |= word_in(name + start, i - start, cred_words, NELEM(cred_words), true);
		last_is_path = word_in(name + start, i - start, path_words, NELEM(path_words), false);
	}
	return cred && !last_is_path;
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
	static const char *const prefixes[] = {
		"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
		"xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xapp-",
		"glpat-", "sk_live_", "rk_live_", "sk_test_",
	};
	size_t n;

	/* AWS access key ids: AKIA (long-term) / ASIA (temporary) + 16. */
	if (!strncmp(s, "AKIA", 4) || !strncmp(s, "ASIA", 4)) {
		n = run(s + 4, NULL, true);
		return n >= 16 ? 4 + n : 0;
	}
	for (size_t i = 0; i < NELEM(prefixes); i++) {
		size_t l = strlen(prefixes[i]);
		if (!strncmp(s, prefixes[i], l)) {
			n = run(s + l, "_-", false);
			return n >= 4 ? l + n : 0;
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

static void scan_prefix(struct sbuf *b, const char *s, size_t n);

/* Copy s, replacing URL passwords and recognizable tokens. */
static void scan(struct sbuf *b, const char *s)
{
	size_t i = 0;

	while (s[i]) {
		size_t t = word_boundary(s, i) ? token_at(s + i) : 0;

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
		if (!strncmp(s + i, "://", 3)) {
			const char *auth = s + i + 3;
			size_t alen = strcspn(auth, "/?# \t\n");
			const char *at = memrchr(auth, '@', alen);
			const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;

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
				i += (size_t)(at - auth);
			}
			continue;
		}
		sb_add(b, s + i, 1);
		i++;
	}
}

/* The first n bytes of s, kept as the name of a credential whose value is
 * redacted or as a URL's user: scanned all the same, as a token may hide
 * there too ("--x\xffghp_...-key=v", "https://<ghp_...:x@host"). */
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

/* ---- whole-argument rules ---- */

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

/* Redact one argument. *redact_next is set when it is a credential flag
 * whose value is the next argument. */
static char *redact_one(const char *arg, const char *next, bool *redact_next)
{
	struct sbuf b = { 0 };
	const char *eq = strchr(arg, '=');

	*redact_next = false;
	if (arg[0] == '-' && arg[1] && strcmp(arg, "--") != 0) {
		const char *name = arg + (arg[1] == '-' ? 2 : 1);
		size_t nlen = eq ? (size_t)(eq - name) : strlen(name);

		/* A token inside the option's name: the whole argument goes.
		 * Redacting only the token would rename the option, and the
		 * new name may read as a credential flag on a second pass
		 * ("--password-ghp_file" -> "--password-[REDACTED]", whose next
		 * argument would then go too): redaction must be idempotent. */
		for (size_t k = 0; k < nlen; k++)
			if (word_boundary(name, k) && token_at(name + k)) {
				sb_str(&b, BUNDLE_REDACTED);
				return sb_finish(&b);
			}
		/* Short options ("-p x") are left alone: one letter says too
		 * little to tell "-p password" from "-p port". */
		bool short_opt = arg[1] != '-' && nlen <= 1;
		if (!short_opt && name_is_credential(name, nlen)) {
			if (eq && eq[1]) {
				scan_prefix(&b, arg, (size_t)(eq - arg) + 1);
				sb_str(&b, BUNDLE_REDACTED);
				return sb_finish(&b);
			}
			/* "--token -" conventionally means stdin, and a
			 * following option is not a value. */
			if (!eq && next && next[0] != '-')
				*redact_next = true;
		}
	} else if (eq && is_env_key(arg, (size_t)(eq - arg)) &&
		   name_is_credential(arg, (size_t)(eq - arg)) && eq[1]) {
		scan_prefix(&b, arg, (size_t)(eq - arg) + 1);
		sb_str(&b, BUNDLE_REDACTED);
		return sb_finish(&b);
	} else {
		const char *colon = strchr(arg, ':');
		if (colon && colon[1] != '/' && is_header_name(arg, (size_t)(colon - arg)) &&
		    name_is_credential(arg, (size_t)(colon - arg))) {
			size_t ws = strspn(colon + 1, " \t");
			if (colon[1 + ws]) {
				scan_prefix(&b, arg, (size_t)(colon - arg) + 1 + ws);
				sb_str(&b, BUNDLE_REDACTED);
				return sb_finish(&b);
			}
		}
	}
	if (strstr(arg, "-----BEGIN") && strstr(arg, "PRIVATE KEY")) {
		sb_str(&b, BUNDLE_REDACTED);
		return sb_finish(&b);
	}
	scan(&b, arg);
	return sb_finish(&b);
}

char **bundle_redact_argv(char *const *argv, size_t argc)
{
	char **out = calloc(argc + 1, sizeof(*out));
	bool redact_next = false;

	if (!out)
		return NULL;
	for (size_t i = 0; i < argc; i++) {
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

		if (!argv[i])
			continue;
		if (i == 0) {
			/* The program path is kept verbatim. */
			out[i] = strdup(argv[i]);
		} else if (redact_next) {
			out[i] = strdup(BUNDLE_REDACTED);
			redact_next = false;
		} else {
			out[i] = redact_one(argv[i], next, &redact_next);
		}
		if (!out[i]) {
			bundle_redacted_free(out, argc);
			return NULL;
		}
	}
	return out;
}

void bundle_redacted_free(char **argv, size_t argc)
{
	if (!argv)
		return;
	for (size_t i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}
