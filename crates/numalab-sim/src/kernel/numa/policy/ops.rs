//! The ops table of a NUMA balancing policy ([`NumaPolicyOps`]) and the
//! kernel's side of each callback: the methods the rest of the model calls
//! (`task_numa_placement`, `should_numa_migrate_memory`, ...) only look up
//! the callback of the policy the kernel booted with and call it. See the
//! module doc of [`crate::kernel::numa::policy`] for when each one runs.
//!
//! Left out: per-task or per-cgroup policies (one policy for the whole
//! machine, fixed at boot, as sched_ext runs one scheduler at a time), and
//! callbacks for the mechanisms (PTE marking, the copy of a page, the
//! load balancer's own NUMA checks), which stay the kernel's.

use crate::kernel::numa::migrate::TaskNumaEnv;
use crate::kernel::{CpuId, Kernel, NodeId, TaskId, VmaId};

/// A NUMA balancing policy: a name and one function per decision, in the
/// spirit of sched_ext's `struct sched_ext_ops`. Every callback takes the
/// kernel first, like the model's kernel functions. A policy is a `const`
/// that names the callbacks it replaces and takes the others from
/// mainline (`..MAINLINE`); a callback that only adjusts mainline calls
/// mainline's function (`Kernel::mainline_*`) itself, never the
/// dispatching method of the same name (that would call it again).
#[derive(Clone, Copy, Debug)]
pub struct NumaPolicyOps {
    /// The name `numalab.policy` selects it by.
    pub name: &'static str,
    /// One line for `numalab list policies`.
    pub description: &'static str,
    /// `task_scan_min`: the shortest scan period of task `t`, ms.
    pub task_scan_min: fn(&Kernel, TaskId) -> u64,
    /// `task_scan_max`: the longest scan period of task `t`, ms.
    pub task_scan_max: fn(&Kernel, TaskId) -> u64,
    /// `task_scan_start`: the scan period task `t` starts (and restarts)
    /// with, ms.
    pub task_scan_start: fn(&Kernel, TaskId) -> u64,
    /// `update_task_scan_period`: adapt task `t`'s scan period once per
    /// pass, given the pass's shared and private faults.
    pub update_task_scan_period: fn(&mut Kernel, TaskId, i64, i64),
    /// `mpol_misplaced`: the node page `idx` of `vma`, faulted by `t` on
    /// the CPU, should move to, or None.
    pub mpol_misplaced: fn(&mut Kernel, TaskId, CpuId, VmaId, usize) -> Option<NodeId>,
    /// `should_numa_migrate_memory`: whether a page on the source node
    /// follows `t` to the destination CPU's node (mainline: the two-stage
    /// filter). Also records the fault in the page's `last_cpupid`.
    pub should_numa_migrate_memory: fn(&mut Kernel, TaskId, VmaId, usize, NodeId, CpuId) -> bool,
    /// The private/shared split of `task_numa_fault`: true when the fault
    /// (the page's previous `last_cpupid`, the fault's TNF flags) counts as
    /// `t`'s private one. May form numa groups.
    pub task_numa_fault_private: fn(&mut Kernel, TaskId, u32, u32) -> bool,
    /// `task_numa_placement`: fold the pass's faults into `t`'s averages
    /// and choose its preferred node (`sched_setnuma`).
    pub task_numa_placement: fn(&mut Kernel, TaskId),
    /// `numa_migrate_preferred`: after placement, ask for a move of `t`
    /// to its preferred node (and set the retry time).
    pub numa_migrate_preferred: fn(&mut Kernel, TaskId),
    /// `task_numa_migrate`: find a CPU or a swap partner for `t` and move
    /// it (run at the tick after a fault asked).
    pub task_numa_migrate: fn(&mut Kernel, TaskId),
    /// `task_numa_compare`: judge moving `env.p` to `env.dst_cpu` (or a
    /// swap with the task there) with the task and group improvements and
    /// whether a plain move is allowed; true stops the search.
    pub task_numa_compare: fn(&mut Kernel, &mut TaskNumaEnv, i64, i64, bool) -> bool,
    /// Whether NUMA balancing acts on `t` at all (its scans and its fault
    /// statistics); mainline: proposal 4's cgroup gate and the per-task
    /// control.
    pub task_numa_balance_enabled: fn(&Kernel, TaskId) -> bool,
}

impl Kernel {
    /// `task_scan_min` (fair.c) of the policy in force, ms.
    #[inline]
    pub fn task_scan_min(&self, t: TaskId) -> u64 {
        (self.numa.ops.task_scan_min)(self, t)
    }

    /// `task_scan_max` (fair.c) of the policy in force, ms.
    #[inline]
    pub fn task_scan_max(&self, t: TaskId) -> u64 {
        (self.numa.ops.task_scan_max)(self, t)
    }

    /// `task_scan_start` (fair.c) of the policy in force, ms.
    #[inline]
    pub fn task_scan_start(&self, t: TaskId) -> u64 {
        (self.numa.ops.task_scan_start)(self, t)
    }

    /// `update_task_scan_period` (fair.c) of the policy in force.
    #[inline]
    pub fn update_task_scan_period(&mut self, t: TaskId, shared: i64, private: i64) {
        (self.numa.ops.update_task_scan_period)(self, t, shared, private)
    }

    /// `mpol_misplaced` (mm/mempolicy.c) of the policy in force.
    #[inline]
    pub fn mpol_misplaced(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        idx: usize,
    ) -> Option<NodeId> {
        (self.numa.ops.mpol_misplaced)(self, t, cpu, vma, idx)
    }

    /// `should_numa_migrate_memory` (fair.c) of the policy in force.
    #[inline]
    pub fn should_numa_migrate_memory(
        &mut self,
        t: TaskId,
        vma: VmaId,
        idx: usize,
        src_nid: NodeId,
        dst_cpu: CpuId,
    ) -> bool {
        (self.numa.ops.should_numa_migrate_memory)(self, t, vma, idx, src_nid, dst_cpu)
    }

    /// The private/shared split of `task_numa_fault` (fair.c) of the
    /// policy in force.
    #[inline]
    pub fn task_numa_fault_private(&mut self, t: TaskId, last_cpupid: u32, flags: u32) -> bool {
        (self.numa.ops.task_numa_fault_private)(self, t, last_cpupid, flags)
    }

    /// `task_numa_placement` (fair.c) of the policy in force.
    #[inline]
    pub fn task_numa_placement(&mut self, t: TaskId) {
        (self.numa.ops.task_numa_placement)(self, t)
    }

    /// `numa_migrate_preferred` (fair.c) of the policy in force.
    #[inline]
    pub fn numa_migrate_preferred(&mut self, t: TaskId) {
        (self.numa.ops.numa_migrate_preferred)(self, t)
    }

    /// `task_numa_migrate` (fair.c) of the policy in force.
    #[inline]
    pub fn task_numa_migrate(&mut self, t: TaskId) {
        (self.numa.ops.task_numa_migrate)(self, t)
    }

    /// `task_numa_compare` (fair.c) of the policy in force.
    #[inline]
    pub fn task_numa_compare(
        &mut self,
        env: &mut TaskNumaEnv,
        taskimp: i64,
        groupimp: i64,
        maymove: bool,
    ) -> bool {
        (self.numa.ops.task_numa_compare)(self, env, taskimp, groupimp, maymove)
    }

    /// Whether NUMA balancing acts on task `t` (scans, fault statistics),
    /// by the policy in force. Callers have checked the
    /// `sched_numa_balancing` key (mode 1 or 4).
    #[inline]
    pub fn task_numa_balance_enabled(&self, t: TaskId) -> bool {
        (self.numa.ops.task_numa_balance_enabled)(self, t)
    }
}
