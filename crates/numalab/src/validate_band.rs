//! The gate of `numalab validate --check --boots DIR`: the model against
//! the kernel's own spread, figure by figure.
//!
//! The kernel's records of a scenario come from several boots of the same
//! guest (saved in the repository, `crates/numalab/validate/kernel/GUEST/`,
//! as `NAME.bootN.kernel.json`), so the model is held to what the kernel
//! itself does from boot to boot: a figure's band is the kernel's
//! [min, max] over the boots widened 2x on each side (a ratio), or by 2 on
//! each side when the figure counts events and the kernel's largest count
//! is under 5 (small counts of task moves; a time is always a ratio).
//! The model is a spread too: its figure is the median of its runs at
//! several seeds ([`MODEL_SEEDS`] by default), so that one seed's outlying
//! run neither passes nor fails a figure. The figures are the ones issue
//! 30 names: the workload's NUMA counters, the task moves, swaps and sticks from the tracepoints,
//! migrations per thread, the time until every thread's memory is 90 %
//! local, and where each thread ends (the share of threads on the same
//! node as in a kernel boot, up to renaming nodes when nothing in the
//! scenario tells nodes apart), and the memory.stat NUMA counters of each
//! of the workload's own cgroups.
//!
//! A figure outside its band fails the gate unless it is declared in
//! `validate/kernel/known.toml` with the experiment that shows why (a
//! test or a section of docs/real.md); a declared figure that is back in
//! its band fails too, so the list only shrinks. Left out: figures the
//! kernel does not record (6.12 has no `numa_task_migrated` or
//! `numa_task_swapped`: shown as not recorded, never judged).

use crate::validate_shares::{first_local, local_shares, measured_threads, memcg};
use numalab_record::lab::TRACE;
use numalab_record::RunRecord;
use numalab_topology::Machine;
use numalab_workload::model::Workload;
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;

/// Counts below this (the kernel's largest) get an absolute band.
const SMALL_COUNT: f64 = 5.0;
/// The absolute widening of a small count's band.
const SMALL_SLACK: f64 = 2.0;
/// The ratio a band is widened by on each side.
const RATIO_SLACK: f64 = 2.0;
/// The share of threads that must end on the same node as in a kernel boot.
const SAME_NODE: f64 = 0.75;
/// How many model seeds the gate judges the median of, by default. One
/// run is not enough: over `validate --seed 1..8` guest-4n's gate had 47
/// to 53 figures within and guest-2n2c's 52 to 56, as wide a swing as a
/// mechanism's effect. Medians over 5 seeds still swung 49-54 between
/// windows of seeds (1-5 against 6-10, ...), over 11 seeds 49-51; over 21
/// the windows 1-21, 22-42 and 43-63 agree to a figure or two
/// (docs/real.md "The model's seeds"). Each seed is one more model run of
/// every scenario (about 0.3 s each on the guests' machines).
pub const MODEL_SEEDS: u32 = 21;

/// The kernel's band of a figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Band {
    /// Lowest value inside.
    pub lo: f64,
    /// Highest value inside.
    pub hi: f64,
}

impl Band {
    /// The band of the kernel's values over its boots (`None` without any);
    /// `count`: the figure counts events, so a small one gets the absolute
    /// slack (a time or a share is always widened by the ratio).
    pub fn of(kernel: &[f64], count: bool) -> Option<Band> {
        let lo = kernel.iter().copied().reduce(f64::min)?;
        let hi = kernel.iter().copied().reduce(f64::max)?;
        Some(if count && hi < SMALL_COUNT {
            Band {
                lo: (lo - SMALL_SLACK).max(0.0),
                hi: hi + SMALL_SLACK,
            }
        } else {
            Band {
                lo: lo / RATIO_SLACK,
                hi: hi * RATIO_SLACK,
            }
        })
    }

    /// Whether `v` is inside.
    pub fn contains(&self, v: f64) -> bool {
        v >= self.lo && v <= self.hi
    }
}

/// One figure of one record.
type Getter = fn(&RunRecord, &Context) -> Option<f64>;

/// What a figure needs besides the record.
pub struct Context<'a> {
    w: &'a Workload,
    m: &'a Machine,
}

/// Whether a figure counts events (small counts get an absolute band).
const COUNT: bool = true;

/// The figures judged: name, value, whether it counts events.
const FIGURES: &[(&str, Getter, bool)] = &[
    (
        "numa_pte_updates",
        |r, _| memcg(r, "numa_pte_updates"),
        COUNT,
    ),
    (
        "numa_hint_faults",
        |r, _| memcg(r, "numa_hint_faults"),
        COUNT,
    ),
    (
        "numa_hint_faults_local",
        |r, _| Some(r.vm("numa_hint_faults_local") as f64),
        COUNT,
    ),
    (
        "numa_pages_migrated",
        |r, _| memcg(r, "numa_pages_migrated"),
        COUNT,
    ),
    (
        "numa_task_migrated",
        |r, _| memcg(r, "numa_task_migrated"),
        COUNT,
    ),
    (
        "numa_task_swapped",
        |r, _| memcg(r, "numa_task_swapped"),
        COUNT,
    ),
    (
        "sched_move_numa",
        |r, _| r.lab.get(TRACE.key("sched_move_numa")),
        COUNT,
    ),
    (
        "sched_swap_numa",
        |r, _| r.lab.get(TRACE.key("sched_swap_numa")),
        COUNT,
    ),
    (
        "sched_stick_numa",
        |r, _| r.lab.get(TRACE.key("sched_stick_numa")),
        COUNT,
    ),
    (
        "nr_migrations per thread",
        |r, _| {
            let n = r.tasks.len();
            (n > 0).then(|| r.tasks.iter().map(|t| t.nr_migrations as f64).sum::<f64>() / n as f64)
        },
        COUNT,
    ),
    ("all threads >= 90% local (s)", all_local, !COUNT),
    // Timed accesses at or above the threshold (1 ms): a real run times
    // them only with `--set numalab.access_latency=1` (the p2 scenarios);
    // boots without are "not recorded".
    (
        "access_latency_outliers",
        |r, _| r.lab.get(numalab_record::lab::ACCESS_LATENCY_OUTLIERS),
        COUNT,
    ),
];

/// The memory.stat counters judged for each of the workload's own cgroups
/// (a figure `COUNTER /PATH`).
const CGROUP_FIGURES: &[&str] = &[
    "numa_pte_updates",
    "numa_hint_faults",
    "numa_pages_migrated",
    "numa_task_migrated",
    "numa_task_swapped",
];

/// When every measured thread's memory first was 90 % local (the latest
/// of the threads' first times); the run's length when one never was.
fn all_local(r: &RunRecord, c: &Context) -> Option<f64> {
    let th = measured_threads(c.w);
    if th.is_empty() {
        return None;
    }
    let mut latest = 0.0f64;
    for s in local_shares(r, c.m, &th) {
        if s.is_empty() {
            return None;
        }
        latest = latest.max(first_local(&s).unwrap_or(r.elapsed_s));
    }
    Some(latest)
}

/// Each workload thread's final node, by name.
fn final_nodes(r: &RunRecord) -> Vec<(String, usize)> {
    let mut v: Vec<(String, usize)> = r
        .tasks
        .iter()
        .map(|t| (t.name.clone(), t.last_node))
        .collect();
    v.sort();
    v
}

/// Whether nothing in the workload tells nodes apart (no affinity, no
/// memory policy), so a run that is another's with nodes renamed is
/// the same outcome.
fn symmetric(w: &Workload) -> bool {
    w.processes.iter().all(|p| {
        p.regions.iter().all(|r| r.policy.is_none())
            && p.threads
                .iter()
                .all(|t| t.affinity.is_none() && t.policy.is_none())
    })
}

/// Every permutation of `0..n`.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

/// The share of `a`'s threads on the same node as in `b`, under the best
/// renaming of nodes when `rename` (up to 6 nodes; identity beyond).
fn same_node_share(
    a: &[(String, usize)],
    b: &[(String, usize)],
    nodes: usize,
    rename: bool,
) -> f64 {
    let pairs: Vec<(usize, usize)> = a
        .iter()
        .filter_map(|(n, x)| b.iter().find(|(m, _)| m == n).map(|(_, y)| (*x, *y)))
        .collect();
    if pairs.is_empty() {
        return 0.0;
    }
    let perms = if rename && nodes <= 6 {
        permutations(nodes)
    } else {
        vec![(0..nodes).collect()]
    };
    let best = perms
        .iter()
        .map(|p| pairs.iter().filter(|(x, y)| p.get(*x) == Some(y)).count())
        .max()
        .unwrap_or(0);
    best as f64 / pairs.len() as f64
}

/// How a figure came out.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Inside the kernel's band.
    Within,
    /// Outside, and not declared.
    Outside,
    /// Outside, declared with the experiment that shows why.
    Known(String),
    /// Inside, but declared outside: the declaration must go.
    NoLongerKnown,
    /// The kernel does not record it (or the model does not).
    NotRecorded,
}

impl Verdict {
    /// Whether the gate fails on it.
    pub fn fails(&self) -> bool {
        matches!(self, Verdict::Outside | Verdict::NoLongerKnown)
    }

    fn text(&self) -> String {
        match self {
            Verdict::Within => "within".into(),
            Verdict::Outside => "OUTSIDE".into(),
            Verdict::Known(e) => format!("outside, known ({e})"),
            Verdict::NoLongerKnown => "within, but declared known: remove it".into(),
            Verdict::NotRecorded => "not recorded".into(),
        }
    }
}

/// One judged figure.
#[derive(Clone, Debug)]
pub struct Row {
    /// Figure name.
    pub figure: String,
    /// The kernel's values, one per boot.
    pub kernel: Vec<f64>,
    /// The band.
    pub band: Option<Band>,
    /// The model's value: the median over its seeds.
    pub model: Option<f64>,
    /// The model's lowest and highest value over its seeds (`None` with
    /// one seed or without a value).
    pub model_range: Option<(f64, f64)>,
    /// The verdict.
    pub verdict: Verdict,
}

/// A declared figure outside its band (`known.toml`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownMiss {
    /// Scenario name.
    pub scenario: String,
    /// Figure name, as the table prints it.
    pub figure: String,
    /// The test or docs/real.md section that shows the mechanism and its
    /// size.
    pub experiment: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KnownFile {
    #[serde(default)]
    miss: Vec<KnownMiss>,
}

/// Reads the declared misses of `dir/known.toml` (none without the file).
pub fn read_known(dir: &Path) -> Result<Vec<KnownMiss>, String> {
    let p = dir.join("known.toml");
    match std::fs::read_to_string(&p) {
        Ok(text) => toml::from_str::<KnownFile>(&text)
            .map(|f| f.miss)
            .map_err(|e| format!("{}: {e}", p.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("{}: {e}", p.display())),
    }
}

/// Reads the boots of scenario `name` in `dir` (`NAME.bootN.kernel.json`,
/// N from 1 up, in order).
pub fn read_boots(dir: &Path, name: &str) -> Result<Vec<RunRecord>, String> {
    let mut out = Vec::new();
    for n in 1.. {
        let p = dir.join(format!("{name}.boot{n}.kernel.json"));
        if !p.exists() {
            break;
        }
        let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        out.push(RunRecord::from_json(&text, &p.display().to_string())?);
    }
    if out.is_empty() {
        return Err(format!(
            "--boots {}: no {name}.boot1.kernel.json (save a guest's record there with `numalab validate --json-dir`)",
            dir.display()
        ));
    }
    Ok(out)
}

/// The median of `v` (the mean of the middle two when even); `None` when
/// empty.
fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The model's figure over its seeds: the median and the [min, max] (the
/// latter only with several seeds); `None` when a run lacks it.
fn over_seeds(values: &[Option<f64>]) -> (Option<f64>, Option<(f64, f64)>) {
    let Some(v) = values.iter().copied().collect::<Option<Vec<f64>>>() else {
        return (None, None);
    };
    let lo = v.iter().copied().reduce(f64::min);
    let hi = v.iter().copied().reduce(f64::max);
    let range = lo.zip(hi).filter(|_| v.len() > 1);
    (median(&v), range)
}

/// Judges the model's runs of scenario `scenario` (`models`: one per seed,
/// each figure taken as their median) against the kernel's `boots`.
pub fn judge(
    scenario: &str,
    w: &Workload,
    m: &Machine,
    models: &[RunRecord],
    boots: &[RunRecord],
    known: &[KnownMiss],
) -> Vec<Row> {
    let c = Context { w, m };
    let declared = |figure: &str| {
        known
            .iter()
            .find(|k| k.scenario == scenario && k.figure == figure)
            .map(|k| k.experiment.clone())
    };
    let verdict = |figure: &str, inside: Option<bool>| match (inside, declared(figure)) {
        (None, _) => Verdict::NotRecorded,
        (Some(true), None) => Verdict::Within,
        (Some(true), Some(_)) => Verdict::NoLongerKnown,
        (Some(false), None) => Verdict::Outside,
        (Some(false), Some(e)) => Verdict::Known(e),
    };
    let row = |name: String, get: &dyn Fn(&RunRecord) -> Option<f64>, count: bool| {
        let kernel: Vec<f64> = boots.iter().filter_map(get).collect();
        let kernel = if kernel.len() == boots.len() {
            kernel
        } else {
            Vec::new()
        };
        let band = Band::of(&kernel, count);
        let (value, range) = over_seeds(&models.iter().map(get).collect::<Vec<_>>());
        let inside = band.zip(value).map(|(b, v)| b.contains(v));
        let verdict = verdict(&name, inside);
        Row {
            figure: name,
            kernel,
            band,
            model: value,
            model_range: range,
            verdict,
        }
    };
    let mut rows: Vec<Row> = FIGURES
        .iter()
        .map(|(name, get, count)| row(name.to_string(), &|r| get(r, &c), *count))
        .collect();
    // Each of the workload's own cgroups: where scanning and migration
    // happened (proposal 4 enables some and not others).
    for cg in w.cgroups.iter().filter(|g| g.path != "/") {
        for stat in CGROUP_FIGURES {
            let get = |r: &RunRecord| {
                r.cgroups
                    .get(&cg.path)
                    .and_then(|g| g.memory_stat.get(*stat))
                    .map(|&v| v as f64)
            };
            rows.push(row(format!("{stat} {}", cg.path), &get, COUNT));
        }
    }
    // Final nodes: the model against its best-matching boot, held to 75 %
    // or to the boots' own agreement with each other when that is lower.
    let rename = symmetric(w);
    let nodes = m.nr_nodes();
    let k: Vec<_> = boots.iter().map(final_nodes).collect();
    let shares: Vec<Option<f64>> = models
        .iter()
        .map(|r| {
            let mine = final_nodes(r);
            k.iter()
                .map(|b| same_node_share(&mine, b, nodes, rename))
                .reduce(f64::max)
        })
        .collect();
    let (model_share, model_range) = over_seeds(&shares);
    let mut own = Vec::new();
    for i in 0..k.len() {
        for j in 0..k.len() {
            if i != j {
                own.push(same_node_share(&k[i], &k[j], nodes, rename));
            }
        }
    }
    let need = own
        .iter()
        .copied()
        .reduce(f64::min)
        .map_or(SAME_NODE, |o| o.min(SAME_NODE));
    let figure = "threads on a boot's final node";
    rows.push(Row {
        figure: figure.to_string(),
        kernel: own,
        band: Some(Band { lo: need, hi: 1.0 }),
        model: model_share,
        model_range,
        verdict: verdict(figure, model_share.map(|s| s >= need)),
    });
    rows
}

fn fmt(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e12 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The table of a scenario's judged figures (`seeds`: the model's).
pub fn render(scenario: &str, boots: usize, seeds: usize, rows: &[Row]) -> String {
    let mut out = if seeds > 1 {
        format!(
            "-- {scenario}: the model's median over {seeds} seeds against the kernel's band over {boots} boots\n"
        )
    } else {
        format!("-- {scenario}: model against the kernel's band over {boots} boots\n")
    };
    let _ = writeln!(
        out,
        "{:<32} {:>22} {:>22} {:>22}  verdict",
        "figure",
        "kernel median [min-max]",
        "band",
        if seeds > 1 {
            "model median [min-max]"
        } else {
            "model"
        }
    );
    for r in rows {
        let kernel = if r.kernel.is_empty() {
            "-".to_string()
        } else {
            let mut v = r.kernel.clone();
            v.sort_by(f64::total_cmp);
            format!(
                "{} [{}-{}]",
                fmt(v[v.len() / 2]),
                fmt(v[0]),
                fmt(v[v.len() - 1])
            )
        };
        let band = r
            .band
            .map_or("-".to_string(), |b| format!("{}-{}", fmt(b.lo), fmt(b.hi)));
        let model = match (r.model, r.model_range) {
            (None, _) => "-".to_string(),
            (Some(v), None) => fmt(v),
            (Some(v), Some((lo, hi))) => format!("{} [{}-{}]", fmt(v), fmt(lo), fmt(hi)),
        };
        let _ = writeln!(
            out,
            "{:<32} {:>22} {:>22} {:>22}  {}",
            r.figure,
            kernel,
            band,
            model,
            r.verdict.text()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_band_is_the_kernels_spread_widened_2x_or_by_2_for_small_counts() {
        let b = Band::of(&[100.0, 300.0, 200.0], COUNT).unwrap();
        assert_eq!(
            b,
            Band {
                lo: 50.0,
                hi: 600.0
            }
        );
        assert!(b.contains(50.0) && b.contains(600.0));
        assert!(!b.contains(49.0) && !b.contains(601.0));
        let s = Band::of(&[0.0, 3.0, 1.0], COUNT).unwrap();
        assert_eq!(s, Band { lo: 0.0, hi: 5.0 });
        assert!(!s.contains(6.0));
        assert_eq!(Band::of(&[], COUNT), None);
        // A time of a few seconds is widened by the ratio, not by 2.
        assert_eq!(
            Band::of(&[1.0, 3.0], !COUNT),
            Some(Band { lo: 0.5, hi: 6.0 })
        );
    }

    #[test]
    fn final_nodes_match_up_to_renaming_only_when_symmetric() {
        let a: Vec<(String, usize)> = vec![("t0".into(), 0), ("t1".into(), 0), ("t2".into(), 1)];
        let b: Vec<(String, usize)> = vec![("t0".into(), 1), ("t1".into(), 1), ("t2".into(), 0)];
        assert_eq!(same_node_share(&a, &b, 2, true), 1.0);
        assert_eq!(same_node_share(&a, &b, 2, false), 0.0);
        assert_eq!(permutations(4).len(), 24);
    }

    #[test]
    fn the_models_figure_is_its_median_over_seeds_and_missing_in_one_is_missing() {
        assert_eq!(median(&[5.0, 1.0, 9.0, 2.0, 100.0]), Some(5.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(
            over_seeds(&[Some(3.0), Some(1.0), Some(200.0)]),
            (Some(3.0), Some((1.0, 200.0)))
        );
        assert_eq!(over_seeds(&[Some(7.0)]), (Some(7.0), None));
        assert_eq!(over_seeds(&[Some(3.0), None, Some(1.0)]), (None, None));
    }

    #[test]
    fn a_declared_miss_back_in_its_band_fails_as_an_undeclared_one_outside() {
        assert!(Verdict::Outside.fails());
        assert!(Verdict::NoLongerKnown.fails());
        assert!(!Verdict::Known("x".into()).fails());
        assert!(!Verdict::Within.fails());
        assert!(!Verdict::NotRecorded.fails());
    }
}
