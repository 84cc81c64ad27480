//! SD_SERIALIZE orderings end to end: the contention on
//! `sched_balance_running` in the Run record's `lab` figures, and the
//! invariant checker's counts when pinned tasks force `redo`.

use crate::common::{run, run_toml};
use numalab_record::lab::{self, LabFigure};
use numalab_record::RunRecord;

fn lab(r: &RunRecord, k: LabFigure) -> f64 {
    r.lab
        .get(k)
        .unwrap_or_else(|| panic!("lab figure {} missing", k.key))
}

fn set(v: &str) -> String {
    format!("numalab.sched_balance_serialize={v}")
}

#[test]
fn legacy_contends_on_the_flag_of_a_multi_node_machine_and_fixed_does_not() {
    let (l, f) = (set("legacy"), set("fixed"));
    let legacy = run("4s-48", "oltp", 0.05, 1, &[l.as_str()]).unwrap();
    let fixed = run("4s-48", "oltp", 0.05, 1, &[f.as_str()]).unwrap();
    let share = |r: &RunRecord| lab(r, lab::SCHED_BALANCE_RUNNING_CONTENTION_SHARE);
    assert!(share(&legacy) > 1e-4, "legacy {}", share(&legacy));
    assert!(
        share(&fixed) < share(&legacy) / 100.0,
        "fixed {} legacy {}",
        share(&fixed),
        share(&legacy)
    );
    // Pre-patch, nearly every walk's cmpxchg fails: someone else holds it.
    assert!(lab(&legacy, lab::SERIALIZE_ATTEMPTS) > 50.0 * lab(&fixed, lab::SERIALIZE_ATTEMPTS));
    assert!(lab(&legacy, lab::SERIALIZE_CONTENDED) > 0.5 * lab(&legacy, lab::SERIALIZE_ATTEMPTS));
    for r in [&legacy, &fixed] {
        assert_eq!(lab(r, lab::SERIALIZE_BAD_RELEASES), 0.0);
        assert_eq!(lab(r, lab::SERIALIZE_OVERLAPS), 0.0);
    }
}

/// Who pays the pre-6.19 cmpxchg: the parts add up to the whole, CPUs
/// running a task and idle CPUs in their periodic balance both pay, and
/// newly-idle balance never does (6.12 takes the flag only in
/// `sched_balance_domains`). A task woken on an idle CPU still spinning
/// waits, but never longer than that CPU's kernel time.
#[test]
fn legacy_contention_is_paid_by_busy_and_idle_cpus_and_never_by_newidle() {
    let l = set("legacy");
    let r = run("4s-48", "oltp", 0.05, 1, &[l.as_str()]).unwrap();
    let (busy, idle, newidle) = (
        lab(&r, lab::SCHED_BALANCE_RUNNING_BUSY_NS),
        lab(&r, lab::SCHED_BALANCE_RUNNING_IDLE_NS),
        lab(&r, lab::SCHED_BALANCE_RUNNING_NEWIDLE_NS),
    );
    let all = lab(&r, lab::SCHED_BALANCE_RUNNING_CONTENTION_NS);
    assert!(busy > 0.0 && idle > 0.0, "busy {busy} idle {idle}");
    assert_eq!(newidle, 0.0);
    assert!(
        (busy + idle + newidle - all).abs() <= 2.0,
        "{busy}+{idle} vs {all}"
    );
    let wait = lab(&r, lab::IDLE_KERNEL_WAIT_S);
    assert!(wait > 0.0, "no task waited for a spinning idle CPU");
    assert!(wait <= lab(&r, lab::IDLE_KERNEL_S) + 1e-6, "wait {wait}");
}

/// `numalab.profile_cycles` changes only what the share is of: the run is
/// the same, and the share of unhalted cycles is the contention over task
/// time plus idle-CPU kernel time, larger than the share of elapsed time
/// when CPUs idle.
#[test]
fn the_contention_share_is_of_unhalted_cycles_unless_asked_for_elapsed_time() {
    let l = set("legacy");
    let unhalted = run("4s-48", "oltp", 0.05, 1, &[l.as_str()]).unwrap();
    let elapsed = run(
        "4s-48",
        "oltp",
        0.05,
        1,
        &[l.as_str(), "numalab.profile_cycles=elapsed"],
    )
    .unwrap();
    assert_eq!(unhalted.score, elapsed.score);
    let contention = lab(&unhalted, lab::SCHED_BALANCE_RUNNING_CONTENTION_NS);
    assert_eq!(
        contention,
        lab(&elapsed, lab::SCHED_BALANCE_RUNNING_CONTENTION_NS)
    );
    let cpu_ns = unhalted.elapsed_s * 1e9 * 48.0;
    let share = |r: &RunRecord| lab(r, lab::SCHED_BALANCE_RUNNING_CONTENTION_SHARE);
    assert!((share(&elapsed) - contention / cpu_ns).abs() < 1e-6);
    let profiled =
        lab(&unhalted, lab::CPU_BUSY_SHARE) * cpu_ns + lab(&unhalted, lab::IDLE_KERNEL_S) * 1e9;
    assert!(
        (share(&unhalted) - contention / profiled).abs() < 1e-4,
        "{} vs {}",
        share(&unhalted),
        contention / profiled
    );
    assert!(share(&unhalted) > share(&elapsed));
}

/// Thirteen compute tasks pinned to CPU 0 of 4s-48: node 0 is overloaded
/// with tasks no other CPU may run, so the balancers of nodes 1-3 redo at
/// the NUMA level every time they balance it.
const PINNED: &str = r#"
name = "pinned-redo"
duration = "10s"
[[process]]
name = "p"
[[process.thread]]
name = "pinned"
count = 13
affinity = "cpu:0"
phases = [ { compute = "100s" } ]
"#;

#[test]
fn v3_releases_flags_it_does_not_hold_when_pinned_tasks_force_redo_and_fixed_never_does() {
    let s = set("v3");
    let r = run_toml("4s-48", PINNED, &[s.as_str()]).unwrap();
    assert!(
        lab(&r, lab::LB_REDO) > 100.0,
        "redo {}",
        lab(&r, lab::LB_REDO)
    );
    assert!(
        lab(&r, lab::SERIALIZE_BAD_RELEASES) > 0.0,
        "v3 showed no bad release in {} attempts",
        lab(&r, lab::SERIALIZE_ATTEMPTS)
    );
    for v in ["legacy", "v4", "fixed", "fixed+newidle"] {
        let s = set(v);
        let r = run_toml("4s-48", PINNED, &[s.as_str()]).unwrap();
        assert!(
            lab(&r, lab::LB_REDO) > 100.0,
            "{v}: redo {}",
            lab(&r, lab::LB_REDO)
        );
        assert_eq!(lab(&r, lab::SERIALIZE_BAD_RELEASES), 0.0, "{v}");
        assert_eq!(lab(&r, lab::SERIALIZE_OVERLAPS), 0.0, "{v}");
    }
}
