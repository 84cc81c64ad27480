//! The kworkers of proposal 2's asynchronous NUMA scanning
//! (kernel/numa/async_scan.rs has the kernel half). `system_unbound_wq`
//! with `queue_work_node`: an item queued for node N runs on an unbound
//! kworker whose CPUs are N's; the kworker is an ordinary CFS kernel thread
//! (kernel/sched/background.rs), woken when work arrives, placed by
//! `select_task_rq` on an idle CPU of its node if there is one, otherwise
//! queued behind the running task like any other, and it sleeps again when
//! its queue is empty. Its CPU time is its own: system time of a kernel
//! thread in the root cgroup, in no task's figures.
//!
//! With `numalab.numa_scan_async_backcharge` (the posting's suggested
//! remedy) the item goes to a kworker of the scanned task's cgroup instead,
//! whose CPUs are that cgroup's cpuset CPUs on node N (all its cpuset CPUs
//! when it has none there) and whose time is charged to that cgroup.
//!
//! Left out: worker pools and concurrency management (one kworker per node,
//! or per node and cgroup, made on first use, never exits); `WQ_UNBOUND`'s
//! affinity scopes (the node is the scope here); kworker nice levels.

use super::exec::ThreadExec;
use super::{Ev, Sim};
use crate::kernel::numa::async_scan::AsyncItem;
use crate::kernel::sched::background::FIRST_KTHREAD_PID;
use crate::kernel::sched::TaskState;
use crate::kernel::sysctl::knob;
use crate::kernel::{CgroupId, CpuId, NodeId, TaskId};
use std::collections::{BTreeMap, VecDeque};

/// Pids of kworkers start here (above the background threads, below the
/// workload's first pid).
const FIRST_KWORKER_PID: u64 = FIRST_KTHREAD_PID + 500;

/// One unbound kworker.
#[derive(Clone, Debug)]
struct Kworker {
    task: TaskId,
    node: NodeId,
    cgroup: CgroupId,
    queue: VecDeque<AsyncItem>,
}

/// The kworkers of a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct Kworkers {
    list: Vec<Kworker>,
    by_task: BTreeMap<TaskId, usize>,
    /// Index of the (empty) program list kworkers point into.
    proc_index: Option<usize>,
}

impl Sim {
    /// Hands the items `task_tick_numa` queued to kworkers and wakes those
    /// that sleep. Called at every tick after the scheduler tick.
    pub(super) fn dispatch_numa_async(&mut self) {
        if self.k.numa.async_scan.queued.is_empty() {
            return;
        }
        let items = self.k.take_numa_async_queued();
        let back = self.k.knobs.get(knob::NUMA_SCAN_ASYNC_BACKCHARGE);
        for it in items {
            let cg = if back {
                self.k.tasks[it.task].cgroup
            } else {
                CgroupId::new(0)
            };
            let w = self.kworker_for(it.node, cg);
            self.kworkers.list[w].queue.push_back(it);
            let wt = self.kworkers.list[w].task;
            if self.k.tasks[wt].state == TaskState::Sleeping {
                // try_to_wake_up from the queueing CPU: wake_affine_weight
                // prefers the waker's CPU over prev at equal load (prev's
                // load is weighed up by half of imbalance_pct), so the
                // search for an idle CPU starts there (fair.c).
                use crate::kernel::ids::CpuSetExt;
                if self.k.tasks[wt].affinity.has(it.cpu) {
                    self.k.tasks[wt].cpu = it.cpu;
                }
                // Woken now, after this tick's work (an event at the same
                // time runs after the tick).
                self.push(self.k.now, Ev::Wakeup { task: wt });
            }
        }
    }

    /// The kworker for node `node` in cgroup `cg`, made on first use.
    fn kworker_for(&mut self, node: NodeId, cg: CgroupId) -> usize {
        if let Some(i) = self
            .kworkers
            .list
            .iter()
            .position(|w| w.node == node && w.cgroup == cg)
        {
            return i;
        }
        let node_cpus = self.k.m.nodes[node.index()].cpus.clone();
        let affinity = if cg.index() == 0 {
            node_cpus
        } else {
            let eff = self.k.cgroups.all[cg].effective_cpus.clone();
            let both = node_cpus.and(&eff);
            if both.is_empty() {
                eff
            } else {
                both
            }
        };
        let proc_index = match self.kworkers.proc_index {
            Some(p) => p,
            None => {
                self.threads.push(vec![Vec::new()]);
                let p = self.threads.len() - 1;
                self.kworkers.proc_index = Some(p);
                p
            }
        };
        let n = self.kworkers.list.len();
        let name = if cg.index() == 0 {
            format!("kworker/u{}:{n}", node.index())
        } else {
            format!(
                "kworker/u{}:{n}@{}",
                node.index(),
                self.k.cgroups.all[cg].path
            )
        };
        let cpu = CpuId::new(affinity.first().unwrap_or(0));
        let t = self
            .k
            .kthread_create(FIRST_KWORKER_PID + n as u64, &name, affinity, cpu);
        self.k.tasks[t].cgroup = cg;
        self.exec
            .push(ThreadExec::new(proc_index, 0, self.k.m.nr_nodes()));
        self.kworkers.by_task.insert(t, n);
        self.kworkers.list.push(Kworker {
            task: t,
            node,
            cgroup: cg,
            queue: VecDeque::new(),
        });
        n
    }

    /// For a kworker `t` with nothing in progress, running on `cpu`: runs
    /// its next item (the scan's cost becomes its debt) and returns true,
    /// or returns false when its queue is empty (it goes to sleep). None
    /// when `t` is not a kworker.
    pub(crate) fn kworker_next(&mut self, t: TaskId, cpu: CpuId) -> Option<bool> {
        if !self.k.tasks[t].kthread {
            return None;
        }
        let w = *self.kworkers.by_task.get(&t)?;
        match self.kworkers.list[w].queue.pop_front() {
            Some(it) => {
                self.k.numa_async_work(t, it, cpu);
                Some(true)
            }
            None => Some(false),
        }
    }

    /// `cancel_work_sync(&tsk->numa_async_work)` at task `t`'s exit.
    pub(super) fn cancel_numa_async(&mut self, t: TaskId) {
        if self.k.numa.async_scan.cancel_numa_async_work(t) {
            for w in &mut self.kworkers.list {
                w.queue.retain(|it| it.task != t);
            }
            // Not yet handed to a kworker (queued at this very tick).
            self.k.numa.async_scan.queued.retain(|it| it.task != t);
        }
    }
}
