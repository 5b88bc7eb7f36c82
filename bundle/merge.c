/* One bundle of several processes from one bundle each (merge.h). */
#include "bundle/merge.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/gzip.h"
#include "bundle/profile.pb-c.h"
#include "bundle/reader.h"
#include "bundle/text.h"

typedef Perftools__Profiles__Profile Profile;

/* ---- profiles ---- */

static bool same_types(const Profile *a, const Profile *b)
{
	if (a->n_sample_type != b->n_sample_type)
		return false;
	for (size_t i = 0; i < a->n_sample_type; i++) {
		const char *at = a->string_table[a->sample_type[i]->type];
		const char *bt = b->string_table[b->sample_type[i]->type];
		const char *au = a->string_table[a->sample_type[i]->unit];
		const char *bu = b->string_table[b->sample_type[i]->unit];
		if (strcmp(at, bt) || strcmp(au, bu))
			return false;
	}
	return true;
}

static bool index_ok(const Profile *p, int64_t i)
{
	return i >= 0 && (uint64_t)i < p->n_string_table;
}

/* Every string index of p in range, every id non-zero: what the merge
 * follows, checked once before anything is remapped. */
static bool profile_valid(const Profile *p)
{
	if (p->n_string_table == 0 || !p->string_table[0] || p->string_table[0][0])
		return false;
	for (size_t i = 0; i < p->n_sample_type; i++)
		if (!index_ok(p, p->sample_type[i]->type) || !index_ok(p, p->sample_type[i]->unit))
			return false;
	if (p->period_type && (!index_ok(p, p->period_type->type) || !index_ok(p, p->period_type->unit)))
		return false;
	for (size_t i = 0; i < p->n_sample; i++) {
		if (p->sample[i]->n_value != p->n_sample_type)
			return false;
		for (size_t j = 0; j < p->sample[i]->n_label; j++) {
			const Perftools__Profiles__Label *l = p->sample[i]->label[j];
			if (!index_ok(p, l->key) || !index_ok(p, l->str) || !index_ok(p, l->num_unit))
				return false;
		}
	}
	for (size_t i = 0; i < p->n_mapping; i++)
		if (!index_ok(p, p->mapping[i]->filename) || !index_ok(p, p->mapping[i]->build_id))
			return false;
	for (size_t i = 0; i < p->n_function; i++) {
		const Perftools__Profiles__Function *f = p->function[i];
		if (!index_ok(p, f->name) || !index_ok(p, f->system_name) || !index_ok(p, f->filename))
			return false;
	}
	for (size_t i = 0; i < p->n_comment; i++)
		if (!index_ok(p, p->comment[i]))
			return false;
	return index_ok(p, p->drop_frames) && index_ok(p, p->keep_frames) &&
	       index_ok(p, p->default_sample_type);
}

int bundle_merge_pprof(const void *const *parts, const size_t *lens, const long *pids,
		       const char *const *comms, size_t n, bool *included, void **ret,
		       size_t *ret_len)
{
	if (n == 0)
		return -EINVAL;
	Profile **in = calloc(n, sizeof(*in));
	if (!in)
		return -ENOMEM;
	int e = 0;
	for (size_t i = 0; i < n && !e; i++) {
		uint8_t *raw = NULL;
		size_t rawlen = 0;
		e = bundle_gunzip(parts[i], lens[i], BUNDLE_MAX_INFLATED_BYTES, &raw, &rawlen);
		if (e < 0)
			break;
		in[i] = perftools__profiles__profile__unpack(NULL, rawlen, raw);
		free(raw);
		if (!in[i] || !profile_valid(in[i]))
			e = -EBADMSG;
	}

	Profile out = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__Label *added = NULL;
	/* One string table: the shared "" first, then each part's strings in
	 * their order (part i's index k > 0 moves by soff, the count before
	 * it less its own ""), each part followed by "pid", "process" and its
	 * comm. Ids move the same way: above every id of the parts before. */
	size_t nstr = 1, nsamples = 0, nmap = 0, nloc = 0, nfun = 0, ncomment = 0;
	for (size_t i = 0; i < n && !e; i++) {
		bool take = i == 0 || same_types(in[0], in[i]);
		if (included)
			included[i] = take;
		if (!take)
			continue;
		nstr += in[i]->n_string_table - 1 + 2 + 1; /* + "pid", "process", comm */
		nsamples += in[i]->n_sample;
		nmap += in[i]->n_mapping;
		nloc += in[i]->n_location;
		nfun += in[i]->n_function;
		ncomment += in[i]->n_comment;
	}
	if (!e) {
		out.string_table = calloc(nstr, sizeof(char *));
		out.sample = calloc(nsamples ? nsamples : 1, sizeof(*out.sample));
		out.mapping = calloc(nmap ? nmap : 1, sizeof(*out.mapping));
		out.location = calloc(nloc ? nloc : 1, sizeof(*out.location));
		out.function = calloc(nfun ? nfun : 1, sizeof(*out.function));
		out.comment = calloc(ncomment ? ncomment : 1, sizeof(*out.comment));
		added = calloc(nsamples ? 2 * nsamples : 1, sizeof(*added));
		if (!out.string_table || !out.sample || !out.mapping || !out.location ||
		    !out.function || !out.comment || !added)
			e = -ENOMEM;
	}
	if (!e) {
		out.string_table[out.n_string_table++] = (char *)"";
		out.sample_type = in[0]->sample_type;
		out.n_sample_type = in[0]->n_sample_type;
		out.period_type = in[0]->period_type;
		out.period = in[0]->period;
		int64_t start = 0, end = 0;
		uint64_t map_off = 0, loc_off = 0, fun_off = 0, map_max = 0, loc_max = 0, fun_max = 0;
		size_t nadded = 0;
		for (size_t i = 0; i < n; i++) {
			Profile *p = in[i];
			if (included && !included[i])
				continue;
			if (i > 0 && !same_types(in[0], p))
				continue;
			int64_t soff = (int64_t)out.n_string_table - 1;
			for (size_t k = 1; k < p->n_string_table; k++)
				out.string_table[out.n_string_table++] = p->string_table[k];
#define STR(x) ((x) ? (x) + soff : 0)
			int64_t key_pid = (int64_t)out.n_string_table;
			out.string_table[out.n_string_table++] = (char *)"pid";
			int64_t key_process = (int64_t)out.n_string_table;
			out.string_table[out.n_string_table++] = (char *)"process";
			int64_t comm = (int64_t)out.n_string_table;
			out.string_table[out.n_string_table++] = (char *)(comms[i] ? comms[i] : "?");
			if (i == 0) {
				/* The first part's own strings moved by soff = 0. */
				out.drop_frames = p->drop_frames;
				out.keep_frames = p->keep_frames;
				out.default_sample_type = p->default_sample_type;
			}
			if (p->time_nanos && (!start || p->time_nanos < start))
				start = p->time_nanos;
			if (p->time_nanos + p->duration_nanos > end)
				end = p->time_nanos + p->duration_nanos;
			for (size_t k = 0; k < p->n_comment; k++)
				out.comment[out.n_comment++] = STR(p->comment[k]);
			for (size_t k = 0; k < p->n_mapping; k++) {
				Perftools__Profiles__Mapping *m = p->mapping[k];
				m->id += map_off;
				if (m->id > map_max)
					map_max = m->id;
				m->filename = STR(m->filename);
				m->build_id = STR(m->build_id);
				out.mapping[out.n_mapping++] = m;
			}
			for (size_t k = 0; k < p->n_function; k++) {
				Perftools__Profiles__Function *f = p->function[k];
				f->id += fun_off;
				if (f->id > fun_max)
					fun_max = f->id;
				f->name = STR(f->name);
				f->system_name = STR(f->system_name);
				f->filename = STR(f->filename);
				out.function[out.n_function++] = f;
			}
			for (size_t k = 0; k < p->n_location; k++) {
				Perftools__Profiles__Location *l = p->location[k];
				l->id += loc_off;
				if (l->id > loc_max)
					loc_max = l->id;
				if (l->mapping_id)
					l->mapping_id += map_off;
				for (size_t j = 0; j < l->n_line; j++)
					if (l->line[j]->function_id)
						l->line[j]->function_id += fun_off;
				out.location[out.n_location++] = l;
			}
			for (size_t k = 0; k < p->n_sample; k++) {
				Perftools__Profiles__Sample *s = p->sample[k];
				for (size_t j = 0; j < s->n_location_id; j++)
					s->location_id[j] += loc_off;
				for (size_t j = 0; j < s->n_label; j++) {
					Perftools__Profiles__Label *l = s->label[j];
					l->key = STR(l->key);
					l->str = STR(l->str);
					l->num_unit = STR(l->num_unit);
				}
				/* protobuf-c's default allocator is malloc: the part
				 * frees this array, with our two labels taken back
				 * out first (below). */
				Perftools__Profiles__Label **grown =
					realloc(s->label, (s->n_label + 2) * sizeof(*grown));
				if (!grown) {
					e = -ENOMEM;
					goto pack;
				}
				s->label = grown;
				Perftools__Profiles__Label *lp = &added[nadded++], *lc = &added[nadded++];
				perftools__profiles__label__init(lp);
				perftools__profiles__label__init(lc);
				lp->key = key_pid;
				lp->num = pids[i];
				lc->key = key_process;
				lc->str = comm;
				s->label[s->n_label++] = lp;
				s->label[s->n_label++] = lc;
				out.sample[out.n_sample++] = s;
			}
#undef STR
			/* The next part's ids start above every id given so far. */
			map_off = map_max;
			loc_off = loc_max;
			fun_off = fun_max;
		}
		out.time_nanos = start;
		out.duration_nanos = end > start ? end - start : 0;
	}
pack:
	if (!e) {
		size_t len = perftools__profiles__profile__get_packed_size(&out);
		uint8_t *buf = malloc(len ? len : 1);
		if (!buf) {
			e = -ENOMEM;
		} else {
			perftools__profiles__profile__pack(&out, buf);
			uint8_t *gz = NULL;
			size_t gzlen = 0;
			e = bundle_gzip(buf, len, 6, &gz, &gzlen);
			free(buf);
			if (!e) {
				*ret = gz;
				*ret_len = gzlen;
			}
		}
	}
	/* The two labels added to each sample are ours (in added[]), not the
	 * part's: take them back out before the part frees its own. They
	 * were added to the out.n_sample samples of out.sample, in order. */
	for (size_t k = 0; k < out.n_sample; k++)
		out.sample[k]->n_label -= 2;
	for (size_t i = 0; i < n; i++) {
		if (!in[i])
			continue;
		perftools__profiles__profile__free_unpacked(in[i], NULL);
	}
	free(in);
	free(out.string_table);
	free(out.sample);
	free(out.mapping);
	free(out.location);
	free(out.function);
	free(out.comment);
	free(added);
	return e;
}

/* ---- the manifest ---- */

/* Keys whose values do not add up across processes: the largest is the
 * group's (a rate asked, a duration, a worst pause). Everything else
 * numeric is a count and is summed. */
static bool take_max(const char *k)
{
	static const char *const keys[] = {
		"achieved_hz",	  "frequency_hz",	  "duration_requested_s", "duration_s",	     "interval_s",
		"ticks",	  "final_hz",		  "tid_labels_max",  "stack_bytes_max",
		"stop_timeout_ms", "other_threads_factor", "p50_us",	     "p99_us",
		"max_us",	  "process_hold_us",	  "thread_hold_max_us", "limit_hz",
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(k, keys[i]) == 0)
			return true;
	return false;
}

/* Fold src (one process's capture, pause or interpretation object) into
 * dst, a copy of the first one's: numbers summed or maxed (take_max),
 * objects recursively, a string that differs becomes "mixed", anything
 * else stays the first process's. (achieved_hz is set after, from the
 * longest capture.) */
static void fold_summary(cJSON *dst, const cJSON *src)
{
	const cJSON *s;
	cJSON_ArrayForEach(s, src)
	{
		if (!s->string)
			continue;
		cJSON *d = cJSON_GetObjectItemCaseSensitive(dst, s->string);
		if (!d) {
			cJSON_AddItemToObject(dst, s->string, cJSON_Duplicate(s, true));
		} else if (cJSON_IsNumber(d) && cJSON_IsNumber(s)) {
			double v = take_max(s->string) ? fmax(d->valuedouble, s->valuedouble)
						       : d->valuedouble + s->valuedouble;
			cJSON_SetNumberValue(d, v);
		} else if (cJSON_IsObject(d) && cJSON_IsObject(s)) {
			fold_summary(d, s);
		} else if (cJSON_IsString(d) && cJSON_IsString(s) && strcmp(d->valuestring, s->valuestring)) {
			cJSON_ReplaceItemInObjectCaseSensitive(dst, s->string, cJSON_CreateString("mixed"));
		}
	}
}

static const char *manifest_str(const cJSON *m, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void copy_key(cJSON *to, const cJSON *from, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, key);
	if (v)
		cJSON_AddItemToObject(to, key, cJSON_Duplicate(v, true));
}

/* The part's findings, each saying its pid, with its evidence paths moved
 * under processes/PID/ where the merge puts them. */
static void add_findings(cJSON *all, const cJSON *part, long pid, const char *prefix)
{
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(part, "findings"))
	{
		cJSON *c = cJSON_Duplicate(f, true);
		if (!c)
			continue;
		cJSON_AddNumberToObject(c, "pid", (double)pid);
		cJSON *dumps = cJSON_GetObjectItemCaseSensitive(c, "dumps");
		cJSON *d;
		cJSON_ArrayForEach(d, dumps)
		{
			if (!cJSON_IsString(d))
				continue;
			char *moved = malloc(strlen(prefix) + strlen(d->valuestring) + 1);
			if (!moved)
				continue;
			sprintf(moved, "%s%s", prefix, d->valuestring);
			cJSON_SetValuestring(d, moved);
			free(moved);
		}
		cJSON_AddItemToArray(all, c);
	}
}

/* The merged manifest (without members and timeline) from the parts'. */
static cJSON *merged_manifest(cJSON *const *parts, const long *pids, size_t n)
{
	cJSON *m = cJSON_CreateObject();
	if (!m)
		return NULL;
	char id[37];
	make_uuid(id);
	cJSON_AddStringToObject(m, "bundle_id", id);
	cJSON_AddNumberToObject(m, "format_version", BUNDLE_FORMAT_VERSION);
	copy_key(m, parts[0], "tool");
	cJSON *targets = cJSON_AddArrayToObject(m, "target");
	copy_key(m, parts[0], "host");
	const char *started = NULL, *ended = NULL;
	bool all_exited = true;
	cJSON *capture = NULL, *pause = NULL, *interp = NULL;
	cJSON *findings = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		const cJSON *p = parts[i];
		const char *s = manifest_str(p, "started_at"), *e = manifest_str(p, "ended_at");
		/* RFC 3339 in UTC with milliseconds: text order is time order. */
		if (s && (!started || strcmp(s, started) < 0))
			started = s;
		if (e && (!ended || strcmp(e, ended) > 0))
			ended = e;
		all_exited = all_exited && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "target_exited"));
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "target");
		cJSON *entry = cJSON_IsObject(t) ? cJSON_Duplicate(t, true) : cJSON_CreateObject();
		static const char *const own[] = {"started_at", "ended_at", "target_exited", "mode",
						  "capture", "pause", "interpretation", "findings",
						  "leak_watch", "launched"};
		for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++)
			copy_key(entry, p, own[k]);
		cJSON_AddItemToArray(targets, entry);
		char prefix[48];
		snprintf(prefix, sizeof(prefix), "processes/%ld/", pids[i]);
		add_findings(findings, p, pids[i], prefix);
		static const char *const folded[] = {"capture", "pause", "interpretation"};
		cJSON **into[] = {&capture, &pause, &interp};
		for (size_t k = 0; k < 3; k++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, folded[k]);
			if (!cJSON_IsObject(v))
				continue;
			if (!*into[k])
				*into[k] = cJSON_Duplicate(v, true);
			else
				fold_summary(*into[k], v);
		}
	}
	if (started)
		cJSON_AddStringToObject(m, "started_at", started);
	if (ended)
		cJSON_AddStringToObject(m, "ended_at", ended);
	copy_key(m, parts[0], "mode");
	copy_key(m, parts[0], "annotations");
	copy_key(m, parts[0], "leak_watch");
	cJSON_AddBoolToObject(m, "target_exited", all_exited);
	if (capture) {
		/* The rate the group was sampled at is its longest-lived
		 * process's: a child that lived 50 ms has a rate of noise. */
		double longest = -1, hz = NAN;
		for (size_t i = 0; i < n; i++) {
			const cJSON *c = cJSON_GetObjectItemCaseSensitive(parts[i], "capture");
			double d = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "duration_s"));
			double h = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "achieved_hz"));
			if (!isnan(d) && !isnan(h) && d > longest) {
				longest = d;
				hz = h;
			}
		}
		if (!isnan(hz))
			cJSON_ReplaceItemInObjectCaseSensitive(capture, "achieved_hz", cJSON_CreateNumber(hz));
		cJSON_AddNumberToObject(capture, "processes", (double)n);
		cJSON_AddItemToObject(m, "capture", capture);
	}
	if (pause)
		cJSON_AddItemToObject(m, "pause", pause);
	if (interp)
		cJSON_AddItemToObject(m, "interpretation", interp);
	cJSON_AddItemToObject(m, "findings", findings);
	return m;
}

/* ---- the timeline ---- */

/* The interval a point belongs to: the nearest whole number of intervals
 * after the group's first point (each process samples at its own phase;
 * a point a little early or late still lands in its own interval). */
static long bucket_of(double t, double t0, double interval)
{
	return (long)floor((t - t0) / interval + 0.5);
}

static void add_total(cJSON *line, const char *name, double v)
{
	const char *dot = strchr(name, '.');
	if (!dot) {
		cJSON_AddNumberToObject(line, name, v);
		return;
	}
	char outer[128];
	snprintf(outer, sizeof(outer), "%.*s", (int)(dot - name), name);
	cJSON *o = cJSON_GetObjectItemCaseSensitive(line, outer);
	if (!o)
		o = cJSON_AddObjectToObject(line, outer);
	cJSON_AddNumberToObject(o, dot + 1, v);
}

/* One process's series, walked once, interval by interval. */
struct series {
	const struct bundle_timeline *tl;
	long first_bucket, last_bucket; /* -1 when empty */
	size_t next;    /* its first point not yet taken */
	long *column;   /* the group's counter c is its counter column[c], or -1 */
	double *last;   /* per group counter: its latest value so far (NAN: none) */
	double *first;  /* per group counter: its first value (NAN: none) */
};

/* runtime.jsonl of the group: one line per interval from the first
 * process's first point to the last one's last. A level (RSS, threads,
 * fds) is the sum over the processes alive then (fd_limit the largest);
 * a running total the sum of what each process added since its first
 * point, kept after it exits, so that its rate never jumps. "processes"
 * counts those alive. Each series is walked once: O(points x counters +
 * intervals x counters x processes). *ret malloc'd. */
static int timeline_totals(const struct bundle_timeline *const *tls, size_t n, double interval,
			   char **ret, size_t *ret_len, size_t *ret_lines)
{
	if (interval <= 0)
		interval = 1;
	double t0 = INFINITY;
	for (size_t i = 0; i < n; i++)
		if (tls[i] && tls[i]->npoints && tls[i]->t[0] < t0)
			t0 = tls[i]->t[0];
	/* The group's counters: every name any process has, first seen first. */
	size_t nnames = 0, cap = 0;
	for (size_t i = 0; i < n; i++)
		cap += tls[i] ? tls[i]->ncounters : 0;
	const char **names = calloc(cap ? cap : 1, sizeof(*names));
	struct series *s = calloc(n ? n : 1, sizeof(*s));
	int e = names && s ? 0 : -ENOMEM;
	for (size_t i = 0; i < n && !e; i++)
		for (size_t c = 0; tls[i] && c < tls[i]->ncounters; c++) {
			const char *name = tls[i]->counters[c].name;
			bool seen = strcmp(name, "processes") == 0;
			for (size_t k = 0; k < nnames && !seen; k++)
				seen = strcmp(names[k], name) == 0;
			if (!seen)
				names[nnames++] = name;
		}
	long nb = 0;
	for (size_t i = 0; i < n && !e; i++) {
		s[i].tl = tls[i];
		s[i].first_bucket = s[i].last_bucket = -1;
		s[i].column = malloc((nnames ? nnames : 1) * sizeof(*s[i].column));
		s[i].last = malloc((nnames ? nnames : 1) * sizeof(*s[i].last));
		s[i].first = malloc((nnames ? nnames : 1) * sizeof(*s[i].first));
		if (!s[i].column || !s[i].last || !s[i].first) {
			e = -ENOMEM;
			break;
		}
		for (size_t k = 0; k < nnames; k++) {
			s[i].column[k] = -1;
			s[i].last[k] = s[i].first[k] = NAN;
			for (size_t c = 0; tls[i] && c < tls[i]->ncounters; c++)
				if (strcmp(tls[i]->counters[c].name, names[k]) == 0)
					s[i].column[k] = (long)c;
		}
		if (!tls[i] || !tls[i]->npoints)
			continue;
		s[i].first_bucket = bucket_of(tls[i]->t[0], t0, interval);
		s[i].last_bucket = bucket_of(tls[i]->t[tls[i]->npoints - 1], t0, interval);
		if (s[i].last_bucket + 1 > nb)
			nb = s[i].last_bucket + 1;
	}
	char *buf = NULL;
	size_t len = 0, lines = 0;
	FILE *f = e ? NULL : open_memstream(&buf, &len);
	if (!e && !f)
		e = -ENOMEM;
	for (long b = 0; b < nb && !e; b++) {
		/* Take every point of this interval: the latest value of each
		 * counter, and the time of the latest point. */
		double latest = t0 + (double)b * interval;
		int alive = 0;
		for (size_t i = 0; i < n; i++) {
			const struct bundle_timeline *tl = s[i].tl;
			for (; tl && s[i].next < tl->npoints &&
			       bucket_of(tl->t[s[i].next], t0, interval) <= b;
			     s[i].next++) {
				size_t k = s[i].next;
				if (tl->t[k] > latest)
					latest = tl->t[k];
				for (size_t c = 0; c < nnames; c++) {
					long col = s[i].column[c];
					double v = col >= 0 ? tl->counters[col].v[k] : NAN;
					if (isnan(v))
						continue;
					if (isnan(s[i].first[c]))
						s[i].first[c] = v;
					s[i].last[c] = v;
				}
			}
			alive += s[i].first_bucket >= 0 && s[i].first_bucket <= b && b <= s[i].last_bucket;
		}
		cJSON *line = cJSON_CreateObject();
		if (!line) {
			e = -ENOMEM;
			break;
		}
		char when[32];
		format_rfc3339_ms((uint64_t)(latest * 1e9), when);
		cJSON_AddStringToObject(line, "t", when);
		cJSON_AddNumberToObject(line, "processes", alive);
		for (size_t c = 0; c < nnames; c++) {
			bool running = bundle_counter_cumulative(names[c]);
			bool is_max = strcmp(names[c], "fd_limit") == 0;
			double total = 0;
			bool any = false;
			for (size_t i = 0; i < n; i++) {
				if (isnan(s[i].last[c]) || s[i].first_bucket < 0 || b < s[i].first_bucket)
					continue;
				if (!running && b > s[i].last_bucket)
					continue; /* a level of a process gone */
				double x = running ? s[i].last[c] - s[i].first[c] : s[i].last[c];
				total = !any ? x : is_max ? fmax(total, x) : total + x;
				any = true;
			}
			if (any)
				add_total(line, names[c], total);
		}
		char *text = cJSON_PrintUnformatted(line);
		cJSON_Delete(line);
		if (!text) {
			e = -ENOMEM;
			break;
		}
		fprintf(f, "%s\n", text);
		free(text);
		lines++;
	}
	for (size_t i = 0; s && i < n; i++) {
		free(s[i].column);
		free(s[i].last);
		free(s[i].first);
	}
	free(s);
	free(names);
	if (f && fclose(f) != 0 && !e)
		e = -ENOMEM;
	if (e) {
		free(buf);
		return e;
	}
	*ret = buf;
	*ret_len = len;
	*ret_lines = lines;
	return 0;
}

/* ---- members ---- */

static bool is_top_level(const char *name, const char *suffix)
{
	size_t n = strlen(name), m = strlen(suffix);
	return !strchr(name, '/') && n > m && strcmp(name + n - m, suffix) == 0;
}

/* Has an earlier part (0..i) listed name? Then it was merged already. */
static bool listed_before(struct bundle_reader *const *r, size_t i, const char *name)
{
	for (size_t j = 0; j < i; j++)
		if (bundle_reader_has(r[j], name))
			return true;
	return false;
}

static int copy_member(struct bundle *out, struct bundle_reader *r, const char *name,
		       const char *as)
{
	char *data = NULL;
	size_t len = 0;
	int e = bundle_reader_read(r, name, &data, &len);
	if (e == 0)
		e = bundle_write_member(out, as, data, len);
	free(data);
	return e;
}

static int merge_profiles(struct bundle *out, struct bundle_reader *const *r, size_t n,
			  const char *name, const long *pids, const char *const *comms)
{
	const void **data = calloc(n, sizeof(*data));
	size_t *lens = calloc(n, sizeof(*lens));
	long *which_pid = calloc(n, sizeof(*which_pid));
	const char **which_comm = calloc(n, sizeof(*which_comm));
	size_t *from = calloc(n, sizeof(*from));
	bool *in = calloc(n, sizeof(*in));
	int e = data && lens && which_pid && which_comm && from && in ? 0 : -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n && !e; i++) {
		if (!bundle_reader_has(r[i], name))
			continue;
		char *d = NULL;
		e = bundle_reader_read(r[i], name, &d, &lens[k]);
		data[k] = d;
		which_pid[k] = pids[i];
		which_comm[k] = comms[i];
		from[k++] = i;
	}
	void *merged = NULL;
	size_t merged_len = 0;
	if (!e && k)
		e = bundle_merge_pprof(data, lens, which_pid, which_comm, k, in, &merged, &merged_len);
	if (!e && k)
		e = bundle_write_member(out, name, merged, merged_len);
	/* A profile of other sample types (another engine) stays whole, in
	 * its process's own directory. */
	for (size_t j = 0; j < k && !e; j++) {
		if (in[j])
			continue;
		char as[4096];
		snprintf(as, sizeof(as), "processes/%ld/%s", which_pid[j], name);
		e = bundle_write_member(out, as, data[j], lens[j]);
	}
	free(merged);
	for (size_t j = 0; data && j < k; j++)
		free((void *)data[j]);
	free(data);
	free(lens);
	free(which_pid);
	free(which_comm);
	free(from);
	free(in);
	return e;
}

static int concat_texts(struct bundle *out, struct bundle_reader *const *r, size_t n,
			const char *name, const long *pids, const char *const *comms)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	int e = 0;
	for (size_t i = 0; i < n && !e; i++) {
		if (!bundle_reader_has(r[i], name))
			continue;
		char *d = NULL;
		size_t dl = 0;
		e = bundle_reader_read(r[i], name, &d, &dl);
		if (e)
			break;
		char comm[256];
		fprintf(f, "%s=== process %ld (%s) ===\n\n", ftell(f) ? "\n" : "", pids[i],
			escape_text(comms[i] ? comms[i] : "?", comm, sizeof(comm)));
		fwrite(d, 1, dl, f);
		free(d);
	}
	if (fclose(f) != 0 && !e)
		e = -ENOMEM;
	if (!e)
		e = bundle_write_member(out, name, buf, len);
	free(buf);
	return e;
}

int bundle_merge(struct bundle *out, const char *const *part_dirs, size_t n,
		 cJSON **ret_manifest)
{
	if (n == 0)
		return -EINVAL;
	struct bundle_reader **r = calloc(n, sizeof(*r));
	cJSON **manifests = calloc(n, sizeof(*manifests));
	long *pids = calloc(n, sizeof(*pids));
	const char **comms = calloc(n, sizeof(*comms));
	const struct bundle_timeline **tls = calloc(n, sizeof(*tls));
	int e = r && manifests && pids && comms && tls ? 0 : -ENOMEM;
	for (size_t i = 0; i < n && !e; i++) {
		e = bundle_reader_open(part_dirs[i], &r[i]);
		if (e)
			break;
		manifests[i] = (cJSON *)bundle_reader_manifest(r[i]);
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(manifests[i], "target");
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(t, "pid");
		if (!cJSON_IsNumber(pid) || pid->valuedouble < 1) {
			e = -EBADMSG;
			break;
		}
		pids[i] = (long)pid->valuedouble;
		comms[i] = manifest_str(t, "comm");
	}
	cJSON *m = e ? NULL : merged_manifest(manifests, pids, n);
	if (!e && !m)
		e = -ENOMEM;

	/* The timeline: totals at the top, each process's own beside it. */
	const cJSON *tlm = e ? NULL : cJSON_GetObjectItemCaseSensitive(manifests[0], "timeline");
	const char *tl_member = tlm ? manifest_str(tlm, "member") : NULL;
	if (!e && tl_member) {
		cJSON *per = cJSON_CreateObject();
		for (size_t i = 0; i < n && !e; i++) {
			if (!bundle_reader_has(r[i], tl_member))
				continue;
			char as[4096];
			snprintf(as, sizeof(as), "processes/%ld/%s", pids[i], tl_member);
			e = copy_member(out, r[i], tl_member, as);
			if (e)
				break;
			char key[24];
			snprintf(key, sizeof(key), "%ld", pids[i]);
			cJSON_AddStringToObject(per, key, as);
			/* A timeline past the reader's caps is kept, not
			 * totalled. */
			if (bundle_reader_timeline(r[i], &tls[i]) < 0)
				tls[i] = NULL;
		}
		const cJSON *iv = cJSON_GetObjectItemCaseSensitive(tlm, "interval_s");
		char *tot = NULL;
		size_t totlen = 0, lines = 0;
		if (!e)
			e = timeline_totals(tls, n, cJSON_IsNumber(iv) ? iv->valuedouble : 1, &tot, &totlen,
					    &lines);
		if (!e)
			e = bundle_write_member(out, tl_member, tot, totlen);
		free(tot);
		cJSON *tj = cJSON_Duplicate(tlm, true);
		cJSON_ReplaceItemInObjectCaseSensitive(tj, "samples", cJSON_CreateNumber((double)lines));
		cJSON_AddStringToObject(tj, "totals", "levels summed over the processes alive; running "
						      "totals summed from each process's first point");
		cJSON_AddItemToObject(tj, "per_process", per);
		cJSON_AddItemToObject(m, "timeline", tj);
	}

	for (size_t i = 0; i < n && !e; i++) {
		const cJSON *mem;
		cJSON_ArrayForEach(mem, cJSON_GetObjectItemCaseSensitive(manifests[i], "members"))
		{
			const char *name = manifest_str(mem, "name");
			if (!name || (tl_member && strcmp(name, tl_member) == 0))
				continue;
			bool shared = is_top_level(name, ".pprof") || is_top_level(name, ".txt") ||
				      strncmp(name, "binaries/", 9) == 0;
			/* A shared member was merged from the first part
			 * that has it, across all parts from there. */
			if (shared && listed_before(r, i, name))
				continue;
			if (is_top_level(name, ".pprof")) {
				e = merge_profiles(out, r + i, n - i, name, pids + i, comms + i);
			} else if (is_top_level(name, ".txt")) {
				e = concat_texts(out, r + i, n - i, name, pids + i, comms + i);
			} else if (strncmp(name, "binaries/", 9) == 0) {
				/* Named by build-id: the same file whoever mapped it. */
				e = copy_member(out, r[i], name, name);
			} else {
				char as[4096];
				int w = snprintf(as, sizeof(as), "processes/%ld/%s", pids[i], name);
				e = w < 0 || (size_t)w >= sizeof(as) ? -ENAMETOOLONG
								     : copy_member(out, r[i], name, as);
			}
			if (e)
				break;
		}
	}
	for (size_t i = 0; r && i < n; i++)
		bundle_reader_free(r[i]);
	free(r);
	free(manifests);
	free(pids);
	free(comms);
	free(tls);
	if (e) {
		cJSON_Delete(m);
		return e;
	}
	*ret_manifest = m;
	return 0;
}
