//! Drawing primitives every figure shares: the embedded font, the series
//! colours, compact axis numbers, line charts with their legend in a column
//! right of the plotting area (never over the curves), and a figure title.
//!
//! Left out: anything figure-specific (heat maps, bars, histograms live in
//! their own files).

use plotters::coord::Shift;
use plotters::prelude::*;
use std::sync::Once;

/// The embedded font's name for `plotters`.
const FONT: &str = "numalab-sans";
static FONT_BYTES: &[u8] = include_bytes!("../fonts/DejaVuSansMono.ttf");
static REGISTER: Once = Once::new();

/// Registers the embedded font (once per process) before anything draws.
pub(crate) fn font_ready() {
    REGISTER.call_once(|| {
        // The bytes are a valid TrueType font, checked by the tests.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES);
    });
}

/// A drawing result; errors are text.
pub(crate) type Res = Result<(), String>;

/// A plotters error as text.
pub(crate) fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing: {e:?}")
}

/// Width of the legend column right of a chart, pixels.
pub(crate) const LEGEND_W: u32 = 150;

/// Height of a figure's title strip, pixels.
pub(crate) const TITLE_H: u32 = 36;

/// An axis value in few characters: 1.5M, 20k, 0.35.
pub(crate) fn compact(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 10.0 {
        format!("{v:.0}")
    } else if a >= 0.1 || a == 0.0 {
        format!("{v:.2}")
    } else if a >= 0.001 {
        // Small scales: 5 ms steps must not all read 0.00.
        format!("{v:.4}")
    } else {
        format!("{v:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::compact;

    #[test]
    fn axis_numbers_keep_their_digits() {
        assert_eq!(compact(2_500_000.0), "2.5M");
        assert_eq!(compact(25_000.0), "25k");
        assert_eq!(compact(250.0), "250");
        assert_eq!(compact(0.25), "0.25");
        assert_eq!(compact(0.0), "0.00");
        assert_eq!(compact(0.0075), "0.0075");
        assert_eq!(compact(0.00025), "2.5e-4");
    }
}

/// The colour of series (or node) `i`.
pub(crate) fn style(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

/// The embedded font at `size`.
pub(crate) fn font(size: u32) -> TextStyle<'static> {
    (FONT, size).into_font().into()
}

/// Draws `title` across the top of `a` and returns the rest.
pub(crate) fn titled<DB: DrawingBackend>(
    a: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<DrawingArea<DB, Shift>, String> {
    let (top, rest) = a.split_vertically(TITLE_H);
    top.titled(title, font(20)).map_err(err)?;
    Ok(rest)
}

/// How a legend entry is marked.
#[derive(Clone, Copy)]
pub(crate) enum Mark {
    /// A short line (a curve).
    Line,
    /// A filled square (a bar or a heat-map cell).
    Block,
}

/// Splits a legend column of [`LEGEND_W`] pixels off the right of `a`;
/// returns (chart area, legend area).
pub(crate) fn with_legend<DB: DrawingBackend>(
    a: &DrawingArea<DB, Shift>,
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    let w = a.dim_in_pixel().0;
    a.split_horizontally(w.saturating_sub(LEGEND_W))
}

/// A legend entry: its name, colour and mark.
pub(crate) type Entry = (String, RGBColor, Mark);

/// Draws legend `entries` down the legend column `legend`, starting `top`
/// pixels from its top. Names longer than the column are cut with `~`
/// rather than drawn over the chart.
pub(crate) fn legend<DB: DrawingBackend>(
    legend: &DrawingArea<DB, Shift>,
    top: i32,
    entries: &[Entry],
) -> Res {
    // 13 px monospace: 8 px a character; 28 px for the mark.
    let max_chars = (LEGEND_W as usize - 34) / 8;
    for (k, (name, col, mark)) in entries.iter().enumerate() {
        let y = top + 20 * k as i32;
        match *mark {
            Mark::Line => legend
                .draw(&PathElement::new(
                    vec![(6, y + 7), (26, y + 7)],
                    col.stroke_width(2),
                ))
                .map_err(err)?,
            Mark::Block => legend
                .draw(&Rectangle::new([(8, y), (24, y + 14)], col.filled()))
                .map_err(err)?,
        }
        let shown = if name.chars().count() > max_chars {
            let cut: String = name.chars().take(max_chars - 1).collect();
            format!("{cut}~")
        } else {
            name.clone()
        };
        legend
            .draw(&Text::new(shown, (32, y), font(13)))
            .map_err(err)?;
    }
    Ok(())
}

/// A line chart of `lines` (name, points) against time: the y axis from 0
/// to `ymax` (or 5% above the largest value), the legend in a column on
/// the right when there is more than one line.
pub(crate) fn draw_lines<DB: DrawingBackend>(
    a: &DrawingArea<DB, Shift>,
    title: &str,
    ylabel: &str,
    lines: &[(String, Vec<(f64, f64)>)],
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
    let (area, key) = if lines.len() > 1 {
        let (c, k) = with_legend(a);
        (c, Some(k))
    } else {
        (a.clone(), None)
    };
    let mut c = ChartBuilder::on(&area)
        .caption(title, font(18))
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
    for (i, (_, pts)) in lines.iter().enumerate() {
        c.draw_series(LineSeries::new(
            pts.iter().copied(),
            style(i).stroke_width(2),
        ))
        .map_err(err)?;
    }
    if let Some(key) = key {
        let entries: Vec<Entry> = lines
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), style(i), Mark::Line))
            .collect();
        // Level with the top of the plotting area.
        let top = c.plotting_area().get_base_pixel().1 - area.get_base_pixel().1;
        legend(&key, top, &entries)?;
    }
    Ok(())
}
