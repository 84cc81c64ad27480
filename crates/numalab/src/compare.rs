//! Whether Run/RunSet columns can be compared: `numalab compare`,
//! `numalab plot` and the Python `compare()` refuse runs of different
//! machines or scales (unless forced), since their figures would not mean
//! the same.
//!
//! Workloads are not checked: a column may hold several workloads, each a
//! test with its own rows (numalab_report::CompareRows), and a test that
//! one column lacks prints `n/a` there. Left out: comparing knob settings
//! (differing knobs are the point of a comparison).

use numalab_record::{RunRecord, RunSet};

/// The machine's name of a run (`?` when the record has none).
fn machine(r: &RunRecord) -> String {
    r.machine_name().unwrap_or("?").to_string()
}

/// What makes the runs of `sets` (read from `files`, one name per set) not
/// comparable: a machine or scale differing from the first run's. `None`
/// when they all agree.
pub fn mismatch(files: &[String], sets: &[RunSet]) -> Option<String> {
    let mut first: Option<(&str, String, f64)> = None;
    for (f, set) in files.iter().zip(sets) {
        for r in &set.runs {
            let Some((f0, m0, s0)) = &first else {
                first = Some((f, machine(r), r.scale));
                continue;
            };
            let m = machine(r);
            if *m0 != m {
                return Some(format!("machine {m0} in {f0} but {m} in {f}"));
            }
            // Scales are written as given (`--scale 0.1`): equal or not.
            if s0.to_bits() != r.scale.to_bits() {
                return Some(format!("scale {s0} in {f0} but {} in {f}", r.scale));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(machine: &str, workload: &str, scale: f64) -> RunRecord {
        let v = serde_json::json!({
            "format": numalab_record::FORMAT_NAME,
            "version": numalab_record::FORMAT_VERSION,
            "kind": "model", "numalab_version": "0", "kernel": null,
            "machine": {"name": machine}, "workload": {"name": workload},
            "settings": {}, "seed": 1, "scale": scale,
            "elapsed_s": 1.0, "user_s": 1.0, "sys_s": 1.0,
            "vmstat": {}, "cgroups": {}, "processes": [], "tasks": [],
            "nodes": [], "lab": {}
        });
        RunRecord::from_json(&v.to_string(), "test").unwrap()
    }

    fn files() -> Vec<String> {
        vec!["off.json".into(), "on.json".into()]
    }

    #[test]
    fn several_workloads_per_column_are_comparable() {
        let off = RunSet::new(
            "off",
            vec![run("spr-4n", "numa01", 0.1), run("spr-4n", "numa02", 0.1)],
        );
        let on = RunSet::new("on", vec![run("spr-4n", "numa02", 0.1)]);
        assert_eq!(mismatch(&files(), &[off, on]), None);
    }

    #[test]
    fn machine_and_scale_differences_are_named() {
        let off = RunSet::new("off", vec![run("spr-4n", "numa01", 0.1)]);
        let on = RunSet::new("on", vec![run("tiny-2n", "numa01", 0.1)]);
        assert_eq!(
            mismatch(&files(), &[off.clone(), on]).as_deref(),
            Some("machine spr-4n in off.json but tiny-2n in on.json")
        );
        let on = RunSet::new("on", vec![run("spr-4n", "numa01", 0.2)]);
        assert_eq!(
            mismatch(&files(), &[off, on]).as_deref(),
            Some("scale 0.1 in off.json but 0.2 in on.json")
        );
    }
}
