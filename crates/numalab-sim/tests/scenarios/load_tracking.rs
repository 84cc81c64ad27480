//! PELT, background activity and the kernel-work speed, end to end: what
//! a kernel developer would check of them in a run.

use crate::common::run_toml;
use numalab_sim::{Knobs, RunOptions, Sim};

const QUIET: &[&str] = &["kernel.numa_balancing=0", "numalab.background=0"];

/// Three CPU hogs on tiny-2n's 4 CPUs, one of them sleeping half the time.
const HOGS: &str = r#"
name = "hogs"
[[process]]
name = "p"
[[process.thread]]
name = "busy"
count = 2
phases = [ { compute = "400ms" } ]
[[process.thread]]
name = "sleepy"
phases = [ { repeat = 20, body = [ { compute = "10ms" }, { sleep = "10ms" } ] } ]
"#;

#[test]
fn background_threads_take_cpu_time_but_never_show_in_the_record() {
    let quiet = run_toml("tiny-2n", HOGS, QUIET).unwrap();
    let busy = run_toml("tiny-2n", HOGS, &["kernel.numa_balancing=0"]).unwrap();
    // Same tasks in the record either way: kernel threads are left out.
    let names =
        |r: &numalab_record::RunRecord| r.tasks.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&quiet), names(&busy));
    assert_eq!(quiet.tasks.len(), 3);
    // Same seed, same bytes.
    let again = run_toml("tiny-2n", HOGS, &["kernel.numa_balancing=0"]).unwrap();
    assert_eq!(
        serde_json::to_string(&busy).unwrap(),
        serde_json::to_string(&again).unwrap()
    );
}

/// One thread bound to `affinity` that streams its own 64 MiB `passes`
/// times: the first pass first-touches it.
fn one_streamer(affinity: &str, passes: u32) -> String {
    format!(
        r#"
name = "one"
[[process]]
name = "p"
[[process.region]]
name = "r"
size = "64MiB"
[[process.thread]]
name = "t"
affinity = "{affinity}"
phases = [ {{ stream = "r", passes = {passes} }} ]
"#
    )
}

/// Runs `w` on a copy of tiny-2n whose `[kernel]` is changed by `f`.
fn run_on(
    w: &str,
    sets: &[&str],
    f: impl FnOnce(&mut numalab_topology::Machine),
) -> numalab_record::RunRecord {
    let mut m = numalab_topology::presets::load("tiny-2n").unwrap();
    f(&mut m);
    let spec = numalab_workload::spec::parse(w, "test").unwrap();
    let wl = numalab_workload::spec::resolve(&spec, &m, 1, 1.0).unwrap();
    let k = Knobs::from_sets(sets).unwrap();
    Sim::new(m, wl, k, RunOptions::default())
        .unwrap()
        .run(&mut |_| {})
        .unwrap()
}

#[test]
fn cost_scale_multiplies_kernel_work_but_not_byte_copies() {
    // First-touch faults of 64 MiB on one CPU: sys time is the fault's fixed
    // cost (scaled) plus zeroing at core bandwidth (not scaled).
    let w = one_streamer("cpu:0", 1);
    let sys = |scale: f64| {
        let r = run_on(&w, QUIET, |m| m.kernel.cost_scale = scale);
        r.tasks[0].sys_s
    };
    let (s1, s10) = (sys(1.0), sys(10.0));
    let pages = 16384.0;
    let fixed = pages * 1000e-9; // FAULT_ALLOC_NS per fault
    assert!(
        ((s10 - s1) - 9.0 * fixed).abs() < 0.05 * 9.0 * fixed,
        "sys {s1} at scale 1, {s10} at scale 10: the difference must be 9 x the fixed cost {fixed}"
    );
}

#[test]
fn background_work_takes_cpu_from_the_workload_under_either_load_signal() {
    // tiny-2n: 4 CPUs, four busy workers, and on every CPU a heavy
    // background thread bound there that runs 100 ms of every 200 ms. The
    // workers must share their CPUs with it, whichever load signal the
    // balancer reads; with numalab.background=0 they run alone.
    let w = r#"
name = "four"
[[process]]
name = "p"
[[process.thread]]
name = "w"
count = 4
phases = [ { compute = "2s" } ]
"#;
    let hog = |m: &mut numalab_topology::Machine| {
        m.kernel.background = vec![numalab_topology::Background {
            name: "hog".into(),
            per: numalab_topology::BackgroundPer::Cpu,
            period_ms: 200.0,
            runtime_us: 100_000.0,
            mm_refs: false,
        }];
    };
    for pelt in ["numalab.pelt=1", "numalab.pelt=0"] {
        let r = run_on(w, &["kernel.numa_balancing=0", pelt], hog);
        // Every CPU has a hog half the time: the workers lose about a
        // third of their CPU, so 2 s of work takes about 3 s or more.
        assert!(r.elapsed_s > 2.5, "{pelt}: elapsed {}", r.elapsed_s);
        for t in &r.tasks {
            assert!(
                (t.user_s - 2.0).abs() < 0.05,
                "{pelt}: {} ran {}",
                t.name,
                t.user_s
            );
        }
    }
    let quiet = run_on(w, &["kernel.numa_balancing=0", "numalab.background=0"], hog);
    assert!(
        (quiet.elapsed_s - 2.0).abs() < 0.05,
        "quiet: {}",
        quiet.elapsed_s
    );
}

#[test]
fn a_proc_reader_makes_a_single_threaded_scan_mark_its_own_nodes_pages() {
    // One thread pinned to node 0 rewrites its 64 MiB for a few seconds:
    // alone in its mm, its scans leave pages already on node 0 alone
    // (change_pte_range's target_node), so nothing is marked. A background
    // reader of /proc/PID/numa_maps that runs 8 ms of every 10 holds the
    // mm meanwhile (mm_users 2), and the scans that land then mark them.
    let w = one_streamer("node:0", 400);
    let reader = |m: &mut numalab_topology::Machine| {
        m.kernel.background = vec![numalab_topology::Background {
            name: "reader".into(),
            per: numalab_topology::BackgroundPer::Cpu,
            period_ms: 10.0,
            runtime_us: 8_000.0,
            mm_refs: true,
        }];
    };
    let marked = |sets: &[&str]| {
        run_on(&w, sets, reader)
            .vmstat
            .get("numa_pte_updates")
            .copied()
            .unwrap_or(0)
    };
    let with = marked(&["kernel.numa_balancing=1"]);
    let without = marked(&["kernel.numa_balancing=1", "numalab.proc_mm_refs=0"]);
    assert_eq!(without, 0, "alone in its mm, nothing on its node is marked");
    assert!(
        with >= 16_384,
        "the reader's windows let scans mark a full pass: {with}"
    );
}
