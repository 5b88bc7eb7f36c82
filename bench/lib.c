/* One of the 100 tiny shared objects the bench-libs target loads: meson
 * compiles this file 100 times with BENCH_N = 0..99. Each object has its own
 * symbol and debug info, so a first snapshot pays to index 100 modules. */
#define PASTE2(a, b, c) a##b##c
#define PASTE(a, b, c) PASTE2(a, b, c)
#define BENCH_FN PASTE(benchlib, BENCH_N, _fn)

int BENCH_FN(int x);
int BENCH_FN(int x)
{
	return x * BENCH_N + 1;
}
