/*
 * eintr_counter: threads blocked in the calls a ptrace stop interrupts
 * (signal(7): "Interruption of system calls and library functions by stop
 * signals"), counting every EINTR they see:
 *
 *   "epoll"   epoll_wait on an epoll set nothing ever becomes ready in
 *   "semop"   semtimedop on a System V semaphore that stays 0
 *   "sigwait" sigtimedwait for a signal nobody sends
 *   "recv"    recv on a socket with a receive timeout (SO_RCVTIMEO), which
 *             nothing is ever sent to
 *
 * Each waits with a 2 s timeout and waits again, so it is asleep all the
 * time but wakes (and moves its schedstat) now and then. Prints "ready";
 * then each line on stdin is answered with "eintr EPOLL SEMOP SIGWAIT
 * RECV"; EOF ends it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static atomic_long eintr_epoll, eintr_semop, eintr_sigwait, eintr_recv;
static int semid;
static int sock_pair[2];

static void *epoll_main(void *arg);
static void *epoll_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "epoll");
	int ep = epoll_create1(0);
	struct epoll_event ev;
	for (;;)
		if (epoll_wait(ep, &ev, 1, 2000) < 0 && errno == EINTR)
			atomic_fetch_add(&eintr_epoll, 1);
	return NULL;
}

static void *semop_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "semop");
	struct sembuf down = {.sem_num = 0, .sem_op = -1};
	struct timespec ts = {2, 0};
	for (;;)
		if (semtimedop(semid, &down, 1, &ts) < 0 && errno == EINTR)
			atomic_fetch_add(&eintr_semop, 1);
	return NULL;
}

static void *sigwait_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "sigwait");
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	struct timespec ts = {2, 0};
	for (;;)
		if (sigtimedwait(&set, NULL, &ts) < 0 && errno == EINTR)
			atomic_fetch_add(&eintr_sigwait, 1);
	return NULL;
}

static void *recv_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "recv");
	struct timeval tv = {2, 0};
	setsockopt(sock_pair[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char c;
	for (;;)
		if (recv(sock_pair[0], &c, 1, 0) < 0 && errno == EINTR)
			atomic_fetch_add(&eintr_recv, 1);
	return NULL;
}

int main(void)
{
	/* Blocked everywhere: sigwait takes it synchronously. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	semid = semget(IPC_PRIVATE, 1, 0600);
	if (semid < 0)
		return 1;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sock_pair) < 0)
		return 1;
	pthread_t t[4];
	pthread_create(&t[0], NULL, epoll_main, NULL);
	pthread_create(&t[1], NULL, semop_main, NULL);
	pthread_create(&t[2], NULL, sigwait_main, NULL);
	pthread_create(&t[3], NULL, recv_main, NULL);
	usleep(100000);
	printf("ready\n");
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		printf("eintr %ld %ld %ld %ld\n", atomic_load(&eintr_epoll), atomic_load(&eintr_semop),
		       atomic_load(&eintr_sigwait), atomic_load(&eintr_recv));
		fflush(stdout);
	}
	semctl(semid, 0, IPC_RMID);
	return 0;
}
