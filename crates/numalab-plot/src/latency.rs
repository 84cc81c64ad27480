//! Access-latency histograms (the record's log2 `access_latency` bins, as
//! the text report prints them in numalab-report's latency.rs) as charts:
//! counts per latency band on a log scale, the band edges in ns/us/ms.
//!
//! - one run: reads and writes of all its tasks as bars side by side, the
//!   outlier threshold as a vertical line;
//! - a compare: one step curve per column, the mean count per run of
//!   reads and writes together.
//!
//! A run's histogram is its root cgroup's (`/`, every task), or when the
//! record has none the sum of its tasks'. Left out: per-cgroup and
//! per-task charts, pmbench's sub-bins (the record keeps none).

use crate::draw::{err, font, legend, style, titled, with_legend, Entry, Mark, Res};
use numalab_record::{AccessLatency, RunKind, RunRecord};
use plotters::coord::Shift;
use plotters::prelude::*;

/// A run's latency histogram: all its tasks.
pub(crate) fn histogram(r: &RunRecord) -> Option<AccessLatency> {
    if let Some(h) = r.cgroups.get("/").and_then(|c| c.access_latency.as_ref()) {
        return Some(h.clone());
    }
    let mut sum: Option<AccessLatency> = None;
    for h in r.tasks.iter().filter_map(|t| t.access_latency.as_ref()) {
        let s = sum.get_or_insert_with(|| AccessLatency {
            threshold_us: h.threshold_us,
            ..AccessLatency::default()
        });
        add_bins(&mut s.reads, &h.reads);
        add_bins(&mut s.writes, &h.writes);
        s.reads_over += h.reads_over;
        s.writes_over += h.writes_over;
        s.max_ns = s.max_ns.max(h.max_ns);
    }
    sum
}

fn add_bins(to: &mut Vec<u64>, from: &[u64]) {
    if to.len() < from.len() {
        to.resize(from.len(), 0);
    }
    for (a, b) in to.iter_mut().zip(from) {
        *a = a.saturating_add(*b);
    }
}

/// Why a run has no latency chart.
pub(crate) fn missing_reason(r: &RunRecord) -> String {
    if r.kind == RunKind::Real {
        "real runs record no access latencies".to_string()
    } else if r
        .settings
        .get("numalab.access_latency")
        .is_some_and(|v| v == "0" || v == "false")
    {
        "the run had numalab.access_latency=0".to_string()
    } else {
        "the record has no access-latency histograms".to_string()
    }
}

/// The lower edge of band `i` (2^i ns) in short units.
fn edge(i: f64) -> String {
    let ns = 2f64.powf(i);
    if ns >= 1e9 {
        format!("{:.0}s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.0}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.0}us", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

/// Named series of counts per band.
pub(crate) type Bands = Vec<(String, Vec<f64>)>;

/// The x range (first and one past the last non-empty band) and the y range
/// (floor for zero, top) of `series`.
fn ranges(series: &Bands) -> ((usize, usize), (f64, f64)) {
    let mut lo = usize::MAX;
    let mut hi = 0;
    let (mut ymin, mut ymax) = (f64::MAX, 0.0f64);
    for (_, v) in series {
        for (i, &c) in v.iter().enumerate() {
            if c > 0.0 {
                lo = lo.min(i);
                hi = hi.max(i + 1);
                ymin = ymin.min(c);
                ymax = ymax.max(c);
            }
        }
    }
    if lo >= hi {
        return ((0, 1), (0.5, 1.0));
    }
    // Zero counts sit at the floor, half the smallest count.
    ((lo, hi), (ymin / 2.0, ymax * 2.0))
}

/// A chart of counts per latency band on a log scale; `bars` draws each
/// series as bars side by side in the band, else as step curves.
/// `threshold_us`, when given, is drawn as a vertical line.
pub(crate) fn draw_latency<DB: DrawingBackend>(
    a: &DrawingArea<DB, Shift>,
    title: &str,
    ylabel: &str,
    series: &Bands,
    bars: bool,
    threshold_us: Option<u64>,
) -> Res {
    let rest = titled(a, title)?;
    let (area, key) = with_legend(&rest);
    let ((lo, hi), (floor, top)) = ranges(series);
    let mut c = ChartBuilder::on(&area)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(lo as f64..hi as f64, (floor..top).log_scale())
        .map_err(err)?;
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels((hi - lo + 1).min(14))
        .x_label_formatter(&|v| {
            if v.fract() == 0.0 {
                edge(*v)
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .x_desc("access latency (lower edge of each log2 band)")
        .y_desc(ylabel)
        .label_style(font(13))
        .axis_desc_style(font(14))
        .draw()
        .map_err(err)?;
    let n = series.len().max(1) as f64;
    for (k, (_, v)) in series.iter().enumerate() {
        let col = style(k);
        if bars {
            let w = 0.8 / n;
            c.draw_series(
                v.iter()
                    .enumerate()
                    .filter(|(i, &y)| y > 0.0 && (lo..hi).contains(i))
                    .map(|(i, &y)| {
                        let x0 = i as f64 + 0.1 + w * k as f64;
                        Rectangle::new([(x0, floor), (x0 + w, y)], col.filled())
                    }),
            )
            .map_err(err)?;
        } else {
            let pts = (lo..hi).flat_map(|i| {
                let y = v.get(i).copied().unwrap_or(0.0).max(floor);
                [(i as f64, y), (i as f64 + 1.0, y)]
            });
            c.draw_series(LineSeries::new(pts, col.stroke_width(2)))
                .map_err(err)?;
        }
    }
    let mark = if bars { Mark::Block } else { Mark::Line };
    let mut entries: Vec<Entry> = series
        .iter()
        .enumerate()
        .map(|(k, (name, _))| (name.clone(), style(k), mark))
        .collect();
    if let Some(us) = threshold_us {
        let x = ((us as f64) * 1e3).log2();
        if (lo as f64..hi as f64).contains(&x) {
            c.draw_series(LineSeries::new(
                [(x, floor), (x, top)],
                BLACK.stroke_width(1),
            ))
            .map_err(err)?;
            entries.push((format!(">= {us} us"), BLACK, Mark::Line));
        }
    }
    let offset = c.plotting_area().get_base_pixel().1 - area.get_base_pixel().1;
    legend(&key, offset, &entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn band_edges_read_as_times() {
        assert_eq!(edge(0.0), "1ns");
        assert_eq!(edge(6.0), "64ns");
        assert_eq!(edge(10.0), "1us");
        assert_eq!(edge(20.0), "1ms");
        assert_eq!(edge(30.0), "1s");
    }

    #[test]
    fn ranges_cover_the_non_empty_bands() {
        let s: Bands = vec![
            ("a".into(), vec![0.0, 0.0, 4.0, 0.0, 10.0]),
            ("b".into(), vec![0.0, 2.0]),
        ];
        assert_eq!(ranges(&s), ((1, 5), (1.0, 20.0)));
        assert_eq!(ranges(&vec![]), ((0, 1), (0.5, 1.0)));
    }
}
