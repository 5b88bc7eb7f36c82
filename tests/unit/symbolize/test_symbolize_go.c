/*
 * Functions of a Go binary resolve. Go 1.19 writes DWARF without
 * .debug_aranges, which libdw 0.188 cannot map to a CU by itself; this pins
 * down the fallback CU index in resolve.c. The target is our child; we only
 * read its /proc/PID/maps, never trace it.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

static char *read_maps(pid_t pid, size_t *ret_len)
{
	char path[64];
	size_t cap = 1 << 16, len = 0, n;
	char *buf = malloc(cap);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	while ((n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	*ret_len = len;
	return buf;
}

Test(symbolizer_go, function_and_line)
{
	int pipefd[2];
	pid_t child;
	FILE *out;
	int pid = 0;
	unsigned long long addr = 0;
	char *text;
	size_t len;
	struct symbolizer *s;
	const struct sym_location *loc;

	cr_assert_eq(pipe(pipefd), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		execl(GO_TARGET, GO_TARGET, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	out = fdopen(pipefd[0], "r");
	if (fscanf(out, "ready %d %llx", &pid, &addr) != 2) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		cr_assert_fail("go target did not start");
	}
	cr_assert_eq(pid, child);

	text = read_maps(child, &len);
	cr_assert_eq(symbolizer_new(child, text, len, NULL, &s), 0);
	cr_assert_eq(symbolizer_lookup(s, addr + 1, &loc), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	fclose(out);

	cr_assert_not_null(loc->module);
	cr_assert_geq(loc->nframes, 1);
	cr_assert_str_eq(loc->frames[loc->nframes - 1].function, "main.leaf");
	cr_assert_eq(loc->frames[loc->nframes - 1].function_offset, 1);
	cr_assert_not_null(loc->frames[0].file);
	cr_assert(strstr(loc->frames[0].file, "gotarget.go"), "file %s", loc->frames[0].file);
	cr_assert_gt(loc->frames[0].line, 0);
	cr_assert(loc->module->has_functions && loc->module->has_line_numbers);
	symbolizer_free(s);
	free(text);
}
