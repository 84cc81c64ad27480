//! The sections of one comparison in the HTML report, shared by
//! `numalab report` and `reproduce --html`, and writing the page.
//!
//! For a comparison of sets the page has the mmtests compare tables (and
//! each cgroup's memory.stat NUMA counters) and the compare chart; per
//! test, each column's first run's figures side by side (memory per node
//! over time, local share, activity, each task's node) and access-latency
//! histograms; the knobs; the machine. The HTML is `numalab_report::html`'s; the
//! page is written atomically. Left out: figures of every iteration (the
//! tables cover them).

use crate::report_figures::{compare_figures, run_figures};
use numalab_record::{RunRecord, RunSet};
use numalab_report::html::{self, Block, Page, Section, Svg};
use std::path::Path;

/// Writes `page` to `dir/index.html` atomically (creating `dir`) and
/// says where on stderr.
pub fn write_page(dir: &str, page: &Page) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{dir}: {}", crate::out::io_text(&e)))?;
    let path = Path::new(dir).join("index.html");
    let text = html::render(page);
    crate::out::write_file("", &path, &text)?;
    eprintln!(
        "numalab: report: {} ({} KiB)",
        path.display(),
        text.len().div_ceil(1024)
    );
    Ok(())
}

/// The sections of one comparison of `sets`, their titles starting with
/// `prefix` (a reproduction's name, or nothing): compare tables, each
/// column's runs, knobs, machine.
pub fn set_sections(prefix: &str, sets: &[RunSet]) -> Result<Vec<Section>, String> {
    let title = |t: &str| {
        if prefix.is_empty() {
            t.to_string()
        } else {
            format!("{prefix}: {t}")
        }
    };
    let mut out = vec![Section {
        title: title("compare"),
        blocks: compare_blocks(sets)?,
    }];
    out.push(Section {
        title: title("runs"),
        blocks: run_blocks(sets)?,
    });
    out.push(Section {
        title: title("knobs"),
        blocks: vec![
            Block::Text(
                "Each run's settings; knobs whose value differs between columns come first, marked."
                    .into(),
            ),
            Block::Table(html::settings_table(sets)),
        ],
    });
    out.push(Section {
        title: title("machine"),
        blocks: machine_blocks(sets),
    });
    Ok(out)
}

/// The compare tables, each cgroup's memory.stat table and the compare
/// chart.
fn compare_blocks(sets: &[RunSet]) -> Result<Vec<Block>, String> {
    let labels: Vec<String> = sets.iter().map(|s| s.name.clone()).collect();
    let mut out = vec![Block::Text(
        "The mmtests compare-kernels tables, as `numalab compare` prints them: deltas against the first column, * marking a significant difference (Welch's t-test, 95%)."
            .into(),
    )];
    out.extend(html::compare_blocks(
        &numalab_report::compare_table(sets),
        &labels,
    ));
    for cg in cgroups_with_numa_counters(sets) {
        out.push(Block::Heading(format!("cgroup {cg}: memory.stat numa_*")));
        out.extend(html::compare_blocks(
            &numalab_report::compare_cgroups(sets, &cg),
            &labels,
        ));
    }
    if sets.len() > 1 {
        for f in compare_figures(sets)? {
            out.push(Block::Figure {
                caption: format!(
                    "{}: mean over each column's runs (elapsed, system time, NUMA hinting faults, pages migrated)",
                    f.name
                ),
                svg: Svg::new(&f.svg)?,
            });
        }
    }
    Ok(out)
}

/// The cgroups below the root whose memory.stat has `numa_*` counters in
/// some run, in path order (the root's are the Ops block's).
fn cgroups_with_numa_counters(sets: &[RunSet]) -> Vec<String> {
    let mut out: Vec<String> = sets
        .iter()
        .flat_map(|s| &s.runs)
        .flat_map(|r| &r.cgroups)
        .filter(|(path, c)| {
            path.as_str() != "/" && c.memory_stat.keys().any(|k| k.starts_with("numa_"))
        })
        .map(|(path, _)| path.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Each distinct machine of the runs as tables, with the columns that
/// ran on it.
fn machine_blocks(sets: &[RunSet]) -> Vec<Block> {
    // The first run of each distinct machine stands for it.
    let mut seen: Vec<(&numalab_record::RunRecord, Vec<&str>)> = Vec::new();
    for s in sets {
        for r in &s.runs {
            match seen.iter_mut().find(|(m, _)| m.machine == r.machine) {
                Some((_, labels)) => {
                    if !labels.contains(&s.name.as_str()) {
                        labels.push(&s.name);
                    }
                }
                None => seen.push((r, vec![&s.name])),
            }
        }
    }
    let mut out = Vec::new();
    for (m, labels) in seen {
        let name = m.machine_name().unwrap_or("?");
        out.extend(html::json_blocks(
            &m.machine,
            &format!("machine {name} (columns {})", labels.join(", ")),
        ));
    }
    out
}

/// Per test, each column's first run of it: a line of its figures, then
/// each figure kind with the columns side by side (the page lays figures
/// out two to a row), then the access-latency histograms.
fn run_blocks(sets: &[RunSet]) -> Result<Vec<Block>, String> {
    let mut out = vec![Block::Text(
        "Figures of each column's first run of each test, columns side by side (the tables above cover every run)."
            .into(),
    )];
    let mut tests: Vec<String> = Vec::new();
    for r in sets.iter().flat_map(|s| &s.runs) {
        let t = r.test_name();
        if !tests.contains(&t) {
            tests.push(t);
        }
    }
    for test in &tests {
        // (column label, its first run of the test)
        let firsts: Vec<(&str, &RunRecord)> = sets
            .iter()
            .filter_map(|s| {
                let r = s.runs.iter().find(|r| r.test_name() == *test)?;
                Some((s.name.as_str(), r))
            })
            .collect();
        out.push(Block::Heading(test.clone()));
        out.push(Block::List(
            firsts
                .iter()
                .map(|(label, r)| {
                    format!(
                        "{label}: seed {}, scale {}: {}",
                        r.seed,
                        r.scale,
                        run_line(r)
                    )
                })
                .collect(),
        ));
        let drawn = firsts
            .iter()
            .map(|(label, r)| Ok((*label, run_figures(r)?)))
            .collect::<Result<Vec<_>, String>>()?;
        let mut kinds: Vec<&str> = Vec::new();
        for f in drawn.iter().flat_map(|(_, figs)| figs) {
            if !kinds.contains(&f.name.as_str()) {
                kinds.push(&f.name);
            }
        }
        for kind in kinds {
            for (label, figs) in &drawn {
                if let Some(f) = figs.iter().find(|f| f.name == kind) {
                    out.push(Block::Figure {
                        caption: format!("{label}: {test}: {kind}"),
                        svg: Svg::new(&f.svg)?,
                    });
                }
            }
        }
        for (label, r) in &firsts {
            for (path, cg) in &r.cgroups {
                if let Some(h) = &cg.access_latency {
                    out.extend(html::latency_blocks(
                        h,
                        &format!("{label}: {test}: cgroup {path} access latency"),
                    )?);
                }
            }
        }
    }
    Ok(out)
}

/// One run's times and score in a line.
fn run_line(r: &RunRecord) -> String {
    let mut s = format!(
        "elapsed {:.2} s, user {:.2} s, system {:.2} s",
        r.elapsed_s, r.user_s, r.sys_s
    );
    if let Some(sc) = &r.score {
        s.push_str(&format!("; {} {:.2} {}", sc.name, sc.value, sc.unit));
    }
    s.push_str(&format!(
        "; numa_hint_faults {}, numa_pages_migrated {}",
        r.vm("numa_hint_faults"),
        r.vm("numa_pages_migrated")
    ));
    s
}
