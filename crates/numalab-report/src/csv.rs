//! Runs as CSV, one line per run, for plotting elsewhere.
//!
//! Columns: the set's label, test, seed, kind, scale, elapsed/user/system
//! seconds, the score (value, name, unit, direction) and the main
//! /proc/vmstat NUMA balancing counters. Quoting follows RFC 4180 (fields
//! with a comma, quote or line break are quoted, quotes doubled); lines end
//! with `\n`. Numbers use Rust's shortest round-trip form, so the output is
//! deterministic and lossless. An absent score or counter is an empty field,
//! not 0, so plotting tools can tell "not measured" from zero.
//!
//! Left out: per-task, per-cgroup and per-node figures, lab figures and
//! settings (they vary in number between runs; the Run JSON has them).

use numalab_record::{RunKind, RunSet};

/// The vmstat counters given a column each, in this order.
pub const CSV_VMSTAT_KEYS: [&str; 11] = [
    "numa_pte_updates",
    "numa_huge_pte_updates",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pages_migrated",
    "numa_task_migrated",
    "numa_task_swapped",
    "numa_hit",
    "numa_miss",
    "numa_local",
    "numa_interleave",
];

/// Quotes a field when RFC 4180 requires it.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One CSV line per run of every set, after a header line: `column`,
/// `test`, `seed`, `kind`, `scale`, `elapsed_s`, `user_s`, `sys_s`, `score`,
/// `score_name`, `score_unit`, `score_higher_is_better`, then one column per
/// key of [`CSV_VMSTAT_KEYS`].
pub fn runs_csv(sets: &[RunSet]) -> String {
    let mut header = vec![
        "column",
        "test",
        "seed",
        "kind",
        "scale",
        "elapsed_s",
        "user_s",
        "sys_s",
        "score",
        "score_name",
        "score_unit",
        "score_higher_is_better",
    ];
    header.extend(CSV_VMSTAT_KEYS);
    let mut out = header.join(",");
    out.push('\n');
    for set in sets {
        for r in &set.runs {
            let kind = match r.kind {
                RunKind::Model => "model",
                RunKind::Real => "real",
            };
            let mut row = vec![
                field(&set.name),
                field(&r.test_name()),
                r.seed.to_string(),
                kind.to_string(),
                format!("{}", r.scale),
                format!("{}", r.elapsed_s),
                format!("{}", r.user_s),
                format!("{}", r.sys_s),
            ];
            match &r.score {
                Some(s) => row.extend([
                    format!("{}", s.value),
                    field(&s.name),
                    field(&s.unit),
                    s.higher_is_better.to_string(),
                ]),
                None => row.extend([String::new(), String::new(), String::new(), String::new()]),
            }
            for k in CSV_VMSTAT_KEYS {
                row.push(r.vmstat.get(k).map(|v| v.to_string()).unwrap_or_default());
            }
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{record, set};

    #[test]
    fn one_line_per_run_with_header() {
        let mut r = record("numa01", 7, 309.54, 1000.0, 20.25);
        r.vmstat.insert("numa_hint_faults".into(), 15758);
        r.score = Some(numalab_record::Score {
            name: "ops, total".into(),
            unit: "ops/s".into(),
            value: 12.5,
            higher_is_better: true,
        });
        let plain = record("numa02", 8, 3.0, 1.0, 0.5);
        let csv = runs_csv(&[set("base \"v1\"", vec![r]), set("b", vec![plain])]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("column,test,seed,kind,scale,elapsed_s,"));
        assert_eq!(lines[0].split(',').count(), 12 + CSV_VMSTAT_KEYS.len());
        assert_eq!(
            lines[1],
            "\"base \"\"v1\"\"\",NUMA01,7,model,1,309.54,1000,20.25,12.5,\"ops, total\",ops/s,true,,,15758,,,,,,,,"
        );
        assert_eq!(lines[2], "b,NUMA02,8,model,1,3,1,0.5,,,,,,,,,,,,,,,");
        assert_eq!(runs_csv(&[]).lines().count(), 1);
    }
}
