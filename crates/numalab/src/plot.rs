//! `numalab plot FILE... -o DIR` and `reproduce --plots DIR`: the figures
//! of crate `numalab-plot` for Run and RunSet files (PNG and SVG).
//!
//! Each run gets its figures, `LABEL-WORKLOAD-seedN-FIGURE.EXT` (a second
//! run of the same label, workload and seed gets `-2` after the seed);
//! with more than one set (several files, or a reproduction's
//! configurations) per-test compare charts too (`compare-TEST.EXT`). A
//! figure the records have no data for is reported on stderr once per
//! reason, naming how many runs lacked it. Columns of different machines
//! or scales are plotted with a warning (`compare` refuses them).

use numalab_plot::{Format, Skipped};
use numalab_record::RunSet;
use std::collections::BTreeMap;
use std::path::Path;

/// Parses `--format png,svg`.
pub fn formats(s: &str) -> Result<Vec<Format>, String> {
    s.split(',')
        .map(|f| match f.trim() {
            "png" => Ok(Format::Png),
            "svg" => Ok(Format::Svg),
            o => Err(format!("--format: unknown format {o:?} (png, svg)")),
        })
        .collect()
}

/// The lines reporting `skipped` (each with the stem of the run that
/// lacked it, empty for a compare figure): one per figure and reason, in
/// that order.
fn skipped_lines(skipped: &[(String, Skipped)]) -> Vec<String> {
    let mut by_reason: BTreeMap<&Skipped, Vec<&str>> = BTreeMap::new();
    for (stem, s) in skipped {
        by_reason.entry(s).or_default().push(stem);
    }
    by_reason
        .into_iter()
        .map(|(s, stems)| {
            let which = match stems.as_slice() {
                // A compare figure: not one run's.
                [""] | [] => String::new(),
                [one] => format!(" of {one}"),
                [first, rest @ ..] => {
                    format!(" of {} runs ({first} and {} more)", stems.len(), rest.len())
                }
            };
            format!("skipped {}{which}: {}", s.figure, s.reason)
        })
        .collect()
}

/// Draws the figures of `sets` into `dir` and says what it wrote.
pub fn plot_sets(sets: &[RunSet], dir: &str, formats: &[Format]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{dir}: {}", crate::out::io_text(&e)))?;
    let d = Path::new(dir);
    let mut files = 0;
    let mut skipped: Vec<(String, Skipped)> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for s in sets {
        for r in &s.runs {
            let base = numalab_plot::run_stem(&s.name, r);
            let n = seen.entry(base.clone()).or_insert(0);
            *n += 1;
            let stem = if *n == 1 { base } else { format!("{base}-{n}") };
            let p = numalab_plot::plot_run(r, d, &stem, formats)?;
            files += p.files.len();
            skipped.extend(p.skipped.into_iter().map(|k| (stem.clone(), k)));
        }
    }
    if sets.len() > 1 {
        let names: Vec<String> = sets.iter().map(|s| s.name.clone()).collect();
        if let Some(diff) = crate::compare::mismatch(&names, sets) {
            eprintln!(
                "numalab: warning: plot: {diff}; the compare charts show them side by side anyway"
            );
        }
        let p = numalab_plot::plot_compare(sets, d, formats)?;
        files += p.files.len();
        skipped.extend(p.skipped.into_iter().map(|k| (String::new(), k)));
    }
    for l in skipped_lines(&skipped) {
        eprintln!("numalab: plot: {l}");
    }
    eprintln!("numalab: plot: {files} file(s) in {dir}");
    Ok(())
}

/// `numalab plot`.
pub fn plot(files: &[String], dir: &str, format: &str) -> Result<(), String> {
    let formats = formats(format)?;
    let mut sets = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(f).map_err(|e| format!("{f}: {}", crate::out::io_text(&e)))?;
        let label = Path::new(f)
            .file_stem()
            .map_or_else(|| f.clone(), |s| s.to_string_lossy().to_string());
        sets.push(RunSet::from_json(&text, f, &label)?);
    }
    plot_sets(&sets, dir, &formats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_reported_once_with_the_runs_it_applies_to() {
        let k = |f: &str, r: &str| Skipped {
            figure: f.into(),
            reason: r.into(),
        };
        let lines = skipped_lines(&[
            ("off-numa01-seed1".into(), k("latency", "none")),
            ("off-numa01-seed2".into(), k("latency", "none")),
            ("on-numa01-seed1".into(), k("latency", "none")),
            ("on-numa01-seed1".into(), k("local-share", "real")),
            ("".into(), k("compare-numa01-latency", "column on has none")),
        ]);
        assert_eq!(
            lines,
            [
                "skipped compare-numa01-latency: column on has none",
                "skipped latency of 3 runs (off-numa01-seed1 and 2 more): none",
                "skipped local-share of on-numa01-seed1: real",
            ]
        );
    }
}
