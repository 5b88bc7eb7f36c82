/* bench-libs: bench-target with 100 extra shared objects loaded, dlopen'ed
 * from the executable's own directory (where meson builds them), so the
 * first snapshot has about 100 more modules to map and symbolize. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NLIBS 100

void bench_libs_touch(void);

void bench_libs_touch(void)
{
	char dir[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0) {
		fprintf(stderr, "bench-libs: cannot read /proc/self/exe\n");
		exit(1);
	}
	dir[n] = '\0';
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	int sum = 0;
	for (int i = 0; i < NLIBS; i++) {
		char path[PATH_MAX + 64], sym[64];
		snprintf(path, sizeof(path), "%s/libbenchlib%d.so", dir, i);
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "bench-libs: %s\n", dlerror());
			exit(1);
		}
		snprintf(sym, sizeof(sym), "benchlib%d_fn", i);
		int (*fn)(int) = (int (*)(int))dlsym(h, sym);
		if (fn)
			sum += fn(i);
	}
	if (sum == 42)
		fprintf(stderr, "bench-libs: unlikely\n");
}
