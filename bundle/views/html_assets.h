/* html_assets: the inline stylesheet and script of the HTML report. */
#ifndef DIAG_BUNDLE_VIEWS_HTML_ASSETS_H
#define DIAG_BUNDLE_VIEWS_HTML_ASSETS_H

extern const char html_css[];
extern const char html_js[];

#endif
