//! What a reproduction declares: its machine, workloads and
//! configurations, and the figures its posting published, each with the
//! metric that reads it from the modeled runs and the tolerance it is
//! judged with. The declarations themselves are data, one TOML file per
//! proposal in `crates/numalab/reproductions/`; reproductions.rs reads
//! them into these types ([`Metric::parse`] reads a metric's expression);
//! reproduce.rs runs and judges them. Left out: judging (verdict.rs).

use crate::verdict::Tolerance;
use numalab_record::{lab, LabFigure, RunRecord, RunSet};

/// A figure a posting published.
#[derive(Clone, Debug)]
pub enum Metric {
    /// Wall-clock seconds (mean over iterations).
    Elapsed,
    /// User CPU seconds.
    User,
    /// System CPU seconds.
    Sys,
    /// The workload's score (e.g. throughput in requests/s).
    Score,
    /// A figure of the Run record's `lab` map that is a share (0-1),
    /// printed in percent.
    LabPct(LabFigure),
    /// Change of the mean score against configuration `base`, in percent.
    ScoreChangePct(&'static str),
    /// Seconds until the last process of a cgroup (the path, or a cgroup
    /// below it) exited.
    CgroupElapsed(&'static str),
    /// A cgroup's memory.stat counter (hierarchical, as the kernel's).
    MemoryStat(&'static str, &'static str),
    /// One memory.stat counter of a cgroup over another of the same.
    StatRatio(&'static str, &'static str, &'static str),
    /// The mean of a metric over its mean in configuration `base`.
    RatioVs(&'static str, &'static Metric),
    /// The mean over the run's samples of a time-series column that is a
    /// share (0-1), printed in percent (e.g. `local_bytes_share`).
    SeriesMeanPct(&'static str),
    /// A figure of the Run record's `lab` map as it is (proposal 2).
    Lab(LabFigure),
    /// A cgroup's user CPU seconds (hierarchical).
    CgroupUser(&'static str),
    /// A cgroup's system CPU seconds (hierarchical).
    CgroupSys(&'static str),
    /// A counter of the Run record's vmstat.
    Vmstat(&'static str),
    /// The best score of a configuration's runs (SPECjbb's peak bops over
    /// a warehouse sweep).
    PeakScore,
    /// A metric over only the runs of workload `name` (in every
    /// configuration), for reproductions that run several workloads.
    OfWorkload(&'static str, &'static Metric),
    /// A metric over only the runs in which every process with threads
    /// named `name` (`name` or `name.K`) has between `lo` and `hi` of them
    /// (in every configuration): a sweep's points by their thread count,
    /// as SPECjbb2005's score reads its warehouse counts from the expected
    /// peak to twice it.
    OfThreads(&'static str, u32, u32, &'static Metric),
    /// The total of a metric over a sweep of `points` points, estimated
    /// from the points that ran: `points` times the mean over the runs
    /// (a posting's sweep totals when the model samples the sweep).
    SweepTotal(u32, &'static Metric),
    /// A counter that accumulates over `runs` runs and was read once after
    /// them (a cgroup's memory.stat counts from the cgroup's creation, so a
    /// posting that ran its benchmark N times in one cgroup and then read
    /// memory.stat published the N runs' total): `runs` times the mean over
    /// the runs that ran, so the figure keeps its meaning under
    /// `--iterations`.
    RunsTotal(u32, &'static Metric),
}

impl Metric {
    pub(crate) fn name(&self) -> String {
        match self {
            Metric::Elapsed => "elapsed (s)".into(),
            Metric::User => "user (s)".into(),
            Metric::Sys => "system (s)".into(),
            Metric::Score => "score".into(),
            Metric::LabPct(k) => format!("{} (%)", k.key),
            Metric::ScoreChangePct(base) => format!("score change vs {base} (%)"),
            Metric::CgroupElapsed(cg) => format!("{cg} elapsed (s)"),
            Metric::MemoryStat(cg, item) => format!("{cg} {item}"),
            Metric::StatRatio(cg, a, b) => format!("{cg} {a} / {b}"),
            Metric::RatioVs(base, m) => format!("{} / {base}'s", m.name()),
            Metric::Vmstat(item) => item.to_string(),
            Metric::PeakScore => "peak score".into(),
            Metric::OfWorkload(w, m) => format!("{w}: {}", m.name()),
            Metric::OfThreads(t, lo, hi, m) => format!("{} at {lo}-{hi} {t}s", m.name()),
            Metric::SweepTotal(n, m) => format!("{} over {n} points", m.name()),
            Metric::RunsTotal(n, m) => format!("{}, total of {n} runs", m.name()),
            Metric::Lab(k) => k.key.to_string(),
            Metric::CgroupUser(cg) => format!("{cg} user (s)"),
            Metric::CgroupSys(cg) => format!("{cg} system (s)"),
            Metric::SeriesMeanPct(col) => format!("{col}, mean of samples (%)"),
        }
    }

    /// Whether the figure keeps its meaning at `--scale` below 1: shares
    /// and ratios do (also of one workload's runs), absolute times and
    /// counts shrink with the run.
    pub(crate) fn is_scale_free(&self) -> bool {
        match self {
            Metric::LabPct(_) | Metric::ScoreChangePct(_) | Metric::StatRatio(..) => true,
            Metric::RatioVs(_, m) => !matches!(m, Metric::RatioVs(..)),
            Metric::OfWorkload(_, m) | Metric::OfThreads(.., m) => m.is_scale_free(),
            _ => false,
        }
    }

    /// The configurations the figure is a change or ratio against.
    pub(crate) fn bases(&self) -> Vec<&'static str> {
        match self {
            Metric::ScoreChangePct(b) => vec![b],
            Metric::RatioVs(b, m) => std::iter::once(*b).chain(m.bases()).collect(),
            Metric::OfWorkload(_, m)
            | Metric::OfThreads(.., m)
            | Metric::SweepTotal(_, m)
            | Metric::RunsTotal(_, m) => m.bases(),
            _ => Vec::new(),
        }
    }

    /// The metric a selection of runs (`of_workload`, `of_threads`) reads
    /// from them: what the figure is, a change or a ratio, whichever runs
    /// it is of.
    pub(crate) fn of_runs(&self) -> &Metric {
        match self {
            Metric::OfWorkload(_, m) | Metric::OfThreads(.., m) => m.of_runs(),
            m => m,
        }
    }

    /// The workload whose runs alone the figure reads, if one.
    pub(crate) fn workload(&self) -> Option<&'static str> {
        match self {
            Metric::OfWorkload(w, _) => Some(w),
            _ => None,
        }
    }

    /// The figure of one run; None for figures that compare configurations.
    fn of(&self, r: &RunRecord) -> Option<f64> {
        match self {
            Metric::Elapsed => Some(r.elapsed_s),
            Metric::User => Some(r.user_s),
            Metric::Sys => Some(r.sys_s),
            Metric::Score => Some(r.score.as_ref().map_or(f64::NAN, |s| s.value)),
            Metric::LabPct(k) => Some(r.lab.get(k).map_or(f64::NAN, |v| v * 100.0)),
            Metric::CgroupElapsed(cg) => Some(
                r.processes
                    .iter()
                    .filter(|p| p.cgroup == *cg || p.cgroup.starts_with(&format!("{cg}/")))
                    .map(|p| p.elapsed_s)
                    .fold(f64::NAN, f64::max),
            ),
            Metric::MemoryStat(cg, item) => Some(stat(r, cg, item)),
            Metric::StatRatio(cg, a, b) => Some(stat(r, cg, a) / stat(r, cg, b)),
            Metric::SeriesMeanPct(col) => Some(series_mean(r, col) * 100.0),
            Metric::Lab(k) => Some(r.lab.get(k).unwrap_or(f64::NAN)),
            Metric::CgroupUser(cg) => Some(r.cgroups.get(*cg).map_or(f64::NAN, |c| c.user_s)),
            Metric::CgroupSys(cg) => Some(r.cgroups.get(*cg).map_or(f64::NAN, |c| c.sys_s)),
            Metric::Vmstat(item) => Some(r.vmstat.get(*item).map_or(f64::NAN, |&v| v as f64)),
            Metric::ScoreChangePct(_)
            | Metric::RatioVs(..)
            | Metric::PeakScore
            | Metric::OfWorkload(..)
            | Metric::OfThreads(..)
            | Metric::SweepTotal(..)
            | Metric::RunsTotal(..) => None,
        }
    }

    /// The modeled figure of configuration `set` (means over its runs).
    pub(crate) fn modeled(&self, set: &RunSet, sets: &[RunSet]) -> f64 {
        match self {
            Metric::ScoreChangePct(base) => {
                let Some(b) = sets.iter().find(|s| s.name == *base) else {
                    return f64::NAN;
                };
                let score = |s: &RunSet| mean(s.runs.iter().filter_map(|r| Metric::Score.of(r)));
                (score(set) / score(b) - 1.0) * 100.0
            }
            Metric::RatioVs(base, m) => {
                let Some(b) = sets.iter().find(|s| s.name == *base) else {
                    return f64::NAN;
                };
                m.modeled(set, sets) / m.modeled(b, sets)
            }
            Metric::PeakScore => set
                .runs
                .iter()
                .filter_map(|r| Metric::Score.of(r))
                .fold(f64::NAN, f64::max),
            Metric::OfWorkload(w, m) => {
                m.of_selected(set, sets, |r: &RunRecord| workload_name(r) == *w)
            }
            Metric::OfThreads(t, lo, hi, m) => m.of_selected(set, sets, |r: &RunRecord| {
                let per = threads_per_process(r, t);
                !per.is_empty() && per.iter().all(|n| (*lo..=*hi).contains(n))
            }),
            Metric::SweepTotal(n, m) | Metric::RunsTotal(n, m) => {
                f64::from(*n) * m.modeled(set, sets)
            }
            m => mean(set.runs.iter().filter_map(|r| m.of(r))),
        }
    }
}

impl Metric {
    /// This metric over only the runs `keep` accepts, in `set` and in
    /// every configuration it may compare with.
    fn of_selected(&self, set: &RunSet, sets: &[RunSet], keep: impl Fn(&RunRecord) -> bool) -> f64 {
        let only = |s: &RunSet| {
            RunSet::new(
                s.name.clone(),
                s.runs.iter().filter(|r| keep(r)).cloned().collect(),
            )
        };
        let all: Vec<RunSet> = sets.iter().map(only).collect();
        self.modeled(&only(set), &all)
    }
}

/// One term of a metric expression: a bare word or a call with its
/// arguments.
enum Term<'a> {
    /// A word (`elapsed`, a configuration label, a cgroup path, a key).
    Word(&'a str),
    /// `name(arg, ...)`.
    Call(&'a str, Vec<Term<'a>>),
}

/// Reads one term of `s` from its start; returns it and the rest.
fn term(s: &str) -> Result<(Term<'_>, &str), String> {
    let s = s.trim_start();
    let end = s.find(['(', ')', ',']).unwrap_or(s.len());
    let word = s[..end].trim();
    if word.is_empty() {
        return Err(format!("expected a name at '{s}'"));
    }
    let rest = &s[end..];
    let Some(mut rest) = rest.strip_prefix('(') else {
        return Ok((Term::Word(word), rest));
    };
    let mut args = Vec::new();
    loop {
        let (t, r) = term(rest)?;
        args.push(t);
        let r = r.trim_start();
        if let Some(r) = r.strip_prefix(',') {
            rest = r;
        } else if let Some(r) = r.strip_prefix(')') {
            return Ok((Term::Call(word, args), r));
        } else {
            return Err(format!("expected ',' or ')' at '{r}'"));
        }
    }
}

/// The words of a call's arguments, exactly `n` of them.
fn words<'a>(name: &str, args: &[Term<'a>], n: usize) -> Result<Vec<&'a str>, String> {
    let w: Vec<&str> = args
        .iter()
        .filter_map(|a| match a {
            Term::Word(w) => Some(*w),
            Term::Call(..) => None,
        })
        .collect();
    if w.len() != n || args.len() != n {
        return Err(format!("{name}() takes {n} name(s)"));
    }
    Ok(w)
}

/// A string of the declarations, kept for the life of the process: the
/// declarations are read once ([`crate::reproductions::all`]) and hold
/// `'static` strings like the figures they replaced.
fn keep(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

impl Metric {
    /// Reads a metric expression, as a reproduction file writes it:
    /// `elapsed`, `user`, `sys`, `score`, `peak_score`, `lab(KEY)`,
    /// `lab_pct(KEY)` (KEY a declared lab figure,
    /// [`numalab_record::lab`]), `score_change_pct(BASE)`,
    /// `cgroup_elapsed(CG)`, `cgroup_user(CG)`, `cgroup_sys(CG)`,
    /// `memory_stat(CG, ITEM)`, `stat_ratio(CG, A, B)`, `vmstat(ITEM)`,
    /// `series_mean_pct(COLUMN)`, `ratio_vs(BASE, METRIC)`,
    /// `of_workload(WORKLOAD, METRIC)`, `of_threads(THREAD, LO, HI,
    /// METRIC)`, `sweep_total(POINTS, METRIC)`, `runs_total(RUNS, METRIC)`.
    pub fn parse(expr: &str) -> Result<Metric, String> {
        let (t, rest) = term(expr).map_err(|e| format!("metric '{expr}': {e}"))?;
        if !rest.trim().is_empty() {
            return Err(format!("metric '{expr}': unexpected '{}'", rest.trim()));
        }
        Metric::of_term(&t).map_err(|e| format!("metric '{expr}': {e}"))
    }

    fn of_term(t: &Term) -> Result<Metric, String> {
        let (name, args) = match t {
            Term::Word(w) => (*w, &[][..]),
            Term::Call(n, a) => (*n, &a[..]),
        };
        let lab_figure = |key: &str| {
            lab::ALL
                .iter()
                .find(|f| f.key == key)
                .copied()
                .ok_or_else(|| format!("'{key}' is not a declared lab figure"))
        };
        // The inner metric of ratio_vs and of_workload.
        let nested = |args: &[Term]| -> Result<(&'static str, &'static Metric), String> {
            match args {
                [Term::Word(w), m] => Ok((keep(w), Box::leak(Box::new(Metric::of_term(m)?)))),
                _ => Err(format!("{name}() takes a name and a metric")),
            }
        };
        let m = match name {
            "elapsed" | "user" | "sys" | "score" | "peak_score" if !args.is_empty() => {
                return Err(format!("{name} takes no arguments"))
            }
            "elapsed" => Metric::Elapsed,
            "user" => Metric::User,
            "sys" => Metric::Sys,
            "score" => Metric::Score,
            "peak_score" => Metric::PeakScore,
            "lab" => Metric::Lab(lab_figure(words(name, args, 1)?[0])?),
            "lab_pct" => Metric::LabPct(lab_figure(words(name, args, 1)?[0])?),
            "score_change_pct" => Metric::ScoreChangePct(keep(words(name, args, 1)?[0])),
            "cgroup_elapsed" => Metric::CgroupElapsed(keep(words(name, args, 1)?[0])),
            "cgroup_user" => Metric::CgroupUser(keep(words(name, args, 1)?[0])),
            "cgroup_sys" => Metric::CgroupSys(keep(words(name, args, 1)?[0])),
            "vmstat" => Metric::Vmstat(keep(words(name, args, 1)?[0])),
            "series_mean_pct" => Metric::SeriesMeanPct(keep(words(name, args, 1)?[0])),
            "memory_stat" => {
                let w = words(name, args, 2)?;
                Metric::MemoryStat(keep(w[0]), keep(w[1]))
            }
            "stat_ratio" => {
                let w = words(name, args, 3)?;
                Metric::StatRatio(keep(w[0]), keep(w[1]), keep(w[2]))
            }
            "ratio_vs" => {
                let (base, m) = nested(args)?;
                Metric::RatioVs(base, m)
            }
            "of_workload" => {
                let (w, m) = nested(args)?;
                Metric::OfWorkload(w, m)
            }
            "of_threads" => match args {
                [Term::Word(t), Term::Word(lo), Term::Word(hi), m] => {
                    let count = |x: &str| {
                        x.parse::<u32>()
                            .map_err(|_| format!("of_threads() takes thread counts, not '{x}'"))
                    };
                    let (lo, hi) = (count(lo)?, count(hi)?);
                    if lo > hi {
                        return Err(format!("of_threads() takes LO <= HI, not {lo} > {hi}"));
                    }
                    Metric::OfThreads(keep(t), lo, hi, Box::leak(Box::new(Metric::of_term(m)?)))
                }
                _ => return Err("of_threads() takes a thread name, LO, HI and a metric".into()),
            },
            "sweep_total" | "runs_total" => {
                let (n, m) = nested(args)?;
                let count = n.parse::<u32>().ok().filter(|&p| p > 0).ok_or_else(|| {
                    let what = if name == "sweep_total" {
                        "point"
                    } else {
                        "run"
                    };
                    format!("{name}() takes a {what} count above 0, not '{n}'")
                })?;
                if name == "sweep_total" {
                    Metric::SweepTotal(count, m)
                } else {
                    Metric::RunsTotal(count, m)
                }
            }
            other => return Err(format!("unknown metric '{other}'")),
        };
        Ok(m)
    }
}

/// The mean of time-series column `col` over run `r`'s samples (NaN
/// without a series or the column).
fn series_mean(r: &RunRecord, col: &str) -> f64 {
    let Some(ts) = &r.timeseries else {
        return f64::NAN;
    };
    let Some(i) = ts.columns.iter().position(|c| c == col) else {
        return f64::NAN;
    };
    let v: Vec<f64> = ts
        .rows
        .iter()
        .filter_map(|row| row.get(i).copied())
        .collect();
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The name of the workload run `r` ran (its spec's `name`).
pub(crate) fn workload_name(r: &RunRecord) -> &str {
    r.workload_name().unwrap_or("")
}

/// How many threads named `name` (`PROCESS/name` or `PROCESS/name.K`)
/// each process of run `r` has, for the processes that have any.
fn threads_per_process(r: &RunRecord, name: &str) -> Vec<u32> {
    let mut per: std::collections::BTreeMap<u64, u32> = Default::default();
    for t in &r.tasks {
        let Some((_, thread)) = numalab_record::column::split_task_name(&t.name) else {
            continue;
        };
        let base = thread.split_once('.').map_or(thread, |(b, _)| b);
        if base == name {
            *per.entry(t.tgid).or_default() += 1;
        }
    }
    per.into_values().collect()
}

/// Counter `item` of cgroup `cg`'s memory.stat in run `r` (NaN if absent).
fn stat(r: &RunRecord, cg: &str, item: &str) -> f64 {
    r.cgroups
        .get(cg)
        .and_then(|c| c.memory_stat.get(item))
        .map_or(f64::NAN, |&v| v as f64)
}

/// One published figure: configuration label, metric, value, the
/// tolerance it is judged with; or a modeled figure the posting did not
/// publish (`value` None), printed beside the others.
#[derive(Clone, Debug)]
pub struct Published {
    /// Configuration it belongs to.
    pub config: &'static str,
    /// What was measured.
    pub metric: Metric,
    /// The published value; None for a figure only the model gives.
    pub value: Option<f64>,
    /// How close the model must come, and why (None for model-only
    /// figures).
    pub tolerance: Option<Tolerance>,
    /// A miss the model is known to make (at `--scale` 1): the mechanism
    /// behind it and where it is documented. `--check` does not fail on
    /// the miss, and fails when the figure holds at `--scale` 1
    /// ([`crate::reproduce_check::Standing`]).
    pub known_miss: Option<&'static str>,
    /// Why a scale-free figure (a share or ratio) is judged at `--scale` 1
    /// only: its mechanism needs the full run. None: judged at any scale.
    pub full_scale_only: Option<&'static str>,
}

/// A configuration: a label and its knobs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Column label.
    pub label: &'static str,
    /// `--set` values.
    pub sets: &'static [&'static str],
    /// Whether its figures measure NUMA balancing at work (it scanned in
    /// the posting's runs). At a `--scale` below 1, a run of it that never
    /// updated a PTE was over before balancing acted, so those figures are
    /// not modeled at that scale ([`Coverage::NoScan`]). False for a
    /// configuration that scans nothing by design (balancing off, a
    /// disabled cgroup, plain interleave) or whose figures are not about
    /// balancing.
    pub needs_scan: bool,
}

/// A published experiment.
#[derive(Clone, Debug)]
pub struct Reproduction {
    /// Name for `numalab reproduce`.
    pub name: &'static str,
    /// One line.
    pub description: &'static str,
    /// Where the published numbers come from.
    pub source: &'static str,
    /// Machine preset.
    pub machine: &'static str,
    /// Workload presets. `LABEL:WORKLOAD` runs WORKLOAD only under the
    /// configuration labelled LABEL (for comparisons whose configurations
    /// differ in the workload, e.g. a policy flag, not only in knobs).
    pub workloads: &'static [&'static str],
    /// A cgroup to run the workloads' root-cgroup processes in (created
    /// empty), as a posting that ran its benchmark in a cgroup did.
    pub cgroup: Option<&'static str>,
    /// Iterations (seeds) per configuration unless `--iterations` says.
    pub iterations: u32,
    /// Configurations, base first.
    pub configs: &'static [Config],
    /// Published numbers (and model-only figures), in table order.
    pub published: Vec<Published>,
    /// A cgroup whose access-latency histogram (the first run's of each
    /// configuration) is printed after the tables, for a posting that
    /// published latencies.
    pub latency_cgroup: Option<&'static str>,
}

/// The mean of `xs` (0 for none).
fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}
