//! `numalab plot FILE... -o DIR` and `reproduce --plots DIR`: the figures
//! of crate `numalab-plot` for Run and RunSet files (PNG and SVG).
//!
//! Each run gets its time-series figures (`LABEL-N-memory.png`, ...);
//! with more than one set (several files, or a reproduction's
//! configurations) a `compare` bar chart too. Figures a record has no data
//! for are listed as skipped on stderr.

use numalab_plot::{Format, Plotted};
use numalab_record::RunSet;
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

/// Draws the figures of `sets` into `dir` and says what it wrote.
pub fn plot_sets(sets: &[RunSet], dir: &str, formats: &[Format]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{dir}: {}", crate::out::io_text(&e)))?;
    let d = Path::new(dir);
    let mut all = Plotted::default();
    for s in sets {
        for (i, r) in s.runs.iter().enumerate() {
            let prefix = format!("{}-{}-", sanitize(&s.name), i + 1);
            let p = numalab_plot::plot_run(r, d, &prefix, formats)?;
            all.files.extend(p.files);
            all.skipped.extend(p.skipped);
        }
    }
    if sets.len() > 1 {
        all.files
            .extend(numalab_plot::plot_compare(sets, d, formats)?.files);
    }
    for s in &all.skipped {
        eprintln!("numalab: plot: skipped {s}");
    }
    eprintln!("numalab: plot: {} file(s) in {dir}", all.files.len());
    Ok(())
}

/// A label as a file-name part.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
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
