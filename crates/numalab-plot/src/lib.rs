//! Figures of numalab records, drawn with `plotters` as PNG and SVG.
//!
//! For each run (file names `LABEL-WORKLOAD-seedN-FIGURE`, [`run_stem`]):
//!
//! - `memory`: each process's resident bytes per node over time (the
//!   `region:` columns summed per process), as numastat users read it;
//! - `local-share`: the share of accessed bytes that were node-local;
//! - `activity`: NUMA hinting faults, pages migrated and task node changes
//!   per sampling interval (vmstat columns are cumulative: differenced);
//! - `task-nodes`: a heat map of each task's node over time (from the
//!   `cpu:` columns and the machine's CPU-to-node map; grey while off CPU),
//!   drawn with as few rectangles as give the same picture (heat.rs);
//! - `latency`: the access-latency histogram of all tasks, reads and
//!   writes, counts on a log scale.
//!
//! For several RunSets (the columns of a compare), per test (workload):
//! `compare-TEST`, bars of elapsed, system time, hinting faults and pages
//! migrated, one per column; `compare-TEST-latency`, one latency curve per
//! column. Never an average across tests.
//!
//! Files are written atomically (a temporary file renamed over the
//! target). [`svg_figures`] and [`compare_svgs`] return the SVG text
//! without writing anything, for a report that embeds it.
//!
//! Text is drawn with a font embedded in the binary (DejaVu Sans Mono,
//! fonts/LICENSE-DejaVu), so no system font is needed. Legends sit in a
//! column right of the plotting area, never over a curve. Left out:
//! interactive output.

use plotters::prelude::*;
use std::path::{Path, PathBuf};

mod bars;
mod data;
mod draw;
mod figure;
mod heat;
mod latency;
mod names;
mod timeseries;

pub use data::{ProcessMemory, Series};
pub use figure::Skipped;
pub use names::{run_stem, sanitize};
use numalab_record::{RunRecord, RunSet};

use draw::{err, font_ready};
use figure::{compare_figures, run_figures, Figure};

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
    /// Figures not drawn (or drawn in part), with why.
    pub skipped: Vec<Skipped>,
}

/// The figure as SVG text.
fn svg_text(fig: &Figure) -> Result<String, String> {
    font_ready();
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        fig.draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(s)
}

/// The figure as a PNG file's bytes.
fn png_bytes(fig: &Figure) -> Result<Vec<u8>, String> {
    use image::ImageEncoder;
    font_ready();
    let mut buf = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        fig.draw(&root)?;
        root.present().map_err(err)?;
    }
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&buf, SIZE.0, SIZE.1, image::ColorType::Rgb8)
        .map_err(|e| format!("encoding PNG: {e}"))?;
    Ok(png)
}

/// Writes `fig` to `dir/stem.EXT` for each format, atomically.
fn write(
    dir: &Path,
    stem: &str,
    fig: &Figure,
    formats: &[Format],
    out: &mut Plotted,
) -> Result<(), String> {
    for &fmt in formats {
        let path = dir.join(format!("{stem}.{}", fmt.ext()));
        let bytes = match fmt {
            Format::Png => png_bytes(fig)?,
            Format::Svg => svg_text(fig)?.into_bytes(),
        };
        numalab_record::write_atomic(&path, bytes)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        out.files.push(path);
    }
    Ok(())
}

/// Draws every figure a Run record has data for into `dir`, as
/// `dir/STEM-FIGURE.EXT` (`stem` e.g. from [`run_stem`]); the figures it
/// has no data for are in [`Plotted::skipped`].
pub fn plot_run(
    rec: &RunRecord,
    dir: &Path,
    stem: &str,
    formats: &[Format],
) -> Result<Plotted, String> {
    let (figs, skipped) = run_figures(rec);
    let mut out = Plotted {
        skipped,
        ..Plotted::default()
    };
    for (name, fig) in &figs {
        write(dir, &format!("{stem}-{name}"), fig, formats, &mut out)?;
    }
    Ok(out)
}

/// Draws the compare figures of `sets` (one column each) into `dir`: per
/// test, `compare-TEST.EXT` (bars) and `compare-TEST-latency.EXT`.
pub fn plot_compare(sets: &[RunSet], dir: &Path, formats: &[Format]) -> Result<Plotted, String> {
    let (figs, skipped) = compare_figures(sets);
    let mut out = Plotted {
        skipped,
        ..Plotted::default()
    };
    for (name, fig) in &figs {
        write(dir, name, fig, formats, &mut out)?;
    }
    Ok(out)
}

/// The figures of one run as `(name, SVG text)`, names as [`plot_run`]
/// appends them to the stem (`memory`, `local-share`, `activity`,
/// `task-nodes`, `latency`); figures the record has no data for are left
/// out. Writes nothing.
pub fn svg_figures(rec: &RunRecord) -> Result<Vec<(String, String)>, String> {
    run_figures(rec)
        .0
        .iter()
        .map(|(name, fig)| Ok((name.clone(), svg_text(fig)?)))
        .collect()
}

/// The compare figures of `sets` as `(name, SVG text)`, names as
/// [`plot_compare`] gives its files (`compare-numa01`,
/// `compare-numa01-latency`, ...). Writes nothing.
pub fn compare_svgs(sets: &[RunSet]) -> Result<Vec<(String, String)>, String> {
    compare_figures(sets)
        .0
        .iter()
        .map(|(name, fig)| Ok((name.clone(), svg_text(fig)?)))
        .collect()
}

#[cfg(test)]
mod tests;
