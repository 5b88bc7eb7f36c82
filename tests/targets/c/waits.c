/*
 * waits: threads blocked on glibc locks and descriptors in known ways, for
 * the tests of who waits on whom. Prints "ready" once every thread is
 * asleep, then its own truth on one line, "TRUTH key=value ..." (which
 * thread took which lock, when a thread went to sleep). Runs until killed.
 *
 *   deadlock  "t1" takes lock_a then lock_b, "t2" lock_b then lock_a
 *   convoy    "holder" takes cfg_lock and blocks in read() on a pipe whose
 *             write end main keeps; three "waiter"s block on cfg_lock
 *   rwlock    "writer" holds rw_w for writing, "reader" waits to read it;
 *             two "rholder"s hold rw_r for reading, "wwaiter" waits to write
 *   kinds     a recursive, an errorcheck, a priority-inheritance and a
 *             robust mutex each held by "own-KIND" and waited on by
 *             "wait-KIND"; "cond" in pthread_cond_wait on cv; "sem" in
 *             sem_wait on sem (value 0); main in pthread_join of "cond"
 *   orphan    "quitter" takes lost_lock and exits holding it; "orphaned"
 *             then waits for lost_lock, whose owner field names a thread
 *             that is gone
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER, lock_b = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t lost_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t rw_w = PTHREAD_RWLOCK_INITIALIZER, rw_r = PTHREAD_RWLOCK_INITIALIZER;
pthread_mutex_t m_recursive, m_errorcheck, m_pi, m_robust;
pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
pthread_mutex_t cv_mu = PTHREAD_MUTEX_INITIALIZER;
sem_t sem;
static int pipe_fds[2];
static pthread_barrier_t took;

#define MAX_TRUTHS 16
static struct {
	const char *key;
	long value;
} truths[MAX_TRUTHS];
static int ntruths;
static pthread_mutex_t truths_mu = PTHREAD_MUTEX_INITIALIZER;

static void truth(const char *key, long value)
{
	pthread_mutex_lock(&truths_mu);
	if (ntruths < MAX_TRUTHS)
		truths[ntruths++].key = strdup(key), truths[ntruths - 1].value = value;
	pthread_mutex_unlock(&truths_mu);
}

static long tid(void)
{
	return syscall(SYS_gettid);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void name(const char *n)
{
	pthread_setname_np(pthread_self(), n);
}

static void *t1(void *arg)
{
	name("t1");
	pthread_mutex_lock(&lock_a);
	truth("t1", tid());
	pthread_barrier_wait(&took);
	pthread_mutex_lock(&lock_b);
	return arg;
}

static void *t2(void *arg)
{
	name("t2");
	pthread_mutex_lock(&lock_b);
	truth("t2", tid());
	pthread_barrier_wait(&took);
	pthread_mutex_lock(&lock_a);
	return arg;
}

static void *holder(void *arg)
{
	name("holder");
	pthread_mutex_lock(&cfg_lock);
	truth("holder", tid());
	truth("holder_fd", pipe_fds[0]);
	truth("holder_asleep_ms", now_ms());
	pthread_barrier_wait(&took);
	char c;
	while (read(pipe_fds[0], &c, 1) != 0)
		;
	return arg;
}

static void *waiter(void *arg)
{
	name("waiter");
	pthread_barrier_wait(&took);
	pthread_mutex_lock(&cfg_lock);
	return arg;
}

static void *writer(void *arg)
{
	name("writer");
	pthread_rwlock_wrlock(&rw_w);
	truth("writer", tid());
	pthread_barrier_wait(&took);
	pause();
	return arg;
}

static void *reader(void *arg)
{
	name("reader");
	pthread_barrier_wait(&took);
	pthread_rwlock_rdlock(&rw_w);
	return arg;
}

static void *rholder(void *arg)
{
	name("rholder");
	pthread_rwlock_rdlock(&rw_r);
	pthread_barrier_wait(&took);
	pause();
	return arg;
}

static void *wwaiter(void *arg)
{
	name("wwaiter");
	pthread_barrier_wait(&took);
	pthread_rwlock_wrlock(&rw_r);
	return arg;
}

struct kinded {
	pthread_mutex_t *m;
	const char *kind;
};

static void *owner(void *arg)
{
	const struct kinded *k = arg;
	char n[16], key[32];
	snprintf(n, sizeof(n), "own-%s", k->kind);
	name(n);
	pthread_mutex_lock(k->m);
	snprintf(key, sizeof(key), "own_%s", k->kind);
	truth(key, tid());
	pthread_barrier_wait(&took);
	pause();
	return NULL;
}

static void *kind_waiter(void *arg)
{
	const struct kinded *k = arg;
	char n[16];
	snprintf(n, sizeof(n), "wait-%s", k->kind);
	name(n);
	pthread_barrier_wait(&took);
	pthread_mutex_lock(k->m);
	return NULL;
}

static void *cond(void *arg)
{
	name("cond");
	truth("cond", tid());
	pthread_barrier_wait(&took);
	pthread_mutex_lock(&cv_mu);
	for (;;)
		pthread_cond_wait(&cv, &cv_mu);
	return arg;
}

static void *semwait(void *arg)
{
	name("sem");
	pthread_barrier_wait(&took);
	sem_wait(&sem);
	return arg;
}

static void *quitter(void *arg)
{
	name("quitter");
	truth("quitter", tid());
	pthread_mutex_lock(&lost_lock);
	return arg; /* exits holding it */
}

static void *orphaned(void *arg)
{
	name("orphaned");
	truth("orphaned", tid());
	pthread_mutex_lock(&lost_lock);
	return arg;
}

static void init_kind(pthread_mutex_t *m, int type, int protocol, int robust)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	pthread_mutexattr_setprotocol(&a, protocol);
	pthread_mutexattr_setrobust(&a, robust);
	pthread_mutex_init(m, &a);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "deadlock";
	pthread_t t[16];
	int n = 0;
	if (strcmp(mode, "deadlock") == 0) {
		pthread_barrier_init(&took, NULL, 2);
		pthread_create(&t[n++], NULL, t1, NULL);
		pthread_create(&t[n++], NULL, t2, NULL);
	} else if (strcmp(mode, "convoy") == 0) {
		if (pipe(pipe_fds) < 0)
			return 1;
		truth("pipe_write_fd", pipe_fds[1]);
		pthread_barrier_init(&took, NULL, 4);
		pthread_create(&t[n++], NULL, holder, NULL);
		for (int i = 0; i < 3; i++)
			pthread_create(&t[n++], NULL, waiter, NULL);
	} else if (strcmp(mode, "rwlock") == 0) {
		pthread_barrier_init(&took, NULL, 5);
		pthread_create(&t[n++], NULL, writer, NULL);
		pthread_create(&t[n++], NULL, reader, NULL);
		pthread_create(&t[n++], NULL, rholder, NULL);
		pthread_create(&t[n++], NULL, rholder, NULL);
		pthread_create(&t[n++], NULL, wwaiter, NULL);
	} else if (strcmp(mode, "kinds") == 0) {
		static struct kinded k[] = {{&m_recursive, "recursive"}, {&m_errorcheck, "errorcheck"},
					    {&m_pi, "pi"}, {&m_robust, "robust"}};
		init_kind(&m_recursive, PTHREAD_MUTEX_RECURSIVE, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED);
		init_kind(&m_errorcheck, PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED);
		init_kind(&m_pi, PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_INHERIT, PTHREAD_MUTEX_STALLED);
		init_kind(&m_robust, PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_ROBUST);
		sem_init(&sem, 0, 0);
		pthread_barrier_init(&took, NULL, 10);
		for (int i = 0; i < 4; i++) {
			pthread_create(&t[n++], NULL, owner, &k[i]);
			pthread_create(&t[n++], NULL, kind_waiter, &k[i]);
		}
		pthread_create(&t[n++], NULL, cond, NULL);
		pthread_create(&t[n++], NULL, semwait, NULL);
	} else if (strcmp(mode, "orphan") == 0) {
		pthread_t q;
		pthread_create(&q, NULL, quitter, NULL);
		pthread_join(q, NULL);
		pthread_create(&t[n++], NULL, orphaned, NULL);
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	/* Everyone past the barrier, then long enough to be asleep. */
	usleep(300000);
	truth("main", tid());
	printf("ready\nTRUTH");
	for (int i = 0; i < ntruths; i++)
		printf(" %s=%ld", truths[i].key, truths[i].value);
	printf("\n");
	fflush(stdout);
	if (strcmp(mode, "kinds") == 0)
		pthread_join(t[8], NULL); /* "cond": never ends */
	for (;;)
		pause();
}
