/* export_format: see export_format.h. */
#include "bundle/read/export_format.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "bundle/text.h"

struct line {
	char *stack;
	int64_t value;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->stack, ((const struct line *)b)->stack);
}

/* Append a frame name with the two characters the format cannot carry
 * replaced. */
static void put_frame(FILE *f, const char *name)
{
	for (; *name; name++)
		fputc(*name == ';' ? ':' : (*name == '\n' || *name == '\r') ? ' ' : *name, f);
}

int export_collapsed(const struct bundle_profile *p, size_t value_index, bool per_thread, FILE *out)
{
	if (value_index >= p->nvalues)
		return -EINVAL;
	struct line *lines = calloc(p->nsamples + 1, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	size_t n = 0;
	int e = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct bundle_sample *s = &p->samples[i];
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);
		if (!m) {
			e = -ENOMEM;
			break;
		}
		bool first = true;
		if (per_thread) {
			put_frame(m, s->thread_comm ? s->thread_comm : "?");
			fprintf(m, "/%lld", (long long)s->tid);
			first = false;
		}
		for (size_t k = s->nframes; k-- > 0;) {
			if (!first)
				fputc(';', m);
			put_frame(m, s->frames[k].function);
			first = false;
		}
		/* A thread counted without a stack (wall.pprof, threads.pprof:
		 * label no_stack) still takes its width in the flame graph. */
		if (s->nframes == 0) {
			if (!first)
				fputc(';', m);
			put_frame(m, "[no stack]");
		}
		if (fclose(m) != 0 || !buf) {
			free(buf);
			e = -ENOMEM;
			break;
		}
		lines[n++] = (struct line){.stack = buf, .value = s->values[value_index]};
	}
	if (e == 0) {
		qsort(lines, n, sizeof(*lines), cmp_line);
		for (size_t i = 0; i < n;) {
			int64_t sum = 0;
			size_t j = i;
			for (; j < n && strcmp(lines[j].stack, lines[i].stack) == 0; j++)
				sum += lines[j].value;
			/* An empty stack (a sample nothing could unwind) would be a
			 * line FlameGraph cannot parse. */
			if (sum && *lines[i].stack)
				fprintf(out, "%s %lld\n", lines[i].stack, (long long)sum);
			i = j;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i].stack);
	free(lines);
	if (e == 0 && ferror(out))
		e = -EIO;
	return e;
}

/* speedscope's units are a closed set; anything else is "none". */
static const char *speedscope_unit(const char *unit)
{
	static const char *const known[] = {"nanoseconds", "microseconds", "milliseconds",
					    "seconds", "bytes"};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(unit, known[i]) == 0)
			return known[i];
	return "none";
}

struct frame_index {
	const char **names; /* distinct function names, in first-seen order */
	const struct bundle_frame **first;
	size_t n, cap;
};

/* Linear-probing would be faster; profiles have hundreds of distinct
 * functions, not millions, and this runs once. */
static long frame_id(struct frame_index *fi, const struct bundle_frame *f)
{
	for (size_t i = 0; i < fi->n; i++)
		if (strcmp(fi->names[i], f->function) == 0)
			return (long)i;
	if (fi->n == fi->cap) {
		size_t nc = fi->cap ? fi->cap * 2 : 256;
		const char **nn = realloc(fi->names, nc * sizeof(*nn));
		if (!nn)
			return -1;
		fi->names = nn;
		const struct bundle_frame **nf = realloc(fi->first, nc * sizeof(*nf));
		if (!nf)
			return -1;
		fi->first = nf;
		fi->cap = nc;
	}
	fi->names[fi->n] = f->function;
	fi->first[fi->n] = f;
	return (long)fi->n++;
}

int export_speedscope(const struct bundle_profile *p, size_t value_index, const char *name,
		      FILE *out)
{
	if (value_index >= p->nvalues)
		return -EINVAL;
	cJSON *doc = cJSON_CreateObject();
	struct frame_index fi = {0};
	int e = 0;
	int64_t *tids = calloc(p->nsamples + 1, sizeof(*tids));
	size_t ntids = 0;
	if (!doc || !tids) {
		cJSON_Delete(doc);
		free(tids);
		return -ENOMEM;
	}
	cJSON_AddStringToObject(doc, "$schema",
				"https://www.speedscope.app/file-format-schema.json");
	cJSON *shared = cJSON_AddObjectToObject(doc, "shared");
	cJSON *frames = cJSON_AddArrayToObject(shared, "frames");
	cJSON *profiles = cJSON_AddArrayToObject(doc, "profiles");
	cJSON_AddStringToObject(doc, "name", name);
	cJSON_AddNumberToObject(doc, "activeProfileIndex", 0);
	cJSON_AddStringToObject(doc, "exporter", "diag-attach");

	/* One profile per thread, in order of first appearance. */
	for (size_t i = 0; i < p->nsamples; i++) {
		size_t k;
		for (k = 0; k < ntids; k++)
			if (tids[k] == p->samples[i].tid)
				break;
		if (k == ntids)
			tids[ntids++] = p->samples[i].tid;
	}
	const char *unit = speedscope_unit(p->value_unit[value_index]);
	for (size_t t = 0; t < ntids && e == 0; t++) {
		cJSON *prof = cJSON_CreateObject();
		cJSON_AddItemToArray(profiles, prof);
		cJSON_AddStringToObject(prof, "type", "sampled");
		cJSON *samples = cJSON_CreateArray(), *weights = cJSON_CreateArray();
		int64_t total = 0;
		const char *comm = NULL;
		for (size_t i = 0; i < p->nsamples && e == 0; i++) {
			const struct bundle_sample *s = &p->samples[i];
			if (s->tid != tids[t])
				continue;
			if (!comm)
				comm = s->thread_comm;
			cJSON *stack = cJSON_CreateArray();
			for (size_t k = s->nframes; k-- > 0;) {
				long id = frame_id(&fi, &s->frames[k]);
				if (id < 0) {
					e = -ENOMEM;
					break;
				}
				cJSON_AddItemToArray(stack, cJSON_CreateNumber((double)id));
			}
			cJSON_AddItemToArray(samples, stack);
			cJSON_AddItemToArray(weights,
					     cJSON_CreateNumber((double)s->values[value_index]));
			total += s->values[value_index];
		}
		char pname[128];
		if (tids[t] >= 0)
			snprintf(pname, sizeof(pname), "%s (tid %lld)", comm ? comm : "?",
				 (long long)tids[t]);
		else
			snprintf(pname, sizeof(pname), "%s", name);
		cJSON_AddStringToObject(prof, "name", pname);
		cJSON_AddStringToObject(prof, "unit", unit);
		cJSON_AddNumberToObject(prof, "startValue", 0);
		cJSON_AddNumberToObject(prof, "endValue", (double)total);
		cJSON_AddItemToObject(prof, "samples", samples);
		cJSON_AddItemToObject(prof, "weights", weights);
	}
	for (size_t i = 0; i < fi.n && e == 0; i++) {
		cJSON *f = cJSON_CreateObject();
		cJSON_AddStringToObject(f, "name", fi.names[i]);
		if (fi.first[i]->file && *fi.first[i]->file)
			cJSON_AddStringToObject(f, "file", fi.first[i]->file);
		if (fi.first[i]->line > 0)
			cJSON_AddNumberToObject(f, "line", (double)fi.first[i]->line);
		cJSON_AddItemToArray(frames, f);
	}
	char *text = e == 0 ? json_print(doc, false) : NULL;
	if (e == 0 && !text)
		e = -ENOMEM;
	if (text) {
		fputs(text, out);
		fputc('\n', out);
		free(text);
		if (ferror(out))
			e = -EIO;
	}
	free(fi.names);
	free(fi.first);
	free(tids);
	cJSON_Delete(doc);
	return e;
}
