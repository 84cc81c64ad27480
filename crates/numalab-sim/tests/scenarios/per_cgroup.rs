//! Proposal 4 end to end: `kernel.numa_balancing=4` with
//! `cpu.numa_load_balance` set up front or by a phase during the run, the
//! hierarchy, the per-task control, and the hierarchical memory.stat
//! counters of the Run record.

use crate::common::run_toml;
use numalab_record::RunRecord;

/// A process of two threads in `/a/b` on tiny-2n: 64 MiB first written on
/// node 0, then each thread streams its own half for a few seconds, long
/// past the first scan. `thread` adds keys to the thread group, `first`
/// phases before the streaming.
fn workload(thread: &str, first: &str) -> String {
    format!(
        r#"
[[cgroup]]
path = "/a"
[[cgroup]]
path = "/a/b"
[[process]]
name = "p"
cgroup = "/a/b"
[[process.region]]
name = "buf"
size = "64MiB"
[[process.thread]]
name = "t"
count = 2
{thread}
phases = [
    {{ set_mempolicy = {{ mode = "bind", nodes = "0" }} }},
    {{ stream = "buf" }},
    {{ set_mempolicy = "default" }},
    {first}
    {{ stream = "buf", slice = ["i", "n"], passes = 1500 }},
]
"#
    )
}

fn stat(r: &RunRecord, cg: &str, item: &str) -> u64 {
    r.cgroups[cg].memory_stat[item]
}

fn pte_updates(r: &RunRecord) -> u64 {
    r.vmstat["numa_pte_updates"]
}

#[test]
fn an_enabled_subtree_is_balanced_and_its_counters_sum_up_the_tree() {
    let w = workload("", "");
    let r = run_toml(
        "tiny-2n",
        &w,
        &[
            "kernel.numa_balancing=4",
            "/a:cpu.numa_load_balance=1",
            "/a/b:cpu.numa_load_balance=1",
        ],
    )
    .unwrap();
    assert!(
        r.elapsed_s > 2.0,
        "long past the first scan: {}",
        r.elapsed_s
    );
    assert!(pte_updates(&r) > 0);
    for item in [
        "numa_pages_migrated",
        "numa_pte_updates",
        "numa_hint_faults",
        "numa_task_migrated",
        "numa_task_swapped",
    ] {
        // Only /a/b's tasks are charged; each ancestor includes it.
        assert_eq!(stat(&r, "/a", item), stat(&r, "/a/b", item), "{item}");
        assert_eq!(stat(&r, "/", item), stat(&r, "/a/b", item), "{item}");
        assert_eq!(stat(&r, "/", item), r.vmstat[item], "{item}");
    }
    assert!(stat(&r, "/a/b", "numa_hint_faults") > 0);
}

#[test]
fn parent_disabled_child_enabled_is_not_balanced_unless_the_hierarchy_is_off() {
    let w = workload("", "");
    let sets = ["kernel.numa_balancing=4", "/a/b:cpu.numa_load_balance=1"];
    let r = run_toml("tiny-2n", &w, &sets).unwrap();
    assert_eq!(pte_updates(&r), 0);
    assert_eq!(r.vmstat["numa_hint_faults"], 0);
    let mut as_posted = sets.to_vec();
    as_posted.push("numalab.numa_balancing_cgroup_hierarchy=0");
    let r = run_toml("tiny-2n", &w, &as_posted).unwrap();
    assert!(
        pte_updates(&r) > 0,
        "as posted: only /a/b's own file counts"
    );
}

#[test]
fn a_phase_enabling_the_cgroup_during_the_run_starts_the_scans() {
    let off = run_toml("tiny-2n", &workload("", ""), &["kernel.numa_balancing=4"]).unwrap();
    assert_eq!(pte_updates(&off), 0);
    let w = workload(
        "",
        r#"{ cgroup_write = "/a:cpu.numa_load_balance=1" },
    { cgroup_write = "/a/b:cpu.numa_load_balance=1" },"#,
    );
    let on = run_toml("tiny-2n", &w, &["kernel.numa_balancing=4"]).unwrap();
    assert!(pte_updates(&on) > 0);
    assert!(stat(&on, "/a/b", "numa_hint_faults") > 0);
}

#[test]
fn the_per_task_control_opts_threads_out_of_mode_1() {
    let w = workload(r#"numa_balancing = "disabled""#, "");
    let r = run_toml("tiny-2n", &w, &["kernel.numa_balancing=1"]).unwrap();
    assert_eq!(pte_updates(&r), 0);
    let r = run_toml("tiny-2n", &workload("", ""), &["kernel.numa_balancing=1"]).unwrap();
    assert!(pte_updates(&r) > 0);
}
