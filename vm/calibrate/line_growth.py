#!/usr/bin/env python3
"""Calibration of numalab's LINE_QUEUE_GROWTH (crates/numalab-sim/src/physics/costs.rs,
the default of `numalab.line_queue_growth_ppm`): how much one hand-over of a contended
cache line grows per additional outstanding request, read off Willy Tarreau's
atomic-tests results (github.com/wtarreau/atomic-tests, results/).

Two files of one machine are read:
  lat-MACHINE.txt      thr-lat.sh's matrix of unloaded CAS latencies between every
                       pair of threads (the "#Op=2" block, ns);
  cas-lat-MACHINE.txt  cas-lat with N threads on one line: for each thread, the
                       share of hand-overs that went to each other thread (its "t:"
                       row, percent) and the time per successful CAS ("ns:").

The unloaded cost of the hand-overs that happened is the t-weighted mean of the latency
matrix (a thread taking the line again from itself is counted at 0 ns); the measured
time per CAS over that mean is the load factor 1 + g (N - 1) of physics/line.rs, so
g = (measured / unloaded - 1) / (N - 1). Only the first cas-lat run of a file is read
(the later ones use other variants: relaxation, load-exclusive).

    python3 vm/calibrate/line_growth.py RESULTS_DIR xeon ryzen

On 2026-11-28 (docs/reproductions.md, numa-balance-serialize): xeon (W-2145, one LLC)
36.6 ns unloaded, 53 ns measured, g = 0.030; ryzen (2700X, two CCXs) 47.5 ns, 127 ns,
g = 0.112.
"""
import re
import sys


def latency_matrix(path):
    """The #Op=2 block of a thr-lat.sh result: rows of ns, '-' on the diagonal."""
    block = open(path).read().split("#Op=2")[1].split("#Op=")[0]
    rows = [line.split()[1:] for line in block.strip().splitlines()[1:]]
    rows = [r for r in rows if r]
    return [[0.0 if x == "-" else float(x) for x in r] for r in rows]


def first_cas_run(path):
    """Hand-over shares (row: from, column: to, percent) and ns per CAS of the first run."""
    run = open(path).read().split("Starting ")[1]
    shares = []
    for line in run.splitlines():
        if re.match(r"\s*\d+: t:", line):
            shares.append([float(x) for x in re.findall(r"t:\s*([\d.]+)%", line)])
    ns = float(re.search(r"\bns:(\d+)", run).group(1))
    return shares, ns


def growth(results, machine):
    lat = latency_matrix(f"{results}/lat-{machine}.txt")
    shares, ns = first_cas_run(f"{results}/cas-lat-{machine}.txt")
    n = len(shares)
    if n < 2 or len(lat) < n:
        sys.exit(f"{machine}: {n} threads in cas-lat, {len(lat)} rows of latencies")
    weight = sum(sum(row[:n]) for row in shares)
    unloaded = sum(shares[i][j] * lat[i][j] for i in range(n) for j in range(n)) / weight
    return n, unloaded, ns, (ns / unloaded - 1.0) / (n - 1)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for machine in sys.argv[2:]:
        n, unloaded, ns, g = growth(sys.argv[1], machine)
        print(f"{machine}: {n} threads, unloaded {unloaded:.1f} ns, measured {ns:.0f} ns, "
              f"growth {g:.4f} per additional request ({g * 1e6:.0f} ppm)")


if __name__ == "__main__":
    main()
