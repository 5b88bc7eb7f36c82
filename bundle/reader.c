/* reader: see reader.h. */
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "bundle/gzip.h"
#include "bundle/internal.h"
#include "bundle/profile.pb-c.h"
#include "bundle/strmap.h"

/* A decoded profile keeps its protobuf message alive: frame names and
 * labels point into its string table, which saves copying every string. */
struct cached_profile {
	char *name;
	Perftools__Profiles__Profile *pb;
	struct bundle_profile pub;
	struct bundle_sample *samples;
	struct bundle_frame *frames; /* all samples' frames, one block */
	char **synth;		     /* per location: its "0x..." name, made on first use */
	size_t nsynth;
	const char **types; /* value_type then value_unit */
	struct cached_profile *next;
};

/* What the const accessors note down (behind a pointer for them). */
struct refusal {
	struct bundle_refusal pub;
	char *member; /* pub.member */
	struct bundle_read_failure failure;
	char *failed; /* failure.member */
};

/* A member the manifest lists, and what it says the member is. */
struct listed {
	const char *name; /* in the manifest */
	struct bundle_member_want want;
	bool valid; /* a size and a sha256 were given */
};

struct bundle_reader {
	char *dir;
	int dirfd; /* dir, opened once: every member is read below it */
	cJSON *manifest;
	char *manifest_text; /* the bytes manifest was parsed from */
	size_t manifest_len;
	struct listed *listed; /* sorted by name (bundle_reader_has) */
	size_t nlisted;
	uint64_t limit[BUNDLE_NCAPS];
	/* Bytes the decoded profiles take (protobuf-c's allocations as asked
	 * plus malloc's overhead, and our arrays), against
	 * BUNDLE_CAP_DECODED_BYTES. */
	uint64_t decoded;
	bool over_budget; /* the protobuf allocator refused one */
	/* Behind a pointer so that the const accessors can record a refusal
	 * or a failure too (bundle_reader_read). */
	struct refusal *refused;
	struct cached_profile *profiles;
	bool timeline_loaded;
	struct bundle_timeline tl;
	double *tl_t;
	struct bundle_counter *tl_counters;
};

static const struct bundle_cap_info caps[BUNDLE_NCAPS] = {
	[BUNDLE_CAP_MANIFEST_BYTES] = {BUNDLE_MAX_MANIFEST_BYTES, true, "MiB on disk",
				       "manifest.json"},
	[BUNDLE_CAP_MEMBER_BYTES] = {BUNDLE_MAX_MEMBER_BYTES, true, "MiB on disk", "any member"},
	[BUNDLE_CAP_INFLATED_BYTES] = {BUNDLE_MAX_INFLATED_BYTES, true, "MiB once decompressed",
				       "a profile"},
	[BUNDLE_CAP_SAMPLES] = {BUNDLE_MAX_SAMPLES, false, "samples", "a profile"},
	[BUNDLE_CAP_LOCATIONS] = {BUNDLE_MAX_LOCATIONS, false, "locations", "a profile"},
	[BUNDLE_CAP_FUNCTIONS] = {BUNDLE_MAX_FUNCTIONS, false, "functions", "a profile"},
	[BUNDLE_CAP_FRAMES] = {BUNDLE_MAX_FRAMES, false, "stack frames, all samples together",
			       "a profile"},
	[BUNDLE_CAP_DECODED_BYTES] = {BUNDLE_MAX_DECODED_BYTES, true,
				      "MiB of memory decoded, with the other profiles",
				      "a profile"},
	[BUNDLE_CAP_COUNTERS] = {BUNDLE_MAX_COUNTERS, false, "counters", "the timeline"},
	[BUNDLE_CAP_POINTS] = {BUNDLE_MAX_POINTS, false, "points (lines)", "the timeline"},
	[BUNDLE_CAP_VALUES] = {BUNDLE_MAX_VALUES, false, "values (counters x points)",
			       "the timeline"},
	[BUNDLE_CAP_LINE_BYTES] = {BUNDLE_MAX_LINE_BYTES, true, "MiB in one line", "the timeline"},
};

const struct bundle_cap_info *bundle_cap_info(enum bundle_cap cap)
{
	return (unsigned)cap < BUNDLE_NCAPS ? &caps[cap] : NULL;
}

void bundle_reader_set_limit(struct bundle_reader *r, enum bundle_cap cap, uint64_t limit)
{
	if ((unsigned)cap < BUNDLE_NCAPS)
		r->limit[cap] = limit;
}

const struct bundle_refusal *bundle_reader_refusal(const struct bundle_reader *r)
{
	return r->refused->member ? &r->refused->pub : NULL;
}

/* Record that member was refused for cap (the first refusal is the one
 * told); returns BUNDLE_PAST_CAP, or -ENOMEM if even the name cannot be
 * kept. */
static int refuse(const struct bundle_reader *r, const char *member, enum bundle_cap cap)
{
	if (!r->refused->member) {
		r->refused->member = strdup(member);
		if (!r->refused->member)
			return -ENOMEM;
		r->refused->pub = (struct bundle_refusal){.member = r->refused->member, .cap = cap};
	}
	return BUNDLE_PAST_CAP;
}

const struct bundle_read_failure *bundle_reader_failure(const struct bundle_reader *r)
{
	return r->refused->failed ? &r->refused->failure : NULL;
}

/* Note that listed member could not be read (the first one is told);
 * returns e. Out of memory and caps are told otherwise. */
static int failed(const struct bundle_reader *r, const char *member, int e)
{
	if (e == -ENOMEM || e == BUNDLE_PAST_CAP || r->refused->failed)
		return e;
	r->refused->failed = strdup(member);
	if (r->refused->failed)
		r->refused->failure =
			(struct bundle_read_failure){.member = r->refused->failed, .error = e};
	return e;
}

/* Member names come from a manifest that may be hostile: never let one
 * escape the bundle directory. */
static bool name_is_safe(const char *name)
{
	if (!name || !*name || name[0] == '/')
		return false;
	const char *p = name;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (len == 0 || (len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += len;
		if (*p == '/')
			p++;
		if (slash && !*p)
			return false;
	}
	return true;
}

/* Open path for reading, for files that are not members (members go
 * through bundle_member_open): a FIFO must not hang us, a symlink at the
 * last component is not followed. -EINVAL if it is not a regular file. */
static int open_regular_at(int dirfd, const char *path, struct stat *st)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int bundle_read_file_at(int dirfd, const char *path, size_t max_len, char **ret, size_t *ret_len)
{
	struct stat st;
	int fd = open_regular_at(dirfd, path, &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > max_len) {
		close(fd);
		return -EFBIG;
	}
	int e = bundle_read_fd(fd, (size_t)st.st_size, max_len, NULL, ret, ret_len);
	close(fd);
	return e;
}

static int cmp_listed(const void *a, const void *b)
{
	return strcmp(((const struct listed *)a)->name, ((const struct listed *)b)->name);
}

/* The members and what the manifest says of each, sorted by name, so that
 * finding one is a bsearch. */
static int index_members(struct bundle_reader *r)
{
	const cJSON *members = cJSON_GetObjectItemCaseSensitive(r->manifest, "members");
	size_t n = (size_t)cJSON_GetArraySize(members);
	const cJSON *m;
	r->listed = calloc(n + 1, sizeof(*r->listed));
	if (!r->listed)
		return -ENOMEM;
	cJSON_ArrayForEach(m, members)
	{
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(m, "name");
		const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(m, "bytes");
		const cJSON *sha = cJSON_GetObjectItemCaseSensitive(m, "sha256");
		if (!cJSON_IsString(nm))
			continue;
		struct listed *l = &r->listed[r->nlisted++];
		l->name = nm->valuestring;
		/* A size that is no byte count can match no file. */
		l->valid = cJSON_IsNumber(bytes) && cJSON_IsString(sha) && bytes->valuedouble >= 0 &&
			   bytes->valuedouble < 0x1p63 &&
			   bytes->valuedouble == (double)(uint64_t)bytes->valuedouble;
		if (l->valid)
			l->want = (struct bundle_member_want){
				.bytes = (uint64_t)bytes->valuedouble, .sha256 = sha->valuestring};
	}
	qsort(r->listed, r->nlisted, sizeof(*r->listed), cmp_listed);
	return 0;
}

static const struct listed *find_listed(const struct bundle_reader *r, const char *name)
{
	struct listed key = {.name = name};
	return bsearch(&key, r->listed, r->nlisted, sizeof(*r->listed), cmp_listed);
}

int bundle_reader_open(const char *dir, struct bundle_reader **ret)
{
	struct bundle_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->dirfd = -1;
	r->dir = strdup(dir);
	r->refused = calloc(1, sizeof(*r->refused));
	if (!r->dir || !r->refused) {
		bundle_reader_free(r);
		return -ENOMEM;
	}
	for (size_t i = 0; i < BUNDLE_NCAPS; i++)
		r->limit[i] = caps[i].limit;
	/* The path the user typed resolves normally up to its last
	 * component, which must be the bundle itself: every read from here
	 * on is relative to this one directory. */
	r->dirfd = bundle_open_dir_nofollow(AT_FDCWD, dir);
	if (r->dirfd < 0) {
		int e = r->dirfd;
		bundle_reader_free(r);
		return e;
	}
	int e = bundle_member_read(r->dirfd, BUNDLE_MANIFEST, r->limit[BUNDLE_CAP_MANIFEST_BYTES],
				   NULL, &r->manifest_text, &r->manifest_len);
	if (e < 0) {
		bundle_reader_free(r);
		/* -EFBIG is BUNDLE_PAST_CAP; a FIFO or a directory is no
		 * manifest. */
		return e == -EINVAL ? -EBADMSG : e;
	}
	r->manifest = cJSON_ParseWithLength(r->manifest_text, r->manifest_len);
	if (!cJSON_IsObject(r->manifest)) {
		bundle_reader_free(r);
		return -EBADMSG;
	}
	if (index_members(r) < 0) {
		bundle_reader_free(r);
		return -ENOMEM;
	}
	*ret = r;
	return 0;
}

static void profile_free(struct cached_profile *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nsynth; i++)
		free(c->synth[i]);
	free(c->synth);
	free(c->frames);
	free(c->samples);
	free(c->types);
	free(c->name);
	if (c->pb)
		perftools__profiles__profile__free_unpacked(c->pb, NULL);
	free(c);
}

void bundle_reader_free(struct bundle_reader *r)
{
	if (!r)
		return;
	while (r->profiles) {
		struct cached_profile *n = r->profiles->next;
		profile_free(r->profiles);
		r->profiles = n;
	}
	for (size_t i = 0; i < r->tl.ncounters; i++) {
		free((char *)r->tl_counters[i].name);
		free((double *)r->tl_counters[i].v);
	}
	free(r->tl_counters);
	free(r->tl_t);
	free(r->listed);
	if (r->refused) {
		free(r->refused->member);
		free(r->refused->failed);
	}
	free(r->refused);
	cJSON_Delete(r->manifest);
	free(r->manifest_text);
	if (r->dirfd >= 0)
		close(r->dirfd);
	free(r->dir);
	free(r);
}

const char *bundle_reader_dir(const struct bundle_reader *r)
{
	return r->dir;
}

const cJSON *bundle_reader_manifest(const struct bundle_reader *r)
{
	return r->manifest;
}

int bundle_reader_dirfd(const struct bundle_reader *r)
{
	return r->dirfd;
}

bool bundle_reader_has(const struct bundle_reader *r, const char *name)
{
	return find_listed(r, name) != NULL;
}

/* The listed member name as it may be read: a safe name, listed with a
 * size and a sha256. */
static int member_want(const struct bundle_reader *r, const char *name,
		       const struct bundle_member_want **ret)
{
	if (!name_is_safe(name))
		return -EINVAL;
	const struct listed *l = find_listed(r, name);
	if (!l)
		return -ENOENT; /* nothing to check it against */
	if (!l->valid)
		return failed(r, name, -EBADMSG);
	*ret = &l->want;
	return 0;
}

int bundle_reader_read(const struct bundle_reader *r, const char *name, char **ret, size_t *ret_len)
{
	if (strcmp(name, BUNDLE_MANIFEST) == 0) {
		/* The bytes that were parsed, not the file again: what is
		 * shown or shipped as the manifest is the one obeyed. */
		char *copy = malloc(r->manifest_len + 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, r->manifest_text, r->manifest_len + 1);
		*ret = copy;
		*ret_len = r->manifest_len;
		return 0;
	}
	const struct bundle_member_want *want;
	int e = member_want(r, name, &want);
	if (e < 0)
		return e;
	e = bundle_member_read(r->dirfd, name, r->limit[BUNDLE_CAP_MEMBER_BYTES], want, ret,
			       ret_len);
	return e == -EFBIG ? refuse(r, name, BUNDLE_CAP_MEMBER_BYTES) : e < 0 ? failed(r, name, e) : 0;
}

/* ---- profiles ---- */

/*
 * Before protobuf-c allocates anything: walk the Profile's top-level fields
 * on the wire and count samples, locations, functions and, inside each
 * sample, location ids (the frames before inline expansion). One pass over
 * bytes already in memory; a bomb of a million tiny samples is refused
 * here, at no cost. Anything that does not parse is left for
 * protobuf-c to reject.
 */
struct wire_counts {
	uint64_t samples, locations, functions, location_ids;
};

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

/* Skip one field's payload of wire type wt; false if it runs off the end. */
static bool skip_field(const uint8_t **p, const uint8_t *end, unsigned wt, const uint8_t **ret_body,
		       uint64_t *ret_len)
{
	uint64_t v;
	switch (wt) {
	case 0:
		return varint(p, end, &v);
	case 1:
		if (end - *p < 8)
			return false;
		*p += 8;
		return true;
	case 2:
		if (!varint(p, end, &v) || v > (uint64_t)(end - *p))
			return false;
		if (ret_body) {
			*ret_body = *p;
			*ret_len = v;
		}
		*p += v;
		return true;
	case 5:
		if (end - *p < 4)
			return false;
		*p += 4;
		return true;
	}
	return false;
}

/* Location ids of one Sample message: packed (field 1, wire type 2: one id
 * per byte without the continuation bit) or not (wire type 0). */
static uint64_t sample_location_ids(const uint8_t *p, const uint8_t *end)
{
	uint64_t n = 0, tag, len;
	const uint8_t *body;
	while (p < end && varint(&p, end, &tag)) {
		unsigned wt = (unsigned)(tag & 7);
		body = NULL;
		if (!skip_field(&p, end, wt, &body, &len))
			break;
		if (tag >> 3 != 1)
			continue;
		if (wt == 0)
			n++;
		for (uint64_t i = 0; body && i < len; i++)
			n += !(body[i] & 0x80);
	}
	return n;
}

static void wire_count(const uint8_t *p, size_t size, struct wire_counts *c)
{
	const uint8_t *end = p + size, *body;
	uint64_t tag, len;
	memset(c, 0, sizeof(*c));
	while (p < end && varint(&p, end, &tag)) {
		unsigned wt = (unsigned)(tag & 7);
		body = NULL;
		if (!skip_field(&p, end, wt, &body, &len))
			return;
		switch (tag >> 3) {
		case 2:
			c->samples++;
			if (body)
				c->location_ids += sample_location_ids(body, body + len);
			break;
		case 4:
			c->locations++;
			break;
		case 5:
			c->functions++;
			break;
		}
	}
}

/* protobuf-c's allocations, charged to the reader's budget for decoded
 * profiles: whatever a hostile message holds (labels, lines, unknown
 * fields, empty strings by the million), unpacking it stops at the cap.
 * 16 bytes a call is malloc's own overhead, which is what makes a million
 * small messages cost more than their sizes say. */
static void *budget_alloc(void *data, size_t size)
{
	struct bundle_reader *r = data;
	uint64_t cost = (uint64_t)size + 16;
	if (r->decoded + cost > r->limit[BUNDLE_CAP_DECODED_BYTES]) {
		r->over_budget = true;
		return NULL;
	}
	void *p = malloc(size);
	if (p)
		r->decoded += cost;
	return p;
}

static void budget_free(void *data, void *p)
{
	(void)data;
	free(p);
}

/* Charge our own arrays of count items of size bytes; false past the cap. */
static bool charge(struct bundle_reader *r, size_t count, size_t size)
{
	uint64_t cost = (uint64_t)count * size + 16;
	if (count && cost / count < size)
		return false;
	if (r->decoded + cost > r->limit[BUNDLE_CAP_DECODED_BYTES])
		return false;
	r->decoded += cost;
	return true;
}

static const char *pstr(const Perftools__Profiles__Profile *p, int64_t idx)
{
	if (idx < 0 || (size_t)idx >= p->n_string_table)
		return "";
	return p->string_table[idx];
}

/* Locations and functions by id. Ours are dense and 1-based (id i at
 * position i-1), which needs no index; anything else is sorted once and
 * searched, so that sparse ids cost O(log n), not a scan per frame. The
 * first of duplicate ids wins, as it did. */
struct id_pos {
	uint64_t id;
	size_t pos;
};

struct id_index {
	struct id_pos *v; /* NULL when dense */
	size_t n;
};

static int cmp_id_pos(const void *a, const void *b)
{
	const struct id_pos *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* ids(i) is the id of item i. */
static int id_index_build(struct id_index *x, size_t n, uint64_t (*ids)(const void *, size_t),
			  const void *items)
{
	bool dense = true;
	x->n = n;
	x->v = NULL;
	for (size_t i = 0; i < n && dense; i++)
		dense = ids(items, i) == i + 1;
	if (dense)
		return 0;
	x->v = malloc((n ? n : 1) * sizeof(*x->v));
	if (!x->v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		x->v[i] = (struct id_pos){ids(items, i), i};
	qsort(x->v, n, sizeof(*x->v), cmp_id_pos);
	return 0;
}

/* Position of id, or SIZE_MAX. */
static size_t id_index_find(const struct id_index *x, uint64_t id)
{
	if (!x->v)
		return id >= 1 && id <= x->n ? (size_t)(id - 1) : SIZE_MAX;
	size_t lo = 0, hi = x->n;
	while (lo < hi) { /* the first entry >= id */
		size_t mid = lo + (hi - lo) / 2;
		if (x->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x->n && x->v[lo].id == id ? x->v[lo].pos : SIZE_MAX;
}

static uint64_t loc_id(const void *items, size_t i)
{
	return ((Perftools__Profiles__Location *const *)items)[i]->id;
}

static uint64_t fn_id(const void *items, size_t i)
{
	return ((Perftools__Profiles__Function *const *)items)[i]->id;
}

struct flatten_ctx {
	struct cached_profile *c;
	struct bundle_reader *r;
	struct id_index locs, fns;
};

static const Perftools__Profiles__Location *find_loc(const struct flatten_ctx *x, uint64_t id,
						     size_t *ret_pos)
{
	size_t pos = id_index_find(&x->locs, id);
	*ret_pos = pos;
	return pos == SIZE_MAX ? NULL : x->c->pb->location[pos];
}

static const Perftools__Profiles__Function *find_fn(const struct flatten_ctx *x, uint64_t id)
{
	size_t pos = id_index_find(&x->fns, id);
	return pos == SIZE_MAX ? NULL : x->c->pb->function[pos];
}

static size_t loc_frames(const Perftools__Profiles__Location *l)
{
	return l && l->n_line ? l->n_line : 1;
}

static int flatten(struct flatten_ctx *x)
{
	struct cached_profile *c = x->c;
	const Perftools__Profiles__Profile *p = c->pb;
	const char *name = c->name;
	uint64_t total = 0, max_frames = x->r->limit[BUNDLE_CAP_FRAMES];
	size_t pos;
	for (size_t i = 0; i < p->n_sample; i++)
		for (size_t j = 0; j < p->sample[i]->n_location_id; j++) {
			const Perftools__Profiles__Location *l =
				find_loc(x, p->sample[i]->location_id[j], &pos);
			if (!l)
				return -EBADMSG;
			total += loc_frames(l);
			if (total > max_frames)
				return refuse(x->r, name, BUNDLE_CAP_FRAMES);
		}
	if (!charge(x->r, p->n_sample + 1, sizeof(*c->samples)) ||
	    !charge(x->r, (size_t)total + 1, sizeof(*c->frames)) ||
	    !charge(x->r, p->n_location + 1, sizeof(*c->synth)))
		return refuse(x->r, name, BUNDLE_CAP_DECODED_BYTES);
	c->samples = calloc(p->n_sample ? p->n_sample : 1, sizeof(*c->samples));
	c->frames = calloc(total ? (size_t)total : 1, sizeof(*c->frames));
	c->types = calloc(2 * (p->n_sample_type + 1), sizeof(*c->types));
	c->synth = calloc(p->n_location + 1, sizeof(*c->synth));
	if (!c->samples || !c->frames || !c->types || !c->synth)
		return -ENOMEM;
	c->nsynth = p->n_location;
	for (size_t i = 0; i < p->n_sample_type; i++) {
		c->types[i] = pstr(p, p->sample_type[i]->type);
		c->types[p->n_sample_type + i] = pstr(p, p->sample_type[i]->unit);
	}
	struct bundle_frame *f = c->frames;
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		struct bundle_sample *o = &c->samples[i];
		if (s->n_value < p->n_sample_type)
			return -EBADMSG;
		o->frames = f;
		o->values = s->value;
		o->tid = -1;
		for (size_t j = 0; j < s->n_location_id; j++) {
			const Perftools__Profiles__Location *l =
				find_loc(x, s->location_id[j], &pos);
			if (!l->n_line) {
				/* One name per location, however many samples
				 * pass through it. */
				if (!c->synth[pos] &&
				    asprintf(&c->synth[pos], "0x%" PRIx64, l->address) < 0) {
					c->synth[pos] = NULL;
					return -ENOMEM;
				}
				*f++ = (struct bundle_frame){.function = c->synth[pos],
							     .file = "",
							     .address = l->address};
				continue;
			}
			for (size_t k = 0; k < l->n_line; k++) {
				const Perftools__Profiles__Function *fn =
					find_fn(x, l->line[k]->function_id);
				*f++ = (struct bundle_frame){
					.function = fn ? pstr(p, fn->name) : "?",
					.file = fn ? pstr(p, fn->filename) : "",
					.line = l->line[k]->line,
					.address = l->address,
					.inlined = k + 1 < l->n_line,
				};
			}
		}
		o->nframes = (size_t)(f - o->frames);
		for (size_t j = 0; j < s->n_label; j++) {
			const char *key = pstr(p, s->label[j]->key);
			if (strcmp(key, "tid") == 0)
				o->tid = s->label[j]->str
						 ? strtoll(pstr(p, s->label[j]->str), NULL, 10)
						 : s->label[j]->num;
			else if (strcmp(key, "thread_comm") == 0)
				o->thread_comm = pstr(p, s->label[j]->str);
			else if (strcmp(key, "state") == 0)
				o->state = pstr(p, s->label[j]->str);
		}
	}
	c->pub = (struct bundle_profile){
		.nvalues = p->n_sample_type,
		.value_type = c->types,
		.value_unit = c->types + p->n_sample_type,
		.samples = c->samples,
		.nsamples = p->n_sample,
		.time_nanos = p->time_nanos,
		.duration_nanos = p->duration_nanos,
		.period = p->period,
		.period_type = p->period_type ? pstr(p, p->period_type->type) : "",
	};
	return 0;
}

/* Refuse what the wire says is past a count cap, before unpacking. */
static int check_counts(struct bundle_reader *r, const char *name, const uint8_t *raw, size_t len)
{
	struct wire_counts w;
	wire_count(raw, len, &w);
	if (w.samples > r->limit[BUNDLE_CAP_SAMPLES])
		return refuse(r, name, BUNDLE_CAP_SAMPLES);
	if (w.locations > r->limit[BUNDLE_CAP_LOCATIONS])
		return refuse(r, name, BUNDLE_CAP_LOCATIONS);
	if (w.functions > r->limit[BUNDLE_CAP_FUNCTIONS])
		return refuse(r, name, BUNDLE_CAP_FUNCTIONS);
	if (w.location_ids > r->limit[BUNDLE_CAP_FRAMES])
		return refuse(r, name, BUNDLE_CAP_FRAMES);
	return 0;
}

static int decode_profile(struct bundle_reader *r, struct cached_profile *c, const uint8_t *raw,
			  size_t len)
{
	ProtobufCAllocator alloc = {
		.alloc = budget_alloc, .free = budget_free, .allocator_data = r};
	int e = check_counts(r, c->name, raw, len);
	if (e < 0)
		return e;
	r->over_budget = false;
	c->pb = perftools__profiles__profile__unpack(&alloc, len, raw);
	if (!c->pb)
		return r->over_budget ? refuse(r, c->name, BUNDLE_CAP_DECODED_BYTES) : -EBADMSG;
	/* Counted again on what protobuf-c made of it: the wire walk stops
	 * at the first thing it cannot parse. */
	const Perftools__Profiles__Profile *p = c->pb;
	if (p->n_sample > r->limit[BUNDLE_CAP_SAMPLES])
		return refuse(r, c->name, BUNDLE_CAP_SAMPLES);
	if (p->n_location > r->limit[BUNDLE_CAP_LOCATIONS])
		return refuse(r, c->name, BUNDLE_CAP_LOCATIONS);
	if (p->n_function > r->limit[BUNDLE_CAP_FUNCTIONS])
		return refuse(r, c->name, BUNDLE_CAP_FUNCTIONS);
	struct flatten_ctx x = {.c = c, .r = r};
	e = id_index_build(&x.locs, p->n_location, loc_id, p->location);
	if (e == 0)
		e = id_index_build(&x.fns, p->n_function, fn_id, p->function);
	if (e == 0)
		e = flatten(&x);
	free(x.locs.v);
	free(x.fns.v);
	return e;
}

int bundle_reader_profile(struct bundle_reader *r, const char *name,
			  const struct bundle_profile **ret)
{
	for (struct cached_profile *c = r->profiles; c; c = c->next)
		if (strcmp(c->name, name) == 0) {
			*ret = &c->pub;
			return 0;
		}
	char *gz;
	size_t gzlen;
	int e = bundle_reader_read(r, name, &gz, &gzlen);
	if (e < 0)
		return e;
	uint8_t *raw;
	size_t rawlen;
	e = bundle_gunzip(gz, gzlen, r->limit[BUNDLE_CAP_INFLATED_BYTES], &raw, &rawlen);
	free(gz);
	if (e == -EFBIG)
		return refuse(r, name, BUNDLE_CAP_INFLATED_BYTES);
	if (e < 0)
		return e;
	struct cached_profile *c = calloc(1, sizeof(*c));
	if (!c || !(c->name = strdup(name))) {
		free(c);
		free(raw);
		return -ENOMEM;
	}
	/* What a failed decode charged is given back: it is freed. */
	uint64_t decoded_before = r->decoded;
	e = decode_profile(r, c, raw, rawlen);
	free(raw);
	if (e < 0) {
		profile_free(c);
		r->decoded = decoded_before;
		return e;
	}
	c->next = r->profiles;
	r->profiles = c;
	*ret = &c->pub;
	return 0;
}

/* ---- timeline ---- */

int bundle_parse_time(const char *s, double *ret)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		return -EINVAL;
	double frac = 0;
	if (*end == '.') {
		char *e2;
		frac = strtod(end, &e2);
		end = e2;
	}
	if (*end != 'Z' || end[1])
		return -EINVAL;
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -EINVAL;
	*ret = (double)t + frac;
	return 0;
}

struct tl_build {
	struct bundle_reader *r;
	const char *member;
	size_t cap_points, cap_counters;
	struct strmap by_name; /* counter name -> index */
};

static int tl_counter(struct tl_build *b, const char *name, size_t *ret)
{
	struct bundle_reader *r = b->r;
	struct bundle_timeline *tl = &r->tl;
	size_t *known = strmap_find(&b->by_name, name);
	if (known) {
		*ret = *known;
		return 0;
	}
	/* The point being parsed is tl->npoints: it counts. */
	if (tl->ncounters + 1 > r->limit[BUNDLE_CAP_COUNTERS])
		return refuse(r, b->member, BUNDLE_CAP_COUNTERS);
	if ((uint64_t)(tl->ncounters + 1) * (tl->npoints + 1) > r->limit[BUNDLE_CAP_VALUES])
		return refuse(r, b->member, BUNDLE_CAP_VALUES);
	if (tl->ncounters == b->cap_counters) {
		size_t nc = b->cap_counters ? b->cap_counters * 2 : 32;
		struct bundle_counter *cs = realloc(r->tl_counters, nc * sizeof(*cs));
		if (!cs)
			return -ENOMEM;
		r->tl_counters = cs;
		b->cap_counters = nc;
	}
	double *v = malloc((b->cap_points ? b->cap_points : 1) * sizeof(*v));
	char *n = strdup(name);
	if (!v || !n || strmap_put(&b->by_name, n, tl->ncounters, NULL) < 0) {
		free(v);
		free(n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < b->cap_points; i++)
		v[i] = NAN;
	r->tl_counters[tl->ncounters] = (struct bundle_counter){.name = n, .v = v};
	*ret = tl->ncounters++;
	return 0;
}

static int tl_object(struct tl_build *b, const cJSON *o, const char *prefix, size_t point)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, o)
	{
		char name[256];
		if (!it->string || (!*prefix && strcmp(it->string, "t") == 0))
			continue;
		snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "", it->string);
		if (cJSON_IsObject(it)) {
			int e = tl_object(b, it, name, point);
			if (e < 0)
				return e;
			continue;
		}
		if (!cJSON_IsNumber(it))
			continue;
		size_t idx;
		int e = tl_counter(b, name, &idx);
		if (e < 0)
			return e;
		double v = it->valuedouble;
		((double *)b->r->tl_counters[idx].v)[point] = v < 0 ? NAN : v;
	}
	return 0;
}

static int tl_grow(struct tl_build *b)
{
	size_t np = b->cap_points ? b->cap_points * 2 : 64;
	double *t = realloc(b->r->tl_t, np * sizeof(*t));
	if (!t)
		return -ENOMEM;
	b->r->tl_t = t;
	for (size_t i = 0; i < b->r->tl.ncounters; i++) {
		double *v = realloc((double *)b->r->tl_counters[i].v, np * sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (size_t k = b->cap_points; k < np; k++)
			v[k] = NAN;
		b->r->tl_counters[i].v = v;
	}
	b->cap_points = np;
	return 0;
}

static int tl_line(struct tl_build *b, const char *line, size_t len)
{
	struct bundle_reader *r = b->r;
	cJSON *o = cJSON_ParseWithLength(line, len);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "t");
	double ts;
	int e = 0;
	if (!cJSON_IsObject(o) || !cJSON_IsString(t) ||
	    bundle_parse_time(t->valuestring, &ts) < 0) {
		r->tl.bad_lines++;
		cJSON_Delete(o);
		return 0;
	}
	if (r->tl.npoints + 1 > r->limit[BUNDLE_CAP_POINTS])
		e = refuse(r, b->member, BUNDLE_CAP_POINTS);
	else if ((uint64_t)r->tl.ncounters * (r->tl.npoints + 1) > r->limit[BUNDLE_CAP_VALUES])
		e = refuse(r, b->member, BUNDLE_CAP_VALUES);
	else if (r->tl.npoints == b->cap_points)
		e = tl_grow(b);
	if (e == 0) {
		r->tl_t[r->tl.npoints] = ts;
		/* A counter first seen on a later line needs NANs before it:
		 * tl_counter fills a new column with NAN up to cap_points. */
		e = tl_object(b, o, "", r->tl.npoints);
	}
	cJSON_Delete(o);
	if (e == 0)
		r->tl.npoints++;
	return e;
}

/* Feed fd's lines to tl_line, never holding more than one line (at most
 * BUNDLE_CAP_LINE_BYTES) and a read buffer: the file's size does not
 * matter, only what it holds. Empty lines are skipped, as blank lines
 * are no points. Every byte read goes through d. */
static int tl_read(struct tl_build *b, int fd, struct bundle_digest *d)
{
	const size_t chunk = 64 << 10;
	size_t max_line = (size_t)b->r->limit[BUNDLE_CAP_LINE_BYTES];
	size_t cap = max_line + chunk, start = 0, end = 0;
	char *buf = malloc(cap + 1);
	int e = 0;
	bool eof = false;
	if (!buf)
		return -ENOMEM;
	while (e == 0) {
		char *nl = memchr(buf + start, '\n', end - start);
		if (!nl && !eof) {
			if (end - start > max_line) {
				e = refuse(b->r, b->member, BUNDLE_CAP_LINE_BYTES);
				break;
			}
			memmove(buf, buf + start, end - start);
			end -= start;
			start = 0;
			ssize_t k = read(fd, buf + end, cap - end);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				e = -errno;
				break;
			}
			eof = k == 0;
			bundle_digest_update(d, buf + end, (size_t)k);
			end += (size_t)k;
			continue;
		}
		size_t len = nl ? (size_t)(nl - (buf + start)) : end - start;
		if (len > max_line) {
			e = refuse(b->r, b->member, BUNDLE_CAP_LINE_BYTES);
			break;
		}
		if (len) {
			buf[start + len] = '\0';
			e = tl_line(b, buf + start, len);
		}
		start += len + (nl ? 1 : 0);
		if (!nl)
			break; /* the last line, without its newline */
	}
	/* The rest of a file that ends in a line past the caps is not read:
	 * the caps' error stands, and nothing of it is kept. */
	free(buf);
	return e;
}

/* Forget a timeline that was not (wholly) built, so that a later call
 * starts from nothing. */
static void tl_reset(struct bundle_reader *r)
{
	for (size_t i = 0; i < r->tl.ncounters; i++) {
		free((char *)r->tl_counters[i].name);
		free((double *)r->tl_counters[i].v);
	}
	free(r->tl_counters);
	free(r->tl_t);
	r->tl_counters = NULL;
	r->tl_t = NULL;
	r->tl = (struct bundle_timeline){0};
}

int bundle_reader_timeline(struct bundle_reader *r, const struct bundle_timeline **ret)
{
	if (r->timeline_loaded) {
		*ret = &r->tl;
		return 0;
	}
	const char *member = "runtime.jsonl";
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(r->manifest, "timeline"), "member");
	if (cJSON_IsString(m))
		member = m->valuestring;
	const struct bundle_member_want *want;
	int e = member_want(r, member, &want);
	if (e < 0)
		return e;
	int fd = bundle_member_open(r->dirfd, member, NULL);
	if (fd < 0)
		return failed(r, member, fd);
	struct tl_build b = {.r = r, .member = member};
	struct bundle_digest d;
	bundle_digest_init(&d);
	e = tl_read(&b, fd, &d);
	close(fd);
	strmap_release(&b.by_name);
	/* Parsed as it streamed, handed out only if what streamed is what
	 * the manifest hashed. */
	if (e == 0 && !bundle_digest_matches(&d, want))
		e = failed(r, member, BUNDLE_ALTERED);
	else if (e < 0 && e != BUNDLE_PAST_CAP)
		e = failed(r, member, e);
	if (e < 0) {
		tl_reset(r);
		return e;
	}
	/* Drop counters that never had a value (goroutines of a C target):
	 * they would only be flat lines at "n/a". */
	size_t keep = 0;
	for (size_t i = 0; i < r->tl.ncounters; i++) {
		struct bundle_counter *c = &r->tl_counters[i];
		c->nvalid = 0;
		for (size_t k = 0; k < r->tl.npoints; k++)
			c->nvalid += !isnan(c->v[k]);
		if (c->nvalid) {
			r->tl_counters[keep++] = *c;
		} else {
			free((char *)c->name);
			free((double *)c->v);
		}
	}
	r->tl.ncounters = keep;
	r->tl.t = r->tl_t;
	r->tl.counters = r->tl_counters;
	r->timeline_loaded = true;
	*ret = &r->tl;
	return 0;
}

bool bundle_counter_cumulative(const char *name)
{
	static const char *const totals[] = {
		"cpu_user_ns",
		"cpu_sys_ns",
		"minor_faults",
		"major_faults",
		"voluntary_ctxt_switches",
		"nonvoluntary_ctxt_switches",
		"io_read_bytes",
		"io_write_bytes",
	};
	for (size_t i = 0; i < sizeof(totals) / sizeof(totals[0]); i++)
		if (strcmp(name, totals[i]) == 0)
			return true;
	return false;
}

static void describe_one(const cJSON *t, char *out, size_t size)
{
	const cJSON *comm = cJSON_GetObjectItemCaseSensitive(t, "comm");
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(t, "pid");
	snprintf(out, size, "%s (pid %.0f)", cJSON_IsString(comm) ? comm->valuestring : "?",
		 cJSON_IsNumber(pid) ? pid->valuedouble : 0);
}

char *bundle_target_describe(const cJSON *manifest, char *out, size_t size)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(manifest, "target");
	if (!size)
		return out;
	if (!cJSON_IsArray(t)) {
		describe_one(t, out, size);
		return out;
	}
	int n = cJSON_GetArraySize(t);
	size_t used = (size_t)snprintf(out, size, "%d process%s", n, n == 1 ? "" : "es");
	const cJSON *e;
	int i = 0;
	cJSON_ArrayForEach(e, t)
	{
		char one[160];
		describe_one(e, one, sizeof(one));
		if (used >= size)
			break;
		/* Room for ", ..." after this one, or stop here. */
		if (used + strlen(one) + 8 >= size) {
			snprintf(out + used, size - used, ", ...");
			break;
		}
		used += (size_t)snprintf(out + used, size - used, "%s%s", i++ ? ", " : ": ", one);
	}
	return out;
}
