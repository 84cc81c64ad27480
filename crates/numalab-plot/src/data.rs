//! The figures' data, taken from a record's time series by column name
//! ([`Column`]): per-process memory per node, counters per interval, each
//! task's node per sample.

use numalab_record::column::Column;
use numalab_record::TimeSeries;
use std::collections::BTreeMap;

/// One process's resident bytes per node over time.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessMemory {
    /// Process name.
    pub process: String,
    /// By node: bytes at each sample (absent process counts 0).
    pub by_node: Vec<Vec<f64>>,
}

/// A time series with its columns found by name.
pub struct Series<'a> {
    ts: &'a TimeSeries,
    /// Sample times, seconds.
    pub t: Vec<f64>,
    cpu_node: Vec<i64>,
}

impl<'a> Series<'a> {
    /// Wraps `ts`; `cpu_node` maps CPU ids to nodes.
    pub fn new(ts: &'a TimeSeries, cpu_node: &[i64]) -> Series<'a> {
        Series {
            ts,
            t: ts
                .rows
                .iter()
                .map(|r| r.first().copied().unwrap_or(0.0))
                .collect(),
            cpu_node: cpu_node.to_vec(),
        }
    }

    /// The values of column `name`.
    pub fn column(&self, name: &str) -> Option<Vec<f64>> {
        let i = self.ts.columns.iter().position(|c| c == name)?;
        Some(
            self.ts
                .rows
                .iter()
                .map(|r| r.get(i).copied().unwrap_or(0.0))
                .collect(),
        )
    }

    /// Each process's bytes per node (its regions summed), processes in
    /// name order.
    pub fn process_memory(&self) -> Vec<ProcessMemory> {
        let mut m: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
        for (i, c) in self.ts.columns.iter().enumerate() {
            if let Some(Column::RegionBytes { process, node, .. }) = Column::parse(c) {
                let by_node = m.entry(process.to_string()).or_default();
                if by_node.len() <= node {
                    by_node.resize(node + 1, vec![0.0; self.ts.rows.len()]);
                }
                for (j, r) in self.ts.rows.iter().enumerate() {
                    by_node[node][j] += r.get(i).copied().unwrap_or(0.0).max(0.0);
                }
            }
        }
        m.into_iter()
            .map(|(process, by_node)| ProcessMemory { process, by_node })
            .collect()
    }

    /// Per interval: NUMA hinting faults, pages migrated (differences of
    /// the cumulative vmstat columns) and tasks whose node changed since
    /// the previous sample.
    pub fn activity(&self) -> Vec<(String, Vec<(f64, f64)>)> {
        let mut out = Vec::new();
        for name in ["numa_hint_faults", "numa_pages_migrated"] {
            if let Some(v) = self.column(name) {
                let d = v
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| (self.t[i], if i == 0 { x } else { x - v[i - 1] }.max(0.0)))
                    .collect();
                out.push((name.to_string(), d));
            }
        }
        let nodes = self.task_nodes();
        if !nodes.is_empty() {
            let moves = (0..self.t.len())
                .map(|i| {
                    let n = nodes
                        .iter()
                        .filter(|(_, row)| {
                            // A change between two on-CPU samples.
                            i > 0 && {
                                let prev = row[..i].iter().rev().find(|&&x| x >= 0);
                                row[i] >= 0 && prev.is_some_and(|&p| p != row[i])
                            }
                        })
                        .count();
                    (self.t[i], n as f64)
                })
                .collect();
            out.push(("task node changes".to_string(), moves));
        }
        out
    }

    /// Each task's node at each sample (-1 while off CPU), tasks in column
    /// order.
    pub fn task_nodes(&self) -> Vec<(String, Vec<i64>)> {
        let mut out = Vec::new();
        for (i, c) in self.ts.columns.iter().enumerate() {
            if let Some(Column::Cpu { .. }) = Column::parse(c) {
                let row = self
                    .ts
                    .rows
                    .iter()
                    .map(|r| {
                        let cpu = r.get(i).copied().unwrap_or(-1.0);
                        if cpu < 0.0 {
                            -1
                        } else {
                            self.cpu_node.get(cpu as usize).copied().unwrap_or(-1)
                        }
                    })
                    .collect();
                out.push((c["cpu:".len()..].to_string(), row));
            }
        }
        out
    }
}
