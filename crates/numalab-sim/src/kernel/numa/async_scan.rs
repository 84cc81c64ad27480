//! Asynchronous NUMA scanning (proposal 2: Huang Ying's 2020 RFC
//! "autonuma: Support to scan page table asynchronously", LKML,
//! 2020-04-14; never merged). With
//! `kernel.numa_balancing_scan_async=1`, `task_tick_numa` does not add
//! `task_numa_work` as task work: it queues the task's `numa_async_work` on
//! `system_unbound_wq` for the node the task runs on (`queue_work_node`),
//! and a kworker of that node runs the same scan (`numa_scan(p)`) with
//! `current` = the kworker: the PTE walk's CPU time is the kworker's, the
//! scanned task's `node_stamp` is still pushed by 32 times it. `do_exit`
//! cancels a pending item (`cancel_work_sync`).
//!
//! This file is the kernel half: queueing (one pending item per task, as
//! `queue_work` returns false for a pending work), running an item, and the
//! counts the reviewers' objections need (CPU time charged outside the
//! task's cgroup, items run outside the task's cpuset). The engine
//! (engine/async_scan.rs) owns the kworkers as tasks.
//!
//! The lab switch `numalab.numa_scan_async_backcharge` is the posting's
//! suggested remedy: the kworker belongs to the task's cgroup (its time is
//! charged there) and may run only on the task's cpuset CPUs.
//!
//! Left out: the workqueue's concurrency management and worker pool
//! (one kworker per node and cgroup, created on first use, runs its items
//! in order); `cond_resched` inside the walk; the scan being a single
//! instant whose cost the kworker then pays (as the synchronous scan is).

use crate::kernel::sched::TaskState;
use crate::kernel::sysctl::knob;
use crate::kernel::{CpuId, Kernel, NodeId, TaskId};
use std::collections::BTreeSet;

/// One queued `numa_async_work`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AsyncItem {
    /// The task to scan for.
    pub task: TaskId,
    /// The node it was queued on (`numa_node_id()` of the ticking CPU).
    pub node: NodeId,
    /// The CPU that queued it (the kworker's waker).
    pub cpu: CpuId,
    /// When it was queued, ns.
    pub queued_ns: u64,
}

/// Counts of the asynchronous scanner, for the Run record's `lab` map.
#[derive(Clone, Debug, Default)]
pub struct AsyncScanStats {
    /// Items queued.
    pub queued: u64,
    /// `queue_work` calls that found the item still pending.
    pub already_pending: u64,
    /// Items run by a kworker.
    pub run: u64,
    /// Items cancelled at the task's exit.
    pub cancelled: u64,
    /// Items run on a CPU outside the scanned task's allowed CPUs (its
    /// affinity and its cgroup's cpuset).
    pub outside_cpuset: u64,
    /// Scan CPU time charged to kworkers, ns.
    pub worker_ns: f64,
    /// Of that, time charged to a cgroup other than the scanned task's, ns.
    pub hidden_ns: f64,
    /// Sum and maximum of the time from queueing to running, ns.
    pub delay_sum_ns: f64,
    /// Maximum queueing delay, ns.
    pub delay_max_ns: u64,
    /// All scan work (`task_numa_work` and kworker items), ns charged.
    pub scan_ns: f64,
    /// Scans that did work (charged anything).
    pub scans: u64,
}

/// The asynchronous scanner's kernel state.
#[derive(Clone, Debug, Default)]
pub struct AsyncScan {
    /// Items queued by `task_tick_numa` and not yet handed to a kworker;
    /// the engine drains this at every tick.
    pub queued: Vec<AsyncItem>,
    /// Tasks whose item is pending (`work_pending(&p->numa_async_work)`).
    pub pending: BTreeSet<TaskId>,
    /// Counts.
    pub stats: AsyncScanStats,
}

impl Kernel {
    /// Whether `kernel.numa_balancing_scan_async` is 1.
    pub fn numa_scan_async(&self) -> bool {
        self.knobs.get(knob::NUMA_BALANCING_SCAN_ASYNC) == 1
    }

    /// `queue_work_node(numa_node_id(), system_unbound_wq,
    /// &curr->numa_async_work)` from `task_tick_numa` of task `t` on `cpu`.
    /// A pending item is not queued twice.
    pub fn queue_numa_async_work(&mut self, t: TaskId, cpu: CpuId) {
        if !self.numa.async_scan.pending.insert(t) {
            self.numa.async_scan.stats.already_pending += 1;
            return;
        }
        let node = self.cpu_node(cpu);
        self.numa.async_scan.queued.push(AsyncItem {
            task: t,
            node,
            cpu,
            queued_ns: self.now,
        });
        self.numa.async_scan.stats.queued += 1;
    }

    /// `numa_async_work`: kworker `worker`, running on `cpu`, scans for the
    /// item's task (`numa_scan(p)` with `current` = the kworker). Returns
    /// the CPU time charged to the kworker, ns.
    pub fn numa_async_work(&mut self, worker: TaskId, item: AsyncItem, cpu: CpuId) -> f64 {
        let p = item.task;
        self.numa.async_scan.pending.remove(&p);
        let st = &mut self.numa.async_scan.stats;
        st.run += 1;
        let delay = self.now.saturating_sub(item.queued_ns);
        st.delay_sum_ns += delay as f64;
        st.delay_max_ns = st.delay_max_ns.max(delay);
        if self.tasks[p].state == TaskState::Dead {
            return 0.0;
        }
        if !self.task_allowed_cpus(p).has(cpu) {
            self.numa.async_scan.stats.outside_cpuset += 1;
        }
        let charged = self.numa_scan(p, cpu, worker);
        let st = &mut self.numa.async_scan.stats;
        st.worker_ns += charged;
        if self.tasks[worker].cgroup != self.tasks[p].cgroup {
            st.hidden_ns += charged;
        }
        charged
    }
}

impl AsyncScan {
    /// `cancel_work_sync(&tsk->numa_async_work)` from `do_exit`: true when
    /// an item was pending (the engine then drops it from its kworker).
    pub fn cancel_numa_async_work(&mut self, t: TaskId) -> bool {
        let was = self.pending.remove(&t);
        if was {
            self.stats.cancelled += 1;
        }
        was
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fx;
    use crate::kernel::sched::TaskState;
    use crate::kernel::stats::Vm;
    use crate::kernel::{CgroupId, Kernel, MmId, TaskId};
    use numalab_topology::CpuSet;

    /// A two-thread process with 16 MB on node 0 whose first scan is due,
    /// its first thread on CPU 0, and a sleeping kernel thread `kw`.
    fn setup(sets: &[&str]) -> (Kernel, MmId, TaskId, TaskId) {
        let mut k = fx::kernel("tiny-2n", sets);
        let mm = fx::add_mm(&mut k, 16 << 20, false, None);
        let n = k.mem.mms[mm].vmas[fx::V0].pages.len();
        fx::populate(&mut k, mm, 0, n, fx::n(0));
        let t = fx::add_task(&mut k, mm, fx::c(0));
        fx::add_task(&mut k, mm, fx::c(2));
        let cpus: CpuSet = [0usize, 1].into_iter().collect();
        let kw = k.kthread_create(2, "kworker/u0:0", cpus, fx::c(1));
        k.now = 3_000_000_000;
        k.tasks[t].sum_exec_runtime = 1_001_000_000;
        (k, mm, t, kw)
    }

    #[test]
    fn async_tick_queues_once_and_scans_nothing_itself() {
        let (mut k, _, t, _) = setup(&["kernel.numa_balancing_scan_async=1"]);
        fx::tick_numa(&mut k, t, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 0, "nothing scanned yet");
        assert_eq!(k.tasks[t].sys_ns, 0.0, "the task paid nothing");
        assert_eq!(k.numa.async_scan.queued.len(), 1);
        assert_eq!(k.numa.async_scan.queued[0].node, fx::n(0));
        // queue_work on a pending item does nothing.
        k.queue_numa_async_work(t, fx::c(0));
        assert_eq!(k.numa.async_scan.queued.len(), 1);
        assert_eq!(k.numa.async_scan.stats.already_pending, 1);
    }

    #[test]
    fn the_kworker_pays_for_the_scan_and_the_task_stamp_moves() {
        let (mut k, _, t, kw) = setup(&["kernel.numa_balancing_scan_async=1"]);
        fx::tick_numa(&mut k, t, fx::c(0));
        let stamp = k.tasks[t].numa.node_stamp;
        let it = k.numa.async_scan.queued.pop().unwrap();
        let charged = k.numa_async_work(kw, it, fx::c(1));
        assert!(charged > 4096.0 * crate::physics::costs::PTE_UPDATE_NS);
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 4096);
        // The task pays only the TLB-shootdown interrupt it receives.
        assert!(k.tasks[t].sys_ns < charged / 10.0, "{}", k.tasks[t].sys_ns);
        assert_eq!(k.tasks[kw].sys_ns, charged);
        assert!(k.tasks[t].numa.node_stamp >= stamp + 32 * charged as u64);
        // Same cgroup (root) for both: nothing hidden; CPU 1 is allowed.
        assert_eq!(k.numa.async_scan.stats.hidden_ns, 0.0);
        assert_eq!(k.numa.async_scan.stats.outside_cpuset, 0);
        assert!(k.numa.async_scan.pending.is_empty());
    }

    #[test]
    fn time_charged_outside_the_cgroup_and_cpus_outside_the_cpuset_are_counted() {
        let (mut k, _, t, kw) = setup(&["kernel.numa_balancing_scan_async=1"]);
        let cg = k.cgroups.mkdir("/job", None, None).unwrap();
        k.cgroups.all[cg].effective_cpus = [0usize, 2].into_iter().collect();
        k.tasks[t].cgroup = cg;
        fx::tick_numa(&mut k, t, fx::c(0));
        let it = k.numa.async_scan.queued.pop().unwrap();
        let charged = k.numa_async_work(kw, it, fx::c(1));
        assert!(charged > 0.0);
        assert_eq!(k.numa.async_scan.stats.hidden_ns, charged);
        assert_eq!(
            k.numa.async_scan.stats.outside_cpuset, 1,
            "CPU 1 is not in /job"
        );
        assert!(k.cgroups.all[CgroupId::new(0)].sys_ns >= charged);
        // /job's task paid only its TLB-shootdown interrupt.
        assert!(k.cgroups.all[cg].sys_ns < charged / 10.0);
    }

    #[test]
    fn sync_scans_at_the_tick_and_exit_cancels_a_pending_item() {
        let (mut k, _, t, _) = setup(&[]);
        fx::tick_numa(&mut k, t, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 4096);
        assert!(k.tasks[t].sys_ns > 0.0, "the task paid");
        assert!(k.numa.async_scan.queued.is_empty());
        let (mut k, _, t, kw) = setup(&["kernel.numa_balancing_scan_async=1"]);
        fx::tick_numa(&mut k, t, fx::c(0));
        assert!(k.numa.async_scan.cancel_numa_async_work(t));
        assert!(!k.numa.async_scan.cancel_numa_async_work(t), "only once");
        assert_eq!(k.numa.async_scan.stats.cancelled, 1);
        // A dead task's item scans nothing.
        let it = k.numa.async_scan.queued.pop().unwrap();
        k.tasks[t].state = TaskState::Dead;
        assert_eq!(k.numa_async_work(kw, it, fx::c(1)), 0.0);
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 0);
    }
}
