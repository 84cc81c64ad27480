//! The `task-nodes` heat map: each task's node over time, one row per task,
//! grey while off CPU.
//!
//! Drawn as few rectangles as give the same picture: the grey is one
//! background rectangle, consecutive samples of a row on the same node are
//! one rectangle ([`spans`]), and a row never has more cells than the
//! plotting area has pixel columns (with more samples than pixels, each
//! pixel column shows the node its samples were on most often; several
//! samples in one pixel could not be told apart anyway). So a row costs at
//! most one rectangle per node change or per pixel, whichever is fewer,
//! and an SVG stays small for a long run of many tasks.
//!
//! Left out: merging rows (each task keeps its row, however thin).

use crate::draw::{err, font, legend, style, with_legend, Entry, Mark, Res};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The colour of "off CPU".
const OFF_CPU: RGBColor = RGBColor(225, 225, 225);

/// One rectangle of the heat map: a task row on one node from `x0` to `x1`
/// seconds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Span {
    /// Task row.
    pub row: usize,
    /// Start, seconds.
    pub x0: f64,
    /// End, seconds.
    pub x1: f64,
    /// Node (never -1: off CPU is the background).
    pub node: i64,
}

/// The node most samples of `cells` were on (off CPU, -1, included); a tie
/// goes to the node seen first.
fn mode(cells: &[i64]) -> i64 {
    let mut counts: Vec<(i64, usize)> = Vec::new();
    for &n in cells {
        match counts.iter_mut().find(|c| c.0 == n) {
            Some(c) => c.1 += 1,
            None => counts.push((n, 1)),
        }
    }
    let mut best = (-1, 0);
    for c in counts {
        if c.1 > best.1 {
            best = c;
        }
    }
    best.0
}

/// The on-CPU rectangles of `nodes` (per task, the node at each sample
/// time `t`, -1 off CPU), at most `columns` cells per row: a sample `i`
/// covers `t[i] - dt .. t[i]`, `dt` the first interval.
pub(crate) fn spans(t: &[f64], nodes: &[(String, Vec<i64>)], columns: usize) -> Vec<Span> {
    let n = t.len();
    if n == 0 {
        return Vec::new();
    }
    let dt = if n > 1 { t[1] - t[0] } else { t[0] };
    let groups = n.min(columns.max(1));
    let mut out = Vec::new();
    for (row, (_, cells)) in nodes.iter().enumerate() {
        let mut open: Option<Span> = None;
        for g in 0..groups {
            // Samples a..b fall in pixel column g.
            let (a, b) = (g * n / groups, ((g + 1) * n / groups).min(cells.len()));
            if a >= b {
                continue;
            }
            let node = mode(&cells[a..b]);
            let (x0, x1) = ((t[a] - dt).max(0.0), t[b - 1]);
            match &mut open {
                Some(s) if s.node == node => s.x1 = x1,
                _ => {
                    out.extend(open.take().filter(|s| s.node >= 0));
                    open = Some(Span { row, x0, x1, node });
                }
            }
        }
        out.extend(open.filter(|s| s.node >= 0));
    }
    out
}

/// Draws the heat map of `nodes` over sample times `t`, with a node legend
/// in a column on the right.
pub(crate) fn draw_heat<DB: DrawingBackend>(
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
    let (chart_area, key) = with_legend(a);
    let mut c = ChartBuilder::on(&chart_area)
        .caption(title, font(20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..xmax, 0.0..ntasks.max(1) as f64)
        .map_err(err)?;
    c.configure_mesh()
        .disable_mesh()
        .x_desc("time (s)")
        .y_desc("task")
        .label_style(font(13))
        .axis_desc_style(font(14))
        .draw()
        .map_err(err)?;
    if let Some(&t0) = t.first() {
        let dt = if t.len() > 1 { t[1] - t0 } else { t0 };
        c.draw_series(std::iter::once(Rectangle::new(
            [((t0 - dt).max(0.0), 0.0), (xmax, ntasks as f64)],
            OFF_CPU.filled(),
        )))
        .map_err(err)?;
    }
    let columns = c.plotting_area().dim_in_pixel().0 as usize;
    c.draw_series(spans(t, nodes, columns).into_iter().map(|s| {
        Rectangle::new(
            [(s.x0, s.row as f64), (s.x1, s.row as f64 + 1.0)],
            style(s.node as usize).filled(),
        )
    }))
    .map_err(err)?;
    let mut entries: Vec<Entry> = (0..=maxnode)
        .map(|n| (format!("node {n}"), style(n), Mark::Block))
        .collect();
    entries.push(("off CPU".to_string(), OFF_CPU, Mark::Block));
    let top = c.plotting_area().get_base_pixel().1 - chart_area.get_base_pixel().1;
    legend(&key, top, &entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[i64]) -> Vec<(String, Vec<i64>)> {
        vec![("t".to_string(), cells.to_vec())]
    }

    #[test]
    fn runs_of_one_node_are_one_span_and_off_cpu_none() {
        let t: Vec<f64> = (1..=6).map(f64::from).collect();
        let s = spans(&t, &row(&[0, 0, -1, 1, 1, 1]), 1000);
        assert_eq!(
            s,
            vec![
                Span {
                    row: 0,
                    x0: 0.0,
                    x1: 2.0,
                    node: 0
                },
                Span {
                    row: 0,
                    x0: 3.0,
                    x1: 6.0,
                    node: 1
                },
            ]
        );
    }

    #[test]
    fn more_samples_than_pixels_take_each_pixels_commonest_node() {
        // 8 samples into 2 columns: 0,0,0,1 | 1,1,-1,1.
        let t: Vec<f64> = (1..=8).map(f64::from).collect();
        let s = spans(&t, &row(&[0, 0, 0, 1, 1, 1, -1, 1]), 2);
        assert_eq!(
            s,
            vec![
                Span {
                    row: 0,
                    x0: 0.0,
                    x1: 4.0,
                    node: 0
                },
                Span {
                    row: 0,
                    x0: 4.0,
                    x1: 8.0,
                    node: 1
                },
            ]
        );
        // A tie goes to the node seen first.
        assert_eq!(mode(&[2, 3, 3, 2]), 2);
        assert_eq!(mode(&[-1, 1]), -1);
    }

    #[test]
    fn with_a_pixel_per_sample_every_cell_keeps_its_node() {
        // Pseudo-random rows: every sample's cell shows its node, or the
        // grey background when off CPU.
        let t: Vec<f64> = (1..=300).map(|i| f64::from(i) * 0.5).collect();
        let mut x = 12345u64;
        let rows: Vec<(String, Vec<i64>)> = (0..20)
            .map(|k| {
                let cells = (0..t.len())
                    .map(|_| {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        // Off CPU or one of four nodes, at random.
                        ((x >> 33) % 40) as i64 / 8 - 1
                    })
                    .collect();
                (format!("t{k}"), cells)
            })
            .collect();
        let s = spans(&t, &rows, 1000);
        for (row, (_, cells)) in rows.iter().enumerate() {
            for (i, &node) in cells.iter().enumerate() {
                let mid = t[i] - 0.25;
                let shown = s
                    .iter()
                    .find(|s| s.row == row && s.x0 <= mid && mid <= s.x1)
                    .map_or(-1, |s| s.node);
                assert_eq!(shown, node, "row {row} sample {i}");
            }
        }
        // Merged: fewer spans than on-CPU cells.
        let on_cpu = rows.iter().flat_map(|r| &r.1).filter(|&&n| n >= 0).count();
        assert!(s.len() < on_cpu, "{} spans for {on_cpu} cells", s.len());
    }

    #[test]
    fn spans_per_row_are_bounded_by_the_columns() {
        // A task that changes node at every sample.
        let t: Vec<f64> = (1..=5000).map(f64::from).collect();
        let cells: Vec<i64> = (0..5000).map(|i| i % 4).collect();
        assert!(spans(&t, &row(&cells), 800).len() <= 800);
        assert_eq!(spans(&t, &row(&cells), 10_000).len(), 5000);
    }
}
