/* maps_parse / maps_find on hand-written /proc/PID/maps text. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "symbolize/symbolize.h"

static struct maps parse_ok(const char *text)
{
	struct maps m;
	int r = maps_parse(text, strlen(text), &m);

	cr_assert_eq(r, 0, "maps_parse: %s", strerror(-r));
	return m;
}

Test(maps, basic_fields)
{
	struct maps m = parse_ok(
		"55d53da05000-55d53da0b000 r-xp 00002000 fe:01 247498                     /usr/bin/head\n");

	cr_assert_eq(m.count, 1);
	cr_assert_eq(m.entries[0].start, 0x55d53da05000ULL);
	cr_assert_eq(m.entries[0].limit, 0x55d53da0b000ULL);
	cr_assert_eq(m.entries[0].offset, 0x2000);
	cr_assert_eq(m.entries[0].dev_major, 0xfe);
	cr_assert_eq(m.entries[0].dev_minor, 1);
	cr_assert_eq(m.entries[0].inode, 247498);
	cr_assert_str_eq(m.entries[0].perms, "r-xp");
	cr_assert_str_eq(m.entries[0].path, "/usr/bin/head");
	cr_assert(!m.entries[0].deleted);
	maps_release(&m);
}

Test(maps, path_with_spaces_and_newline_escape)
{
	struct maps m = parse_ok(
		"7f0000000000-7f0000001000 r-xp 00000000 08:02 12 /opt/my app/lib x.so\n"
		"7f0000001000-7f0000002000 r--p 00000000 08:02 13 /tmp/a\\012b.so\n");

	cr_assert_eq(m.count, 2);
	cr_assert_str_eq(m.entries[0].path, "/opt/my app/lib x.so");
	cr_assert_str_eq(m.entries[1].path, "/tmp/a\nb.so");
	maps_release(&m);
}

Test(maps, deleted_suffix)
{
	struct maps m = parse_ok(
		"7f0000000000-7f0000001000 r-xp 00001000 08:02 12   /tmp/old lib.so (deleted)\n"
		"7f0000002000-7f0000003000 r-xp 00000000 00:01 99   /memfd:jit (deleted)\n");

	cr_assert_str_eq(m.entries[0].path, "/tmp/old lib.so");
	cr_assert(m.entries[0].deleted);
	cr_assert_str_eq(m.entries[1].path, "/memfd:jit");
	cr_assert(m.entries[1].deleted);
	maps_release(&m);
}

Test(maps, anonymous_and_special)
{
	struct maps m = parse_ok(
		"00400000-00401000 r-xp 00000000 00:00 0\n"
		"01000000-01021000 rw-p 00000000 00:00 0                          [heap]\n"
		"7ffc0000-7ffc1000 rw-p 00000000 00:00 0                          [stack]\n"
		"7ffc2000-7ffc4000 r--p 00000000 00:00 0                          [vvar]\n"
		"7ffc4000-7ffc6000 r-xp 00000000 00:00 0                          [vdso]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0          [vsyscall]\n");

	cr_assert_eq(m.count, 6);
	cr_assert_str_eq(m.entries[0].path, "");
	cr_assert_eq(m.entries[0].inode, 0);
	cr_assert_str_eq(m.entries[1].path, "[heap]");
	cr_assert_str_eq(m.entries[2].path, "[stack]");
	cr_assert_str_eq(m.entries[3].path, "[vvar]");
	cr_assert_str_eq(m.entries[4].path, "[vdso]");
	cr_assert_str_eq(m.entries[5].path, "[vsyscall]");
	cr_assert_eq(m.entries[5].start, 0xffffffffff600000ULL);
	cr_assert_str_eq(m.entries[5].perms, "--xp");
	maps_release(&m);
}

Test(maps, no_trailing_newline_and_blank_lines)
{
	struct maps m = parse_ok("\n1000-2000 r-xp 00000000 00:00 0\n\n3000-4000 r--p 00000000 00:00 0 [heap]");

	cr_assert_eq(m.count, 2);
	cr_assert_str_eq(m.entries[1].path, "[heap]");
	maps_release(&m);
}

Test(maps, empty)
{
	struct maps m = parse_ok("");

	cr_assert_eq(m.count, 0);
	cr_assert_null(maps_find(&m, 0x1000));
	maps_release(&m);
}

Test(maps, malformed)
{
	static const char *bad[] = {
		"garbage\n",
		"1000 r-xp 00000000 00:00 0\n",
		"1000-2000 r-x 00000000 00:00 0\n",
		"2000-1000 r-xp 00000000 00:00 0\n",
		"1000-2000 r-xp 00000000 0000 0\n",
		"1000-2000 r-xp 00000000 00:00 x\n",
		"1000-2000 r-xp zz 00:00 0\n",
		"11112222333344445-2000 r-xp 00000000 00:00 0\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct maps m = { 0 };

		cr_assert_eq(maps_parse(bad[i], strlen(bad[i]), &m), -EINVAL, "line %zu", i);
		cr_assert_eq(m.count, 0);
	}
}

Test(maps, find)
{
	struct maps m = parse_ok(
		"1000-2000 r-xp 00000000 00:00 0\n"
		"2000-3000 r--p 00000000 00:00 0\n"
		"5000-6000 rw-p 00000000 00:00 0\n");

	cr_assert_null(maps_find(&m, 0xfff));
	cr_assert_eq(maps_find(&m, 0x1000), &m.entries[0]);
	cr_assert_eq(maps_find(&m, 0x1fff), &m.entries[0]);
	cr_assert_eq(maps_find(&m, 0x2000), &m.entries[1]);
	cr_assert_null(maps_find(&m, 0x3000));
	cr_assert_null(maps_find(&m, 0x4fff));
	cr_assert_eq(maps_find(&m, 0x5800), &m.entries[2]);
	cr_assert_null(maps_find(&m, 0x6000));
	maps_release(&m);
}

Test(maps, unsorted_input_is_sorted)
{
	struct maps m = parse_ok(
		"5000-6000 rw-p 00000000 00:00 0\n"
		"1000-2000 r-xp 00000000 00:00 0\n");

	cr_assert_eq(m.entries[0].start, 0x1000);
	cr_assert_eq(maps_find(&m, 0x5000), &m.entries[1]);
	maps_release(&m);
}

/* Arbitrary bytes, and every prefix of a valid line: never a crash, only
 * success or -EINVAL. */
Test(maps, garbage_never_crashes)
{
	static const char line[] = "7f0000000000-7f0000001000 r-xp 00001000 08:02 12   /x y (deleted)\n";
	unsigned x = 1;
	char buf[256];

	for (size_t n = 0; n <= sizeof(line) - 1; n++) {
		struct maps m;
		int r = maps_parse(line, n, &m);

		cr_assert(r == 0 || r == -EINVAL);
		if (r == 0)
			maps_release(&m);
	}
	for (int iter = 0; iter < 2000; iter++) {
		struct maps m;
		size_t n = (size_t)(iter % (int)sizeof(buf));
		int r;

		for (size_t i = 0; i < n; i++) {
			x = x * 1103515245 + 12345;
			buf[i] = "0123456789abcdef- :\n/[]x\\"[(x >> 16) % 26];
		}
		r = maps_parse(buf, n, &m);
		cr_assert(r == 0 || r == -EINVAL);
		if (r == 0)
			maps_release(&m);
	}
}
