//! Request fast-forward (engine/fast_forward.rs, `numalab.request_fast_forward`):
//! whole transaction iterations at once must give the results of running
//! them op by op, in far fewer engine steps, and must leave loops with a
//! sleep alone.

use crate::common::*;

const OFF: &[&str] = &["numalab.request_fast_forward=0"];

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1e-12)
}

#[test]
fn specjbb_transactions_fast_forwarded_agree_with_op_by_op() {
    // 2 s of a 48-warehouse JVM: balancing scans and migrates from 1 s on.
    let (on, on_steps) = run_steps("4s-48", "specjbb", 0.25, 1, &[]).unwrap();
    let (off, off_steps) = run_steps("4s-48", "specjbb", 0.25, 1, OFF).unwrap();
    assert!(
        on_steps * 5 < off_steps,
        "steps {on_steps} with fast-forward, {off_steps} without"
    );
    let score = |r: &numalab_record::RunRecord| r.score.as_ref().map(|s| s.value).unwrap();
    assert!(
        rel(score(&on), score(&off)) < 0.005,
        "score {} vs {}",
        score(&on),
        score(&off)
    );
    assert!(rel(on.user_s, off.user_s) < 0.005);
    let local = |r: &numalab_record::RunRecord| local_share(r);
    assert!((local(&on) - local(&off)).abs() < 0.03);
    let migrated = |r: &numalab_record::RunRecord| r.vmstat["numa_pages_migrated"] as f64;
    assert!(
        rel(migrated(&on), migrated(&off)) < 0.2,
        "pages migrated {} vs {}",
        migrated(&on),
        migrated(&off)
    );
}

#[test]
fn request_loops_with_a_sleep_run_op_by_op() {
    // OLTP's requests sleep: fast-forward must not touch them, so the two
    // runs are the same run.
    let (on, on_steps) = run_steps("tiny-2n", "oltp", 0.05, 1, &[]).unwrap();
    let (off, off_steps) = run_steps("tiny-2n", "oltp", 0.05, 1, OFF).unwrap();
    assert_eq!(on_steps, off_steps);
    assert_eq!(on.vmstat, off.vmstat);
    assert_eq!(on.score.map(|s| s.value), off.score.map(|s| s.value));
}
