//! Whether Run/RunSet columns can be compared: `numalab compare` and the
//! Python `compare()` refuse columns of different machines, workloads or
//! scales (unless forced), since their figures would not mean the same.
//! Left out: comparing knob settings (differing knobs are the point of a
//! comparison).

use numalab_record::{RunRecord, RunSet};

/// What makes the runs of `sets` (read from `files`) not comparable: a
/// machine, workload or scale differing from the first run of the first
/// file. `None` when they all agree.
pub fn mismatch(files: &[String], sets: &[RunSet]) -> Option<String> {
    let key = |r: &RunRecord| {
        let name = |v: &serde_json::Value| {
            v.get("name")
                .and_then(|n| n.as_str())
                .unwrap_or("?")
                .to_string()
        };
        (name(&r.machine), name(&r.workload), r.scale)
    };
    let mut first: Option<(&str, (String, String, f64))> = None;
    for (f, set) in files.iter().zip(sets) {
        for r in &set.runs {
            let k = key(r);
            match &first {
                None => first = Some((f, k)),
                Some((f0, k0)) => {
                    for (what, a, b) in [
                        ("machine", &k0.0, &k.0),
                        ("workload", &k0.1, &k.1),
                        ("scale", &k0.2.to_string(), &k.2.to_string()),
                    ] {
                        if a != b {
                            return Some(format!("{what} {a} in {f0} but {b} in {f}"));
                        }
                    }
                }
            }
        }
    }
    None
}
