/*
 * Profile builder: interning tables for strings, functions and locations.
 * Ids are positions + 1 (pprof ids must be nonzero); string index 0 is "".
 *
 * Out-of-memory policy: the failing call reports it (0 id / NULL / -ENOMEM)
 * and leaves the builder consistent, so the caller may still encode what it
 * has.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/internal.h"
#include "bundle/profile_internal.h"

static int vec_reserve(void *vp, size_t *cap, size_t n, size_t item)
{
	void **v = vp;
	size_t nc;
	void *nv;

	if (n < *cap)
		return 0;
	nc = *cap ? 2 * *cap : 16;
	nv = realloc(*v, nc * item);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = nc;
	return 0;
}

#define VEC_RESERVE(vec) vec_reserve(&(vec).v, &(vec).cap, (vec).n, sizeof(*(vec).v))

typedef uint64_t (*hash_of_fn)(const struct profile_builder *pb, size_t i);

/* Make room for one more of n items, keeping the load factor <= 1/2. */
static int idx_reserve(struct pidx *x, size_t n, const struct profile_builder *pb, hash_of_fn hof)
{
	size_t nslots, *slots;

	if (2 * (n + 1) <= x->nslots)
		return 0;
	nslots = x->nslots ? 2 * x->nslots : 64;
	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t s = hof(pb, i) & (nslots - 1);
		while (slots[s])
			s = (s + 1) & (nslots - 1);
		slots[s] = i + 1;
	}
	free(x->slots);
	x->slots = slots;
	x->nslots = nslots;
	return 0;
}

/* ---- strings ---- */

static uint64_t str_hash_of(const struct profile_builder *pb, size_t i)
{
	return pb->str_hash[i];
}

/* Index of s in the string table, adding a copy if new; -1 on ENOMEM. */
static int64_t intern(struct profile_builder *pb, const char *s)
{
	size_t len = strlen(s), slot;
	uint64_t h = bundle_hash_bytes(BUNDLE_HASH_SEED, s, len);
	char *copy;

	if (idx_reserve(&pb->str_idx, pb->strs.n, pb, str_hash_of) < 0)
		return -1;
	for (slot = h & (pb->str_idx.nslots - 1); pb->str_idx.slots[slot];
	     slot = (slot + 1) & (pb->str_idx.nslots - 1)) {
		size_t i = pb->str_idx.slots[slot] - 1;
		if (pb->str_hash[i] == h && strcmp(pb->strs.v[i], s) == 0)
			return (int64_t)i;
	}
	if (VEC_RESERVE(pb->strs) < 0 ||
	    vec_reserve(&pb->str_hash, &pb->str_hash_cap, pb->strs.n, sizeof(*pb->str_hash)) < 0)
		return -1;
	copy = strdup(s);
	if (!copy)
		return -1;
	pb->strs.v[pb->strs.n] = copy;
	pb->str_hash[pb->strs.n] = h;
	pb->str_idx.slots[slot] = ++pb->strs.n;
	return (int64_t)(pb->strs.n - 1);
}

/* ---- lifecycle ---- */

struct profile_builder *profile_builder_new(const struct profile_value_type *sample_types,
					    size_t ntypes,
					    struct profile_value_type period_type, int64_t period)
{
	struct profile_builder *pb = calloc(1, sizeof(*pb));

	if (!pb)
		return NULL;
	if (intern(pb, "") != 0)
		goto fail;
	pb->sample_types = calloc(ntypes ? 2 * ntypes : 1, sizeof(*pb->sample_types));
	if (!pb->sample_types)
		goto fail;
	pb->ntypes = ntypes;
	for (size_t i = 0; i < ntypes; i++) {
		pb->sample_types[2 * i] = intern(pb, sample_types[i].type ? sample_types[i].type : "");
		pb->sample_types[2 * i + 1] = intern(pb, sample_types[i].unit ? sample_types[i].unit : "");
		if (pb->sample_types[2 * i] < 0 || pb->sample_types[2 * i + 1] < 0)
			goto fail;
	}
	pb->period_type[0] = intern(pb, period_type.type ? period_type.type : "");
	pb->period_type[1] = intern(pb, period_type.unit ? period_type.unit : "");
	if (pb->period_type[0] < 0 || pb->period_type[1] < 0)
		goto fail;
	pb->period = period;
	return pb;
fail:
	profile_builder_free(pb);
	return NULL;
}

void profile_builder_free(struct profile_builder *pb)
{
	if (!pb)
		return;
	for (size_t i = 0; i < pb->strs.n; i++)
		free(pb->strs.v[i]);
	free(pb->strs.v);
	free(pb->str_hash);
	free(pb->str_idx.slots);
	free(pb->funcs.v);
	free(pb->func_idx.slots);
	for (size_t i = 0; i < pb->locs.n; i++)
		free(pb->locs.v[i].lines);
	free(pb->locs.v);
	free(pb->loc_idx.slots);
	free(pb->maps.v);
	for (size_t i = 0; i < pb->samples.n; i++)
		free(pb->samples.v[i].locs);
	free(pb->samples.v);
	free(pb->comments.v);
	free(pb->sample_types);
	free(pb);
}

void profile_builder_set_time(struct profile_builder *pb, int64_t time_nanos, int64_t duration_nanos)
{
	pb->time_nanos = time_nanos;
	pb->duration_nanos = duration_nanos;
}

int profile_builder_set_default_sample_type(struct profile_builder *pb, const char *type)
{
	int64_t s = intern(pb, type);
	if (s < 0)
		return -ENOMEM;
	pb->default_sample_type = s;
	return 0;
}

int profile_builder_add_comment(struct profile_builder *pb, const char *comment)
{
	int64_t s;

	if (!pb || !comment)
		return -EINVAL;
	s = intern(pb, comment);
	if (s < 0 || VEC_RESERVE(pb->comments) < 0)
		return -ENOMEM;
	pb->comments.v[pb->comments.n++] = s;
	return 0;
}

uint64_t profile_builder_add_mapping(struct profile_builder *pb, uint64_t start, uint64_t limit,
				     uint64_t offset, const char *filename, const char *build_id,
				     bool has_functions, bool has_filenames, bool has_line_numbers)
{
	struct pmap m = {
		.start = start, .limit = limit, .offset = offset,
		.has_functions = has_functions, .has_filenames = has_filenames,
		.has_line_numbers = has_line_numbers,
	};

	m.filename = intern(pb, filename ? filename : "");
	m.build_id = intern(pb, build_id ? build_id : "");
	if (m.filename < 0 || m.build_id < 0 || VEC_RESERVE(pb->maps) < 0)
		return 0;
	pb->maps.v[pb->maps.n++] = m;
	return pb->maps.n;
}

/* ---- functions ---- */

static uint64_t func_hash_of(const struct profile_builder *pb, size_t i)
{
	return pb->funcs.v[i].hash;
}

static uint64_t intern_function(struct profile_builder *pb, const struct profile_line *l)
{
	struct pfunc f = { .start_line = l->start_line };
	size_t slot;

	f.name = intern(pb, l->function);
	f.system_name = intern(pb, l->system_name ? l->system_name : l->function);
	f.filename = intern(pb, l->filename ? l->filename : "");
	if (f.name < 0 || f.system_name < 0 || f.filename < 0)
		return 0;
	/* The fields are contiguous int64s: hash them as one key. */
	f.hash = bundle_hash_bytes(BUNDLE_HASH_SEED, &f.name, 4 * sizeof(int64_t));
	if (idx_reserve(&pb->func_idx, pb->funcs.n, pb, func_hash_of) < 0)
		return 0;
	for (slot = f.hash & (pb->func_idx.nslots - 1); pb->func_idx.slots[slot];
	     slot = (slot + 1) & (pb->func_idx.nslots - 1)) {
		const struct pfunc *g = &pb->funcs.v[pb->func_idx.slots[slot] - 1];
		if (g->hash == f.hash && g->name == f.name && g->system_name == f.system_name &&
		    g->filename == f.filename && g->start_line == f.start_line)
			return pb->func_idx.slots[slot];
	}
	if (VEC_RESERVE(pb->funcs) < 0)
		return 0;
	pb->funcs.v[pb->funcs.n] = f;
	pb->func_idx.slots[slot] = ++pb->funcs.n;
	return pb->funcs.n;
}

/* ---- locations ---- */

static uint64_t addr_hash(uint64_t address)
{
	return bundle_hash_bytes(BUNDLE_HASH_SEED, &address, sizeof(address));
}

static uint64_t loc_hash_of(const struct profile_builder *pb, size_t i)
{
	return addr_hash(pb->locs.v[i].address);
}

uint64_t profile_builder_find_location(struct profile_builder *pb, uint64_t address)
{
	if (!pb || !pb->loc_idx.nslots)
		return 0;
	for (size_t s = addr_hash(address) & (pb->loc_idx.nslots - 1); pb->loc_idx.slots[s];
	     s = (s + 1) & (pb->loc_idx.nslots - 1))
		if (pb->locs.v[pb->loc_idx.slots[s] - 1].address == address)
			return pb->loc_idx.slots[s];
	return 0;
}

uint64_t profile_builder_add_location(struct profile_builder *pb, uint64_t address,
				      uint64_t mapping_id, const struct profile_line *lines,
				      size_t nlines)
{
	struct ploc loc = { .address = address };
	uint64_t id = profile_builder_find_location(pb, address);
	size_t slot;

	if (id || !pb)
		return id;
	/* A dangling mapping id would make pprof reject the whole file;
	 * "no mapping" is the honest fallback. */
	loc.mapping_id = mapping_id <= pb->maps.n ? mapping_id : 0;
	if (nlines) {
		loc.lines = calloc(nlines, sizeof(*loc.lines));
		if (!loc.lines)
			return 0;
	}
	for (size_t i = 0; i < nlines; i++) {
		if (!lines[i].function)
			continue;
		uint64_t fid = intern_function(pb, &lines[i]);
		if (!fid)
			goto fail;
		loc.lines[loc.nlines].function_id = fid;
		loc.lines[loc.nlines++].line = lines[i].line;
	}
	if (idx_reserve(&pb->loc_idx, pb->locs.n, pb, loc_hash_of) < 0 || VEC_RESERVE(pb->locs) < 0)
		goto fail;
	slot = addr_hash(address) & (pb->loc_idx.nslots - 1);
	while (pb->loc_idx.slots[slot])
		slot = (slot + 1) & (pb->loc_idx.nslots - 1);
	pb->locs.v[pb->locs.n] = loc;
	pb->loc_idx.slots[slot] = ++pb->locs.n;
	return pb->locs.n;
fail:
	free(loc.lines);
	return 0;
}

/* ---- samples ---- */

int profile_builder_add_sample(struct profile_builder *pb, const uint64_t *location_ids,
			       size_t nlocs, const int64_t *values,
			       const struct profile_label *labels, size_t nlabels)
{
	struct psample s = { .nlocs = nlocs, .nlabels = nlabels };

	if (!pb || (nlocs && !location_ids) || (pb->ntypes && !values) || (nlabels && !labels))
		return -EINVAL;
	for (size_t i = 0; i < nlocs; i++)
		if (location_ids[i] == 0 || location_ids[i] > pb->locs.n)
			return -EINVAL;
	for (size_t i = 0; i < nlabels; i++)
		if (!labels[i].key)
			return -EINVAL;
	/* Labels are last so every part stays naturally aligned. */
	s.locs = malloc(nlocs * sizeof(*s.locs) + pb->ntypes * sizeof(*s.values) +
			nlabels * sizeof(*s.labels) + 1);
	if (!s.locs)
		return -ENOMEM;
	s.values = (int64_t *)(s.locs + nlocs);
	s.labels = (struct plabel *)(s.values + pb->ntypes);
	if (nlocs)
		memcpy(s.locs, location_ids, nlocs * sizeof(*s.locs));
	if (pb->ntypes)
		memcpy(s.values, values, pb->ntypes * sizeof(*s.values));
	for (size_t i = 0; i < nlabels; i++) {
		struct plabel *l = &s.labels[i];
		memset(l, 0, sizeof(*l));
		l->key = intern(pb, labels[i].key);
		if (labels[i].str) {
			l->str = intern(pb, labels[i].str);
		} else {
			l->num = labels[i].num;
			if (labels[i].num_unit)
				l->num_unit = intern(pb, labels[i].num_unit);
		}
		if (l->key < 0 || l->str < 0 || l->num_unit < 0)
			goto fail;
	}
	if (VEC_RESERVE(pb->samples) < 0)
		goto fail;
	pb->samples.v[pb->samples.n++] = s;
	return 0;
fail:
	free(s.locs);
	return -ENOMEM;
}
