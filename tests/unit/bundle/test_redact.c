/* bundle_redact_argv: a table of argv in -> argv out. */
#include <criterion/criterion.h>
#include <string.h>

#include "bundle/bundle.h"

#define R BUNDLE_REDACTED
#define MAXARGS 6

struct row {
	const char *in[MAXARGS];
	const char *out[MAXARGS];
};

static const struct row rows[] = {
	/* flag=value and flag value */
	{ { "/usr/bin/app", "--password=hunter2" }, { "/usr/bin/app", "--password=" R } },
	{ { "app", "--token", "hunter3", "--port", "8080" },
	  { "app", "--token", R, "--port", "8080" } },
	{ { "app", "--api-key=x" }, { "app", "--api-key=" R } },
	{ { "app", "--client_secret", "x" }, { "app", "--client_secret", R } },
	{ { "app", "--auth-token=x" }, { "app", "--auth-token=" R } },
	{ { "app", "--apikey=x", "--apiKey", "y" }, { "app", "--apikey=" R, "--apiKey", R } },
	{ { "app", "--private-key=x", "--key", "k" }, { "app", "--private-key=" R, "--key", R } },
	{ { "app", "--db-passwd=x", "--session-cookie=c" },
	  { "app", "--db-passwd=" R, "--session-cookie=" R } },
	{ { "app", "--credentials=x", "--dsn", "postgres://h/db" },
	  { "app", "--credentials=" R, "--dsn", R } },
	/* Go-style single-dash long flags */
	{ { "app", "-password", "pw", "-token=t" }, { "app", "-password", R, "-token=" R } },
	{ { "java", "-Djavax.net.ssl.keyStorePassword=changeit" },
	  { "java", "-Djavax.net.ssl.keyStorePassword=" R } },
	/* not credentials */
	{ { "app", "--port", "8080", "--keyboard-layout=us", "--author=bob" },
	  { "app", "--port", "8080", "--keyboard-layout=us", "--author=bob" } },
	{ { "app", "--monkey=1", "--hotkeys", "ctrl" }, { "app", "--monkey=1", "--hotkeys", "ctrl" } },
	{ { "app", "--password-file", "/run/secrets/pw" },
	  { "app", "--password-file", "/run/secrets/pw" } },
	/* short flags are left alone */
	{ { "mysql", "-p", "secret", "-u", "root" }, { "mysql", "-p", "secret", "-u", "root" } },
	/* a credential flag followed by another option or stdin */
	{ { "app", "--token", "--verbose" }, { "app", "--token", "--verbose" } },
	{ { "app", "--token", "-" }, { "app", "--token", "-" } },
	{ { "app", "--token" }, { "app", "--token" } },
	{ { "app", "--password=" }, { "app", "--password=" } },
	{ { "app", "--", "--password=x" }, { "app", "--", "--password=" R } },
	/* URL userinfo */
	{ { "app", "postgres://u:hunter4@h/db" }, { "app", "postgres://u:" R "@h/db" } },
	{ { "app", "--db=mysql://root:p@ss@db:3306/x?y=1" },
	  { "app", "--db=mysql://root:" R "@db:3306/x?y=1" } },
	{ { "app", "https://example.com/a@b", "ssh://git@host/repo" },
	  { "app", "https://example.com/a@b", "ssh://git@host/repo" } },
	/* recognizable tokens */
	{ { "app", "AKIAIOSFODNN7EXAMPLE" }, { "app", R } },
	{ { "app", "--id=AKIAIOSFODNN7EXAMPLE" }, { "app", "--id=" R } },
	{ { "app", "AKIA123" }, { "app", "AKIA123" } },
	{ { "app", "ghp_abcdefghijklmnopqrstuvwxyz0123456789" }, { "app", R } },
	{ { "app", "xoxb-1234-5678-abcdef" }, { "app", R } },
	{ { "app", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJl" }, { "app", R } },
	{ { "app", "eyJhbGciOi...x.y" }, { "app", R } },
	{ { "app", "eyJhbGciOiJIUzI1NiJ9" }, { "app", "eyJhbGciOiJIUzI1NiJ9" } },
	{ { "app", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----" },
	  { "app", R } },
	/* env-style assignments and headers */
	{ { "env", "DB_PASSWORD=x", "PATH=/bin", "GITHUB_TOKEN=abc" },
	  { "env", "DB_PASSWORD=" R, "PATH=/bin", "GITHUB_TOKEN=" R } },
	{ { "curl", "-H", "Authorization: Bearer abc.def", "-H", "Accept: */*" },
	  { "curl", "-H", "Authorization: " R, "-H", "Accept: */*" } },
	{ { "curl", "-H", "X-Api-Key: k" }, { "curl", "-H", "X-Api-Key: " R } },
	/* a token in the kept name part of a credential (found by fuzz_redact) */
	{ { "app", "--x\xffghp_0123456789abcdefghijABCDEF\xff-key=v" }, { "app", R } },
	{ { "app", "--password-ghp_file", "/x" }, { "app", R, "/x" } },
	{ { "git", "https://<ghp_0123456789abcdABCDEF:x@github.com/r" },
	  { "git", "https://<" R ":" R "@github.com/r" } },
	/* the program path is never rewritten */
	{ { "/opt/token/bin/app", "x" }, { "/opt/token/bin/app", "x" } },
};

static size_t count(const char *const *v)
{
	size_t n = 0;

	while (n < MAXARGS && v[n])
		n++;
	return n;
}

Test(redact, table)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		size_t n = count(rows[i].in);
		char **out = bundle_redact_argv((char *const *)rows[i].in, n);

		cr_assert_not_null(out);
		cr_assert_eq(count(rows[i].out), n, "row %zu", i);
		for (size_t j = 0; j < n; j++)
			cr_expect_str_eq(out[j], rows[i].out[j], "row %zu arg %zu: '%s' -> '%s'", i, j,
					 rows[i].in[j], out[j]);
		cr_assert_null(out[n], "NULL-terminated");
		bundle_redacted_free(out, n);
	}
}

Test(redact, empty_and_null)
{
	char **out = bundle_redact_argv(NULL, 0);

	cr_assert_not_null(out);
	cr_assert_null(out[0]);
	bundle_redacted_free(out, 0);
	bundle_redacted_free(NULL, 3);
}
