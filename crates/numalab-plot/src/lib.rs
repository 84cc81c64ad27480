//! Figures of numalab records, drawn with `plotters` as PNG and SVG:
//!
//! - `memory`: each process's resident bytes per node over time (the
//!   `region:` columns summed per process), as numastat users read it;
//! - `local-share`: the share of accessed bytes that were node-local;
//! - `activity`: NUMA hinting faults, pages migrated and task node changes
//!   per sampling interval (vmstat columns are cumulative: differenced);
//! - `task-nodes`: a heat map of each task's node over time (from the
//!   `cpu:` columns and the machine's CPU-to-node map; grey while off CPU);
//! - `compare`: bar charts of elapsed, system time, hinting faults and
//!   pages migrated, one bar per RunSet (mean over its runs).
//!
//! Text is drawn with a font embedded in the binary (DejaVu Sans Mono,
//! fonts/LICENSE-DejaVu), so no system font is needed. Left out: latency
//! histograms (no record carries latencies yet: [`plot_run`] says it
//! skipped them), interactive output.

use numalab_record::column::Column;
use numalab_record::{RunRecord, RunSet};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Once;

mod data;
pub use data::{node_of_cpus, ProcessMemory, Series};

/// The embedded font's name for `plotters`.
const FONT: &str = "numalab-sans";
static FONT_BYTES: &[u8] = include_bytes!("../fonts/DejaVuSansMono.ttf");
static REGISTER: Once = Once::new();

fn font_ready() {
    REGISTER.call_once(|| {
        // The bytes are a valid TrueType font, checked by the tests.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES);
    });
}

/// Image size, pixels.
pub const SIZE: (u32, u32) = (1000, 600);

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// PNG bitmap.
    Png,
    /// SVG vector.
    Svg,
}

impl Format {
    fn ext(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Svg => "svg",
        }
    }
}

/// What [`plot_run`] and [`plot_compare`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plotted {
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Figures skipped, with why.
    pub skipped: Vec<String>,
}

type Res = Result<(), String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing: {e:?}")
}

/// Draws `f` into `dir/stem.EXT` for each format.
fn render(
    dir: &Path,
    stem: &str,
    formats: &[Format],
    out: &mut Plotted,
    f: &dyn Fn(&DrawingArea<BitMapBackend, Shift>) -> Res,
    g: &dyn Fn(&DrawingArea<SVGBackend, Shift>) -> Res,
) -> Res {
    for &fmt in formats {
        let path = dir.join(format!("{stem}.{}", fmt.ext()));
        match fmt {
            Format::Png => {
                let root = BitMapBackend::new(&path, SIZE).into_drawing_area();
                root.fill(&WHITE).map_err(err)?;
                f(&root)?;
                root.present()
                    .map_err(|e| format!("{}: {e:?}", path.display()))?;
            }
            Format::Svg => {
                let root = SVGBackend::new(&path, SIZE).into_drawing_area();
                root.fill(&WHITE).map_err(err)?;
                g(&root)?;
                root.present()
                    .map_err(|e| format!("{}: {e:?}", path.display()))?;
            }
        }
        out.files.push(path);
    }
    Ok(())
}

/// Draws every figure a Run record has data for into `dir`, file names
/// starting `prefix` (e.g. `numa01-1-`).
pub fn plot_run(
    rec: &RunRecord,
    dir: &Path,
    prefix: &str,
    formats: &[Format],
) -> Result<Plotted, String> {
    font_ready();
    let mut out = Plotted::default();
    let Some(ts) = rec.timeseries.as_ref().filter(|t| !t.rows.is_empty()) else {
        out.skipped.push(format!(
            "{prefix}: no time series in the record: no time-series figures"
        ));
        return Ok(out);
    };
    let title = format!("{} on {}", rec.test_name(), machine_name(rec));
    let s = Series::new(ts, &node_of_cpus(&rec.machine));
    let mem = s.process_memory();
    if mem.is_empty() {
        out.skipped
            .push(format!("{prefix}memory: no region columns"));
    } else {
        let t = format!("{title}: memory per node");
        render(
            dir,
            &format!("{prefix}memory"),
            formats,
            &mut out,
            &|a| draw_memory(a, &t, &s, &mem),
            &|a| draw_memory(a, &t, &s, &mem),
        )?;
    }
    if let Some(local) = s.column(&Column::LocalBytesShare.name()) {
        let t = format!("{title}: local-access share");
        let pts: Vec<(f64, f64)> = s.t.iter().copied().zip(local).collect();
        render(
            dir,
            &format!("{prefix}local-share"),
            formats,
            &mut out,
            &|a| {
                draw_lines(
                    a,
                    &t,
                    "share of bytes accessed that were local",
                    &[("local", pts.clone())],
                    Some(1.0),
                )
            },
            &|a| {
                draw_lines(
                    a,
                    &t,
                    "share of bytes accessed that were local",
                    &[("local", pts.clone())],
                    Some(1.0),
                )
            },
        )?;
    } else {
        out.skipped.push(format!(
            "{prefix}local-share: no local_bytes_share column (real runs lack it)"
        ));
    }
    let act = s.activity();
    if act.is_empty() {
        out.skipped.push(format!("{prefix}activity: no counters"));
    } else {
        let t = format!("{title}: per {:.3} s interval", ts.interval_s);
        render(
            dir,
            &format!("{prefix}activity"),
            formats,
            &mut out,
            &|a| draw_panels(a, &t, &act),
            &|a| draw_panels(a, &t, &act),
        )?;
    }
    let nodes = s.task_nodes();
    if nodes.is_empty() {
        out.skipped
            .push(format!("{prefix}task-nodes: no cpu: columns"));
    } else {
        let t = format!("{title}: each task's node");
        render(
            dir,
            &format!("{prefix}task-nodes"),
            formats,
            &mut out,
            &|a| draw_heat(a, &t, &s.t, &nodes),
            &|a| draw_heat(a, &t, &s.t, &nodes),
        )?;
    }
    out.skipped.push(format!(
        "{prefix}latency: the record has no latency histograms"
    ));
    Ok(out)
}

fn machine_name(r: &RunRecord) -> String {
    r.machine
        .get("name")
        .and_then(|n| n.as_str())
        .unwrap_or("?")
        .to_string()
}

/// Bar charts comparing RunSets (mean over each set's runs) into
/// `dir/compare.EXT`.
pub fn plot_compare(sets: &[RunSet], dir: &Path, formats: &[Format]) -> Result<Plotted, String> {
    font_ready();
    let mut out = Plotted::default();
    let mean = |s: &RunSet, f: &dyn Fn(&RunRecord) -> f64| {
        s.runs.iter().map(f).sum::<f64>() / s.runs.len().max(1) as f64
    };
    let metrics: Vec<(&str, Vec<f64>)> = vec![
        (
            "elapsed (s)",
            sets.iter().map(|s| mean(s, &|r| r.elapsed_s)).collect(),
        ),
        (
            "system time (s)",
            sets.iter().map(|s| mean(s, &|r| r.sys_s)).collect(),
        ),
        (
            "numa_hint_faults",
            sets.iter()
                .map(|s| mean(s, &|r| r.vm("numa_hint_faults") as f64))
                .collect(),
        ),
        (
            "numa_pages_migrated",
            sets.iter()
                .map(|s| mean(s, &|r| r.vm("numa_pages_migrated") as f64))
                .collect(),
        ),
    ];
    let labels: Vec<String> = sets.iter().map(|s| s.name.clone()).collect();
    render(
        dir,
        "compare",
        formats,
        &mut out,
        &|a| draw_bars(a, &labels, &metrics),
        &|a| draw_bars(a, &labels, &metrics),
    )?;
    Ok(out)
}

/// An axis value in few characters: 1.5M, 20k, 0.35.
fn compact(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn style(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

fn font(size: u32) -> TextStyle<'static> {
    (FONT, size).into_font().into()
}

fn draw_lines<DB: DrawingBackend>(
    a: &DrawingArea<DB, Shift>,
    title: &str,
    ylabel: &str,
    lines: &[(&str, Vec<(f64, f64)>)],
    ymax: Option<f64>,
) -> Res {
    let xmax = lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.0))
        .fold(0.0, f64::max)
        .max(1e-9);
    let ymax = ymax.unwrap_or_else(|| {
        lines
            .iter()
            .flat_map(|l| l.1.iter().map(|p| p.1))
            .fold(0.0, f64::max)
            .max(1e-9)
            * 1.05
    });
    let mut c = ChartBuilder::on(a)
        .caption(title, font(20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..xmax, 0.0..ymax)
        .map_err(err)?;
    c.configure_mesh()
        .x_labels(10)
        .y_labels(5)
        .y_label_formatter(&|v| compact(*v))
        .x_desc("time (s)")
        .y_desc(ylabel)
        .label_style(font(13))
        .axis_desc_style(font(14))
        .draw()
        .map_err(err)?;
    for (i, (name, pts)) in lines.iter().enumerate() {
        let col = style(i);
        c.draw_series(LineSeries::new(pts.iter().copied(), col.stroke_width(2)))
            .map_err(err)?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
    }
    if lines.len() > 1 {
        c.configure_series_labels()
            .label_font(font(13))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

fn draw_memory<DB: DrawingBackend>(
    a: &DrawingArea<DB, Shift>,
    title: &str,
    s: &Series,
    mem: &[ProcessMemory],
) -> Res {
    let (top, rest) = a.split_vertically(36);
    top.titled(title, font(20)).map_err(err)?;
    let n = mem.len().min(4);
    let panels = rest.split_evenly((n, 1));
    for (p, m) in panels.iter().zip(mem) {
        let lines: Vec<(String, Vec<(f64, f64)>)> = m
            .by_node
            .iter()
            .enumerate()
            .map(|(node, v)| {
                (
                    format!("node {node}"),
                    s.t.iter()
                        .copied()
                        .zip(v.iter().map(|b| b / (1u64 << 30) as f64))
                        .collect(),
                )
            })
            .collect();
        let refs: Vec<(&str, Vec<(f64, f64)>)> =
            lines.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
        draw_lines(p, &m.process, "GiB", &refs, None)?;
    }
    Ok(())
}

fn draw_panels<DB: DrawingBackend>(
    a: &DrawingArea<DB, Shift>,
    title: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Res {
    let (top, rest) = a.split_vertically(36);
    top.titled(title, font(20)).map_err(err)?;
    let panels = rest.split_evenly((series.len(), 1));
    for (p, (name, pts)) in panels.iter().zip(series) {
        draw_lines(
            p,
            name,
            "per interval",
            &[(name.as_str(), pts.clone())],
            None,
        )?;
    }
    Ok(())
}

fn draw_heat<DB: DrawingBackend>(
    a: &DrawingArea<DB, Shift>,
    title: &str,
    t: &[f64],
    nodes: &[(String, Vec<i64>)],
) -> Res {
    let xmax = t.last().copied().unwrap_or(1.0).max(1e-9);
    let ntasks = nodes.len();
    let maxnode = nodes
        .iter()
        .flat_map(|n| n.1.iter())
        .copied()
        .max()
        .unwrap_or(0)
        .max(0) as usize;
    let (chart_area, legend) = a.split_horizontally(SIZE.0 - 120);
    let mut c = ChartBuilder::on(&chart_area)
        .caption(title, font(20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..xmax, 0.0..ntasks as f64)
        .map_err(err)?;
    c.configure_mesh()
        .disable_mesh()
        .x_desc("time (s)")
        .y_desc("task")
        .label_style(font(13))
        .axis_desc_style(font(14))
        .draw()
        .map_err(err)?;
    let dt = if t.len() > 1 { t[1] - t[0] } else { xmax };
    let colour = |n: i64| {
        if n < 0 {
            RGBColor(225, 225, 225)
        } else {
            style(n as usize)
        }
    };
    c.draw_series(nodes.iter().enumerate().flat_map(|(y, (_, row))| {
        row.iter().enumerate().map(move |(i, &n)| {
            let x0 = t[i] - dt;
            Rectangle::new(
                [(x0.max(0.0), y as f64), (t[i], y as f64 + 1.0)],
                colour(n).filled(),
            )
        })
    }))
    .map_err(err)?;
    for n in 0..=maxnode {
        let y = 60 + 28 * n as i32;
        legend
            .draw(&Rectangle::new([(10, y), (30, y + 18)], style(n).filled()))
            .map_err(err)?;
        legend
            .draw(&Text::new(format!("node {n}"), (36, y + 2), font(14)))
            .map_err(err)?;
    }
    let y = 60 + 28 * (maxnode as i32 + 1);
    legend
        .draw(&Rectangle::new(
            [(10, y), (30, y + 18)],
            RGBColor(225, 225, 225).filled(),
        ))
        .map_err(err)?;
    legend
        .draw(&Text::new("off CPU", (36, y + 2), font(14)))
        .map_err(err)?;
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(
    a: &DrawingArea<DB, Shift>,
    labels: &[String],
    metrics: &[(&str, Vec<f64>)],
) -> Res {
    let panels = a.split_evenly((2, 2));
    for (p, (name, vals)) in panels.iter().zip(metrics) {
        let ymax = vals.iter().copied().fold(0.0, f64::max).max(1e-9) * 1.1;
        let n = vals.len();
        let mut c = ChartBuilder::on(p)
            .caption(*name, font(16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(70)
            .build_cartesian_2d((0..n).into_segmented(), 0.0..ymax)
            .map_err(err)?;
        let lab = labels.to_vec();
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(n.max(1))
            .x_label_formatter(&move |x| match x {
                SegmentValue::CenterOf(i) => lab.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .y_labels(5)
            .y_label_formatter(&|v| compact(*v))
            .label_style(font(12))
            .draw()
            .map_err(err)?;
        c.draw_series(vals.iter().enumerate().map(|(i, &v)| {
            let mut r = Rectangle::new(
                [
                    (SegmentValue::Exact(i), 0.0),
                    (SegmentValue::Exact(i + 1), v),
                ],
                style(i).filled(),
            );
            r.set_margin(0, 0, 12, 12);
            r
        }))
        .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
