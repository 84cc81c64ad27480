//! Which row (test) of a compare each run belongs to, for the compare table
//! and the compare charts of numalab-plot alike.
//!
//! A column (RunSet) may hold several workloads; each is a row block of
//! its own, keyed by the workload's mmtests test name
//! ([`RunRecord::test_name`]), so that variants of one benchmark in
//! different columns (`numa01` against `numa01-inverse-bind`, both
//! `NUMA01`) share a row, as a reproduction's configurations do. Only when
//! one column holds two workloads of the same test name would their
//! samples be mixed; then that test is split into one row per workload,
//! named after the workload (`NUMA01_INVERSE_BIND`).
//!
//! Left out: matching rows by anything but names (two different workload
//! files that share a name are one row).

use numalab_record::{RunRecord, RunSet};
use std::collections::{BTreeMap, BTreeSet};

/// The rows of a compare and the row of every run.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareRows {
    /// Row names in report order (autonumabench's tests first, then
    /// alphabetical).
    pub tests: Vec<String>,
    /// By column, by run: the run's row name.
    keys: Vec<Vec<String>>,
}

/// The workload's own name (what tells two workloads of one test apart).
fn workload_name(r: &RunRecord) -> &str {
    r.workload_name().unwrap_or("")
}

/// The autonumabench tests in the order mmtests reports them.
const AUTONUMABENCH_ORDER: [&str; 4] = ["NUMA01", "NUMA01_THREADLOCAL", "NUMA02", "NUMA02_SMT"];

/// Orders test names the way the compare table lists them: the four
/// autonumabench tests in their usual order first, then the others
/// alphabetically; duplicates removed.
pub fn order_tests<I, S>(names: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let set: BTreeSet<String> = names.into_iter().map(Into::into).collect();
    let mut out: Vec<String> = AUTONUMABENCH_ORDER
        .iter()
        .filter(|t| set.contains(**t))
        .map(|t| t.to_string())
        .collect();
    out.extend(
        set.into_iter()
            .filter(|t| !AUTONUMABENCH_ORDER.contains(&t.as_str())),
    );
    out
}

impl CompareRows {
    /// The rows of `sets`, one column per set.
    pub fn of(sets: &[RunSet]) -> CompareRows {
        // Tests that some column holds under two workload names.
        let mut split: BTreeSet<String> = BTreeSet::new();
        for s in sets {
            let mut by_test: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
            for r in &s.runs {
                by_test
                    .entry(r.test_name())
                    .or_default()
                    .insert(workload_name(r));
            }
            split.extend(
                by_test
                    .into_iter()
                    .filter(|(_, w)| w.len() > 1)
                    .map(|(t, _)| t),
            );
        }
        let keys: Vec<Vec<String>> = sets
            .iter()
            .map(|s| {
                s.runs
                    .iter()
                    .map(|r| {
                        let t = r.test_name();
                        if split.contains(&t) {
                            r.workload_test_name()
                        } else {
                            t
                        }
                    })
                    .collect()
            })
            .collect();
        let tests = order_tests(keys.iter().flatten().cloned());
        CompareRows { tests, keys }
    }

    /// The runs of column `col` of `sets` (the sets given to [`Self::of`])
    /// in row `test`.
    pub fn runs<'a>(
        &'a self,
        sets: &'a [RunSet],
        col: usize,
        test: &'a str,
    ) -> impl Iterator<Item = &'a RunRecord> + 'a {
        let keys = self.keys.get(col).map_or(&[][..], |k| k.as_slice());
        sets.get(col)
            .into_iter()
            .flat_map(|s| s.runs.iter())
            .zip(keys)
            .filter(move |(_, k)| k.as_str() == test)
            .map(|(r, _)| r)
    }

    /// Whether column `col` has a run in row `test`.
    pub fn has(&self, col: usize, test: &str) -> bool {
        self.keys
            .get(col)
            .is_some_and(|k| k.iter().any(|t| t == test))
    }

    /// The rows every column has a run in, in report order.
    pub fn common(&self) -> Vec<String> {
        self.tests
            .iter()
            .filter(|t| (0..self.keys.len()).all(|c| self.has(c, t)))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{record, set};

    fn with_test(workload: &str, test: &str, seed: u64) -> RunRecord {
        let mut r = record(workload, seed, 1.0, 1.0, 1.0);
        r.workload = serde_json::json!({ "name": workload, "test": test });
        r
    }

    #[test]
    fn several_workloads_per_column_are_rows_of_their_own() {
        let sets = [
            set(
                "off",
                vec![
                    record("numa02", 1, 1.0, 1.0, 1.0),
                    record("numa01", 1, 1.0, 1.0, 1.0),
                    record("numa02", 2, 1.0, 1.0, 1.0),
                ],
            ),
            set("on", vec![record("numa01", 1, 1.0, 1.0, 1.0)]),
        ];
        let rows = CompareRows::of(&sets);
        assert_eq!(rows.tests, ["NUMA01", "NUMA02"]);
        assert_eq!(rows.runs(&sets, 0, "NUMA02").count(), 2);
        assert_eq!(rows.runs(&sets, 1, "NUMA02").count(), 0);
        assert!(!rows.has(1, "NUMA02"));
        assert_eq!(rows.common(), ["NUMA01"]);
    }

    #[test]
    fn variants_share_a_row_across_columns_but_not_within_one() {
        // A reproduction's columns: the same test, another workload.
        let sets = [
            set("default", vec![with_test("numa01", "NUMA01", 1)]),
            set(
                "inverse",
                vec![with_test("numa01-inverse-bind", "NUMA01", 1)],
            ),
        ];
        let rows = CompareRows::of(&sets);
        assert_eq!(rows.tests, ["NUMA01"]);
        assert_eq!(rows.common(), ["NUMA01"]);
        // Both in one column: two rows, everywhere.
        let sets = [
            set(
                "a",
                vec![
                    with_test("numa01", "NUMA01", 1),
                    with_test("numa01-inverse-bind", "NUMA01", 1),
                ],
            ),
            set("b", vec![with_test("numa01-inverse-bind", "NUMA01", 1)]),
        ];
        let rows = CompareRows::of(&sets);
        assert_eq!(rows.tests, ["NUMA01", "NUMA01_INVERSE_BIND"]);
        assert_eq!(rows.runs(&sets, 1, "NUMA01_INVERSE_BIND").count(), 1);
        assert!(!rows.has(1, "NUMA01"));
    }
}
