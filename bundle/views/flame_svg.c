/* flame_svg: see flame_svg.h. The layout is computed here, once; the
 * script only rescales boxes for a zoom and recolours them for a search,
 * so the file reads (static) even where scripts do not run. */
#include "bundle/views/flame_svg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/strmap.h"
#include "bundle/text.h"

#define SVG_WIDTH 1200
#define SVG_XPAD 10
#define FRAME_HEIGHT 16
#define FONT_SIZE 12
#define TOP_PAD 50    /* title and buttons */
#define BOTTOM_PAD 34 /* the details and matched lines */

struct fnode {
	const char *name; /* the profile's, or own */
	char *own;        /* allocated here: the per-thread frame, and keys */
	char *key;        /* "parent\x1fname", for the child index */
	int64_t value;
	size_t first_child, next_sibling, depth;
	int64_t x; /* in value units from the left edge */
};

struct tree {
	struct fnode *v;
	size_t n, cap;
	struct strmap children; /* key -> node */
};

#define NONE SIZE_MAX

static size_t new_node(struct tree *t, const char *name, char *key)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		struct fnode *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return NONE;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n] = (struct fnode){.name = name, .key = key, .first_child = NONE,
				    .next_sibling = NONE};
	return t->n++;
}

/* The child of parent named name, made if new. NONE on ENOMEM. */
static size_t child(struct tree *t, size_t parent, const char *name)
{
	char *key = NULL;
	if (asprintf(&key, "%zu\x1f%s", parent, name) < 0)
		return NONE;
	size_t *found = strmap_find(&t->children, key);
	if (found) {
		free(key);
		return *found;
	}
	size_t c = new_node(t, name, key);
	if (c == NONE || strmap_put(&t->children, key, c, NULL) < 0) {
		if (c == NONE)
			free(key);
		return NONE;
	}
	t->v[c].depth = t->v[parent].depth + 1;
	t->v[c].next_sibling = t->v[parent].first_child;
	t->v[parent].first_child = c;
	return c;
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].own);
		free(t->v[i].key);
	}
	free(t->v);
	strmap_release(&t->children);
}

static int build(struct tree *t, const struct bundle_profile *p, size_t vi, bool per_thread)
{
	if (new_node(t, "all", NULL) == NONE)
		return -ENOMEM;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct bundle_sample *s = &p->samples[i];
		int64_t v = s->values[vi];
		if (v <= 0)
			continue;
		t->v[0].value += v;
		size_t cur = 0;
		if (per_thread) {
			char *name = NULL;
			if (asprintf(&name, "%s/%" PRId64, s->thread_comm ? s->thread_comm : "?", s->tid) < 0)
				return -ENOMEM;
			size_t c = child(t, cur, name);
			if (c == NONE) {
				free(name);
				return -ENOMEM;
			}
			if (t->v[c].name == name)
				t->v[c].own = name;
			else
				free(name);
			cur = c;
			t->v[cur].value += v;
		}
		for (size_t k = s->nframes; k-- > 0;) {
			cur = child(t, cur, s->frames[k].function);
			if (cur == NONE)
				return -ENOMEM;
			t->v[cur].value += v;
		}
	}
	return 0;
}

static const struct tree *sort_tree;

static int cmp_by_name(const void *a, const void *b)
{
	return strcmp(sort_tree->v[*(const size_t *)a].name, sort_tree->v[*(const size_t *)b].name);
}

/* Siblings in name order (FlameGraph's), each placed after the previous
 * one; returns the deepest depth. */
static int layout(struct tree *t, size_t *ret_depth)
{
	size_t *kids = malloc(t->n * sizeof(*kids)), *stack = malloc(t->n * sizeof(*stack));
	if (!kids || !stack) {
		free(kids);
		free(stack);
		return -ENOMEM;
	}
	size_t top = 0, deepest = 0;
	stack[top++] = 0;
	sort_tree = t;
	while (top) {
		size_t n = stack[--top];
		if (t->v[n].depth > deepest)
			deepest = t->v[n].depth;
		size_t nk = 0;
		for (size_t c = t->v[n].first_child; c != NONE; c = t->v[c].next_sibling)
			kids[nk++] = c;
		qsort(kids, nk, sizeof(*kids), cmp_by_name);
		int64_t x = t->v[n].x;
		for (size_t i = 0; i < nk; i++) {
			t->v[kids[i]].x = x;
			x += t->v[kids[i]].value;
			stack[top++] = kids[i];
		}
	}
	free(kids);
	free(stack);
	*ret_depth = deepest;
	return 0;
}

/* The five XML escapes of text that escape_text has made safe. */
static void put_xml_escaped(FILE *f, const char *c)
{
	for (; *c; c++) {
		switch (*c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default: fputc(*c, f);
		}
	}
}

/* XML text of s: escape_text first (controls, invalid UTF-8 and
 * bidirectional marks become visible escapes), then the five XML ones. */
static void put_xml(FILE *f, const char *s)
{
	char buf[4 * 512 + 1];
	put_xml_escaped(f, escape_text(s, buf, sizeof(buf)));
}

/* The label that fits a box w pixels wide, as the script's fit() makes it:
 * the name, or its start and "..", or nothing below three characters. Cut
 * between UTF-8 characters, never inside one (the XML would not parse). */
static void put_label(FILE *f, const char *s, double w)
{
	char buf[4 * 512 + 1];
	const char *e = escape_text(s, buf, sizeof(buf));
	double fit = (w - 6) / (FONT_SIZE * 0.59);
	if (fit < 3)
		return;
	size_t n = (size_t)fit, len = strlen(e), chars = 0, cut = 0;
	for (size_t i = 0; i < len; i++)
		chars += ((unsigned char)e[i] & 0xC0) != 0x80;
	if (chars > n) {
		/* the byte after n - 2 characters */
		size_t seen = 0;
		for (cut = 0; cut < len; cut++) {
			if (((unsigned char)e[cut] & 0xC0) != 0x80 && seen++ == n - 2)
				break;
		}
		buf[cut] = '\0'; /* e is buf */
	}
	put_xml_escaped(f, e);
	if (chars > n)
		fputs("..", f);
}

static void put_value(FILE *f, int64_t v, const char *unit)
{
	if (unit && strcmp(unit, "nanoseconds") == 0) {
		double s = (double)v / 1e9;
		if (s >= 1)
			fprintf(f, "%.2f s", s);
		else
			fprintf(f, "%.2f ms", s * 1e3);
	} else {
		fprintf(f, "%" PRId64 " %s", v, unit && strcmp(unit, "count") ? unit : "samples");
	}
}

/* A warm colour per name, stable across files (FlameGraph's palette). */
static void put_colour(FILE *f, const char *name)
{
	uint32_t h = 2166136261u;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 16777619u;
	fprintf(f, "rgb(%u,%u,%u)", 205 + h % 51, (h >> 8) % 231, (h >> 16) % 56);
}

static const char script[] =
	"var frames, details, matched;\n"
	"function rect(g) { return g.getElementsByTagName('rect')[0]; }\n"
	"function name_of(g) { return g.getElementsByTagName('title')[0].textContent.split('\\n')[0]; }\n"
	"function num(g, a) { return parseFloat(g.getAttribute(a)); }\n"
	/* To the hundredth, as the file's own boxes: w * (W / w) is not
	 * always W in doubles, and 1180.0000000000002 is no way to say 1180. */
	"function px(v) { return Math.round(v * 100) / 100; }\n"
	"function boxes() { return frames.getElementsByTagName('g'); }\n"
	"function fit(g) {\n"
	"  var r = rect(g), t = g.getElementsByTagName('text')[0];\n"
	"  var w = parseFloat(r.getAttribute('width')), n = Math.floor((w - 6) / (FS * 0.59));\n"
	"  t.setAttribute('x', parseFloat(r.getAttribute('x')) + 3);\n"
	"  var s = name_of(g);\n"
	"  t.textContent = n < 3 ? '' : s.length <= n ? s : s.substring(0, n - 2) + '..';\n"
	"}\n"
	"function zoom(node) {\n"
	"  var ox = num(node, 'data-x'), ow = num(node, 'data-w'), oy = num(rect(node), 'y');\n"
	"  var ratio = (W - 2 * XPAD) / ow, gs = boxes(), e = 1e-6 * ow;\n"
	"  document.getElementById('unzoom').setAttribute('class', '');\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i], r = rect(g), x = num(g, 'data-x'), w = num(g, 'data-w');\n"
	"    var y = num(r, 'y'), inside = x >= ox - e && x + w <= ox + ow + e;\n"
	"    if (y > oy && x <= ox + e && x + w >= ox + ow - e) {\n"
	"      r.setAttribute('x', XPAD); r.setAttribute('width', W - 2 * XPAD); g.setAttribute('class', 'f parent');\n"
	"    } else if (y <= oy && inside) {\n"
	"      r.setAttribute('x', px(XPAD + (x - ox) * ratio)); r.setAttribute('width', px(w * ratio));\n"
	"      g.setAttribute('class', 'f');\n"
	"    } else {\n"
	"      g.setAttribute('class', 'f hide');\n"
	"    }\n"
	"    fit(g);\n"
	"  }\n"
	"}\n"
	"function unzoom() {\n"
	"  var gs = boxes();\n"
	"  document.getElementById('unzoom').setAttribute('class', 'hide');\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i], r = rect(g);\n"
	"    r.setAttribute('x', g.getAttribute('data-px')); r.setAttribute('width', g.getAttribute('data-pw'));\n"
	"    g.setAttribute('class', 'f'); fit(g);\n"
	"  }\n"
	"}\n"
	"function reset_search() {\n"
	"  var gs = boxes();\n"
	"  for (var i = 0; i < gs.length; i++) rect(gs[i]).setAttribute('fill', gs[i].getAttribute('data-fill'));\n"
	"  matched.textContent = ' ';\n"
	"  document.getElementById('search').textContent = 'Search';\n"
	"}\n"
	"function search(term) {\n"
	"  reset_search();\n"
	"  var re;\n"
	"  try { re = new RegExp(term); } catch (err) {\n"
	"    matched.textContent = 'Not a regular expression: ' + term; return;\n"
	"  }\n"
	"  var gs = boxes(), spans = [], total = num(gs[0], 'data-w');\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    if (!re.test(name_of(gs[i]))) continue;\n"
	"    rect(gs[i]).setAttribute('fill', 'rgb(230,0,230)');\n"
	"    spans.push([num(gs[i], 'data-x'), num(gs[i], 'data-w')]);\n"
	"  }\n"
	"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  var covered = 0, end = -1;\n"
	"  for (var k = 0; k < spans.length; k++) {\n"
	"    var s = spans[k][0], t = s + spans[k][1];\n"
	"    if (t <= end) continue;\n"
	"    covered += t - Math.max(s, end); end = t;\n"
	"  }\n"
	"  matched.textContent = 'Matched: ' + (total > 0 ? (100 * covered / total).toFixed(1) : '0') + '% (' + spans.length + ' frames)';\n"
	"  document.getElementById('search').textContent = 'Reset Search';\n"
	"}\n"
	"function ask() {\n"
	"  if (document.getElementById('search').textContent !== 'Search') { reset_search(); return; }\n"
	"  var t = prompt('Search for (a regular expression):', '');\n"
	"  if (t !== null && t !== '') search(t);\n"
	"}\n"
	"function init() {\n"
	"  frames = document.getElementById('frames');\n"
	"  details = document.getElementById('details');\n"
	"  matched = document.getElementById('matched');\n"
	"  var gs = boxes();\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i], r = rect(g);\n"
	"    g.setAttribute('data-px', r.getAttribute('x')); g.setAttribute('data-pw', r.getAttribute('width'));\n"
	"    g.setAttribute('data-fill', r.getAttribute('fill'));\n"
	"    g.addEventListener('click', function () { zoom(this); });\n"
	"    g.addEventListener('mouseover', function () {\n"
	"      details.textContent = this.getElementsByTagName('title')[0].textContent.replace('\\n', ': ');\n"
	"    });\n"
	"    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"    fit(g);\n"
	"  }\n"
	"  document.getElementById('unzoom').addEventListener('click', unzoom);\n"
	"  document.getElementById('search').addEventListener('click', ask);\n"
	"  window.addEventListener('keydown', function (e) {\n"
	"    if (e.keyCode === 114 || (e.ctrlKey && e.keyCode === 70)) { e.preventDefault(); ask(); }\n"
	"  });\n"
	"  var parts = location.hash.substring(1).split('&');\n"
	"  for (var p = 0; p < parts.length; p++) {\n"
	"    var eq = parts[p].indexOf('=');\n"
	"    if (eq < 0) continue;\n"
	"    var k = parts[p].substring(0, eq), v = decodeURIComponent(parts[p].substring(eq + 1));\n"
	"    if (k === 'zoom' && document.getElementById(v)) zoom(document.getElementById(v));\n"
	"    if (k === 'search') search(v);\n"
	"  }\n"
	"  document.documentElement.setAttribute('data-rendered', '1');\n"
	"}\n"
	"window.addEventListener('load', init);\n";

int export_svg(const struct bundle_profile *p, size_t value_index, bool per_thread,
	       const char *title, FILE *out)
{
	if (value_index >= p->nvalues)
		return -EINVAL;
	struct tree t = {0};
	size_t depth = 0;
	int e = build(&t, p, value_index, per_thread);
	if (e == 0)
		e = layout(&t, &depth);
	if (e < 0) {
		tree_free(&t);
		return e;
	}
	const char *unit = p->value_unit ? p->value_unit[value_index] : NULL;
	int64_t total = t.v[0].value;
	size_t height = TOP_PAD + (depth + 1) * FRAME_HEIGHT + BOTTOM_PAD;
	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%zu\" viewBox=\"0 0 %d %zu\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style type=\"text/css\">\n"
		"text { font-family: Verdana, sans-serif; font-size: %dpx; fill: #000; }\n"
		"#title { text-anchor: middle; font-size: 17px; }\n"
		"#unzoom, #search { cursor: pointer; }\n"
		".f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
		".parent { opacity: 0.6; }\n"
		".hide { display: none; }\n"
		"</style>\n"
		"<script type=\"text/ecmascript\"><![CDATA[\nvar W = %d, XPAD = %d, FS = %d;\n%s]]></script>\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"24\">",
		SVG_WIDTH, height, SVG_WIDTH, height, FONT_SIZE, SVG_WIDTH, SVG_XPAD, FONT_SIZE, script,
		SVG_WIDTH / 2);
	put_xml(out, title ? title : "Flame graph");
	fprintf(out,
		"</text>\n"
		"<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
		"<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%zu\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%zu\"> </text>\n"
		"<g id=\"frames\">\n",
		SVG_XPAD, SVG_WIDTH - SVG_XPAD - 100, SVG_XPAD, height - 10, SVG_WIDTH - SVG_XPAD - 330,
		height - 10);
	double scale = total > 0 ? (double)(SVG_WIDTH - 2 * SVG_XPAD) / (double)total : 0;
	for (size_t i = 0; i < t.n; i++) {
		const struct fnode *n = &t.v[i];
		double x = SVG_XPAD + (double)n->x * scale, w = (double)n->value * scale;
		size_t y = height - BOTTOM_PAD - (n->depth + 1) * FRAME_HEIGHT;
		fprintf(out, "<g class=\"f\" id=\"f%zu\" data-x=\"%" PRId64 "\" data-w=\"%" PRId64 "\"><title>", i,
			n->x, n->value);
		put_xml(out, n->name);
		fputc('\n', out);
		put_value(out, n->value, unit);
		fprintf(out, ", %.2f%%</title><rect x=\"%.2f\" y=\"%zu\" width=\"%.2f\" height=\"%d\" fill=\"",
			total > 0 ? 100.0 * (double)n->value / (double)total : 0.0, x, y, w,
			FRAME_HEIGHT - 1);
		if (i == 0)
			fputs("rgb(230,230,230)", out);
		else
			put_colour(out, n->name);
		fprintf(out, "\" rx=\"2\"/><text x=\"%.2f\" y=\"%zu\">", x + 3, y + FRAME_HEIGHT - 4);
		put_label(out, n->name, w);
		fputs("</text></g>\n", out);
	}
	fputs("</g>\n</svg>\n", out);
	tree_free(&t);
	return ferror(out) ? -EIO : 0;
}
