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
#include "bundle/profile.pb-c.h"

/* A decoded profile keeps its protobuf message alive: frame names and
 * labels point into its string table, which saves copying every string. */
struct cached_profile {
	char *name;
	Perftools__Profiles__Profile *pb;
	struct bundle_profile pub;
	struct bundle_sample *samples;
	struct bundle_frame *frames; /* all samples' frames, one block */
	char **synth;		     /* "0x..." names we had to make */
	size_t nsynth;
	const char **types; /* value_type then value_unit */
	struct cached_profile *next;
};

struct bundle_reader {
	char *dir;
	cJSON *manifest;
	struct cached_profile *profiles;
	bool timeline_loaded;
	struct bundle_timeline tl;
	double *tl_t;
	struct bundle_counter *tl_counters;
};

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

int bundle_read_file_at(int dirfd, const char *path, size_t max_len, char **ret, size_t *ret_len)
{
	/* A hostile bundle: a FIFO must not hang us, a symlink must not lead
	 * outside the bundle. */
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max_len) {
		close(fd);
		return S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
	}
	/* st_size is a first guess only: the file may be growing. */
	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (n + 1 >= cap) {
			char *nb = n < max_len ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				free(buf);
				close(fd);
				return n < max_len ? -ENOMEM : -EFBIG;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t k = read(fd, buf + n, cap - n - 1);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			int e = -errno;
			free(buf);
			close(fd);
			return e;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	if (n > max_len) {
		free(buf);
		return -EFBIG;
	}
	buf[n] = '\0';
	*ret = buf;
	*ret_len = n;
	return 0;
}

int bundle_reader_open(const char *dir, struct bundle_reader **ret)
{
	struct bundle_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->dir = strdup(dir);
	if (!r->dir) {
		free(r);
		return -ENOMEM;
	}
	char *text;
	size_t len;
	int e = bundle_reader_read(r, "manifest.json", &text, &len);
	if (e < 0) {
		bundle_reader_free(r);
		return e;
	}
	r->manifest = cJSON_ParseWithLength(text, len);
	free(text);
	if (!cJSON_IsObject(r->manifest)) {
		bundle_reader_free(r);
		return -EBADMSG;
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
	cJSON_Delete(r->manifest);
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

bool bundle_reader_has(const struct bundle_reader *r, const char *name)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(r->manifest, "members"))
	{
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(m, "name");
		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return true;
	}
	return false;
}

int bundle_reader_read(const struct bundle_reader *r, const char *name, char **ret, size_t *ret_len)
{
	if (!name_is_safe(name))
		return -EINVAL;
	char *path;
	if (asprintf(&path, "%s/%s", r->dir, name) < 0)
		return -ENOMEM;
	int e = bundle_read_file_at(AT_FDCWD, path, SIZE_MAX, ret, ret_len);
	free(path);
	return e;
}

/* ---- profiles ---- */

static const char *pstr(const Perftools__Profiles__Profile *p, int64_t idx)
{
	if (idx < 0 || (size_t)idx >= p->n_string_table)
		return "";
	return p->string_table[idx];
}

/* Ids are usually dense and 1-based (ours always are), so index arrays by
 * id; fall back to a linear search for anything else. */
static const Perftools__Profiles__Location *find_loc(const Perftools__Profiles__Profile *p,
						     uint64_t id)
{
	if (id >= 1 && id <= p->n_location && p->location[id - 1]->id == id)
		return p->location[id - 1];
	for (size_t i = 0; i < p->n_location; i++)
		if (p->location[i]->id == id)
			return p->location[i];
	return NULL;
}

static const Perftools__Profiles__Function *find_fn(const Perftools__Profiles__Profile *p,
						    uint64_t id)
{
	if (id >= 1 && id <= p->n_function && p->function[id - 1]->id == id)
		return p->function[id - 1];
	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i]->id == id)
			return p->function[i];
	return NULL;
}

static size_t loc_frames(const Perftools__Profiles__Location *l)
{
	return l && l->n_line ? l->n_line : 1;
}

static int flatten(struct cached_profile *c)
{
	const Perftools__Profiles__Profile *p = c->pb;
	size_t total = 0;
	for (size_t i = 0; i < p->n_sample; i++)
		for (size_t j = 0; j < p->sample[i]->n_location_id; j++)
			total += loc_frames(find_loc(p, p->sample[i]->location_id[j]));
	c->samples = calloc(p->n_sample ? p->n_sample : 1, sizeof(*c->samples));
	c->frames = calloc(total ? total : 1, sizeof(*c->frames));
	c->types = calloc(2 * (p->n_sample_type + 1), sizeof(*c->types));
	if (!c->samples || !c->frames || !c->types)
		return -ENOMEM;
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
			const Perftools__Profiles__Location *l = find_loc(p, s->location_id[j]);
			if (!l)
				return -EBADMSG;
			if (!l->n_line) {
				char *nm;
				if (asprintf(&nm, "0x%" PRIx64, l->address) < 0)
					return -ENOMEM;
				char **ns = realloc(c->synth, (c->nsynth + 1) * sizeof(*ns));
				if (!ns) {
					free(nm);
					return -ENOMEM;
				}
				c->synth = ns;
				c->synth[c->nsynth++] = nm;
				*f++ = (struct bundle_frame){
					.function = nm, .file = "", .address = l->address};
				continue;
			}
			for (size_t k = 0; k < l->n_line; k++) {
				const Perftools__Profiles__Function *fn =
					find_fn(p, l->line[k]->function_id);
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
	e = bundle_gunzip(gz, gzlen, SIZE_MAX, &raw, &rawlen);
	free(gz);
	if (e < 0)
		return e;
	struct cached_profile *c = calloc(1, sizeof(*c));
	if (!c) {
		free(raw);
		return -ENOMEM;
	}
	c->pb = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	free(raw);
	c->name = strdup(name);
	if (!c->pb || !c->name) {
		e = c->pb ? -ENOMEM : -EBADMSG;
		profile_free(c);
		return e;
	}
	e = flatten(c);
	if (e < 0) {
		profile_free(c);
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
	size_t cap_points, cap_counters;
	double **vals; /* per counter, cap_points entries */
};

static int tl_counter(struct tl_build *b, const char *name, size_t *ret)
{
	struct bundle_timeline *tl = &b->r->tl;
	for (size_t i = 0; i < tl->ncounters; i++)
		if (strcmp(b->r->tl_counters[i].name, name) == 0) {
			*ret = i;
			return 0;
		}
	if (tl->ncounters == b->cap_counters) {
		size_t nc = b->cap_counters ? b->cap_counters * 2 : 32;
		struct bundle_counter *cs = realloc(b->r->tl_counters, nc * sizeof(*cs));
		if (!cs)
			return -ENOMEM;
		b->r->tl_counters = cs;
		b->cap_counters = nc;
	}
	double *v = malloc((b->cap_points ? b->cap_points : 1) * sizeof(*v));
	char *n = strdup(name);
	if (!v || !n) {
		free(v);
		free(n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < b->cap_points; i++)
		v[i] = NAN;
	b->r->tl_counters[tl->ncounters] = (struct bundle_counter){.name = n, .v = v};
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
	char *text;
	size_t len;
	int e = bundle_reader_read(r, member, &text, &len);
	if (e < 0)
		return e;
	struct tl_build b = {.r = r};
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "t");
		double ts;
		if (!cJSON_IsObject(o) || !cJSON_IsString(t) ||
		    bundle_parse_time(t->valuestring, &ts) < 0) {
			r->tl.bad_lines++;
			cJSON_Delete(o);
			continue;
		}
		if (r->tl.npoints == b.cap_points && (e = tl_grow(&b)) < 0) {
			cJSON_Delete(o);
			break;
		}
		r->tl_t[r->tl.npoints] = ts;
		/* A counter first seen on a later line needs NANs before it:
		 * tl_counter fills a new column with NAN up to cap_points. */
		e = tl_object(&b, o, "", r->tl.npoints);
		cJSON_Delete(o);
		if (e < 0)
			break;
		r->tl.npoints++;
	}
	free(text);
	if (e < 0)
		return e; /* what was built is freed by bundle_reader_free */
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
