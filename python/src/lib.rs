//! `numalab._numalab`: the Rust side of the Python package.
//!
//! A thin layer over the `numalab` crate's own functions (the ones the
//! command line calls), so a Python run, sweep point or reproduction is
//! byte for byte the CLI's. Structured results cross as JSON text (the Run
//! record's own format, and small JSON objects for lists and verdicts);
//! the pure-Python wrapper (`python/numalab/__init__.py`) parses them and
//! builds pandas tables. Every error is the CLI's one-line message, raised
//! as `ValueError`. Long calls release the GIL so Dask threads run
//! points in parallel. Left out: real-kernel and QEMU runs (`numalab real`,
//! `numalab vm`), traces and plots, which stay on the command line.

use numalab::{compare, reproduce, runner, sweep};
use numalab_record::{RunRecord, RunSet};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;
use serde_json::json;
use std::path::{Path, PathBuf};

/// A `Result<T, String>` (the CLI's bad input) as a Python `ValueError`.
fn bad<T>(r: Result<T, String>) -> PyResult<T> {
    r.map_err(PyValueError::new_err)
}

/// One model run; returns the Run record JSON (as `numalab run --json`).
#[pyfunction]
#[pyo3(signature = (machine, workload, set, seed, scale))]
fn run(
    py: Python<'_>,
    machine: String,
    workload: String,
    set: Vec<String>,
    seed: u64,
    scale: f64,
) -> PyResult<String> {
    bad(py.detach(move || {
        let m = runner::load_machine(&machine)?;
        let knobs = runner::knobs(&set)?;
        let (rec, _) = runner::run_model(&m, &workload, &knobs, seed, scale, None, false)?;
        Ok(rec.to_json())
    }))
}

/// The summary `numalab run` prints of a Run record JSON.
#[pyfunction]
fn run_summary(record: &str) -> PyResult<String> {
    let rec = bad(RunRecord::from_json(record, "run"))?;
    Ok(numalab_report::run_summary(&rec))
}

/// The comparison of columns `(label, [Run JSON, ...])`: the mmtests
/// table (with the cgroup's counters when given) and the CSV of
/// `numalab compare --csv`, and a warning when `force` let mismatched
/// columns through (None otherwise).
#[pyfunction]
#[pyo3(signature = (columns, cgroup, force))]
fn compare_runs(
    columns: Vec<(String, Vec<String>)>,
    cgroup: Option<String>,
    force: bool,
) -> PyResult<(String, String, Option<String>)> {
    let mut sets = Vec::new();
    let mut labels = Vec::new();
    for (label, runs) in columns {
        let runs = runs
            .iter()
            .map(|r| RunRecord::from_json(r, &label))
            .collect::<Result<Vec<_>, _>>();
        sets.push(RunSet::new(label.clone(), bad(runs)?));
        labels.push(label);
    }
    if sets.is_empty() {
        return Err(PyValueError::new_err("compare: no runs given"));
    }
    let mut warning = None;
    if let Some(diff) = compare::mismatch(&labels, &sets) {
        if !force {
            return Err(PyValueError::new_err(format!(
                "compare: {diff}; the columns would not be comparable (force=True to compare anyway)"
            )));
        }
        warning = Some(format!("compare: {diff}"));
    }
    let mut text = numalab_report::compare_table(&sets);
    if let Some(cg) = cgroup {
        text.push_str(&numalab_report::compare_cgroups(&sets, &cg));
    }
    Ok((text, numalab_report::runs_csv(&sets), warning))
}

/// Runs reproduction `name` (or `all`); returns JSON with each outcome's
/// text, tally, figure rows and configurations' RunSets, and the text
/// `numalab reproduce` prints. `sets` and `workloads` are the command's
/// `--set KEY=VALUE` and `--workload NAME=FILE`.
#[pyfunction]
#[pyo3(signature = (name, scale, iterations, seed, sets=Vec::new(), workloads=Vec::new()))]
fn reproduce_json(
    py: Python<'_>,
    name: String,
    scale: f64,
    iterations: Option<u32>,
    seed: u64,
    sets: Vec<String>,
    workloads: Vec<String>,
) -> PyResult<String> {
    if !(scale > 0.0 && scale <= 1.0) {
        return Err(PyValueError::new_err(format!(
            "scale {scale}: must be in (0, 1]"
        )));
    }
    let opts = reproduce::Options {
        scale,
        iterations,
        seed,
        json_dir: None,
        progress: false,
        plots: None,
        sets,
        workloads,
    };
    let outcomes = bad(py.detach(|| reproduce::outcomes(&name, &opts)))?;
    let mut text: String = outcomes.iter().map(|o| o.text.as_str()).collect();
    if name == "all" {
        text.push_str(&reproduce::summary(&outcomes));
    }
    let list: Vec<serde_json::Value> = outcomes
        .iter()
        .map(|o| {
            let t = o.tally;
            json!({
                "name": o.name,
                "text": o.text,
                "tally": {
                    "figures": t.figures, "within": t.within,
                    "right_direction": t.right_direction,
                    "no_change": t.no_change,
                    "wrong_direction": t.wrong_direction, "off": t.off,
                    "known": t.known, "unexpected": t.unexpected,
                    "not_modeled": t.not_modeled,
                },
                "figures": o.figures.iter().map(|f| json!({
                    "config": f.config, "metric": f.metric,
                    "published": f.published, "modeled": finite(f.modeled),
                    "tolerance": f.tolerance, "verdict": f.verdict,
                    "judged": f.judged, "unexpected": f.unexpected,
                })).collect::<Vec<_>>(),
                "sets": o.sets.iter().map(|s| json!({
                    "label": s.name,
                    "runs": s.runs.iter().map(RunRecord::to_json).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(json!({ "text": text, "outcomes": list }).to_string())
}

/// A figure as JSON: NaN and infinities (no modeled figure) become null.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// What `numalab list reproductions` lists, as JSON with each one's
/// machine, workloads, iterations and configurations.
#[pyfunction]
fn reproductions_json() -> String {
    let list: Vec<serde_json::Value> = reproduce::all()
        .iter()
        .map(|r| {
            json!({
                "name": r.name, "description": r.description, "source": r.source,
                "machine": r.machine, "workloads": r.workloads,
                "iterations": r.iterations,
                "configs": r.configs.iter().map(|c| json!({
                    "label": c.label, "set": c.sets,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::Value::Array(list).to_string()
}

/// Machine presets: (name, description), as `numalab list machines`.
#[pyfunction]
fn machines() -> Vec<(String, String)> {
    numalab_topology::presets::list()
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Workload presets: (name, description), as `numalab list workloads`.
#[pyfunction]
fn workloads() -> Vec<(String, String)> {
    numalab_workload::presets::list()
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The knob registry and the cgroup files, as JSON (what
/// `numalab list knobs` prints).
#[pyfunction]
fn knobs_json() -> String {
    let mut list: Vec<serde_json::Value> = numalab_knobs::knob::ALL
        .iter()
        .map(|d| {
            json!({
                "name": d.name, "default": d.default_text(), "type": d.ty.to_string(),
                "unit": d.unit.as_str(), "location": d.location.to_string(),
                "description": d.description, "source": d.source,
                "aliases": d.aliases, "kind": "knob",
            })
        })
        .collect();
    for f in numalab_knobs::cgroup::CGROUP_FILES {
        list.push(json!({
            "name": format!("CGROUP:{}", f.name), "default": null,
            "type": f.value.as_str(), "unit": null,
            "location": "cgroup v2 file of a workload cgroup",
            "description": f.description, "source": f.source,
            "aliases": [], "kind": "cgroup",
        }));
    }
    serde_json::Value::Array(list).to_string()
}

/// A sweep spec from TOML (`fmt` "toml", as `numalab sweep` reads) or
/// JSON (`fmt` "json", a Python dict).
fn spec(text: &str, fmt: &str) -> Result<sweep::SweepSpec, String> {
    match fmt {
        "toml" => toml::from_str(text).map_err(|e| format!("sweep spec: {e}")),
        "json" => serde_json::from_str(text).map_err(|e| format!("sweep spec: {e}")),
        other => Err(format!("sweep spec format {other}: expected toml or json")),
    }
}

/// The checked points of a sweep spec, its name and scale, as JSON:
/// `{"name": N or null, "scale": S, "points": [{"index", "machine", "workload", "seed",
/// "set"}...]}` in sweep order. Every point's machine, workload and knobs
/// are checked first, as `numalab sweep` does.
#[pyfunction]
fn sweep_points(text: &str, fmt: &str) -> PyResult<String> {
    let s = bad(spec(text, fmt))?;
    let pts = bad(sweep::points(&s))?;
    bad(sweep::check_points(&pts))?;
    let list: Vec<serde_json::Value> = pts
        .iter()
        .map(|p| {
            json!({"index": p.index, "machine": p.machine, "workload": p.workload,
                   "seed": p.seed, "set": p.set})
        })
        .collect();
    Ok(json!({"name": s.name, "scale": s.scale, "points": list}).to_string())
}

/// Runs one sweep point; returns its Run record JSON (a Dask task).
#[pyfunction]
#[pyo3(signature = (index, machine, workload, seed, set, scale))]
fn sweep_point(
    py: Python<'_>,
    index: usize,
    machine: String,
    workload: String,
    seed: u64,
    set: Vec<String>,
    scale: f64,
) -> PyResult<String> {
    let p = sweep::Point {
        index,
        machine,
        workload,
        seed,
        set,
    };
    bad(py.detach(|| sweep::point_record(&p, scale).map(|r| r.to_json())))
}

/// Creates sweep directory `out` (with `out/points`) if need be and
/// returns, per point of the spec in sweep order, the record JSON saved
/// there by an earlier run (None: the point is still to run): the resume
/// of `numalab sweep -o OUT`, whose directory this is.
#[pyfunction]
fn sweep_resume(text: &str, fmt: &str, out: &str) -> PyResult<Vec<Option<String>>> {
    let s = bad(spec(text, fmt))?;
    let pts = bad(sweep::points(&s))?;
    let out = bad(sweep_dir(out))?;
    Ok(pts
        .iter()
        .map(|p| sweep::done(&out, p, s.scale).map(|r| r.to_json()))
        .collect())
}

/// Creates `out/points`; the directory's path.
fn sweep_dir(out: &str) -> Result<PathBuf, String> {
    let out = PathBuf::from(out);
    std::fs::create_dir_all(out.join("points"))
        .map_err(|e| format!("{}: {}", out.display(), numalab::out::io_text(&e)))?;
    Ok(out)
}

/// Saves one point's record JSON (`sweep_point`'s) to its file in sweep
/// directory `out`, atomically; refuses a record of another point.
#[pyfunction]
#[pyo3(signature = (out, index, machine, workload, seed, set, scale, record))]
#[allow(clippy::too_many_arguments)] // a point's fields, as sweep_point takes them
fn sweep_save(
    out: &str,
    index: usize,
    machine: String,
    workload: String,
    seed: u64,
    set: Vec<String>,
    scale: f64,
    record: &str,
) -> PyResult<()> {
    let p = sweep::Point {
        index,
        machine,
        workload,
        seed,
        set,
    };
    bad(sweep::save_point(Path::new(out), &p, scale, record))
}

/// The results.csv of a sweep (named `name`) from its points' records in
/// point order, as `numalab sweep` writes it; with `out`, also written
/// there with results.jsonl.
#[pyfunction]
#[pyo3(signature = (text, fmt, name, records, out))]
fn sweep_table(
    text: &str,
    fmt: &str,
    name: &str,
    records: Vec<String>,
    out: Option<&str>,
) -> PyResult<String> {
    let s = bad(spec(text, fmt))?;
    let pts = bad(sweep::points(&s))?;
    if records.len() != pts.len() {
        return Err(PyValueError::new_err(format!(
            "sweep: {} records for {} points",
            records.len(),
            pts.len()
        )));
    }
    let recs = records
        .iter()
        .zip(&pts)
        .map(|(r, p)| RunRecord::from_json(r, &format!("point {}", p.index)))
        .collect::<Result<Vec<_>, _>>();
    bad(finish(name, &pts, &bad(recs)?, out))
}

/// The tables of a finished sweep; with `out`, results.csv and
/// results.jsonl are written there, as `numalab sweep` does.
fn finish(
    name: &str,
    pts: &[sweep::Point],
    recs: &[RunRecord],
    out: Option<&str>,
) -> Result<String, String> {
    let (csv, jsonl) = sweep::tables(name, pts, recs);
    if let Some(out) = out {
        let out = Path::new(out);
        numalab::out::write_file("sweep", &out.join("results.csv"), &csv)?;
        numalab::out::write_file("sweep", &out.join("results.jsonl"), &jsonl)?;
    }
    Ok(csv)
}

/// Runs a whole sweep here on `jobs` threads (None: every core) and
/// returns its results.csv. Without `out` no file is written; with it,
/// the sweep directory of `numalab sweep -o OUT`: points saved there
/// before are not run again, each point's record is saved as it
/// completes, and results.csv and results.jsonl are written at the end.
#[pyfunction]
#[pyo3(signature = (text, fmt, name, jobs, out))]
fn sweep_local(
    py: Python<'_>,
    text: &str,
    fmt: &str,
    name: &str,
    jobs: Option<usize>,
    out: Option<&str>,
) -> PyResult<String> {
    let s = bad(spec(text, fmt))?;
    let pts = bad(sweep::points(&s))?;
    bad(sweep::check_points(&pts))?;
    let jobs = bad(numalab::parallel::jobs(jobs))?;
    let dir = out.map(sweep_dir).transpose();
    let dir = bad(dir)?;
    let recs = bad(py.detach(|| {
        numalab::parallel::install(jobs, || {
            pts.par_iter()
                .map(|p| match &dir {
                    None => sweep::point_record(p, s.scale),
                    Some(d) => match sweep::done(d, p, s.scale) {
                        Some(saved) => Ok(saved),
                        None => {
                            let rec = sweep::point_record(p, s.scale)?;
                            sweep::save_point(d, p, s.scale, &rec.to_json())?;
                            Ok(rec)
                        }
                    },
                })
                .collect::<Result<Vec<_>, String>>()
        })?
    }))?;
    bad(finish(name, &pts, &recs, out))
}

/// The extension module.
#[pymodule]
fn _numalab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_summary, m)?)?;
    m.add_function(wrap_pyfunction!(compare_runs, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce_json, m)?)?;
    m.add_function(wrap_pyfunction!(reproductions_json, m)?)?;
    m.add_function(wrap_pyfunction!(machines, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(knobs_json, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_points, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_point, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_resume, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_save, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_table, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_local, m)?)?;
    Ok(())
}
