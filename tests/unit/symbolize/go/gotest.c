/* SPDX-License-Identifier: MIT */
#include "gotest.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *gotest_outdir(void)
{
	const char *d = getenv("GO_TEST_OUTDIR");
	return d ? d : "/tmp";
}

char *gotest_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char tmp[65536];
	size_t n;
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		fwrite(tmp, 1, n, m);
	fclose(f);
	fclose(m);
	return buf;
}

struct go_target *gotest_start(struct child *c, const char *exe, char *const envp[])
{
	char *argv[] = {(char *)exe, NULL};
	*c = (struct child){0};
	cr_assert_eq(child_spawn(c, argv, envp), 0, "cannot start %s", exe);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)c->pid);
	struct go_target *t = NULL;
	int r = go_target_open(c->pid, path, &t);
	cr_assert_eq(r, 0, "go_target_open: %s", strerror(-r));
	return t;
}

void gotest_quit(struct child *c)
{
	cr_assert_eq(child_cmd(c, "quit"), 0);
	int status;
	waitpid(c->pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fixture did not exit cleanly");
	c->pid = 0;
	child_kill(c);
}

size_t gotest_matrix(struct gotest_release *out, size_t max)
{
	size_t n = 0;
	for (const char *v = GO_MATRIX_VERSIONS; *v && n < max;) {
		size_t len = strcspn(v, ",");
		struct gotest_release *r = &out[n];
		snprintf(r->version, sizeof(r->version), "%.*s", (int)len, v);
		v += len + (v[len] == ',');
		char go[64];
		snprintf(go, sizeof(go), "/usr/lib/go-%s/bin/go", r->version);
		if (access(go, X_OK) != 0)
			continue;
		snprintf(r->plain, sizeof(r->plain), "%s/go-matrix-%s", GO_MATRIX_DIR, r->version);
		snprintf(r->stripped, sizeof(r->stripped), "%s/go-matrix-%s-stripped", GO_MATRIX_DIR, r->version);
		n++;
	}
	return n;
}

int gotest_add_name(void *ctx, const struct go_frame *f)
{
	char *b = ctx;
	snprintf(b + strlen(b), GOTEST_NAMES - strlen(b), "%s;", f->function);
	return 0;
}

uint64_t pb_varint(struct pb *b)
{
	uint64_t v = 0;
	for (int s = 0; b->p < b->end && s < 64; s += 7) {
		uint8_t c = *b->p++;
		v |= (uint64_t)(c & 0x7f) << s;
		if (!(c & 0x80))
			break;
	}
	return v;
}

int pb_next(struct pb *b, uint64_t *v, struct pb *sub)
{
	if (b->p >= b->end)
		return 0;
	uint64_t key = pb_varint(b);
	*sub = (struct pb){0};
	switch (key & 7) {
	case 0:
		*v = pb_varint(b);
		break;
	case 2:
		*v = pb_varint(b);
		*sub = (struct pb){b->p, b->p + *v};
		b->p += *v;
		break;
	case 1:
		b->p += 8;
		break;
	case 5:
		b->p += 4;
		break;
	default:
		b->p = b->end;
		return 0;
	}
	return (int)(key >> 3);
}
