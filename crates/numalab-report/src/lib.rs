//! Reports the way kernel developers read them.
//!
//! Pure functions from Run records to text; the CLI prints them:
//!
//! * [`compare::compare_table`]: the mmtests compare-kernels report of
//!   several columns of runs (summary statistics with mmtests' deltas and
//!   significance marks, the `Duration` block, the `Ops` NUMA counters);
//!   [`compare::compare_cgroups`]: one cgroup's memory.stat `numa_*`
//!   counters per column; [`compare_rows::CompareRows`]: which row (test)
//!   each run of a column belongs to, a column holding several workloads;
//! * [`summary::run_summary`]: a short terminal summary of one run;
//! * [`csv::runs_csv`]: one CSV line per run for plotting elsewhere;
//! * [`latency::latency_histogram`]: per-access latency histograms
//!   (proposal 2) as text;
//! * [`stats`]: mmtests' statistics (`MMTests::Stat`) and Welch's t-test;
//! * [`html`]: a self-contained HTML page of these tables with inline SVG
//!   figures (`numalab report`).
//!
//! Left out for now: plots and trace rendering. Nothing here
//! reads files, the clock or the environment, so the same records always
//! give byte-identical text.

#![deny(missing_docs)]

pub mod compare;
pub mod compare_rows;
pub mod csv;
pub mod html;
pub mod latency;
pub mod stats;
pub mod summary;

pub use compare::{compare_cgroups, compare_table};
pub use csv::runs_csv;
pub use summary::run_summary;

#[cfg(test)]
mod golden_tests;

/// Hand-made Run records for the tests (`RunRecord` has no `Default`).
#[cfg(test)]
pub(crate) mod testutil {
    use numalab_record::{RunKind, RunRecord, RunSet};

    /// A model run of workload `workload` with the given seed and times and
    /// nothing else.
    pub fn record(workload: &str, seed: u64, elapsed_s: f64, user_s: f64, sys_s: f64) -> RunRecord {
        RunRecord {
            numalab_version: "0.1.0".to_string(),
            machine: serde_json::json!({}),
            workload: serde_json::json!({ "name": workload }),
            seed,
            elapsed_s,
            user_s,
            sys_s,
            ..RunRecord::empty(RunKind::Model)
        }
    }

    /// A column labelled `name`.
    pub fn set(name: &str, runs: Vec<RunRecord>) -> RunSet {
        RunSet::new(name, runs)
    }
}
