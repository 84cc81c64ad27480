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
