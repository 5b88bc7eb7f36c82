/*
 * hostile_target: a process that maps files it was handed and runs a thread
 * inside each, for the hostile-input tests (reliability.md section 4, E and
 * D8; tests/integration/test_reliability_hostile.c).
 *
 *   hostile_target [options] FILE... [-- ARG...]
 *
 *   FILE          mmap FILE (PROT_READ|PROT_EXEC, MAP_PRIVATE, offset 0) and
 *                 start a thread that jumps to its byte 4096. The test puts
 *                 "jmp ." (EB FE) there, or a pause() loop
 *                 (B8 22 00 00 00 0F 05 EB F7) that sleeps with its PC inside
 *                 the file. Its stack: 0xPC FILE+0x1000 (no symbols, no CFI),
 *                 then whatever the frame chain says.
 *   --user UID    drop to uid and gid UID (and make the process dumpable
 *                 again, which a change of credentials undoes)
 *   --no-dump     prctl(PR_SET_DUMPABLE, 0) (D8); after --user, if both
 *   --names       three more threads, blocked in pause(), named ") R 1 (",
 *                 "nl\nname" and "ééééééé€" cut by the kernel at 15 bytes
 *                 (in the middle of the euro sign); the main thread takes
 *                 the cut name too, so it is also the process's comm (E8)
 *   --jit         one more thread, named "\x1b[31mjit\u202eevil" (prctl
 *                 PR_SET_NAME), blocked in the pause() loop in anonymous
 *                 executable memory that /tmp/perf-PID.map names
 *                 "jit_\x1b[31mred\x1b[0m_\u202eevil" (x86-64 only; the
 *                 test removes the map)
 *   --root DIR    enter a new mount namespace (private propagation) and
 *                 pivot_root into DIR before anything else: FILE paths are
 *                 then inside DIR, and /proc/PID/maps read from outside
 *                 shows them relative to DIR, as for a container (E3)
 *   --overmount DIR   after mapping: mount a tmpfs on DIR (inside that
 *                 namespace; --root implies one, otherwise one is made), so
 *                 the mapped files' paths name what --plant puts there (E3, E4)
 *   --plant KIND:NAME[:TARGET]  in the overmounted DIR, create NAME as
 *                 fifo | link (symlink to TARGET) | sparse (100 GiB, no
 *                 blocks) | copy (a copy of TARGET, a file outside DIR read
 *                 before the overmount). Repeatable.
 *   --unlink      unlink every FILE named after it once mapped (maps then
 *                 says " (deleted)")
 *   --            the rest is ignored (E6 passes secrets in argv)
 *
 * Prints "ready" once every thread is in its file's code (or blocked), then
 * sleeps until killed. Any setup failure exits 2 with a message on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES  4096
#define MAX_PLANTS 16

static atomic_int entered;

static void fail(const char *what, const char *arg)
{
	fprintf(stderr, "hostile_target: %s %s: %s\n", what, arg ? arg : "", strerror(errno));
	exit(2);
}

static void *run_code(void *code)
{
	atomic_fetch_add(&entered, 1);
	((void (*)(void))code)();
	return NULL; /* never: the code loops */
}

static void *pause_forever(void *name)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)gettid());
	int fd = open(path, O_WRONLY);
	/* Written to comm rather than pthread_setname_np: the kernel cuts at
	 * 15 bytes where glibc would refuse (ERANGE). */
	if (fd < 0 || write(fd, name, strlen(name)) < 0)
		fail("naming a thread", (const char *)name);
	close(fd);
	atomic_fetch_add(&entered, 1);
	for (;;)
		pause();
	return NULL;
}

/* --jit: code no ELF file names, named by a perf map as a JIT's is. */
#define JIT_THREAD_NAME "\x1b[31mjit\xe2\x80\xae" "evil"
#define JIT_SYMBOL "jit_\x1b[31mred\x1b[0m_\xe2\x80\xae" "evil"

static void *run_jit(void *code)
{
	if (prctl(PR_SET_NAME, JIT_THREAD_NAME, 0, 0, 0) < 0)
		fail("naming the JIT thread", NULL);
	return run_code(code);
}

static void *jit_code(void)
{
#if defined(__x86_64__)
	/* mov eax, 34 (pause); syscall; jmp back to the mov */
	static const uint8_t pause_loop[] = {0xb8, 0x22, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xeb, 0xf7};
	uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		fail("mmap", "--jit");
	memcpy(p, pause_loop, sizeof(pause_loop));
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC) < 0)
		fail("mprotect", "--jit");
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f || fprintf(f, "%lx 1000 " JIT_SYMBOL "\n", (unsigned long)(uintptr_t)p) < 0 ||
	    fclose(f) != 0 || chmod(path, 0644) < 0)
		fail("writing", path);
	return p;
#else
	errno = ENOSYS;
	fail("--jit needs x86-64", NULL);
	return NULL;
#endif
}

static void start(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	errno = pthread_create(&t, &a, fn, arg);
	if (errno)
		fail("pthread_create", NULL);
	pthread_attr_destroy(&a);
}

static void enter_root(const char *dir)
{
	if (unshare(CLONE_NEWNS) < 0)
		fail("unshare(CLONE_NEWNS)", NULL);
	/* Nothing we mount may show up in the test's namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail("making / private", NULL);
	if (mount(dir, dir, NULL, MS_BIND | MS_REC, NULL) < 0)
		fail("bind-mounting", dir);
	if (chdir(dir) < 0)
		fail("chdir", dir);
	if (mkdir(".old_root", 0700) < 0 && errno != EEXIST)
		fail("mkdir .old_root in", dir);
	if (syscall(SYS_pivot_root, ".", ".old_root") < 0)
		fail("pivot_root into", dir);
	if (chdir("/") < 0 || umount2("/.old_root", MNT_DETACH) < 0)
		fail("dropping the old root", NULL);
	rmdir("/.old_root");
}

struct plant {
	char kind[16];
	char name[256];
	char target[1024];
	char *copy; /* --plant copy: the bytes, read before the overmount */
	size_t copy_len;
};

static void read_copy(struct plant *p)
{
	int fd = open(p->target, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		fail("reading", p->target);
	p->copy_len = (size_t)st.st_size;
	p->copy = malloc(p->copy_len ? p->copy_len : 1);
	if (!p->copy || read(fd, p->copy, p->copy_len) != (ssize_t)p->copy_len)
		fail("reading", p->target);
	close(fd);
}

static void plant(const char *dir, const struct plant *p)
{
	char path[1400];
	snprintf(path, sizeof(path), "%s/%s", dir, p->name);
	if (strcmp(p->kind, "fifo") == 0) {
		if (mkfifo(path, 0600) < 0)
			fail("mkfifo", path);
	} else if (strcmp(p->kind, "link") == 0) {
		if (symlink(p->target, path) < 0)
			fail("symlink", path);
	} else if (strcmp(p->kind, "sparse") == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0700);
		if (fd < 0 || ftruncate(fd, 100ll << 30) < 0)
			fail("making a 100 GiB sparse file", path);
		close(fd);
	} else if (strcmp(p->kind, "copy") == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0700);
		if (fd < 0 || write(fd, p->copy, p->copy_len) != (ssize_t)p->copy_len)
			fail("writing", path);
		close(fd);
	} else {
		errno = EINVAL;
		fail("unknown --plant kind", p->kind);
	}
}

int main(int argc, char **argv)
{
	static const char *files[MAX_FILES];
	static char unlink_file[MAX_FILES];
	static struct plant plants[MAX_PLANTS];
	size_t nfiles = 0, nplants = 0;
	const char *root = NULL, *overmount = NULL;
	int names = 0, unlink_after = 0, threads = 0, jit = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (strcmp(a, "--user") == 0 && i + 1 < argc) {
			gid_t id = (gid_t)atoi(argv[++i]);
			if (setgroups(0, NULL) < 0 || setresgid(id, id, id) < 0 ||
			    setresuid(id, id, id) < 0 || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
				fail("dropping to uid", argv[i]);
		} else if (strcmp(a, "--no-dump") == 0) {
			if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
				fail("PR_SET_DUMPABLE", NULL);
		} else if (strcmp(a, "--names") == 0) {
			names = 1;
		} else if (strcmp(a, "--jit") == 0) {
			jit = 1;
		} else if (strcmp(a, "--unlink") == 0) {
			unlink_after = 1;
		} else if (strcmp(a, "--root") == 0 && i + 1 < argc) {
			root = argv[++i];
		} else if (strcmp(a, "--overmount") == 0 && i + 1 < argc) {
			overmount = argv[++i];
		} else if (strcmp(a, "--plant") == 0 && i + 1 < argc && nplants < MAX_PLANTS) {
			struct plant *p = &plants[nplants++];
			if (sscanf(argv[++i], "%15[^:]:%255[^:]:%1023[^\n]", p->kind, p->name,
				   p->target) < 2) {
				errno = EINVAL;
				fail("bad --plant", argv[i]);
			}
		} else if (a[0] == '-') {
			errno = EINVAL;
			fail("unknown option", a);
		} else if (nfiles < MAX_FILES) {
			unlink_file[nfiles] = (char)unlink_after;
			files[nfiles++] = a;
		}
	}

	if (root)
		enter_root(root);
	else if (overmount && (unshare(CLONE_NEWNS) < 0 ||
			       mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0))
		fail("making a private mount namespace", NULL);
	for (size_t i = 0; i < nplants; i++)
		if (strcmp(plants[i].kind, "copy") == 0)
			read_copy(&plants[i]);

	for (size_t i = 0; i < nfiles; i++) {
		int fd = open(files[i], O_RDONLY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0)
			fail("opening", files[i]);
		size_t len = ((size_t)st.st_size + 4095) & ~(size_t)4095;
		if (len < 8192) {
			errno = EINVAL;
			fail("file shorter than 4098 bytes:", files[i]);
		}
		uint8_t *p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED)
			fail("mmap", files[i]);
		close(fd);
		start(run_code, p + 4096);
		threads++;
		if (unlink_file[i] && unlink(files[i]) < 0)
			fail("unlink", files[i]);
	}
	if (overmount) {
		if (mount("tmpfs", overmount, "tmpfs", 0, "size=1m,mode=0755") < 0)
			fail("mounting a tmpfs on", overmount);
		for (size_t i = 0; i < nplants; i++)
			plant(overmount, &plants[i]);
	}
	if (names) {
		static const char *const hostile_names[] = {
			") R 1 (",
			"nl\nname",
			/* 7 x U+00E9 (14 bytes), then U+20AC (3 bytes): cut at 15 */
			"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xe2\x82\xac",
		};
		for (size_t i = 0; i < 3; i++)
			start(pause_forever, (void *)hostile_names[i]);
		threads += 3;
		int fd = open("/proc/self/comm", O_WRONLY);
		if (fd < 0 || write(fd, hostile_names[2], strlen(hostile_names[2])) < 0)
			fail("naming the main thread", NULL);
		close(fd);
	}
	if (jit) {
		start(run_jit, jit_code());
		threads++;
	}
	while (atomic_load(&entered) < threads) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	/* The last thread counted itself one call before entering the code. */
	struct timespec settle = {0, 20000000};
	nanosleep(&settle, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
