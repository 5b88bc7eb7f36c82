/*
 * Encoding: translate the builder's tables into protobuf-c message structs
 * (pointing into the tables, not copying them), pack, then gzip as pprof
 * requires on disk.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "bundle/gzip.h"
#include "bundle/profile.pb-c.h"
#include "bundle/profile_internal.h"

/* Everything allocated for one encode, freed together. */
struct msgs {
	Perftools__Profiles__ValueType *vt, **vtp, period_type;
	Perftools__Profiles__Sample *s, **sp;
	Perftools__Profiles__Label *l, **lp;
	Perftools__Profiles__Mapping *m, **mp;
	Perftools__Profiles__Location *loc, **locp;
	Perftools__Profiles__Line *ln, **lnp;
	Perftools__Profiles__Function *f, **fp;
};

static void msgs_free(struct msgs *x)
{
	free(x->vt), free(x->vtp), free(x->s), free(x->sp), free(x->l), free(x->lp);
	free(x->m), free(x->mp), free(x->loc), free(x->locp), free(x->ln), free(x->lnp);
	free(x->f), free(x->fp);
}

/* calloc that never returns NULL for a zero count, so NULL means ENOMEM. */
static void *zalloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static int build_samples(const struct profile_builder *pb, struct msgs *x,
			 Perftools__Profiles__Profile *p)
{
	size_t nlabels = 0, li = 0;

	for (size_t i = 0; i < pb->samples.n; i++)
		nlabels += pb->samples.v[i].nlabels;
	x->s = zalloc(pb->samples.n, sizeof(*x->s));
	x->sp = zalloc(pb->samples.n, sizeof(*x->sp));
	x->l = zalloc(nlabels, sizeof(*x->l));
	x->lp = zalloc(nlabels, sizeof(*x->lp));
	if (!x->s || !x->sp || !x->l || !x->lp)
		return -ENOMEM;
	for (size_t i = 0; i < pb->samples.n; i++) {
		const struct psample *ps = &pb->samples.v[i];
		Perftools__Profiles__Sample *s = &x->s[i];

		perftools__profiles__sample__init(s);
		s->n_location_id = ps->nlocs;
		s->location_id = ps->locs;
		s->n_value = pb->ntypes;
		s->value = ps->values;
		s->n_label = ps->nlabels;
		s->label = &x->lp[li];
		for (size_t j = 0; j < ps->nlabels; j++, li++) {
			Perftools__Profiles__Label *l = &x->l[li];
			perftools__profiles__label__init(l);
			l->key = ps->labels[j].key;
			l->str = ps->labels[j].str;
			l->num = ps->labels[j].num;
			l->num_unit = ps->labels[j].num_unit;
			x->lp[li] = l;
		}
		x->sp[i] = s;
	}
	p->n_sample = pb->samples.n;
	p->sample = x->sp;
	return 0;
}

static int build_mappings(const struct profile_builder *pb, struct msgs *x,
			  Perftools__Profiles__Profile *p)
{
	x->m = zalloc(pb->maps.n, sizeof(*x->m));
	x->mp = zalloc(pb->maps.n, sizeof(*x->mp));
	if (!x->m || !x->mp)
		return -ENOMEM;
	for (size_t i = 0; i < pb->maps.n; i++) {
		const struct pmap *pm = &pb->maps.v[i];
		Perftools__Profiles__Mapping *m = &x->m[i];

		perftools__profiles__mapping__init(m);
		m->id = i + 1;
		m->memory_start = pm->start;
		m->memory_limit = pm->limit;
		m->file_offset = pm->offset;
		m->filename = pm->filename;
		m->build_id = pm->build_id;
		m->has_functions = pm->has_functions;
		m->has_filenames = pm->has_filenames;
		m->has_line_numbers = pm->has_line_numbers;
		x->mp[i] = m;
	}
	/* has_inline_frames is derived from the data rather than asked for:
	 * a mapping has it once any of its locations carries an inline chain. */
	for (size_t i = 0; i < pb->locs.n; i++) {
		const struct ploc *l = &pb->locs.v[i];
		if (l->mapping_id && l->nlines > 1)
			x->m[l->mapping_id - 1].has_inline_frames = 1;
	}
	p->n_mapping = pb->maps.n;
	p->mapping = x->mp;
	return 0;
}

static int build_locations(const struct profile_builder *pb, struct msgs *x,
			   Perftools__Profiles__Profile *p)
{
	size_t nlines = 0, li = 0;

	for (size_t i = 0; i < pb->locs.n; i++)
		nlines += pb->locs.v[i].nlines;
	x->loc = zalloc(pb->locs.n, sizeof(*x->loc));
	x->locp = zalloc(pb->locs.n, sizeof(*x->locp));
	x->ln = zalloc(nlines, sizeof(*x->ln));
	x->lnp = zalloc(nlines, sizeof(*x->lnp));
	if (!x->loc || !x->locp || !x->ln || !x->lnp)
		return -ENOMEM;
	for (size_t i = 0; i < pb->locs.n; i++) {
		const struct ploc *pl = &pb->locs.v[i];
		Perftools__Profiles__Location *loc = &x->loc[i];

		perftools__profiles__location__init(loc);
		loc->id = i + 1;
		loc->mapping_id = pl->mapping_id;
		loc->address = pl->address;
		loc->n_line = pl->nlines;
		loc->line = &x->lnp[li];
		for (size_t j = 0; j < pl->nlines; j++, li++) {
			perftools__profiles__line__init(&x->ln[li]);
			x->ln[li].function_id = pl->lines[j].function_id;
			x->ln[li].line = pl->lines[j].line;
			x->lnp[li] = &x->ln[li];
		}
		x->locp[i] = loc;
	}
	p->n_location = pb->locs.n;
	p->location = x->locp;

	x->f = zalloc(pb->funcs.n, sizeof(*x->f));
	x->fp = zalloc(pb->funcs.n, sizeof(*x->fp));
	if (!x->f || !x->fp)
		return -ENOMEM;
	for (size_t i = 0; i < pb->funcs.n; i++) {
		const struct pfunc *pf = &pb->funcs.v[i];
		Perftools__Profiles__Function *f = &x->f[i];

		perftools__profiles__function__init(f);
		f->id = i + 1;
		f->name = pf->name;
		f->system_name = pf->system_name;
		f->filename = pf->filename;
		f->start_line = pf->start_line;
		x->fp[i] = f;
	}
	p->n_function = pb->funcs.n;
	p->function = x->fp;
	return 0;
}

static int build(const struct profile_builder *pb, struct msgs *x, Perftools__Profiles__Profile *p)
{
	int r;

	x->vt = zalloc(pb->ntypes, sizeof(*x->vt));
	x->vtp = zalloc(pb->ntypes, sizeof(*x->vtp));
	if (!x->vt || !x->vtp)
		return -ENOMEM;
	for (size_t i = 0; i < pb->ntypes; i++) {
		perftools__profiles__value_type__init(&x->vt[i]);
		x->vt[i].type = pb->sample_types[2 * i];
		x->vt[i].unit = pb->sample_types[2 * i + 1];
		x->vtp[i] = &x->vt[i];
	}
	p->n_sample_type = pb->ntypes;
	p->sample_type = x->vtp;
	perftools__profiles__value_type__init(&x->period_type);
	x->period_type.type = pb->period_type[0];
	x->period_type.unit = pb->period_type[1];
	p->period_type = &x->period_type;
	p->period = pb->period;
	p->time_nanos = pb->time_nanos;
	p->duration_nanos = pb->duration_nanos;
	p->n_string_table = pb->strs.n;
	p->string_table = pb->strs.v;
	p->n_comment = pb->comments.n;
	p->comment = pb->comments.v;
	p->default_sample_type = pb->default_sample_type;
	if ((r = build_samples(pb, x, p)) < 0 || (r = build_mappings(pb, x, p)) < 0 ||
	    (r = build_locations(pb, x, p)) < 0)
		return r;
	return 0;
}

int profile_builder_encode_gz(struct profile_builder *pb, uint8_t **ret, size_t *ret_len)
{
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct msgs x;
	uint8_t *buf = NULL;
	size_t len;
	int r;

	if (!pb || !ret || !ret_len)
		return -EINVAL;
	memset(&x, 0, sizeof(x));
	r = build(pb, &x, &p);
	if (r < 0)
		goto out;
	len = perftools__profiles__profile__get_packed_size(&p);
	buf = malloc(len ? len : 1);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	perftools__profiles__profile__pack(&p, buf);
	r = bundle_gzip(buf, len, Z_DEFAULT_COMPRESSION, ret, ret_len);
out:
	free(buf);
	msgs_free(&x);
	return r;
}
