//! Proposal 2 scenario tests: asynchronous NUMA scanning and the
//! access-latency histograms, whole runs on tiny-2n (4 CPUs).

use numalab_record::lab::{self, LabFigure};
use numalab_record::RunRecord;
use numalab_sim::{Knobs, RunOptions, Sim};

/// pmbench's shape on tiny-2n: 2 threads, one per node (each node keeps an
/// idle CPU, as the posting's machine did), 128 MiB uniform, 50% writes,
/// one access in flight, 6 s.
const SPEC: &str = r#"
name = "pm-small"
duration = "6s"
[[cgroup]]
path = "/pm"
[[process]]
name = "pm"
cgroup = "/pm"
[[process.region]]
name = "map"
size = "128MiB"
[[process.thread]]
name = "job"
count = 2
affinity = "node:i"
phases = [ { random = "map", accesses = 1_000_000_000_000, write_fraction = 0.5, mlp = 1 } ]
"#;

fn run(sets: &[&str]) -> RunRecord {
    run_spec(SPEC, sets)
}

fn run_spec(text: &str, sets: &[&str]) -> RunRecord {
    let m = numalab_topology::presets::load("tiny-2n").expect("machine");
    run_on(m, text, sets)
}

fn run_on(m: numalab_topology::Machine, text: &str, sets: &[&str]) -> RunRecord {
    let spec = numalab_workload::spec::parse(text, "pm-small").expect("spec");
    let w = numalab_workload::spec::resolve(&spec, &m, 1, 1.0).expect("resolve");
    let mut all = vec!["numalab.access_latency_threshold_us=100"];
    all.extend_from_slice(sets);
    let k = Knobs::from_sets(&all).expect("knobs");
    let opts = RunOptions {
        seed: 1,
        scale: 1.0,
        trace: false,
        check_every: 50,
    };
    Sim::new(m, w, k, opts)
        .expect("sim")
        .run(&mut |_| {})
        .expect("run")
}

fn lab(r: &RunRecord, k: LabFigure) -> f64 {
    r.lab.get(k).unwrap_or(f64::NAN)
}

#[test]
fn sync_scans_stall_the_threads_and_async_moves_the_stalls_to_a_kworker() {
    let sync = run(&[]);
    let asy = run(&["kernel.numa_balancing_scan_async=1"]);
    // A 128 MiB window of 4 KiB PTEs at 10 ns each: each scan stalls its
    // thread for more than 100 us.
    assert!(lab(&sync, lab::NUMA_SCANS) >= 3.0, "{:?}", sync.lab);
    let s_out = lab(&sync, lab::ACCESS_LATENCY_OUTLIERS);
    let a_out = lab(&asy, lab::ACCESS_LATENCY_OUTLIERS);
    assert!(s_out >= 3.0, "sync outliers {s_out}");
    assert!(a_out < s_out / 3.0, "async {a_out} vs sync {s_out}");
    // The kworker did the scans and its time is in no task of /pm.
    let worker = lab(&asy, lab::SCAN_ASYNC_WORKER_S);
    assert!(worker > 0.0);
    assert_eq!(lab(&asy, lab::SCAN_ASYNC_HIDDEN_S), worker);
    assert!(lab(&asy, lab::SCAN_ASYNC_RUN) >= 3.0);
    assert!(asy.tasks.iter().all(|t| !t.name.starts_with("kworker")));
    let pm_sys = |r: &RunRecord| r.cgroups["/pm"].sys_s;
    assert!(
        pm_sys(&asy) < pm_sys(&sync),
        "{} vs {}",
        pm_sys(&asy),
        pm_sys(&sync)
    );
    // Async keys only appear when async is on.
    assert!(!sync.lab.contains(lab::SCAN_ASYNC_RUN));
}

#[test]
fn async_does_not_help_when_the_node_has_no_idle_cpu() {
    // Both threads on node 0 (2 CPUs): node 0's kworker can only run by
    // taking a thread's CPU, so the thread still waits for the scan.
    let both = SPEC.replace("affinity = \"node:i\"", "affinity = \"node:0\"");
    let sync = run_spec(&both, &[]);
    let asy = run_spec(&both, &["kernel.numa_balancing_scan_async=1"]);
    let s_out = lab(&sync, lab::ACCESS_LATENCY_OUTLIERS);
    let a_out = lab(&asy, lab::ACCESS_LATENCY_OUTLIERS);
    assert!(s_out >= 3.0, "sync {s_out}");
    assert!(a_out >= s_out * 0.5, "async {a_out} vs sync {s_out}");
    // ...and waited for a tick's slice to get there.
    assert!(
        lab(&asy, lab::SCAN_ASYNC_DELAY_MAX_MS) >= 1.0,
        "{:?}",
        asy.lab
    );
}

#[test]
fn backcharge_keeps_the_time_in_the_cgroup_and_on_its_cpus() {
    let back = run(&[
        "kernel.numa_balancing_scan_async=1",
        "numalab.numa_scan_async_backcharge=1",
    ]);
    assert!(lab(&back, lab::SCAN_ASYNC_WORKER_S) > 0.0);
    assert_eq!(lab(&back, lab::SCAN_ASYNC_HIDDEN_S), 0.0);
    assert_eq!(lab(&back, lab::SCAN_ASYNC_OUTSIDE_CPUSET), 0.0);
}

#[test]
fn histograms_split_reads_and_writes_and_count_every_access() {
    let r = run(&[]);
    let h = r.cgroups["/pm"].access_latency.as_ref().expect("histogram");
    let reads: u64 = h.reads.iter().sum();
    let writes: u64 = h.writes.iter().sum();
    let total = lab(&r, lab::ACCESSES);
    assert!(reads > 0 && writes > 0);
    // Half the accesses are writes.
    let share = writes as f64 / (reads + writes) as f64;
    assert!((share - 0.5).abs() < 0.01, "{share}");
    assert!(((reads + writes) as f64 - total).abs() / total < 1e-6);
    // Per task too, and the root cgroup holds /pm's.
    let t0 = r.tasks[0].access_latency.as_ref().expect("task histogram");
    assert!(t0.reads.iter().sum::<u64>() < reads);
    assert_eq!(r.cgroups["/"].access_latency.as_ref(), Some(h));
    assert_eq!(h.threshold_us, 100);
    assert_eq!(
        h.reads_over + h.writes_over,
        lab(&r, lab::ACCESS_LATENCY_OUTLIERS) as u64
    );
    // Switched off: no histograms, no figures.
    let off = run(&["numalab.access_latency=0"]);
    assert!(off.cgroups["/pm"].access_latency.is_none());
    assert!(!off.lab.contains(lab::ACCESSES));
}

/// tiny-2n as a QEMU guest whose host takes a vCPU off every 2 ms of its
/// time for 1-5 ms (`[kernel] vcpu_preemption`).
fn guest() -> numalab_topology::Machine {
    let mut m = numalab_topology::presets::load("tiny-2n").expect("machine");
    m.kernel.vcpu_preemption = Some(numalab_topology::VcpuPreemption {
        run_ms: 2.0,
        delay_ms: [1.0, 2.0, 3.0, 4.0, 5.0],
    });
    m
}

#[test]
fn a_guests_timed_accesses_see_one_slow_access_per_host_cut() {
    let ms = ["numalab.access_latency_threshold_us=1000"];
    let off = [
        "numalab.access_latency_threshold_us=1000",
        "numalab.vcpu_access_cuts=0",
    ];
    let on = run_on(guest(), SPEC, &ms);
    let without = run_on(guest(), SPEC, &off);
    let out = |r: &RunRecord| lab(r, lab::ACCESS_LATENCY_OUTLIERS);
    // Two threads timing accesses for 6 s, a cut every 2 ms of it, each
    // cut 1-5 ms long, so over the 1 ms threshold: about 6000 more.
    let cuts = out(&on) - out(&without);
    assert!(
        (5000.0..=7000.0).contains(&cuts),
        "{} vs {}",
        out(&on),
        out(&without)
    );
    // The cuts only redistribute the histogram: the work done is the same.
    assert_eq!(
        lab(&on, lab::ACCESSES).round(),
        lab(&without, lab::ACCESSES).round() + cuts.round()
    );
    assert_eq!(on.vmstat, without.vmstat);
    // A native machine has no host: the switch changes nothing there.
    let native = run(&ms);
    let native_off = run(&off);
    assert_eq!(native.tasks, native_off.tasks);
    assert_eq!(out(&native), out(&native_off));
}
