//! `numalab bench`: the speed and memory measuring stick (tests never time
//! things).
//!
//! Workflow:
//! 1. The suite ([`SUITE`]) names fixed runs: the autonumabench four on
//!    `spr-4n` with balancing off and on, the OLTP serialization run, the
//!    async-scanning hour (synchronous scanning, the slower side) and the
//!    SPECjbb-like run. `--only` picks some; `-m/-w` runs one of your own.
//! 2. Every run is a child process (`numalab bench --child ...`, this same
//!    binary) so its peak RSS (VmHWM) is its own, not the largest run's so
//!    far. The child times only the model run (not loading), and prints one
//!    JSON line: wall seconds, modeled seconds, peak RSS and a digest of
//!    the Run record.
//! 3. `--repeat N` runs each entry N times: the table shows the fastest
//!    wall time and whether every repeat gave the same digest (the same
//!    model output), which is the determinism check.
//! 4. The table: modeled time, wall time, CPU time, the ratio of modeled
//!    to wall time (how many times faster than the machine it models),
//!    peak RSS, the model's unit costs, digest. CPU time is there for a
//!    busy machine: the model is single-threaded, so on an idle core wall
//!    and CPU time agree. The unit costs say where a run's time goes:
//!    `ns/tick` is CPU time per modeled CPU-tick (every CPU's scheduler
//!    tick, its share of the solve and running its task to the next tick
//!    are paid per CPU per tick; 50x on a machine of N CPUs at HZ=250
//!    needs at most 4e6 / (50 N) ns of it, 250 ns on spr-4n's 320),
//!    `ns/step` CPU time per engine step (events and run-loop turns: what
//!    bounds an event-dense run such as OLTP's, whose 4.8 M wakeups per
//!    modeled second no per-step cost can bring to 50x).
//!
//! Entries run one at a time unless `-j` says otherwise: the speed target
//! is per core. Scaling with machine and memory size is bench_scaling.rs.

use crate::runner;
use serde::{Deserialize, Serialize};
use std::process::Command;
use std::time::Instant;

/// One run of the suite.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Row name.
    pub name: &'static str,
    /// Machine preset.
    pub machine: &'static str,
    /// Workload preset.
    pub workload: &'static str,
    /// `--set` values.
    pub sets: &'static [&'static str],
}

const fn entry(
    name: &'static str,
    machine: &'static str,
    workload: &'static str,
    sets: &'static [&'static str],
) -> Entry {
    Entry {
        name,
        machine,
        workload,
        sets,
    }
}

const OFF: &[&str] = &["kernel.numa_balancing=0"];
const ON: &[&str] = &["kernel.numa_balancing=1"];

/// The fixed suite (issue "speed and scale", item 1), at full scale.
pub const SUITE: &[Entry] = &[
    entry("numa01/off", "spr-4n", "numa01", OFF),
    entry("numa01/on", "spr-4n", "numa01", ON),
    entry(
        "numa01-threadlocal/off",
        "spr-4n",
        "numa01-threadlocal",
        OFF,
    ),
    entry("numa01-threadlocal/on", "spr-4n", "numa01-threadlocal", ON),
    entry("numa02/off", "spr-4n", "numa02", OFF),
    entry("numa02/on", "spr-4n", "numa02", ON),
    entry("numa02-smt/off", "spr-4n", "numa02-smt", OFF),
    entry("numa02-smt/on", "spr-4n", "numa02-smt", ON),
    // numa-balance-serialize's slower configuration.
    entry(
        "oltp-serialize/legacy",
        "gnr-2s-snc3",
        "oltp",
        &["numalab.sched_balance_serialize=legacy"],
    ),
    // async-numa-scan's hour, synchronous scanning.
    entry(
        "pmbench-hour/sync",
        "clx-2s-104",
        "pmbench",
        &["kernel.numa_balancing_scan_async=0"],
    ),
    // sched-numa-integration's single JVM, the 2013 series on.
    entry("specjbb/series", "4s-48", "specjbb", &[]),
];

/// One run to measure (a suite entry, a run of the user's, or a point of
/// bench_scaling.rs).
#[derive(Clone, Debug)]
pub struct Job {
    /// Row name.
    pub name: String,
    /// Machine preset or spec file.
    pub machine: String,
    /// Workload preset or file (`NAME:param=value` allowed).
    pub workload: String,
    /// `--set` values.
    pub sets: Vec<String>,
}

impl From<&Entry> for Job {
    fn from(e: &Entry) -> Job {
        Job {
            name: e.name.to_string(),
            machine: e.machine.to_string(),
            workload: e.workload.to_string(),
            sets: e.sets.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// What a child run reports.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measure {
    /// Wall seconds of the model run.
    pub wall_s: f64,
    /// CPU seconds (user + system) of the child while it ran the model:
    /// the figure to trust when other work shares the machine.
    pub cpu_s: f64,
    /// Modeled (virtual) seconds.
    pub modeled_s: f64,
    /// Peak resident set size of the child, bytes.
    pub peak_rss_bytes: u64,
    /// FNV-1a 64 of the Run record's JSON, hex.
    pub digest: String,
    /// Engine steps the run took (events and turns of the tasks' run
    /// loops, engine/budget.rs).
    pub steps: u64,
    /// CPU-ticks modeled: CPUs x modeled seconds x CONFIG_HZ.
    pub cpu_ticks: f64,
}

impl Measure {
    /// CPU nanoseconds of the model per modeled CPU-tick: what a tick of
    /// every CPU costs (the scheduler tick, the solve and running each
    /// task to the next tick are per CPU per tick).
    pub fn ns_per_cpu_tick(&self) -> f64 {
        self.cpu_s * 1e9 / self.cpu_ticks.max(1.0)
    }

    /// CPU nanoseconds of the model per engine step: what an event costs
    /// in an event-dense run (wakeups, sleeps, balances).
    pub fn ns_per_step(&self) -> f64 {
        self.cpu_s * 1e9 / self.steps.max(1) as f64
    }
}

/// A finished row.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Entry name.
    pub name: String,
    /// Machine.
    pub machine: String,
    /// Workload.
    pub workload: String,
    /// Knobs.
    pub sets: Vec<String>,
    /// `--scale`.
    pub scale: f64,
    /// The fastest of the repeats.
    pub best: Measure,
    /// Wall seconds of every repeat.
    pub walls_s: Vec<f64>,
    /// True when every repeat gave the same digest.
    pub deterministic: bool,
}

/// Peak resident set size of this process in bytes (VmHWM).
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// CPU seconds (user + system) this process has used.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return f64::NAN;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// FNV-1a 64 of `bytes`, as 16 hex digits.
fn digest(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The child side: one model run, one JSON line on stdout.
pub fn child(
    machine: &str,
    workload: &str,
    sets: &[String],
    seed: u64,
    scale: f64,
) -> Result<(), String> {
    let m = runner::load_machine(machine)?;
    let knobs = runner::knobs(sets)?;
    let (t0, c0) = (Instant::now(), cpu_seconds());
    let run = runner::run_model_in(&m, workload, None, &knobs, seed, scale, None, false)?;
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu_s = cpu_seconds() - c0;
    let rec = run.rec;
    let json = serde_json::to_string(&rec).map_err(|e| format!("encoding the record: {e}"))?;
    let hz = knobs.get(numalab_sim::kernel::sysctl::knob::CONFIG_HZ) as f64;
    let measure = Measure {
        wall_s,
        cpu_s,
        modeled_s: rec.elapsed_s,
        peak_rss_bytes: peak_rss_bytes().unwrap_or(0),
        digest: digest(json.as_bytes()),
        steps: run.stats.steps,
        cpu_ticks: m.nr_cpus() as f64 * rec.elapsed_s * hz,
    };
    let line = serde_json::to_string(&measure).map_err(|e| e.to_string())?;
    crate::out::print(&format!("{line}\n"))
}

/// Runs one measurement in a child process of this binary.
pub fn measure(
    machine: &str,
    workload: &str,
    sets: &[String],
    seed: u64,
    scale: f64,
) -> Result<Measure, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding numalab's own binary: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(["bench", "--child", "-m", machine, "-w", workload])
        .args(["--seed", &seed.to_string(), "--scale", &scale.to_string()]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("starting the bench child: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("no message");
        return Err(format!(
            "bench run {machine} {workload} {}: {}",
            sets.join(" "),
            last.trim_start_matches("numalab: error: ")
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).map_err(|e| format!("reading the bench child's line: {e}"))
}

/// Options of a suite run.
pub struct Options {
    /// Repeats of each entry (>= 1).
    pub repeat: u32,
    /// Runs at once.
    pub jobs: usize,
    /// Seed.
    pub seed: u64,
    /// `--scale`.
    pub scale: f64,
    /// Write the rows as JSON here.
    pub json: Option<String>,
}

/// Runs `entries` and returns the rows in entry order.
pub fn run_rows(entries: &[Job], o: &Options) -> Result<Vec<Row>, String> {
    use rayon::prelude::*;
    if o.repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    let jobs: Vec<(usize, u32)> = (0..entries.len())
        .flat_map(|i| (0..o.repeat).map(move |r| (i, r)))
        .collect();
    let results: Vec<Result<Measure, String>> = crate::parallel::install(o.jobs, || {
        jobs.par_iter()
            .map(|&(i, _)| {
                let e = &entries[i];
                measure(&e.machine, &e.workload, &e.sets, o.seed, o.scale)
            })
            .collect()
    })?;
    let mut rows = Vec::new();
    let mut it = results.into_iter();
    for e in entries {
        let ms: Vec<Measure> = (0..o.repeat)
            .map(|_| it.next().unwrap_or_else(|| Err("missing result".into())))
            .collect::<Result<_, _>>()?;
        let deterministic = ms.iter().all(|m| m.digest == ms[0].digest);
        let walls_s = ms.iter().map(|m| m.wall_s).collect();
        let best = ms
            .iter()
            .min_by(|a, b| a.wall_s.total_cmp(&b.wall_s))
            .cloned()
            .ok_or("no repeat")?;
        rows.push(Row {
            name: e.name.clone(),
            machine: e.machine.clone(),
            workload: e.workload.clone(),
            sets: e.sets.clone(),
            scale: o.scale,
            best,
            walls_s,
            deterministic,
        });
    }
    Ok(rows)
}

/// Formats rows as the bench table.
pub fn table(rows: &[Row]) -> String {
    let mut s = format!(
        "{:<24} {:<12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9}  {:<16} {}\n",
        "run",
        "machine",
        "modeled s",
        "wall s",
        "cpu s",
        "speed",
        "peak MiB",
        "ns/tick",
        "ns/step",
        "digest",
        "same"
    );
    for r in rows {
        s += &format!(
            "{:<24} {:<12} {:>10.2} {:>9.2} {:>9.2} {:>8.1}x {:>9.1} {:>8.0} {:>9.0}  {:<16} {}\n",
            r.name,
            r.machine,
            r.best.modeled_s,
            r.best.wall_s,
            r.best.cpu_s,
            r.best.modeled_s / r.best.wall_s.max(1e-9),
            r.best.peak_rss_bytes as f64 / (1u64 << 20) as f64,
            r.best.ns_per_cpu_tick(),
            r.best.ns_per_step(),
            r.best.digest,
            match (r.walls_s.len(), r.deterministic) {
                (1, _) => "-",
                (_, true) => "yes",
                (_, false) => "NO",
            }
        );
    }
    let slowest = rows
        .iter()
        .map(|r| r.best.modeled_s / r.best.wall_s.max(1e-9))
        .fold(f64::INFINITY, f64::min);
    let peak = rows
        .iter()
        .map(|r| r.best.peak_rss_bytes)
        .max()
        .unwrap_or(0);
    if !rows.is_empty() {
        s += &format!(
            "slowest {slowest:.1}x faster than modeled time; largest peak RSS {:.1} MiB\n",
            peak as f64 / (1u64 << 20) as f64
        );
    }
    s
}

/// `numalab bench` with the suite (or the `--only` entries of it).
pub fn suite(only: &[String], o: &Options) -> Result<(), String> {
    for name in only {
        if !SUITE.iter().any(|e| e.name.starts_with(name.as_str())) {
            let names: Vec<&str> = SUITE.iter().map(|e| e.name).collect();
            return Err(format!(
                "--only {name}: no suite entry starts with it (entries: {})",
                names.join(", ")
            ));
        }
    }
    let entries: Vec<Job> = SUITE
        .iter()
        .filter(|e| only.is_empty() || only.iter().any(|n| e.name.starts_with(n.as_str())))
        .map(Job::from)
        .collect();
    report(&entries, o)
}

/// `numalab bench -m M -w W`: one run of the user's, as a one-row table.
pub fn single(machine: &str, workload: &str, sets: &[String], o: &Options) -> Result<(), String> {
    let job = Job {
        name: workload.to_string(),
        machine: machine.to_string(),
        workload: workload.to_string(),
        sets: sets.to_vec(),
    };
    report(&[job], o)
}

fn report(entries: &[Job], o: &Options) -> Result<(), String> {
    let rows = run_rows(entries, o)?;
    crate::out::print(&format!(
        "numalab bench: {} run(s), --scale {}, seed {}, {} repeat(s), -j {}\n{}",
        rows.len(),
        o.scale,
        o.seed,
        o.repeat,
        o.jobs,
        table(&rows)
    ))?;
    if let Some(path) = &o.json {
        let text = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
        crate::out::write_file("--json", std::path::Path::new(path), &(text + "\n"))?;
    }
    if rows.iter().any(|r| !r.deterministic) {
        return Err("a run gave different output on a repeat (column `same`)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_entries_name_existing_presets_and_valid_knobs() {
        for e in SUITE {
            runner::load_machine(e.machine).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            assert!(
                numalab_workload::presets::list()
                    .iter()
                    .any(|(n, _)| *n == e.workload),
                "{}: no workload preset {}",
                e.name,
                e.workload
            );
            runner::knobs(e.sets).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        }
        let mut names: Vec<&str> = SUITE.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SUITE.len(), "suite names must be unique");
    }

    #[test]
    fn digest_tells_records_apart() {
        assert_eq!(digest(b"abc"), digest(b"abc"));
        assert_ne!(digest(b"abc"), digest(b"abd"));
        assert_eq!(digest(b"").len(), 16);
    }
}
