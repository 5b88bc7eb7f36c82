/*
 * Issue 54 item 1: unpem against logs whose blocks are honest but huge.
 * A 4 MB log of three 1 GiB members of zeros (gzip takes zeros about
 * 1000:1) used to cost 3 GB of memory and write 3 GiB: every member was
 * held whole, and its Size trusted. Now a member past the reader's cap
 * (BUNDLE_MAX_MEMBER_BYTES) and a bundle past unpem's budget
 * (--max-total) are refused from the blocks' headers, with one line and
 * exit 17, leaving nothing behind; what is decoded is streamed to disk,
 * so a member under the cap costs no memory of its size. The logs are
 * made here, not committed: the gzip streams of zeros are built from one
 * compressed chunk repeated (see zeros_gzip), with a correct size and
 * sha256 in every block and a manifest that lists them.
 *
 * Memory is the child's peak RSS, getrusage(RUSAGE_CHILDREN).ru_maxrss:
 * each test below runs only the unpem it measures, and criterion runs
 * each test in a process of its own.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nettle/sha2.h>
#include <zlib.h>

#include "bundle/views/pem_codec.h"
#include "bundle/reader.h"
#include "cmd/cli/exit_codes.h"
#include "craft.h"
#include "harness.h"

#define ID  "54a1b2c3-0000-4000-8000-0000000000e1"
#define MIB (1ull << 20)
#define GIB (1ull << 30)
/* What a streamed unpem may peak at: its code, libc, and buffers of a
 * line and a 64 KiB read, nothing in proportion to a member. */
#define RSS_BOUND (64 * MIB)

/* A gzip stream of size zero bytes (a multiple of CHUNK), its sha256 and
 * length. Deflate after Z_FULL_FLUSH forgets everything before it, so one
 * CHUNK of zeros compressed and flushed that way is the same bytes every
 * time: the stream is the gzip header, that block repeated, an empty last
 * block and the trailer (CRC-32 and size mod 2^32). */
#define CHUNK (64 * MIB)
struct zeros {
	uint8_t *gz;
	size_t len;
	char sha[65];
};

static void zeros_gzip(uint64_t size, struct zeros *z)
{
	cr_assert(size % CHUNK == 0);
	uint8_t *zero = calloc(1, CHUNK);
	cr_assert(zero);
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	cr_assert_eq(deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY), Z_OK);
	size_t bound = deflateBound(&zs, CHUNK) + 64;
	uint8_t *block = malloc(bound);
	cr_assert(block);
	zs.next_in = zero;
	zs.avail_in = CHUNK;
	zs.next_out = block;
	zs.avail_out = (uInt)bound;
	cr_assert_eq(deflate(&zs, Z_FULL_FLUSH), Z_OK);
	cr_assert_eq(zs.avail_in, 0);
	size_t blen = bound - zs.avail_out;
	uint8_t last[16];
	zs.next_out = last;
	zs.avail_out = sizeof(last);
	cr_assert_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	size_t llen = sizeof(last) - zs.avail_out;
	deflateEnd(&zs);

	uint64_t n = size / CHUNK;
	z->len = 10 + n * blen + llen + 8;
	z->gz = malloc(z->len);
	cr_assert(z->gz);
	static const uint8_t header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
	uint8_t *p = z->gz;
	memcpy(p, header, 10);
	p += 10;
	for (uint64_t i = 0; i < n; i++, p += blen)
		memcpy(p, block, blen);
	memcpy(p, last, llen);
	p += llen;
	uLong crc_chunk = crc32(0, zero, CHUNK), crc = 0;
	struct sha256_ctx ctx;
	sha256_init(&ctx);
	for (uint64_t i = 0; i < n; i++) {
		crc = i ? crc32_combine(crc, crc_chunk, (z_off_t)CHUNK) : crc_chunk;
		sha256_update(&ctx, CHUNK, zero);
	}
	uint32_t trailer[2] = {(uint32_t)crc, (uint32_t)size}; /* little-endian host */
	memcpy(p, trailer, 8);
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_digest(&ctx, sizeof(d), d);
	for (size_t i = 0; i < sizeof(d); i++)
		sprintf(z->sha + 2 * i, "%02x", d[i]);
	free(block);
	free(zero);
}

/* One block as 'diag-attach pem' prints a member it gzipped. */
static void gzip_block(FILE *f, size_t part, size_t parts, const char *name, uint64_t size,
		       const char *sha, const uint8_t *gz, size_t len)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	fprintf(f,
		"-----BEGIN DIAG-ATTACH BUNDLE-----\nBundle: " ID "\nPart: %zu/%zu\nMember: %s\n"
		"Size: %llu\nSha256: %s\nEncoding: gzip+base64\n\n",
		part, parts, name, (unsigned long long)size, sha);
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)gz[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)gz[i + 1] << 8;
		if (i + 2 < len)
			v |= gz[i + 2];
		char q[4] = {b64[(v >> 18) & 63], b64[(v >> 12) & 63],
			     i + 1 < len ? b64[(v >> 6) & 63] : '=',
			     i + 2 < len ? b64[v & 63] : '='};
		fwrite(q, 1, 4, f);
		if ((i / 3 + 1) % 16 == 0 || i + 3 >= len)
			fputc('\n', f);
	}
	fputs("-----END DIAG-ATTACH BUNDLE-----\n", f);
}

/* A log of n members named zeros-1.bin..., each size bytes of zeros,
 * after a manifest that lists them, between other log lines. */
static void write_zeros_log(const char *path, size_t n, uint64_t size)
{
	struct zeros z;
	zeros_gzip(size, &z);
	char *manifest = NULL;
	size_t mlen = 0;
	FILE *m = open_memstream(&manifest, &mlen);
	cr_assert(m);
	fputs("{\n\t\"bundle_id\":\t\"" ID "\",\n\t\"format_version\":\t2,\n\t\"members\":\t[", m);
	for (size_t i = 0; i < n; i++)
		fprintf(m, "%s{\"name\": \"zeros-%zu.bin\", \"bytes\": %llu, \"sha256\": \"%s\"}",
			i ? ", " : "", i + 1, (unsigned long long)size, z.sha);
	fputs("]\n}\n", m);
	cr_assert_eq(fclose(m), 0);
	FILE *f = fopen(path, "we");
	cr_assert(f);
	fputs("2026-01-01T00:00:00Z app: dumping a bundle\n", f);
	craft_pem_block(f, ID, 1, n + 1, "manifest.json", 13, manifest, mlen);
	for (size_t i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "zeros-%zu.bin", i + 1);
		gzip_block(f, i + 2, n + 1, name, size, z.sha, z.gz, z.len);
	}
	fputs("2026-01-01T00:00:01Z app: done\n", f);
	cr_assert_eq(fclose(f), 0);
	free(manifest);
	free(z.gz);
}

static uint64_t children_peak_rss(void)
{
	struct rusage ru;
	cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
	return (uint64_t)ru.ru_maxrss * 1024; /* KiB on Linux */
}

static uint64_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static bool one_line(const char *s)
{
	const char *nl = strchr(s, '\n');
	return nl && !nl[1];
}

static bool dir_empty(const char *dir)
{
	char cmd[600], out[64];
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	return shell_output(cmd, out, sizeof(out)) == 0 && atoi(out) == 0;
}

/* The log: three honest 1 GiB members in a 4 MB log. The first
 * is refused from its header: one line, exit 17, no output directory,
 * and unpem's memory stays that of a small program. */
Test(unpem_limits, gib_members_refused_in_bounded_memory, .timeout = 600)
{
	char d[256], log[300], out[300];
	make_tmpdir(d, sizeof(d));
	snprintf(log, sizeof(log), "%s/three-gib.log", d);
	snprintf(out, sizeof(out), "%s/out", d);
	write_zeros_log(log, 3, GIB);
	uint64_t log_bytes = file_size(log);
	cr_assert(log_bytes > 3 * MIB && log_bytes < 8 * MIB, "the log is %llu bytes",
		  (unsigned long long)log_bytes);

	struct tool_result r;
	tool_run(&r, (const char *[]){"unpem", "-o", out, log, NULL});
	uint64_t rss = children_peak_rss();
	cr_expect_eq(r.exit_code, EXIT_PAST_CAP, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "refusing bundle " ID ": member 'zeros-1.bin' (part 2) is "
				"1073741824 bytes, more than 256 MiB, the bundle reader's limit "
				"for a member; nothing was written"),
		  "%s", r.err);
	cr_expect(one_line(r.err), "not one line: %s", r.err);
	cr_expect(!path_exists(out, NULL), "%s was left behind", out);
	cr_expect(rss < RSS_BOUND, "unpem peaked at %llu MiB of RSS for a %llu-byte log",
		  (unsigned long long)(rss / MIB), (unsigned long long)log_bytes);
	fprintf(stderr, "unpem of a %.1f MB log of 3 x 1 GiB: exit %d, peak RSS %.1f MiB\n",
		log_bytes / 1e6, r.exit_code, rss / (double)MIB);
	rm_rf(d);
}

/* A member under the cap is decoded to disk as it is read: 192 MiB come
 * out whole and verified while unpem's memory stays far below that. */
Test(unpem_limits, member_under_the_cap_is_streamed, .timeout = 600)
{
	char d[256], log[300], out[300], member[400];
	make_tmpdir(d, sizeof(d));
	snprintf(log, sizeof(log), "%s/one.log", d);
	snprintf(out, sizeof(out), "%s/out", d);
	write_zeros_log(log, 1, 192 * MIB);
	struct tool_result r;
	tool_run(&r, (const char *[]){"unpem", "-o", out, log, NULL});
	uint64_t rss = children_peak_rss();
	cr_expect_eq(r.exit_code, EXIT_OK, "exit %d: %s", r.exit_code, r.err);
	snprintf(member, sizeof(member), "%s/zeros-1.bin", out);
	cr_expect_eq(file_size(member), 192 * MIB);
	expect_verified(out, "a streamed member");
	cr_expect(rss < RSS_BOUND, "unpem peaked at %llu MiB of RSS for a 192 MiB member",
		  (unsigned long long)(rss / MIB));
	fprintf(stderr, "unpem of a 192 MiB member: peak RSS %.1f MiB\n", rss / (double)MIB);
	rm_rf(d);
}

/* Members each under the cap but together past --max-total: refused when
 * the block that crosses it is reached, after the ones before it were
 * written; nothing of them is left, in a directory unpem made or in an
 * empty one it was given. */
Test(unpem_limits, budget_refused_and_nothing_left, .timeout = 600)
{
	char d[256], log[300], out[300], given[300];
	make_tmpdir(d, sizeof(d));
	snprintf(log, sizeof(log), "%s/budget.log", d);
	snprintf(out, sizeof(out), "%s/out", d);
	snprintf(given, sizeof(given), "%s/given", d);
	write_zeros_log(log, 3, CHUNK); /* 3 x 64 MiB */
	struct tool_result r;
	tool_run(&r, (const char *[]){"unpem", "--max-total", "150", "-o", out, log, NULL});
	cr_expect_eq(r.exit_code, EXIT_PAST_CAP, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "refusing bundle " ID ": with member 'zeros-3.bin' (part 4, "
				"67108864 bytes) its members come to more than 150 MiB, unpem's "
				"budget (--max-total); nothing was written"),
		  "%s", r.err);
	cr_expect(one_line(r.err), "not one line: %s", r.err);
	cr_expect(!path_exists(out, NULL), "%s was left behind", out);

	cr_assert_eq(mkdir(given, 0700), 0);
	tool_run(&r, (const char *[]){"unpem", "--max-total", "150", "-o", given, log, NULL});
	cr_expect_eq(r.exit_code, EXIT_PAST_CAP, "exit %d: %s", r.exit_code, r.err);
	cr_expect(dir_empty(given), "something was left in %s", given);

	/* Within the budget (which counts the manifest too), the same log is
	 * rebuilt. */
	tool_run(&r, (const char *[]){"unpem", "--max-total", "193", "-o", out, log, NULL});
	cr_expect_eq(r.exit_code, EXIT_OK, "exit %d: %s", r.exit_code, r.err);
	expect_verified(out, "a log within --max-total");
	rm_rf(d);
}

/* An honest small log still rebuilds byte for byte: plain and gzipped
 * blocks, a member in a subdirectory, an empty one, behind a log prefix. */
Test(unpem_limits, honest_small_log_round_trips, .timeout = 120)
{
	char d[256], log[300], out[300];
	make_tmpdir(d, sizeof(d));
	snprintf(log, sizeof(log), "%s/small.log", d);
	snprintf(out, sizeof(out), "%s/out", d);
	const struct craft_member m[] = {{"threads.txt", "thread 1\nthread 2\n", 18},
					 {"leak/open_fds-1/threads.txt", "t\n", 2},
					 {"empty.txt", "", 0}};
	struct zeros z;
	zeros_gzip(CHUNK, &z);
	char *manifest = craft_manifest("\"bundle_id\":\"" ID "\",", m, 3);
	cr_assert(manifest);
	/* The manifest lists a fourth member, the gzipped zeros. */
	char *tail = strrchr(manifest, ']');
	cr_assert(tail);
	char *full = NULL;
	cr_assert(asprintf(&full,
			   "%.*s,{\"name\":\"zeros.bin\",\"bytes\":%llu,\"sha256\":\"%s\"}%s",
			   (int)(tail - manifest), manifest, (unsigned long long)CHUNK, z.sha,
			   tail) > 0);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cr_assert(f);
	craft_pem_block(f, ID, 1, 5, "manifest.json", 13, full, strlen(full));
	for (size_t i = 0; i < 3; i++)
		craft_pem_block(f, ID, i + 2, 5, m[i].name, strlen(m[i].name), m[i].data, m[i].len);
	gzip_block(f, 5, 5, "zeros.bin", CHUNK, z.sha, z.gz, z.len);
	cr_assert_eq(fclose(f), 0);
	FILE *o = fopen(log, "we");
	cr_assert(o);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		fprintf(o, "2026-01-01T00:00:00Z stdout F %s\r\n", line);
	cr_assert_eq(fclose(o), 0);
	free(text);
	free(full);
	free(manifest);
	free(z.gz);

	struct tool_result r;
	tool_run(&r, (const char *[]){"unpem", "-o", out, log, NULL});
	cr_expect_eq(r.exit_code, EXIT_OK, "exit %d: %s", r.exit_code, r.err);
	expect_verified(out, "an honest small log");
	for (size_t i = 0; i < 3; i++) {
		char *got = read_in(out, m[i].name);
		cr_expect(got && memcmp(got, m[i].data, m[i].len) == 0 && strlen(got) == m[i].len,
			  "%s differs", m[i].name);
		free(got);
	}
	rm_rf(d);
}

/* The budget and the new exit status are where a user looks. */
Test(unpem_limits, budget_in_help)
{
	struct tool_result r;
	tool_run(&r, (const char *[]){"unpem", "--help", NULL});
	cr_expect_eq(r.exit_code, EXIT_OK);
	char want[64];
	snprintf(want, sizeof(want), "(default %llu MiB)",
		 (unsigned long long)(PEM_MAX_TOTAL_BYTES >> 20));
	cr_expect(strstr(r.out, "--max-total MIB") && strstr(r.out, want), "%s", r.out);
	cr_expect(strstr(r.out, " 17  a member is larger than the reader's limit"), "%s", r.out);
	tool_run(&r, (const char *[]){"unpem", "--max-total", "0", "-o", "/nonexistent/x", NULL});
	cr_expect_eq(r.exit_code, EXIT_USAGE, "exit %d: %s", r.exit_code, r.err);
}
