//! An access-latency histogram (proposal 2's pmbench-like figures, the
//! record's `access_latency`) as a bar figure and a table.
//!
//! The table is read from the text [`crate::latency::latency_histogram`]
//! prints (one row per non-empty log2 band, reads and writes, then the
//! outlier line), so the page and the terminal show the same rows. The
//! figure draws the same bands as horizontal bars on a log scale, since
//! the counts span many orders of magnitude. Left out: pmbench's
//! sub-bins (the record keeps log2 bins).

use super::{escape, Block, Cell, Kind, Svg, Table};
use crate::latency::latency_histogram;
use numalab_record::AccessLatency;
use std::fmt::Write as _;

/// Bar colours: reads, writes.
const COLOURS: [&str; 2] = ["#3465a4", "#f57900"];

/// The blocks of histogram `h`, titled `title`: a figure, a table of the
/// bands and the outlier line.
pub fn latency_blocks(h: &AccessLatency, title: &str) -> Result<Vec<Block>, String> {
    let text = latency_histogram(h, "");
    let mut lines: Vec<&str> = text.lines().collect();
    let outliers = lines.pop().unwrap_or("").to_string();
    let mut rows = Vec::new();
    for l in lines.iter().skip(1) {
        let toks: Vec<&str> = l.split_whitespace().collect();
        let [band @ .., reads, writes] = toks.as_slice() else {
            return Err(format!("latency histogram: row {l:?} not understood"));
        };
        rows.push(vec![
            Cell::head(band.join(" ")),
            Cell::new(*reads, Kind::Num),
            Cell::new(*writes, Kind::Num),
        ]);
    }
    let table = Table {
        class: "latency".into(),
        caption: None,
        head: vec![vec![
            Cell::head("latency band"),
            Cell::head("reads"),
            Cell::head("writes"),
        ]],
        rows,
    };
    Ok(vec![
        Block::Figure {
            caption: format!(
                "{title}: accesses per latency band, reads and writes (bar length: log10 of 1 + count)"
            ),
            svg: Svg::new(&bars(h, title))?,
        },
        Block::Table(table),
        Block::Text(outliers),
    ])
}

/// The bands' bars as SVG.
fn bars(h: &AccessLatency, title: &str) -> String {
    let n = h.reads.len().max(h.writes.len());
    let bands: Vec<(usize, u64, u64)> = (0..n)
        .map(|i| {
            (
                i,
                h.reads.get(i).copied().unwrap_or(0),
                h.writes.get(i).copied().unwrap_or(0),
            )
        })
        .filter(|&(_, r, w)| r > 0 || w > 0)
        .collect();
    let log = |v: u64| (1.0 + v as f64).log10();
    let top = bands
        .iter()
        .map(|&(_, r, w)| log(r).max(log(w)))
        .fold(0.0, f64::max)
        .max(1e-9);
    let (left, bar_w, row_h, head) = (150.0, 560.0, 22.0, 48.0);
    let width = 800.0;
    let height = head + row_h * bands.len() as f64 + 12.0;
    let mut s = format!(
        "<svg width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\">\n<rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"#ffffff\"/>\n"
    );
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
        width / 2.0,
        escape::text(title)
    );
    for (k, (name, colour)) in ["reads", "writes"].iter().zip(COLOURS).enumerate() {
        let x = left + 160.0 * k as f64;
        let _ = writeln!(
            s,
            "<rect x=\"{x}\" y=\"28\" width=\"12\" height=\"12\" fill=\"{colour}\"/><text x=\"{}\" y=\"38\" font-size=\"12\">{name}</text>",
            x + 18.0
        );
    }
    for (row, &(i, r, w)) in bands.iter().enumerate() {
        let y = head + row_h * row as f64;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"12\">2^{i} ns</text>",
            left - 8.0,
            y + row_h / 2.0 + 4.0
        );
        for (k, (v, colour)) in [r, w].into_iter().zip(COLOURS).enumerate() {
            if v == 0 {
                continue;
            }
            let len = bar_w * log(v) / top;
            let by = y + 2.0 + 9.0 * k as f64;
            let _ = writeln!(
                s,
                "<rect x=\"{left}\" y=\"{by:.1}\" width=\"{len:.1}\" height=\"8\" fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\">{v}</text>",
                left + len + 4.0,
                by + 7.5
            );
        }
    }
    s.push_str("</svg>\n");
    s
}
