/*
 * fuzz_manifest_verify: bundle_verify and the bundle reader on a corrupted
 * bundle directory.
 *
 * Input: manifest.json text from the front. Parameters from the tail pick
 * which other entries the directory holds: members with the names the tool
 * writes (runtime.jsonl, threads.txt, a nested leak/ member), an unlisted
 * stray file, a symlink pointing out of the bundle, a FIFO, a
 * subdirectory; their contents are slices of the input (so the timeline
 * parser sees JSONL fragments of the manifest's own text).
 * Invariants:
 *  - no crash, no leak, no hang (a FIFO must not be opened for reading);
 *  - bundle_verify returns 0, 1, or -ENOENT/-EBADMSG/-EFBIG/-ENOMEM/-ELOOP;
 *    0 only if every entry we created is listed (it cannot be "intact" with
 *    a file the manifest does not name); every problem callback names a
 *    member and a problem;
 *  - the reader opens it iff the manifest is a JSON object, refuses member
 *    names that escape the directory (-EINVAL) and never reads the
 *    symlink's target; its timeline and profiles decode or fail cleanly.
 */
#include <sys/sysmacros.h>

#include "tests/fuzz/fuzz_common.h"

#include <cjson/cJSON.h>

#include "bundle/bundle.h"
#include "bundle/reader.h"

static const char *const member_names[] = {
	"runtime.jsonl", "threads.txt", "cpu.pprof", "leak/open_fds-1/threads.txt", "stray.tmp",
};

struct problems {
	size_t n;
};

static void on_problem(void *ctx, const char *member, const char *problem)
{
	struct problems *p = ctx;

	FUZZ_CHECK(member && problem && *problem);
	p->n++;
}

static bool listed(const cJSON *manifest, const char *name)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(manifest, "members"))
	{
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(m, "name");

		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return true;
	}
	return false;
}

/* Could name leave the bundle directory: absolute, or a ".." component? */
static bool escapes(const char *name)
{
	if (name[0] == '/')
		return true;
	for (const char *c = name; *c;) {
		size_t n = strcspn(c, "/");

		if (n == 2 && c[0] == '.' && c[1] == '.')
			return true;
		c += n;
		if (*c == '/')
			c++;
	}
	return false;
}

static void check_reader(const char *dir, const cJSON *manifest_json)
{
	struct bundle_reader *r;
	const struct bundle_timeline *tl;
	const struct bundle_profile *p;
	const cJSON *m;
	int e = bundle_reader_open(dir, &r);

	if (e < 0) {
		FUZZ_CHECK(e == -EBADMSG || e == -ENOENT || e == -ENOMEM || e == -EINVAL);
		FUZZ_CHECK(!cJSON_IsObject(manifest_json) || e != -EBADMSG);
		return;
	}
	FUZZ_CHECK(cJSON_IsObject(bundle_reader_manifest(r)));
	e = bundle_reader_timeline(r, &tl);
	if (e == 0) {
		for (size_t i = 0; i < tl->ncounters; i++) {
			FUZZ_CHECK(tl->counters[i].name && tl->counters[i].nvalid <= tl->npoints);
			for (size_t k = 0; k < tl->npoints; k++)
				(void)tl->counters[i].v[k];
		}
	}
	/* Whatever names the manifest lists, read and decode them. */
	cJSON_ArrayForEach(m,
			   cJSON_GetObjectItemCaseSensitive(bundle_reader_manifest(r), "members"))
	{
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(m, "name");
		const char *name;
		char *bytes;
		size_t len;

		if (!cJSON_IsString(n))
			continue;
		name = n->valuestring;
		FUZZ_CHECK(bundle_reader_has(r, name));
		e = bundle_reader_read(r, name, &bytes, &len);
		if (e == 0) {
			FUZZ_CHECK(bytes[len] == '\0');
			/* Never through the symlink to outside the bundle. */
			FUZZ_CHECK(strstr(name, "escape") == NULL || len == 0 ||
				   strcmp(bytes, "OUTSIDE") != 0);
			free(bytes);
		}
		if (escapes(name))
			FUZZ_CHECK(e == -EINVAL);
		e = bundle_reader_profile(r, name, &p);
		if (e == 0)
			(void)p->nsamples;
	}
	bundle_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned iteration;
	struct fz f = fz_init(data, size);
	char dir[400], path[600], outside[400];
	unsigned what = (unsigned)fz_u32(&f);
	size_t manifest_len = (size_t)fz_range(&f, 0, f.n);
	struct problems probs = {0};
	cJSON *manifest_json;
	bool wrote_unlisted = false;
	int r;

	snprintf(dir, sizeof(dir), "%s/b%u", fz_dir(), iteration++);
	FUZZ_CHECK(mkdir(dir, 0700) == 0);
	snprintf(outside, sizeof(outside), "%s/outside", fz_dir());
	fz_write_file(outside, "OUTSIDE", 7);

	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	if (!(what & 1u << 31))
		fz_write_file(path, data, manifest_len);
	manifest_json = cJSON_ParseWithLength((const char *)data, manifest_len);

	for (size_t i = 0; i < sizeof(member_names) / sizeof(member_names[0]); i++) {
		size_t off, len;

		if (!(what & 1u << i))
			continue;
		if (strchr(member_names[i], '/')) {
			snprintf(path, sizeof(path), "%s/leak", dir);
			mkdir(path, 0700);
			snprintf(path, sizeof(path), "%s/leak/open_fds-1", dir);
			mkdir(path, 0700);
		}
		off = (size_t)fz_range(&f, 0, size);
		len = (size_t)fz_range(&f, 0, size - off);
		snprintf(path, sizeof(path), "%s/%s", dir, member_names[i]);
		fz_write_file(path, data + off, len);
		wrote_unlisted |= !listed(manifest_json, member_names[i]);
	}
	if (what & 1u << 8) { /* a symlink out of the bundle */
		snprintf(path, sizeof(path), "%s/escape", dir);
		FUZZ_CHECK(symlink(outside, path) == 0);
		wrote_unlisted |= !listed(manifest_json, "escape");
	}
	if (what & 1u << 9) { /* a FIFO: opening it for reading would block */
		snprintf(path, sizeof(path), "%s/fifo", dir);
		FUZZ_CHECK(mkfifo(path, 0600) == 0);
		wrote_unlisted |= !listed(manifest_json, "fifo");
	}
	if (what & 1u << 10) { /* an empty subdirectory is not a member */
		snprintf(path, sizeof(path), "%s/empty", dir);
		FUZZ_CHECK(mkdir(path, 0700) == 0);
	}

	r = bundle_verify(dir, on_problem, &probs);
	FUZZ_CHECK(r == 0 || r == 1 || r == -ENOENT || r == -EBADMSG || r == -EFBIG ||
		   r == -ENOMEM || r == -ELOOP);
	if (r == 0)
		FUZZ_CHECK(!wrote_unlisted && probs.n == 0);
	if (r == 1)
		FUZZ_CHECK(probs.n > 0);
	FUZZ_CHECK(bundle_verify(dir, NULL, NULL) == r);

	check_reader(dir, manifest_json);

	cJSON_Delete(manifest_json);
	fz_rm_rf(dir);
	return 0;
}
