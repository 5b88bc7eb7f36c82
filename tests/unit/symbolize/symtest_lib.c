/*
 * Tiny shared library for test_symbolizer.c. The build strips it and moves
 * its DWARF to libsymtest.debug behind a .gnu_debuglink, so any function name
 * for symtest_hidden and any file:line seen by the test must have come from
 * the debug file.
 */
#include <stdint.h>

int symtest_func(int x);
void *symtest_hidden_addr(void);
extern const int symtest_func_line;

int symtest_func(int x) { return x * 3 + 1; } const int symtest_func_line = __LINE__;

/* Not exported: only .symtab (stripped) or DWARF know this name. */
__attribute__((noinline)) static int symtest_hidden(int x) { return x ^ 0x5a; }

void *symtest_hidden_addr(void)
{
	return (void *)(uintptr_t)symtest_hidden;
}
