/*
 * flame_svg: a decoded profile as an interactive, self-contained SVG flame
 * graph, as FlameGraph's flamegraph.pl and py-spy write them: one box per
 * distinct call path (the root "all" at the bottom, callers below callees,
 * siblings in name order, width by the summed value), a tooltip and a
 * details line on hover, click to zoom into a frame (Reset Zoom to come
 * back), and a regular-expression search (the Search button, Ctrl-F or F3)
 * that colours what matches and says the share it covers. Opening the file
 * as FILE.svg#zoom=ID or FILE.svg#search=REGEX applies one at load (ID is
 * a box's id attribute, "f12").
 *
 * Nothing is fetched: the script and style are inside the file. Every name
 * is the target's: escaped (escape_text, then XML), so a frame named
 * "</text><script>" is text, and invalid UTF-8 never breaks the XML.
 */
#ifndef DIAG_BUNDLE_VIEWS_FLAME_SVG_H
#define DIAG_BUNDLE_VIEWS_FLAME_SVG_H

#include <stdbool.h>
#include <stdio.h>

#include "bundle/reader.h"

/* value_index selects the summed sample value (0: sample counts).
 * per_thread adds "comm/tid" as the outermost frame, as the collapsed
 * export does. title heads the graph. 0, -EINVAL (no such value),
 * -ENOMEM, or -EIO when a write to out failed. */
int export_svg(const struct bundle_profile *p, size_t value_index, bool per_thread,
	       const char *title, FILE *out);

#endif
