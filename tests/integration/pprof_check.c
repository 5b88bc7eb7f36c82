#include "pprof_check.h"

#include <string.h>

const char *sample_str_label(const Perftools__Profiles__Profile *p,
			     const Perftools__Profiles__Sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_label; i++) {
		const char *k = pprof_str(p, s->label[i]->key);
		if (k && strcmp(k, key) == 0 && s->label[i]->str)
			return pprof_str(p, s->label[i]->str);
	}
	return NULL;
}

int64_t sample_num_label(const Perftools__Profiles__Profile *p,
			 const Perftools__Profiles__Sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_label; i++) {
		const char *k = pprof_str(p, s->label[i]->key);
		if (k && strcmp(k, key) == 0 && !s->label[i]->str)
			return s->label[i]->num;
	}
	return -1;
}

bool frames_contain_run(const Perftools__Profiles__Profile *p, const Perftools__Profiles__Sample *s,
			const char *const *want, size_t n)
{
	const char *names[512];
	int got = pprof_sample_frames(p, s, names, 512);
	for (int start = 0; start + (int)n <= got; start++) {
		size_t k = 0;
		while (k < n && names[start + (int)k] && strcmp(names[start + (int)k], want[k]) == 0)
			k++;
		if (k == n)
			return true;
	}
	return false;
}

bool frames_have(const Perftools__Profiles__Profile *p, const Perftools__Profiles__Sample *s,
		 const char *name)
{
	const char *names[512];
	int got = pprof_sample_frames(p, s, names, 512);
	for (int i = 0; i < got; i++)
		if (names[i] && strcmp(names[i], name) == 0)
			return true;
	return false;
}

int value_index(const Perftools__Profiles__Profile *p, const char *type)
{
	for (size_t i = 0; i < p->n_sample_type; i++) {
		const char *t = pprof_str(p, p->sample_type[i]->type);
		if (t && strcmp(t, type) == 0)
			return (int)i;
	}
	return -1;
}
