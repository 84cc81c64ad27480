//! Which figures a Run record or a compare of RunSets has, with their data
//! ([`Figure`]), and which it lacks and why ([`Skipped`]); drawing each on
//! any plotters backend. Nothing here writes a file.
//!
//! Left out: choosing file names and formats (lib.rs does).

use crate::bars::{draw_bars, Metric, Spread, METRICS};
use crate::data::{ProcessMemory, Series};
use crate::draw::{draw_lines, Res};
use crate::heat::draw_heat;
use crate::latency::{draw_latency, histogram, missing_reason, Bands};
use crate::timeseries::{draw_memory, draw_panels, MAX_MEMORY_PANELS};
use numalab_record::column::Column;
use numalab_record::{RunRecord, RunSet};
use numalab_report::compare_rows::CompareRows;
use plotters::coord::Shift;
use plotters::prelude::*;

/// A figure a record has no data for (or draws only in part), and why.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Skipped {
    /// The figure's name (`latency`, `local-share`, ...).
    pub figure: String,
    /// Why, e.g. `real runs record no access latencies`.
    pub reason: String,
}

impl Skipped {
    fn new(figure: &str, reason: impl Into<String>) -> Skipped {
        Skipped {
            figure: figure.to_string(),
            reason: reason.into(),
        }
    }
}

/// One figure's data, ready to draw.
pub(crate) enum Figure {
    /// Each process's memory per node.
    Memory {
        title: String,
        t: Vec<f64>,
        mem: Vec<ProcessMemory>,
    },
    /// Curves against time.
    Lines {
        title: String,
        ylabel: &'static str,
        lines: Vec<(String, Vec<(f64, f64)>)>,
        ymax: Option<f64>,
    },
    /// A panel per curve against time.
    Panels {
        title: String,
        series: Vec<(String, Vec<(f64, f64)>)>,
    },
    /// Each task's node over time.
    Heat {
        title: String,
        t: Vec<f64>,
        nodes: Vec<(String, Vec<i64>)>,
    },
    /// Compare bars of one test.
    Bars {
        title: String,
        labels: Vec<String>,
        metrics: Vec<Metric>,
    },
    /// Latency histograms.
    Latency {
        title: String,
        ylabel: &'static str,
        series: Bands,
        bars: bool,
        threshold_us: Option<u64>,
    },
}

impl Figure {
    /// Draws the figure on `a`.
    pub(crate) fn draw<DB: DrawingBackend>(&self, a: &DrawingArea<DB, Shift>) -> Res {
        match self {
            Figure::Memory { title, t, mem } => draw_memory(a, title, t, mem),
            Figure::Lines {
                title,
                ylabel,
                lines,
                ymax,
            } => draw_lines(a, title, ylabel, lines, *ymax),
            Figure::Panels { title, series } => draw_panels(a, title, series),
            Figure::Heat { title, t, nodes } => draw_heat(a, title, t, nodes),
            Figure::Bars {
                title,
                labels,
                metrics,
            } => draw_bars(a, title, labels, metrics),
            Figure::Latency {
                title,
                ylabel,
                series,
                bars,
                threshold_us,
            } => draw_latency(a, title, ylabel, series, *bars, *threshold_us),
        }
    }
}

/// A record's machine name (`?` when it has none).
fn machine_name(r: &RunRecord) -> String {
    r.machine_name().unwrap_or("?").to_string()
}

/// Counts as plot values.
fn floats(v: &[u64]) -> Vec<f64> {
    v.iter().map(|&c| c as f64).collect()
}

/// The figures of one run, named (`memory`, `local-share`, `activity`,
/// `task-nodes`, `latency`), and those it lacks.
pub(crate) fn run_figures(rec: &RunRecord) -> (Vec<(String, Figure)>, Vec<Skipped>) {
    let mut figs = Vec::new();
    let mut skipped = Vec::new();
    let title = format!("{} on {}", rec.test_name(), machine_name(rec));
    match rec.timeseries.as_ref().filter(|t| !t.rows.is_empty()) {
        None => skipped.push(Skipped::new(
            "time series",
            "no time series in the record: no memory, local-share, activity or task-nodes figure",
        )),
        Some(ts) => {
            let s = Series::new(ts, &rec.cpu_nodes());
            let mem = s.process_memory();
            if mem.is_empty() {
                skipped.push(Skipped::new("memory", "no region columns"));
            } else {
                if mem.len() > MAX_MEMORY_PANELS {
                    skipped.push(Skipped::new(
                        "memory",
                        format!("only the first {MAX_MEMORY_PANELS} processes (by name) are drawn"),
                    ));
                }
                figs.push((
                    "memory".to_string(),
                    Figure::Memory {
                        title: format!("{title}: memory per node"),
                        t: s.t.clone(),
                        mem,
                    },
                ));
            }
            match s.column(&Column::LocalBytesShare.name()) {
                Some(local) => figs.push((
                    "local-share".to_string(),
                    Figure::Lines {
                        title: format!("{title}: local-access share"),
                        ylabel: "share of bytes accessed that were local",
                        lines: vec![(
                            "local".to_string(),
                            s.t.iter().copied().zip(local).collect(),
                        )],
                        ymax: Some(1.0),
                    },
                )),
                None => skipped.push(Skipped::new(
                    "local-share",
                    "no local_bytes_share column (real runs lack it)",
                )),
            }
            let act = s.activity();
            if act.is_empty() {
                skipped.push(Skipped::new("activity", "no counters"));
            } else {
                figs.push((
                    "activity".to_string(),
                    Figure::Panels {
                        title: format!("{title}: per {:.3} s interval", ts.interval_s),
                        series: act,
                    },
                ));
            }
            let nodes = s.task_nodes();
            if nodes.is_empty() {
                skipped.push(Skipped::new("task-nodes", "no cpu: columns"));
            } else {
                figs.push((
                    "task-nodes".to_string(),
                    Figure::Heat {
                        title: format!("{title}: each task's node"),
                        t: s.t.clone(),
                        nodes,
                    },
                ));
            }
        }
    }
    match histogram(rec) {
        Some(h) => figs.push((
            "latency".to_string(),
            Figure::Latency {
                title: format!(
                    "{title}: latency, {} >= {} us, max {:.1} ms",
                    h.reads_over + h.writes_over,
                    h.threshold_us,
                    h.max_ns as f64 / 1e6
                ),
                ylabel: "accesses",
                series: vec![
                    ("reads".to_string(), floats(&h.reads)),
                    ("writes".to_string(), floats(&h.writes)),
                ],
                bars: true,
                threshold_us: Some(h.threshold_us),
            },
        )),
        None => skipped.push(Skipped::new("latency", missing_reason(rec))),
    }
    (figs, skipped)
}

/// A test name as a file-name part: lower case.
fn test_part(test: &str) -> String {
    crate::names::sanitize(&test.to_lowercase())
}

/// The compare figures of `sets` (one column each): per test, its bars
/// (`compare-TEST`) and its latency curves (`compare-TEST-latency`); and
/// what is missing.
pub(crate) fn compare_figures(sets: &[RunSet]) -> (Vec<(String, Figure)>, Vec<Skipped>) {
    let rows = CompareRows::of(sets);
    let labels: Vec<String> = sets.iter().map(|s| s.name.clone()).collect();
    let mut figs = Vec::new();
    let mut skipped = Vec::new();
    for test in &rows.tests {
        let name = format!("compare-{}", test_part(test));
        let machine = (0..sets.len())
            .find_map(|c| rows.runs(sets, c, test).next())
            .map(machine_name)
            .unwrap_or_default();
        let metrics: Vec<Metric> = METRICS
            .iter()
            .map(|(m, pick)| {
                let by_col = (0..sets.len())
                    .map(|c| Spread::of(rows.runs(sets, c, test), *pick))
                    .collect();
                (*m, by_col)
            })
            .collect();
        figs.push((
            name.clone(),
            Figure::Bars {
                title: format!("{test} on {machine}: mean of each column's runs, whisker min..max"),
                labels: labels.clone(),
                metrics,
            },
        ));
        let mut series: Bands = Vec::new();
        for (c, label) in labels.iter().enumerate() {
            let hs: Vec<_> = rows.runs(sets, c, test).filter_map(histogram).collect();
            if hs.is_empty() {
                if rows.has(c, test) {
                    skipped.push(Skipped::new(
                        &format!("{name}-latency"),
                        format!("column {label} has no access-latency histograms"),
                    ));
                }
                continue;
            }
            let mut mean: Vec<f64> = Vec::new();
            for h in &hs {
                let n = h.reads.len().max(h.writes.len());
                mean.resize(mean.len().max(n), 0.0);
                for (i, m) in mean.iter_mut().enumerate().take(n) {
                    let both = h.reads.get(i).copied().unwrap_or(0)
                        + h.writes.get(i).copied().unwrap_or(0);
                    *m += both as f64 / hs.len() as f64;
                }
            }
            series.push((label.clone(), mean));
        }
        if !series.is_empty() {
            figs.push((
                format!("{name}-latency"),
                Figure::Latency {
                    title: format!("{test} on {machine}: access latency, reads and writes"),
                    ylabel: "accesses per run",
                    series,
                    bars: false,
                    threshold_us: None,
                },
            ));
        }
    }
    (figs, skipped)
}
