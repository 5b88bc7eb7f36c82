/*
 * html: the report as one self-contained HTML page. The report document
 * (report_build_json with with_flame) is embedded as JSON; the inline
 * script in html_assets draws everything from it. No external scripts,
 * fonts or images, and a Content-Security-Policy that forbids fetching
 * any, so opening it never touches the network.
 */
#ifndef DIAG_BUNDLE_VIEWS_HTML_H
#define DIAG_BUNDLE_VIEWS_HTML_H

#include <stdio.h>
#include <cjson/cJSON.h>

/* Write the page to out. 0, -ENOMEM, or -EIO if a write failed. */
int html_write(const cJSON *doc, FILE *out);

/* Write the page to path ("-": stdout) through a temporary file renamed
 * into place, so a half-written page is never left under that name.
 * 0 or -errno. */
int html_write_file(const cJSON *doc, const char *path);

#endif
