//! Text histograms of per-access latencies (proposal 2; the Run record's
//! `access_latency`, engine/latency.rs in numalab-sim), in the spirit of
//! pmbench's report: one row per log2 band with reads and writes apart,
//! then the count at or above the threshold and the slowest access.
//!
//! Left out: pmbench's 16 sub-bins per band (the record keeps log2 bins).

use numalab_record::AccessLatency;
use std::fmt::Write as _;

/// A latency in ns as a short human figure (`64 ns`, `2 us`, `1 ms`).
fn human_ns(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        format!("{} s", ns / 1_000_000_000)
    } else if ns >= 1_000_000 {
        format!("{} ms", ns / 1_000_000)
    } else if ns >= 1_000 {
        format!("{} us", ns / 1_000)
    } else {
        format!("{ns} ns")
    }
}

/// The histogram as text, each line starting with `indent`: a header, one
/// row per non-empty band `2^(i, i+1) ns` with its lower edge in human
/// units, and a line with the outliers and the maximum.
pub fn latency_histogram(h: &AccessLatency, indent: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{indent}{:<22} {:>16} {:>16}",
        "latency band", "reads", "writes"
    );
    let n = h.reads.len().max(h.writes.len());
    for i in 0..n {
        let r = h.reads.get(i).copied().unwrap_or(0);
        let w = h.writes.get(i).copied().unwrap_or(0);
        if r == 0 && w == 0 {
            continue;
        }
        let band = format!("2^({i},{}) ns >={}", i + 1, human_ns(1u64 << i));
        let _ = writeln!(out, "{indent}{band:<22} {r:>16} {w:>16}");
    }
    let _ = writeln!(
        out,
        "{indent}>= {} us: {} reads, {} writes ({} in all); slowest {} ns",
        h.threshold_us,
        h.reads_over,
        h.writes_over,
        h.reads_over + h.writes_over,
        h.max_ns
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_for_non_empty_bands_and_the_outlier_line() {
        let h = AccessLatency {
            reads: vec![
                0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
            ],
            writes: vec![0, 0, 0, 0, 0, 0, 7],
            threshold_us: 1000,
            reads_over: 2,
            writes_over: 0,
            max_ns: 1_500_000,
        };
        let t = latency_histogram(&h, "  ");
        assert!(t.contains("2^(6,7) ns >=64 ns"), "{t}");
        assert!(t.contains("2^(20,21) ns >=1 ms"), "{t}");
        assert!(!t.contains("2^(7,8)"), "{t}");
        assert!(t.contains(">= 1000 us: 2 reads, 0 writes (2 in all); slowest 1500000 ns"));
        assert_eq!(t.lines().count(), 4);
    }
}
