//! Scenario tests of the foundation: placement, first touch, binding,
//! physics ordering, determinism and refusals, with balancing off.

use crate::common::*;

const OFF: &[&str] = &["kernel.numa_balancing=0"];

#[test]
fn same_seed_gives_identical_json() {
    let a = run("tiny-2n", "numa02", 0.02, 7, OFF).unwrap().to_json();
    let b = run("tiny-2n", "numa02", 0.02, 7, OFF).unwrap().to_json();
    assert_eq!(a, b);
}

#[test]
fn hard_bind_is_fastest_and_inverse_bind_slowest_on_two_nodes() {
    for base in ["numa02", "numa01-threadlocal"] {
        let plain = run("tiny-2n", base, 0.05, 2, OFF).unwrap().elapsed_s;
        let hard = run("tiny-2n", &format!("{base}-hard-bind"), 0.05, 2, OFF)
            .unwrap()
            .elapsed_s;
        let inv = run("tiny-2n", &format!("{base}-inverse-bind"), 0.05, 2, OFF)
            .unwrap()
            .elapsed_s;
        assert!(hard < plain, "{base}: hard {hard} !< plain {plain}");
        assert!(hard < inv, "{base}: hard {hard} !< inverse {inv}");
        assert!(
            inv >= plain * 0.98,
            "{base}: inverse {inv} much faster than plain {plain}"
        );
    }
}

#[test]
fn hard_bind_threads_access_only_local_memory_and_inverse_only_remote() {
    let hard = run("tiny-2n", "numa02-hard-bind", 0.05, 1, OFF).unwrap();
    let inv = run("tiny-2n", "numa02-inverse-bind", 0.05, 1, OFF).unwrap();
    let workers = |r: &numalab_record::RunRecord| {
        r.tasks
            .iter()
            .filter(|t| !t.name.ends_with("/main"))
            .map(|t| {
                t.bytes_by_node[t.last_node] as f64 / t.bytes_by_node.iter().sum::<u64>() as f64
            })
            .collect::<Vec<_>>()
    };
    for s in workers(&hard) {
        assert!(s > 0.9, "hard-bind worker local share {s}");
    }
    for s in workers(&inv) {
        assert!(s < 0.1, "inverse-bind worker local share {s}");
    }
}

#[test]
fn first_touch_by_main_thread_puts_all_numa02_memory_on_one_node() {
    let r = run("tiny-2n", "numa02", 0.05, 1, OFF).unwrap();
    let pages = &r.processes[0].pages_by_node;
    assert!(pages.iter().filter(|&&p| p > 0).count() == 1, "{pages:?}");
    assert_eq!(r.vm("numa_miss"), 0);
    assert!(r.vm("numa_local") > 0);
}

#[test]
fn numa01_binds_first_touch_to_the_seed_parity_node() {
    for seed in [4u64, 5] {
        let r = run("tiny-2n", "numa01", 0.02, seed, OFF).unwrap();
        for p in &r.processes {
            let on: Vec<usize> = (0..2).filter(|&n| p.pages_by_node[n] > 0).collect();
            assert_eq!(
                on,
                vec![(seed % 2) as usize],
                "seed {seed}: {:?}",
                p.pages_by_node
            );
        }
    }
}

#[test]
fn load_balancer_spreads_threads_over_all_cpus() {
    // numa02 has one worker per CPU: none may share a CPU for long, so the
    // total wait time stays a small share of run time.
    let r = run("tiny-2n", "numa02", 0.05, 1, OFF).unwrap();
    let workers: Vec<_> = r
        .tasks
        .iter()
        .filter(|t| !t.name.ends_with("/main"))
        .collect();
    let mut cpus: Vec<usize> = workers.iter().map(|t| t.last_cpu).collect();
    cpus.sort();
    cpus.dedup();
    assert_eq!(cpus.len(), 4, "workers ended on CPUs {cpus:?}");
    let wait: f64 = workers.iter().map(|t| t.wait_s).sum();
    let run: f64 = workers.iter().map(|t| t.user_s + t.sys_s).sum();
    assert!(wait < 0.1 * run, "wait {wait} vs run {run}");
}

#[test]
fn oversubscribed_cpus_share_time_fairly() {
    let w = r#"
name = "oversub"
[[process]]
name = "p"
[[process.thread]]
name = "t"
count = 4
affinity = "cpu:0"
phases = [ { compute = "100ms" } ]
"#;
    let r = run_toml("tiny-2n", w, OFF).unwrap();
    // Four 100 ms tasks on one CPU take 400 ms, each gets 100 ms of CPU.
    assert!((r.elapsed_s - 0.4).abs() < 0.02, "elapsed {}", r.elapsed_s);
    for t in &r.tasks {
        assert_eq!(t.last_cpu, 0);
        assert!(
            (t.user_s + t.sys_s - 0.1).abs() < 0.01,
            "{} ran {}",
            t.name,
            t.user_s
        );
        assert!(t.wait_s > 0.15, "{} waited only {}", t.name, t.wait_s);
    }
}

#[test]
fn cpuset_and_mems_of_the_cgroup_are_honoured() {
    let w = r#"
name = "cpuset"
[[cgroup]]
path = "/box"
cpuset_cpus = "2-3"
cpuset_mems = "1"
[[process]]
name = "p"
cgroup = "/box"
[[process.region]]
name = "buf"
size = "16MiB"
[[process.thread]]
name = "t"
count = 2
phases = [ { stream = "buf", passes = 3 } ]
"#;
    let r = run_toml("tiny-2n", w, OFF).unwrap();
    for t in &r.tasks {
        assert!(t.last_cpu >= 2, "{} on cpu {}", t.name, t.last_cpu);
        assert_eq!(t.cgroup, "/box");
    }
    assert_eq!(r.processes[0].pages_by_node[0], 0);
    assert!(r.processes[0].pages_by_node[1] > 0);
    let cg = &r.cgroups["/box"];
    assert!(cg.user_s > 0.0 && cg.sys_s > 0.0);
    // The root includes its children.
    assert!(r.cgroups["/"].user_s >= cg.user_s);
}

#[test]
fn full_node_falls_back_to_the_nearest_other_node() {
    // tiny-2n has 1 GiB per node: 1.5 GiB first-touched from node 0 spills.
    let w = r#"
name = "spill"
[[process]]
name = "p"
[[process.region]]
name = "buf"
size = "1536MiB"
[[process.thread]]
name = "t"
affinity = "cpu:0"
phases = [ { stream = "buf", passes = 1 } ]
"#;
    let r = run_toml("tiny-2n", w, OFF).unwrap();
    let p = &r.processes[0].pages_by_node;
    assert!(p[0] > 0 && p[1] > 0, "{p:?}");
    assert!(r.vm("numa_miss") > 0 && r.vm("numa_miss") == r.vm("numa_foreign"));
}

#[test]
fn bind_to_a_full_node_is_out_of_memory() {
    let w = r#"
name = "oom"
[[process]]
name = "p"
[[process.region]]
name = "buf"
size = "1536MiB"
policy = { mode = "bind", nodes = "0" }
[[process.thread]]
name = "t"
phases = [ { stream = "buf", passes = 1 } ]
"#;
    let e = run_toml("tiny-2n", w, OFF).unwrap_err().to_string();
    assert!(e.contains("out of memory"), "{e}");
}

#[test]
fn interleave_spreads_pages_evenly() {
    let w = r#"
name = "il"
[[process]]
name = "p"
[[process.region]]
name = "buf"
size = "64MiB"
policy = { mode = "interleave", nodes = "all" }
[[process.thread]]
name = "t"
affinity = "cpu:0"
phases = [ { stream = "buf", passes = 1 } ]
"#;
    let r = run_toml("tiny-2n", w, OFF).unwrap();
    let p = &r.processes[0].pages_by_node;
    assert_eq!(p[0], p[1]);
    assert_eq!(r.vm("numa_interleave"), p[0] + p[1]);
}

#[test]
fn numa_balancing_flag_on_interleave_is_einval_in_mainline() {
    let w = r#"
name = "il"
[[process]]
name = "p"
[[process.region]]
name = "buf"
size = "4MiB"
policy = { mode = "interleave", nodes = "all", numa_balancing = true }
[[process.thread]]
name = "t"
phases = [ { stream = "buf", passes = 1 } ]
"#;
    let e = run_toml("tiny-2n", w, OFF).unwrap_err().to_string();
    assert!(
        e.contains("EINVAL") && e.contains("MPOL_F_NUMA_BALANCING"),
        "{e}"
    );
}

#[test]
fn remote_streams_are_slower_and_a_saturated_controller_slows_everyone() {
    let one = |cpu: &str, node: &str, n: u32| {
        let w = format!(
            r#"
name = "s"
[[process]]
name = "p"
[[process.region]]
name = "buf"
size = "64MiB"
policy = {{ mode = "bind", nodes = "{node}" }}
[[process.thread]]
name = "t"
count = {n}
affinity = "{cpu}"
phases = [ {{ stream = "buf", passes = 20, slice = ["i", "n"] }} ]
"#
        );
        run_toml("tiny-2n", &w, OFF).unwrap().elapsed_s
    };
    let local = one("cpu:0", "0", 1);
    let remote = one("cpu:2", "0", 1);
    assert!(remote > local * 1.3, "remote {remote} vs local {local}");
}

#[test]
fn thp_regions_fault_once_per_huge_page() {
    let w = r#"
name = "thp"
[[process]]
name = "p"
[[process.region]]
name = "buf"
size = "64MiB"
thp = true
[[process.thread]]
name = "t"
phases = [ { stream = "buf", passes = 1 } ]
"#;
    let r = run_toml("tiny-2n", w, OFF).unwrap();
    assert_eq!(r.vm("pgfault"), 32);
    // One allocation a huge page (zone_statistics counts allocations).
    assert_eq!(r.vm("numa_local") + r.vm("numa_other"), 32);
}

#[test]
fn sleeping_threads_free_their_cpu_and_wake_up() {
    let w = r#"
name = "sleepy"
score = "throughput"
[[process]]
name = "p"
[[process.thread]]
name = "t"
count = 2
affinity = "cpu:0"
phases = [ { repeat = 100, request = true, body = [ { compute = "1ms" }, { sleep = "1ms" } ] } ]
"#;
    let r = run_toml("tiny-2n", w, OFF).unwrap();
    // Two tasks alternating on one CPU: ~100 x 1 ms of work each, sleeps
    // overlapping the other's work, so ~200 ms in all.
    assert!(
        r.elapsed_s > 0.19 && r.elapsed_s < 0.26,
        "elapsed {}",
        r.elapsed_s
    );
    let s = r.score.as_ref().unwrap();
    assert!((s.value - 200.0 / r.elapsed_s).abs() < 1.0, "{s:?}");
}
