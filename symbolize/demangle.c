/*
 * C++ / legacy-Rust demangling without a build dependency: libstdc++ exports
 * the Itanium demangler as __cxa_demangle, and any machine that runs C++
 * targets has it. We look it up at run time, once, and only when a mangled
 * name actually shows up, so C-only targets never load libstdc++. Without it
 * callers fall back to the plain DWARF name.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "symbolize/internal.h"

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static cxa_demangle_fn demangler;
static pthread_once_t demangler_once = PTHREAD_ONCE_INIT;

static void find_demangler(void)
{
	void *h;

	/* Already in the process (we are linked into a C++ program)? */
	demangler = (cxa_demangle_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "__cxa_demangle");
	if (demangler)
		return;
	/* RTLD_LOCAL keeps its symbols out of our namespace; it stays loaded
	 * for the life of the process on purpose (the pointer must stay valid). */
	h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (h)
		demangler = (cxa_demangle_fn)(uintptr_t)dlsym(h, "__cxa_demangle");
}

char *sym_demangle(const char *name)
{
	int status = -1;
	char *out;

	/* Itanium names start with _Z; Rust v0 (_R) is not understood by
	 * __cxa_demangle and is left as is. */
	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	pthread_once(&demangler_once, find_demangler);
	if (!demangler)
		return NULL;
	out = demangler(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}

void symbolize_preload(void)
{
	pthread_once(&demangler_once, find_demangler);
}
