/* profile builder: encode with protobuf-c + gzip, decode with the test
 * library, and check what pprof relies on. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bundle/profile.h"
#include "pprof_read.h"

static const struct profile_value_type types[2] = {
	{ "samples", "count" },
	{ "cpu", "nanoseconds" },
};

static Perftools__Profiles__Profile *roundtrip(struct profile_builder *pb)
{
	Perftools__Profiles__Profile *p = NULL;
	uint8_t *gz;
	size_t len;

	cr_assert_eq(profile_builder_encode_gz(pb, &gz, &len), 0);
	cr_assert_gt(len, 18);
	cr_assert(gz[0] == 0x1f && gz[1] == 0x8b, "gzip magic");
	cr_assert_eq(pprof_read_buf(gz, len, &p), 0);
	free(gz);
	return p;
}

Test(profile, empty_profile_is_valid)
{
	struct profile_builder *pb =
		profile_builder_new(types, 2, (struct profile_value_type){ "cpu", "nanoseconds" }, 1);
	Perftools__Profiles__Profile *p;

	cr_assert_not_null(pb);
	p = roundtrip(pb);
	cr_assert_geq(p->n_string_table, 1);
	cr_assert_str_eq(p->string_table[0], "");
	cr_assert_eq(p->n_sample_type, 2);
	cr_assert_eq(p->n_sample, 0);
	perftools__profiles__profile__free_unpacked(p, NULL);
	profile_builder_free(pb);
}

Test(profile, roundtrip)
{
	struct profile_builder *pb = profile_builder_new(
		types, 2, (struct profile_value_type){ "cpu", "nanoseconds" }, 10000000);
	struct profile_line inl[2] = {
		{ "inner", "_Z5innerv", "a.c", 10, 12 },
		{ "outer", NULL, "a.c", 20, 25 },
	};
	struct profile_line mainl = { "main", NULL, "main.c", 1, 3 };
	struct profile_line mainl2 = { "main", NULL, "main.c", 1, 4 };
	struct profile_line nofn[2] = { { NULL, NULL, NULL, 0, 0 }, { "main", NULL, "main.c", 1, 5 } };
	struct profile_label labels[2] = {
		{ .key = "thread", .str = "worker" },
		{ .key = "bytes", .num = 42, .num_unit = "bytes" },
	};
	uint64_t m, l1, l2, l3, l4, locs[2];
	int64_t values[2] = { 1, 10000000 };
	Perftools__Profiles__Profile *p;

	cr_assert_not_null(pb);
	profile_builder_set_time(pb, 1700000000000000000LL, 2000000000LL);
	cr_assert_eq(profile_builder_add_comment(pb, "hello comment"), 0);
	m = profile_builder_add_mapping(pb, 0x400000, 0x500000, 0x1000, "/bin/app", "abcd",
					true, true, true);
	cr_assert_eq(m, 1);
	cr_assert_eq(profile_builder_add_mapping(pb, 0x700000, 0x800000, 0, NULL, NULL, false,
						 false, false), 2);
	l1 = profile_builder_add_location(pb, 0x401000, m, inl, 2);
	l2 = profile_builder_add_location(pb, 0x402000, m, &mainl, 1);
	cr_assert_eq(l1, 1);
	cr_assert_eq(l2, 2);
	/* dedup by address: the rest of the arguments are ignored */
	cr_assert_eq(profile_builder_add_location(pb, 0x401000, 0, &mainl, 1), 1);
	cr_assert_eq(profile_builder_find_location(pb, 0x402000), 2);
	cr_assert_eq(profile_builder_find_location(pb, 0x999), 0);
	/* same function, different line: one Function */
	l3 = profile_builder_add_location(pb, 0x402010, m, &mainl2, 1);
	/* a Line without a function is dropped; dangling mapping -> none */
	l4 = profile_builder_add_location(pb, 0x402020, 99, nofn, 2);
	cr_assert_eq(l3, 3);
	cr_assert_eq(l4, 4);

	locs[0] = l1, locs[1] = l2;
	cr_assert_eq(profile_builder_add_sample(pb, locs, 2, values, labels, 2), 0);
	locs[0] = l3;
	cr_assert_eq(profile_builder_add_sample(pb, locs, 1, values, NULL, 0), 0);
	locs[0] = 77;
	cr_assert_eq(profile_builder_add_sample(pb, locs, 1, values, NULL, 0), -EINVAL);
	locs[0] = 0;
	cr_assert_eq(profile_builder_add_sample(pb, locs, 1, values, NULL, 0), -EINVAL);

	p = roundtrip(pb);
	profile_builder_free(pb);

	/* string table: "" first, no duplicates */
	cr_assert_str_eq(p->string_table[0], "");
	for (size_t i = 0; i < p->n_string_table; i++)
		for (size_t j = i + 1; j < p->n_string_table; j++)
			cr_assert_str_neq(p->string_table[i], p->string_table[j], "dup %zu %zu", i, j);

	cr_assert_str_eq(pprof_str(p, p->sample_type[0]->type), "samples");
	cr_assert_str_eq(pprof_str(p, p->sample_type[0]->unit), "count");
	cr_assert_str_eq(pprof_str(p, p->sample_type[1]->type), "cpu");
	cr_assert_str_eq(pprof_str(p, p->period_type->unit), "nanoseconds");
	cr_assert_eq(p->period, 10000000);
	cr_assert_eq(p->time_nanos, 1700000000000000000LL);
	cr_assert_eq(p->duration_nanos, 2000000000LL);
	cr_assert_eq(p->n_comment, 1);
	cr_assert_str_eq(pprof_str(p, p->comment[0]), "hello comment");

	/* mappings */
	cr_assert_eq(p->n_mapping, 2);
	cr_assert_eq(p->mapping[0]->id, 1);
	cr_assert_eq(p->mapping[0]->memory_start, 0x400000);
	cr_assert_eq(p->mapping[0]->memory_limit, 0x500000);
	cr_assert_eq(p->mapping[0]->file_offset, 0x1000);
	cr_assert_str_eq(pprof_str(p, p->mapping[0]->filename), "/bin/app");
	cr_assert_str_eq(pprof_str(p, p->mapping[0]->build_id), "abcd");
	cr_assert(p->mapping[0]->has_functions && p->mapping[0]->has_filenames &&
		  p->mapping[0]->has_line_numbers && p->mapping[0]->has_inline_frames);
	cr_assert_eq(p->mapping[1]->id, 2);
	cr_assert_str_eq(pprof_str(p, p->mapping[1]->filename), "");
	cr_assert(!p->mapping[1]->has_functions && !p->mapping[1]->has_inline_frames);

	/* locations: ids 1-based, inline order kept */
	cr_assert_eq(p->n_location, 4);
	for (size_t i = 0; i < p->n_location; i++)
		cr_assert_eq(p->location[i]->id, i + 1);
	const Perftools__Profiles__Location *loc = pprof_location(p, 1);
	cr_assert_eq(loc->address, 0x401000);
	cr_assert_eq(loc->mapping_id, 1);
	cr_assert_eq(loc->n_line, 2);
	const Perftools__Profiles__Function *f = pprof_function(p, loc->line[0]->function_id);
	cr_assert_str_eq(pprof_str(p, f->name), "inner");
	cr_assert_str_eq(pprof_str(p, f->system_name), "_Z5innerv");
	cr_assert_str_eq(pprof_str(p, f->filename), "a.c");
	cr_assert_eq(f->start_line, 10);
	cr_assert_eq(loc->line[0]->line, 12);
	f = pprof_function(p, loc->line[1]->function_id);
	cr_assert_str_eq(pprof_str(p, f->name), "outer");
	cr_assert_str_eq(pprof_str(p, f->system_name), "outer");
	cr_assert_eq(loc->line[1]->line, 25);
	loc = pprof_location(p, 4);
	cr_assert_eq(loc->mapping_id, 0);
	cr_assert_eq(loc->n_line, 1);
	cr_assert_eq(loc->line[0]->line, 5);

	/* functions: inner, outer, main (shared by locations 2, 3, 4) */
	cr_assert_eq(p->n_function, 3);
	for (size_t i = 0; i < p->n_function; i++)
		cr_assert_eq(p->function[i]->id, i + 1);
	cr_assert_eq(pprof_location(p, 2)->line[0]->function_id,
		     pprof_location(p, 3)->line[0]->function_id);

	/* samples */
	cr_assert_eq(p->n_sample, 2);
	const Perftools__Profiles__Sample *s = p->sample[0];
	cr_assert_eq(s->n_value, 2);
	cr_assert_eq(s->value[0], 1);
	cr_assert_eq(s->value[1], 10000000);
	const char *names[8];
	cr_assert_eq(pprof_sample_frames(p, s, names, 8), 3);
	cr_assert_str_eq(names[0], "inner");
	cr_assert_str_eq(names[1], "outer");
	cr_assert_str_eq(names[2], "main");
	cr_assert_eq(s->n_label, 2);
	cr_assert_str_eq(pprof_str(p, s->label[0]->key), "thread");
	cr_assert_str_eq(pprof_str(p, s->label[0]->str), "worker");
	cr_assert_eq(s->label[0]->num, 0);
	cr_assert_str_eq(pprof_str(p, s->label[1]->key), "bytes");
	cr_assert_eq(s->label[1]->str, 0);
	cr_assert_eq(s->label[1]->num, 42);
	cr_assert_str_eq(pprof_str(p, s->label[1]->num_unit), "bytes");
	cr_assert_eq(p->sample[1]->n_label, 0);
	cr_assert_eq(pprof_sample_frames(p, p->sample[1], names, 8), 1);

	perftools__profiles__profile__free_unpacked(p, NULL);
}

Test(profile, many_interned_entries)
{
	struct profile_builder *pb =
		profile_builder_new(types, 1, (struct profile_value_type){ "cpu", "nanoseconds" }, 1);
	Perftools__Profiles__Profile *p;
	char name[32];

	/* enough to force several index rehashes */
	for (uint64_t i = 0; i < 5000; i++) {
		struct profile_line l = { name, NULL, "f.c", 0, (int64_t)i };
		snprintf(name, sizeof(name), "fn%llu", (unsigned long long)(i % 700));
		uint64_t id = profile_builder_add_location(pb, 0x1000 + i * 16, 0, &l, 1);
		cr_assert_eq(id, i + 1);
		int64_t v = 1;
		cr_assert_eq(profile_builder_add_sample(pb, &id, 1, &v, NULL, 0), 0);
	}
	for (uint64_t i = 0; i < 5000; i++)
		cr_assert_eq(profile_builder_find_location(pb, 0x1000 + i * 16), i + 1);
	p = roundtrip(pb);
	cr_assert_eq(p->n_function, 700);
	cr_assert_eq(p->n_location, 5000);
	cr_assert_eq(p->n_sample, 5000);
	perftools__profiles__profile__free_unpacked(p, NULL);
	profile_builder_free(pb);
}

Test(profile, read_file_rejects_non_gzip)
{
	Perftools__Profiles__Profile *p = NULL;
	char path[] = "/tmp/diag-bundle-notgz-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "hello", 5), 5);
	close(fd);
	cr_assert_eq(pprof_read_file(path, &p), -EBADMSG);
	cr_assert_null(p);
	unlink(path);
	cr_assert_eq(pprof_read_file(path, &p), -ENOENT);
}
