//! The compare bar chart of one test (workload): elapsed time, system time,
//! NUMA hinting faults and pages migrated, one bar per column (RunSet) at
//! the mean of its runs of that test, a whisker from the smallest to the
//! largest run, `n/a` for a column without a run of the test. One chart
//! per test, because tests differ by orders of magnitude (numa01 runs
//! minutes where numa02 runs seconds) and an average across them would
//! mean nothing.
//!
//! Left out: significance marks (the compare table has them).

use crate::draw::{compact, err, font, style, titled, Res};
use numalab_record::RunRecord;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Mean, smallest and largest of a column's runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spread {
    /// Mean.
    pub mean: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `pick` over `runs`; `None` for no runs.
    pub(crate) fn of<'a>(runs: impl Iterator<Item = &'a RunRecord>, pick: Pick) -> Option<Spread> {
        let v: Vec<f64> = runs.map(pick).collect();
        if v.is_empty() {
            return None;
        }
        Some(Spread {
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// A figure's metric: its name and each column's spread.
pub(crate) type Metric = (&'static str, Vec<Option<Spread>>);

/// How a metric is read from a run.
pub(crate) type Pick = fn(&RunRecord) -> f64;

/// The metrics a compare chart shows, with how to read them from a run.
pub(crate) const METRICS: [(&str, Pick); 4] = [
    ("elapsed (s)", |r| r.elapsed_s),
    ("system time (s)", |r| r.sys_s),
    ("numa_hint_faults", |r| r.vm("numa_hint_faults") as f64),
    ("numa_pages_migrated", |r| {
        r.vm("numa_pages_migrated") as f64
    }),
];

/// Draws one panel per metric (2 by 2) under `title`, a bar per column
/// labelled `labels`.
pub(crate) fn draw_bars<DB: DrawingBackend>(
    a: &DrawingArea<DB, Shift>,
    title: &str,
    labels: &[String],
    metrics: &[Metric],
) -> Res {
    let rest = titled(a, title)?;
    let panels = rest.split_evenly((2, 2));
    for (p, (name, vals)) in panels.iter().zip(metrics) {
        let ymax = vals.iter().flatten().map(|s| s.max).fold(0.0, f64::max) * 1.1;
        // All zero (no balancing): an axis to 1 rather than to nothing.
        let ymax = if ymax > 0.0 { ymax } else { 1.0 };
        let n = vals.len();
        let mut c = ChartBuilder::on(p)
            .caption(*name, font(16))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(70)
            // An integer range's end is a segment too: 0..n-1 is n bars.
            .build_cartesian_2d((0..n.saturating_sub(1)).into_segmented(), 0.0..ymax)
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
        for (i, v) in vals.iter().enumerate() {
            let Some(s) = v else {
                c.draw_series(std::iter::once(Text::new(
                    "n/a",
                    (SegmentValue::CenterOf(i), ymax * 0.05),
                    font(14),
                )))
                .map_err(err)?;
                continue;
            };
            let mut r = Rectangle::new(
                [
                    (SegmentValue::Exact(i), 0.0),
                    (SegmentValue::Exact(i + 1), s.mean),
                ],
                style(i).filled(),
            );
            r.set_margin(0, 0, 12, 12);
            c.draw_series(std::iter::once(r)).map_err(err)?;
            if s.max > s.min {
                c.draw_series(std::iter::once(PathElement::new(
                    vec![
                        (SegmentValue::CenterOf(i), s.min),
                        (SegmentValue::CenterOf(i), s.max),
                    ],
                    BLACK.stroke_width(2),
                )))
                .map_err(err)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_nothing_is_none() {
        assert_eq!(Spread::of(std::iter::empty(), |r| r.elapsed_s), None);
    }
}
