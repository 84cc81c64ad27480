//! Fuzzing the command line through the built binary: hostile `numalab
//! run` command lines (flags in random subsets and orders, `--set` keys
//! from the knob registry with in-range, edge, out-of-range and junk
//! values, garbage), and mutated preset specs given as files. Every
//! command must end with exit 0, or exit 2 and exactly one error line;
//! never a panic (exit 101), a signal or another code.
//!
//! Deterministic: fixed proptest RNG seeds, no failure persistence. Every
//! command stays small when valid (see `numalab_fuzz::cli`); spec files
//! are given to the CLI only when the in-process pipeline found them to
//! end in an error before the run (the CLI has no modeled-time cap, so a
//! runnable mutated spec could take minutes).

use numalab_fuzz::cli::{check_exit, run_args};
use numalab_fuzz::pipeline::Stage;
use numalab_fuzz::{run_case, Case, Limits, Outcome};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::cell::Cell;
use std::path::PathBuf;
use std::process::Command;

fn runner(cases: u32, seed: u8) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 0,
        ..Config::default()
    };
    TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("numalab-fuzz-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    dir
}

/// Runs numalab with `args`, checks how it ended, and returns its exit
/// code and stderr.
fn check(args: &[String], what: &str) -> Result<(Option<i32>, String), TestCaseError> {
    let o = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .output()
        .map_err(|e| TestCaseError::fail(format!("cannot run numalab: {e}")))?;
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    check_exit(o.status.code(), &err).map_err(|why| {
        TestCaseError::fail(format!("{why}\n{what}\nargs: {args:?}\nstderr:\n{err}"))
    })?;
    Ok((o.status.code(), err))
}

#[test]
fn hostile_run_command_lines_exit_0_or_2_with_one_error() {
    let dir = scratch("args");
    let d = dir.to_string_lossy().to_string();
    let codes = Cell::new([0u32; 2]);
    let r = runner(96, 0x21).run(&proptest::num::u64::ANY, |seed| {
        let args = run_args(seed, &d);
        let (code, _) = check(&args, &format!("cli fuzz seed {seed}"))?;
        let mut c = codes.get();
        c[usize::from(code != Some(0))] += 1;
        codes.set(c);
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = r {
        panic!("{e}");
    }
    // Both kinds must occur, or the generator has drifted.
    let codes = codes.get();
    println!("exit 0: {}, exit 2: {}", codes[0], codes[1]);
    assert!(codes[0] >= 4 && codes[1] >= 4, "ok/error counts {codes:?}");
}

#[test]
fn mutated_spec_files_get_the_pipelines_error_as_one_line() {
    let dir = scratch("specs");
    let tried = Cell::new(0);
    let r = runner(400, 0x22).run(&proptest::num::u64::ANY, |seed| {
        let case = Case::new(seed);
        let Outcome::ClearError { stage, message } = run_case(&case, &Limits::SUITE) else {
            return Ok(());
        };
        if stage > Stage::Setup || tried.get() >= 24 {
            return Ok(());
        }
        tried.set(tried.get() + 1);
        let m = dir.join(format!("m-{seed}.toml"));
        let w = dir.join(format!("w-{seed}.toml"));
        std::fs::write(&m, &case.machine_text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        std::fs::write(&w, &case.workload_text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut args: Vec<String> = vec![
            "run".into(),
            "--machine".into(),
            m.to_string_lossy().into(),
            "--workload".into(),
            w.to_string_lossy().into(),
            "--seed".into(),
            case.run_seed.to_string(),
            "--scale".into(),
            case.scale.to_string(),
        ];
        for s in &case.sets {
            args.push("--set".into());
            args.push(s.clone());
        }
        let (_, err) = check(&args, &case.reproducer())?;
        // Same error as in-process: the CLI adds nothing and loses nothing
        // (file names differ, so compare the part after them).
        let tail = message.rsplit(".toml: ").next().unwrap_or(&message);
        if !err.contains(tail) {
            return Err(TestCaseError::fail(format!(
                "in-process error {message:?} not in the CLI's stderr:\n{err}\n{}",
                case.reproducer()
            )));
        }
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = r {
        panic!("{e}");
    }
    assert!(tried.get() >= 12, "only {} spec files tried", tried.get());
}

/// Regression (CLI fuzz): `--seed 18446744073709551615 --iterations 2`
/// overflowed `seed + 1` (a panic where overflow is checked); the seeds
/// wrap, as `u64` seeds do, to 18446744073709551615 and 0.
#[test]
fn the_last_seed_with_iterations_wraps() {
    let args: Vec<String> = [
        "run",
        "-m",
        "tiny-2n",
        "-w",
        "numa02",
        "--scale",
        "0.001",
        "--seed",
        "18446744073709551615",
        "--iterations",
        "2",
        "--json",
        "-",
    ]
    .map(String::from)
    .to_vec();
    let o = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(&args)
        .output()
        .expect("run numalab");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(&out).expect("a RunSet");
    let seeds: Vec<u64> = v["runs"]
        .as_array()
        .map(|r| r.iter().filter_map(|r| r["seed"].as_u64()).collect())
        .unwrap_or_default();
    assert_eq!(seeds, [u64::MAX, 0], "{out}");
}
