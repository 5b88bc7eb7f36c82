/*
 * gen_seeds: (re)generate the generated part of the committed seed corpora.
 * Run through `tests/fuzz/run --gen-seeds`, which builds it against the
 * module sources; usage: gen_seeds CORPUS_DIR CC.
 *
 * What it writes (file names start with "gen-", so hand-written seeds are
 * never overwritten):
 *  fuzz_elf_symbolize: the five hostile ELFs of reliability.md 4 E1 (bad
 *    magic; phnum/shnum 0xffff with e_shoff 0xffffffffffff0000; e_shoff
 *    wrapping (2^64-60, shnum 1); random section headers with a bogus
 *    PT_GNU_EH_FRAME; bad EI_CLASS), each with a PT_LOAD that maps it and
 *    `jmp .` at offset 4096 as E1's targets have; and tiny real ELFs
 *    compiled with CC: a -g shared object, the same with compressed debug
 *    sections, stripped with a .gnu_debuglink, and a relocatable object.
 *  fuzz_pprof_decode: a real gzipped profile from bundle/profile.h, and the
 *    same profile uncompressed (the harness gzips non-gzip input).
 *  fuzz_manifest_verify: a real bundle's manifest.json (bundle.h), with the
 *    tail bytes choosing the members the harness creates.
 *  fuzz_symtab_decode: a real symtab encoding of this program's own
 *    functions (symbolizer + symtab_fill + symtab_encode).
 *  fuzz_unwind: stacks with a frame-pointer chain and return addresses in
 *    the harness's relocatable form (see fuzz_unwind.c).
 */
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "bundle/profile.h"
#include "../lib/elf_img.h"
#include "symbolize/worker/symtab.h"
#include "symbolize/symbolize.h"

static const char *corpus;

static __attribute__((noreturn)) void die(const char *what)
{
	perror(what);
	exit(1);
}

static void put_file(const char *harness, const char *name, const void *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", corpus, harness);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/gen-%s", corpus, harness, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
		die(path);
}

static void run(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0) {
		fprintf(stderr, "gen_seeds: failed: %s\n", cmd);
		exit(1);
	}
}

static void *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0)
		die(path);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		die(path);
	fclose(f);
	*ret_len = (size_t)n;
	return buf;
}

/* ---- hostile ELFs ---- */

#define HOSTILE_SIZE 8192

/* A minimal ELF64 executable image: header, one PT_LOAD R+X mapping the
 * whole file at vaddr 0x400000, `jmp .` (eb fe) at 4096. */
static void elf_base(uint8_t *img)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));

	memset(img, 0, HOSTILE_SIZE);
	elf_img_header(eh, 1);
	eh->e_entry = 0x401000;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shentsize = sizeof(Elf64_Shdr);
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_offset = 0;
	ph->p_vaddr = ph->p_paddr = 0x400000;
	ph->p_filesz = ph->p_memsz = HOSTILE_SIZE;
	ph->p_align = 4096;
	img[4096] = 0xeb;
	img[4097] = 0xfe;
}

static void gen_hostile(void)
{
	/* elf_img_hostile's variants, in its order */
	static const char *const names[ELF_IMG_NHOSTILE] = {
		"hostile-1-bad-magic.elf",    "hostile-2-huge-counts.elf",
		"hostile-3-wrapped-shoff.elf", "hostile-4-random-shdrs.elf",
		"hostile-5-bad-class.elf",
	};
	static uint8_t img[HOSTILE_SIZE];

	elf_base(img);
	put_file("fuzz_elf_symbolize", "valid-minimal.elf", img, sizeof(img));
	for (int i = 0; i < ELF_IMG_NHOSTILE; i++) {
		elf_base(img);
		elf_img_hostile(img, i);
		put_file("fuzz_elf_symbolize", names[i], img, sizeof(img));
	}
}

/* ---- small real ELFs ---- */

static const char tiny_c[] =
	"static __attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }\n"
	"static inline int mid(int x) { return leaf(x) + leaf(x + 1); }\n"
	"int tiny_entry(int x) { return mid(x) * 2; }\n"
	"int tiny_other(int x) { return tiny_entry(x) - 1; }\n";

static void gen_compiled(const char *cc)
{
	char dir[] = "/tmp/gen-seeds.XXXXXX";
	static const struct {
		const char *out, *flags;
	} builds[] = {
		{"tiny-g.so", "-g -O1 -shared -fPIC"},
		{"tiny-gz.so", "-g -O1 -shared -fPIC -gz=zlib"},
		{"tiny-nofp.so", "-g -O2 -shared -fPIC -fomit-frame-pointer"},
		{"tiny.o", "-g -O1 -c"},
	};
	char path[512];
	size_t len;
	void *buf;

	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(path, sizeof(path), "%s/tiny.c", dir);
	{
		FILE *f = fopen(path, "w");

		if (!f || fputs(tiny_c, f) < 0 || fclose(f) != 0)
			die(path);
	}
	for (size_t i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		run("cd %s && %s %s -o %s tiny.c", dir, cc, builds[i].flags, builds[i].out);
		snprintf(path, sizeof(path), "%s/%s", dir, builds[i].out);
		buf = slurp(path, &len);
		put_file("fuzz_elf_symbolize", builds[i].out, buf, len);
		free(buf);
	}
	/* Stripped, debug info split off and linked back by .gnu_debuglink. */
	run("cd %s && objcopy --only-keep-debug tiny-g.so tiny.debug && "
	    "objcopy --strip-debug --add-gnu-debuglink=tiny.debug tiny-g.so tiny-stripped.so",
	    dir);
	snprintf(path, sizeof(path), "%s/tiny-stripped.so", dir);
	buf = slurp(path, &len);
	put_file("fuzz_elf_symbolize", "tiny-stripped-debuglink.so", buf, len);
	free(buf);
	run("rm -rf %s", dir);
}

/* ---- pprof ---- */

static void gen_pprof(void)
{
	static const struct profile_value_type types[] = {{"samples", "count"},
							  {"cpu", "nanoseconds"}};
	struct profile_builder *pb = profile_builder_new(
		types, 2, (struct profile_value_type){"cpu", "nanoseconds"}, 10101010);
	struct profile_line inl[] = {
		{.function = "leaf_inlined", .filename = "src/a.c", .start_line = 10, .line = 12},
		{.function = "caller", .filename = "src/a.c", .start_line = 20, .line = 25},
	};
	struct profile_line mainl = {.function = "main", .filename = "src/main.c", .line = 7};
	struct profile_label labels[] = {{.key = "tid", .num = 4242},
					 {.key = "thread_comm", .str = "worker-1"},
					 {.key = "state", .str = "R"}};
	uint64_t map, l1, l2, l3, stack[3];
	int64_t values[2] = {3, 30303030};
	uint8_t *gz;
	size_t len;

	if (!pb)
		die("profile_builder_new");
	profile_builder_set_time(pb, 1764483121000000000, 2000000000);
	map = profile_builder_add_mapping(pb, 0x400000, 0x401000, 0, "/usr/bin/target", "abcdef12",
					  true, true, true);
	l1 = profile_builder_add_location(pb, 0x400100, map, inl, 2);
	l2 = profile_builder_add_location(pb, 0x400200, map, &mainl, 1);
	l3 = profile_builder_add_location(pb, 0x7f0000001234, 0, NULL, 0);
	stack[0] = l1, stack[1] = l2, stack[2] = l3;
	if (!l1 || !l2 || !l3 || profile_builder_add_sample(pb, stack, 3, values, labels, 3) < 0 ||
	    profile_builder_add_sample(pb, stack + 1, 2, values, labels + 1, 1) < 0 ||
	    profile_builder_encode_gz(pb, &gz, &len) < 0)
		die("profile builder");
	put_file("fuzz_pprof_decode", "cpu.pprof", gz, len);
	/* The raw protobuf too: write it gzipped to a temp file, gunzip. */
	{
		char path[] = "/tmp/gen-pprof.XXXXXX";
		int fd = mkstemp(path);
		void *raw;
		size_t rlen;

		if (fd < 0 || write(fd, gz, len) != (ssize_t)len)
			die("mkstemp");
		close(fd);
		run("gzip -dc < %s > %s.raw", path, path);
		strcat(path, ".raw");
		raw = slurp(path, &rlen);
		put_file("fuzz_pprof_decode", "cpu.pb", raw, rlen);
		unlink(path);
		path[strlen(path) - 4] = '\0';
		unlink(path);
		free(raw);
	}
	free(gz);
	profile_builder_free(pb);
}

/* ---- manifest ---- */

static void gen_manifest(void)
{
	char dir[] = "/tmp/gen-bundle.XXXXXX", path[600];
	struct bundle *b;
	cJSON *m = cJSON_CreateObject();
	static const char jsonl[] = "{\"t\":\"2026-11-30T06:12:01.123Z\",\"rss_bytes\":1000,\"fds_"
				    "by_type\":{\"pipe\":2}}\n"
				    "{\"t\":\"2026-11-30T06:12:02.123Z\",\"rss_bytes\":2000,\"fds_"
				    "by_type\":{\"pipe\":3}}\n";
	char *text, *seed;
	size_t len;

	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(path, sizeof(path), "%s/b", dir);
	if (bundle_create(path, &b) < 0)
		die("bundle_create");
	cJSON_AddStringToObject(m, "format", "diag-attach-bundle");
	cJSON_AddNumberToObject(m, "pid", 4242);
	cJSON_AddItemToObject(m, "timeline", cJSON_CreateObject());
	cJSON_AddStringToObject(cJSON_GetObjectItem(m, "timeline"), "member", "runtime.jsonl");
	if (bundle_write_member(b, "runtime.jsonl", jsonl, strlen(jsonl)) < 0 ||
	    bundle_write_member(b, "threads.txt", "thread 1\n", 9) < 0 ||
	    bundle_write_member(b, "leak/open_fds-1/threads.txt", "x\n", 2) < 0 ||
	    bundle_finalize(b, m) < 0)
		die("bundle");
	snprintf(path, sizeof(path), "%s/b/manifest.json", dir);
	text = slurp(path, &len);
	/* The harness takes 4 parameter bytes from the tail, then the
	 * manifest length from the next ones: append "what" = runtime.jsonl
	 * + threads.txt + leak member (bits 0, 1, 3) and a length byte pair
	 * covering the whole manifest. */
	seed = malloc(len + 16);
	memcpy(seed, text, len);
	{
		size_t n = len;
		uint16_t mlen = (uint16_t)len;

		/* Consumed from the end, most significant byte first. */
		seed[n++] = (char)(mlen & 0xff);
		seed[n++] = (char)(mlen >> 8);
		seed[n++] = 0x0b;
		seed[n++] = 0;
		seed[n++] = 0;
		seed[n++] = 0;
		put_file("fuzz_manifest_verify", "manifest.json", seed, n);
	}
	put_file("fuzz_manifest_verify", "manifest-plain.json", text, len);
	run("rm -rf %s", dir);
	free(seed);
	free(text);
}

/* ---- symtab ---- */

static __attribute__((noinline)) int seed_function(int x)
{
	return x * 7;
}

static void gen_symtab(void)
{
	char maps[1 << 16];
	FILE *f = fopen("/proc/self/maps", "r");
	size_t n = f ? fread(maps, 1, sizeof(maps) - 1, f) : 0;
	struct symbolizer *s;
	struct symtab *st = symtab_new();
	uint64_t addrs[] = {(uint64_t)(uintptr_t)seed_function, (uint64_t)(uintptr_t)gen_symtab + 3,
			    (uint64_t)(uintptr_t)&printf, 0x10, (uint64_t)(uintptr_t)maps};
	uint8_t *enc;
	size_t len;

	if (f)
		fclose(f);
	if (!st || symbolizer_new(getpid(), maps, n, NULL, &s) < 0 ||
	    symtab_fill(st, s, addrs, sizeof(addrs) / sizeof(addrs[0])) < 0 ||
	    symtab_encode(st, &enc, &len) < 0)
		die("symtab");
	put_file("fuzz_symtab_decode", "symtab.bin", enc, len);
	free(enc);
	symtab_free(st);
	symbolizer_free(s);
}

/* ---- unwind ---- */

/* Tail parameters in the order fuzz_unwind.c consumes them. */
struct tail {
	uint8_t b[256];
	size_t n;
};

static void tail_put(struct tail *t, uint64_t v, unsigned bytes)
{
	for (unsigned i = bytes; i-- > 0;)
		t->b[t->n++] = (uint8_t)(v >> (8 * i)); /* most significant first */
}

static void unwind_seed(const char *name, const uint64_t *words, size_t nwords, uint64_t rip,
			uint64_t rbp, uint16_t max)
{
	struct tail t = {.n = 0};
	uint8_t buf[4096];
	size_t len = nwords * 8;

	tail_put(&t, 1, 1);	 /* stack_start: the fixed unmapped area... */
	tail_put(&t, 0x1000, 4); /* ...+ 0x1000 */
	tail_put(&t, rip, 8);
	tail_put(&t, rbp, 8);
	tail_put(&t, 1, 1); /* rsp = stack_start */
	for (int i = 0; i < 5; i++)
		tail_put(&t, 0, 8); /* rbx r12..r15 */
	tail_put(&t, max, 2);
	memcpy(buf, words, len);
	for (size_t i = 0; i < t.n; i++) /* the tail is read backwards */
		buf[len + i] = t.b[t.n - 1 - i];
	put_file("fuzz_unwind", name, buf, len + t.n);
}

static void gen_unwind(void)
{
	/* rbp at stack_start + 0x10: [rbp] = next rbp, [rbp+8] = return. */
	const uint64_t chain[] = {
		0x1111,
		0x2222,
		0x57ac000000000020ull,
		0xc0de000000001234ull, /* rbp -> +0x20 */
		0x57ac000000000030ull,
		0xc0de000000005678ull, /* -> +0x30 */
		0x57ac000000000040ull,
		0xc0de010000000400ull, /* -> +0x40, mapping 1 */
		0,
		0, /* end of chain */
	};
	const uint64_t loop[] = {0x57ac000000000000ull, 0xc0de000000000010ull};
	const uint64_t wild[] = {0xfffffffffffffff8ull, 0xc0de000000000010ull,
				 0x8000000000000000ull, 0x57acffffffffffffull};

	unwind_seed("fp-chain.bin", chain, sizeof(chain) / 8, 0xc0de000000000100ull,
		    0x57ac000000000010ull, 256);
	unwind_seed("fp-loop.bin", loop, sizeof(loop) / 8, 0xc0de000000000100ull,
		    0x57ac000000000000ull, 64);
	unwind_seed("rip-libc.bin", chain, sizeof(chain) / 8, 0xc0de020000000800ull,
		    0x57ac000000000010ull, 256);
	unwind_seed("wild-words.bin", wild, sizeof(wild) / 8, 0x42, 0x57ac000000000000ull, 16);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: gen_seeds CORPUS_DIR CC\n");
		return 2;
	}
	corpus = argv[1];
	mkdir(corpus, 0755);
	gen_hostile();
	gen_compiled(argv[2]);
	gen_pprof();
	gen_manifest();
	gen_symtab();
	gen_unwind();
	(void)seed_function(1);
	return 0;
}
