//! The model's time series, declared once: [`SERIES`] lists each series
//! (a group of columns) with the function that names its columns and the
//! function that computes its values at a sample, side by side, so the
//! record's column names (`record.rs`) and the sampler's rows
//! (`Sim::sample`) come from one list in one order and cannot drift apart.
//!
//! A series may have several columns (one per node, region or thread); its
//! two functions walk the same items in the same order, and a test holds
//! every row to the column count. Left out: when to sample (the sampler,
//! `numalab.sample_interval_ms`) and rounding (the record).

use super::Sim;
use crate::kernel::sched::TaskState;
use crate::kernel::stats::{NR_VM_ITEMS, VM_NAMES};
use crate::kernel::VmaId;
use numalab_record::counters::MODEL_VMSTAT_SERIES;
use numalab_record::Column;

/// One series of the model's time series.
pub(super) struct Series {
    /// Appends the names of the series' columns for this run.
    pub columns: fn(&Sim, &mut Vec<String>),
    /// Appends the series' values at a sample taken at `now` (ns), one per
    /// column, in the order of `columns`.
    pub values: fn(&mut Sim, u64, &mut Vec<f64>),
}

/// Every series, in column order. `t_s` is first ([`Column::Time`]), then
/// the sampled vmstat counters, the local share, the running tasks, each
/// node's memory in use, and the columns a real run has too: each region's
/// bytes per node (/proc/PID/numa_maps) and each thread's CPU.
pub(super) const SERIES: [Series; 7] = [
    Series {
        columns: |_, c| c.push(Column::Time.name()),
        values: |_, now, row| row.push(now as f64 / 1e9),
    },
    Series {
        columns: |_, c| {
            c.extend(
                MODEL_VMSTAT_SERIES
                    .iter()
                    .map(|name| Column::Vmstat(name).name()),
            )
        },
        values: |s, _, row| row.extend(SERIES_VM.iter().map(|&i| s.k.vmstat.0[i] as f64)),
    },
    Series {
        columns: |_, c| c.push(Column::LocalBytesShare.name()),
        // The share of the interval's bytes; the interval starts anew.
        values: |s, _, row| {
            row.push(if s.interval_bytes > 0.0 {
                s.interval_local_bytes / s.interval_bytes
            } else {
                0.0
            });
            s.interval_bytes = 0.0;
            s.interval_local_bytes = 0.0;
        },
    },
    Series {
        columns: |_, c| c.push(Column::RunningTasks.name()),
        values: |s, _, row| {
            row.push(s.k.sched.rq.iter().filter(|r| r.curr.is_some()).count() as f64)
        },
    },
    Series {
        columns: |s, c| c.extend((0..s.k.m.nr_nodes()).map(|n| Column::NodeUsedGib(n).name())),
        values: |s, _, row| {
            for node in s.k.mem.nodes() {
                let used = node.total_pages - node.free_pages;
                row.push(used as f64 * 4096.0 / (1u64 << 30) as f64);
            }
        },
    },
    Series {
        columns: |s, c| {
            let nn = s.k.m.nr_nodes();
            for p in &s.w.processes {
                // The runtime's mappings are not the workload's memory.
                for r in p.regions.iter().filter(|r| !r.runtime) {
                    for node in 0..nn {
                        c.push(
                            Column::RegionBytes {
                                process: &p.name,
                                region: &r.name,
                                node,
                            }
                            .name(),
                        );
                    }
                }
            }
        },
        // -1 for each node while the process does not exist.
        values: |s, _, row| {
            let nn = s.k.m.nr_nodes();
            for (pi, p) in s.procs.iter().enumerate() {
                let mm = s.k.mem.mms.iter().find(|m| m.tgid == p.pid);
                let regions = &s.w.processes[pi].regions;
                for r in (0..regions.len()).filter(|&r| !regions[r].runtime) {
                    match mm.and_then(|m| m.vmas.get(VmaId::new(r))) {
                        Some(v) => {
                            let k = v.page_size() as f64;
                            row.extend(v.pages_by_node().into_iter().map(|x| x as f64 * k));
                        }
                        None => row.extend(std::iter::repeat_n(-1.0, nn)),
                    }
                }
            }
        },
    },
    Series {
        columns: |s, c| {
            for p in &s.w.processes {
                for t in &p.threads {
                    c.push(
                        Column::Cpu {
                            process: &p.name,
                            thread: &t.name,
                        }
                        .name(),
                    );
                }
            }
        },
        // -1 while the thread does not exist.
        values: |s, _, row| {
            for p in &s.procs {
                for t in &p.tasks {
                    row.push(match t {
                        Some(t) if s.k.tasks[*t].state != TaskState::Dead => {
                            s.k.tasks[*t].cpu.index() as f64
                        }
                        _ => -1.0,
                    });
                }
            }
        },
    },
];

/// The column names of the run's time series, in [`SERIES`] order.
pub(super) fn columns(s: &Sim) -> Vec<String> {
    let mut c = Vec::new();
    for series in &SERIES {
        (series.columns)(s, &mut c);
    }
    c
}

/// One sample at `now`: every series' values, in [`SERIES`] order.
pub(super) fn row(s: &mut Sim, now: u64) -> Vec<f64> {
    // Every row has the previous row's length.
    let mut row = Vec::with_capacity(s.samples.last().map_or(0, Vec::len));
    for series in &SERIES {
        (series.values)(s, now, &mut row);
    }
    row
}

/// Index in [`VM_NAMES`] of a counter name; a name the model does not
/// count fails the build where it is used in a constant.
const fn vm_index(name: &str) -> usize {
    let mut i = 0;
    while i < NR_VM_ITEMS {
        let (a, b) = (VM_NAMES[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("a counter of numalab_record::counters::MODEL_VMSTAT_SERIES is not in VM_NAMES")
}

/// The model's sampled vmstat counters
/// ([`numalab_record::counters::MODEL_VMSTAT_SERIES`]) as indices into the
/// counter array, in column order, resolved at compile time.
pub(crate) const SERIES_VM: [usize; MODEL_VMSTAT_SERIES.len()] = {
    let mut out = [0; MODEL_VMSTAT_SERIES.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = vm_index(MODEL_VMSTAT_SERIES[i]);
        i += 1;
    }
    out
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::stats::Vm;
    use crate::{Knobs, RunOptions};

    #[test]
    fn the_sampled_counters_resolve_to_their_items() {
        assert_eq!(
            SERIES_VM,
            [
                Vm::NumaPteUpdates as usize,
                Vm::NumaHintFaults as usize,
                Vm::NumaHintFaultsLocal as usize,
                Vm::NumaPagesMigrated as usize,
            ]
        );
    }

    #[test]
    fn every_row_has_one_value_per_column() {
        let m = numalab_topology::presets::load("tiny-2n").unwrap();
        let spec = numalab_workload::presets::load("numa01").unwrap();
        let w = numalab_workload::resolve(&spec, &m, 3, 0.02).unwrap();
        let knobs = Knobs::from_sets(&["numalab.sample_interval_ms=1"]).unwrap();
        let rec = Sim::new(m, w, knobs, RunOptions::default())
            .unwrap()
            .run(&mut |_| {})
            .unwrap();
        let ts = rec.timeseries.expect("a time series");
        assert!(ts.rows.len() > 1, "{} rows", ts.rows.len());
        // Regions (2 nodes each) and threads give the run more columns
        // than the fixed ones.
        assert!(ts.columns.len() > 10, "{:?}", ts.columns);
        assert_eq!(ts.columns[0], "t_s");
        for row in &ts.rows {
            assert_eq!(row.len(), ts.columns.len());
        }
    }
}
