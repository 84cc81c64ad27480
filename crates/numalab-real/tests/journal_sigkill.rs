//! A run killed with SIGKILL leaves its knobs changed; the journal puts
//! them back at the next start (issue 18, item 5).
//!
//! The knob step of a real run (journal opened, knobs applied through a
//! journaled [`KnobGuard`], the cgroup journaled and created) runs in a
//! child process against a fake /proc/sys, debugfs and /sys tree, so no
//! root is needed. The child is this test binary again, run with
//! `NUMALAB_TEST_JOURNAL_CHILD` set and filtered to [`journal_child`]
//! (which does nothing in a normal test run). The parent waits for the
//! child's "ready" line, checks that the knobs changed and that the live
//! run's journal is not restored under it, kills it with SIGKILL, then
//! opens the journal as the next `real run` does and checks every file has
//! its old value, the cgroup directory is gone and the journal removed.

use numalab_real::journal::{self, Journal, JOURNAL_FILE};
use numalab_real::knobs::{KnobGuard, KnobRoots};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const CHILD_ENV: &str = "NUMALAB_TEST_JOURNAL_CHILD";
const READY: &str = "NUMALAB-JOURNAL-CHILD-READY";

fn roots(d: &Path) -> KnobRoots {
    KnobRoots {
        proc_sys: d.join("proc/sys"),
        debugfs: d.join("debug"),
        sys: d.join("sys"),
    }
}

/// The knob files of the fake tree: (key, file, value before, value set,
/// value restored).
fn knobs(
    d: &Path,
) -> Vec<(
    &'static str,
    PathBuf,
    &'static str,
    &'static str,
    &'static str,
)> {
    vec![
        (
            "kernel.numa_balancing",
            d.join("proc/sys/kernel/numa_balancing"),
            "1\n",
            "0",
            "1",
        ),
        (
            "numa_balancing.scan_delay_ms",
            d.join("debug/sched/numa_balancing/scan_delay_ms"),
            "1000\n",
            "50",
            "1000",
        ),
        (
            "transparent_hugepage/enabled",
            d.join("sys/kernel/mm/transparent_hugepage/enabled"),
            "always [madvise] never\n",
            "never",
            "madvise",
        ),
    ]
}

/// The child: changes the knobs as a real run's step 2 and 3 do, says
/// so, and waits to be killed. A no-op unless run as the child.
#[test]
fn journal_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let d = PathBuf::from(dir);
    let (mut j, recovered) = Journal::open(&d.join("state"), &roots(&d)).unwrap();
    assert!(recovered.is_none());
    let changes: Vec<(String, PathBuf, String)> = knobs(&d)
        .into_iter()
        .map(|(k, p, _, v, _)| (k.to_string(), p, v.to_string()))
        .collect();
    let guard = KnobGuard::apply_journaled(&changes, Some(&mut j)).unwrap();
    let cg = d.join(format!("cgroup/numalab-{}", std::process::id()));
    j.set_cgroup(&cg).unwrap();
    fs::create_dir_all(cg.join("db/shard1")).unwrap();
    fs::create_dir_all(cg.join("numalab.root")).unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{READY}").unwrap();
    out.flush().unwrap();
    // Killed here; the guard would restore on a normal exit.
    loop {
        std::thread::park();
        let _ = &guard;
    }
}

/// Kills the child if an assertion fails before the test kills it.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_run_killed_with_sigkill_is_restored_at_the_next_start() {
    let d = tempfile::tempdir().unwrap();
    for (_, p, before, _, _) in knobs(d.path()) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, before).unwrap();
    }
    let mut child = KillOnDrop(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "journal_child", "--nocapture"])
            .env(CHILD_ENV, d.path())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let child = &mut child.0;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Blocks until the child has changed everything (or ended early).
    // The harness prints "test journal_child ... " before the line.
    let ready = lines.any(|l| l.is_ok_and(|l| l.trim_end().ends_with(READY)));
    if !ready {
        let st = child.wait().unwrap();
        panic!("the child ended before it was ready: {st}");
    }
    for (k, p, _, set, _) in knobs(d.path()) {
        assert_eq!(fs::read_to_string(&p).unwrap(), set, "{k} not changed");
    }
    let state = d.path().join("state");
    let cg = d.path().join(format!("cgroup/numalab-{}", child.id()));
    assert!(cg.is_dir() && state.join(JOURNAL_FILE).is_file());
    println!(
        "journal of the running child:\n{}",
        fs::read_to_string(state.join(JOURNAL_FILE)).unwrap()
    );

    // Its owner is alive: neither a next run nor `real restore` touches it.
    let r = roots(d.path());
    let e = Journal::open(&state, &r).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string()
            .contains(&format!("(pid {}) is running", child.id())),
        "{e}"
    );
    assert!(journal::restore(&state, &r).is_err());
    assert_eq!(fs::read_to_string(&knobs(d.path())[0].1).unwrap(), "0");

    // SIGKILL: nothing in the child runs any more.
    child.kill().unwrap();
    let st = child.wait().unwrap();
    println!("child: {st}");
    for (_, p, _, set, _) in knobs(d.path()) {
        assert_eq!(fs::read_to_string(&p).unwrap(), set, "left changed");
    }

    // The next start restores first.
    let (j, recovered) = Journal::open(&state, &r).unwrap();
    let recovered = recovered.expect("the journal was found");
    println!("next start: numalab real: {}", recovered.describe());
    assert_eq!(recovered.pid, child.id());
    assert_eq!(recovered.actions.len(), 4, "{:?}", recovered.actions);
    for (k, p, _, _, old) in knobs(d.path()) {
        assert_eq!(fs::read_to_string(&p).unwrap(), old, "{k} not restored");
    }
    assert!(!cg.exists(), "the cgroup directory is removed");
    assert!(!state.join(JOURNAL_FILE).exists(), "the journal is removed");
    drop(j);
    assert!(journal::restore(&state, &r).unwrap().is_none());
}
