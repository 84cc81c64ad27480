//! NUMA balancing's own kernel-wide state ([`NumaState`]): the policy in
//! force, proposal 2's asynchronous scanner and 3.9's `pmd_numa` marks. The per-task state
//! (`task_struct`'s `numa_*` fields, numa groups) stays with the tasks, as
//! in the kernel.
//!
//! Left out: the functions on this state (policy/, async_scan.rs).

use crate::kernel::numa::async_scan::AsyncScan;
use crate::kernel::numa::policy::NumaPolicyOps;
use crate::kernel::{MmId, VmaId};
use std::collections::BTreeSet;

/// NUMA balancing's kernel-wide state.
pub struct NumaState {
    /// Proposal 2's asynchronous NUMA scanner (async_scan.rs).
    pub async_scan: AsyncScan,
    /// The NUMA balancing policy (`numalab.policy`), fixed at boot: its
    /// callbacks make the decisions (policy/).
    pub(in crate::kernel) ops: &'static NumaPolicyOps,
    /// Tasks whose hinting fault asked for `task_numa_migrate` since the
    /// last tick, in the order of those faults (each once: see
    /// `TaskNumaState::migrate_requested`).
    pub(in crate::kernel) migrate_queue: Vec<crate::kernel::TaskId>,
    /// `(task, CPU)` of the scans this tick's `task_tick_numa` calls queued
    /// (`task_work_add`), run after the tick pass
    /// (`numalab.numa_work_after_tick`, task_work.rs `run_numa_task_work`).
    pub(in crate::kernel) work_pending: Vec<(crate::kernel::TaskId, crate::kernel::CpuId)>,
    /// PMDs (mm, VMA, 2 MiB chunk) marked `pmd_numa` by 3.8-3.12's scan
    /// (`numalab.pmd_numa_batch`, pmd_numa.rs); empty otherwise.
    pub(in crate::kernel) pmd_numa: BTreeSet<(MmId, VmaId, usize)>,
}

impl NumaState {
    /// NUMA balancing at boot under policy `ops`, no asynchronous work.
    pub fn new(ops: &'static NumaPolicyOps) -> NumaState {
        NumaState {
            async_scan: AsyncScan::default(),
            ops,
            migrate_queue: Vec::new(),
            work_pending: Vec::new(),
            pmd_numa: BTreeSet::new(),
        }
    }
}
