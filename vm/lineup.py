#!/usr/bin/env python3
"""Line a guest kernel's trace up with the model's, for docs/real.md M3.

Reads ftrace text: a guest's (`numalab vm run --trace FILE --trace-events
sched_switch,sched_migrate_task,...`, optionally with `--probe` fprobes on
`can_migrate_task` named `cm` and `cmr`) or the model's (`numalab validate
--model-trace DIR --trace-events sched_switch,numalab_can_migrate,...`).
Workload threads are the tasks named tN or threadN (model: PROC/tN), or
what `--threads REGEX` (before the command) matches, e.g. `s\\d` for
validate's sleepy. A
trace may be xz-compressed (`.xz`): crates/numalab/validate/kernel/traces/
keeps the guest traces of docs/real.md M3 (sessions 16 to 18).

  lineup.py migrations TRACE              who moved the workload threads, per 5 s
  lineup.py preemptions TRACE TASK        who preempted them, how long they waited
  lineup.py episodes TRACE TASK [T0 T1]   TASK's CPU per wake-to-sleep episode
  lineup.py share TRACE TASK              span / CPU of TASK's long episodes
  lineup.py failtime TRACE TASK           can_migrate_task on threads, by
                                          nr_balance_failed, vs TASK's episode
  lineup.py timeline MODEL.json KERNEL.json   each thread's CPU per sample
  lineup.py regions RECORD.json [...]     each region's share on node 0 per
                                          2 s, a digit 0-9 (tenths, rounded
                                          to ninths), one line per record
  lineup.py sticks TRACE                  the threads' sched_stick_numa per 5 s
  lineup.py groups TRACE                  the numa group ids (ngid) the moves,
                                          swaps and sticks name, per thread
  lineup.py passes TRACE                  sched_balance_rq's durations (fprobes
                                          `sbr`/`sbrr` on it and its return)
                                          and the newly idle entries (`nib`,
                                          `nibr`): what [kernel]
                                          vcpu_preemption is measured from
  lineup.py scans TRACE                   the NUMA scan passes per thread:
                                          guest, from fprobes `tnw` on
                                          task_numa_work and `cpn`/`cpnr` on
                                          change_prot_numa and its return
                                          (each pass's duration by the guest's
                                          clock and PTEs updated); model, from
                                          its numalab_scan events

Left out: binary trace.dat files; tasks other than the workload's threads
and the one named on the command line.
"""
import collections
import json
import lzma
import re
import sys

LINE = re.compile(r"\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+): (\w+): (.*)")
THREAD = re.compile(r"(^|/)t(hread)?\d")


def load(path):
    """The trace's events: (time s, comm, cpu, name, fields)."""
    out = []
    try:
        text = lzma.open(path, "rt").read() if path.endswith(".xz") else open(path).read()
    except OSError as e:
        sys.exit(f"lineup.py: {path}: {e.strerror}")
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = LINE.match(line)
        if m:
            comm, pid, cpu, _flags, ts, name, fields = m.groups()
            f = dict(re.findall(r"(\w+)=(\S+)", fields))
            f["_pid"] = pid
            out.append((float(ts), comm, int(cpu), name, f))
    return out


def is_thread(comm):
    return THREAD.search(comm) is not None


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


def migrations(ev):
    kinds, per5 = collections.Counter(), collections.Counter()
    for t, comm, cpu, name, f in ev:
        if name != "sched_migrate_task" or not is_thread(f["comm"]):
            continue
        per5[int(t // 5) * 5] += 1
        if comm.startswith("migration/"):
            kinds["stopper (NUMA move, swap, active balance)"] += 1
        elif comm.startswith("<idle>"):
            kinds["idle CPU's balance"] += 1
        elif int(f["dest_cpu"]) == cpu:
            kinds["busy CPU's pull"] += 1
        else:
            kinds["other (wakeup, nohz)"] += 1
    numa = collections.Counter(e[3] for e in ev)
    print("thread migrations:", dict(kinds))
    print("moves/swaps/sticks:", [numa[k] for k in ("sched_move_numa", "sched_swap_numa", "sched_stick_numa")])
    print("per 5 s:", sorted(per5.items()))


def preemptions(ev, task):
    by, waits, since, runs, cur = collections.Counter(), [], {}, [], {}
    for t, _c, cpu, name, f in ev:
        if name != "sched_switch":
            continue
        if cpu in cur and cur[cpu][0] == task:
            runs.append(t - cur[cpu][1])
        cur[cpu] = (f["next_comm"], t)
        if is_thread(f["prev_comm"]) and f["prev_state"].startswith("R"):
            by[f["next_comm"]] += 1
            since[f["prev_comm"]] = t
        if f["next_comm"] in since:
            waits.append(t - since.pop(f["next_comm"]))
    print("threads preempted by:", by.most_common(8))
    print(f"{task}: {len(runs)} runs, {sum(runs):.2f} s; thread waits after preemption: median {1e3 * median(waits):.2f} ms")


def episode_list(ev, task, t0=0.0, t1=1e18):
    on, acc, start, out = {}, 0.0, None, []
    for t, _c, cpu, name, f in ev:
        if name != "sched_switch" or not t0 <= t <= t1:
            continue
        if f["next_comm"] == task:
            on[cpu] = t
            start = t if start is None else start
        if f["prev_comm"] == task and cpu in on:
            acc += t - on.pop(cpu)
            if not f["prev_state"].startswith("R"):
                out.append((start, t, acc))
                acc, start = 0.0, None
    return out


def episodes(ev, task, t0, t1):
    eps = episode_list(ev, task, t0, t1)
    cpu = [e[2] for e in eps]
    big = [c for c in cpu if c > 0.005]
    print(f"{task}: {len(eps)} episodes, {sum(cpu):.2f} s of CPU; over 5 ms: {len(big)}, median {1e3 * median(big):.1f} ms")


def share(ev, task):
    r = [(e[1] - e[0]) / e[2] for e in episode_list(ev, task) if e[2] >= 0.02]
    print(f"{task}: {len(r)} episodes of 20 ms or more; span / CPU median {median(r):.2f}")


def failtime(ev, task):
    names, start, call, res = {}, None, None, collections.defaultdict(list)
    for t, _c, _cpu, name, f in ev:
        if name == "sched_switch":
            names[f["next_pid"]] = f["next_comm"]
            if f["next_comm"] == task and start is None:
                start = t
            if f["prev_comm"] == task and not f["prev_state"].startswith("R"):
                start = None
        elif name == "cm":
            call = (t, f)
        elif name == "cmr" and call:
            t0, f0 = call
            if is_thread(names.get(f0["pid"], "")):
                res[(int(f0["fail"]), int(f.get("ret", "0"), 0))].append(None if start is None else t0 - start)
            call = None
    for (fail, ret), v in sorted(res.items()):
        d = [x for x in v if x is not None]
        print(f"fail={fail} ret={ret}: {len(v)}; during {task}'s episode {len(d)}, median {1e3 * median(d):.0f} ms into it")


def timeline(model, kernel):
    def cpus(path):
        try:
            ts = json.load(open(path))["timeseries"]
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"lineup.py: {path}: not a run record with a time series ({e})")
        ix = [i for i, c in enumerate(ts["columns"]) if c.startswith("cpu:")]
        return [(row[0], "".join("-" if row[i] is None or row[i] < 0 else str(int(row[i])) for i in ix)) for row in ts["rows"]]

    print("t(s)  model    | kernel")
    for (t, a), (_, b) in zip(cpus(model)[:11], cpus(kernel)[:11]):
        print(f"{t:4.0f}  {a:<8} | {b}")


def read_record(path):
    """A run record (JSON, or `.xz` of it)."""
    try:
        f = lzma.open(path, "rt") if path.endswith(".xz") else open(path)
        return json.load(f)
    except (OSError, lzma.LZMAError, ValueError) as e:
        sys.exit(f"lineup.py: {path}: not a run record ({e})")


def regions(paths):
    """Where each region's pages are over time: ninths on node 0."""
    for path in paths:
        try:
            ts = read_record(path)["timeseries"]
        except KeyError:
            sys.exit(f"lineup.py: {path}: no time series")
        cols = ts["columns"]
        ix = [i for i, c in enumerate(cols) if c.startswith("region:") and c.endswith(":node0_bytes")]
        pair = [cols.index(cols[i].replace(":node0_bytes", ":node1_bytes")) for i in ix]
        names = [cols[i].split(":")[1] for i in ix]
        line = []
        for row in ts["rows"]:
            if round(row[0]) % 2 or (line and line[-1][0] == round(row[0])):
                continue
            digits = "".join(
                str(round(9 * row[i] / (row[i] + row[j]))) if row[i] + row[j] > 0 else "."
                for i, j in zip(ix, pair)
            )
            line.append((round(row[0]), digits))
        print(f"{path}: {' '.join(names)}")
        print("  " + " ".join(f"{t}:{d}" for t, d in line))


def sticks(ev):
    bins = collections.Counter(int(t // 5) * 5 for t, comm, _c, name, _f in ev if name == "sched_stick_numa" and is_thread(comm))
    print(f"sched_stick_numa of the threads: {sum(bins.values())}; per 5 s: {sorted(bins.items())}")


def groups(ev):
    """Which numa group each thread was in when task_numa_migrate acted."""
    seen = collections.defaultdict(collections.Counter)
    for _t, comm, _c, name, f in ev:
        if name not in ("sched_move_numa", "sched_swap_numa", "sched_stick_numa") or not is_thread(comm):
            continue
        seen[comm][f.get("ngid", f.get("src_ngid", "?"))] += 1
    if not seen:
        sys.exit("lineup.py groups: no sched_move/swap/stick_numa of the threads in the trace")
    for comm, c in sorted(seen.items()):
        print(f"{comm}: " + ", ".join(f"ngid {g} x{n}" for g, n in sorted(c.items())))


def quantile(v, q):
    return v[min(len(v) - 1, int(q * len(v)))]


def passes(ev):
    """Balance passes by the guest's clock, and the newly idle gate."""
    start, durs = {}, collections.defaultdict(list)
    entries = with_pass = pulled = 0
    open_nib, avg, mib = {}, [], []
    for t, _comm, cpu, name, f in ev:
        if name == "sbr":
            start[cpu] = (t, f.get("idle", "?"))
            if f.get("idle") == "2" and cpu in open_nib:
                open_nib[cpu] = True
        elif name == "sbrr" and cpu in start:
            t0, idle = start.pop(cpu)
            durs[idle].append((t - t0) * 1e6)
        elif name == "nib":
            entries += 1
            open_nib[cpu] = False
            avg.append(int(f["avg"]) / 1e3)
            mib.append(int(f["mib"]) / 1e3)
        elif name == "nibr" and cpu in open_nib:
            with_pass += open_nib.pop(cpu)
            pulled += int(f["ret"], 0) > 0
    if not durs:
        sys.exit("lineup.py passes: no sched_balance_rq probes (sbr, sbrr) in the trace")
    every = sorted(d for v in durs.values() for d in v)
    cut = [d for d in every if d > 1000]
    short = [d for d in every if d <= 1000]
    for idle, v in sorted(durs.items()):
        v.sort()
        print(f"idle={idle}: {len(v)} passes, median {quantile(v, 0.5):.0f} us, {sum(d > 1000 for d in v)} over 1 ms")
    print(f"all: {len(every)} passes, {len(cut)} over 1 ms ({100 * len(cut) / len(every):.2f} %)")
    if cut:
        print("  over 1 ms, quantiles 0/25/50/75/100 % (ms):", [round(quantile(cut, q) / 1e3, 1) for q in (0, 0.25, 0.5, 0.75)] + [round(cut[-1] / 1e3, 1)])
        print(f"  pass time up to 1 ms per cut: {sum(short) / len(cut) / 1e3:.1f} ms (run_ms)")
    if entries:
        avg.sort()
        mib.sort()
        print(f"newly idle: {entries} entries, {with_pass} ran a pass, {pulled} pulled; avg_idle median {quantile(avg, 0.5):.0f} us, max_idle_balance_cost median {quantile(mib, 0.5):.0f} us")


def scans(ev):
    """NUMA scan passes per thread, and the guest's pass durations."""
    open_pass, guest, model = {}, [], []
    for t, comm, _cpu, name, f in ev:
        task = f"{comm}-{f['_pid']}"
        if name == "tnw":
            open_pass[task] = [t, task, t, 0, 0]
            guest.append(open_pass[task])
        elif name in ("cpn", "cpnr") and task in open_pass:
            p = open_pass[task]
            p[2] = t
            if name == "cpnr":
                p[3] += max(int(f.get("ret", "0"), 0), 0)
                p[4] += 1
        elif name == "numalab_scan":
            model.append((t, task, int(f["pages_updated"])))
    guest = [p for p in guest if p[4] > 0 and is_thread(p[1])]
    model = [p for p in model if is_thread(p[1])]
    if not guest and not model:
        sys.exit("lineup.py scans: no scan passes of the threads (guest: fprobes tnw, cpn, cpnr; model: numalab_scan)")
    per = collections.Counter(p[1] for p in guest) + collections.Counter(p[1] for p in model)
    print("passes per thread:", dict(sorted(per.items())))
    for t, comm, pages in model:
        print(f"{t:8.3f} {comm:<16} {pages:6} PTEs")
    for t, comm, end, pages, _n in guest:
        print(f"{t:8.3f} {comm:<16} {pages:6} PTEs {1000 * (end - t):7.1f} ms")
    full = sorted(1000 * (p[2] - p[0]) for p in guest if p[3] >= 16000)
    if full:
        print(f"passes of 16 k PTEs or more: {len(full)}, duration ms min {full[0]:.1f} median {quantile(full, 0.5):.1f} max {full[-1]:.1f}")


def main(argv):
    global THREAD
    if len(argv) > 2 and argv[1] == "--threads":
        try:
            THREAD = re.compile(argv[2])
        except re.error as e:
            sys.exit(f"lineup.py: --threads {argv[2]!r}: {e}")
        argv = argv[:1] + argv[3:]
    if len(argv) < 3:
        sys.exit(__doc__)
    cmd, path = argv[1], argv[2]
    if cmd == "timeline":
        return timeline(path, argv[3])
    if cmd == "regions":
        return regions(argv[2:])
    ev = load(path)
    if cmd == "migrations":
        return migrations(ev)
    if cmd == "sticks":
        return sticks(ev)
    if cmd == "passes":
        return passes(ev)
    if cmd == "groups":
        return groups(ev)
    if cmd == "scans":
        return scans(ev)
    task = argv[3] if len(argv) > 3 else sys.exit(f"{cmd}: name the task (the coordinator: numalab in a guest, numalab-real-sample in the model)")
    if cmd == "preemptions":
        return preemptions(ev, task)
    if cmd == "episodes":
        t0, t1 = (float(argv[4]), float(argv[5])) if len(argv) > 5 else (0.0, 1e18)
        return episodes(ev, task, t0, t1)
    if cmd == "share":
        return share(ev, task)
    if cmd == "failtime":
        return failtime(ev, task)
    sys.exit(f"unknown command {cmd!r}\n{__doc__}")


if __name__ == "__main__":
    main(sys.argv)
