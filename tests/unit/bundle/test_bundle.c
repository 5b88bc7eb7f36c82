/* bundle_create rules, member writes, streams and the finalized manifest. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/gzip.h"
#include "bundle/text.h"
#include "tmpdir.h"

static mode_t mode_of(const char *path)
{
	struct stat st;

	cr_assert_eq(lstat(path, &st), 0, "lstat %s", path);
	return st.st_mode & 07777;
}

Test(bundle, sha256_known_vectors)
{
	char hex[65];

	bundle_sha256_hex("abc", 3, hex);
	cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	bundle_sha256_hex("", 0, hex);
	cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

Test(bundle, create_new_dir_is_0700)
{
	char *tmp = tmpdir_make(), path[4096], p2[4096];
	struct bundle *b = NULL;

	umask(022);
	tmpdir_join(path, sizeof(path), tmp, "out");
	cr_assert_eq(bundle_create(path, &b), 0);
	cr_assert_not_null(b);
	cr_assert_str_eq(bundle_dir(b), path);
	cr_assert_eq(mode_of(path), 0700);
	bundle_abandon(b);
	/* a restrictive umask does not make the bundle unwritable */
	umask(0277);
	tmpdir_join(path, sizeof(path), tmp, "out2/");
	cr_assert_eq(bundle_create(path, &b), 0);
	cr_assert_eq(bundle_write_member(b, "x", "x", 1), 0);
	path[strlen(path) - 1] = '\0';
	cr_assert_eq(mode_of(tmpdir_join(p2, sizeof(p2), path, "x")), 0600);
	cr_assert_str_eq(bundle_dir(b), path);
	cr_assert_eq(mode_of(path), 0700);
	bundle_abandon(b);
	bundle_abandon(NULL);
	tmpdir_remove(tmp);
}

Test(bundle, create_rules)
{
	char *tmp = tmpdir_make(), path[4096], inner[4096];
	struct bundle *b = (struct bundle *)0x1;

	/* existing empty directory: fine */
	tmpdir_join(path, sizeof(path), tmp, "empty");
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_assert_eq(bundle_create(path, &b), 0);
	bundle_abandon(b);

	/* non-empty directory: refused, untouched */
	b = (struct bundle *)0x1;
	tmpdir_join(path, sizeof(path), tmp, "full");
	cr_assert_eq(mkdir(path, 0755), 0);
	tmpdir_join(inner, sizeof(inner), path, ".hidden");
	tmpdir_write_file(inner, "x");
	cr_assert_eq(bundle_create(path, &b), -EEXIST);
	cr_assert_eq(b, (struct bundle *)0x1, "ret untouched on failure");

	/* a regular file */
	tmpdir_join(path, sizeof(path), tmp, "file");
	tmpdir_write_file(path, "x");
	cr_assert_eq(bundle_create(path, &b), -ENOTDIR);

	/* a symlink, even to an empty directory */
	tmpdir_join(path, sizeof(path), tmp, "link");
	tmpdir_join(inner, sizeof(inner), tmp, "empty");
	cr_assert_eq(symlink(inner, path), 0);
	cr_assert_eq(bundle_create(path, &b), -ELOOP);
	strcat(path, "/");
	cr_assert_eq(bundle_create(path, &b), -ELOOP, "trailing slash must not follow");
	/* a dangling symlink is not "absent" either */
	tmpdir_join(path, sizeof(path), tmp, "dangling");
	cr_assert_eq(symlink("/nonexistent/xyz", path), 0);
	cr_assert_eq(bundle_create(path, &b), -ELOOP);

	/* missing parent */
	tmpdir_join(path, sizeof(path), tmp, "no/such/parent");
	cr_assert_eq(bundle_create(path, &b), -ENOENT);
	cr_assert_eq(bundle_create("", &b), -EINVAL);
	tmpdir_remove(tmp);
}

Test(bundle, members_modes_names_and_streams)
{
	char *tmp = tmpdir_make(), dir[4096], p[4096];
	struct bundle *b;
	struct bundle_stream *s;
	char *text;

	umask(0);
	tmpdir_join(dir, sizeof(dir), tmp, "b");
	cr_assert_eq(bundle_create(dir, &b), 0);
	cr_assert_eq(bundle_write_member(b, "cpu.pb.gz", "abc", 3), 0);
	cr_assert_eq(bundle_write_member(b, "empty.txt", NULL, 0), 0);
	cr_assert_eq(bundle_write_member(b, "leak/open_fds-1/threads.txt", "t\n", 2), 0);
	cr_assert_eq(bundle_write_member(b, "leak/open_fds-1/stacks.txt", "s\n", 2), 0);
	cr_assert_eq(mode_of(tmpdir_join(p, sizeof(p), dir, "cpu.pb.gz")), 0600);
	cr_assert_eq(mode_of(tmpdir_join(p, sizeof(p), dir, "leak")), 0700);
	cr_assert_eq(mode_of(tmpdir_join(p, sizeof(p), dir, "leak/open_fds-1/threads.txt")), 0600);
	cr_assert_neq(access(tmpdir_join(p, sizeof(p), dir, "cpu.pb.gz.tmp"), F_OK), 0);

	cr_assert_eq(bundle_write_member(b, "cpu.pb.gz", "x", 1), -EEXIST);
	static const char *const bad[] = {
		"", "/abs", "../up", "a/../b", "a//b", "a/", "./a", "manifest.json", "x.tmp",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(bundle_write_member(b, bad[i], "x", 1), -EINVAL, "name '%s'", bad[i]);

	cr_assert_eq(bundle_stream_open(b, "runtime.jsonl", &s), 0);
	cr_assert_eq(bundle_stream_open(b, "runtime.jsonl", &s), -EEXIST);
	cr_assert_eq(bundle_write_member(b, "runtime.jsonl", "x", 1), -EEXIST);
	cr_assert_eq(bundle_stream_append(s, "{\"a\":1}\n", 8), 0);
	/* visible immediately, not buffered in the process */
	text = tmpdir_read_file(tmpdir_join(p, sizeof(p), dir, "runtime.jsonl"), NULL);
	cr_assert_str_eq(text, "{\"a\":1}\n");
	free(text);
	cr_assert_eq(mode_of(p), 0600);
	cr_assert_eq(bundle_stream_append(s, "{\"a\":2}\n", 8), 0);
	bundle_abandon(b);
	/* abandoned: files stay, no manifest */
	cr_assert_neq(access(tmpdir_join(p, sizeof(p), dir, "manifest.json"), F_OK), 0);
	cr_assert_eq(access(tmpdir_join(p, sizeof(p), dir, "runtime.jsonl"), F_OK), 0);
	tmpdir_remove(tmp);
}

Test(bundle, finalize_writes_sorted_manifest)
{
	char *tmp = tmpdir_make(), dir[4096], p[4096], hex[65];
	struct bundle *b;
	struct bundle_stream *s;
	cJSON *m = cJSON_CreateObject(), *parsed, *members, *e;
	char *text;

	tmpdir_join(dir, sizeof(dir), tmp, "b");
	cr_assert_eq(bundle_create(dir, &b), 0);
	cr_assert_eq(bundle_stream_open(b, "runtime.jsonl", &s), 0);
	cr_assert_eq(bundle_write_member(b, "z.txt", "zz", 2), 0);
	cr_assert_eq(bundle_write_member(b, "a.txt", "a", 1), 0);
	cr_assert_eq(bundle_write_member(b, "leak/x/y.txt", "yyy", 3), 0);
	cr_assert_eq(bundle_stream_append(s, "line1\n", 6), 0);
	cr_assert_eq(bundle_stream_append(s, "line2\n", 6), 0);
	cJSON_AddStringToObject(m, "tool", "diag-attach");
	cJSON_AddNumberToObject(m, "pid", 42);
	cr_assert_eq(bundle_finalize(b, m), 0);

	text = tmpdir_read_file(tmpdir_join(p, sizeof(p), dir, "manifest.json"), NULL);
	cr_assert_eq(mode_of(p), 0600);
	cr_assert_neq(access(tmpdir_join(p, sizeof(p), dir, "manifest.json.tmp"), F_OK), 0);
	parsed = cJSON_Parse(text);
	cr_assert_not_null(parsed, "%s", text);
	cr_assert_str_eq(cJSON_GetObjectItem(parsed, "tool")->valuestring, "diag-attach");
	members = cJSON_GetObjectItem(parsed, "members");
	cr_assert(cJSON_IsArray(members));
	cr_assert_eq(cJSON_GetArraySize(members), 4);
	static const char *const order[] = { "a.txt", "leak/x/y.txt", "runtime.jsonl", "z.txt" };
	for (int i = 0; i < 4; i++) {
		e = cJSON_GetArrayItem(members, i);
		cr_assert_str_eq(cJSON_GetObjectItem(e, "name")->valuestring, order[i]);
	}
	e = cJSON_GetArrayItem(members, 2);
	cr_assert_eq(cJSON_GetObjectItem(e, "bytes")->valuedouble, 12);
	bundle_sha256_hex("line1\nline2\n", 12, hex);
	cr_assert_str_eq(cJSON_GetObjectItem(e, "sha256")->valuestring, hex);
	e = cJSON_GetArrayItem(members, 0);
	bundle_sha256_hex("a", 1, hex);
	cr_assert_str_eq(cJSON_GetObjectItem(e, "sha256")->valuestring, hex);
	cr_assert_eq(cJSON_GetObjectItem(e, "bytes")->valuedouble, 1);
	cJSON_Delete(parsed);
	free(text);

	cr_assert_eq(bundle_verify(dir, NULL, NULL), 0);
	tmpdir_remove(tmp);
}

Test(bundle, finalize_with_null_manifest_and_no_members)
{
	char *tmp = tmpdir_make(), dir[4096];
	struct bundle *b;

	tmpdir_join(dir, sizeof(dir), tmp, "b");
	cr_assert_eq(bundle_create(dir, &b), 0);
	cr_assert_eq(bundle_finalize(b, NULL), 0);
	cr_assert_eq(bundle_verify(dir, NULL, NULL), 0);
	cr_assert_eq(bundle_finalize(NULL, cJSON_CreateObject()), -EINVAL);
	tmpdir_remove(tmp);
}

Test(bundle, finalize_verbatim_keeps_manifest_bytes)
{
	char *tmp = tmpdir_make(), dir[4096], p[4096], hex[65], text[512];
	struct bundle *b;
	struct bundle_stream *s;
	size_t len;

	/* A manifest laid out unlike cJSON's own (one line), as a copy made
	 * elsewhere may be: it must come back byte for byte. */
	bundle_sha256_hex("abc", 3, hex);
	snprintf(text, sizeof(text),
		 "{\"tool\":\"diag-attach\",\"members\":[{\"name\":\"d/m.txt\",\"bytes\":3,"
		 "\"sha256\":\"%s\"}]}",
		 hex);
	tmpdir_join(dir, sizeof(dir), tmp, "b");
	cr_assert_eq(bundle_create(dir, &b), 0);
	cr_assert_eq(bundle_write_member(b, "d/m.txt", "abc", 3), 0);
	cr_assert_eq(bundle_finalize_verbatim(b, text, strlen(text)), 0);
	char *got = tmpdir_read_file(tmpdir_join(p, sizeof(p), dir, "manifest.json"), &len);
	cr_assert_eq(len, strlen(text));
	cr_assert_eq(memcmp(got, text, len), 0);
	cr_assert_eq(mode_of(p), 0600);
	cr_assert_neq(access(tmpdir_join(p, sizeof(p), dir, "manifest.json.tmp"), F_OK), 0);
	free(got);
	cr_assert_eq(bundle_verify(dir, NULL, NULL), 0);

	/* An open stream would be in no manifest: refused, nothing written. */
	tmpdir_join(dir, sizeof(dir), tmp, "c");
	cr_assert_eq(bundle_create(dir, &b), 0);
	cr_assert_eq(bundle_stream_open(b, "runtime.jsonl", &s), 0);
	cr_assert_eq(bundle_finalize_verbatim(b, "{}", 2), -EINVAL);
	cr_assert_neq(access(tmpdir_join(p, sizeof(p), dir, "manifest.json"), F_OK), 0);
	cr_assert_eq(bundle_finalize_verbatim(NULL, "{}", 2), -EINVAL);
	tmpdir_remove(tmp);
}

Test(bundle, gzip_round_trip_and_bound)
{
	static const char plain[] = "a line that repeats, a line that repeats, a line that repeats";
	uint8_t *gz, *out;
	size_t gzlen, outlen;

	cr_assert_eq(bundle_gzip(plain, sizeof(plain), 9, &gz, &gzlen), 0);
	cr_assert(gzlen >= 2 && gz[0] == 0x1f && gz[1] == 0x8b, "not gzip");
	cr_assert_eq(bundle_gunzip(gz, gzlen, SIZE_MAX, &out, &outlen), 0);
	cr_assert_eq(outlen, sizeof(plain));
	cr_assert_eq(memcmp(out, plain, outlen), 0);
	free(out);
	/* Exactly the bound is fine; one byte less is -EFBIG, not a
	 * truncated success. */
	cr_assert_eq(bundle_gunzip(gz, gzlen, sizeof(plain), &out, &outlen), 0);
	free(out);
	cr_assert_eq(bundle_gunzip(gz, gzlen, sizeof(plain) - 1, &out, &outlen), -EFBIG);
	cr_assert_eq(bundle_gunzip(gz, gzlen - 4, SIZE_MAX, &out, &outlen), -EBADMSG);
	cr_assert_eq(bundle_gunzip(plain, sizeof(plain), SIZE_MAX, &out, &outlen), -EBADMSG);
	free(gz);
}

/* Nothing a target named reaches a terminal as a command or reads other
 * than it is: C0 and C1 controls, DEL, bidi overrides and invisible
 * formatting characters are escaped, a double quote too (threads.txt puts
 * names between quotes); ordinary UTF-8 is kept. */
Test(text, escape_text_keeps_terminals_safe)
{
	char out[256];
	cr_expect_str_eq(escape_text("caf\xc3\xa9", out, sizeof(out)), "caf\xc3\xa9");
	cr_expect_str_eq(escape_text("\x1b]0;pwned\x07", out, sizeof(out)), "\\x1b]0;pwned\\x07");
	cr_expect_str_eq(escape_text("a\xc2\x9b" "2J", out, sizeof(out)), "a\\u009b2J");
	cr_expect_str_eq(escape_text("evil\xe2\x80\xaegnp.exe", out, sizeof(out)),
			 "evil\\u202egnp.exe");
	cr_expect_str_eq(escape_text("x\xe2\x81\xa6y\xef\xbb\xbf", out, sizeof(out)), "x\\u2066y\\ufeff");
	cr_expect_str_eq(escape_text("say \"hi\"\\", out, sizeof(out)), "say \\\"hi\\\"\\\\");
	cr_expect_str_eq(escape_text("\xff\x7f", out, sizeof(out)), "\\xff\\x7f");
	/* Truncation falls between characters, never inside an escape. */
	cr_expect_str_eq(escape_text("\xe2\x80\xae", out, 6), "");
}

Test(text, escape_json_strings_reaches_every_string)
{
	cJSON *doc = cJSON_Parse("{\"a\":\"\\u001b[2J\",\"b\":[\"ok\",{\"c\":\"\\u202e\"}],\"n\":3}");
	cr_assert(doc);
	cr_assert_eq(escape_json_strings(doc), 0);
	char *p = cJSON_PrintUnformatted(doc);
	cr_expect_str_eq(p, "{\"a\":\"\\\\x1b[2J\",\"b\":[\"ok\",{\"c\":\"\\\\u202e\"}],\"n\":3}");
	free(p);
	cJSON_Delete(doc);
	/* Keys too: report's thread states are keyed by a profile's labels. */
	doc = cJSON_Parse("{\"S\\u001b[2J\":{\"x\\u202e\":1}}");
	cr_assert(doc);
	cr_assert_eq(escape_json_strings(doc), 0);
	cr_expect_str_eq(doc->child->string, "S\\x1b[2J");
	cr_expect_str_eq(doc->child->child->string, "x\\u202e");
	cJSON_Delete(doc);
}

/* Is s (n bytes) UTF-8 as RFC 3629 has it (no overlong forms, no
 * surrogates, nothing past U+10FFFF)? What a strict JSON reader demands. */
static bool utf8_strict(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		size_t k = c < 0x80 ? 0 : c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2
			: c >= 0xf0 && c <= 0xf4 ? 3 : 9;
		if (k == 9 || i + k >= n + (k ? 0 : 1))
			return false;
		for (size_t j = 1; j <= k; j++)
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
		if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] > 0x9f) ||
		    (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] > 0x8f))
			return false;
		i += k + 1;
	}
	return true;
}

/* Issue 18 item 9: JSON text is UTF-8 whatever the strings hold. A byte
 * that is not UTF-8 reads "\xNN" once parsed (what escape_text shows for
 * it), in values and keys alike; the characters a terminal must not get
 * raw are JSON escapes that parse back to themselves; valid text is kept. */
Test(text, json_print_is_utf8_and_spells_bytes_as_escape_text)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "fn", "hot\xff\xfe_fn");
	cJSON_AddStringToObject(doc, "cut", "\xc3\xa9t\xc3");
	cJSON_AddStringToObject(doc, "overlong", "\xc0\xaf" "/\xed\xa0\x80");
	cJSON_AddStringToObject(doc, "bidi", "evil\xe2\x80\xaegnp.exe\xc2\x9b\x7f");
	cJSON_AddStringToObject(doc, "ok", "caf\xc3\xa9 \xe2\x82\xac \"q\" \\ \x1b");
	cJSON_AddNumberToObject(doc, "k\xff", 1);
	for (int formatted = 0; formatted < 2; formatted++) {
		char *text = json_print(doc, formatted);
		cr_assert(text);
		cr_expect(utf8_strict((const unsigned char *)text, strlen(text)), "not UTF-8: %s",
			  text);
		cr_expect(!strstr(text, "\xe2\x80\xae") && !strstr(text, "\xc2\x9b") &&
				  !strchr(text, '\x7f'),
			  "a raw control: %s", text);
		cJSON *back = cJSON_Parse(text);
		cr_assert(back, "does not parse: %s", text);
		cr_expect_str_eq(cJSON_GetObjectItem(back, "fn")->valuestring, "hot\\xff\\xfe_fn");
		cr_expect_str_eq(cJSON_GetObjectItem(back, "cut")->valuestring, "\xc3\xa9t\\xc3");
		cr_expect_str_eq(cJSON_GetObjectItem(back, "overlong")->valuestring,
				 "\\xc0\\xaf/\\xed\\xa0\\x80");
		cr_expect_str_eq(cJSON_GetObjectItem(back, "bidi")->valuestring,
				 "evil\xe2\x80\xaegnp.exe\xc2\x9b\x7f");
		cr_expect_str_eq(cJSON_GetObjectItem(back, "ok")->valuestring,
				 "caf\xc3\xa9 \xe2\x82\xac \"q\" \\ \x1b");
		cr_expect(cJSON_GetObjectItem(back, "k\\xff") != NULL, "key not spelled: %s", text);
		/* The same spelling as the terminal's. */
		char shown[64];
		cr_expect_str_eq(escape_text("hot\xff\xfe_fn", shown, sizeof(shown)),
				 cJSON_GetObjectItem(back, "fn")->valuestring);
		cJSON_Delete(back);
		free(text);
	}
	cJSON_Delete(doc);
}

/* The manifest is spelled the same way: a target's argv that is not
 * UTF-8 (item 9's rule at the writer too). */
Test(bundle, finalize_manifest_is_utf8)
{
	char *tmp = tmpdir_make(), dir[4096], p[4096];
	struct bundle *b;
	cJSON *m = cJSON_CreateObject();

	tmpdir_join(dir, sizeof(dir), tmp, "b");
	cr_assert_eq(bundle_create(dir, &b), 0);
	cJSON_AddStringToObject(m, "comm", "bad\xff\xfeutf8\xc3");
	cr_assert_eq(bundle_finalize(b, m), 0);
	size_t len;
	char *text = tmpdir_read_file(tmpdir_join(p, sizeof(p), dir, "manifest.json"), &len);
	cr_expect(utf8_strict((const unsigned char *)text, len), "not UTF-8: %s", text);
	cJSON *parsed = cJSON_Parse(text);
	cr_assert(parsed);
	cr_expect_str_eq(cJSON_GetObjectItem(parsed, "comm")->valuestring, "bad\\xff\\xfeutf8\\xc3");
	cJSON_Delete(parsed);
	free(text);
	tmpdir_remove(tmp);
}
