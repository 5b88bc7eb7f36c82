/* output_file: see output_file.h. */
#include "bundle/read/output_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int output_file_open(struct output_file *of, const char *path)
{
	*of = (struct output_file){.fp = stdout, .path = path};
	if (!path || strcmp(path, "-") == 0)
		return 0;
	if (asprintf(&of->tmp, "%s.tmp", path) < 0) {
		of->tmp = NULL;
		return -ENOMEM;
	}
	of->fp = fopen(of->tmp, "w");
	if (!of->fp) {
		int e = -errno;
		free(of->tmp);
		of->tmp = NULL;
		return e;
	}
	return 0;
}

int output_file_close(struct output_file *of, int e)
{
	if (fflush(of->fp) != 0 && e == 0)
		e = errno ? -errno : -EIO;
	if (!of->tmp)
		return e;
	if (fclose(of->fp) != 0 && e == 0)
		e = errno ? -errno : -EIO;
	if (e == 0 && rename(of->tmp, of->path) < 0)
		e = -errno;
	if (e < 0)
		unlink(of->tmp);
	free(of->tmp);
	of->tmp = NULL;
	of->fp = NULL;
	return e;
}
