/*
 * Calibration of numalab's PTE_UPDATE_NS (crates/numalab-sim/src/physics/costs.rs,
 * the default of `numalab.pte_update_ns`): the time change_pte_range (mm/mprotect.c)
 * takes per present 4 KiB PTE. change_prot_numa runs it with MM_CP_PROT_NUMA,
 * mprotect(2) without; this times mprotect(PROT_NONE) over windows of 4 MiB to 1 GiB
 * of touched, THP-less anonymous memory, then restores and re-touches each window.
 *
 *   gcc -O2 vm/calibrate/mprotect_pte.c -o /tmp/mp && /tmp/mp
 *
 * Prints the mean ms per window and ns per PTE; a per-PTE figure that stays flat
 * across window sizes is the walk's, not the call's fixed cost. On numalab's build
 * host (AMD EPYC, Firecracker VM, Linux 6.18.44, 2026-11-27): 80.4, 80.9, 77.0,
 * 85.9 and 75.0 ns. Kernels with the 2025 mprotect PTE batching are reported 2x+
 * slower for regions over 400 KiB (docs/model.md, `numalab.pte_update_ns`).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
	size_t total = (size_t)2048 << 20;
	size_t wins[] = { (size_t)4 << 20, (size_t)16 << 20, (size_t)64 << 20,
			  (size_t)256 << 20, (size_t)1024 << 20 };
	char *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	madvise(p, total, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < total; i += 4096)
		p[i] = 1;
	for (int w = 0; w < 5; w++) {
		size_t win = wins[w];
		double sum = 0;
		int n = 0;

		for (int r = 0; r < 3; r++)
			for (size_t off = 0; off + win <= total; off += win) {
				double t0 = now();

				mprotect(p + off, win, PROT_NONE);
				sum += now() - t0;
				n++;
				mprotect(p + off, win, PROT_READ | PROT_WRITE);
				for (size_t i = off; i < off + win; i += 4096)
					p[i] = 2;
			}
		printf("window %5zu MiB: %8.3f ms mean, %.1f ns per PTE\n", win >> 20,
		       sum / n * 1e3, sum / n / (win / 4096) * 1e9);
	}
	return 0;
}
