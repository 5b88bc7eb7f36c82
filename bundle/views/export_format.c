/* export_format: see export_format.h. */
#include "bundle/views/export_format.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "bundle/strmap.h"
#include "bundle/text.h"

struct line {
	char *stack;
	int64_t value;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->stack, ((const struct line *)b)->stack);
}

/* Append a frame or thread name as the text report shows it: escaped
 * (escape_text), as it comes from the target (a perf map's symbol, a
 * thread's name) and the lines go to a terminal or a flame graph's SVG
 * (ESC, a bidirectional override, a newline that would start a line of
 * its own). Then ';', which would split the frame, as ':'. */
static int put_frame(FILE *f, const char *name)
{
	char small[256], *buf = small;
	size_t size = 4 * strlen(name) + 1;

	if (size > sizeof(small) && !(buf = malloc(size)))
		return -ENOMEM;
	escape_text(name, buf, size);
	for (const char *c = buf; *c; c++)
		fputc(*c == ';' ? ':' : *c, f);
	if (buf != small)
		free(buf);
	return 0;
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
		int pe = 0;
		if (per_thread) {
			pe |= put_frame(m, s->thread_comm ? s->thread_comm : "?");
			fprintf(m, "/%lld", (long long)s->tid);
			first = false;
		}
		for (size_t k = s->nframes; k-- > 0;) {
			if (!first)
				fputc(';', m);
			pe |= put_frame(m, s->frames[k].function);
			first = false;
		}
		/* A thread counted without a stack (wall.pprof, threads.pprof:
		 * label no_stack) still takes its width in the flame graph. */
		if (s->nframes == 0) {
			if (!first)
				fputc(';', m);
			pe |= put_frame(m, "[no stack]");
		}
		if (fclose(m) != 0 || !buf || pe) {
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
	struct strmap by_name; /* name -> index */
};

static long frame_id(struct frame_index *fi, const struct bundle_frame *f)
{
	size_t *known = strmap_find(&fi->by_name, f->function);
	if (known)
		return (long)*known;
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
	if (strmap_put(&fi->by_name, f->function, fi->n, NULL) < 0)
		return -1;
	fi->names[fi->n] = f->function;
	fi->first[fi->n] = f;
	return (long)fi->n++;
}

/* Samples grouped by thread, the threads in order of first appearance and
 * each thread's samples in profile order: one sort, not a pass over all
 * samples per thread. */
struct by_tid {
	int64_t tid;
	size_t i;
};

struct thread_run {
	size_t start, n; /* in the sorted by_tid array */
};

static int cmp_by_tid(const void *a, const void *b)
{
	const struct by_tid *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int cmp_run_first(const void *a, const void *b, void *order)
{
	const struct by_tid *o = order;
	size_t x = o[((const struct thread_run *)a)->start].i;
	size_t y = o[((const struct thread_run *)b)->start].i;
	return x < y ? -1 : x > y;
}

int export_speedscope(const struct bundle_profile *p, size_t value_index, const char *name,
		      FILE *out)
{
	if (value_index >= p->nvalues)
		return -EINVAL;
	cJSON *doc = cJSON_CreateObject();
	struct frame_index fi = {.by_name = STRMAP_INIT};
	int e = 0;
	struct by_tid *order = calloc(p->nsamples + 1, sizeof(*order));
	struct thread_run *runs = calloc(p->nsamples + 1, sizeof(*runs));
	size_t ntids = 0;
	if (!doc || !order || !runs) {
		cJSON_Delete(doc);
		free(order);
		free(runs);
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
	for (size_t i = 0; i < p->nsamples; i++)
		order[i] = (struct by_tid){p->samples[i].tid, i};
	qsort(order, p->nsamples, sizeof(*order), cmp_by_tid);
	for (size_t i = 0; i < p->nsamples; i++) {
		if (i == 0 || order[i].tid != order[i - 1].tid)
			runs[ntids++] = (struct thread_run){.start = i};
		runs[ntids - 1].n++;
	}
	qsort_r(runs, ntids, sizeof(*runs), cmp_run_first, order);
	const char *unit = speedscope_unit(p->value_unit[value_index]);
	for (size_t t = 0; t < ntids && e == 0; t++) {
		int64_t tid = order[runs[t].start].tid;
		cJSON *prof = cJSON_CreateObject();
		cJSON_AddItemToArray(profiles, prof);
		cJSON_AddStringToObject(prof, "type", "sampled");
		cJSON *samples = cJSON_CreateArray(), *weights = cJSON_CreateArray();
		int64_t total = 0;
		const char *comm = NULL;
		for (size_t r = 0; r < runs[t].n && e == 0; r++) {
			const struct bundle_sample *s = &p->samples[order[runs[t].start + r].i];
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
		if (tid >= 0)
			snprintf(pname, sizeof(pname), "%s (tid %lld)", comm ? comm : "?",
				 (long long)tid);
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
	strmap_release(&fi.by_name);
	free(order);
	free(runs);
	cJSON_Delete(doc);
	return e;
}
