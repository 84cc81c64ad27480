//! A short human summary of one run, for `numalab run` on a terminal.
//!
//! Shows what a kernel developer looks at first after a run: which test ran
//! on which machine with which seed, elapsed/user/system seconds, the score,
//! the /proc/vmstat `numa_*` deltas (with the local share of hinting
//! faults), each cgroup's memory.stat `numa_*` deltas, each cgroup's
//! access-latency histogram when the record has one (proposal 2) and the
//! lab figures that have no /proc name.
//!
//! Left out: per-task and per-process tables, per-node figures, settings,
//! time series and anything needing more than one run (see
//! [`crate::compare`]). Numbers are printed in Rust's shortest round-trip
//! form, so the text is deterministic for a given record.

use numalab_record::{RunKind, RunRecord};
use std::fmt::Write as _;

/// A float in its shortest round-trip form (`3`, `0.25`, `0.0000001`).
fn num(v: f64) -> String {
    format!("{v}")
}

/// Writes `rows` as `  key  value` lines with keys padded to one width.
fn aligned(out: &mut String, rows: &[(String, String)]) {
    let w = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in rows {
        let _ = writeln!(out, "  {k:<w$}  {v}");
    }
}

/// A short, deterministic summary of one run: a title line (test, machine,
/// kind, seed, scale), times, score, vmstat `numa_*` counters, per-cgroup
/// memory.stat `numa_*` counters and lab figures. Sections with nothing to
/// show are left out.
pub fn run_summary(r: &RunRecord) -> String {
    let mut out = String::new();
    let machine = r.machine_name().unwrap_or("unknown machine");
    let kind = match r.kind {
        RunKind::Model => "model".to_string(),
        RunKind::Real => match &r.kernel {
            Some(k) => format!("real, kernel {k}"),
            None => "real".to_string(),
        },
    };
    let _ = writeln!(
        out,
        "{} on {machine} ({kind}), seed {}, scale {}",
        r.test_name(),
        r.seed,
        num(r.scale)
    );

    let mut rows = vec![
        ("elapsed".to_string(), format!("{:.2} s", r.elapsed_s)),
        ("user".to_string(), format!("{:.2} s", r.user_s)),
        ("sys".to_string(), format!("{:.2} s", r.sys_s)),
    ];
    if let Some(s) = &r.score {
        let dir = if s.higher_is_better {
            "higher is better"
        } else {
            "lower is better"
        };
        rows.push((
            "score".to_string(),
            format!("{} {} {} ({dir})", s.name, num(s.value), s.unit),
        ));
    }
    aligned(&mut out, &rows);

    let vm: Vec<(String, String)> = r
        .vmstat
        .iter()
        .filter(|(k, _)| k.starts_with("numa_"))
        .map(|(k, v)| (k.clone(), v.to_string()))
        .collect();
    if !vm.is_empty() {
        out.push_str("vmstat:\n");
        aligned(&mut out, &vm);
        let faults = r.vm("numa_hint_faults");
        if faults > 0 {
            let local = 100.0 * r.vm("numa_hint_faults_local") as f64 / faults as f64;
            let _ = writeln!(out, "  (local hinting faults: {local:.2}%)");
        }
    }

    for (path, cg) in &r.cgroups {
        let rows: Vec<(String, String)> = cg
            .memory_stat
            .iter()
            .filter(|(k, _)| k.starts_with("numa_"))
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "cgroup {path} memory.stat:");
        aligned(&mut out, &rows);
    }

    // Proposal 2: each cgroup's access-latency histogram, when recorded.
    for (path, cg) in &r.cgroups {
        if let Some(h) = &cg.access_latency {
            let _ = writeln!(out, "cgroup {path} access latency:");
            out.push_str(&crate::latency::latency_histogram(h, "  "));
        }
    }

    if !r.lab.is_empty() {
        out.push_str("lab:\n");
        let rows: Vec<(String, String)> =
            r.lab.iter().map(|(k, v)| (k.to_string(), num(v))).collect();
        aligned(&mut out, &rows);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::record;

    #[test]
    fn summary_shows_the_figures() {
        let mut r = record("numa01_threadlocal", 42, 113.18, 7589.78, 16494.9);
        r.machine = serde_json::json!({"name": "spr-4node"});
        r.vmstat.insert("numa_hint_faults".into(), 200);
        r.vmstat.insert("numa_hint_faults_local".into(), 150);
        r.vmstat.insert("pgfault".into(), 1);
        let mut cg = numalab_record::CgroupFigures::default();
        cg.memory_stat.insert("numa_task_swapped".into(), 4);
        r.cgroups.insert("/mytest".into(), cg);
        r.cgroups.insert("/".into(), Default::default());
        // A figure this build does not declare (an older build's) is listed too.
        r.lab = serde_json::from_value(serde_json::json!({"sched_balance_running_share": 0.125}))
            .unwrap();
        let s = run_summary(&r);
        assert_eq!(
            s,
            "NUMA01_THREADLOCAL on spr-4node (model), seed 42, scale 1\n\
             \x20 elapsed  113.18 s\n\
             \x20 user     7589.78 s\n\
             \x20 sys      16494.90 s\n\
             vmstat:\n\
             \x20 numa_hint_faults        200\n\
             \x20 numa_hint_faults_local  150\n\
             \x20 (local hinting faults: 75.00%)\n\
             cgroup /mytest memory.stat:\n\
             \x20 numa_task_swapped  4\n\
             lab:\n\
             \x20 sched_balance_running_share  0.125\n"
        );
        assert_eq!(run_summary(&r), s);
    }

    #[test]
    fn summary_of_a_real_run_with_score() {
        let mut r = record("oltp", 1, 60.0, 1.0, 2.0);
        r.kind = RunKind::Real;
        r.kernel = Some("6.16.0".into());
        r.score = Some(numalab_record::Score {
            name: "throughput".into(),
            unit: "tx/s".into(),
            value: 1234.5,
            higher_is_better: true,
        });
        let s = run_summary(&r);
        assert!(s.starts_with("OLTP on unknown machine (real, kernel 6.16.0), seed 1"));
        assert!(
            s.contains("  score    throughput 1234.5 tx/s (higher is better)\n"),
            "{s}"
        );
        assert!(!s.contains("vmstat:"));
    }
}
