/*
 * fuzz_redact: bundle_redact_argv on an argv split from the input, and
 * bundle_redact_env on each of its arguments as an environment entry.
 *
 * Input: arguments separated by NUL bytes, exactly like /proc/PID/cmdline
 * (so a real cmdline file is a seed). argv[0] is kept verbatim by design.
 * Invariants:
 *  - no crash, no leak;
 *  - the result has argc entries plus a terminating NULL;
 *  - idempotent: redacting the redacted argv (or entry) changes nothing;
 *  - secrets never survive. This harness carries its own, deliberately
 *    narrow, oracle (independent of redact.c's rules):
 *      --password=V / --token=V / --secret=V / --api-key=V ... (V not empty)
 *          -> "--NAME=[REDACTED]" (or "[REDACTED]" when the argument was
 *             itself taken as the value of a preceding credential flag; or,
 *             for a one-dash "-password=V", "-p[REDACTED]": under mysql,
 *             -p takes the rest of the word as the password);
 *      --password V (V the next argument, not starting with '-')
 *          -> V becomes "[REDACTED]";
 *      DB_PASSWORD=V, API_TOKEN=V, PGPASSWORD=V -> "NAME=[REDACTED]", as
 *          an argument and as an environment entry;
 *      a GitHub token (ghp_ + 20 or more alphanumerics) or an AWS key id
 *      (AKIA + 16 upper-case letters/digits) that stands as a word of its
 *      own never appears in the output as a word of its own.
 */
#include <ctype.h>

#include "tests/fuzz/fuzz_common.h"

#include "bundle/bundle.h"

#define MAX_ARGS 64

static const char *const flag_names[] = {
	"password", "passwd",	    "token",	  "secret",	   "api-key",	  "apikey",
	"api_key",  "access-token", "auth-token", "client-secret", "private-key", "db-password",
};

static const char *const env_names[] = {
	"PASSWORD", "DB_PASSWORD",	     "API_TOKEN",    "API_KEY",
	"SECRET",   "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "PGPASSWORD",
};

/* name[0..n) is flag, in lower or in upper case. Mixed case is left out:
 * redact.c splits camelCase into words ("apiKey"), so "pAsSwOrD" is four
 * words, none a credential, by design. */
static bool same_name(const char *name, const char *flag, size_t n)
{
	bool lower = true, upper = true;

	for (size_t i = 0; i < n; i++) {
		lower &= name[i] == flag[i];
		upper &= name[i] == toupper((unsigned char)flag[i]);
	}
	return lower || upper;
}

/* "--NAME=V" or "-NAME=V" with NAME one of flag_names (any case): returns
 * the length of the "--NAME=" prefix, or 0. */
static size_t cred_flag_prefix(const char *a, bool *ret_has_eq)
{
	const char *name;
	size_t n;

	*ret_has_eq = false;
	if (a[0] != '-')
		return 0;
	name = a + (a[1] == '-' ? 2 : 1);
	n = strcspn(name, "=");
	for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++) {
		if (strlen(flag_names[i]) == n && same_name(name, flag_names[i], n)) {
			*ret_has_eq = name[n] == '=';
			return (size_t)(name - a) + n + (name[n] == '=');
		}
	}
	return 0;
}

static size_t cred_env_prefix(const char *a)
{
	size_t n = strcspn(a, "=");

	if (!a[n])
		return 0;
	for (size_t i = 0; i < sizeof(env_names) / sizeof(env_names[0]); i++)
		if (strlen(env_names[i]) == n && strncmp(a, env_names[i], n) == 0)
			return n + 1;
	return 0;
}

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-';
}

/* Length of a token at s (ghp_ + >= 20 alnum, or AKIA + 16 [A-Z0-9])
 * that ends a word, else 0. */
static size_t token_len(const char *s)
{
	size_t n = 0;

	if (!strncmp(s, "ghp_", 4)) {
		while (isalnum((unsigned char)s[4 + n]))
			n++;
		return n >= 20 && !word_char(s[4 + n]) ? 4 + n : 0;
	}
	if (!strncmp(s, "AKIA", 4)) {
		while (n < 16 &&
		       (isupper((unsigned char)s[4 + n]) || isdigit((unsigned char)s[4 + n])))
			n++;
		return n == 16 && !word_char(s[4 + n]) ? 20 : 0;
	}
	return 0;
}

static bool starts_word(const char *s, size_t i)
{
	return i == 0 || !word_char(s[i - 1]);
}

/* Is the standalone token tok[0..len) present as a standalone word in s? */
static bool word_in(const char *s, const char *tok, size_t len)
{
	const char *p = s;

	while ((p = memmem(p, strlen(p), tok, len))) {
		if (starts_word(s, (size_t)(p - s)) && !word_char(p[len]))
			return true;
		p++;
	}
	return false;
}

static void check_secrets(char **in, char **out, size_t argc)
{
	for (size_t i = 1; i < argc; i++) {
		bool has_eq;
		size_t pre = cred_flag_prefix(in[i], &has_eq);

		if (strcmp(out[i], BUNDLE_REDACTED) == 0)
			continue; /* wholly redacted: nothing survived */
		if (pre && has_eq && in[i][pre] &&
		    !(in[i][1] != '-' && strncmp(out[i], in[i], 2) == 0 &&
		      strcmp(out[i] + 2, BUNDLE_REDACTED) == 0)) {
			FUZZ_CHECK(strncmp(out[i], in[i], pre) == 0);
			FUZZ_CHECK(strcmp(out[i] + pre, BUNDLE_REDACTED) == 0);
		}
		if (pre && !has_eq && i + 1 < argc && in[i + 1][0] != '-' && in[i + 1][0])
			FUZZ_CHECK(strcmp(out[i + 1], BUNDLE_REDACTED) == 0);
		pre = cred_env_prefix(in[i]);
		if (pre && in[i][pre]) {
			FUZZ_CHECK(strncmp(out[i], in[i], pre) == 0);
			FUZZ_CHECK(strcmp(out[i] + pre, BUNDLE_REDACTED) == 0);
		}
		for (size_t k = 0; in[i][k]; k++) {
			size_t t = starts_word(in[i], k) ? token_len(in[i] + k) : 0;

			if (t) {
				if (word_in(out[i], in[i] + k, t)) {
					fprintf(stderr,
						"token survived in argv[%zu]: \"%s\" -> \"%s\"\n",
						i, in[i], out[i]);
					FUZZ_CHECK(!"a credential token survived redaction");
				}
				k += t - 1;
			}
		}
	}
}

/* Each argument as an environment entry. */
static void check_env(const char *entry)
{
	char *once = bundle_redact_env(entry), *twice;
	size_t pre = cred_env_prefix(entry);

	FUZZ_CHECK(once != NULL);
	twice = bundle_redact_env(once);
	FUZZ_CHECK(twice != NULL);
	if (strcmp(once, twice) != 0) {
		fprintf(stderr, "env not idempotent: \"%s\" -> \"%s\" -> \"%s\"\n", entry, once,
			twice);
		FUZZ_CHECK(!"environment redaction is not idempotent");
	}
	if (pre && entry[pre]) {
		FUZZ_CHECK(strncmp(once, entry, pre) == 0);
		FUZZ_CHECK(strcmp(once + pre, BUNDLE_REDACTED) == 0);
	}
	free(twice);
	free(once);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = fz_strndup(data, size);
	char *argv[MAX_ARGS + 1];
	size_t argc = 0;
	char **once, **twice;

	/* cmdline style: NUL-separated, a trailing NUL ends the last one. */
	for (size_t off = 0; off < size && argc < MAX_ARGS;) {
		argv[argc++] = buf + off;
		off += strlen(buf + off) + 1;
	}
	argv[argc] = NULL;

	once = bundle_redact_argv(argv, argc);
	FUZZ_CHECK(once != NULL);
	FUZZ_CHECK(once[argc] == NULL);
	for (size_t i = 0; i < argc; i++)
		FUZZ_CHECK(once[i] != NULL);
	if (argc)
		FUZZ_CHECK(strcmp(once[0], argv[0]) == 0);

	twice = bundle_redact_argv(once, argc);
	FUZZ_CHECK(twice != NULL);
	for (size_t i = 0; i < argc; i++) {
		if (strcmp(once[i], twice[i]) != 0) {
			fprintf(stderr, "not idempotent at argv[%zu]: \"%s\" -> \"%s\" -> \"%s\"\n",
				i, argv[i], once[i], twice[i]);
			FUZZ_CHECK(!"redaction is not idempotent");
		}
	}

	check_secrets(argv, once, argc);
	for (size_t i = 0; i < argc; i++)
		check_env(argv[i]);

	bundle_redacted_free(twice, argc);
	bundle_redacted_free(once, argc);
	free(buf);
	return 0;
}
