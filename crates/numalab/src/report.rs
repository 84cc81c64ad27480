//! `numalab report INPUT... -o DIR`: one self-contained HTML page,
//! DIR/index.html, of Run/RunSet files and reproductions, as kernel
//! developers share mmtests results.
//!
//! Run and RunSet files make one comparison (one column each, the first
//! the base, as `numalab compare` takes them); a directory that
//! `numalab reproduce NAME --json-dir DIR` wrote is a reproduction, with
//! its modeled-vs-published table and verdicts
//! ([`crate::report_reproduce`]). The sections of a comparison are
//! [`crate::report_page`]'s. Left out: the text summary of each run
//! (`numalab run` prints it) and traces.

use crate::report_page::{set_sections, write_page};
use numalab_record::RunSet;
use numalab_report::html::Page;
use std::path::Path;

/// `numalab report`: reads `inputs`, writes `out/index.html`.
pub fn report(inputs: &[String], out: &str, force: bool) -> Result<(), String> {
    let mut files = Vec::new();
    let mut sets = Vec::new();
    let mut reproductions = Vec::new();
    for input in inputs {
        if Path::new(input).is_dir() {
            reproductions.extend(crate::report_reproduce::load_dir(input)?);
        } else {
            sets.push(load_set(input)?);
            files.push(input.clone());
        }
    }
    if let Some(diff) = crate::compare::mismatch(&files, &sets) {
        if !force {
            return Err(format!(
                "report: {diff}; the columns would not be comparable (add --force to compare anyway)"
            ));
        }
        eprintln!("numalab: warning: report: {diff}");
    }
    let mut page = Page::default();
    if !sets.is_empty() {
        let labels: Vec<&str> = sets.iter().map(|s| s.name.as_str()).collect();
        page.title = format!("numalab report: {}", labels.join(" vs "));
        page.intro.push(format!(
            "Columns (the first is the base): {}.",
            sets.iter()
                .zip(&files)
                .map(|(s, f)| format!("{} ({f}, {} run(s))", s.name, s.runs.len()))
                .collect::<Vec<_>>()
                .join("; ")
        ));
        page.sections.extend(set_sections("", &sets)?);
    }
    if !reproductions.is_empty() {
        let r = crate::report_reproduce::page(&reproductions)?;
        if page.title.is_empty() {
            page.title = r.title;
        }
        page.intro.extend(r.intro);
        page.sections.extend(r.sections);
    }
    write_page(out, &page)
}

/// A Run or RunSet file as one column, labelled by its file stem (as
/// `numalab compare` labels it).
pub fn load_set(path: &str) -> Result<RunSet, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{path}: {}", crate::out::io_text(&e)))?;
    let label = Path::new(path)
        .file_stem()
        .map_or_else(|| path.to_string(), |s| s.to_string_lossy().to_string());
    RunSet::from_json(&text, path, &label)
}
