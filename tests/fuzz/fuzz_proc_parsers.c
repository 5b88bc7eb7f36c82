/*
 * fuzz_proc_parsers: the /proc text parsers.
 *
 *  - attach/procfs.h: procfs_parse_stat, procfs_status_field (public to
 *    attach/);
 *  - timeline/proc_sampler.c: its stat/status/io/limits parsers are static,
 *    so this file #includes proc_sampler.c to reach them (the module is
 *    not edited, and proc_sampler.c is then not linked separately).
 *
 * The same bytes go to every parser: a stat line, a status or io file, or
 * a limits table. comm in stat is under the target's control (any 15 bytes,
 * ')' and spaces included), so "the fields after the LAST ')'" rule matters.
 * Invariants:
 *  - no crash, no undefined behaviour (UBSan aborts);
 *  - procfs_parse_stat: comm is the text between the first '(' and the last
 *    ')' (cut to 63 bytes); when it succeeds, the timeline's stat parser
 *    agrees on the state character;
 *  - timeline counters parsed from text are -1 (unknown) or >= 0: never a
 *    negative that a reader would average into a wrong figure.
 */
#include "tests/fuzz/fuzz_common.h"

#include "attach/procfs.h"
#include "timeline/proc_sampler.c"

static void check_counters(const struct timeline_sample *s)
{
	for (int c = 0; c < TIMELINE_COUNTER_COUNT; c++) {
		int64_t v = *timeline_sample_counter((struct timeline_sample *)s, c);

		FUZZ_CHECK(v >= -1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {"TracerPid", "PPid", "Tgid", "Uid", "State", ""};
	char *text = fz_strndup(data, size);
	struct procfs_stat st;
	struct timeline_sample s;
	char tl_state;
	long v;
	int r;

	memset(&st, 0x5a, sizeof(st));
	r = procfs_parse_stat(text, &st);
	timeline_sample_init(&s);
	tl_state = parse_stat(text, 1e9 / 100, &s);
	check_counters(&s);
	if (r == 0) {
		const char *open = strchr(text, '('), *close = strrchr(text, ')');
		size_t n = (size_t)(close - open - 1);

		FUZZ_CHECK(open && close && open < close);
		if (n > sizeof(st.comm) - 1)
			n = sizeof(st.comm) - 1;
		FUZZ_CHECK(strlen(st.comm) <= n);
		FUZZ_CHECK(strncmp(st.comm, open + 1, strlen(st.comm)) == 0);
		FUZZ_CHECK(st.state != '\0' && st.state == close[2]);
		FUZZ_CHECK(tl_state == st.state);
	} else {
		FUZZ_CHECK(r == -EINVAL);
	}

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		r = procfs_status_field(text, keys[k], &v);
		FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EINVAL);
	}

	timeline_sample_init(&s);
	parse_status(text, &s);
	check_counters(&s);
	parse_io(text, &s);
	check_counters(&s);
	s.fd_limit = parse_limits_nofile(text);
	check_counters(&s);

	free(text);
	return 0;
}
