//! `numalab sweep SWEEP.toml`: many model runs over a grid or a list of
//! knobs, workloads, machines and seeds, on all cores. docs/sweeps.md
//! documents the format; [`FORMAT_HELP`] is its summary in `sweep --help`.
//!
//! A grid (every combination):
//!
//! ```toml
//! name = "scan-delay"           # optional; default the file's stem
//! scale = 0.1                   # default 1
//! machines = ["spr-4n"]
//! workloads = ["numa01-threadlocal"]
//! seeds = [1, 2]                # default [1]
//! [knobs]                       # every combination of the values
//! "kernel.numa_balancing" = ["0", "1"]
//! ```
//!
//! or, instead of the grid, a list of points:
//!
//! ```toml
//! [[points]]
//! machine = "spr-4n"
//! workload = "numa01"
//! seed = 1                      # default 1
//! set = ["kernel.numa_balancing=0"]
//! ```
//!
//! Points are numbered in a fixed order (machines, workloads, knob
//! combinations with knobs in name order, seeds; or the list's order). Each
//! point's Run JSON is written to `OUT/points/NNNNN.json` as it completes
//! (atomically), so a stopped sweep resumes where it stopped: a point
//! whose file reads back with the same machine, workload, seed and
//! settings is not run again. At the end `OUT/results.csv` and
//! `OUT/results.jsonl` gather one row per point in point order: the
//! files do not depend on `-j` or on the order points completed.
//! Distributing points over hosts is the Python package's
//! `numalab.sweep(spec, client=...)` (python/), which runs each point as
//! a Dask task through [`point_record`] and gathers them with [`tables`].

use numalab_record::RunRecord;
use rayon::prelude::*;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The sweep file's format in brief, for `numalab sweep --help`
/// (docs/sweeps.md has all of it). Its two examples are valid sweep files
/// (a test parses them).
pub const FORMAT_HELP: &str = "\
The sweep file (TOML; docs/sweeps.md), a grid of every combination:

  name = \"balancing\"              # default: the file's name
  scale = 0.25                    # --scale of every run; default 1
  machines = [\"tiny-2n\"]          # presets or spec files
  workloads = [\"numa02\"]          # presets or spec files
  seeds = [1, 2]                  # default [1]
  [knobs]                         # knob name -> values
  \"kernel.numa_balancing\" = [\"0\", \"1\"]

or, instead of the grid, a list of runs:

  [[points]]
  machine = \"tiny-2n\"
  workload = \"numa02\"
  seed = 1                        # default 1
  set = [\"kernel.numa_balancing=0\"]

Points run in a fixed order (machines, workloads, knob combinations, seeds;
or the list's). Each point's Run JSON goes to OUT/points/NNNNN.json as it
completes, and a point already there is not run again (a stopped sweep
resumes); then OUT/results.csv and OUT/results.jsonl get one row per point,
in point order, whatever -j is.";

/// A sweep file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// Name (recorded in the rows).
    #[serde(default)]
    pub name: Option<String>,
    /// `--scale` of every point.
    #[serde(default = "one")]
    pub scale: f64,
    /// Grid: machines.
    #[serde(default)]
    pub machines: Vec<String>,
    /// Grid: workloads.
    #[serde(default)]
    pub workloads: Vec<String>,
    /// Grid: seeds (default `[1]`).
    #[serde(default)]
    pub seeds: Vec<u64>,
    /// Grid: knob name -> values (every combination).
    #[serde(default)]
    pub knobs: BTreeMap<String, Vec<String>>,
    /// List: the points, instead of the grid.
    #[serde(default)]
    pub points: Vec<ListPoint>,
}

fn one() -> f64 {
    1.0
}

/// One point of a list sweep.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListPoint {
    /// Machine preset or file.
    pub machine: String,
    /// Workload preset or file.
    pub workload: String,
    /// Seed (default 1).
    #[serde(default = "seed_one")]
    pub seed: u64,
    /// `KEY=VALUE` knob settings.
    #[serde(default)]
    pub set: Vec<String>,
}

fn seed_one() -> u64 {
    1
}

/// One run of the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Position in the sweep (0-based).
    pub index: usize,
    /// Machine.
    pub machine: String,
    /// Workload.
    pub workload: String,
    /// Seed.
    pub seed: u64,
    /// `KEY=VALUE` settings.
    pub set: Vec<String>,
}

/// The points of `spec`, in sweep order.
pub fn points(spec: &SweepSpec) -> Result<Vec<Point>, String> {
    if !(spec.scale > 0.0 && spec.scale <= 1.0) {
        return Err(format!("sweep: scale {}: must be in (0, 1]", spec.scale));
    }
    let grid = !spec.machines.is_empty() || !spec.workloads.is_empty() || !spec.knobs.is_empty();
    let mut out = Vec::new();
    if !spec.points.is_empty() {
        if grid {
            return Err(
                "sweep: give either a grid (machines, workloads, knobs) or [[points]], not both"
                    .into(),
            );
        }
        for (i, p) in spec.points.iter().enumerate() {
            out.push(Point {
                index: i,
                machine: p.machine.clone(),
                workload: p.workload.clone(),
                seed: p.seed,
                set: p.set.clone(),
            });
        }
        return Ok(out);
    }
    if spec.machines.is_empty() || spec.workloads.is_empty() {
        return Err("sweep: a grid needs at least one of `machines` and of `workloads`".into());
    }
    let mut combos: Vec<Vec<String>> = vec![Vec::new()];
    for (k, vals) in &spec.knobs {
        if vals.is_empty() {
            return Err(format!("sweep: knob {k} has no values"));
        }
        combos = combos
            .into_iter()
            .flat_map(|c| {
                vals.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push(format!("{k}={v}"));
                    c
                })
            })
            .collect();
    }
    let seeds = if spec.seeds.is_empty() {
        vec![1]
    } else {
        spec.seeds.clone()
    };
    for m in &spec.machines {
        for w in &spec.workloads {
            for c in &combos {
                for &s in &seeds {
                    out.push(Point {
                        index: out.len(),
                        machine: m.clone(),
                        workload: w.clone(),
                        seed: s,
                        set: c.clone(),
                    });
                }
            }
        }
    }
    Ok(out)
}

fn point_path(out: &Path, p: &Point) -> PathBuf {
    out.join("points").join(format!("{:05}.json", p.index))
}

/// Point `p`'s record saved in sweep directory `out` by an earlier run
/// (`numalab sweep -o OUT`, or the Python package's `sweep(out=OUT)`), if
/// its file reads back as this point (machine, workload, seed, settings)
/// at `scale`: a point that has one is done, and resuming skips it.
pub fn done(out: &Path, p: &Point, scale: f64) -> Option<RunRecord> {
    let text = std::fs::read_to_string(point_path(out, p)).ok()?;
    let r = RunRecord::from_json(&text, "point").ok()?;
    let same = r.seed == p.seed
        && r.scale == scale
        && r.settings.get("sweep.point").map(String::as_str) == Some(&key(p));
    same.then_some(r)
}

/// What identifies a point in its record (`settings["sweep.point"]`).
fn key(p: &Point) -> String {
    format!(
        "{} {} seed={} {}",
        p.machine,
        p.workload,
        p.seed,
        p.set.join(",")
    )
}

fn run_point(out: &Path, p: &Point, scale: f64) -> Result<RunRecord, String> {
    let rec = point_record(p, scale)?;
    crate::out::write_file("sweep", &point_path(out, p), &rec.to_json())?;
    Ok(rec)
}

/// Saves `json`, point `p`'s Run record at `scale` (from
/// [`point_record`], run here or on a Dask worker), to its file in sweep
/// directory `out`, atomically, as `numalab sweep` does when a point
/// completes. A record of another point or scale is refused, so what is
/// saved always reads back as done ([`done`]).
pub fn save_point(out: &Path, p: &Point, scale: f64, json: &str) -> Result<(), String> {
    let what = format!("point {}", p.index);
    let r = RunRecord::from_json(json, &what)?;
    let ours = r.seed == p.seed
        && r.scale == scale
        && r.settings.get("sweep.point").map(String::as_str) == Some(&key(p));
    if !ours {
        return Err(format!(
            "sweep: {what}: the record is not this point's ({} at scale {scale})",
            key(p)
        ));
    }
    crate::out::write_file("sweep", &point_path(out, p), json)
}

/// Runs point `p` at `scale` and returns its record, marked with the
/// point's key; no file is written (the Python package's Dask tasks and
/// local sweeps call this, `numalab sweep` too).
pub fn point_record(p: &Point, scale: f64) -> Result<RunRecord, String> {
    let m = crate::runner::load_machine(&p.machine)?;
    let knobs = crate::runner::knobs(&p.set)?;
    let (mut rec, _) =
        crate::runner::run_model(&m, &p.workload, &knobs, p.seed, scale, None, false)
            .map_err(|e| format!("point {} ({}): {e}", p.index, key(p)))?;
    rec.settings.insert("sweep.point".into(), key(p));
    Ok(rec)
}

/// Checks every point's machine, workload and knobs, before any runs.
pub fn check_points(pts: &[Point]) -> Result<(), String> {
    for p in pts {
        crate::runner::load_machine(&p.machine).map_err(|e| format!("point {}: {e}", p.index))?;
        numalab_workload::presets::load(&p.workload)
            .map_err(|e| format!("point {}: {e}", p.index))?;
        crate::runner::knobs(&p.set).map_err(|e| format!("point {}: {e}", p.index))?;
    }
    Ok(())
}

/// The counters every row carries.
const ROW_VMSTAT: &[&str] = &[
    "numa_pte_updates",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pages_migrated",
    "numa_task_migrated",
    "numa_task_swapped",
];

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The CSV and JSON Lines of the points' records, in point order.
pub fn tables(name: &str, pts: &[Point], recs: &[RunRecord]) -> (String, String) {
    let mut csv =
        String::from("sweep,point,machine,workload,seed,set,elapsed_s,user_s,sys_s,score");
    for v in ROW_VMSTAT {
        csv.push(',');
        csv.push_str(v);
    }
    csv.push('\n');
    let mut jsonl = String::new();
    for (p, r) in pts.iter().zip(recs) {
        let score = r.score.as_ref().map(|s| s.value);
        let mut row = vec![
            csv_field(name),
            p.index.to_string(),
            csv_field(&p.machine),
            csv_field(&p.workload),
            p.seed.to_string(),
            csv_field(&p.set.join(" ")),
            r.elapsed_s.to_string(),
            r.user_s.to_string(),
            r.sys_s.to_string(),
            score.map_or(String::new(), |s| s.to_string()),
        ];
        let mut obj = serde_json::json!({
            "sweep": name, "point": p.index, "machine": p.machine, "workload": p.workload,
            "seed": p.seed, "set": p.set, "scale": r.scale, "elapsed_s": r.elapsed_s,
            "user_s": r.user_s, "sys_s": r.sys_s, "score": score,
        });
        for v in ROW_VMSTAT {
            row.push(r.vm(v).to_string());
            obj[*v] = serde_json::json!(r.vm(v));
        }
        csv.push_str(&row.join(","));
        csv.push('\n');
        jsonl.push_str(&obj.to_string());
        jsonl.push('\n');
    }
    (csv, jsonl)
}

/// `numalab sweep`.
pub fn sweep(file: &str, out: Option<&str>, jobs: Option<usize>) -> Result<(), String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("{file}: {}", crate::out::io_text(&e)))?;
    let spec: SweepSpec = toml::from_str(&text).map_err(|e| format!("{file}: {e}"))?;
    let pts = points(&spec)?;
    // Check every point's machine, workload and knobs before running any.
    check_points(&pts)?;
    let name = spec.name.clone().unwrap_or_else(|| {
        Path::new(file)
            .file_stem()
            .map_or("sweep".into(), |s| s.to_string_lossy().into())
    });
    let out = PathBuf::from(out.map_or_else(|| format!("{name}.sweep"), str::to_string));
    std::fs::create_dir_all(out.join("points"))
        .map_err(|e| format!("{}: {}", out.display(), crate::out::io_text(&e)))?;
    let todo: Vec<&Point> = pts
        .iter()
        .filter(|p| done(&out, p, spec.scale).is_none())
        .collect();
    eprintln!(
        "numalab sweep {name}: {} points, {} done before, {} to run",
        pts.len(),
        pts.len() - todo.len(),
        todo.len()
    );
    let bar = indicatif::ProgressBar::new(todo.len() as u64);
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} points [{elapsed} / ~{eta}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .map_err(|e| format!("sweep: {e}"))?;
    let results: Vec<Result<(), String>> = pool.install(|| {
        todo.par_iter()
            .map(|p| {
                let r = run_point(&out, p, spec.scale).map(|_| ());
                bar.inc(1);
                r
            })
            .collect()
    });
    bar.finish_and_clear();
    let failed: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if !failed.is_empty() {
        return Err(format!(
            "sweep: {} point(s) failed (the others are saved; run again to resume): {}",
            failed.len(),
            failed.join("; ")
        ));
    }
    let recs: Vec<RunRecord> = pts
        .iter()
        .map(|p| {
            done(&out, p, spec.scale)
                .ok_or_else(|| format!("sweep: point {} has no record", p.index))
        })
        .collect::<Result<_, _>>()?;
    let (csv, jsonl) = tables(&name, &pts, &recs);
    crate::out::write_file("sweep", &out.join("results.csv"), &csv)?;
    crate::out::write_file("sweep", &out.join("results.jsonl"), &jsonl)?;
    eprintln!(
        "numalab sweep {name}: results in {}/results.csv and results.jsonl",
        out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(t: &str) -> SweepSpec {
        toml::from_str(t).unwrap()
    }

    /// The TOML examples of `text`: the lines between a line equal to
    /// `open` and the next line equal to `close`, with `strip` removed.
    fn examples(text: &str, open: &str, close: &str, strip: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur: Option<String> = None;
        for line in text.lines() {
            match cur.as_mut() {
                None if line == open => cur = Some(String::new()),
                Some(_) if line == close => out.extend(cur.take()),
                Some(c) => {
                    c.push_str(line.strip_prefix(strip).unwrap_or(line));
                    c.push('\n');
                }
                None => {}
            }
        }
        out
    }

    #[test]
    fn the_documented_examples_are_valid_sweeps() {
        let doc = examples(include_str!("sweep.rs"), "//! ```toml", "//! ```", "//! ");
        assert_eq!(doc.len(), 2);
        // The help's examples: its paragraphs of indented lines.
        let help: Vec<String> = FORMAT_HELP
            .split("\n\n")
            .filter(|p| p.lines().all(|l| l.starts_with("  ")))
            .map(|p| p.lines().map(|l| format!("{}\n", &l[2..])).collect())
            .collect();
        assert_eq!(help.len(), 2);
        for (i, text) in doc.iter().chain(&help).enumerate() {
            let s: SweepSpec =
                toml::from_str(text).unwrap_or_else(|e| panic!("example {i}: {e}\n{text}"));
            let p = points(&s).unwrap_or_else(|e| panic!("example {i}: {e}"));
            assert!(!p.is_empty(), "example {i} has no points");
            check_points(&p).unwrap_or_else(|e| panic!("example {i}: {e}"));
        }
    }

    #[test]
    fn a_grid_enumerates_in_a_fixed_order() {
        let s = spec(
            "machines=['tiny-2n']\nworkloads=['numa02','numa01']\nseeds=[1,2]\n[knobs]\n'kernel.numa_balancing'=['0','1']\n",
        );
        let p = points(&s).unwrap();
        assert_eq!(p.len(), 8);
        assert_eq!(p[0].workload, "numa02");
        assert_eq!(p[0].set, vec!["kernel.numa_balancing=0".to_string()]);
        assert_eq!(
            (p[1].seed, p[2].set[0].as_str()),
            (2, "kernel.numa_balancing=1")
        );
        assert!(p.iter().enumerate().all(|(i, q)| q.index == i));
    }

    #[test]
    fn grid_and_list_together_or_nothing_is_refused() {
        let both = spec("machines=['a']\nworkloads=['b']\n[[points]]\nmachine='a'\nworkload='b'\n");
        assert!(points(&both).unwrap_err().contains("not both"));
        assert!(points(&spec("")).is_err());
        assert!(toml::from_str::<SweepSpec>("bogus=1").is_err());
    }

    #[test]
    fn runs_resume_and_results_do_not_depend_on_jobs() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s.toml");
        std::fs::write(
            &f,
            "scale=0.02\nmachines=['tiny-2n']\nworkloads=['numa02']\nseeds=[1,2]\n[knobs]\n'kernel.numa_balancing'=['0','1']\n",
        )
        .unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        sweep(f.to_str().unwrap(), a.to_str(), Some(1)).unwrap();
        sweep(f.to_str().unwrap(), b.to_str(), Some(2)).unwrap();
        let read = |p: &Path, n: &str| std::fs::read_to_string(p.join(n)).unwrap();
        assert_eq!(read(&a, "results.csv"), read(&b, "results.csv"));
        assert_eq!(read(&a, "results.jsonl"), read(&b, "results.jsonl"));
        assert_eq!(read(&a, "results.csv").lines().count(), 5);
        // Resume: a removed point is run again, the others are kept.
        let kept = std::fs::metadata(a.join("points/00000.json"))
            .unwrap()
            .modified()
            .unwrap();
        std::fs::remove_file(a.join("points/00003.json")).unwrap();
        sweep(f.to_str().unwrap(), a.to_str(), Some(2)).unwrap();
        assert!(a.join("points/00003.json").exists());
        let again = std::fs::metadata(a.join("points/00000.json"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(kept, again);
        assert_eq!(read(&a, "results.csv"), read(&b, "results.csv"));
    }
}
