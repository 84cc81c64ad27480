/*
 * Calibration of numalab's CLONE_THREAD_NS (crates/numalab-sim/src/physics/costs.rs):
 * the time a process's main thread spends creating one thread, pthread_create with
 * a fresh default stack (mmap of the stack and its guard page, clone(CLONE_VM|...),
 * wake_up_new_task), which is what `numalab real run`'s worker does for every thread
 * that starts at once (std::thread::Builder::spawn).
 *
 *   gcc -O2 -pthread vm/calibrate/pthread_create.c -o /tmp/pc && /tmp/pc
 *
 * Prints the mean ns per pthread_create of the first round (fresh stacks; later rounds
 * reuse glibc's cached stacks and skip the mmap) over 64 threads, 5 processes' worth.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void *body(void *a)
{
	char buf[16384];
	memset(buf, 1, sizeof buf);
	return (void *)(long)buf[5] + (long)a;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void)
{
	enum { N = 64 };
	pthread_t th[N];
	double t0 = now();
	for (int i = 0; i < N; i++)
		pthread_create(&th[i], 0, body, 0);
	double t1 = now();
	for (int i = 0; i < N; i++)
		pthread_join(th[i], 0);
	printf("%.0f ns per pthread_create (fresh stacks, %d threads)\n", (t1 - t0) / N, N);
	return 0;
}
