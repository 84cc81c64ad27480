//! Experiments behind declared known misses that a run at test scale can
//! still show: each test asserts the mechanism a declaration
//! (crates/numalab/reproductions/*.toml) names, with the configurations
//! of the reproduction itself, so a model change that removes the
//! mechanism fails here and sends its author to the declaration and to
//! docs/reproductions.md. Left out: the experiments that need full-scale
//! runs (documented sweeps and ablations in docs/reproductions.md).

use crate::reproductions;
use crate::runner;
use numalab_record::RunRecord;

/// One run of `workload` on `reproduction`'s machine under its
/// configuration `label`, seed 1, at `scale`.
fn run_as(reproduction: &str, label: &str, workload: &str, scale: f64) -> RunRecord {
    let r = reproductions::all()
        .into_iter()
        .find(|r| r.name == reproduction)
        .unwrap_or_else(|| panic!("no reproduction {reproduction}"));
    let c = r
        .configs
        .iter()
        .find(|c| c.label == label)
        .unwrap_or_else(|| panic!("{reproduction} has no configuration {label}"));
    let knobs = runner::knobs(c.sets).unwrap();
    let m = runner::load_machine(r.machine).unwrap();
    runner::run_model(&m, workload, &knobs, 1, scale, None, false)
        .unwrap()
        .0
}

fn score(r: &RunRecord) -> f64 {
    r.score.as_ref().expect("a throughput score").value
}

fn counter(r: &RunRecord, name: &str) -> u64 {
    r.vmstat.get(name).copied().unwrap_or(0)
}

/// `sched-numa-integration`'s `static-placement`: the 2013 series can
/// change the SPECjbb-like score only by placing tasks or memory
/// differently from 3.9, and in the model it never moves a warehouse
/// thread, so even with the business logic cut to 1 us a transaction
/// (memory about half of it) the two kernels score alike.
#[test]
fn specjbb_kernels_score_alike_when_no_task_moves_even_memory_bound() {
    const R: &str = "sched-numa-integration";
    let bound = "specjbb:warehouses=24,seconds=35,compute_ns=1000";
    let base = run_as(R, "baseline-3.9", bound, 0.25);
    let series = run_as(R, "series", bound, 0.25);
    // Memory matters in this form: with 20 us of logic the same JVM runs
    // several times fewer transactions.
    let logic = run_as(
        R,
        "baseline-3.9",
        "specjbb:warehouses=24,seconds=35,compute_ns=20000",
        0.25,
    );
    assert!(
        score(&base) > 5.0 * score(&logic),
        "{} vs {}",
        score(&base),
        score(&logic)
    );
    let moves = counter(&series, "numa_task_migrated") + counter(&series, "numa_task_swapped");
    assert_eq!(moves, 0, "the series moved tasks: revisit static-placement");
    let change = score(&series) / score(&base) - 1.0;
    assert!(
        change.abs() < 0.01,
        "score change {:.3} %: revisit static-placement",
        100.0 * change
    );
}
