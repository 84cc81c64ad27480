//! `numalab validate`: fixed scenarios run in the model and in a QEMU guest
//! on a real kernel, printed side by side.
//!
//! The scenarios are workload specs in `crates/numalab/validate/*.toml`
//! (embedded in the binary); the guest is `validate/guest-4n.toml`, a
//! machine spec that describes the TCG guest honestly (uniform latency,
//! the guest's measured streaming speed), so the model runs on the machine
//! the kernel ran on. Emulated nodes have no latency difference: the table
//! compares what the kernel *decides* (counters, task moves and swaps,
//! where each thread's memory ends up and how fast), never speed.
//!
//! A thread's memory is the one region its phases access; threads that
//! access several (the initialisers) or none are not measured. Its local
//! share at a sample is the share of that region's bytes on the node of
//! the CPU the thread is on (time-series columns `region:P/R:nodeN_bytes`
//! and `cpu:P/T`, which model and real runs both write). The table gives
//! for each such thread its final share (at the last sample at which
//! every measured thread still ran), the first time it reached
//! [`crate::validate_shares::LOCAL`] (90 %), and the share over time. Flagged: counters that
//! differ by more than 2x (0 against non-zero included) and threads whose
//! memory ends mostly local on one side and mostly remote on the other.
//! docs/real.md names the model mechanism behind each flag seen.
//!
//! Modes: guests booted one at a time (default); `--model-only` (no QEMU,
//! the kernel column is empty); `--guest-json DIR` compares against saved
//! guest records `DIR/NAME.kernel.json`.

use crate::failure::Failure;
use crate::out;
use crate::real::{self, RunArgs, VmArgs};
use numalab_record::counters::TRACE_EVENTS;
use numalab_record::lab;
use numalab_record::RunRecord;
use numalab_topology::Machine;
use numalab_workload::model::Workload;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use crate::validate_coordinator::{coordinator_cost, real_run_sampler, CoordinatorCost};
pub use crate::validate_scenarios::{Scenario, GUESTS, SCENARIOS};
pub use crate::validate_shares::{
    differs_2x, final_share, first_local, last_common_time, local_shares, measured_threads, memcg,
    nodes_over_time, placement, Measured,
};

/// Options of `numalab validate`.
#[derive(Clone, Debug)]
pub struct Options {
    /// Guest machine (preset or file); default [`crate::validate_scenarios::GUEST_MACHINE`].
    pub machine: Option<String>,
    /// Scenario names; empty = all.
    pub scenarios: Vec<String>,
    /// Where to write the Run JSONs.
    pub json_dir: Option<String>,
    /// No guest.
    pub model_only: bool,
    /// Saved guest records.
    pub guest_json: Option<String>,
    /// Saved boots to judge the model against (validate_band.rs).
    pub boots: Option<String>,
    /// Seed.
    pub seed: u64,
    /// With `boots`: how many model seeds (from `seed` up) the gate judges
    /// the median of (validate_band.rs); `None`: [`crate::validate_band::MODEL_SEEDS`].
    pub model_seeds: Option<u32>,
    /// Scale.
    pub scale: f64,
    /// Assert the deterministic facts of the scenarios that have them
    /// (exit code 1 when one fails).
    pub check: bool,
    /// Guest options.
    pub vm: VmArgs,
    /// Knobs for the model's side only (`--set`).
    pub model_set: Vec<String>,
    /// `--kernel-patch`: also run on a kernel with this patch series.
    pub kernel_patch: Vec<String>,
    /// `--patched-set`: the model's knobs beside the patched kernel.
    pub patched_set: Vec<String>,
    /// `--fuzz`.
    pub fuzz: usize,
    /// `--series`: the patch series' scenarios, on its kernel.
    pub series: bool,
    /// `--seeds DIR`: where the series' seeds are (for its build).
    pub seeds: String,
    /// `--model-trace DIR`: write each scenario's model trace there.
    pub model_trace: Option<String>,
    /// `--trace-events`: the events written besides [`TRACE_EVENTS`]
    /// (`None`: every event that is not opt-in).
    pub trace_events: Option<Vec<String>>,
}

/// The guest machine of `--machine`, or the built-in one.
pub fn machine(name: Option<&str>) -> Result<Machine, String> {
    let name = name.unwrap_or("guest-4n");
    match GUESTS.iter().find(|(n, _)| *n == name) {
        Some((n, spec)) => {
            numalab_topology::spec::parse_machine(spec, n).map_err(|e| e.to_string())
        }
        None => crate::runner::load_machine(name),
    }
}

/// The scenarios named (when none is, those written for `guest`, or for
/// the default guest when `guest` is not a built-in one), refusing
/// unknown names. `series`: the patch series' scenarios
/// ([`crate::validate_scenarios::SERIES_SCENARIOS`]) instead of the stock
/// ones; a scenario of the other kind is refused by name.
pub fn pick(names: &[String], guest: &str, series: bool) -> Result<Vec<Scenario>, String> {
    if names.is_empty() {
        let guest = if GUESTS.iter().any(|(n, _)| *n == guest) {
            guest
        } else {
            GUESTS[0].0
        };
        return Ok(crate::validate_scenarios::all()
            .filter(|s| s.series == series && (series || !s.on_request) && s.guest == guest)
            .copied()
            .collect());
    }
    names
        .iter()
        .map(|n| {
            let s = crate::validate_scenarios::all()
                .find(|s| s.name == n)
                .copied()
                .ok_or_else(|| {
                    format!(
                        "--scenario {n}: unknown (known: {})",
                        crate::validate_scenarios::all()
                            .map(|s| s.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
            match (s.series, series) {
                (true, false) => Err(format!(
                    "--scenario {n}: runs on the patch series' kernel: add --series"
                )),
                (false, true) => Err(format!(
                    "--scenario {n}: a stock scenario: drop --series to run it"
                )),
                _ => Ok(s),
            }
        })
        .collect()
}

/// Resolves a scenario on `m`.
pub fn resolve(s: &Scenario, m: &Machine, seed: u64, scale: f64) -> Result<Workload, String> {
    let spec = numalab_workload::spec::parse(s.text, s.name).map_err(|e| e.to_string())?;
    numalab_workload::spec::resolve(&spec, m, seed, scale).map_err(|e| e.to_string())
}

/// The model's knobs for a scenario that `numalab real run` runs in the
/// guest: its worker's main thread creates the threads that start at once
/// one after another (`numalab.serial_clone`); the workload runs in its
/// own cgroup, a task group below the root where the kernel threads and
/// the coordinator run (`numalab.task_group=session`); and the worker is a
/// Rust program, whose thread stacks, sigaltstacks, malloc arenas and
/// libraries' data are VMAs `task_numa_work` walks
/// (`numalab.process_mappings=rust`); and its threads sleep in slices of
/// 20 ms, checking their stop flag between them
/// (`numalab.sleep_slice_ms=20`); and every process maps the runner's
/// shared control page, which every thread reads before each phase
/// (`numalab.real_run_shared_page`). The first three are off in plain model
/// runs until their effect on the reproductions is judged (docs/real.md
/// M3, M5); the last two are properties of the runner, not of a workload.
pub const REAL_RUN_KNOBS: &[&str] = &[
    "numalab.serial_clone=1",
    "numalab.task_group=session",
    "numalab.process_mappings=rust",
    "numalab.sleep_slice_ms=20",
    "numalab.real_run_shared_page=1",
];

/// The model's settings for scenario `s`: its own, then `--set`.
pub fn model_sets(s: &Scenario, extra: &[String]) -> Vec<String> {
    s.model_sets
        .iter()
        .map(|k| k.to_string())
        .chain(extra.iter().cloned())
        .collect()
}

/// Runs a scenario in the model (knobs [`REAL_RUN_KNOBS`], then `sets`
/// from `--set`; trace on), on
/// `m` plus the real run's own coordinator ([`real_run_sampler`]). The
/// trace's `sched_move_numa`/`sched_swap_numa`/`sched_stick_numa` counts
/// go into `lab` under the names a real run uses (`trace.EVENT`,
/// [`numalab_record::lab::TRACE`]).
pub fn run_model(
    w: &Workload,
    m: &Machine,
    seed: u64,
    scale: f64,
    sets: &[String],
) -> Result<RunRecord, String> {
    run_model_traced(w, m, seed, scale, sets, None, None).map(|(rec, _)| rec)
}

/// [`run_model`], also returning its trace: every event that is not
/// opt-in, or with `events` those and [`TRACE_EVENTS`] (which the record's
/// counts need); the coordinator costs what `coordinator` says (the saved
/// boots' measurement), or what [`real_run_sampler`] estimates.
pub fn run_model_traced(
    w: &Workload,
    m: &Machine,
    seed: u64,
    scale: f64,
    sets: &[String],
    events: Option<&[String]>,
    coordinator: Option<CoordinatorCost>,
) -> Result<(RunRecord, Vec<numalab_sim::kernel::TraceEvent>), String> {
    // What numalab real run's worker does, before `--set` (which may
    // turn it off): its main thread creates the threads (engine/clone.rs).
    let sets: Vec<&str> = REAL_RUN_KNOBS
        .iter()
        .copied()
        .chain(sets.iter().map(String::as_str))
        .collect();
    let knobs = numalab_sim::Knobs::from_sets(&sets).map_err(|e| e.to_string())?;
    if !(scale > 0.0 && scale <= 1.0) {
        return Err(format!("--scale {scale}: must be in (0, 1]"));
    }
    let opts = numalab_sim::RunOptions {
        seed,
        scale,
        trace: true,
        check_every: 0,
    };
    let mut m = m.clone();
    m.kernel
        .background
        .extend(real_run_sampler(w, 1.0, coordinator, m.kernel.cost_scale));
    let mut sim = numalab_sim::Sim::new(m, w.clone(), knobs, opts).map_err(|e| e.to_string())?;
    if let Some(ev) = events {
        let mut all: Vec<String> = TRACE_EVENTS.iter().map(|e| e.to_string()).collect();
        all.extend(
            ev.iter()
                .filter(|e| !all.contains(e))
                .cloned()
                .collect::<Vec<_>>(),
        );
        let filter = numalab_sim::kernel::TraceFilter {
            events: Some(all),
            from_ns: 0,
            to_ns: None,
        };
        filter.validate()?;
        sim = sim.with_trace_filter(filter);
    }
    let (mut rec, trace) = sim.run_with_trace(&mut |_| {}).map_err(|e| e.to_string())?;
    for ev in TRACE_EVENTS {
        let n = trace.iter().filter(|e| e.name == ev).count();
        rec.lab.set(lab::TRACE.key(ev), n as f64);
    }
    Ok((rec, trace))
}

fn trace_count(r: &RunRecord, ev: &str) -> Option<f64> {
    r.lab.get(lab::TRACE.key(ev))
}

/// The counters compared: (row label, value in a record).
type Getter = fn(&RunRecord) -> Option<f64>;
const COUNTERS: &[(&str, Getter)] = &[
    (
        "numa_pte_updates",
        |r| Some(r.vm("numa_pte_updates") as f64),
    ),
    ("numa_huge_pte_updates", |r| {
        Some(r.vm("numa_huge_pte_updates") as f64)
    }),
    (
        "numa_hint_faults",
        |r| Some(r.vm("numa_hint_faults") as f64),
    ),
    ("numa_hint_faults_local", |r| {
        Some(r.vm("numa_hint_faults_local") as f64)
    }),
    ("numa_pages_migrated", |r| {
        Some(r.vm("numa_pages_migrated") as f64)
    }),
    ("thp_migration_success", |r| {
        Some(r.vm("thp_migration_success") as f64)
    }),
    // The workload's own counts (memory.stat of the run's cgroup): the
    // vmstat rows are system-wide, and in a guest they include numalab's
    // own sampling process (hundreds of 4 KiB hint faults, which matter
    // beside a THP workload's few hundred).
    ("memcg:numa_pte_updates", |r| memcg(r, "numa_pte_updates")),
    ("memcg:numa_hint_faults", |r| memcg(r, "numa_hint_faults")),
    ("memcg:numa_pages_migrated", |r| {
        memcg(r, "numa_pages_migrated")
    }),
    // Every completed fault of the workload (mm_account_fault): first
    // touches, hinting faults, and the write-protect fault a migration
    // leaves on a written page (numalab.migration_wp_fault).
    ("memcg:pgfault", |r| memcg(r, "pgfault")),
    ("sched_move_numa", |r| trace_count(r, "sched_move_numa")),
    ("sched_swap_numa", |r| trace_count(r, "sched_swap_numa")),
    ("sched_stick_numa", |r| trace_count(r, "sched_stick_numa")),
];

/// What a comparison found: counters off by more than 2x, threads whose
/// memory ended up differently.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Findings {
    /// Counter names.
    pub counters: Vec<String>,
    /// Thread names.
    pub placements: Vec<String>,
}

fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{}", x as i64),
        Some(x) => format!("{x:.2}"),
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.0}%", x * 100.0))
}

fn secs(v: Option<f64>, run: bool) -> String {
    match (v, run) {
        (Some(t), _) => format!("{t:.1}"),
        (None, true) => "never".into(),
        (None, false) => "-".into(),
    }
}

/// Sample times for the per-thread timelines: about eight, on a round step.
pub fn timeline_points(end: f64) -> Vec<f64> {
    let raw = (end / 7.0).max(1.0);
    let step = [1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0]
        .into_iter()
        .find(|&s| s >= raw)
        .unwrap_or(600.0);
    let mut v = Vec::new();
    let mut t = step;
    while t <= end + 1e-9 {
        v.push(t);
        t += step;
    }
    v
}

/// The value of a series at time `t`: the last sample at or before it,
/// if that is at most two seconds older (else the thread was not running
/// then, or the run had ended).
fn at(series: &[(f64, f64)], t: f64) -> Option<f64> {
    series
        .iter()
        .take_while(|(x, _)| *x <= t + 1e-9)
        .last()
        .filter(|(x, _)| t - *x <= 2.0)
        .map(|(_, s)| *s)
}

fn timeline(series: &[(f64, f64)], points: &[f64]) -> String {
    points
        .iter()
        .map(|&t| at(series, t).map_or("-".into(), |s| format!("{:.0}", s * 100.0)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The side-by-side table of one scenario (model and/or kernel record), and
/// what differs.
pub fn table(
    name: &str,
    w: &Workload,
    m: &Machine,
    model: Option<&RunRecord>,
    kernel: Option<&RunRecord>,
) -> (String, Findings) {
    let mut out = String::new();
    let mut f = Findings::default();
    let _ = writeln!(out, "== {name}: {}", w.description);
    if let Some(k) = kernel {
        let _ = writeln!(
            out,
            "   kernel {} ({}), machine {}",
            k.kernel.as_deref().unwrap_or("?"),
            k.settings
                .get("vm.kernel_package")
                .map_or("host", String::as_str),
            m.name
        );
    }
    let _ = writeln!(
        out,
        "{:<28} {:>12} {:>12} {:>7}",
        "", "model", "kernel", "k/m"
    );
    let both = model.is_some() && kernel.is_some();
    for (label, get) in COUNTERS {
        let a = model.and_then(get);
        let b = kernel.and_then(get);
        if a.unwrap_or(0.0) == 0.0 && b.unwrap_or(0.0) == 0.0 && label.starts_with("thp") {
            continue;
        }
        if a.unwrap_or(0.0) == 0.0 && b.unwrap_or(0.0) == 0.0 && label.contains("huge") {
            continue;
        }
        let (ratio, flag) = match (a, b) {
            (Some(a), Some(b)) => {
                let r = if a > 0.0 {
                    format!("{:.2}", b / a)
                } else if b > 0.0 {
                    "inf".into()
                } else {
                    "=".into()
                };
                let d = differs_2x(a, b);
                if d {
                    f.counters.push(label.to_string());
                }
                (r, if d { " <-- >2x" } else { "" })
            }
            _ => ("".into(), ""),
        };
        let _ = writeln!(
            out,
            "{label:<28} {:>12} {:>12} {ratio:>7}{flag}",
            num(a),
            num(b)
        );
    }
    let hint_local = |r: &RunRecord| {
        let h = r.vm("numa_hint_faults");
        (h > 0).then(|| r.vm("numa_hint_faults_local") as f64 / h as f64)
    };
    let _ = writeln!(
        out,
        "{:<28} {:>12} {:>12}",
        "hint faults local",
        pct(model.and_then(hint_local)),
        pct(kernel.and_then(hint_local))
    );
    let _ = writeln!(
        out,
        "{:<28} {:>12} {:>12}",
        "elapsed_s",
        num(model.map(|r| r.elapsed_s)),
        num(kernel.map(|r| r.elapsed_s))
    );
    // Placement, per measured thread.
    let th = measured_threads(w);
    let ms = model.map(|r| local_shares(r, m, &th));
    let ks = kernel.map(|r| local_shares(r, m, &th));
    let end = model
        .map_or(0.0, |r| r.elapsed_s)
        .max(kernel.map_or(0.0, |r| r.elapsed_s));
    let points = timeline_points(end);
    let _ = writeln!(
        out,
        "{:<20} {:>7} {:>6} {:>7} {:>6}   local % at t = {} s",
        "thread's memory",
        "final",
        "local",
        "t>=90%",
        "local",
        points
            .iter()
            .map(|t| format!("{t:.0}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let _ = writeln!(
        out,
        "{:<20} {:>7} {:>6} {:>7} {:>6}   model | kernel",
        "", "model", "kernel", "model", "kernel"
    );
    // "Final" is the last sample at which every measured thread still
    // ran: once threads of an elapsed-scored run start to exit, the
    // balancer reshuffles the rest, which says nothing about convergence.
    let last_all = [ms.as_ref(), ks.as_ref()].map(|v| v.and_then(|v| last_common_time(v)));
    let mut conv = [Some(0.0f64), Some(0.0f64)];
    // Threads are named within their process: with several processes
    // (shared-procs' t0 and t1 in each), the process names them apart.
    let several = th.iter().any(|t| t.process != th[0].process);
    for (i, t) in th.iter().enumerate() {
        let label = if several {
            format!("{}/{}", t.process, t.thread)
        } else {
            t.thread.clone()
        };
        let s = [
            ms.as_ref().map(|v| v[i].as_slice()),
            ks.as_ref().map(|v| v[i].as_slice()),
        ];
        let fin = [0, 1].map(|side| s[side].and_then(|v| final_share(v, last_all[side])));
        let first = s.map(|x| x.and_then(first_local));
        for side in 0..2 {
            if s[side].is_some() {
                conv[side] = match (conv[side], first[side]) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
        }
        let cls = fin.map(placement);
        let differ = both && cls[0] != cls[1];
        if differ {
            f.placements.push(label.clone());
        }
        let _ = writeln!(
            out,
            "  {:<18} {:>7} {:>6} {:>7} {:>6}   {} | {}{}",
            label,
            pct(fin[0]),
            pct(fin[1]),
            secs(first[0], s[0].is_some()),
            secs(first[1], s[1].is_some()),
            s[0].map_or("-".into(), |v| timeline(v, &points)),
            s[1].map_or("-".into(), |v| timeline(v, &points)),
            if differ { " <-- placement differs" } else { "" }
        );
    }
    let _ = writeln!(
        out,
        "{:<28} {:>12} {:>12}",
        "all threads >= 90% local (s)",
        secs(conv[0].filter(|_| model.is_some()), model.is_some()),
        secs(conv[1].filter(|_| kernel.is_some()), kernel.is_some())
    );
    node_timeline(&mut out, m, &th, [model, kernel], several);
    (out, f)
}

/// How many seconds of the run the node timeline covers: the first ten,
/// where fork and wakeup placement and the first balancing and NUMA moves
/// happen (issue 30's check: where each thread ran, kernel beside model).
const NODE_TIMELINE_S: u32 = 10;

/// Each measured thread's node at every second of the first
/// [`NODE_TIMELINE_S`] (the node of the CPU the sampler last saw it on,
/// `-` where it did not run), model | kernel. Node numbers are the
/// machine's own: on a symmetric machine a kernel boot may have put the
/// same layout on renamed nodes.
fn node_timeline(
    out: &mut String,
    m: &Machine,
    th: &[Measured],
    recs: [Option<&RunRecord>; 2],
    several: bool,
) {
    let nodes = recs.map(|r| r.map(|r| nodes_over_time(r, m, th)));
    if th.is_empty() || nodes.iter().flatten().all(|v| v.iter().all(Vec::is_empty)) {
        return;
    }
    let points: Vec<f64> = (1..=NODE_TIMELINE_S).map(f64::from).collect();
    let _ = writeln!(
        out,
        "{:<20} node at t = {} s: model | kernel",
        "thread's node",
        points
            .iter()
            .map(|t| format!("{t:.0}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    for (i, t) in th.iter().enumerate() {
        let label = if several {
            format!("{}/{}", t.process, t.thread)
        } else {
            t.thread.clone()
        };
        let side = |k: usize| {
            nodes[k].as_ref().map_or("-".to_string(), |v| {
                points
                    .iter()
                    .map(|&p| at(&v[i], p).map_or("-".into(), |n| format!("{n:.0}")))
                    .collect::<Vec<String>>()
                    .join(" ")
            })
        };
        let _ = writeln!(out, "  {label:<18} {} | {}", side(0), side(1));
    }
}

/// Prints the checks of a scenario; (passed, failed).
fn print_checks(
    name: &str,
    checks: &[numalab_real::smoke::Check],
) -> Result<(usize, usize), String> {
    let mut p = 0;
    let mut text = String::new();
    for c in checks {
        text.push_str(&format!(
            "{} {name}: {} ({})\n",
            if c.ok { "PASS" } else { "FAIL" },
            c.name,
            c.detail
        ));
        p += usize::from(c.ok);
    }
    text.push('\n');
    out::print(&text)?;
    Ok((p, checks.len() - p))
}

fn read_guest(dir: &str, name: &str) -> Result<RunRecord, String> {
    let p = Path::new(dir).join(format!("{name}.kernel.json"));
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    RunRecord::from_json(&text, &p.display().to_string())
}

fn guest_run(s: &Scenario, m: &Machine, o: &Options, tmp: &Path) -> Result<RunRecord, Failure> {
    let file = tmp.join(format!("{}.toml", s.name));
    out::write_file("", &file, s.text)?;
    let a = RunArgs {
        workload: file.display().to_string(),
        sets: s.kernel_sets.iter().map(|k| k.to_string()).collect(),
        json: None,
        scale: o.scale,
        seed: o.seed,
        interval: 1.0,
        trace: None,
        trace_events: None,
        probes: Vec::new(),
    };
    let out = real::vm_outcome(m, &a, &o.vm)?;
    eprintln!(
        "numalab validate: {}: kernel {}, boot {:.1} s, QEMU {:.1} s",
        s.name,
        out.record.kernel.as_deref().unwrap_or("?"),
        out.boot_s.unwrap_or(f64::NAN),
        out.qemu_s
    );
    Ok(out.record)
}

/// The model's runs of `s` at the gate's further seeds (`--seed` + 1 up to
/// `--model-seeds` runs in all), in parallel, in seed order; no trace is
/// kept.
fn more_seeds(
    s: &Scenario,
    m: &Machine,
    o: &Options,
    boots: &[RunRecord],
) -> Result<Vec<RunRecord>, String> {
    use rayon::prelude::*;
    let sets = model_sets(s, &o.model_set);
    let coordinator = coordinator_cost(boots);
    let n = o.model_seeds.unwrap_or(crate::validate_band::MODEL_SEEDS);
    (1..u64::from(n.max(1)))
        .into_par_iter()
        .map(|i| {
            let seed = o.seed.wrapping_add(i);
            let w = resolve(s, m, seed, o.scale)?;
            run_model_traced(&w, m, seed, o.scale, &sets, None, coordinator).map(|(rec, _)| rec)
        })
        .collect()
}

/// The guest machine and scenarios `o` chooses, after the checks of the
/// options every `numalab validate` shares (stock or `--kernel-patch`).
pub fn choose(o: &Options) -> Result<(Machine, Vec<Scenario>), Failure> {
    let m = machine(o.machine.as_deref())?;
    let scenarios = pick(&o.scenarios, &m.name, o.series)?;
    if let Some(s) = scenarios
        .iter()
        .find(|s| GUESTS.iter().any(|(n, _)| *n == m.name) && s.guest != m.name)
    {
        return Err(format!(
            "--scenario {}: written for {}, not {}: add --machine {}",
            s.name, s.guest, m.name, s.guest
        )
        .into());
    }
    if o.model_seeds.is_some() && o.boots.is_none() {
        return Err(
            "--model-seeds: the gate's median needs saved boots to judge against: add --boots DIR"
                .to_string()
                .into(),
        );
    }
    if o.check && o.model_only {
        return Err(
            "--check asserts facts of the kernel's records: not with --model-only"
                .to_string()
                .into(),
        );
    }
    if o.check && o.boots.is_none() && !scenarios.iter().any(|s| s.check) {
        return Err(format!(
            "--check: none of the chosen scenarios has checks (those that do: {})",
            SCENARIOS
                .iter()
                .filter(|s| s.check)
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", ")
        )
        .into());
    }
    Ok((m, scenarios))
}

/// `numalab validate` on the stock kernel: the model beside the kernel,
/// scenario by scenario (`--kernel-patch` is validate_ab.rs).
pub fn validate_stock(o: &Options, m: &Machine, scenarios: &[Scenario]) -> Result<(), Failure> {
    let (mut passed, mut failed) = (0usize, 0usize);
    if let Some(d) = &o.json_dir {
        std::fs::create_dir_all(d).map_err(|e| format!("--json-dir {d}: {e}"))?;
    }
    if let Some(d) = &o.model_trace {
        std::fs::create_dir_all(d).map_err(|e| format!("--model-trace {d}: {e}"))?;
    }
    if !o.model_only && o.guest_json.is_none() {
        numalab_real::vm::qemu::check_vm_machine(m).map_err(numalab_real::RealError::Refused)?;
    }
    let tmp = std::env::temp_dir().join(format!("numalab-validate-{}", std::process::id()));
    let mut failures = Vec::new();
    let mut disagreements = Vec::new();
    let boots_dir = o.boots.as_deref().map(Path::new);
    let known = match boots_dir {
        Some(d) => crate::validate_band::read_known(d)?,
        None => Vec::new(),
    };
    let mut outside = Vec::new();
    let mut stale = Vec::new();
    for s in scenarios {
        let w = resolve(s, m, o.seed, o.scale)?;
        let boots = match boots_dir {
            Some(d) => crate::validate_band::read_boots(d, s.name)?,
            None => Vec::new(),
        };
        let (model, trace) = run_model_traced(
            &w,
            m,
            o.seed,
            o.scale,
            &model_sets(s, &o.model_set),
            o.trace_events.as_deref(),
            coordinator_cost(&boots),
        )?;
        if let Some(d) = &o.model_trace {
            let p = Path::new(d).join(format!("{}.model.trace", s.name));
            let text = numalab_record::ftrace::write(&crate::trace::to_ftrace(&trace), m.nr_cpus());
            out::write_file("--model-trace", &p, &text)?;
        }
        let kernel = if o.model_only {
            None
        } else if let Some(b) = boots.first() {
            Some(b.clone())
        } else if let Some(d) = &o.guest_json {
            Some(read_guest(d, s.name)?)
        } else {
            std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
            match guest_run(s, m, o, &tmp) {
                Ok(r) => Some(r),
                Err(e) => {
                    eprintln!("numalab validate: {}: guest failed: {}", s.name, e.message);
                    failures.push(format!("{}: {}", s.name, e.message));
                    None
                }
            }
        };
        if let Some(d) = &o.json_dir {
            let write = |suffix: &str, r: &RunRecord| -> Result<(), String> {
                let p: PathBuf = Path::new(d).join(format!("{}.{suffix}.json", s.name));
                out::write_file("--json-dir", &p, &r.to_json())
            };
            write("model", &model)?;
            if let (Some(k), None) = (&kernel, &o.guest_json) {
                write("kernel", k)?;
            }
        }
        let (text, f) = table(s.name, &w, m, Some(&model), kernel.as_ref());
        out::print(&format!("{text}\n"))?;
        if !boots.is_empty() {
            let mut models = vec![model];
            models.extend(more_seeds(s, m, o, &boots)?);
            let rows = crate::validate_band::judge(s.name, &w, m, &models, &boots, &known);
            out::print(&format!(
                "{}\n",
                crate::validate_band::render(s.name, boots.len(), models.len(), &rows)
            ))?;
            for r in &rows {
                match &r.verdict {
                    crate::validate_band::Verdict::NoLongerKnown => {
                        stale.push(format!("{}: {}", s.name, r.figure))
                    }
                    v if v.fails() => outside.push(format!("{}: {}", s.name, r.figure)),
                    crate::validate_band::Verdict::Within => passed += 1,
                    _ => {}
                }
            }
            failed += rows.iter().filter(|r| r.verdict.fails()).count();
        }
        if o.check && s.check && boots.len() <= 1 {
            let checks = match &kernel {
                Some(k) => numalab_real::smoke::check_pinned(k, m, 0.5),
                None => vec![numalab_real::smoke::Check {
                    name: "kernel record".into(),
                    ok: false,
                    detail: "the guest run failed".into(),
                }],
            };
            let (p, f) = print_checks(s.name, &checks)?;
            passed += p;
            failed += f;
        }
        if !f.counters.is_empty() || !f.placements.is_empty() {
            disagreements.push(format!(
                "{}: {}{}",
                s.name,
                f.counters.join(", "),
                if f.placements.is_empty() {
                    String::new()
                } else {
                    format!(" placement: {}", f.placements.join(", "))
                }
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    if !disagreements.is_empty() {
        let mut text =
            "Differences of more than 2x or in placement (see docs/real.md for the mechanisms):\n"
                .to_string();
        for d in &disagreements {
            text.push_str(&format!("  {d}\n"));
        }
        out::print(&text)?;
    }
    for (list, heading) in [
        (
            &outside,
            "Outside the kernel's band and not declared in known.toml:",
        ),
        (
            &stale,
            "Within the kernel's band but declared in known.toml (remove the declaration):",
        ),
    ] {
        if !list.is_empty() {
            let mut text = format!("{heading}\n");
            for d in list {
                text.push_str(&format!("  {d}\n"));
            }
            out::print(&text)?;
        }
    }
    if o.check {
        out::print(&format!(
            "validate --check: {passed} passed, {failed} failed\n"
        ))?;
        if failed > 0 && failures.is_empty() {
            return Err(Failure {
                message: format!("--check: {failed} check(s) failed"),
                code: 1,
                detail: None,
            });
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Failure {
            message: format!("guest runs failed: {}", failures.join("; ")),
            code: 1,
            detail: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_record::{Column, RunKind, TimeSeries};

    fn guest() -> Machine {
        machine(None).expect("the built-in guest spec parses")
    }

    /// A record of the 2-thread workload below: `rows` are (t, cpu of a,
    /// bytes of ra on node 0 and 1).
    fn record(
        vm: &[(&str, u64)],
        traces: &[(&str, f64)],
        rows: &[(f64, f64, f64, f64)],
    ) -> RunRecord {
        let mut counts = numalab_record::Lab::new();
        for (ev, n) in traces {
            counts.set(lab::TRACE.key(ev), *n);
        }
        let mut columns = vec!["t_s".to_string()];
        for r in ["ra", "rb"] {
            for n in 0..4 {
                columns.push(
                    Column::RegionBytes {
                        process: "p",
                        region: r,
                        node: n,
                    }
                    .name(),
                );
            }
        }
        for t in ["a", "b", "init"] {
            columns.push(
                Column::Cpu {
                    process: "p",
                    thread: t,
                }
                .name(),
            );
        }
        RunRecord {
            elapsed_s: rows.last().map_or(0.0, |r| r.0),
            vmstat: vm.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            lab: counts,
            timeseries: Some(TimeSeries {
                interval_s: 1.0,
                columns,
                // b stays on CPU 0 with all of rb on node 0: always local.
                rows: rows
                    .iter()
                    .map(|&(t, cpu, n0, n1)| {
                        vec![t, n0, n1, 0.0, 0.0, 100.0, 0.0, 0.0, 0.0, cpu, 0.0, -1.0]
                    })
                    .collect(),
            }),
            ..RunRecord::empty(RunKind::Model)
        }
    }

    fn workload() -> Workload {
        let text = r#"
name = "two"
description = "two threads"
[[process]]
name = "p"
[[process.region]]
name = "ra"
size = "1MiB"
[[process.region]]
name = "rb"
size = "1MiB"
[[process.thread]]
name = "init"
phases = [ { stream = "ra" }, { stream = "rb" } ]
[[process.thread]]
name = "a"
phases = [ { stream = "ra" } ]
[[process.thread]]
name = "b"
phases = [ { repeat = 2, body = [ { random = "rb", accesses = 10 } ] } ]
"#;
        let spec = numalab_workload::spec::parse(text, "two").unwrap();
        numalab_workload::spec::resolve(&spec, &guest(), 1, 1.0).unwrap()
    }

    #[test]
    fn measured_threads_are_those_with_one_region() {
        let th = measured_threads(&workload());
        let names: Vec<(&str, &str)> = th
            .iter()
            .map(|t| (t.thread.as_str(), t.region.as_str()))
            .collect();
        assert_eq!(names, vec![("a", "ra"), ("b", "rb")]);
    }

    #[test]
    fn local_share_follows_the_cpu_and_the_region() {
        let w = workload();
        // Thread a runs on CPU 1 (node 1): its region moves from node 0 to 1.
        let r = record(
            &[],
            &[],
            &[
                (1.0, 1.0, 100.0, 0.0),
                (2.0, 1.0, 50.0, 50.0),
                (3.0, 1.0, 5.0, 95.0),
                (4.0, -1.0, 0.0, 100.0),
            ],
        );
        let s = local_shares(&r, &guest(), &measured_threads(&w));
        assert_eq!(s[0], vec![(1.0, 0.0), (2.0, 0.5), (3.0, 0.95)]);
        assert_eq!(first_local(&s[0]), Some(3.0));
        assert_eq!(s[1].len(), 4);
        assert_eq!(last_common_time(&s), Some(3.0));
        assert_eq!(final_share(&s[0], Some(3.0)), Some(0.95));
        assert_eq!(placement(Some(0.95)), "local");
        assert_eq!(placement(Some(0.51)), "local");
        assert_eq!(placement(Some(0.5)), "remote");
        assert_eq!(placement(None), "-");
    }

    #[test]
    fn the_node_timeline_puts_each_threads_node_per_second_model_beside_kernel() {
        let w = workload();
        let m = guest();
        // Model: a on CPU 1 (node 1) for 2 s, then CPU 3; gone at 4 s.
        let model = record(
            &[],
            &[],
            &[
                (1.0, 1.0, 100.0, 0.0),
                (2.0, 1.0, 100.0, 0.0),
                (3.0, 3.0, 100.0, 0.0),
                (4.0, -1.0, 100.0, 0.0),
            ],
        );
        let kernel = record(&[], &[], &[(2.0, 2.0, 100.0, 0.0)]);
        let s = nodes_over_time(&model, &m, &measured_threads(&w));
        assert_eq!(s[0], vec![(1.0, 1.0), (2.0, 1.0), (3.0, 3.0)]);
        let (text, _) = table("two", &w, &m, Some(&model), Some(&kernel));
        let a = text
            .lines()
            .skip_while(|l| !l.starts_with("thread's node"))
            .find(|l| l.trim_start().starts_with("a "))
            .unwrap_or_else(|| panic!("no node line for a in\n{text}"));
        // A sample counts for two seconds after it, then '-'.
        assert_eq!(
            a.split_whitespace().collect::<Vec<_>>(),
            [
                "a", "1", "1", "3", "3", "3", "-", "-", "-", "-", "-", "|", "-", "2", "2", "2",
                "-", "-", "-", "-", "-", "-"
            ],
            "{text}"
        );
        // Without a CPU column on either side there is no timeline.
        let mut bare = model.clone();
        bare.timeseries = None;
        let (text, _) = table("two", &w, &m, Some(&bare), None);
        assert!(!text.contains("thread's node"), "{text}");
    }

    #[test]
    fn the_table_flags_2x_counters_and_different_placement() {
        let w = workload();
        let m = guest();
        let model = record(
            &[
                ("numa_pte_updates", 1000),
                ("numa_hint_faults", 900),
                ("numa_hint_faults_local", 600),
                ("numa_pages_migrated", 300),
            ],
            &[("sched_move_numa", 0.0), ("sched_swap_numa", 2.0)],
            &[(1.0, 1.0, 100.0, 0.0), (2.0, 1.0, 0.0, 100.0)],
        );
        let mut kernel = record(
            &[
                ("numa_pte_updates", 1900),
                ("numa_hint_faults", 400),
                ("numa_hint_faults_local", 250),
                ("numa_pages_migrated", 300),
            ],
            &[("sched_move_numa", 3.0), ("sched_swap_numa", 3.0)],
            &[(1.0, 1.0, 100.0, 0.0), (2.0, 1.0, 100.0, 0.0)],
        );
        kernel.kind = RunKind::Real;
        kernel.kernel = Some("6.12.117+deb12-amd64".into());
        let (text, f) = table("two", &w, &m, Some(&model), Some(&kernel));
        assert_eq!(
            f.counters,
            vec![
                "numa_hint_faults",
                "numa_hint_faults_local",
                "sched_move_numa"
            ]
        );
        assert_eq!(f.placements, vec!["a"]);
        let line = |label: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(label))
                .unwrap_or_else(|| panic!("no {label} in\n{text}"))
                .to_string()
        };
        assert!(line("numa_pte_updates").contains("1.90"), "{text}");
        assert!(!line("numa_pte_updates").contains(">2x"), "{text}");
        assert!(
            line("numa_hint_faults ").ends_with("0.44 <-- >2x"),
            "{text}"
        );
        assert!(line("sched_move_numa").contains("inf <-- >2x"), "{text}");
        assert!(line("sched_swap_numa").contains("1.50"), "{text}");
        // THP rows only when one side has THP activity.
        assert!(!text.contains("thp_migration_success"), "{text}");
        assert!(line("a ").contains("<-- placement differs"), "{text}");
        assert!(
            line("a ").contains("100%") && line("a ").contains("0%"),
            "{text}"
        );
        assert!(!line("b ").contains("differs"), "{text}");
        assert!(
            text.contains("kernel 6.12.117+deb12-amd64 (host)"),
            "{text}"
        );
        // Model only: no kernel column, nothing flagged.
        let (text, f) = table("two", &w, &m, Some(&model), None);
        assert_eq!(f, Findings::default());
        assert!(line_of(&text, "numa_pte_updates").contains("1000            -"));
    }

    fn line_of(text: &str, label: &str) -> String {
        text.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_default()
            .to_string()
    }

    #[test]
    fn timeline_points_are_round_and_few() {
        assert_eq!(
            timeline_points(30.0),
            vec![5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
        );
        assert_eq!(timeline_points(36.3), vec![10.0, 20.0, 30.0]);
        assert_eq!(timeline_points(3.0), vec![1.0, 2.0, 3.0]);
        assert!(differs_2x(0.0, 1.0) && differs_2x(10.0, 4.0) && !differs_2x(10.0, 5.0));
    }

    #[test]
    fn scenarios_parse_and_unknown_names_are_refused() {
        let m = guest();
        assert_eq!(m.nr_nodes(), 4);
        assert_eq!(m.nr_cpus(), 4);
        assert_eq!(m.latency_ns[0][1], m.latency_ns[0][0], "uniform latency");
        numalab_real::vm::qemu::check_vm_machine(&m).expect("the guest fits a VM");
        for s in SCENARIOS {
            let g = machine(Some(s.guest)).expect("a built-in guest");
            numalab_real::vm::qemu::check_vm_machine(&g).expect("the guest fits a VM");
            let w = resolve(s, &g, 1, 1.0).unwrap_or_else(|e| panic!("{}: {e}", s.name));
            assert!(!measured_threads(&w).is_empty(), "{}", s.name);
        }
        // Ten or more scenarios on two guest shapes; each guest's default
        // list is its own.
        assert!(SCENARIOS.iter().filter(|s| !s.on_request).count() >= 10);
        for (g, _) in GUESTS {
            let picked = pick(&[], g, false).unwrap();
            assert!(
                !picked.is_empty() && picked.iter().all(|s| s.guest == *g),
                "{g}"
            );
        }
        let two = machine(Some("guest-2n2c")).unwrap();
        assert_eq!((two.nr_nodes(), two.nr_cpus()), (2, 4));
        let e = pick(&["nope".to_string()], "guest-4n", false).unwrap_err();
        assert!(
            e.contains("pinned-4k, pinned-thp, unpinned, numa02-like"),
            "{e}"
        );
    }

    #[test]
    fn series_scenarios_run_only_with_series_and_resolve_on_their_guest() {
        use crate::validate_scenarios::SERIES_SCENARIOS;
        let picked = pick(&[], "guest-4n", true).unwrap();
        let on = |g: &str| SERIES_SCENARIOS.iter().filter(|s| s.guest == g).count();
        assert_eq!(picked.len(), on("guest-4n"));
        assert_eq!(
            pick(&[], "guest-2n2c", true).unwrap().len(),
            on("guest-2n2c")
        );
        assert!(picked.iter().all(|s| s.series && !s.kernel_sets.is_empty()));
        // Each side gets a setting; p4 names the same files on both.
        for s in SERIES_SCENARIOS {
            assert_eq!(s.kernel_sets.len(), s.model_sets.len(), "{}", s.name);
            numalab_sim::Knobs::from_sets(s.model_sets)
                .unwrap_or_else(|e| panic!("{}: {e}", s.name));
            let g = machine(Some(s.guest)).unwrap();
            resolve(s, &g, 1, 1.0).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        }
        let e = pick(&["p4-cgroup-on-off".into()], "guest-4n", false).unwrap_err();
        assert!(e.contains("add --series"), "{e}");
        let e = pick(&["unpinned".into()], "guest-4n", true).unwrap_err();
        assert!(e.contains("drop --series"), "{e}");
        assert!(pick(&[], "guest-4n", false)
            .unwrap()
            .iter()
            .all(|s| !s.series));
    }

    /// The model half of `numalab validate --model-only`, fast: the pinned
    /// scenario on the guest machine converges and passes every
    /// deterministic check the CI asserts on the kernel (but "real run").
    #[test]
    fn model_only_pinned_scenario_converges_and_passes_the_ci_checks() {
        // Native kernel-work speed: at the guest's measured cost_scale
        // (180) the quarter-scale scenario's scans are throttled by
        // node_stamp and its migrations take ~0.65 ms each, so it does not
        // converge within its 30 s (docs/real.md, M1). This test is about
        // the model half of the pipeline, not that speed.
        let mut m = guest();
        m.kernel.cost_scale = 1.0;
        let s = pick(&["pinned-4k".to_string()], "guest-4n", false).unwrap()[0];
        let w = resolve(&s, &m, 1, 0.25).unwrap();
        // Model and real runs name tasks alike: no renaming needed.
        let rec = run_model(&w, &m, 1, 0.25, &[]).unwrap();
        let failed: Vec<_> = numalab_real::smoke::check_pinned(&rec, &m, 0.5)
            .into_iter()
            .filter(|c| !c.ok && c.name != "real run")
            .collect();
        assert!(failed.is_empty(), "{failed:#?}");
        assert!(rec.lab.contains(lab::TRACE.key("sched_swap_numa")));
        let (text, f) = table(s.name, &w, &m, Some(&rec), None);
        assert_eq!(f, Findings::default());
        assert!(text.contains("all threads >= 90% local (s)"), "{text}");
        assert!(!text.contains("never"), "{text}");
    }
}
