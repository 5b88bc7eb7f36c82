/*
 * The SVG flame graph writer against names a target chooses: markup,
 * quotes, control characters and invalid UTF-8 must come out as text, and
 * the file must stay well-formed XML (checked with python3's parser, the
 * one XML parser every Debian has). The boxes and their widths follow the
 * values.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "bundle/views/flame_svg.h"

static char *write_svg(const struct bundle_profile *p, size_t *len)
{
	FILE *f = tmpfile();
	cr_assert(f);
	cr_assert_eq(export_svg(p, 0, false, "title <&> \"q\"", f), 0);
	long size = ftell(f);
	cr_assert_gt(size, 0);
	char *buf = malloc((size_t)size + 1);
	cr_assert(buf);
	rewind(f);
	cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
	buf[size] = '\0';
	fclose(f);
	*len = (size_t)size;
	return buf;
}

static bool well_formed(const char *svg, size_t len)
{
	char path[] = "/tmp/diag-svg-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, svg, len), (ssize_t)len);
	close(fd);
	char cmd[256];
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' %s 2>/dev/null", path);
	int st = system(cmd);
	unlink(path);
	return st == 0;
}

Test(flame_svg, hostile_names_are_text_and_the_xml_parses)
{
	static const char *const names[] = {
		"</text><script>alert(1)</script>", "a\"b'c&d", "ctl\x01\x1b[31m", "bad\xff\xfeutf8",
		"\xe2\x80\xae" "reversed", "]]>", "plain",
	};
	enum { N = sizeof(names) / sizeof(names[0]) };
	struct bundle_frame frames[N];
	for (size_t i = 0; i < N; i++)
		frames[i] = (struct bundle_frame){.function = names[i], .file = ""};
	int64_t v1[] = {3}, v2[] = {1};
	struct bundle_sample samples[] = {
		{.frames = frames, .nframes = N, .values = v1, .tid = -1},
		{.frames = frames + 1, .nframes = N - 1, .values = v2, .tid = -1},
	};
	const char *type[] = {"samples"}, *unit[] = {"count"};
	struct bundle_profile p = {.nvalues = 1, .value_type = type, .value_unit = unit,
				   .samples = samples, .nsamples = 2};
	size_t len;
	char *svg = write_svg(&p, &len);
	cr_expect(well_formed(svg, len), "the SVG does not parse as XML");
	cr_expect_null(strstr(svg, "<script>alert"), "markup from a name reached the file");
	cr_expect(strstr(svg, "&lt;/text&gt;&lt;script&gt;"), "the markup name is not escaped text");
	cr_expect_null(memchr(svg, '\x01', len), "a control character reached the file");
	cr_expect_null(memchr(svg, '\xff', len), "invalid UTF-8 reached the file");
	cr_expect_null(strstr(svg, "\xe2\x80\xae"), "a bidirectional override reached the file");
	/* The script's CDATA section is the only one: "]]>" in a name would
	 * end it early if names were ever put there. */
	cr_expect_eq(strstr(strstr(svg, "]]>") + 3, "]]>"), NULL, "a second CDATA end");
	/* Boxes: the root, then one per distinct path: 7 for the first
	 * sample, and the second (without the leaf) shares 6 of them. */
	size_t boxes = 0;
	for (const char *s = svg; (s = strstr(s, "<g class=\"f\"")); s++)
		boxes++;
	cr_expect_eq(boxes, 1 + N, "%zu boxes", boxes);
	/* "plain" is the outermost frame of both: 4 of 4, the whole width. */
	const char *plain = strstr(svg, "<title>plain\n");
	cr_assert(plain);
	cr_expect(strstr(plain, "4 samples, 100.00%"), "plain: %.80s", plain);
	cr_expect(strstr(plain, "width=\"1180.00\""), "plain: %.200s", plain);
	free(svg);
}

Test(flame_svg, bad_value_index)
{
	const char *type[] = {"samples"}, *unit[] = {"count"};
	struct bundle_profile p = {.nvalues = 1, .value_type = type, .value_unit = unit};
	cr_expect_eq(export_svg(&p, 1, false, NULL, stdout), -EINVAL);
}
