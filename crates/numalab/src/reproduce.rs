//! `numalab reproduce NAME`: the published experiments of the five
//! proposals as named scenarios.
//!
//! A reproduction names its machine, its workloads, the configurations it
//! compares (each a list of knobs), and the numbers its posting published.
//! Running it runs every configuration, prints the mmtests compare table of
//! the modeled runs, then each published figure beside the modeled one with
//! the ratio. Published numbers are only ever printed beside the model's:
//! nothing in the model reads them.

use crate::runner;
use numalab_record::{RunRecord, RunSet};

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
    LabPct(&'static str),
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
    fn name(&self) -> String {
        match self {
            Metric::Elapsed => "elapsed (s)".into(),
            Metric::User => "user (s)".into(),
            Metric::Sys => "system (s)".into(),
            Metric::Score => "score".into(),
            Metric::LabPct(k) => format!("{k} (%)"),
            Metric::ScoreChangePct(base) => format!("score change vs {base} (%)"),
            Metric::CgroupElapsed(cg) => format!("{cg} elapsed (s)"),
            Metric::MemoryStat(cg, item) => format!("{cg} {item}"),
            Metric::StatRatio(cg, a, b) => format!("{cg} {a} / {b}"),
            Metric::RatioVs(base, m) => format!("{} / {base}'s", m.name()),
            Metric::Vmstat(item) => item.to_string(),
            Metric::PeakScore => "peak score".into(),
            Metric::OfWorkload(w, m) => format!("{w}: {}", m.name()),
        }
    }

    /// The figure of one run; None for figures that compare configurations.
    fn of(&self, r: &RunRecord) -> Option<f64> {
        match self {
            Metric::Elapsed => Some(r.elapsed_s),
            Metric::User => Some(r.user_s),
            Metric::Sys => Some(r.sys_s),
            Metric::Score => Some(r.score.as_ref().map_or(f64::NAN, |s| s.value)),
            Metric::LabPct(k) => Some(r.lab.get(*k).map_or(f64::NAN, |v| v * 100.0)),
            Metric::CgroupElapsed(cg) => Some(
                r.processes
                    .iter()
                    .filter(|p| p.cgroup == *cg || p.cgroup.starts_with(&format!("{cg}/")))
                    .map(|p| p.elapsed_s)
                    .fold(f64::NAN, f64::max),
            ),
            Metric::MemoryStat(cg, item) => Some(stat(r, cg, item)),
            Metric::StatRatio(cg, a, b) => Some(stat(r, cg, a) / stat(r, cg, b)),
            Metric::Vmstat(item) => Some(r.vmstat.get(*item).map_or(f64::NAN, |&v| v as f64)),
            Metric::ScoreChangePct(_)
            | Metric::RatioVs(..)
            | Metric::PeakScore
            | Metric::OfWorkload(..) => None,
        }
    }

    /// The modeled figure of configuration `set` (means over its runs).
    fn modeled(&self, set: &RunSet, sets: &[RunSet]) -> f64 {
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

/// The name of the workload run `r` ran (its spec's `name`).
fn workload_name(r: &RunRecord) -> &str {
    r.workload
        .get("name")
        .and_then(|v| v.as_str())
        .unwrap_or("")
}

/// Counter `item` of cgroup `cg`'s memory.stat in run `r` (NaN if absent).
fn stat(r: &RunRecord, cg: &str, item: &str) -> f64 {
    r.cgroups
        .get(cg)
        .and_then(|c| c.memory_stat.get(item))
        .map_or(f64::NAN, |&v| v as f64)
}

/// One published figure: configuration label, metric, value; or a
/// modeled figure the posting did not publish (`value` None), printed
/// beside the others.
#[derive(Clone, Debug)]
pub struct Published {
    /// Configuration it belongs to.
    pub config: &'static str,
    /// What was measured.
    pub metric: Metric,
    /// The published value; None for a figure only the model gives.
    pub value: Option<f64>,
}

/// A configuration: a label and its knobs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Column label.
    pub label: &'static str,
    /// `--set` values.
    pub sets: &'static [&'static str],
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
    /// Workload presets.
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
}

/// All reproductions.
pub fn all() -> Vec<Reproduction> {
    vec![
        numa_balancing_threadlocal(),
        numa_balance_serialize(),
        crate::reproduce_cgroup::per_cgroup_numa_balancing(),
        crate::reproduce_cgroup::per_cgroup_mixed(),
        crate::reproduce_sched::sched_numa_integration(),
        crate::reproduce_sched::mainline_ablation(),
    ]
}

/// Proposal 4's baseline: NUMA balancing off vs on.
fn numa_balancing_threadlocal() -> Reproduction {
    Reproduction {
        name: "numa-balancing-threadlocal",
        description: "NUMA01_THREADLOCAL on 4 nodes x 80 CPUs, NUMA balancing off vs on (proposal 4's baseline numbers)",
        source: "mission.md §4: Sapphire Rapids, 4 nodes, NUMA01_THREADLOCAL: elapsed 3:33 -> 1:54, user 29360 s -> 7590 s, system ~16300 s both ways; earlier version on 4 nodes x 80 CPUs: 212.9 s vs 127.1 s",
        machine: "spr-4n",
        workloads: &["numa01-threadlocal"],
        cgroup: None,
        iterations: 1,
        configs: &[
            Config {
                label: "balancing-off",
                sets: &["kernel.numa_balancing=0"],
            },
            Config {
                label: "balancing-on",
                sets: &["kernel.numa_balancing=1"],
            },
        ],
        published: || {
            vec![
                Published {
                    config: "balancing-off",
                    metric: Metric::Elapsed,
                    value: Some(213.0),
                },
                Published {
                    config: "balancing-on",
                    metric: Metric::Elapsed,
                    value: Some(114.0),
                },
                Published {
                    config: "balancing-off",
                    metric: Metric::User,
                    value: Some(29360.0),
                },
                Published {
                    config: "balancing-on",
                    metric: Metric::User,
                    value: Some(7590.0),
                },
                Published {
                    config: "balancing-off",
                    metric: Metric::Sys,
                    value: Some(16300.0),
                },
                Published {
                    config: "balancing-on",
                    metric: Metric::Sys,
                    value: Some(16300.0),
                },
            ]
        },
    }
}

/// Proposal 5: NUMA-domain load-balance serialization (Tim Chen, 2025).
fn numa_balance_serialize() -> Reproduction {
    Reproduction {
        name: "numa-balance-serialize",
        description: "OLTP-like service on 2-socket Granite Rapids SNC3: sched_balance_running taken before the due/designated checks (legacy) vs after them (fixed)",
        source: "mission.md §5 (Tim Chen, \"sched/fair: Skip sched_balance_running cmpxchg when balance is not due\", tip 2265c5d4, 6.19): 2-socket GNR with SNC, OLTP: 7.8% of all CPU cycles contending on sched_balance_running before; after, gone from the profile and +5% throughput",
        machine: "gnr-2s-snc3",
        workloads: &["oltp"],
        cgroup: None,
        iterations: 1,
        configs: &[
            Config {
                label: "legacy",
                sets: &["numalab.sched_balance_serialize=legacy"],
            },
            Config {
                label: "fixed",
                sets: &["numalab.sched_balance_serialize=fixed"],
            },
        ],
        published: || {
            let share = "sched_balance_running_contention_share";
            vec![
                Published {
                    config: "legacy",
                    metric: Metric::LabPct(share),
                    value: Some(7.8),
                },
                Published {
                    config: "fixed",
                    metric: Metric::LabPct(share),
                    value: Some(0.0),
                },
                Published {
                    config: "fixed",
                    metric: Metric::ScoreChangePct("legacy"),
                    value: Some(5.0),
                },
            ]
        },
    }
}

/// Runs reproduction `name` and prints its tables.
pub fn reproduce(
    name: &str,
    scale: f64,
    iterations: Option<u32>,
    seed: u64,
    json_dir: Option<&str>,
) -> Result<(), String> {
    let r = all().into_iter().find(|r| r.name == name).ok_or_else(|| {
        format!(
            "unknown reproduction '{name}' (see `numalab list reproductions`: {})",
            all().iter().map(|r| r.name).collect::<Vec<_>>().join(", ")
        )
    })?;
    let iterations = iterations.unwrap_or(r.iterations);
    if iterations == 0 {
        return Err("--iterations must be at least 1".into());
    }
    let m = runner::load_machine(r.machine)?;
    crate::out::print(&format!(
        "reproduction {}: {}\npublished: {}\nmachine {}, scale {scale}, {iterations} iteration(s) from seed {seed}\n\n",
        r.name, r.description, r.source, m.name
    ))?;
    let mut sets = Vec::new();
    for c in r.configs {
        let knobs = runner::knobs(c.sets)?;
        let mut runs = Vec::new();
        for w in r.workloads {
            for i in 0..iterations {
                let (rec, _) = runner::run_model_in(
                    &m,
                    w,
                    r.cgroup,
                    &knobs,
                    seed.wrapping_add(u64::from(i)),
                    scale,
                    false,
                    true,
                )?;
                runs.push(rec);
            }
        }
        let set = RunSet::new(c.label, runs);
        if let Some(dir) = json_dir {
            std::fs::create_dir_all(dir).map_err(|e| format!("--json-dir {dir}: {e}"))?;
            let path = format!("{dir}/{}.json", c.label);
            crate::out::write_file("", std::path::Path::new(&path), &set.to_json())?;
        }
        sets.push(set);
    }
    crate::out::print(&format!(
        "{}\n{}\n",
        numalab_report::compare_table(&sets),
        modeled_vs_published(&r, &sets, scale)
    ))
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The modeled-vs-published table.
fn modeled_vs_published(r: &Reproduction, sets: &[RunSet], scale: f64) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:<16} {:<50} {:>14} {:>14} {:>9}\n",
        "config", "metric", "published", "modeled", "ratio"
    ));
    for p in (r.published)() {
        let Some(set) = sets.iter().find(|s| s.name == p.config) else {
            continue;
        };
        let m = p.metric.modeled(set, sets);
        let (published, ratio) = match p.value {
            Some(v) if v != 0.0 => (format!("{v:>14.2}"), format!("{:>8.2}x", m / v)),
            Some(v) => (format!("{v:>14.2}"), format!("{:>9}", "-")),
            None => (format!("{:>14}", "-"), format!("{:>9}", "-")),
        };
        out.push_str(&format!(
            "{:<16} {:<50} {} {:>14.3} {}\n",
            p.config,
            p.metric.name(),
            published,
            m,
            ratio
        ));
    }
    if scale < 1.0 {
        out.push_str(&format!(
            "(modeled at --scale {scale}: sizes and passes shrink, so absolute figures are not comparable; ratios between configurations are)\n"
        ));
    }
    out
}
