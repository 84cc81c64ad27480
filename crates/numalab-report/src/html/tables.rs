//! The mmtests compare-kernels text ([`crate::compare_table`],
//! [`crate::compare_cgroups`]) as HTML tables.
//!
//! The text is the reference: each of its blocks (separated by blank
//! lines) becomes one table whose rows hold the text's own tokens, so the
//! page shows exactly the figures `numalab compare` prints. A row is read
//! from the right, one cell per column: a value (`191.32`, `n/a`, `-`)
//! with, in the summary tables, its delta as printed (`(  45.40%)`,
//! `*   8.08%*`, `(    n/a )`); what is left is the row's group
//! (`Amean`, `Duration`, `Ops`, the cgroup) and its name. The header is
//! the column labels, whole (the text splits them over two lines at the
//! first `-`, as mmtests does). A one-line block is a note and becomes a
//! paragraph; a longer block that does not read as a table is kept as
//! preformatted text rather than guessed at.

use super::{Block, Cell, Kind, Table};
use crate::compare::split_label;

/// One value of a row and its delta, as printed.
#[derive(Clone, Debug, PartialEq)]
struct Value {
    value: String,
    delta: Option<String>,
}

/// A row read from the text: group, name and one value per column.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    group: String,
    name: String,
    values: Vec<Value>,
}

/// The blocks of compare text `text` whose columns are labelled `labels`
/// (the sets' names, in order): one [`Block::Table`] per text block, or
/// [`Block::Pre`] for a block that does not read as a table.
pub fn compare_blocks(text: &str, labels: &[String]) -> Vec<Block> {
    // The text prints a second header line when a label has a `-`.
    let header_lines = if labels.iter().any(|l| !split_label(l).0.is_empty()) {
        2
    } else {
        1
    };
    let mut out = Vec::new();
    for chunk in blocks(text) {
        let lines: Vec<&str> = chunk.lines().collect();
        let rows: Option<Vec<Row>> = if lines.len() > header_lines {
            lines[header_lines..]
                .iter()
                .map(|l| read_row(l, labels.len()))
                .collect()
        } else {
            None
        };
        match rows {
            Some(rows) => out.push(Block::Table(table(&rows, labels))),
            // A note between the tables (e.g. which tests a total covers).
            None if lines.len() == 1 => out.push(Block::Text(lines[0].trim().to_string())),
            None => out.push(Block::Pre(chunk)),
        }
    }
    out
}

/// The text's blocks: runs of non-blank lines.
fn blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for l in text.lines() {
        if l.trim().is_empty() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push_str(l);
            cur.push('\n');
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The table of `rows` under `labels`: a delta column beside each value
/// column when any row has deltas.
fn table(rows: &[Row], labels: &[String]) -> Table {
    let deltas = rows
        .iter()
        .any(|r| r.values.iter().any(|v| v.delta.is_some()));
    let span = if deltas { 2 } else { 1 };
    let mut head = vec![Cell::head("").spanning(2)];
    head.extend(labels.iter().map(|l| Cell::head(l.clone()).spanning(span)));
    let body = rows
        .iter()
        .map(|r| {
            let mut cells = vec![Cell::head(r.group.clone()), Cell::head(r.name.clone())];
            for v in &r.values {
                cells.push(Cell::new(v.value.clone(), Kind::Num));
                if deltas {
                    let d = v.delta.clone().unwrap_or_default();
                    let kind = if d.starts_with('*') {
                        Kind::Significant
                    } else {
                        Kind::Delta
                    };
                    cells.push(Cell::new(d, kind));
                }
            }
            cells
        })
        .collect();
    Table {
        class: "compare".into(),
        caption: None,
        head: vec![head],
        rows: body,
    }
}

/// A token of a line and where it is.
#[derive(Clone, Copy, Debug)]
struct Token<'a> {
    text: &'a str,
    start: usize,
    end: usize,
}

fn tokens(line: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push(Token {
                    text: &line[s..i],
                    start: s,
                    end: i,
                });
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(Token {
            text: &line[s..],
            start: s,
            end: line.len(),
        });
    }
    out
}

/// Whether `t` is a value as the tables print one: a number (`inf` and
/// `NaN` too), `n/a`, or `-` (a column without the cgroup).
fn is_value(t: &str) -> bool {
    t == "n/a" || t == "-" || t.parse::<f64>().is_ok()
}

/// Reads a row of `columns` values from `line`; None when it does not
/// read as one.
fn read_row(line: &str, columns: usize) -> Option<Row> {
    let toks = tokens(line);
    let mut end = toks.len();
    let mut values = Vec::with_capacity(columns);
    for _ in 0..columns {
        let (value, delta, used) = read_value(line, &toks[..end])?;
        values.push(Value { value, delta });
        end -= used;
    }
    values.reverse();
    let rest = &toks[..end];
    let (first, others) = rest.split_first()?;
    let name = match (others.first(), others.last()) {
        (Some(a), Some(b)) => line[a.start..b.end].to_string(),
        _ => String::new(),
    };
    Some(Row {
        group: first.text.to_string(),
        name,
        values,
    })
}

/// The last value of `toks` (with its delta, if it has one) and how many
/// tokens it took.
fn read_value(line: &str, toks: &[Token]) -> Option<(String, Option<String>, usize)> {
    let last = toks.last()?;
    // The delta's tokens: `(`..`%)`, `*`..`%*` or `(`, `n/a`, `)`.
    let opener = if last.text.ends_with("%)") || last.text == ")" {
        Some('(')
    } else if last.text.ends_with("%*") {
        Some('*')
    } else {
        None
    };
    let Some(opener) = opener else {
        return is_value(last.text).then(|| (last.text.to_string(), None, 1));
    };
    let n = toks.len();
    let first = (1..=3.min(n)).find(|&k| toks[n - k].text.starts_with(opener))?;
    let delta = line[toks[n - first].start..last.end].to_string();
    let value = toks.get(n.checked_sub(first + 1)?)?;
    is_value(value.text).then(|| (value.text.to_string(), Some(delta), first + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_rows_keep_values_and_deltas_as_printed() {
        let r = read_row(
            "Amean     elsp-NUMA01      191.32 (   0.00%)      104.46 *  45.40%*",
            2,
        )
        .unwrap();
        assert_eq!(r.group, "Amean");
        assert_eq!(r.name, "elsp-NUMA01");
        assert_eq!(r.values[0].value, "191.32");
        assert_eq!(r.values[0].delta.as_deref(), Some("(   0.00%)"));
        assert_eq!(r.values[1].delta.as_deref(), Some("*  45.40%*"));
        let wide = read_row("Max       syst-NUMA02  0.12 (   0.00%)  0.33 (-178.87%)", 2).unwrap();
        assert_eq!(wide.values[1].delta.as_deref(), Some("(-178.87%)"));
    }

    #[test]
    fn missing_columns_and_names_with_spaces() {
        let r = read_row(
            "Amean     elsp-NUMA02        4.00 (    n/a )         n/a",
            2,
        )
        .unwrap();
        assert_eq!(r.values[0].delta.as_deref(), Some("(    n/a )"));
        assert_eq!(r.values[1].value, "n/a");
        assert_eq!(r.values[1].delta, None);
        let r = read_row("Ops NUMA hint local faults %       15371.00", 1).unwrap();
        assert_eq!(
            (r.group.as_str(), r.name.as_str()),
            ("Ops", "NUMA hint local faults %")
        );
        let r = read_row(
            "/mytest numa_pages_migrated              -             20",
            2,
        )
        .unwrap();
        assert_eq!(r.values[0].value, "-");
        assert_eq!(r.values[1].value, "20");
    }

    #[test]
    fn lines_that_are_not_rows_are_refused() {
        assert!(read_row("cgroup /x: not in any run", 1).is_none());
        assert!(read_row("12.0", 1).is_none());
        assert!(read_row("Amean x 1.0", 2).is_none());
    }
}
