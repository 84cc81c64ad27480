//! Scenario tests of proposal 3 (`numalab.interleave_numa_balancing`,
//! MPOL_INTERLEAVE | MPOL_F_NUMA_BALANCING moves tasks, not pages): whole
//! workloads on tiny-2n (2 nodes x 2 CPUs), checked through the Run record.

use crate::common::{local_share, run_toml};
use numalab_record::RunRecord;

fn vm(r: &RunRecord, name: &str) -> u64 {
    r.vmstat.get(name).copied().unwrap_or(0)
}

/// The posting's example on tiny-2n: both CPUs of node 0 run t1 tasks whose
/// pages (a flagged interleave's odd pages) are on node 1, both CPUs of
/// node 1 run t2 tasks whose pages are on node 0. `FLAG` is the
/// MPOL_F_NUMA_BALANCING setting.
const SWAP: &str = r#"
name = "swap"
[[process]]
name = "p"
[[process.region]]
name = "odd"
size = "64MiB"
policy = { mode = "interleave", nodes = "1", numa_balancing = FLAG }
[[process.region]]
name = "even"
size = "64MiB"
policy = { mode = "interleave", nodes = "0", numa_balancing = FLAG }
[[process.thread]]
name = "t1"
count = 2
affinity = "node:0"
phases = [{ stream = "odd", slice = ["i", "n"] }, { set_affinity = "all" }, { stream = "odd", slice = ["i", "n"], passes = 1500 }]
[[process.thread]]
name = "t2"
count = 2
affinity = "node:1"
phases = [{ stream = "even", slice = ["i", "n"] }, { set_affinity = "all" }, { stream = "even", slice = ["i", "n"], passes = 1500 }]
"#;

fn swap(flag: bool) -> String {
    SWAP.replace("FLAG", if flag { "true" } else { "false" })
}

#[test]
fn flagged_interleave_is_refused_when_the_switch_is_off() {
    let e = run_toml("tiny-2n", &swap(true), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("EINVAL"), "{e}");
    assert!(e.contains("numalab.interleave_numa_balancing"), "{e}");
    // Plain interleave runs and is never scanned.
    let plain = run_toml("tiny-2n", &swap(false), &[]).unwrap();
    assert_eq!(vm(&plain, "numa_pte_updates"), 0);
    assert_eq!(vm(&plain, "numa_hint_faults"), 0);
}

#[test]
fn the_two_task_example_swaps_tasks_and_moves_no_page() {
    let plain = run_toml("tiny-2n", &swap(false), &[]).unwrap();
    let on = run_toml(
        "tiny-2n",
        &swap(true),
        &["numalab.interleave_numa_balancing=on"],
    )
    .unwrap();
    assert!(vm(&on, "numa_hint_faults") > 0, "{:?}", on.vmstat);
    assert_eq!(vm(&on, "numa_pages_migrated"), 0);
    assert_eq!(vm(&on, "pgmigrate_success"), 0);
    assert!(vm(&on, "numa_task_swapped") >= 2, "{:?}", on.vmstat);
    let root = &on.cgroups["/"].memory_stat;
    assert_eq!(root["numa_task_swapped"], vm(&on, "numa_task_swapped"));
    // Every task ends on the node of its pages.
    for t in on.tasks.iter().filter(|t| t.name.contains("/t")) {
        let want = if t.name.contains("/t1") { 1 } else { 0 };
        assert_eq!(t.last_node, want, "{}", t.name);
    }
    assert!(
        local_share(&on) > local_share(&plain) + 0.5,
        "{} vs {}",
        local_share(&on),
        local_share(&plain)
    );
    assert!(
        on.elapsed_s < plain.elapsed_s,
        "{} vs {}",
        on.elapsed_s,
        plain.elapsed_s
    );
}

/// One thread on node 1 streaming a buffer first written under
/// MPOL_BIND to node 0: ordinary AutoNUMA pulls every page to node 1.
const TO_NODE_1: &str = r#"
name = "to-node-1"
[[process]]
name = "p"
[[process.region]]
name = "buf"
size = "64MiB"
[[process.thread]]
name = "t"
affinity = "node:1"
phases = [{ set_mempolicy = { mode = "bind", nodes = "0" } }, { stream = "buf" }, { set_mempolicy = "default" }, { stream = "buf", passes = 200 }]
"#;

#[test]
fn as_posted_autonuma_never_migrates_a_page_to_node_1() {
    for (word, moves) in [("off", true), ("on", true), ("as-posted", false)] {
        let set = format!("numalab.interleave_numa_balancing={word}");
        let r = run_toml("tiny-2n", TO_NODE_1, &[&set]).unwrap();
        assert!(vm(&r, "numa_hint_faults") > 0, "{word}");
        let on_node_1 = r.nodes[1].mem_used_bytes;
        if moves {
            assert!(
                vm(&r, "numa_pages_migrated") > 10_000,
                "{word}: {:?}",
                r.vmstat
            );
            assert!(on_node_1 >= 60 << 20, "{word}: {on_node_1}");
        } else {
            assert_eq!(vm(&r, "numa_pages_migrated"), 0, "{word}");
            assert!(on_node_1 < 1 << 20, "{word}: {on_node_1}");
        }
    }
}

/// A thread on node 0 streaming flagged interleaved THP memory.
const THP: &str = r#"
name = "thp"
[[process]]
name = "p"
[[process.region]]
name = "buf"
size = "64MiB"
thp = true
policy = { mode = "interleave", nodes = "0-1", numa_balancing = true }
[[process.thread]]
name = "t"
affinity = "node:0"
phases = [{ stream = "buf", passes = 200 }]
"#;

#[test]
fn flagged_thp_migrates_only_as_posted() {
    let on = run_toml("tiny-2n", THP, &["numalab.interleave_numa_balancing=on"]).unwrap();
    assert!(vm(&on, "numa_hint_faults") > 0);
    assert_eq!(vm(&on, "numa_pages_migrated"), 0);
    let posted = run_toml(
        "tiny-2n",
        THP,
        &["numalab.interleave_numa_balancing=as-posted"],
    )
    .unwrap();
    assert!(
        vm(&posted, "thp_migration_success") > 0,
        "{:?}",
        posted.vmstat
    );
    assert!(vm(&posted, "numa_pages_migrated") > 0);
    // do_huge_pmd_numa_page takes NUMA_TASK_MIG (1) for a node: every huge
    // page ends on node 1, though the thread runs on node 0.
    assert_eq!(posted.nodes[0].mem_used_bytes, 0, "{:?}", posted.nodes);
    assert!(posted.elapsed_s > on.elapsed_s);
}
