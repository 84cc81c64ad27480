//! What a reproduction declares: its machine, workloads and
//! configurations, and the figures its posting published, each with the
//! metric that reads it from the modeled runs and the tolerance it is
//! judged with. The declarations themselves are in the reproduce_*.rs
//! files (one per proposal) and reproduce_mainline.rs; reproductions.rs
//! lists them; reproduce.rs runs and judges them. Left out: judging
//! (verdict.rs).

use crate::verdict::Tolerance;
use numalab_record::{LabFigure, RunRecord, RunSet};

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
            Metric::OfWorkload(_, m) => m.is_scale_free(),
            _ => false,
        }
    }

    /// The configurations the figure is a change or ratio against.
    pub(crate) fn bases(&self) -> Vec<&'static str> {
        match self {
            Metric::ScoreChangePct(b) => vec![b],
            Metric::RatioVs(b, m) => std::iter::once(*b).chain(m.bases()).collect(),
            Metric::OfWorkload(_, m) => m.bases(),
            _ => Vec::new(),
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
            | Metric::OfWorkload(..) => None,
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
                let only = |s: &RunSet| {
                    let runs = s.runs.iter().filter(|r| workload_name(r) == *w);
                    RunSet::new(s.name.clone(), runs.cloned().collect())
                };
                let all: Vec<RunSet> = sets.iter().map(only).collect();
                m.modeled(&only(set), &all)
            }
            m => mean(set.runs.iter().filter_map(|r| m.of(r))),
        }
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
    /// A miss the model is known to make: the mechanism behind it and
    /// where it is documented. `--check` does not fail on it.
    pub known_miss: Option<&'static str>,
}

impl Published {
    /// A published figure judged with `tolerance`.
    pub fn figure(
        config: &'static str,
        metric: Metric,
        value: f64,
        tolerance: Tolerance,
    ) -> Published {
        Published {
            config,
            metric,
            value: Some(value),
            tolerance: Some(tolerance),
            known_miss: None,
        }
    }

    /// A figure the model gives and the posting did not publish.
    pub fn model_only(config: &'static str, metric: Metric) -> Published {
        Published {
            config,
            metric,
            value: None,
            tolerance: None,
            known_miss: None,
        }
    }

    /// Declares that the model misses this figure, with the mechanism
    /// behind the miss and where it is documented.
    pub fn known_miss(mut self, why: &'static str) -> Published {
        self.known_miss = Some(why);
        self
    }
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
    /// Published numbers.
    pub published: fn() -> Vec<Published>,
    /// A cgroup whose access-latency histogram (the first run's of each
    /// configuration) is printed after the tables, for a posting that
    /// published latencies.
    pub latency_cgroup: Option<&'static str>,
}

/// Two postings of NUMA01_THREADLOCAL on the same 4-node machine gave
/// 114 s and 127.1 s with balancing on: 11 % apart.
pub const SAME_MACHINE_SPREAD: Tolerance = Tolerance::Rel(
    0.1,
    "two postings of the same benchmark on the same machine differ by 11 % (114 s vs 127.1 s)",
);

/// A counter of one run: the posting gives no spread, and scan-driven
/// counters move with scan timing.
pub const ONE_RUN_COUNTER: Tolerance = Tolerance::Rel(
    0.25,
    "a counter of one run, no spread published; scan-driven counters move with scan timing",
);

/// A count of a few hundred events or less in one run.
pub const FEW_EVENTS: Tolerance = Tolerance::Rel(
    0.5,
    "a few hundred task moves in one run: each is one placement decision",
);

/// A figure the posting gives as "about".
pub const APPROXIMATE: Tolerance =
    Tolerance::Rel(0.15, "published as an approximate figure (\"~16300 s\")");

/// The mean of `xs` (0 for none).
fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}
