//! `numalab bench --instructions`: the speed guard that does not depend on
//! a clock. CI runs it on every change (issue "speed after fidelity",
//! item 3).
//!
//! Workflow:
//! 1. [`GUARD`] names a fixed small set of runs, one per kind of cost the
//!    suite measures: scanning and hinting faults (NUMA01 with balancing),
//!    an event-dense wakeup storm (OLTP with the legacy `SD_SERIALIZE`
//!    lock), a long scan-heavy run (pmbench, synchronous scanning) and a
//!    compute-bound one (SPECjbb-like). Scales are chosen so that the set
//!    costs about 8 G instructions (about a minute under valgrind) and
//!    that every run with balancing on does scan.
//! 2. Each run is a `numalab bench --child` process under valgrind's
//!    cachegrind without cache simulation, which counts the instructions
//!    the process executes. The count depends only on the binary and its
//!    inputs, not on the machine's load: two counts of the same run differ
//!    by a few thousand instructions (the environment and std's hash
//!    seeds), far below the guard's threshold.
//! 3. The counts are compared with the baseline committed in
//!    `crates/numalab/bench/instructions.toml`: a run more than
//!    [`MAX_GROWTH_PERCENT`] above its baseline fails the guard (exit 1).
//!    A run that got much cheaper is reported, so the baseline can be
//!    lowered and keep its teeth.
//! 4. `--update` rewrites the baseline from this binary's counts. The
//!    baseline records which compiler and profile built the binary, and
//!    counts from another build are refused rather than compared: a
//!    compiler update moves every count. Update it only in a commit that
//!    says why the cost changed.
//!
//! Left out: cache misses and branch mispredictions (an instruction count
//! cannot see OLTP's cost, which is cache misses on per-task state; the
//! wall-clock suite, `numalab bench`, remains the measure of speed), and
//! instructions spent in the kernel on the process's behalf.

use crate::failure::Failure;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;

/// The guard fails when a run's instruction count grows by more than this
/// many percent over its baseline (issue "speed after fidelity", item 3).
pub const MAX_GROWTH_PERCENT: u64 = 5;

/// A run that fell by more than this many percent is reported as cheaper
/// than its baseline: lower the baseline so the guard keeps its teeth.
pub const REPORT_FALL_PERCENT: f64 = 5.0;

/// The baseline, relative to the workspace root.
pub const BASELINE: &str = "crates/numalab/bench/instructions.toml";

/// What built this binary: compiler and profile (from build.rs). Counts of
/// different builds are not comparable.
pub const BUILD: &str = env!("NUMALAB_BUILD");

/// One run of the guard.
#[derive(Clone, Copy, Debug)]
pub struct GuardEntry {
    /// Row name (the key in the baseline).
    pub name: &'static str,
    /// Machine preset.
    pub machine: &'static str,
    /// Workload preset.
    pub workload: &'static str,
    /// `--set` values.
    pub sets: &'static [&'static str],
    /// `--scale`.
    pub scale: f64,
}

/// The fixed guard set. Changing it means re-recording the baseline.
pub const GUARD: &[GuardEntry] = &[
    // Scanning, hinting faults, page migration: 3.3 modeled s, scans from
    // 1 s on.
    GuardEntry {
        name: "numa01/on",
        machine: "spr-4n",
        workload: "numa01",
        sets: &["kernel.numa_balancing=1"],
        scale: 0.05,
    },
    // Wakeups and newly-idle balancing on 480 CPUs, the event-dense run.
    GuardEntry {
        name: "oltp-serialize/legacy",
        machine: "gnr-2s-snc3",
        workload: "oltp",
        sets: &["numalab.sched_balance_serialize=legacy"],
        scale: 0.02,
    },
    // Synchronous scanning of a large heap for 18 modeled s.
    GuardEntry {
        name: "pmbench/sync",
        machine: "clx-2s-104",
        workload: "pmbench",
        sets: &["kernel.numa_balancing_scan_async=0"],
        scale: 0.005,
    },
    // Compute-bound transactions on 48 CPUs.
    GuardEntry {
        name: "specjbb/series",
        machine: "4s-48",
        workload: "specjbb",
        sets: &[],
        scale: 0.5,
    },
];

/// The committed baseline.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// The build the counts are of ([`BUILD`] when they were recorded).
    pub build: String,
    /// The seed of every run.
    pub seed: u64,
    /// One count per guard entry.
    pub run: Vec<BaselineRun>,
}

/// One run's recorded count.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BaselineRun {
    /// Guard entry name.
    pub name: String,
    /// Instructions the whole process executed.
    pub instructions: u64,
}

/// What one guard run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Counted {
    /// Guard entry name.
    pub name: String,
    /// Instructions the whole process executed.
    pub instructions: u64,
}

/// Options of `bench --instructions`.
pub struct Options {
    /// Baseline file (default [`BASELINE`]).
    pub baseline: String,
    /// Rewrite the baseline instead of comparing.
    pub update: bool,
    /// Runs at once (counts do not depend on it).
    pub jobs: usize,
    /// Seed of every run.
    pub seed: u64,
}

/// Reads the total instruction count from valgrind's summary on stderr
/// (`==123== I   refs:      2,095,025,244`).
pub fn parse_instructions(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|l| {
        let rest = l.split_once("I   refs:")?.1;
        rest.trim().replace(',', "").parse().ok()
    })
}

/// Counts the instructions of one guard run in a valgrind child.
fn count(e: &GuardEntry, seed: u64) -> Result<Counted, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding numalab's own binary: {e}"))?;
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--tool=cachegrind",
        "--cache-sim=no",
        "--branch-sim=no",
        "--cachegrind-out-file=/dev/null",
    ])
    .arg(exe)
    .args(["bench", "--child", "-m", e.machine, "-w", e.workload])
    .args(["--seed", &seed.to_string(), "--scale", &e.scale.to_string()]);
    for s in e.sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            "bench --instructions needs valgrind (Debian: apt-get install valgrind)".to_string()
        } else {
            format!("starting valgrind: {err}")
        }
    })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let last = stderr.lines().last().unwrap_or("no message");
        return Err(format!("guard run {}: {}", e.name, last.trim()));
    }
    let instructions = parse_instructions(&stderr).ok_or_else(|| {
        format!(
            "guard run {}: no `I refs` line in valgrind's output",
            e.name
        )
    })?;
    Ok(Counted {
        name: e.name.to_string(),
        instructions,
    })
}

/// One row of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Guard entry name.
    pub name: String,
    /// Baseline count.
    pub baseline: u64,
    /// This build's count.
    pub now: u64,
    /// Change in percent.
    pub change_percent: f64,
    /// True when the change is above [`MAX_GROWTH_PERCENT`].
    pub slower: bool,
}

/// Compares counts with a baseline. Errors when the baseline is of another
/// build or does not name the same runs.
pub fn judge(base: &Baseline, counted: &[Counted], build: &str) -> Result<Vec<Verdict>, String> {
    if base.build != build {
        return Err(format!(
            "the baseline's counts are of another build ({}), this binary is {build}: \
             instruction counts of different builds are not comparable; \
             re-record with `numalab bench --instructions --update` in a commit that says why",
            base.build
        ));
    }
    let names = |it: &mut dyn Iterator<Item = &str>| it.collect::<Vec<_>>().join(", ");
    let mismatch = || {
        format!(
            "the baseline names runs [{}], the guard runs [{}]: re-record it with --update",
            names(&mut base.run.iter().map(|r| r.name.as_str())),
            names(&mut counted.iter().map(|c| c.name.as_str()))
        )
    };
    if base.run.len() != counted.len() {
        return Err(mismatch());
    }
    base.run
        .iter()
        .zip(counted)
        .map(|(b, c)| {
            if b.name != c.name {
                return Err(mismatch());
            }
            let change_percent =
                (c.instructions as f64 / b.instructions.max(1) as f64 - 1.0) * 100.0;
            Ok(Verdict {
                name: c.name.clone(),
                baseline: b.instructions,
                now: c.instructions,
                change_percent,
                // Exact integer arithmetic: +5.000% passes, one more fails.
                slower: u128::from(c.instructions) * 100
                    > u128::from(b.instructions) * u128::from(100 + MAX_GROWTH_PERCENT),
            })
        })
        .collect()
}

/// The comparison as a table.
pub fn table(verdicts: &[Verdict]) -> String {
    let mut s = format!(
        "{:<24} {:>16} {:>16} {:>9}  {}\n",
        "run", "baseline", "now", "change", "verdict"
    );
    for v in verdicts {
        let verdict = if v.slower {
            format!("SLOWER (over +{MAX_GROWTH_PERCENT}%)")
        } else if v.change_percent < -REPORT_FALL_PERCENT {
            "cheaper: lower the baseline (--update)".to_string()
        } else {
            "ok".to_string()
        };
        s += &format!(
            "{:<24} {:>16} {:>16} {:>+8.2}%  {verdict}\n",
            v.name, v.baseline, v.now, v.change_percent
        );
    }
    s
}

/// The baseline file's text: a header saying what it is, then the TOML.
fn baseline_text(b: &Baseline) -> Result<String, String> {
    let body = toml::to_string(b).map_err(|e| format!("encoding the baseline: {e}"))?;
    Ok(format!(
        "# Instruction counts of `numalab bench --instructions` (bench_instructions.rs),\n\
         # the CI speed guard: a run more than {MAX_GROWTH_PERCENT}% above its count fails.\n\
         # Written by `numalab bench --instructions --update`; change it only in a\n\
         # commit that says why the cost changed.\n{body}"
    ))
}

/// `numalab bench --instructions`.
pub fn guard(o: &Options) -> Result<(), Failure> {
    use rayon::prelude::*;
    let counted: Vec<Counted> = crate::parallel::install(o.jobs, || {
        GUARD
            .par_iter()
            .map(|e| count(e, o.seed))
            .collect::<Result<Vec<_>, String>>()
    })??;
    let path = Path::new(&o.baseline);
    if o.update {
        let b = Baseline {
            build: BUILD.to_string(),
            seed: o.seed,
            run: counted
                .iter()
                .map(|c| BaselineRun {
                    name: c.name.clone(),
                    instructions: c.instructions,
                })
                .collect(),
        };
        crate::out::write_file("--baseline", path, &baseline_text(&b)?)?;
        let mut s = format!("numalab bench --instructions: wrote {}\n", o.baseline);
        for c in &counted {
            s += &format!("{:<24} {:>16}\n", c.name, c.instructions);
        }
        return Ok(crate::out::print(&s)?);
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--baseline {}: {}", o.baseline, crate::out::io_text(&e)))?;
    let base: Baseline =
        toml::from_str(&text).map_err(|e| format!("--baseline {}: {e}", o.baseline))?;
    if base.seed != o.seed {
        return Err(format!(
            "--seed {} but the baseline was recorded with seed {}",
            o.seed, base.seed
        )
        .into());
    }
    let verdicts = judge(&base, &counted, BUILD)?;
    crate::out::print(&format!(
        "numalab bench --instructions: {} run(s) against {} ({BUILD})\n{}",
        verdicts.len(),
        o.baseline,
        table(&verdicts)
    ))?;
    let slower: Vec<&str> = verdicts
        .iter()
        .filter(|v| v.slower)
        .map(|v| v.name.as_str())
        .collect();
    if slower.is_empty() {
        Ok(())
    } else {
        Err(Failure {
            message: format!(
                "speed guard: {} executed more than {MAX_GROWTH_PERCENT}% more instructions than the baseline",
                slower.join(", ")
            ),
            code: 1,
            detail: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(counts: &[(&str, u64)]) -> Baseline {
        Baseline {
            build: "b".into(),
            seed: 1,
            run: counts
                .iter()
                .map(|&(n, i)| BaselineRun {
                    name: n.into(),
                    instructions: i,
                })
                .collect(),
        }
    }

    fn counted(counts: &[(&str, u64)]) -> Vec<Counted> {
        counts
            .iter()
            .map(|&(n, i)| Counted {
                name: n.into(),
                instructions: i,
            })
            .collect()
    }

    #[test]
    fn valgrind_summary_is_parsed() {
        let err = "==15896== \n==15896== I   refs:      2,095,025,244\n";
        assert_eq!(parse_instructions(err), Some(2_095_025_244));
        assert_eq!(parse_instructions("==1== Collected : 5\n"), None);
    }

    #[test]
    fn growth_over_the_threshold_fails_and_under_it_passes() {
        let b = base(&[("a", 1_000_000), ("b", 1_000_000)]);
        let v = judge(&b, &counted(&[("a", 1_050_000), ("b", 1_050_001)]), "b").unwrap();
        assert!(!v[0].slower, "exactly +5% is allowed");
        assert!(v[1].slower, "just over +5% fails");
        let v = judge(&b, &counted(&[("a", 500_000), ("b", 1_000_000)]), "b").unwrap();
        assert!(v.iter().all(|v| !v.slower));
        assert!(table(&v).contains("lower the baseline"));
    }

    #[test]
    fn another_build_or_other_runs_are_refused() {
        let b = base(&[("a", 1)]);
        assert!(judge(&b, &counted(&[("a", 1)]), "other")
            .unwrap_err()
            .contains("not comparable"));
        assert!(judge(&b, &counted(&[("c", 1)]), "b")
            .unwrap_err()
            .contains("re-record"));
        assert!(judge(&b, &counted(&[("a", 1), ("c", 1)]), "b").is_err());
    }

    #[test]
    fn baseline_round_trips_through_its_file_text() {
        let b = base(&[("numa01/on", 2_095_025_244)]);
        let text = baseline_text(&b).unwrap();
        assert!(text.starts_with("# Instruction counts"));
        assert_eq!(toml::from_str::<Baseline>(&text).unwrap(), b);
    }

    #[test]
    fn guard_entries_are_valid_and_uniquely_named() {
        for e in GUARD {
            crate::runner::load_machine(e.machine)
                .unwrap_or_else(|err| panic!("{}: {err}", e.name));
            crate::runner::knobs(e.sets).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            assert!(e.scale > 0.0 && e.scale <= 1.0, "{}", e.name);
        }
        let mut names: Vec<&str> = GUARD.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), GUARD.len());
    }

    #[test]
    fn the_committed_baseline_names_the_guard_runs() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/instructions.toml");
        let text = std::fs::read_to_string(path).expect("the committed baseline");
        let b: Baseline = toml::from_str(&text).expect("a valid baseline");
        let names: Vec<&str> = b.run.iter().map(|r| r.name.as_str()).collect();
        let guard: Vec<&str> = GUARD.iter().map(|e| e.name).collect();
        assert_eq!(names, guard);
    }
}
