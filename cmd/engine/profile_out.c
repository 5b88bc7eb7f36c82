#include "cmd/engine/profile_out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define MAX_LABELS 8
#define MAX_STACK 1024

struct encode_ctx {
	bool main_named_by_go;
	struct profile_builder *pb;
	const struct symtab *st;
	struct addrset *set;
	const struct sym_module *modules;
	size_t nmodules;
	uint64_t *mapping_ids; /* per module */
	int error;
};

static int collect_stack(void *vctx, const uint64_t *pcs, size_t npcs, const char *labels,
			 const int64_t *values)
{
	struct encode_ctx *ctx = vctx;
	for (size_t i = 0; i < npcs; i++) {
		if (addrset_add(ctx->set, frame_lookup_address(pcs, i)) < 0) {
			ctx->error = -ENOMEM;
			return 1;
		}
	}
	return 0;
}

int profile_out_collect(const struct stackagg *agg, struct addrset *set)
{
	struct encode_ctx ctx = {.set = set};
	stackagg_foreach(agg, collect_stack, &ctx);
	return ctx.error;
}

static uint64_t mapping_id_for(struct encode_ctx *ctx, const struct sym_module *m)
{
	if (!m)
		return 0;
	for (size_t i = 0; i < ctx->nmodules; i++)
		if (&ctx->modules[i] == m)
			return ctx->mapping_ids[i];
	return 0;
}

size_t profile_lines_from_frames(const struct sym_frame *frames, size_t nframes,
				 struct profile_line *lines, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < nframes && n < max; i++) {
		const struct sym_frame *f = &frames[i];
		if (!f->function)
			continue;
		lines[n++] = (struct profile_line){
			.function = f->function,
			.system_name = f->function,
			.filename = f->file,
			.start_line = f->function_start_line,
			.line = f->line,
		};
	}
	return n;
}

static uint64_t location_for(struct encode_ctx *ctx, uint64_t addr)
{
	uint64_t id = profile_builder_find_location(ctx->pb, addr);
	if (id)
		return id;
	const struct sym_location *loc = symtab_lookup(ctx->st, addr);
	struct sym_location unknown = {.pc = addr};
	if (!loc)
		loc = &unknown;
	struct profile_line lines[64];
	size_t n = 0;
	const struct sym_frame *frames = loc->frames;
	size_t nframes = loc->nframes;
	n = profile_lines_from_frames(frames, nframes, lines, 64);
	/* A frame without a name reads as in threads.txt, module+0xOFF (the
	 * file offset, for addr2line), not as pprof's "[module]" or an
	 * address: one spelling everywhere, and two unnamed functions of one
	 * module never share a row. (Interned by the builder.) */
	char buf[320];
	const char *unnamed = n == 0 ? sym_location_unnamed(loc, buf, sizeof(buf)) : NULL;
	if (unnamed) {
		lines[0] = (struct profile_line){.function = unnamed, .system_name = unnamed};
		n = 1;
	}
	return profile_builder_add_location(ctx->pb, addr, mapping_id_for(ctx, loc->module), lines, n);
}

static size_t parse_labels(const char *labels, char *buf, size_t bufsize,
			   struct profile_label *out, size_t max)
{
	if (!labels || !*labels)
		return 0;
	snprintf(buf, bufsize, "%s", labels);
	size_t n = 0;
	char *save = NULL;
	for (char *tok = strtok_r(buf, LABEL_SEP, &save); tok && n < max;
	     tok = strtok_r(NULL, LABEL_SEP, &save)) {
		char *eq = strchr(tok, '=');
		if (!eq)
			continue;
		*eq = '\0';
		struct profile_label *l = &out[n++];
		memset(l, 0, sizeof(*l));
		l->key = tok;
		if (strcmp(tok, "tid") == 0)
			l->num = strtoll(eq + 1, NULL, 10);
		else
			l->str = eq + 1;
	}
	return n;
}

static int add_sample(void *vctx, const uint64_t *pcs, size_t npcs, const char *labels,
		      const int64_t *values)
{
	struct encode_ctx *ctx = vctx;
	uint64_t ids[MAX_STACK];
	size_t n = 0;
	for (size_t i = 0; i < npcs && n < MAX_STACK; i++) {
		uint64_t id = location_for(ctx, frame_lookup_address(pcs, i));
		if (!id) {
			ctx->error = -ENOMEM;
			return 1;
		}
		ids[n++] = id;
	}
	char buf[1024];
	struct profile_label l[MAX_LABELS];
	size_t nl = parse_labels(labels, buf, sizeof(buf), l, MAX_LABELS);
	if (profile_builder_add_sample(ctx->pb, ids, n, values, l, nl) < 0) {
		ctx->error = -ENOMEM;
		return 1;
	}
	return 0;
}

int profile_out_encode(const struct stackagg *agg, const struct symtab *st,
		       const struct profile_spec *spec, uint8_t **ret, size_t *ret_len)
{
	struct encode_ctx ctx = {.st = st, .main_named_by_go = spec->main_named_by_go};

	ctx.pb = profile_builder_new(spec->sample_types, spec->ntypes, spec->period_type, spec->period);
	if (!ctx.pb)
		return -ENOMEM;
	profile_builder_set_time(ctx.pb, spec->time_nanos, spec->duration_nanos);

	ctx.nmodules = symtab_modules(st, &ctx.modules);
	ctx.mapping_ids = calloc(ctx.nmodules ? ctx.nmodules : 1, sizeof(uint64_t));
	if (!ctx.mapping_ids) {
		profile_builder_free(ctx.pb);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ctx.nmodules; i++) {
		const struct sym_module *m = &ctx.modules[i];
		/* A Go target's main mapping is symbolized from its own pclntab
		 * even when stripped. */
		bool go_main = ctx.main_named_by_go && i == 0;
		/* Every location of a mapping carries a function, module+0xOFF
		 * where nothing named it (location_for): pprof is told so, or it
		 * names them again from whatever file sits at that path on the
		 * reader's machine, and gets ET_EXEC text mapped twice wrong
		 * (node's uv_run shown as uv_err_name). */
		const char *path = spec->exe_path && spec->invoked_as && m->path &&
						   strcmp(m->path, spec->exe_path) == 0
					   ? spec->invoked_as
					   : m->path;
		ctx.mapping_ids[i] = profile_builder_add_mapping(
			ctx.pb, m->start, m->limit, m->offset, path, m->build_id,
			true, m->has_filenames || go_main,
			m->has_line_numbers || go_main);
	}
	stackagg_foreach(agg, add_sample, &ctx);
	int r = ctx.error;
	if (!r)
		r = profile_builder_encode_gz(ctx.pb, ret, ret_len);
	free(ctx.mapping_ids);
	profile_builder_free(ctx.pb);
	return r;
}
