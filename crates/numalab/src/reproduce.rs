//! `numalab reproduce NAME`: the published experiments of the five
//! proposals as named scenarios.
//!
//! A reproduction names its machine, its workloads, the configurations it
//! compares (each a list of knobs), and the numbers its posting published.
//! Running it runs every configuration, prints the mmtests compare table of
//! the modeled runs, then each published figure beside the modeled one with
//! the ratio. Published numbers are only ever printed beside the model's:
//! nothing in the model reads them.

use crate::progress::Progress;
use crate::reproduce_check::Standing;
pub use crate::reproduce_check::DECLARED_SCALE;
use crate::reproduce_decl::workload_name;
pub use crate::reproduce_decl::{Config, Metric, Published, Reproduction};
use crate::reproduce_runs::{self, RunSpec, RunTimings};
pub use crate::reproductions::all;
use crate::runner;
use crate::verdict::{judge, Coverage, Reference, Verdict};
use numalab_record::{RunRecord, RunSet};

/// How `numalab reproduce` runs: scale, iterations, seed, where to write
/// RunSets, and whether progress and warnings show on stderr.
#[derive(Clone, Debug)]
pub struct Options {
    /// Memory and passes shrink by this (1 = as published).
    pub scale: f64,
    /// Iterations per configuration; None = the reproduction's own.
    pub iterations: Option<u32>,
    /// First seed.
    pub seed: u64,
    /// Directory for each configuration's RunSet JSON.
    pub json_dir: Option<String>,
    /// Progress and warnings on stderr ([`Progress`]); off for callers
    /// that report on their own (the Python package).
    pub progress: bool,
    /// Directory for each run's figures and the compare chart.
    pub plots: Option<String>,
    /// Knobs set in every configuration after its own (`--set`): an
    /// ablation of the model, named in the header.
    pub sets: Vec<String>,
    /// `NAME=FILE` (`--workload`): the reproduction's workload preset NAME
    /// replaced by the workload file FILE, whose `name` is NAME, keeping
    /// the parameters the reproduction gives it; named in the header.
    pub workloads: Vec<String>,
}

/// A reproduction's printed report and its verdict tally.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Reproduction name.
    pub name: &'static str,
    /// The compare table and the modeled-vs-published table.
    pub text: String,
    /// Tally of the verdicts.
    pub tally: Tally,
    /// The modeled-vs-published table as data, one row per figure.
    pub figures: Vec<FigureRow>,
    /// Each configuration's runs, in configuration order.
    pub sets: Vec<RunSet>,
    /// What `--check` fails on, one line per figure naming it and why
    /// (the rows with [`FigureRow::unexpected`]).
    pub failures: Vec<String>,
}

/// One row of the modeled-vs-published table, as data (the Python
/// package's `reproduce()`): the printed columns without their padding.
#[derive(Clone, Debug, PartialEq)]
pub struct FigureRow {
    /// Configuration label.
    pub config: String,
    /// Metric name as printed.
    pub metric: String,
    /// Published value; None for a model-only figure.
    pub published: Option<f64>,
    /// Modeled value.
    pub modeled: f64,
    /// Tolerance label (`±10%`); None when not judged.
    pub tolerance: Option<String>,
    /// Verdict text as printed (with `(known miss [k])` or `(MISS)`).
    pub verdict: String,
    /// Whether the figure was judged (published, and meaningful at this
    /// scale).
    pub judged: bool,
    /// What `--check` fails on: a miss not declared known, a missing
    /// figure (declared or not), or a declared known miss that holds at
    /// the scale it was declared for ([`DECLARED_SCALE`]).
    pub unexpected: bool,
}

/// How a reproduction's published figures fared (also saved in
/// `reproduction.json`; counts a directory written before a field existed
/// lacks are read as 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Tally {
    /// Published figures judged.
    pub figures: usize,
    /// Within tolerance.
    pub within: usize,
    /// Outside, in the published direction.
    pub right_direction: usize,
    /// Outside, the posting changed and the model did not.
    pub no_change: usize,
    /// Outside, against the published direction.
    pub wrong_direction: usize,
    /// Outside, with no direction to judge (or no modeled figure).
    pub off: usize,
    /// Misses declared known (with their mechanism).
    pub known: usize,
    /// What `--check` fails on: misses not declared, missing figures
    /// (declared or not), and declared known misses that hold at
    /// [`DECLARED_SCALE`] (no longer misses: their declarations must go).
    pub unexpected: usize,
    /// Published figures the runs could not model at this scale (not
    /// among `figures`: neither a pass nor a miss).
    pub not_modeled: usize,
}

/// The tally's column names, in the order of [`Tally::counts`]: the text
/// summary and the HTML report's summary share them.
pub const TALLY_COLUMNS: [&str; 9] = [
    "figures",
    "within",
    "right-dir",
    "no-change",
    "wrong-dir",
    "off",
    "known",
    "unexpected",
    "not-modeled",
];

impl Tally {
    /// The counts in [`TALLY_COLUMNS`] order.
    pub fn counts(&self) -> [usize; 9] {
        [
            self.figures,
            self.within,
            self.right_direction,
            self.no_change,
            self.wrong_direction,
            self.off,
            self.known,
            self.unexpected,
            self.not_modeled,
        ]
    }

    /// The sum of several tallies (`reproduce all`'s last row).
    pub fn total<'a>(tallies: impl IntoIterator<Item = &'a Tally>) -> Tally {
        tallies.into_iter().fold(Tally::default(), |a, t| Tally {
            figures: a.figures + t.figures,
            within: a.within + t.within,
            right_direction: a.right_direction + t.right_direction,
            no_change: a.no_change + t.no_change,
            wrong_direction: a.wrong_direction + t.wrong_direction,
            off: a.off + t.off,
            known: a.known + t.known,
            unexpected: a.unexpected + t.unexpected,
            not_modeled: a.not_modeled + t.not_modeled,
        })
    }
}

/// Finds reproduction `name`.
pub fn find(name: &str) -> Result<Reproduction, String> {
    all().into_iter().find(|r| r.name == name).ok_or_else(|| {
        format!(
            "unknown reproduction '{name}' (see `numalab list reproductions`: all, {})",
            all().iter().map(|r| r.name).collect::<Vec<_>>().join(", ")
        )
    })
}

/// `numalab reproduce NAME|all`: runs one reproduction, or every one in
/// parallel followed by a summary table; with `check`, exit 1 on what
/// [`check`] fails.
pub fn reproduce(name: &str, opts: &Options, check: bool) -> Result<(), crate::failure::Failure> {
    let outcomes = outcomes(name, opts)?;
    for o in &outcomes {
        crate::out::print(&o.text)?;
    }
    if name == "all" {
        crate::out::print(&summary(&outcomes))?;
    }
    if check {
        self::check(&outcomes)?;
    }
    Ok(())
}

/// `--check`: exit 1 when a published figure misses without a declared
/// known miss, has no modeled figure (declared or not), or is declared a
/// known miss and holds at the scale the declaration is for
/// ([`DECLARED_SCALE`]); each such figure is named in the detail, with
/// what to do about it.
pub fn check(outcomes: &[Outcome]) -> Result<(), crate::failure::Failure> {
    let failures: Vec<&String> = outcomes.iter().flat_map(|o| &o.failures).collect();
    if failures.is_empty() {
        return Ok(());
    }
    Err(crate::failure::Failure {
        message: format!(
            "{} published figure(s) fail --check (listed above): a miss not declared known, no modeled figure, or a known-miss declaration that no longer holds",
            failures.len()
        ),
        code: 1,
        detail: Some(
            failures
                .iter()
                .map(|f| format!("reproduce --check: {f}"))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    })
}

/// The outcomes of reproduction `name`, or of every one for `all`, without
/// printing them: every run of every chosen reproduction is one set, runs
/// with identical inputs made once and the rest scheduled longest-first
/// over the `-j` workers ([`crate::reproduce_runs`]); outcomes come in
/// declaration order and do not depend on the schedule.
pub fn outcomes(name: &str, opts: &Options) -> Result<Vec<Outcome>, String> {
    let chosen = if name == "all" {
        all()
    } else {
        vec![find(name)?]
    };
    if opts.iterations == Some(0) {
        return Err("--iterations must be at least 1".to_string());
    }
    // A --workload NAME must be run by a chosen reproduction (with `all`,
    // by at least one; the others run as they are).
    for p in &opts.workloads {
        let (name, _) = workload_pair(p)?;
        if !chosen.iter().any(|r| runs_workload(r, name)) {
            return Err(if chosen.len() == 1 {
                format!(
                    "--workload {p}: reproduction {} has no workload preset {name}",
                    chosen[0].name
                )
            } else {
                format!("--workload {p}: no reproduction runs a workload preset {name}")
            });
        }
    }
    // Each --workload file is read once, for every reproduction.
    let replaced = workload_replacements(&opts.workloads)?;
    let prepared = chosen
        .iter()
        .map(|r| prepare(r, opts, &replaced))
        .collect::<Result<Vec<_>, String>>()?;
    let specs: Vec<RunSpec> = chosen
        .iter()
        .zip(&prepared)
        .flat_map(|(r, p)| {
            p.jobs.iter().map(move |(c, w, i)| RunSpec {
                machine: r.machine,
                workload: w.as_str(),
                cgroup: r.cgroup,
                knobs: &p.knobs[*c],
                seed: opts.seed.wrapping_add(u64::from(*i)),
            })
        })
        .collect();
    let (unique, slots) = reproduce_runs::distinct(&specs);
    let machine = |name: &str| {
        let i = chosen.iter().position(|r| r.machine == name);
        &prepared[i.expect("a run's machine is a chosen reproduction's")].machine
    };
    let costs: Vec<f64> = unique
        .iter()
        .map(|s| reproduce_runs::estimated_cost(machine(s.machine), s.workload, s.seed, opts.scale))
        .collect();
    let label = format!("reproduce {name}");
    let progress = if opts.progress {
        Progress::new(&label, unique.len())
    } else {
        Progress::silent()
    };
    let timings = RunTimings::from_env()?;
    let records = reproduce_runs::longest_first(&costs, |u| {
        let s = unique[u];
        let t = timings.start();
        let rec = runner::run_with(
            machine(s.machine),
            s.workload,
            s.cgroup,
            s.knobs,
            s.seed,
            opts.scale,
            None,
            &progress,
        )
        .map(|f| f.rec);
        timings.stop(t, s, costs[u]);
        rec
    })?;
    progress.finish();
    timings.write()?;
    let mut slots = slots.into_iter();
    chosen
        .iter()
        .zip(prepared)
        .map(|(r, p)| {
            let recs = p
                .jobs
                .iter()
                .zip(slots.by_ref())
                .map(|(&(c, _, _), u)| (c, records[u].clone()))
                .collect();
            outcome(r, opts, p, recs)
        })
        .collect()
}

/// A reproduction ready to run: its machine, each configuration's knobs
/// (its own, then `--set`'s) and its runs ([`jobs`]).
struct Prepared {
    machine: numalab_topology::Machine,
    knobs: Vec<numalab_sim::Knobs>,
    jobs: Vec<(usize, String, u32)>,
}

/// Loads reproduction `r`'s machine, parses its configurations' knobs and
/// lists its runs, with the workloads `replaced` by `--workload` files.
fn prepare(
    r: &Reproduction,
    opts: &Options,
    replaced: &[(&str, &str)],
) -> Result<Prepared, String> {
    let machine = runner::load_machine(r.machine)?;
    let knobs = r
        .configs
        .iter()
        .map(|c| {
            let all: Vec<&str> = c
                .sets
                .iter()
                .copied()
                .chain(opts.sets.iter().map(String::as_str))
                .collect();
            runner::knobs(&all)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let jobs = jobs(r, opts)
        .into_iter()
        .map(|(c, w, i)| (c, replace_workload(w, replaced), i))
        .collect();
    Ok(Prepared {
        machine,
        knobs,
        jobs,
    })
}

/// What reproduction `r`'s header says about `--set` and `--workload`:
/// the model or a workload it runs changed from its own.
fn ablations(r: &Reproduction, opts: &Options) -> String {
    let mut s = String::new();
    if !opts.sets.is_empty() {
        s += &format!(", with --set {}", opts.sets.join(" --set "));
    }
    for w in &opts.workloads {
        if workload_pair(w).is_ok_and(|(name, _)| runs_workload(r, name)) {
            s += &format!(", with --workload {w}");
        }
    }
    s
}

/// The `--workload NAME=FILE` pairs, each FILE checked to be a workload
/// file named NAME (its runs are then told apart by NAME, as the figures
/// read them); a reproduction that does not run NAME runs as it is.
fn workload_replacements(pairs: &[String]) -> Result<Vec<(&str, &str)>, String> {
    pairs
        .iter()
        .map(|p| {
            let (name, file) = workload_pair(p)?;
            // FILE, or FILE:PARAMS (parameters of the file's own, set
            // before the reproduction's).
            let path = match file.split_once(':') {
                Some((f, _)) if !std::path::Path::new(file).is_file() => f,
                _ => file,
            };
            if !std::path::Path::new(path).is_file() {
                return Err(format!("--workload {p}: no file {path}"));
            }
            let spec = numalab_workload::presets::load(file)
                .map_err(|e| format!("--workload {p}: {e}"))?;
            if spec.name != name {
                return Err(format!(
                    "--workload {p}: {file} is the workload {}, not {name}: a replacement keeps the name the figures read",
                    spec.name
                ));
            }
            Ok((name, file))
        })
        .collect()
}

/// `--workload`'s `NAME=FILE`, split.
fn workload_pair(p: &str) -> Result<(&str, &str), String> {
    p.split_once('=')
        .filter(|(n, f)| !n.is_empty() && !f.is_empty())
        .ok_or_else(|| format!("--workload {p}: expected NAME=FILE"))
}

/// Whether reproduction `r` runs workload preset `name`.
fn runs_workload(r: &Reproduction, name: &str) -> bool {
    r.workloads
        .iter()
        .any(|w| base_name(split_label(w, r.configs).1) == name)
}

/// A workload string's preset name, without its `:parameters`.
fn base_name(w: &str) -> &str {
    w.split_once(':').map_or(w, |(b, _)| b)
}

/// Workload string `w` with its preset replaced by a file of `replaced`,
/// its parameters kept after the file's own (`FILE:own,params`, which the
/// workload loader reads as the file with those parameters).
fn replace_workload(w: &str, replaced: &[(&str, &str)]) -> String {
    let base = base_name(w);
    let Some((_, file)) = replaced.iter().find(|(n, _)| *n == base) else {
        return w.to_string();
    };
    match (file.contains(':'), w.split_once(':')) {
        (true, Some((_, params))) => format!("{file},{params}"),
        (false, Some((_, params))) => format!("{file}:{params}"),
        (_, None) => file.to_string(),
    }
}

/// Every run of reproduction `r`: (configuration index, workload,
/// iteration), in declaration order.
fn jobs<'a>(r: &'a Reproduction, opts: &Options) -> Vec<(usize, &'a str, u32)> {
    let iterations = opts.iterations.unwrap_or(r.iterations);
    (0..r.configs.len())
        .flat_map(|c| {
            r.workloads
                .iter()
                .filter_map(move |w| for_config(w, r.configs[c].label, r.configs))
                .flat_map(move |w| (0..iterations).map(move |i| (c, w, i)))
        })
        .collect()
}

/// Reproduction `r`'s outcome from its runs' `records` ((configuration
/// index, record), in [`jobs`] order): the RunSets (written to
/// `--json-dir`), the plots, the tables and the verdicts.
fn outcome(
    r: &Reproduction,
    opts: &Options,
    p: Prepared,
    records: Vec<(usize, RunRecord)>,
) -> Result<Outcome, String> {
    let iterations = opts.iterations.unwrap_or(r.iterations);
    let m = p.machine;
    let mut sets = Vec::new();
    for (ci, c) in r.configs.iter().enumerate() {
        let runs = records
            .iter()
            .filter(|(k, _)| *k == ci)
            .map(|(_, rec)| rec.clone())
            .collect();
        let set = RunSet::new(c.label, runs);
        if let Some(dir) = &opts.json_dir {
            std::fs::create_dir_all(dir).map_err(|e| format!("--json-dir {dir}: {e}"))?;
            let path = format!("{dir}/{}.json", c.label);
            crate::out::write_file("", std::path::Path::new(&path), &set.to_json())?;
        }
        sets.push(set);
    }
    if let Some(dir) = &opts.plots {
        crate::plot::plot_sets(
            &sets,
            dir,
            &[numalab_plot::Format::Png, numalab_plot::Format::Svg],
        )?;
    }
    let Judged {
        table,
        tally,
        rows: figures,
        failures,
    } = modeled_vs_published(r, &sets, opts.scale);
    let text = format!(
        "reproduction {}: {}\npublished: {}\nmachine {}, scale {}, {iterations} iteration(s) from seed {}{}\n\n{}\n{}\n{}",
        r.name,
        r.description,
        r.source,
        m.name,
        opts.scale,
        opts.seed,
        ablations(r, opts),
        numalab_report::compare_table(&sets),
        table,
        latency_tables(r.latency_cgroup, &sets)
    );
    Ok(Outcome {
        name: r.name,
        text,
        tally,
        figures,
        sets,
        failures,
    })
}

/// The access-latency histogram of cgroup `cg` in each configuration's
/// first run, for a reproduction that declares one
/// ([`Reproduction::latency_cgroup`]); empty otherwise.
fn latency_tables(cg: Option<&str>, sets: &[RunSet]) -> String {
    let Some(cg) = cg else {
        return String::new();
    };
    let mut out = String::new();
    for s in sets {
        let Some(h) = s
            .runs
            .first()
            .and_then(|r| r.cgroups.get(cg))
            .and_then(|c| c.access_latency.as_ref())
        else {
            continue;
        };
        out.push_str(&format!("{} access latency, cgroup {cg}:\n", s.name));
        out.push_str(&numalab_report::latency::latency_histogram(h, "  "));
        out.push('\n');
    }
    out
}

/// The closing table of `reproduce all`: each reproduction's tally.
pub fn summary(outcomes: &[Outcome]) -> String {
    let width = outcomes
        .iter()
        .map(|o| o.name.len())
        .chain([12])
        .max()
        .unwrap_or(12);
    let mut out = format!(
        "summary\n{}",
        tally_line("reproduction", TALLY_COLUMNS, width)
    );
    for o in outcomes {
        out.push_str(&tally_line(o.name, o.tally.counts(), width));
    }
    let total = Tally::total(outcomes.iter().map(|o| &o.tally));
    out.push_str(&tally_line("all", total.counts(), width));
    if total.not_modeled > 0 {
        out.push_str(&format!(
            "({} published figure(s) not modeled at this scale: not counted among the figures; see each reproduction's notes)\n",
            total.not_modeled
        ));
    }
    out
}

/// Widths of the summary's columns, in [`TALLY_COLUMNS`] order.
const TALLY_WIDTHS: [usize; 9] = [7, 7, 9, 9, 9, 5, 6, 10, 11];

/// One line of the summary: a name and nine right-aligned cells.
fn tally_line<T: std::fmt::Display>(name: &str, cells: [T; 9], width: usize) -> String {
    let mut line = format!("{name:<width$}");
    for (c, w) in cells.iter().zip(TALLY_WIDTHS) {
        line.push_str(&format!(" {:>w$}", c.to_string()));
    }
    line + "\n"
}

/// The workload entry `w` of a reproduction under configuration `label`:
/// a plain name runs under every configuration, `LABEL:NAME` only under
/// LABEL. A prefix that is not one of the reproduction's configuration
/// labels is part of the workload (`specjbb:warehouses=6`: a preset with
/// parameters), which runs under every configuration.
fn for_config<'a>(w: &'a str, label: &str, configs: &[Config]) -> Option<&'a str> {
    let (l, name) = split_label(w, configs);
    l.is_none_or(|l| l == label).then_some(name)
}

/// A reproduction's workload string split into its configuration label,
/// if it starts with one (`label:preset...`), and the rest.
fn split_label<'a>(w: &'a str, configs: &[Config]) -> (Option<&'a str>, &'a str) {
    match w.split_once(':') {
        Some((l, name)) if configs.iter().any(|c| c.label == l) => (Some(l), name),
        _ => (None, w),
    }
}

/// The reference a figure's direction is judged against: the neutral
/// value of a change or ratio (also of one workload's runs, or of the
/// runs of some thread counts), or the same metric's published figure in
/// the base (first) configuration.
fn reference(
    r: &Reproduction,
    p: &Published,
    all: &[Published],
    sets: &[RunSet],
) -> Option<Reference> {
    match p.metric.of_runs() {
        Metric::ScoreChangePct(_) => {
            return Some(Reference {
                published: 0.0,
                modeled: 0.0,
            })
        }
        Metric::RatioVs(..) => {
            return Some(Reference {
                published: 1.0,
                modeled: 1.0,
            })
        }
        _ => {}
    }
    let base = r.configs.first()?.label;
    if p.config == base {
        return None;
    }
    let q = all
        .iter()
        .find(|q| q.config == base && q.metric.name() == p.metric.name())?;
    let set = sets.iter().find(|s| s.name == base)?;
    Some(Reference {
        published: q.value?,
        modeled: q.metric.modeled(set, sets),
    })
}

/// Whether the runs behind figure `p` could model it, and if not, why
/// (the first run that could not). At `--scale` 1 every figure is
/// modeled: a run that never updated a PTE there is the model's answer,
/// judged like any other. Below 1, a figure is not modeled when a
/// configuration it reads (its own, the one it is a change or ratio
/// against, the base its direction is judged from) declares
/// [`Config::needs_scan`] and one of its runs (of the figure's workload)
/// never updated a PTE.
fn coverage(
    r: &Reproduction,
    p: &Published,
    sets: &[RunSet],
    scale: f64,
) -> (Coverage, Option<String>) {
    if scale >= 1.0 {
        return (Coverage::Modeled, None);
    }
    let mut read = vec![p.config];
    read.extend(p.metric.bases());
    if let Some(base) = r.configs.first() {
        if p.metric.bases().is_empty() && p.config != base.label {
            read.push(base.label);
        }
    }
    for label in read {
        let Some(c) = r.configs.iter().find(|c| c.label == label) else {
            continue;
        };
        let Some(set) = sets.iter().find(|s| s.name == label) else {
            continue;
        };
        if !c.needs_scan {
            continue;
        }
        let runs: Vec<&RunRecord> = set
            .runs
            .iter()
            .filter(|run| p.metric.workload().is_none_or(|w| workload_name(run) == w))
            .collect();
        let idle: Vec<&RunRecord> = runs
            .iter()
            .copied()
            .filter(|run| run.vm("numa_pte_updates") == 0)
            .collect();
        if let Some(first) = idle.first() {
            let whose = p
                .metric
                .workload()
                .map_or(String::new(), |w| format!(" of {w}"));
            let why = runner::balancing_never_acted(first)
                .unwrap_or_else(|| "NUMA balancing was off in it".to_string());
            return (
                Coverage::NoScan,
                Some(format!(
                    "not modeled at --scale {scale}: {} of {} run(s){whose} in {label} updated no PTE (numa_pte_updates 0): {why}",
                    idle.len(),
                    runs.len(),
                )),
            );
        }
    }
    (Coverage::Modeled, None)
}

/// The footnote number of `note` in `notes` (added when new): one
/// footnote per text, however many figures it explains.
fn footnote(notes: &mut Vec<String>, note: &str) -> usize {
    match notes.iter().position(|n| n == note) {
        Some(i) => i + 1,
        None => {
            notes.push(note.to_string());
            notes.len()
        }
    }
}

/// What [`modeled_vs_published`] gives: the table, the tally, the rows as
/// data and what `--check` fails on.
struct Judged {
    /// The table with its notes.
    table: String,
    /// The verdicts counted.
    tally: Tally,
    /// One row per figure.
    rows: Vec<FigureRow>,
    /// One line per figure `--check` fails on ([`Standing::failure`]).
    failures: Vec<String>,
}

/// Whether every configuration figure `p` reads (its own and those it is a
/// change or ratio against) has a run of the figure's workload: a figure
/// with none is absent, where a mean over no runs would read 0.
fn has_runs(p: &Published, sets: &[RunSet]) -> bool {
    std::iter::once(p.config)
        .chain(p.metric.bases())
        .all(|label| {
            sets.iter().find(|s| s.name == label).is_some_and(|s| {
                s.runs
                    .iter()
                    .any(|run| p.metric.workload().is_none_or(|w| workload_name(run) == w))
            })
        })
}

/// The modeled-vs-published table with its verdicts, the notes on known
/// misses, figures not modeled and tolerances, and the tally; the rows as
/// data; and the figures `--check` fails on ([`Standing`]).
fn modeled_vs_published(r: &Reproduction, sets: &[RunSet], scale: f64) -> Judged {
    let figures = &r.published;
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    let mut tally = Tally::default();
    let mut notes: Vec<String> = Vec::new();
    let mut out = format!(
        "{:<16} {:<46} {:>13} {:>13} {:>8} {:>6}  {}\n",
        "config", "metric", "published", "modeled", "ratio", "tol", "verdict"
    );
    for p in figures {
        let m = match sets.iter().find(|s| s.name == p.config) {
            Some(set) if has_runs(p, sets) => p.metric.modeled(set, sets),
            _ => f64::NAN,
        };
        let scale_free = scale >= 1.0 || (p.metric.is_scale_free() && p.full_scale_only.is_none());
        let (coverage, why) = coverage(r, p, sets, scale);
        let (mut was_judged, mut unexpected) = (false, false);
        let none = format!("{:>8}", "-");
        let (published, ratio, tol, verdict) = match (p.value, &p.tolerance) {
            (Some(v), Some(_)) if !scale_free => (
                format!("{v:>13.2}"),
                none,
                "-".to_string(),
                "not judged at --scale below 1".to_string(),
            ),
            (Some(v), Some(t)) => {
                let ratio = if v != 0.0 && coverage == Coverage::Modeled {
                    format!("{:>7.2}x", m / v)
                } else {
                    none
                };
                let verdict = judge(v, m, t, reference(r, p, figures, sets), coverage);
                let mut text = verdict.text();
                match verdict {
                    Verdict::NotModeled => tally.not_modeled += 1,
                    Verdict::Within => tally.within += 1,
                    Verdict::RightDirection(_) => tally.right_direction += 1,
                    Verdict::NoChange(_) => tally.no_change += 1,
                    Verdict::WrongDirection => tally.wrong_direction += 1,
                    Verdict::Off(_) | Verdict::NoFigure => tally.off += 1,
                }
                if let (Verdict::NotModeled, Some(why)) = (&verdict, &why) {
                    text.push_str(&format!(" [{}]", footnote(&mut notes, why)));
                } else {
                    tally.figures += 1;
                    was_judged = true;
                }
                let declared = p.known_miss.is_some();
                if let Some(standing) = Standing::of(&verdict, declared, scale) {
                    let note = match (standing, p.known_miss) {
                        (Standing::KnownMiss, Some(why)) => {
                            tally.known += 1;
                            Some(footnote(&mut notes, why))
                        }
                        _ => None,
                    };
                    let figure = format!("{}: {} {}", r.name, p.config, p.metric.name());
                    if let Some(f) = standing.failure(&figure, &text, declared) {
                        tally.unexpected += 1;
                        unexpected = true;
                        failures.push(f);
                    }
                    text.push_str(&standing.suffix(note));
                }
                let tol = if was_judged { t.label() } else { "-".into() };
                (format!("{v:>13.2}"), ratio, tol, text)
            }
            (v, _) => {
                let mut text = "model only".to_string();
                if let Some(why) = &why {
                    text.push_str(&format!(
                        "; not modeled at this scale [{}]",
                        footnote(&mut notes, why)
                    ));
                }
                (
                    v.map_or(format!("{:>13}", "-"), |v| format!("{v:>13.2}")),
                    none,
                    "-".to_string(),
                    text,
                )
            }
        };
        out.push_str(&format!(
            "{:<16} {:<46} {} {:>13.3} {} {:>6}  {}\n",
            p.config,
            p.metric.name(),
            published,
            m,
            ratio,
            tol,
            verdict
        ));
        rows.push(FigureRow {
            config: p.config.to_string(),
            metric: p.metric.name(),
            published: p.value,
            modeled: m,
            tolerance: was_judged.then(|| tol.clone()),
            verdict,
            judged: was_judged,
            unexpected,
        });
    }
    for (i, n) in notes.iter().enumerate() {
        out.push_str(&format!("[{}] {n}\n", i + 1));
    }
    let mut reasons: Vec<String> = Vec::new();
    for t in figures.iter().filter_map(|p| p.tolerance) {
        let line = format!("{}: {}", t.label(), t.reason());
        if !reasons.contains(&line) {
            reasons.push(line);
        }
    }
    if !reasons.is_empty() {
        out.push_str(&format!("tolerances: {}\n", reasons.join("; ")));
    }
    if scale < 1.0 {
        out.push_str(&format!(
            "(modeled at --scale {scale}: sizes and passes shrink, so absolute figures are not judged; shares and ratios between configurations are, unless a run they read was over before NUMA balancing acted)\n"
        ));
    }
    Judged {
        table: out,
        tally,
        rows,
        failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every published value is judged with a tolerance that says why, and
    /// every known miss points at a section of docs/reproductions.md that
    /// exists.
    #[test]
    fn published_figures_carry_tolerances_and_documented_misses() {
        let doc = include_str!("../../../docs/reproductions.md");
        let anchors: Vec<String> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("## "))
            .map(|h| h.trim().to_lowercase().replace(' ', "-"))
            .collect();
        for r in all() {
            assert!(
                anchors.iter().any(|a| a == r.name),
                "docs/reproductions.md has no section for {}",
                r.name
            );
            for p in &r.published {
                assert!(r.configs.iter().any(|c| c.label == p.config), "{}", r.name);
                if p.value.is_some() {
                    let t = p.tolerance.expect("published value without tolerance");
                    assert!(!t.reason().is_empty());
                }
                if let Some(why) = p.known_miss {
                    let (_, anchor) = why
                        .split_once("docs/reproductions.md#")
                        .expect("a known miss cites docs/reproductions.md#section");
                    let anchor: String = anchor
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '-')
                        .collect();
                    assert!(anchors.contains(&anchor), "no section #{anchor}");
                }
            }
        }
    }

    #[test]
    fn scale_free_figures_are_shares_and_ratios() {
        assert!(Metric::LabPct(numalab_record::lab::CPU_BUSY_SHARE).is_scale_free());
        assert!(Metric::RatioVs("a", &Metric::Elapsed).is_scale_free());
        assert!(!Metric::Elapsed.is_scale_free());
        assert!(!Metric::MemoryStat("/", "numa_hint_faults").is_scale_free());
    }
}

#[cfg(test)]
mod for_config_tests {
    use super::*;

    #[test]
    fn a_prefix_is_a_label_only_when_it_names_a_configuration() {
        let configs = [
            Config {
                label: "plain",
                sets: &[],
                needs_scan: false,
            },
            Config {
                label: "flagged",
                sets: &[],
                needs_scan: false,
            },
        ];
        assert_eq!(for_config("plain:a", "plain", &configs), Some("a"));
        assert_eq!(for_config("plain:a", "flagged", &configs), None);
        assert_eq!(for_config("numa01", "flagged", &configs), Some("numa01"));
        // A preset with parameters runs under every configuration.
        assert_eq!(
            for_config("specjbb:warehouses=6", "flagged", &configs),
            Some("specjbb:warehouses=6")
        );
    }
}

#[cfg(test)]
#[path = "reproduce_table_tests.rs"]
mod table_tests;
