/* bundle_redact_argv and bundle_redact_env: tables of input -> output. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/bundle.h"

#define R BUNDLE_REDACTED
#define MAXARGS 8

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
	/* a name the scan would change is no name: the word goes whole */
	{ { "app", "--x/hooks.slack.com/services/a=b", "ghp_0123456789abcdefghij=1" },
	  { "app", R, R } },
	{ { "git", "https://<ghp_0123456789abcdABCDEF:x@github.com/r" },
	  { "git", "https://<" R ":" R "@github.com/r" } },
	/* the program path is never rewritten */
	{ { "/opt/token/bin/app", "x" }, { "/opt/token/bin/app", "x" } },
};

/*
 * Issue 18 item 8: forms a security review found passing redaction, one
 * row per form (each the class of a rule in redact.c, not the example).
 */
static const struct row review_rows[] = {
	/* -p immediately followed by the password, under a program whose -p
	 * is the password (argv[0] or a later word naming it) */
	{ { "mysql", "-uroot", "-phunter3", "-h", "db" },
	  { "mysql", "-uroot", "-p" R, "-h", "db" } },
	{ { "/usr/bin/mariadb-dump", "-phunter3", "shop" },
	  { "/usr/bin/mariadb-dump", "-p" R, "shop" } },
	{ { "sudo", "-u", "app", "mysqladmin", "-phunter3", "status" },
	  { "sudo", "-u", "app", "mysqladmin", "-p" R, "status" } },
	{ { "sshpass", "-p", "hunter3", "ssh", "host" }, { "sshpass", "-p", R, "ssh", "host" } },
	{ { "redis-cli", "-a", "hunter3", "ping" }, { "redis-cli", "-a", R, "ping" } },
	/* NAME=VALUE argument, run-together credential name */
	{ { "env", "PGPASSWORD=hunter3", "psql", "-h", "db" },
	  { "env", "PGPASSWORD=" R, "psql", "-h", "db" } },
	{ { "docker", "run", "-ePGPASSWORD=hunter3", "--env=MYSQLPASSWORD=hunter3" },
	  { "docker", "run", "-ePGPASSWORD=" R, "--env=MYSQLPASSWORD=" R } },
	/* curl's user:password */
	{ { "curl", "-u", "admin:hunter3", "https://api" },
	  { "curl", "-u", "admin:" R, "https://api" } },
	{ { "curl", "--user", "admin:hunter3", "--user=admin:hunter3", "-uadmin:hunter3" },
	  { "curl", "--user", "admin:" R, "--user=admin:" R, "-uadmin:" R } },
	{ { "curl", "-U", "proxy:hunter3", "--proxy-user=proxy:hunter3" },
	  { "curl", "-U", "proxy:" R, "--proxy-user=proxy:" R } },
	{ { "curl", "--user", "1000:1234" }, { "curl", "--user", "1000:" R } },
	/* a token as the user takes the user too (found by fuzz_redact) */
	{ { "curl", "-ughp_0123456789abcdefghij:x", "-u", "ghp_0123456789abcdefghij:x y" },
	  { "curl", "-u" R, "-u", R } },
	/* headers whose name looks secret, in every way curl takes them */
	{ { "curl", "--header=X-Api-Key: k1", "--header", "X-Auth-Token: t1" },
	  { "curl", "--header=X-Api-Key: " R, "--header", "X-Auth-Token: " R } },
	{ { "curl", "-H", "Authorization: Bearer abc", "-HAuthorization: Bearer abc" },
	  { "curl", "-H", "Authorization: " R, "-HAuthorization: " R } },
	/* a command line as one word */
	{ { "sh", "-c", "mysql --password=hunter3 -h db" },
	  { "sh", "-c", "mysql --password=" R " -h db" } },
	{ { "bash", "-c",
	    "curl -H 'Authorization: Bearer abc' -u a:hunter3 https://h && mysql -phunter3 db" },
	  { "bash", "-c",
	    "curl -H \"Authorization: " R "\" -u a:" R " https://h && mysql -p" R " db" } },
	{ { "su", "-c", "PGPASSWORD=hunter3 psql", "app" },
	  { "su", "-c", "PGPASSWORD=" R, "app" } },
	/* ODBC / ADO.NET connection strings */
	{ { "app", "Driver={ODBC Driver 18};Server=db;Password=hunter3;" },
	  { "app", "Driver={ODBC Driver 18};Server=db;Password=" R ";" } },
	{ { "app", "--conn=Driver=x;Server=db;PWD={a;b}}c};Encrypt=yes", "server=db; pwd=hunter3" },
	  { "app", "--conn=Driver=x;Server=db;PWD=" R ";Encrypt=yes", "server=db; pwd=" R } },
	/* user:password@host without a scheme */
	{ { "app", "admin:s3cret@db.example.com:5432/x", "--target=admin:s3cret@db" },
	  { "app", "admin:" R "@db.example.com:5432/x", "--target=admin:" R "@db" } },
	/* a secret URL path; other well-known shapes */
	{ { "app", "https://hooks.slack.com/services/T0001/B0001/abcdefgh" },
	  { "app", "https://hooks.slack.com/services/" R } },
	{ { "app", "https://discord.com/api/webhooks/1/abc?wait=1" },
	  { "app", "https://discord.com/api/webhooks/" R "?wait=1" } },
	{ { "app", "https://h/v1?access_token=abc&page=2", "jdbc:mysql://h/db?user=u&pwd=p" },
	  { "app", "https://h/v1?access_token=" R "&page=2", "jdbc:mysql://h/db?user=u&pwd=" R } },
	{ { "mount", "-o", "username=u,password=hunter3", "//srv/share" },
	  { "mount", "-o", "username=u,password=" R, "//srv/share" } },
	{ { "app", "AIzaSyA-0123456789abcdefghijklmnopqrstu", "pass:hunter3" },
	  { "app", R, "pass:" R } },
};

/*
 * Issue 54 item 2: forms the third security round found passing, each
 * with what it becomes; then what looks like them and must stay.
 */
static const struct row round3_rows[] = {
	/* "pw" as a word, and the short forms run together */
	{ { "app", "--pw=hunter9", "--db-pw", "hunter9", "-bindPw=hunter9" },
	  { "app", "--pw=" R, "--db-pw", R, "-bindPw=" R } },
	{ { "app", "--dbpass=hunter9", "--ldappass", "hunter9", "--pgpwd=hunter9" },
	  { "app", "--dbpass=" R, "--ldappass", R, "--pgpwd=" R } },
	/* inline JSON (and Python or JavaScript literals): the key is kept */
	{ { "app", "{\"password\":\"hunter9\"}" }, { "app", "{\"password\":\"" R "\"}" } },
	{ { "app", "--config={\"db\": {\"user\": \"u\", \"db_password\": \"hunter9\"}}" },
	  { "app", "--config={\"db\": {\"user\": \"u\", \"db_password\": \"" R "\"}}" } },
	{ { "app", "{\"apiKey\":\"k\\\"9\",\"secret\":12345}" },
	  { "app", "{\"apiKey\":\"" R "\",\"secret\":" R "}" } },
	{ { "app", "{'token': 'hunter9', 'n': 1}" }, { "app", "{'token': '" R "', 'n': 1}" } },
	{ { "sh", "-c", "curl -d '{\"password\": \"hunter9\"}' https://h" },
	  { "sh", "-c", "curl -d '{\"password\": \"" R "\"}' https://h" } },
	/* a pre-signed URL's signature: Azure SAS, AWS, GCS */
	{ { "azcopy", "https://a.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=hunter9%3D" },
	  { "azcopy", "https://a.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=" R } },
	{ { "curl", "https://b.s3.amazonaws.com/k?X-Amz-Date=1&X-Amz-Signature=hunter9&x=1" },
	  { "curl", "https://b.s3.amazonaws.com/k?X-Amz-Date=1&X-Amz-Signature=" R "&x=1" } },
	{ { "curl", "https://storage.googleapis.com/b/o?X-Goog-Signature=hunter9" },
	  { "curl", "https://storage.googleapis.com/b/o?X-Goog-Signature=" R } },
	/* as assignments in argv ("env SSHPASS=x sshpass -e ssh h") */
	{ { "env", "SSHPASS=hunter9", "DBPASS=hunter9", "LDAP_BINDPW=hunter9", "PGPWD=hunter9",
	    "MY_PW=hunter9" },
	  { "env", "SSHPASS=" R, "DBPASS=" R, "LDAP_BINDPW=" R, "PGPWD=" R, "MY_PW=" R } },
};

/* Choices about false positives (each argued in redact.c):
 *  - the shell's PWD and OLDPWD holding an absolute path are the working
 *    directory; "PWD=" of an ODBC string (after ';', or with a ';' in
 *    its value) and "--pwd=" stay passwords, as "pwd" is one to ODBC,
 *    mysql clients and many CLIs: a path there costs one readable word;
 *  - "sig" and "signature" are secrets only as URL query keys: "--sig=9"
 *    is a signal, "--signature-file" a path;
 *  - "...pass" run together is a password but for ordinary words
 *    ("bypass", "compass"); "--password-file", "--pw-file" hold paths;
 *  - in JSON, true, false, null, an object and an array are kept. */
static const struct row round3_readable_rows[] = {
	{ { "env", "PWD=/root", "OLDPWD=/home/app dir" },
	  { "env", "PWD=/root", "OLDPWD=/home/app dir" } },
	{ { "app", "--pwd=/home", "PWD=hunter9", "Server=db;PWD=/x;" },
	  { "app", "--pwd=" R, "PWD=" R, "Server=db;PWD=" R ";" } },
	{ { "kill", "--sig=9", "--signature-file=/etc/sig", "sig=3", "https://h/?signal=1" },
	  { "kill", "--sig=9", "--signature-file=/etc/sig", "sig=3", "https://h/?signal=1" } },
	{ { "app", "--password-file=/run/pw", "--pw-file", "/run/pw", "--bypass=1", "COMPASS=n" },
	  { "app", "--password-file=/run/pw", "--pw-file", "/run/pw", "--bypass=1", "COMPASS=n" } },
	{ { "app", "{\"password_file\":\"/x\",\"requirePassword\":true,\"token\":null}" },
	  { "app", "{\"password_file\":\"/x\",\"requirePassword\":true,\"token\":null}" } },
	{ { "app", "{\"password\":\"\",\"secret\":{\"a\":1},\"user\":\"bob\"}" },
	  { "app", "{\"password\":\"\",\"secret\":{\"a\":1},\"user\":\"bob\"}" } },
	{ { "app", "--pw", "--verbose", "--upward=1", "--pwm=50" },
	  { "app", "--pw", "--verbose", "--upward=1", "--pwm=50" } },
};

/* ... and what must stay readable. */
static const struct row readable_rows[] = {
	/* -p is a port to most programs, and mysql's bare -p prompts */
	{ { "psql", "-p", "5432", "-p5432", "-U", "app" },
	  { "psql", "-p", "5432", "-p5432", "-U", "app" } },
	{ { "ssh", "-p", "2222", "user@host" }, { "ssh", "-p", "2222", "user@host" } },
	{ { "mysql", "-u", "root", "-p", "shop" }, { "mysql", "-u", "root", "-p", "shop" } },
	{ { "app", "--port=5432", "-p8080", "--monkey=1" },
	  { "app", "--port=5432", "-p8080", "--monkey=1" } },
	/* a user without a password; --user that is a uid:gid */
	{ { "curl", "-u", "admin", "--user=admin" }, { "curl", "-u", "admin", "--user=admin" } },
	{ { "docker", "run", "--user", "1000:1000", "--user=0:0" },
	  { "docker", "run", "--user", "1000:1000", "--user=0:0" } },
	/* colons and '@' that are not user:password@host */
	{ { "app", "a:b", "user@host", "git@github.com:org/repo.git", "mailto:bob@example.com" },
	  { "app", "a:b", "user@host", "git@github.com:org/repo.git", "mailto:bob@example.com" } },
	{ { "app", "12:30", "host:8080", "[::1]:80", "ssh://git@host/r" },
	  { "app", "12:30", "host:8080", "[::1]:80", "ssh://git@host/r" } },
	/* names that end in a credential word's letters but are not one */
	{ { "env", "KEYBOARD=us", "PGPASSFILE=/x/.pgpass", "BYPASS=1", "HOTKEYS=a" },
	  { "env", "KEYBOARD=us", "PGPASSFILE=/x/.pgpass", "BYPASS=1", "HOTKEYS=a" } },
	/* lists, headers and URLs without a credential in them */
	{ { "app", "Driver=x;Server=db;Database=shop;", "?page=2&sort=name", "rw,noatime,uid=0" },
	  { "app", "Driver=x;Server=db;Database=shop;", "?page=2&sort=name", "rw,noatime,uid=0" } },
	{ { "curl", "-H", "Accept: */*", "--header=Content-Type: text/plain" },
	  { "curl", "-H", "Accept: */*", "--header=Content-Type: text/plain" } },
	{ { "app", "https://hooks.example.com/services/x", "sk-learn", "hf_hub" },
	  { "app", "https://hooks.example.com/services/x", "sk-learn", "hf_hub" } },
	/* a command line without secrets comes back byte for byte */
	{ { "sh", "-c", "echo 'hello  world' | grep -p \"x y\"; exit 0" },
	  { "sh", "-c", "echo 'hello  world' | grep -p \"x y\"; exit 0" } },
	{ { "app", "tab\there", "two\nlines\r\n", "it's a \"test\" \\ $HOME" },
	  { "app", "tab\there", "two\nlines\r\n", "it's a \"test\" \\ $HOME" } },
};

struct env_row {
	const char *in, *out;
};

static const struct env_row env_rows[] = {
	{ "PGPASSWORD=hunter3", "PGPASSWORD=" R },
	{ "AWS_SECRET_ACCESS_KEY=hunter5", "AWS_SECRET_ACCESS_KEY=" R },
	{ "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T0/B0/abcdef",
	  "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/" R },
	{ "DATABASE_URL=admin:hunter3@db:5432/x", "DATABASE_URL=admin:" R "@db:5432/x" },
	{ "DATABASE_URL=postgres://app:hunter7@db/prod",
	  "DATABASE_URL=postgres://app:" R "@db/prod" },
	{ "ConnectionStrings__Db=Server=db;User Id=app;Password=hunter3;",
	  "ConnectionStrings__Db=Server=db;User Id=app;Password=" R ";" },
	{ "JAVA_TOOL_OPTIONS=-Xmx1g -Djavax.net.ssl.keyStorePassword=hunter8",
	  "JAVA_TOOL_OPTIONS=-Xmx1g -Djavax.net.ssl.keyStorePassword=" R },
	{ "APP_OPTS=--token hunter3 --port 1", "APP_OPTS=--token " R " --port 1" },
	{ "APP_CONTEXT=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2ln", "APP_CONTEXT=" R },
	{ "TLS_BUNDLE=-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----",
	  "TLS_BUNDLE=" R },
	{ "X hooks.slack.com/services/T0/ab=c", R },
	/* issue 54 */
	{ "SSHPASS=hunter9", "SSHPASS=" R },
	{ "DBPASS=hunter9", "DBPASS=" R },
	{ "LDAP_BINDPW=hunter9", "LDAP_BINDPW=" R },
	{ "PGPWD=hunter9", "PGPWD=" R },
	{ "MY_PW=hunter9", "MY_PW=" R },
	{ "APP_CONFIG={\"password\":\"hunter9\"}", "APP_CONFIG={\"password\":\"" R "\"}" },
	{ "BLOB_URL=https://a.blob.core.windows.net/c?sv=1&sig=hunter9",
	  "BLOB_URL=https://a.blob.core.windows.net/c?sv=1&sig=" R },
	{ "PWD=hunter9", "PWD=" R },
	/* readable */
	{ "PWD=/root", "PWD=/root" },
	{ "OLDPWD=/home/app", "OLDPWD=/home/app" },
	{ "BYPASS_CACHE=1", "BYPASS_CACHE=1" },
	{ "PASSWORD_FILE=/run/secrets/pw", "PASSWORD_FILE=/run/secrets/pw" },
	{ "PATH=/usr/local/bin:/usr/bin:/bin", "PATH=/usr/local/bin:/usr/bin:/bin" },
	{ "LS_COLORS=rs=0:di=01;34:ln=01;36:*.tar=01;31",
	  "LS_COLORS=rs=0:di=01;34:ln=01;36:*.tar=01;31" },
	{ "SSH_CONNECTION=10.0.0.1 5022 10.0.0.2 22", "SSH_CONNECTION=10.0.0.1 5022 10.0.0.2 22" },
	{ "EMAIL=bob@example.com", "EMAIL=bob@example.com" },
	{ "LESSOPEN=| /usr/bin/lesspipe %s", "LESSOPEN=| /usr/bin/lesspipe %s" },
	{ "LANG=C.UTF-8", "LANG=C.UTF-8" },
	{ "no equals sign", "no equals sign" },
};

static size_t count(const char *const *v)
{
	size_t n = 0;

	while (n < MAXARGS && v[n])
		n++;
	return n;
}

/* Each row as expected, and idempotent: redacting the output again
 * changes nothing (what fuzz_redact checks on random input). */
static void check_rows(const struct row *t, size_t nrows, const char *table)
{
	for (size_t i = 0; i < nrows; i++) {
		size_t n = count(t[i].in);
		char **out = bundle_redact_argv((char *const *)t[i].in, n);
		char **again;

		cr_assert_not_null(out);
		cr_assert_eq(count(t[i].out), n, "%s row %zu", table, i);
		for (size_t j = 0; j < n; j++)
			cr_expect_str_eq(out[j], t[i].out[j], "%s row %zu arg %zu: '%s' -> '%s'",
					 table, i, j, t[i].in[j], out[j]);
		cr_assert_null(out[n], "NULL-terminated");
		again = bundle_redact_argv(out, n);
		cr_assert_not_null(again);
		for (size_t j = 0; j < n; j++)
			cr_expect_str_eq(again[j], out[j], "%s row %zu arg %zu not idempotent",
					 table, i, j);
		bundle_redacted_free(again, n);
		bundle_redacted_free(out, n);
	}
}

#define CHECK_ROWS(t) check_rows(t, sizeof(t) / sizeof(t[0]), #t)

Test(redact, table)
{
	CHECK_ROWS(rows);
}

Test(redact, review_forms_redacted)
{
	CHECK_ROWS(review_rows);
}

Test(redact, ordinary_words_kept)
{
	CHECK_ROWS(readable_rows);
}

Test(redact, round3_forms_redacted)
{
	CHECK_ROWS(round3_rows);
}

Test(redact, round3_false_positives_kept)
{
	CHECK_ROWS(round3_readable_rows);
}

Test(redact, environ_entries)
{
	for (size_t i = 0; i < sizeof(env_rows) / sizeof(env_rows[0]); i++) {
		char *out = bundle_redact_env(env_rows[i].in);
		char *again;

		cr_assert_not_null(out);
		cr_expect_str_eq(out, env_rows[i].out, "env row %zu: '%s' -> '%s'", i,
				 env_rows[i].in, out);
		again = bundle_redact_env(out);
		cr_assert_not_null(again);
		cr_expect_str_eq(again, out, "env row %zu not idempotent", i);
		free(again);
		free(out);
	}
}

/* Values nest ("--a=--b=...", quotes in quotes): deep nesting is cut off
 * by redacting what lies below the limit, never by keeping it. */
Test(redact, deep_nesting_is_bounded)
{
	static char deep[64 * 1024];
	const char *in[2] = { "app", deep };
	char **out;
	size_t n = 0;

	while (n + 8 < sizeof(deep) / 2)
		n += (size_t)sprintf(deep + n, "--a=");
	strcpy(deep + n, "--password=hunter3");
	out = bundle_redact_argv((char *const *)in, 2);
	cr_assert_not_null(out);
	cr_expect(!strstr(out[1], "hunter3"), "a secret below the depth limit survived");
	bundle_redacted_free(out, 2);
}

Test(redact, empty_and_null)
{
	char **out = bundle_redact_argv(NULL, 0);

	cr_assert_not_null(out);
	cr_assert_null(out[0]);
	bundle_redacted_free(out, 0);
	bundle_redacted_free(NULL, 3);
}

/*
 * Issue 54 item 1: the one way in for what a target chose (redact.h).
 * A child's cmdline, a thread's name, an environ entry: redacted, and for
 * text escaped as escape_text does.
 */
struct target_row {
	enum target_string_kind kind;
	const char *in;
	size_t len;
	const char *text, *json;
};

/* A literal and its length, NULs inside and the one ending it excluded. */
#define BYTES(s) s, sizeof(s) - 1

static const struct target_row target_rows[] = {
	/* children's argv as new_children.txt lists them */
	{ TARGET_CMDLINE, BYTES("mysql\0-uroot\0-pHUNTER2secret\0"), "mysql -uroot -p" R,
	  "mysql -uroot -p" R },
	{ TARGET_CMDLINE, BYTES("psql\0postgres://app:S3cr3tPW@db/x\0"),
	  "psql postgres://app:" R "@db/x", "psql postgres://app:" R "@db/x" },
	/* a title written over argv leaves NULs; the last NUL may be missing */
	{ TARGET_CMDLINE, BYTES("nginx: worker process\0\0\0"), "nginx: worker process",
	  "nginx: worker process" },
	{ TARGET_CMDLINE, BYTES("app\0--token\0t0k"), "app --token " R, "app --token " R },
	{ TARGET_CMDLINE, BYTES("app\0\x1b]0;x\x07\0\xe2\x80\xae"), "app \\x1b]0;x\\x07 \\u202e",
	  "app \x1b]0;x\x07 \xe2\x80\xae" },
	{ TARGET_CMDLINE, BYTES(""), "", "" },
	/* thread and process names */
	{ TARGET_NAME, BYTES("pool-1-thread-3"), "pool-1-thread-3", "pool-1-thread-3" },
	{ TARGET_NAME, BYTES("\x1b[31mred\xe2\x80\xae"), "\\x1b[31mred\\u202e",
	  "\x1b[31mred\xe2\x80\xae" },
	{ TARGET_NAME, BYTES("token=hunter9"), "token=" R, "token=" R },
	{ TARGET_NAME, BYTES("ghp_abcdefghijk"), R, R },
	{ TARGET_NAME, BYTES("-phunter9"), "-phunter9", "-phunter9" }, /* no program named */
	/* environ entries */
	{ TARGET_ENVIRON, BYTES("DBPASS=hunter9"), "DBPASS=" R, "DBPASS=" R },
	{ TARGET_ENVIRON, BYTES("PS1=\x1b[1m$ "), "PS1=\\x1b[1m$ ", "PS1=\x1b[1m$ " },
};

Test(redact, target_strings)
{
	for (size_t i = 0; i < sizeof(target_rows) / sizeof(target_rows[0]); i++) {
		const struct target_row *t = &target_rows[i];
		size_t len = t->len;
		char *text = bundle_target_string(t->kind, TARGET_FOR_TEXT, t->in, len);
		char *json = bundle_target_string(t->kind, TARGET_FOR_JSON, t->in, len);

		cr_assert_not_null(text);
		cr_assert_not_null(json);
		cr_expect_str_eq(text, t->text, "target row %zu (text): '%s'", i, text);
		cr_expect_str_eq(json, t->json, "target row %zu (json): '%s'", i, json);
		free(text);
		free(json);
	}
}

Test(redact, target_name_into_a_buffer)
{
	char out[BUNDLE_NAME_TEXT_SIZE], small[8];

	cr_expect_str_eq(bundle_target_name("api_key=hunter9", out, sizeof(out)), "api_key=" R);
	cr_expect_str_eq(bundle_target_name("\x1b[2J", out, sizeof(out)), "\\x1b[2J");
	/* cut between escapes, never inside one */
	cr_expect_str_eq(bundle_target_name("ab\x1b[2J", small, sizeof(small)), "ab\\x1b[");
	cr_expect_str_eq(bundle_target_name("a\xe2\x80\xae", small, 6), "a");
}

Test(redact, name_memo)
{
	struct bundle_name_memo m = { 0 };
	char name[32], want[BUNDLE_NAME_TEXT_SIZE];

	/* More names than slots, twice: what comes back is always the name's. */
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 3 * BUNDLE_NAME_MEMO_SLOTS; i++) {
			snprintf(name, sizeof(name), i % 2 ? "w%d" : "secret=%d\x1b", i);
			cr_expect_str_eq(bundle_name_memo_get(&m, name),
					 bundle_target_name(name, want, sizeof(want)));
		}
	cr_expect_str_eq(bundle_name_memo_get(&m, "key=hunter9"), "key=" R);
	cr_expect_str_eq(bundle_name_memo_get(&m, "key=hunter9"), "key=" R);
	bundle_name_memo_release(&m);
	bundle_name_memo_release(&m);
}
