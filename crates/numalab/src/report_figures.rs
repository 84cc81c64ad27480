//! The figures of `numalab report` as SVG text, from crate `numalab-plot`.
//!
//! `numalab-plot` draws into files; until it offers a figure as a string,
//! [`run_figures`] and [`compare_figures`] draw SVG files into a private
//! temporary directory, read them back and remove the directory. This is
//! the one place to switch when the string API lands (their bodies become
//! calls of it). Left out: PNG (the
//! page inlines SVG only) and the plot crate's notes on figures it skips
//! (the page shows the figures there are).

use numalab_plot::Format;
use numalab_record::{RunRecord, RunSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// One drawn figure: its name (`memory`, `local-share`, `activity`,
/// `task-nodes`, `compare`) and its SVG markup.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The figure's name, as in `numalab plot`'s file names.
    pub name: String,
    /// The SVG document.
    pub svg: String,
}

/// The time-series figures of run `rec` (those it has data for), in the
/// order `numalab plot` draws them.
pub fn run_figures(rec: &RunRecord) -> Result<Vec<Figure>, String> {
    let dir = Scratch::new()?;
    let drawn = numalab_plot::plot_run(rec, &dir.0, "", &[Format::Svg])?;
    read_back(&drawn.files)
}

/// The charts comparing `sets` (today one: mean elapsed, system time,
/// hinting faults and pages migrated of each).
pub fn compare_figures(sets: &[RunSet]) -> Result<Vec<Figure>, String> {
    let dir = Scratch::new()?;
    let drawn = numalab_plot::plot_compare(sets, &dir.0, &[Format::Svg])?;
    read_back(&drawn.files)
}

/// The SVG files `files`, named by their stems.
fn read_back(files: &[PathBuf]) -> Result<Vec<Figure>, String> {
    files
        .iter()
        .map(|f| {
            let svg = std::fs::read_to_string(f)
                .map_err(|e| format!("{}: {}", f.display(), crate::out::io_text(&e)))?;
            let name = f
                .file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().to_string());
            Ok(Figure { name, svg })
        })
        .collect()
}

/// A directory of our own under the system's temporary directory,
/// removed (with what is in it) when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        // create_dir fails on an existing path, so a directory left by
        // another process is never shared: try the next name.
        for _ in 0..100 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let p = base.join(format!("numalab-report-{}-{n}", std::process::id()));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(Scratch(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(scratch_error(&p, &e)),
            }
        }
        Err(format!(
            "{}: no free name for a temporary directory",
            base.display()
        ))
    }
}

fn scratch_error(p: &Path, e: &std::io::Error) -> String {
    format!(
        "temporary directory {}: {}",
        p.display(),
        crate::out::io_text(e)
    )
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Our scratch directories under the temporary directory.
    fn scratch_dirs() -> usize {
        let mine = format!("numalab-report-{}-", std::process::id());
        std::fs::read_dir(std::env::temp_dir())
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().starts_with(&mine))
                    .count()
            })
            .unwrap_or(0)
    }

    #[test]
    fn figures_come_back_as_svg_and_the_scratch_directory_goes() {
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
        assert_eq!(names, ["compare"]);
        assert_eq!(scratch_dirs(), 0);
    }
}
