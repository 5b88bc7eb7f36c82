/*
 * py_capture_image PID OUT: save what the frame walker reads of a live
 * CPython (pid) as OUT (pyimage.h), and print the stacks it read, one
 * "tid|function|file|line|entry" line per frame, as the .expected file of
 * the replay test. Not run by the tests: it made the committed images.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyimage.h"
#include "symbolize/python/pyframes.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: py_capture_image PID OUT\n");
		return 2;
	}
	pid_t pid = (pid_t)atoi(argv[1]);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *mf = fopen(path, "r");
	if (!mf)
		return perror("maps"), 1;
	static char text[1 << 20];
	size_t len = fread(text, 1, sizeof(text) - 1, mf);
	fclose(mf);
	struct maps m;
	struct py_symbols syms;
	if (maps_parse(text, len, &m) < 0 || py_symbols_find(pid, -1, &m, &syms) < 0)
		return fprintf(stderr, "not a CPython\n"), 1;
	struct pyimage im = {.pid = pid, .runtime = syms.runtime};
	if (pyimage_record_read(&im, syms.version, &im.hexversion, 4) < 0)
		return fprintf(stderr, "no Py_Version\n"), 1;
	const struct py_layout *known = py_layout_for(im.hexversion);
	if (!known)
		return fprintf(stderr, "no layout for %x\n", im.hexversion), 1;
	struct py_layout L = *known;
	uint8_t block[1024];
	if (pyimage_record_read(&im, syms.runtime, block, sizeof(block)) == 0)
		py_layout_from_debug_offsets(block, sizeof(block), im.hexversion, &L);
	struct py_stacks *s = NULL;
	if (py_stacks_read(&L, syms.runtime, pyimage_record_read, &im, NULL, &s) < 0)
		return fprintf(stderr, "read failed\n"), 1;
	for (size_t i = 0; i < s->nthreads; i++)
		for (size_t k = 0; k < s->threads[i].nframes; k++) {
			const struct py_frame *f = &s->threads[i].frames[k];
			printf("%zu|%s|%s|%d|%d\n", i, f->function, f->file, f->line, f->entry);
		}
	py_stacks_free(s);
	maps_release(&m);
	int r = pyimage_save(&im, argv[2]);
	pyimage_release(&im);
	return r < 0;
}
