//! File names of figures: `LABEL-WORKLOAD-seedN-FIGURE` for a run's,
//! `compare-TEST[-latency]` for a compare's, each part made safe for any
//! file system.
//!
//! Left out: telling apart two runs of one label, workload and seed (the
//! caller numbers duplicates).

use numalab_record::RunRecord;

/// `s` with every character but ASCII letters, digits, `-`, `_` and `.`
/// replaced by `_`.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The stem of a run's figure files, `LABEL-WORKLOAD-seedN` (sanitized),
/// `label` being its RunSet's (the column's) label.
pub fn run_stem(label: &str, rec: &RunRecord) -> String {
    let workload = rec.workload_name().unwrap_or("workload");
    sanitize(&format!("{label}-{workload}-seed{}", rec.seed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_characters_become_underscores() {
        assert_eq!(sanitize("a/b c:d-e_f.g"), "a_b_c_d-e_f.g");
    }
}
