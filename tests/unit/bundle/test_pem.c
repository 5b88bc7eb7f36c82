/*
 * pem_codec against logs 'diag-attach pem' never prints (issue 18 item
 * 11): member names that leave the directory, hold a control character or
 * a NUL, or that no member can have, are refused by name, whatever the
 * block's sha256 says; two parts of one member (or a member and a
 * directory of another) are refused before anything is written.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/views/pem_codec.h"
#include "craft.h"
#include "tmpdir.h"

#define ID "7d1b3c1e-0000-4000-8000-00000000feed"

/* A log of a manifest listing the members, then one block per member. */
struct log {
	char *text;
	size_t len;
	FILE *f;
};

static void log_open(struct log *l)
{
	l->f = open_memstream(&l->text, &l->len);
	cr_assert(l->f);
	fputs("2026-01-01T00:00:00Z app started\n", l->f);
}

static void log_bundle(struct log *l, const struct craft_member *m, size_t n)
{
	char *manifest = craft_manifest("\"bundle_id\":\"" ID "\",", m, n);
	cr_assert(manifest);
	craft_pem_block(l->f, ID, 1, n + 1, "manifest.json", 13, manifest, strlen(manifest));
	for (size_t i = 0; i < n; i++)
		craft_pem_block(l->f, ID, i + 2, n + 1, m[i].name, strlen(m[i].name), m[i].data,
				m[i].len);
	free(manifest);
}

static struct pem_bundle *log_decode(struct log *l)
{
	struct pem_bundle *b;
	cr_assert_eq(fclose(l->f), 0);
	cr_assert_eq(pem_decode(l->text, l->len, NULL, &b), 0);
	return b;
}

/* pem_bundle_write must refuse b and leave dir uncreated. */
static void expect_unwritten(const struct pem_bundle *b)
{
	char *tmp = tmpdir_make(), dir[4096];
	tmpdir_join(dir, sizeof(dir), tmp, "out");
	cr_expect_eq(pem_bundle_write(b, dir), -EINVAL);
	cr_expect_neq(access(dir, F_OK), 0, "%s was created", dir);
	tmpdir_remove(tmp);
}

Test(pem, name_check)
{
	static const struct {
		const char *name;
		size_t len;
		enum pem_refusal want;
	} cases[] = {
		{"cpu.pprof", 9, PEM_WRITABLE},
		{"leak/open_fds-1/threads.txt", 27, PEM_WRITABLE},
		{"manifest.json", 13, PEM_WRITABLE},
		{"caf\xc3\xa9.txt", 9, PEM_WRITABLE},
		{"../x", 4, PEM_NAME_ESCAPES},
		{"..", 2, PEM_NAME_ESCAPES},
		{"a/../../etc/passwd", 18, PEM_NAME_ESCAPES},
		{"/etc/cron.d/x", 13, PEM_NAME_ESCAPES},
		{"a/..", 4, PEM_NAME_ESCAPES},
		{"nul\0x", 5, PEM_NAME_CONTROL},
		{"esc\x1b[2J", 8, PEM_NAME_CONTROL},
		{"tab\tx", 5, PEM_NAME_CONTROL},
		{"del\x7f", 4, PEM_NAME_CONTROL},
		{"../\x1b", 4, PEM_NAME_ESCAPES},
		{"", 0, PEM_NAME_INVALID},
		{".", 1, PEM_NAME_INVALID},
		{"a//b", 4, PEM_NAME_INVALID},
		{"a/", 2, PEM_NAME_INVALID},
		{"./a", 3, PEM_NAME_INVALID},
		{"x.tmp", 5, PEM_NAME_INVALID},
		{"...", 3, PEM_WRITABLE},
		{"..a", 3, PEM_WRITABLE},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(pem_name_check(cases[i].name, cases[i].len), cases[i].want,
			     "case %zu: got %d, want %d", i,
			     (int)pem_name_check(cases[i].name, cases[i].len), (int)cases[i].want);
}

/* A "../" name in an intact block, and in a damaged one: refused by name
 * both times, never counted as a block that failed its sha256. */
Test(pem, escaping_name_refused_by_name)
{
	for (int damaged = 0; damaged < 2; damaged++) {
		struct log l;
		const struct craft_member m[] = {{"../escaped.txt", "x\n", 2}};
		log_open(&l);
		log_bundle(&l, m, 1);
		cr_assert_eq(fclose(l.f), 0);
		if (damaged) {
			char *z = strstr(l.text, "Member: ../escaped.txt");
			cr_assert(z);
			z = strstr(z, "\n\n");
			cr_assert(z);
			z[2] = z[2] == 'A' ? 'B' : 'A'; /* the first base64 character */
		}
		struct pem_bundle *b;
		cr_assert_eq(pem_decode(l.text, l.len, NULL, &b), 0);
		cr_expect_eq(b->refusal, PEM_NAME_ESCAPES);
		cr_expect_eq(b->refused_len, 14);
		cr_expect(b->refused_name && memcmp(b->refused_name, "../escaped.txt", 14) == 0);
		cr_expect_eq(b->refused_part, 2);
		cr_expect_eq(b->bad_blocks, 0, "the name was taken for damage");
		cr_expect(!b->have[1]);
		expect_unwritten(b);
		pem_bundle_free(b);
		free(l.text);
	}
}

/* "Member:" with nothing after it: an empty name, refused as one (it
 * used to be a block without a name, told as damaged). */
Test(pem, empty_name_refused_as_such)
{
	struct log l;
	log_open(&l);
	craft_pem_block(l.f, ID, 1, 2, "manifest.json", 13, "{}", 2);
	craft_pem_block(l.f, ID, 2, 2, "", 0, "a", 1);
	struct pem_bundle *b = log_decode(&l);
	cr_expect_eq(b->refusal, PEM_NAME_INVALID);
	cr_expect_eq(b->refused_len, 0);
	cr_expect_eq(b->bad_blocks, 0);
	expect_unwritten(b);
	pem_bundle_free(b);
	free(l.text);
}

/* A NUL inside the Member header used to cut the name short ("nul"); the
 * whole name is refused, its length kept so it can be shown. */
Test(pem, nul_in_name_refused_whole)
{
	struct log l;
	const struct craft_member ok[] = {{"a.txt", "a", 1}};
	log_open(&l);
	char *manifest = craft_manifest("", ok, 1);
	craft_pem_block(l.f, ID, 1, 2, "manifest.json", 13, manifest, strlen(manifest));
	craft_pem_block(l.f, ID, 2, 2, "nul\0name", 8, "a", 1);
	free(manifest);
	struct pem_bundle *b = log_decode(&l);
	cr_expect_eq(b->refusal, PEM_NAME_CONTROL);
	cr_expect_eq(b->refused_len, 8);
	cr_expect(b->refused_name && memcmp(b->refused_name, "nul\0name", 8) == 0);
	expect_unwritten(b);
	pem_bundle_free(b);
	free(l.text);
}

/* Two parts of one member: found before anything is written (it used to
 * write the first, fail on the second with EEXIST and be told as "the
 * directory is not empty"). A dump repeated whole is not a duplicate. */
Test(pem, duplicate_member_refused_before_writing)
{
	struct log l;
	const struct craft_member m[] = {{"a.txt", "first\n", 6}, {"a.txt", "second\n", 7}};
	log_open(&l);
	log_bundle(&l, m, 2);
	struct pem_bundle *b = log_decode(&l);
	cr_expect_eq(b->refusal, PEM_NAME_DUPLICATE);
	cr_expect(b->refused_name && strcmp(b->refused_name, "a.txt") == 0);
	cr_expect_eq(b->other_part, 2);
	cr_expect_eq(b->refused_part, 3);
	expect_unwritten(b);
	pem_bundle_free(b);
	free(l.text);

	const struct craft_member once[] = {{"a.txt", "first\n", 6}};
	log_open(&l);
	log_bundle(&l, once, 1);
	log_bundle(&l, once, 1);
	b = log_decode(&l);
	cr_expect_eq(b->refusal, PEM_WRITABLE, "a repeated dump taken for a duplicate");
	pem_bundle_free(b);
	free(l.text);
}

/* "a" and "a/b": one of them cannot be written once the other is. */
Test(pem, member_inside_another_refused)
{
	struct log l;
	const struct craft_member m[] = {{"a/b/c.txt", "c", 1}, {"a.txt", "x", 1}, {"a/b", "b", 1}};
	log_open(&l);
	log_bundle(&l, m, 3);
	struct pem_bundle *b = log_decode(&l);
	cr_expect_eq(b->refusal, PEM_NAME_NESTED);
	cr_expect(b->refused_name && strcmp(b->refused_name, "a/b/c.txt") == 0, "%s",
		  b->refused_name);
	cr_expect_eq(b->refused_part, 2);
	cr_expect_eq(b->other_part, 4);
	expect_unwritten(b);
	pem_bundle_free(b);
	free(l.text);
}

/* What is well formed still rebuilds, and verifies. */
Test(pem, well_formed_log_rebuilds)
{
	struct log l;
	const struct craft_member m[] = {{"cpu.txt", "cpu\n", 4},
					 {"leak/open_fds-1/threads.txt", "t\n", 2},
					 {"a.txt", "", 0}};
	log_open(&l);
	log_bundle(&l, m, 3);
	struct pem_bundle *b = log_decode(&l);
	cr_assert_eq(b->refusal, PEM_WRITABLE);
	char *tmp = tmpdir_make(), dir[4096];
	tmpdir_join(dir, sizeof(dir), tmp, "out");
	cr_expect_eq(pem_bundle_write(b, dir), 0);
	size_t members = 0;
	cr_expect_eq(bundle_verify_listed(dir, NULL, NULL, &members), 0);
	cr_expect_eq(members, 3);
	tmpdir_remove(tmp);
	pem_bundle_free(b);
	free(l.text);
}

/* "Part: 1/N" sizes what decoding allocates: a block claiming more parts
 * than any bundle has is a bad block, not an allocation of N entries. */
Test(pem, absurd_part_count_is_a_bad_block)
{
	struct log l;
	log_open(&l);
	craft_pem_block(l.f, ID, 1, (size_t)PEM_MAX_PARTS + 1, "manifest.json", 13, "{}", 2);
	cr_assert_eq(fclose(l.f), 0);
	struct pem_bundle *b;
	cr_expect_eq(pem_decode(l.text, l.len, NULL, &b), -ENOENT);
	free(l.text);
}

/* ---- the streaming decoder (issue 54 item 1) ---- */

static struct pem_bundle *decode_in_pieces(const char *text, size_t len, size_t piece,
					   const struct pem_limits *lim, struct bundle *out)
{
	struct pem_decoder *d;
	cr_assert_eq(pem_decoder_new(NULL, lim, out, &d), 0);
	for (size_t i = 0; i < len; i += piece)
		cr_assert_eq(pem_decoder_feed(d, text + i, len - i < piece ? len - i : piece), 0);
	struct pem_bundle *b;
	cr_assert_eq(pem_decoder_finish(d, &b), 0);
	return b;
}

/* Fed a byte at a time, or in odd pieces, the log decodes to the same
 * files as whole. */
Test(pem, streamed_in_any_pieces)
{
	struct log l;
	const struct craft_member m[] = {{"cpu.txt", "cpu\n", 4},
					 {"leak/open_fds-1/threads.txt", "t\n", 2},
					 {"a.txt", "", 0}};
	log_open(&l);
	log_bundle(&l, m, 3);
	struct pem_bundle *whole = log_decode(&l);
	static const size_t pieces[] = {1, 7, 64, 4096};
	for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
		struct pem_bundle *b = decode_in_pieces(l.text, l.len, pieces[p], NULL, NULL);
		cr_assert_eq(b->parts, whole->parts);
		for (size_t i = 0; i < b->parts; i++) {
			cr_expect(b->have[i], "piece %zu: part %zu missing", pieces[p], i + 1);
			cr_expect_str_eq(b->files[i].name, whole->files[i].name);
			cr_expect_eq(b->files[i].len, whole->files[i].len);
			cr_expect(b->files[i].len == 0 ||
				  memcmp(b->files[i].data, whole->files[i].data, b->files[i].len) == 0);
		}
		pem_bundle_free(b);
	}
	pem_bundle_free(whole);
	free(l.text);
}

/* A member past its cap, and a bundle past the total, are refused from
 * their headers: the block is not kept, the first one is named, and
 * pem_bundle_write touches nothing. */
Test(pem, past_the_limits_refused_from_the_headers)
{
	struct log l;
	const struct craft_member m[] = {{"small.txt", "0123456789", 10},
					 {"big.txt", "0123456789a", 11},
					 {"also.txt", "x", 1}};
	log_open(&l);
	log_bundle(&l, m, 3);
	cr_assert_eq(fclose(l.f), 0);
	struct pem_limits lim = PEM_LIMITS_DEFAULT;
	lim.member_bytes = 10;
	struct pem_bundle *b = decode_in_pieces(l.text, l.len, 100, &lim, NULL);
	cr_expect_eq(b->past, PEM_PAST_MEMBER);
	cr_expect_str_eq(b->past_name, "big.txt");
	cr_expect_eq(b->past_part, 3);
	cr_expect_eq(b->past_size, 11);
	cr_expect(b->have[1] && !b->have[2] && !b->have[3], "decoding went on past the refusal");
	char *tmp = tmpdir_make(), dir[4096];
	tmpdir_join(dir, sizeof(dir), tmp, "out");
	cr_expect_eq(pem_bundle_write(b, dir), -EFBIG);
	cr_expect_neq(access(dir, F_OK), 0, "%s was created", dir);
	pem_bundle_free(b);

	lim = PEM_LIMITS_DEFAULT;
	b = decode_in_pieces(l.text, l.len, 100, &lim, NULL);
	uint64_t manifest = b->decoded_bytes - 22; /* all of it: 10 + 11 + 1 */
	pem_bundle_free(b);
	lim.total_bytes = manifest + 10 + 11; /* "also.txt" is one byte too many */
	b = decode_in_pieces(l.text, l.len, 100, &lim, NULL);
	cr_expect_eq(b->past, PEM_PAST_TOTAL);
	cr_expect_str_eq(b->past_name, "also.txt");
	cr_expect_eq(b->decoded_bytes, lim.total_bytes);
	pem_bundle_free(b);
	tmpdir_remove(tmp);
	free(l.text);
}

/* Decoded into a bundle as it is read: committed, it verifies; given up,
 * nothing is left, not even the directory bundle_create made. */
Test(pem, spooled_then_committed_or_discarded)
{
	struct log l;
	const struct craft_member m[] = {{"cpu.txt", "cpu\n", 4},
					 {"leak/open_fds-1/threads.txt", "t\n", 2}};
	log_open(&l);
	log_bundle(&l, m, 2);
	cr_assert_eq(fclose(l.f), 0);
	char *tmp = tmpdir_make(), dir[4096];
	tmpdir_join(dir, sizeof(dir), tmp, "out");
	struct bundle *out;
	cr_assert_eq(bundle_create(dir, &out), 0);
	struct pem_bundle *b = decode_in_pieces(l.text, l.len, 13, NULL, out);
	cr_assert(b->files[1].spool && !b->files[1].data, "a member held in memory");
	cr_expect_eq(pem_bundle_write(b, dir), -EINVAL, "spooled files written as if in memory");
	cr_expect_eq(pem_bundle_commit(b, out), 0);
	pem_bundle_free(b);
	size_t members = 0;
	cr_expect_eq(bundle_verify_listed(dir, NULL, NULL, &members), 0);
	cr_expect_eq(members, 2);

	char again[4096];
	tmpdir_join(again, sizeof(again), tmp, "again");
	cr_assert_eq(bundle_create(again, &out), 0);
	b = decode_in_pieces(l.text, l.len - 40, 13, NULL, out); /* the last block cut */
	cr_expect(!b->have[2]);
	pem_bundle_free(b);
	bundle_discard(out);
	cr_expect_neq(access(again, F_OK), 0, "%s was left", again);
	tmpdir_remove(tmp);
	free(l.text);
}
