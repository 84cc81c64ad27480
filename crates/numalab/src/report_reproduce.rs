//! Reproductions in the HTML report: `numalab reproduce NAME --html DIR`,
//! and `numalab report DIR` of a directory `reproduce --json-dir DIR`
//! wrote.
//!
//! `--json-dir` writes each configuration's RunSet (`LABEL.json`, as
//! before) and now also `reproduction.json`: for each reproduction run,
//! its name, description, source, machine, scale, iterations, seed, the
//! configuration labels, the modeled-vs-published rows with their
//! verdicts ([`crate::reproduce::FigureRow`]), the notes on known misses
//! and tolerances, and the tally. That and the RunSets are all the page
//! needs, so `report DIR` writes the same page as `reproduce --html` did
//! (the verdicts are the ones judged when the reproduction ran, not
//! judged again). Left out: reading RunSets of a reproduction run by an
//! older numalab without `reproduction.json` (rerun it).

use crate::failure::Failure;
use crate::reproduce::{self, Options, Outcome};
use numalab_record::RunSet;
use numalab_report::html::{Block, Cell, Kind, Page, Section, Table};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Value of `reproduction.json`'s `format` field.
const FORMAT: &str = "numalab-reproduction";
/// Version of `reproduction.json` written by this build.
const VERSION: u32 = 1;
/// The file's name in the `--json-dir` directory.
const FILE: &str = "reproduction.json";

/// `reproduction.json`: what `reproduce --json-dir` ran and judged.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct SavedFile {
    format: String,
    version: u32,
    reproductions: Vec<Saved>,
}

/// One reproduction as run and judged.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Saved {
    name: String,
    description: String,
    source: String,
    machine: String,
    scale: f64,
    iterations: u32,
    seed: u64,
    configs: Vec<String>,
    figures: Vec<SavedFigure>,
    notes: Vec<String>,
    tally: reproduce::Tally,
}

/// A row of the modeled-vs-published table.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct SavedFigure {
    config: String,
    metric: String,
    published: Option<f64>,
    /// A number, or `NaN`/`inf` as text (JSON has neither).
    modeled: serde_json::Value,
    tolerance: Option<String>,
    verdict: String,
    judged: bool,
    unexpected: bool,
}

impl SavedFigure {
    fn modeled(&self) -> f64 {
        self.modeled
            .as_f64()
            .or_else(|| self.modeled.as_str().and_then(|s| s.parse().ok()))
            .unwrap_or(f64::NAN)
    }
}

impl Saved {
    /// What `o` (run with `opts`) ran and judged.
    fn of(o: &Outcome, opts: &Options) -> Result<Saved, String> {
        let r = reproduce::find(o.name)?;
        // The notes are the lines the text prints under the table.
        let notes = o
            .text
            .lines()
            .filter(|l| {
                is_footnote(l)
                    || l.starts_with("tolerances: ")
                    || l.starts_with("(modeled at --scale")
            })
            .map(str::to_string)
            .collect();
        Ok(Saved {
            name: o.name.to_string(),
            description: r.description.to_string(),
            source: r.source.to_string(),
            machine: r.machine.to_string(),
            scale: opts.scale,
            iterations: opts.iterations.unwrap_or(r.iterations),
            seed: opts.seed,
            configs: o.sets.iter().map(|s| s.name.clone()).collect(),
            figures: o
                .figures
                .iter()
                .map(|f| SavedFigure {
                    config: f.config.clone(),
                    metric: f.metric.clone(),
                    published: f.published,
                    modeled: number(f.modeled),
                    tolerance: f.tolerance.clone(),
                    verdict: f.verdict.clone(),
                    judged: f.judged,
                    unexpected: f.unexpected,
                })
                .collect(),
            notes,
            tally: o.tally,
        })
    }
}

/// `x` as JSON: a number, or its text for NaN and the infinities (which
/// JSON numbers cannot be; [`SavedFigure::modeled`] reads both).
fn number(x: f64) -> serde_json::Value {
    serde_json::Number::from_f64(x).map_or_else(
        || serde_json::Value::String(x.to_string()),
        serde_json::Value::Number,
    )
}

/// `[N] ...`: a footnote on a known miss.
fn is_footnote(l: &str) -> bool {
    l.strip_prefix('[')
        .and_then(|r| r.split_once("] "))
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `numalab reproduce`: as [`reproduce::reproduce`], and with `--json-dir`
/// also `reproduction.json`, with `--html DIR` also the page.
pub fn reproduce(
    name: &str,
    opts: &Options,
    check: bool,
    html: Option<&str>,
) -> Result<(), Failure> {
    if html.is_none() && opts.json_dir.is_none() {
        return reproduce::reproduce(name, opts, check);
    }
    let outcomes = reproduce::outcomes(name, opts)?;
    for o in &outcomes {
        crate::out::print(&o.text)?;
    }
    if name == "all" {
        crate::out::print(&reproduce::summary(&outcomes))?;
    }
    let saved = outcomes
        .iter()
        .map(|o| Saved::of(o, opts))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(dir) = &opts.json_dir {
        let file = SavedFile {
            format: FORMAT.into(),
            version: VERSION,
            reproductions: saved.clone(),
        };
        let mut text =
            serde_json::to_string_pretty(&file).map_err(|e| format!("{dir}/{FILE}: {e}"))?;
        text.push('\n');
        crate::out::write_file("--json-dir", &Path::new(dir).join(FILE), &text)?;
    }
    if let Some(dir) = html {
        let with_sets: Vec<(Saved, Vec<RunSet>)> = saved
            .into_iter()
            .zip(outcomes.iter().map(|o| o.sets.clone()))
            .collect();
        crate::report_page::write_page(dir, &page(&with_sets)?)?;
    }
    if check {
        reproduce::check(&outcomes)?;
    }
    Ok(())
}

/// The reproductions a `--json-dir` directory holds, with their RunSets.
pub fn load_dir(dir: &str) -> Result<Vec<(Saved, Vec<RunSet>)>, String> {
    let path = Path::new(dir).join(FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {} (a directory given to `numalab report` must be one `numalab reproduce NAME --json-dir DIR` wrote)",
            path.display(),
            crate::out::io_text(&e)
        )
    })?;
    let origin = path.display().to_string();
    let file: SavedFile = serde_json::from_str(&text).map_err(|e| format!("{origin}: {e}"))?;
    if file.format != FORMAT {
        return Err(format!("{origin}: field `format` is not {FORMAT:?}"));
    }
    if file.version != VERSION {
        return Err(format!(
            "{origin}: version {}, this build reads version {VERSION}",
            file.version
        ));
    }
    let mut out = Vec::new();
    for r in file.reproductions {
        let mut sets = Vec::new();
        for label in &r.configs {
            let p = Path::new(dir).join(format!("{label}.json"));
            let text = std::fs::read_to_string(&p)
                .map_err(|e| format!("{}: {}", p.display(), crate::out::io_text(&e)))?;
            let set = RunSet::from_json(&text, &p.display().to_string(), label)?;
            if set.name != *label {
                return Err(format!(
                    "{}: a RunSet labelled {:?}, but {origin} lists configuration {label:?} of {}",
                    p.display(),
                    set.name,
                    r.name
                ));
            }
            sets.push(set);
        }
        out.push((r, sets));
    }
    Ok(out)
}

/// The page of `reproductions`: with several, a summary table of their
/// tallies first; then each one's modeled-vs-published section and its
/// comparison's sections.
pub fn page(reproductions: &[(Saved, Vec<RunSet>)]) -> Result<Page, String> {
    let names: Vec<&str> = reproductions.iter().map(|(r, _)| r.name.as_str()).collect();
    let mut page = Page {
        title: format!("numalab reproduce {}", names.join(", ")),
        intro: vec![
            "Published experiments modeled: each published figure beside the model's, with its tolerance and verdict (docs/reproductions.md)."
                .into(),
        ],
        sections: Vec::new(),
    };
    if reproductions.len() > 1 {
        page.sections.push(Section {
            title: "summary".into(),
            blocks: vec![Block::Table(summary_table(reproductions))],
        });
    }
    for (r, sets) in reproductions {
        page.sections.push(Section {
            title: format!("{}: modeled vs published", r.name),
            blocks: verdict_blocks(r),
        });
        page.sections
            .extend(crate::report_page::set_sections(&r.name, sets)?);
    }
    Ok(page)
}

/// Each reproduction's tally, and the total (`reproduce all`'s summary).
fn summary_table(reproductions: &[(Saved, Vec<RunSet>)]) -> Table {
    let row = |name: &str, t: &reproduce::Tally| {
        let mut r = vec![Cell::head(name)];
        r.extend(
            t.counts()
                .iter()
                .map(|v| Cell::new(v.to_string(), Kind::Num)),
        );
        r
    };
    let mut rows: Vec<Vec<Cell>> = reproductions
        .iter()
        .map(|(r, _)| row(&r.name, &r.tally))
        .collect();
    rows.push(row(
        "all",
        &reproduce::Tally::total(reproductions.iter().map(|(r, _)| &r.tally)),
    ));
    let cols = std::iter::once("reproduction").chain(reproduce::TALLY_COLUMNS);
    Table {
        class: "fields".into(),
        caption: None,
        head: vec![cols.map(Cell::head).collect()],
        rows,
    }
}

/// The reproduction's header lines, the modeled-vs-published table with
/// a verdict per figure (as the text prints it), and the notes.
fn verdict_blocks(r: &Saved) -> Vec<Block> {
    let mut out = vec![
        Block::Text(r.description.clone()),
        Block::Text(format!("published: {}", r.source)),
        Block::Text(format!(
            "machine {}, scale {}, {} iteration(s) from seed {}",
            r.machine, r.scale, r.iterations, r.seed
        )),
    ];
    let head = [
        "config",
        "metric",
        "published",
        "modeled",
        "ratio",
        "tol",
        "verdict",
    ];
    let rows = r
        .figures
        .iter()
        .map(|f| {
            let m = f.modeled();
            let published = f.published.map_or("-".to_string(), |v| format!("{v:.2}"));
            let ratio = match f.published {
                Some(v) if f.judged && v != 0.0 => format!("{:.2}x", m / v),
                _ => "-".to_string(),
            };
            let verdict = if f.unexpected {
                Kind::Bad
            } else if !f.judged {
                Kind::Muted
            } else if f.verdict.contains("known miss [") {
                Kind::Known
            } else if f.verdict.starts_with("within tolerance") {
                Kind::Good
            } else {
                Kind::Text
            };
            vec![
                Cell::head(f.config.clone()),
                Cell::new(f.metric.clone(), Kind::Text),
                Cell::new(published, Kind::Num),
                Cell::new(format!("{m:.3}"), Kind::Num),
                Cell::new(ratio, Kind::Num),
                Cell::new(f.tolerance.clone().unwrap_or_else(|| "-".into()), Kind::Num),
                Cell::new(f.verdict.clone(), verdict),
            ]
        })
        .collect();
    out.push(Block::Table(Table {
        class: "verdicts".into(),
        caption: None,
        head: vec![head.iter().map(|h| Cell::head(*h)).collect()],
        rows,
    }));
    if !r.notes.is_empty() {
        out.push(Block::List(r.notes.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_table_has_the_text_summary_columns() {
        let text = crate::reproduce::summary(&[]);
        let want: Vec<&str> = text
            .lines()
            .nth(1)
            .expect("a header line")
            .split_whitespace()
            .collect();
        let t = summary_table(&[]);
        let got: Vec<String> = t.head[0].iter().map(|c| c.text.clone()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn footnotes_are_numbered_lines() {
        assert!(is_footnote("[1] every thread first writes"));
        assert!(is_footnote("[12] x"));
        assert!(!is_footnote("[] x"));
        assert!(!is_footnote("[k] x"));
        assert!(!is_footnote("tolerances: ±10%: ..."));
    }

    #[test]
    fn modeled_figures_survive_json_even_when_not_finite() {
        for x in [0.112809, -3.5, f64::INFINITY, f64::NEG_INFINITY] {
            let f = SavedFigure {
                config: "c".into(),
                metric: "m".into(),
                published: Some(1.0),
                modeled: number(x),
                tolerance: None,
                verdict: "v".into(),
                judged: true,
                unexpected: false,
            };
            let back: SavedFigure =
                serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
            assert_eq!(back.modeled().to_bits(), x.to_bits(), "{x}");
        }
        assert_eq!(number(f64::NAN), serde_json::Value::String("NaN".into()));
    }
}
