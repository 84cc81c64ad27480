//! The figures of `numalab report` as SVG text, from crate `numalab-plot`
//! (its string API: nothing is written to disk). Left out: PNG (the page
//! inlines SVG only), the plot crate's per-run latency chart (the page has
//! its own latency section, with the histogram's table beside its bars),
//! and the plot crate's notes on figures it skips (the page shows the
//! figures there are).

use numalab_record::{RunRecord, RunSet};

/// One drawn figure: its name (`memory`, `local-share`, `activity`,
/// `task-nodes`, `compare-TEST`, ...) and its SVG markup.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The figure's name, as in `numalab plot`'s file names.
    pub name: String,
    /// The SVG document.
    pub svg: String,
}

fn figures(v: Vec<(String, String)>) -> Vec<Figure> {
    v.into_iter()
        .map(|(name, svg)| Figure { name, svg })
        .collect()
}

/// The time-series figures of run `rec` (those it has data for), in the
/// order `numalab plot` draws them.
pub fn run_figures(rec: &RunRecord) -> Result<Vec<Figure>, String> {
    let mut v = numalab_plot::svg_figures(rec)?;
    v.retain(|(name, _)| name != "latency");
    Ok(figures(v))
}

/// The charts comparing `sets`: one per workload, and its latency curves
/// where the runs carry them.
pub fn compare_figures(sets: &[RunSet]) -> Result<Vec<Figure>, String> {
    Ok(figures(numalab_plot::compare_svgs(sets)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_come_back_as_svg_one_compare_chart_per_workload() {
        let m = crate::runner::load_machine("tiny-2n").unwrap();
        let k = crate::runner::knobs(&["kernel.numa_balancing=1"]).unwrap();
        let (rec, _) = crate::runner::run_model(&m, "numa02", &k, 1, 0.02, None, false).unwrap();
        let figs = run_figures(&rec).unwrap();
        let names: Vec<&str> = figs.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["memory", "local-share", "activity", "task-nodes"]);
        assert!(figs
            .iter()
            .all(|f| f.svg.starts_with("<svg") && f.svg.trim_end().ends_with("</svg>")));
        let sets = [
            RunSet::new("a", vec![rec.clone()]),
            RunSet::new("b", vec![rec]),
        ];
        let names: Vec<String> = compare_figures(&sets)
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert!(
            names.first().is_some_and(|n| n.starts_with("compare-")),
            "{names:?}"
        );
    }
}
