//! Golden-file tests of the full report layout.
//!
//! Each test renders a report from hand-made records and compares it byte
//! for byte with a file under `tests/golden/`. After an intended layout
//! change, rerun with `UPDATE_GOLDEN=1` to rewrite the files, then review
//! the diff.

use crate::testutil::{record, set};
use crate::{compare_cgroups, compare_table, run_summary, runs_csv};
use numalab_record::{CgroupFigures, RunRecord, RunSet, Score};
use std::path::PathBuf;

/// Compares `got` with `tests/golden/NAME`, or rewrites the file when
/// `UPDATE_GOLDEN` is set.
fn check(name: &str, got: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("golden dir")).expect("create golden dir");
        std::fs::write(&path, got).expect("write golden file");
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    assert!(
        got == want,
        "{name} differs from {}\n--- got ---\n{got}\n--- want ---\n{want}",
        path.display()
    );
}

/// One autonumabench run with NUMA counters derived from its figures.
fn run(test: &str, seed: u64, elapsed: f64, sys: f64, balancing: bool) -> RunRecord {
    let mut r = record(test, seed, elapsed, elapsed * 40.0 + seed as f64, sys);
    if balancing {
        let k = 1000 + seed * 17;
        r.vmstat
            .insert("numa_pte_updates".into(), 2_500_000 * k / 1000);
        r.vmstat
            .insert("numa_huge_pte_updates".into(), 3_000 * k / 1000);
        r.vmstat
            .insert("numa_hint_faults".into(), 1_700_000 * k / 1000);
        r.vmstat
            .insert("numa_hint_faults_local".into(), 1_200_000 * k / 1000);
        r.vmstat
            .insert("numa_pages_migrated".into(), 1_000_000 * k / 1000);
        r.vmstat.insert("numa_task_migrated".into(), 25 + seed);
        r.vmstat.insert("numa_task_swapped".into(), seed % 3);
        let mut cg = CgroupFigures::default();
        cg.memory_stat
            .insert("numa_pages_migrated".into(), 900_000 * k / 1000);
        cg.memory_stat
            .insert("numa_pte_updates".into(), 2_400_000 * k / 1000);
        cg.memory_stat
            .insert("numa_hint_faults".into(), 1_600_000 * k / 1000);
        cg.memory_stat
            .insert("numa_task_migrated".into(), 20 + seed);
        cg.memory_stat.insert("numa_task_swapped".into(), seed % 2);
        r.cgroups.insert("/mytest".into(), cg);
    }
    r.vmstat.insert("numa_hit".into(), 5_000_000 + seed * 1_000);
    r.vmstat.insert("numa_miss".into(), 0);
    r.vmstat
        .insert("numa_local".into(), 4_999_000 + seed * 1_000);
    r
}

/// Two columns of five iterations of two tests: balancing off, and a
/// variant that wins clearly on NUMA01_THREADLOCAL and is level on NUMA02.
fn two_columns() -> Vec<RunSet> {
    let mut off = Vec::new();
    let mut on = Vec::new();
    for i in 0..5u64 {
        let j = i as f64;
        off.push(run(
            "numa01_threadlocal",
            i,
            213.29 + 0.4 * j - 0.1 * j * j,
            16280.68 + 60.0 * j,
            false,
        ));
        off.push(run("numa02", i, 20.11 + 0.05 * j, 1.5 + 0.01 * j, false));
        on.push(run(
            "numa01_threadlocal",
            i,
            113.18 + 0.5 * j,
            16494.9 + 80.0 * j,
            true,
        ));
        on.push(run("numa02", i, 20.13 + 0.04 * j, 1.7 - 0.02 * j, true));
    }
    vec![set("balancing-off", off), set("cgroup-mode4", on)]
}

#[test]
fn golden_compare_two_columns() {
    let sets = two_columns();
    let t = compare_table(&sets);
    assert_eq!(compare_table(&sets), t, "deterministic");
    check("compare_two_columns.txt", &t);
}

#[test]
fn golden_compare_single_runs_three_columns() {
    // One run per column and no '-' in the labels: a single header line,
    // zero spread and no significance marks.
    let sets = vec![
        set(
            "baseline",
            vec![run("numa01_threadlocal", 1, 90.73, 7156.34, true)],
        ),
        set(
            "interleave",
            vec![run("numa01_threadlocal", 1, 90.88, 7267.28, true)],
        ),
        set(
            "taskonly",
            vec![run("numa01_threadlocal", 1, 89.10, 7001.00, true)],
        ),
    ];
    check("compare_single_runs.txt", &compare_table(&sets));
}

#[test]
fn golden_compare_throughput() {
    let mk = |seed: u64, tput: f64| {
        let mut r = run("oltp", seed, 60.0, 30.0 + seed as f64, true);
        r.score = Some(Score {
            name: "throughput".into(),
            unit: "tx/s".into(),
            value: tput,
            higher_is_better: true,
        });
        r
    };
    let sets = vec![
        set(
            "6.16.0-rc2-vanilla",
            (0..4).map(|i| mk(i, 41_000.0 + 150.0 * i as f64)).collect(),
        ),
        set(
            "6.16.0-rc2-nlb",
            (0..4).map(|i| mk(i, 45_500.0 - 90.0 * i as f64)).collect(),
        ),
    ];
    check("compare_throughput.txt", &compare_table(&sets));
}

#[test]
fn golden_cgroups_summary_csv() {
    let sets = two_columns();
    check(
        "cgroups_two_columns.txt",
        &compare_cgroups(&sets, "/mytest"),
    );
    let mut r = sets[1].runs[0].clone();
    r.machine = serde_json::json!({ "name": "spr-4node" });
    // Figures this build does not declare (an older build's) are listed too.
    r.lab = serde_json::from_value(serde_json::json!({
        "sched_balance_running_share": 0.0375,
        "numa_group_count": 2.0,
    }))
    .unwrap();
    check("summary_one_run.txt", &run_summary(&r));
    check("runs_two_columns.csv", &runs_csv(&sets));
}
