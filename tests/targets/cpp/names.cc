// cpp_names: C++ functions that share a short name. Threads park (blocked
// in read() on a pipe nobody writes) in two overloads of one member
// function, in a member of a class template, and in a lambda run by
// std::thread (whose _M_run has no linkage name in DWARF). Prints "ready"
// when all four are parked.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

static int park_fd;
static std::atomic<int> parked{0};

[[gnu::noinline]] static void block_here()
{
	char c;
	parked++;
	for (;;)
		if (read(park_fd, &c, 1) == 0)
			pause();
}

namespace shop {
struct Worker {
	[[gnu::noinline]] void park(int n)
	{
		pthread_setname_np(pthread_self(), "ovl-int");
		block_here();
		asm volatile("" ::"r"(n));
	}
	[[gnu::noinline]] void park(double d)
	{
		pthread_setname_np(pthread_self(), "ovl-double");
		block_here();
		asm volatile("" ::"r"(&d));
	}
};

template <typename T> struct Shelf {
	[[gnu::noinline]] void hold(T v)
	{
		pthread_setname_np(pthread_self(), "template");
		block_here();
		asm volatile("" ::"r"(&v));
	}
};
} // namespace shop

int main()
{
	int fds[2];
	if (pipe(fds) != 0)
		return 1;
	park_fd = fds[0];
	shop::Worker w;
	shop::Shelf<long> s;
	std::thread a([&w] { w.park(1); });
	std::thread b([&w] { w.park(2.0); });
	std::thread c([&s] { s.hold(3L); });
	std::thread d([] {
		pthread_setname_np(pthread_self(), "lambda");
		block_here();
	});
	while (parked.load() < 4)
		usleep(1000);
	usleep(20000);
	std::printf("ready\n");
	std::fflush(stdout);
	a.join();
	b.join();
	c.join();
	d.join();
}
