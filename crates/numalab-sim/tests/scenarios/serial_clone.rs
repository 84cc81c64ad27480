//! engine/clone.rs: a process's main thread creates the other threads that
//! start at once one after another, and each sleeps on the creator's
//! `mmap_lock` until the last is created (`numalab.serial_clone`).

use crate::common::run_toml;
use numalab_record::RunRecord;

/// One process of four threads, each computing 20 ms, on 4 CPUs.
const FOUR: &str = r#"
name = "four"
description = "four threads compute 20 ms each"
test = "FOUR"
score = "elapsed"

[[process]]
name = "p"

[[process.region]]
name = "r"
size = "1MiB"

[[process.thread]]
name = "t0"
phases = [ { compute = "20ms" } ]

[[process.thread]]
name = "t1"
phases = [ { compute = "20ms" } ]

[[process.thread]]
name = "t2"
phases = [ { compute = "20ms" } ]

[[process.thread]]
name = "t3"
phases = [ { compute = "20ms" } ]
"#;

fn task<'a>(r: &'a RunRecord, name: &str) -> &'a numalab_record::TaskFigures {
    r.tasks.iter().find(|t| t.name == name).expect("task")
}

#[test]
fn the_main_thread_creates_the_others_in_order_and_they_wait_for_it() {
    let r = run_toml(
        "tiny-2n",
        FOUR,
        &["kernel.numa_balancing=0", "numalab.serial_clone=1"],
    )
    .expect("run");
    let clone_s = numalab_sim::physics::costs::CLONE_THREAD_NS / 1e9;
    let start: Vec<f64> = (0..4)
        .map(|i| task(&r, &format!("p/t{i}")).start_s)
        .collect();
    // t0 is the main thread; t1..t3 come one clone apart, in order.
    assert_eq!(start[0], 0.0);
    for i in 1..4 {
        // The record keeps microseconds; the creator's context switches
        // add a little.
        let gap = start[i] - start[i - 1];
        assert!(
            gap >= clone_s - 1e-6 && gap < clone_s * 1.2,
            "t{i} created {gap} s after t{}, expected {clone_s}",
            i - 1
        );
    }
    // The creation is the main thread's system time.
    assert!(task(&r, "p/t0").sys_s >= 3.0 * clone_s * 0.999);
    // t1 and t2 sleep until t3 exists: neither can finish its 20 ms of
    // work before t3's creation plus 20 ms, although t1 was created two
    // clones before t3 (sharing a CPU only delays them more).
    for i in 1..3 {
        let exit = task(&r, &format!("p/t{i}")).exit_s;
        assert!(
            exit >= start[3] + 0.020 - 1e-6,
            "t{i} finished at {exit} s, before t3 (created at {} s) could have let it run 20 ms",
            start[3]
        );
    }
}

#[test]
fn without_serial_clone_every_thread_exists_at_time_zero() {
    let r = run_toml(
        "tiny-2n",
        FOUR,
        &["kernel.numa_balancing=0", "numalab.serial_clone=0"],
    )
    .expect("run");
    for i in 0..4 {
        assert_eq!(task(&r, &format!("p/t{i}")).start_s, 0.0);
    }
    assert!(task(&r, "p/t0").sys_s < numalab_sim::physics::costs::CLONE_THREAD_NS / 1e9);
}
