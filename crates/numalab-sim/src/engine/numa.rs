//! The NUMA fields of the Run record: what `/proc/PID/sched` shows of a
//! task's NUMA balancing state (`sched_show_numa`), read from the kernel at
//! the end of a run.
//!
//! Left out: the per-node fault counts of the CPU stat (`NUMA_CPU`), which
//! `/proc/PID/sched` does not print either.

use super::Sim;
use crate::kernel::numa::{faults_idx, NUMA_MEM};
use crate::kernel::sched::Task;
use numalab_record::{NodeFaults, TaskNuma};

impl Sim {
    /// The /proc/PID/sched NUMA fields of a task for the Run record
    /// (`sched_show_numa`), or None when balancing is off.
    pub(crate) fn task_numa_figures(&self, t: &Task) -> Option<TaskNuma> {
        if !self.k.numa_balancing_enabled() {
            return None;
        }
        let k = &self.k;
        let nn = k.m.nr_nodes();
        let n = &t.numa;
        let live = n.group.and_then(|g| k.tasks[g].numa.own_group.as_ref());
        let group: Option<(u64, &[i64])> = match (&n.exit_group, live) {
            (Some((gid, f)), _) => Some((*gid, f.as_slice())),
            (None, Some(g)) => Some((g.gid, g.faults.as_slice())),
            _ => None,
        };
        let faults = k
            .node_ids()
            .map(|nid| {
                let tf = |p| {
                    n.faults
                        .get(faults_idx(nn, NUMA_MEM, nid, p))
                        .map_or(0, |&x| x.max(0) as u64)
                };
                let gf = |p| {
                    group.map_or(0, |(_, f)| {
                        f[faults_idx(nn, NUMA_MEM, nid, p)].max(0) as u64
                    })
                };
                NodeFaults {
                    node: nid.index(),
                    task_private: tf(1),
                    task_shared: tf(0),
                    group_private: gf(1),
                    group_shared: gf(0),
                }
            })
            .collect();
        Some(TaskNuma {
            preferred_nid: n.preferred_nid.map_or(-1, |p| p.index() as i64),
            scan_seq: n.scan_seq,
            scan_period_ms: n.scan_period,
            numa_group_id: group.map(|(gid, _)| gid),
            pages_migrated: n.pages_migrated,
            faults,
        })
    }
}
