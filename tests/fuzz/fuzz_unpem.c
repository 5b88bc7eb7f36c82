/*
 * fuzz_unpem: the PEM decoder (pem_decode) on a log, and the writer of
 * what it decoded (pem_bundle_write) into a scratch directory.
 *
 * Input: the log text from the front. One byte from the tail picks the
 * case: decode the first bundle or only a fixed bundle id (the one the
 * seeds use); the output directory absent, an empty directory, or a
 * symlink to an empty directory beside it.
 * Invariants:
 *  - no crash, no leak, no hang; pem_decode returns 0, -ENOENT or -ENOMEM;
 *  - every kept file has a name pem_name_check passes; have[i] says
 *    whether files[i] is there; parts is within PEM_MAX_PARTS;
 *  - a refusal names what it refuses: a name refusal is pem_name_check's
 *    verdict on refused_name, a duplicate's two parts hold that name, a
 *    nested member lies under the other part's name; no refusal means no
 *    two present parts collide (checked here by brute force);
 *  - a block past a limit is told with its name, part and Size, which is
 *    past the limit it names (PEM_LIMITS_DEFAULT);
 *  - pem_bundle_write never writes outside its directory: after every
 *    input the scratch directory holds only that directory and the
 *    symlink's target, which stays empty; a refused, past-limit or
 *    incomplete bundle (-EINVAL, -EFBIG, -ENODATA) leaves no output at all; any failure leaves no
 *    manifest.json; success leaves exactly the decoded files, byte for
 *    byte, and nothing else;
 *  - what pem_bundle_write wrote and verifies is encoded again by
 *    pem_encode_bundle, which decodes to the same files.
 */
#include <dirent.h>

#include "tests/fuzz/fuzz_common.h"

#include "bundle/bundle.h"
#include "bundle/views/pem_codec.h"
#include "bundle/reader.h"

#define SEED_ID "b0000000-0000-4000-8000-000000000001"

static bool present_collide(const struct pem_bundle *b)
{
	for (size_t i = 0; i < b->parts; i++) {
		if (!b->have[i])
			continue;
		for (size_t j = 0; j < b->parts; j++) {
			if (i == j || !b->have[j])
				continue;
			const char *x = b->files[i].name, *y = b->files[j].name;
			size_t xl = strlen(x);
			if (strcmp(x, y) == 0 || (strncmp(x, y, xl) == 0 && y[xl] == '/'))
				return true;
		}
	}
	return false;
}

static void check_decoded(const struct pem_bundle *b)
{
	FUZZ_CHECK(b->bundle_id);
	FUZZ_CHECK(b->parts >= 1 && b->parts <= PEM_MAX_PARTS);
	for (size_t i = 0; i < b->parts; i++) {
		const struct pem_file *f = &b->files[i];
		if (!b->have[i]) {
			FUZZ_CHECK(!f->name && !f->data);
			continue;
		}
		FUZZ_CHECK(f->name && (f->data || f->len == 0));
		FUZZ_CHECK(pem_name_check(f->name, strlen(f->name)) == PEM_WRITABLE);
	}
	if (b->past != PEM_WITHIN) {
		const struct pem_limits *lim = &b->limits;
		FUZZ_CHECK(b->past_name && b->past_part >= 1 && b->past_part <= b->parts);
		FUZZ_CHECK(pem_name_check(b->past_name, strlen(b->past_name)) == PEM_WRITABLE);
		FUZZ_CHECK(!b->have[b->past_part - 1]);
		if (b->past == PEM_PAST_MEMBER)
			FUZZ_CHECK(b->past_size > (strcmp(b->past_name, "manifest.json") == 0
							   ? lim->manifest_bytes
							   : lim->member_bytes));
		else
			FUZZ_CHECK(b->past == PEM_PAST_TOTAL &&
				   b->past_size > lim->total_bytes - b->decoded_bytes);
	}
	FUZZ_CHECK(b->decoded_bytes <= b->limits.total_bytes);
	switch (b->refusal) {
	case PEM_WRITABLE:
		FUZZ_CHECK(!present_collide(b));
		return;
	case PEM_NAME_ESCAPES:
	case PEM_NAME_CONTROL:
	case PEM_NAME_INVALID:
		FUZZ_CHECK(b->refused_name && b->refused_part >= 1);
		FUZZ_CHECK(pem_name_check(b->refused_name, b->refused_len) == b->refusal);
		return;
	case PEM_NAME_DUPLICATE:
	case PEM_NAME_NESTED: {
		size_t p = b->refused_part, o = b->other_part;
		FUZZ_CHECK(b->refused_name && p >= 1 && p <= b->parts && o >= 1 && o <= b->parts);
		FUZZ_CHECK(p != o && b->have[p - 1] && b->have[o - 1]);
		const char *name = b->files[p - 1].name, *other = b->files[o - 1].name;
		FUZZ_CHECK(strcmp(b->refused_name, name) == 0 && b->refused_len == strlen(name));
		if (b->refusal == PEM_NAME_DUPLICATE) {
			FUZZ_CHECK(o < p && strcmp(name, other) == 0);
		} else {
			size_t ol = strlen(other);
			FUZZ_CHECK(strncmp(name, other, ol) == 0 && name[ol] == '/');
		}
		return;
	}
	}
	FUZZ_CHECK(!"an unknown refusal");
}

/* ---- what is on disk ---- */

static const struct pem_bundle *walk_b;
static const char *walk_root;
static size_t walk_files;

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_D || type == FTW_DP)
		return 0;
	FUZZ_CHECK(type == FTW_F && S_ISREG(st->st_mode)); /* no symlink, FIFO... */
	const char *rel = path + strlen(walk_root) + 1;
	for (size_t i = 0; i < walk_b->parts; i++) {
		const struct pem_file *f = &walk_b->files[i];
		if (strcmp(f->name, rel) != 0)
			continue;
		FUZZ_CHECK((size_t)st->st_size == f->len);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		FUZZ_CHECK(fd >= 0);
		uint8_t *got = malloc(f->len ? f->len : 1);
		FUZZ_CHECK(got);
		FUZZ_CHECK(read(fd, got, f->len) == (ssize_t)f->len);
		close(fd);
		FUZZ_CHECK(memcmp(got, f->data, f->len) == 0);
		free(got);
		walk_files++;
		return 0;
	}
	fprintf(stderr, "fuzz_unpem: %s is no decoded file\n", rel);
	FUZZ_CHECK(!"a file that was not decoded");
	return 0;
}

/* Exactly b's files under dir, and nothing else. */
static void check_written(const struct pem_bundle *b, const char *dir)
{
	walk_b = b;
	walk_root = dir;
	walk_files = 0;
	FUZZ_CHECK(nftw(dir, walk_one, 16, FTW_PHYS) == 0);
	FUZZ_CHECK(walk_files == b->parts);
}

static bool dir_is_empty(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool empty = true;
	FUZZ_CHECK(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	closedir(d);
	return empty;
}

/* The scratch directory holds out (if made) and sentinel, nothing else. */
static void check_nothing_outside(const char *scratch, const char *out_leaf)
{
	DIR *d = opendir(scratch);
	struct dirent *de;
	FUZZ_CHECK(d);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, "sentinel") || !strcmp(de->d_name, out_leaf))
			continue;
		fprintf(stderr, "fuzz_unpem: %s/%s was written outside\n", scratch, de->d_name);
		FUZZ_CHECK(!"a file outside the output directory");
	}
	closedir(d);
}

/* Encode the verified bundle in dir again and decode it: the same files. */
static void check_round_trip(const struct pem_bundle *b, const char *dir)
{
	struct bundle_reader *r;
	char *text = NULL;
	size_t len = 0;
	if (bundle_reader_open(dir, &r) < 0)
		return; /* out of memory: allocator_may_return_null */
	FILE *f = open_memstream(&text, &len);
	FUZZ_CHECK(f);
	int e = pem_encode_bundle(r, f);
	FUZZ_CHECK(fclose(f) == 0);
	bundle_reader_free(r);
	FUZZ_CHECK(e == 0 || e == -ENOMEM);
	struct pem_bundle *again;
	if (e == 0 && pem_decode(text, len, NULL, &again) == 0) {
		FUZZ_CHECK(again->parts == b->parts);
		/* A manifest may list one member twice and still verify:
		 * then the blocks repeat a name, which decoding refuses. */
		for (size_t i = 0; again->refusal == PEM_WRITABLE && i < again->parts; i++) {
			const struct pem_file *g = &again->files[i];
			bool same = false;
			FUZZ_CHECK(again->have[i]);
			for (size_t k = 0; k < b->parts && !same; k++)
				same = strcmp(b->files[k].name, g->name) == 0 &&
				       b->files[k].len == g->len &&
				       memcmp(b->files[k].data, g->data, g->len) == 0;
			FUZZ_CHECK(same);
		}
		pem_bundle_free(again);
	}
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned iteration;
	struct fz f = fz_init(data, size);
	unsigned flags = fz_u8(&f);
	const char *want = flags & 1 ? SEED_ID : NULL;
	unsigned out_kind = (flags >> 1) % 3; /* 0 absent, 1 empty dir, 2 symlink */
	char scratch[400], out[500], leaf[32], sentinel[500], manifest[600];
	struct pem_bundle *b;

	int e = pem_decode((const char *)data, f.n, want, &b);
	FUZZ_CHECK(e == 0 || e == -ENOENT || e == -ENOMEM);
	if (e < 0)
		return 0;
	check_decoded(b);

	/* One scratch directory per input: whatever an input leaves behind
	 * is seen by its own check, not blamed on the next one. */
	snprintf(scratch, sizeof(scratch), "%s/u%u", fz_dir(), iteration++);
	FUZZ_CHECK(mkdir(scratch, 0700) == 0);
	snprintf(sentinel, sizeof(sentinel), "%s/sentinel", scratch);
	FUZZ_CHECK(mkdir(sentinel, 0700) == 0);
	snprintf(leaf, sizeof(leaf), "out");
	snprintf(out, sizeof(out), "%s/%s", scratch, leaf);
	if (out_kind == 1)
		FUZZ_CHECK(mkdir(out, 0700) == 0);
	else if (out_kind == 2)
		FUZZ_CHECK(symlink(sentinel, out) == 0);

	bool complete = true;
	for (size_t i = 0; i < b->parts; i++)
		complete &= b->have[i];
	int r = pem_bundle_write(b, out);
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -EFBIG || r == -ENODATA || r == -ELOOP ||
		   r == -ENOMEM || r == -ENOSPC || r == -ENAMETOOLONG);
	if (b->refusal != PEM_WRITABLE)
		FUZZ_CHECK(r == -EINVAL);
	else if (b->past != PEM_WITHIN)
		FUZZ_CHECK(r == -EFBIG);
	else if (!complete)
		FUZZ_CHECK(r == -ENODATA);
	if (r == -EINVAL || r == -EFBIG || r == -ENODATA) /* refused before touching out */
		FUZZ_CHECK(out_kind == 0 ? access(out, F_OK) != 0
					 : out_kind == 2 || dir_is_empty(out));
	if (out_kind == 2)
		FUZZ_CHECK(r != 0 && (r == -ELOOP || r == -EINVAL || r == -EFBIG || r == -ENODATA ||
				      r == -ENOMEM));
	FUZZ_CHECK(dir_is_empty(sentinel));
	check_nothing_outside(scratch, leaf);
	snprintf(manifest, sizeof(manifest), "%s/manifest.json", out);
	if (r != 0) {
		FUZZ_CHECK(out_kind == 2 || access(manifest, F_OK) != 0);
	} else {
		check_written(b, out);
		if (bundle_verify(out, NULL, NULL) == 0)
			check_round_trip(b, out);
	}
	fz_rm_rf(scratch);
	pem_bundle_free(b);
	return 0;
}
