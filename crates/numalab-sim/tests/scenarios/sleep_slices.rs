//! engine/exec.rs: `numalab.sleep_slice_ms`, a `sleep` phase slept the way
//! `numalab real run`'s worker sleeps (slices of at most N ms until the
//! phase's end), so each slice is a wakeup the scheduler places.

use crate::common::run_toml;
use numalab_record::RunRecord;

/// One thread sleeps `ms` and then computes 1 ms, alone on tiny-2n.
fn sleeper(ms: u64) -> String {
    format!(
        r#"
name = "nap"
score = "elapsed"
[[process]]
name = "p"
[[process.thread]]
name = "s"
phases = [ {{ sleep = "{ms}ms" }}, {{ compute = "1ms" }} ]
"#
    )
}

fn sleeper_task(r: &RunRecord) -> &numalab_record::TaskFigures {
    r.tasks.iter().find(|t| t.name == "p/s").expect("task p/s")
}

fn run(ms: u64, slice: &str) -> RunRecord {
    let set = format!("numalab.sleep_slice_ms={slice}");
    run_toml(
        "tiny-2n",
        &sleeper(ms),
        &["kernel.numa_balancing=0", "numalab.background=0", &set],
    )
    .unwrap()
}

#[test]
fn a_sliced_sleep_wakes_once_a_slice_and_ends_when_the_whole_sleep_would() {
    let whole = run(100, "0");
    let sliced = run(100, "20");
    let (a, b) = (sleeper_task(&whole), sleeper_task(&sliced));
    // The phase ends at the same moment: the slices count from its start.
    assert!(
        (a.exit_s - b.exit_s).abs() < 1e-4,
        "{} vs {}",
        a.exit_s,
        b.exit_s
    );
    // Four more wakeups (at 20, 40, 60 and 80 ms), each charged as one.
    let extra = b.sys_s - a.sys_s;
    let wakeup_s = numalab_sim::physics::costs::WAKEUP_NS * 1e-9;
    assert!(
        (extra - 4.0 * wakeup_s).abs() < 0.05 * wakeup_s,
        "extra system time {extra} s, a wakeup {wakeup_s} s"
    );
}

#[test]
fn a_sleep_no_longer_than_a_slice_is_one_sleep() {
    let whole = run(20, "0");
    let sliced = run(20, "20");
    let (a, b) = (sleeper_task(&whole), sleeper_task(&sliced));
    assert_eq!(a.exit_s, b.exit_s);
    assert_eq!(a.sys_s, b.sys_s);
}
