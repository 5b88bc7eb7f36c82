/* html: see html.h. */
#include "bundle/views/html.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle/views/html_assets.h"
#include "bundle/views/output_file.h"
#include "bundle/reader.h"
#include "bundle/text.h"

static void put_escaped(const char *s, FILE *out)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '&':
			fputs("&amp;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		default:
			fputc(*s, out);
		}
	}
}

/* JSON inside <script> ends at the first "</script", whatever the JSON
 * means; '<' only occurs inside JSON strings, where \u003c is the same
 * character, so escaping every one makes any function name safe. */
static void put_json(const char *s, FILE *out)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("\\u003c", out);
		else
			fputc(*s, out);
	}
}

int html_write(const cJSON *doc, FILE *out)
{
	char *json = json_print(doc, false);
	if (!json)
		return -ENOMEM;
	/* The title is page text, not JSON: the name as the terminal shows
	 * it, so the page is UTF-8 whatever the bundle holds. */
	char title[512], raw[400], shown[400];
	escape_text(bundle_target_describe(doc, raw, sizeof(raw)), shown, sizeof(shown));
	snprintf(title, sizeof(title), "diag-attach report: %s", shown);

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      /* Inline style and script only; nothing may be fetched. */
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
	      out);
	put_escaped(title, out);
	fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>", html_css);
	put_escaped(title, out);
	fputs("</h1>\n<div id=\"errors\"></div>\n"
	      "<section id=\"summary\"></section>\n"
	      "<section id=\"flame-section\">\n<h2>Flame graph</h2>\n"
	      "<div class=\"controls\">\n"
	      "<label>profile <select id=\"flame-profile\"></select></label>\n"
	      "<label>thread <select id=\"flame-thread\"></select></label>\n"
	      "<label>search <input id=\"flame-search\" type=\"search\" "
	      "placeholder=\"regexp\"></label>\n"
	      "<button id=\"flame-reset\" type=\"button\">Reset zoom</button>\n"
	      "<span id=\"flame-match\"></span>\n</div>\n"
	      "<div id=\"flame-info\"></div>\n<div id=\"flame\"></div>\n</section>\n"
	      "<section id=\"timeline-section\">\n<h2>Timeline</h2>\n<div "
	      "id=\"charts\"></div>\n</section>\n"
	      "<section id=\"findings-section\">\n<h2>Leak findings</h2>\n<div "
	      "id=\"findings\"></div>\n</section>\n"
	      "<section id=\"threads-section\">\n<h2>Threads grouped by identical stack</h2>\n"
	      "<table id=\"thread-groups\"></table>\n</section>\n"
	      "<section id=\"goroutines-section\"></section>\n"
	      "<script id=\"report-data\" type=\"application/json\">",
	      out);
	put_json(json, out);
	free(json);
	fprintf(out, "</script>\n<script>\n%s</script>\n</body>\n</html>\n", html_js);
	return ferror(out) ? -EIO : 0;
}

int html_write_file(const cJSON *doc, const char *path)
{
	struct output_file of;
	int e = output_file_open(&of, path);
	if (e < 0)
		return e;
	return output_file_close(&of, html_write(doc, of.fp));
}
