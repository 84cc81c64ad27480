//! Hostile `numalab run` command lines, and the check of how the binary
//! ended.
//!
//! [`run_args`] makes one command line from a seed: the flags of `run` in a
//! random subset and order, with values that are valid, out of range or
//! junk, and `--set` keys from the knob registry (every knob and cgroup
//! file, with values from their declared types and ranges) plus garbage.
//! Every command it makes stays small when valid: a small preset machine,
//! a `--scale` of at most 0.01, at most two iterations. [`check_exit`] says
//! whether an exit is one the CLI promises: 0, or 2 with exactly one error
//! line.
//!
//! Left out: the other subcommands, and flags `run` does not have (clap
//! refuses them before numalab's code runs).

use numalab_knobs::cgroup::CGROUP_FILES;
use numalab_knobs::knob::ALL;
use numalab_knobs::Type;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// A value for a knob of type `ty`: in range, at its edges, just beyond
/// them, or junk.
fn knob_value(ty: Type, hostile: bool, rng: &mut Pcg64Mcg) -> String {
    let junk = [
        "",
        "-1",
        "abc",
        "1.5",
        "0x10",
        " 1",
        "18446744073709551616",
        "1e3",
    ];
    if !hostile {
        return match ty {
            Type::Uint { min, max } => rng.gen_range(min..=max).to_string(),
            Type::Bool => rng.gen_range(0..2).to_string(),
            Type::Choice { words } => words.choose(rng).copied().unwrap_or("").to_string(),
            // The registry of names is the model's; its default is valid.
            Type::Name { default } => default.to_string(),
        };
    }
    if rng.gen_ratio(1, 4) {
        return junk.choose(rng).copied().unwrap_or("").to_string();
    }
    match ty {
        Type::Uint { min, max } => match rng.gen_range(0..6) {
            0 => min.to_string(),
            1 => max.to_string(),
            2 => max.saturating_add(1).to_string(),
            3 => min.saturating_sub(1).to_string(),
            _ => rng
                .gen_range(min..=max.min(min.saturating_add(100_000)))
                .to_string(),
        },
        Type::Bool => ["0", "1", "true", "false", "2"]
            .choose(rng)
            .copied()
            .unwrap_or("0")
            .to_string(),
        Type::Choice { words } => {
            if rng.gen_ratio(1, 5) {
                "nonsense".to_string()
            } else {
                words.choose(rng).copied().unwrap_or("").to_string()
            }
        }
        Type::Name { default } => [default, "nonsense", "bad name"]
            .choose(rng)
            .copied()
            .unwrap_or(default)
            .to_string(),
    }
}

/// One `--set` argument: a registry knob by name or alias, a cgroup file,
/// or garbage.
pub fn random_set(rng: &mut Pcg64Mcg) -> String {
    set(true, rng)
}

/// One `--set` argument; when not `hostile`, a registry knob with a value
/// of its declared type and range.
fn set(hostile: bool, rng: &mut Pcg64Mcg) -> String {
    match if hostile { rng.gen_range(0..10) } else { 9 } {
        0 => {
            let f = CGROUP_FILES.choose(rng).map_or("cpuset.cpus", |f| f.name);
            let cg = ["/", "/a", "/fuzz", "", "/a/b/../c"]
                .choose(rng)
                .copied()
                .unwrap_or("/");
            let v = ["0", "0-1", "0-999", "", "x", "1,0", "3-1"]
                .choose(rng)
                .copied()
                .unwrap_or("0");
            format!("{cg}:{f}={v}")
        }
        1 => [
            "",
            "=",
            "x",
            "=1",
            "kernel.numa_balancing",
            "a=b=c",
            "x:y=z",
            "::=:",
        ]
        .choose(rng)
        .copied()
        .unwrap_or("")
        .to_string(),
        _ => {
            let Some(d) = ALL.choose(rng) else {
                return "x=1".to_string();
            };
            let name = if !d.aliases.is_empty() && rng.gen_ratio(1, 3) {
                d.aliases.choose(rng).copied().unwrap_or(d.name)
            } else {
                d.name
            };
            format!("{name}={}", knob_value(d.ty, hostile, rng))
        }
    }
}

/// Small machines that keep a valid command fast.
const MACHINES: &[&str] = &["tiny-2n", "tiny-2n", "4s-48"];
/// Workloads that keep a valid command fast at a small scale.
const WORKLOADS: &[&str] = &[
    "numa01",
    "numa01-threadlocal",
    "numa02",
    "numa02-smt",
    "numa01-hard-bind",
    "numa02-inverse-bind",
];

/// A good value, or one time in six when `hostile` a bad one.
fn pick(rng: &mut Pcg64Mcg, hostile: bool, good: &[&str], bad: &[&str]) -> String {
    let from = if hostile && rng.gen_ratio(1, 6) {
        bad
    } else {
        good
    };
    from.choose(rng).copied().unwrap_or("").to_string()
}

/// One `numalab run` command line (without the program name) from `seed`.
/// `dir` is a scratch directory for `--json` and `--trace` files.
pub fn run_args(seed: u64, dir: &str) -> Vec<String> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x0063_6c69);
    // A third of the command lines are well-formed: every value valid,
    // so runs happen (and then write JSON and traces) often enough.
    let hostile = !rng.gen_ratio(1, 3);
    let mut flags: Vec<Vec<String>> = Vec::new();
    if !(hostile && rng.gen_ratio(1, 20)) {
        let m = pick(
            &mut rng,
            hostile,
            MACHINES,
            &[
                "",
                "nope",
                "/nonexistent.toml",
                "-",
                "tiny-2n.toml",
                "spr-4n ",
            ],
        );
        flags.push(vec!["--machine".into(), m]);
    }
    let nw = if hostile && rng.gen_ratio(1, 20) {
        0
    } else {
        rng.gen_range(1..=2)
    };
    for _ in 0..nw {
        let w = pick(
            &mut rng,
            hostile,
            WORKLOADS,
            &["", "nope", "/dev/null", "/", "numa01 "],
        );
        flags.push(vec!["--workload".into(), w]);
    }
    for _ in 0..rng.gen_range(0..=3) {
        flags.push(vec!["--set".into(), set(hostile, &mut rng)]);
    }
    if rng.gen_ratio(1, 2) {
        let s = pick(
            &mut rng,
            hostile,
            &["0", "1", "42", "18446744073709551615"],
            &["-1", "x", "", "18446744073709551616", "1.5"],
        );
        flags.push(vec!["--seed".into(), s]);
    }
    if rng.gen_ratio(1, 3) {
        let s = pick(
            &mut rng,
            hostile,
            &["1", "2", "0"],
            &["-1", "x", "", "4294967296"],
        );
        flags.push(vec!["--iterations".into(), s]);
    }
    // Always a scale, so that a valid command stays small; mostly valid.
    let scale = pick(
        &mut rng,
        hostile,
        &["0.001", "0.005", "0.01", "1e-3"],
        &[
            "0", "-0.01", "2", "nan", "inf", "-inf", "x", "", "1e-300", "5e-324",
        ],
    );
    flags.push(vec!["--scale".into(), scale]);
    if rng.gen_ratio(1, 3) {
        let j = pick(
            &mut rng,
            hostile,
            &["-", "run.json"],
            &["", "/nonexistent-dir/run.json", "."],
        );
        let j = if j == "run.json" {
            format!("{dir}/run-{seed}.json")
        } else {
            j
        };
        flags.push(vec!["--json".into(), j]);
    }
    if rng.gen_ratio(1, 5) {
        let l = pick(&mut rng, hostile, &["base", "a b"], &["", "\u{1d11e}\u{0}"]);
        flags.push(vec!["--label".into(), l.replace('\u{0}', "")]);
    }
    if rng.gen_ratio(1, 6) {
        let t = pick(
            &mut rng,
            hostile,
            &["trace"],
            &["", "/nonexistent-dir/t.txt", "/"],
        );
        let t = if t == "trace" {
            format!("{dir}/trace-{seed}.txt")
        } else {
            t
        };
        flags.push(vec!["--trace".into(), t]);
    }
    if hostile && rng.gen_ratio(1, 25) {
        flags.push(vec!["--bogus-flag".into()]);
    }
    flags.shuffle(&mut rng);
    let mut args = vec!["run".to_string()];
    args.extend(flags.into_iter().flatten());
    args
}

/// Checks how `numalab` ended: exit 0, or exit 2 with exactly one line
/// on stderr, `numalab: error: ...` (clap's refusals of the command line
/// included). Anything else (a panic's 101, a signal, another code, no or
/// several lines) is an `Err` saying what happened.
pub fn check_exit(code: Option<i32>, stderr: &str) -> Result<(), String> {
    let lines = stderr.lines().count();
    let ours = stderr
        .lines()
        .filter(|l| l.starts_with("numalab: error:"))
        .count();
    match code {
        Some(0) if ours == 0 => Ok(()),
        Some(2) if ours == 1 && lines == 1 => Ok(()),
        Some(c) => Err(format!(
            "exit code {c} with {lines} stderr lines, {ours} of them `numalab: error:`"
        )),
        None => Err("killed by a signal".to_string()),
    }
}
