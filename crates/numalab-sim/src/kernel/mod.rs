//! The modeled Linux kernel: memory management, the scheduler, NUMA
//! balancing, cgroups, knobs and counters.
//!
//! [`Kernel`] holds all state in tables indexed by typed ids ([`ids`]:
//! tasks by [`TaskId`], runqueues by [`CpuId`], address spaces by [`MmId`],
//! cgroups by [`CgroupId`], node memory by [`NodeId`]), grouped by owner as
//! the kernel groups it: the scheduler's ([`sched::Sched`]: runqueues,
//! balancer, task groups, sched domains), memory management's
//! ([`mm::MmState`]: address spaces, node memory, zonelists, fault-path
//! locks), NUMA balancing's kernel-wide state ([`numa::NumaState`]) and the
//! cgroup tree ([`cgroup::Cgroups`]); the tasks, the machine, the knobs,
//! the clock and the global event counters (`vmstat`) stay here. A function
//! that needs one owner is a method on it (`k.sched.cpu_load(cpu)`,
//! `k.mem.high_wmark_pages(nid)`); one that needs several takes `&mut
//! Kernel` and reads like its C namesake. Time is virtual nanoseconds in
//! [`Kernel::now`]; jiffies are derived from it.
//!
//! Argument order, as in the kernel where `struct task_struct *p` comes
//! first: the task, then the CPU, then the memory it concerns (mm, VMA,
//! page index), then nodes and values, e.g. `task_tick_numa(t, cpu)`,
//! `do_numa_page(t, cpu, vma, idx)`, `task_numa_fault(t, cpu, last_cpupid,
//! mem_node, pages, flags)`. Functions that follow a kernel signature with
//! two tasks or two CPUs keep the kernel's order (`migrate_swap(p, other,
//! target_cpu, curr_cpu)`).
//!
//! Left out: everything not named in the submodules.

pub mod cgroup;
pub mod ids;
pub mod locking;
pub mod mm;
pub mod numa;
pub mod sched;
pub mod scratch;
pub mod stats;
pub mod sysctl;
pub mod trace;

use cgroup::Cgroups;
pub use ids::{CgroupId, CpuId, MmId, NodeId, TaskId, VmaId};
use ids::{CpuSetExt, TiVec};
use mm::mempolicy::MemPolicy;
use numalab_topology::{CpuSet, Machine, NodeMask};
use sched::Task;
use stats::VmStat;
use sysctl::{knob, Knobs};

/// Nanoseconds per millisecond.
pub const NSEC_PER_MSEC: u64 = 1_000_000;

pub use trace::{TraceEvent, TraceFilter, Tracer};

/// The modeled kernel. The engine drives it (time, the tick, task life
/// cycles) and reads its state for the Run record; the fields it needs are
/// public, the kernel's own bookkeeping is not.
pub struct Kernel {
    /// The machine.
    pub m: Machine,
    /// Virtual time, ns.
    pub now: u64,
    /// Tick length, ns (1e9 / HZ).
    pub tick_ns: u64,
    /// Knobs in force.
    pub knobs: Knobs,
    /// The scheduler: runqueues, balancer, task groups, topology.
    pub sched: sched::Sched,
    /// Tasks (pid = index + first pid in runs). Add with
    /// [`Kernel::add_task`], which keeps [`Kernel::owed`] beside it.
    pub tasks: TiVec<TaskId, Task>,
    /// Kernel time each task owes the engine, by task
    /// ([`sched::owed`]).
    pub owed: TiVec<TaskId, sched::owed::Owed>,
    /// Memory management: address spaces, node memory, fault-path locks.
    pub mem: mm::MmState,
    /// Cgroup tree.
    pub cgroups: Cgroups,
    /// /proc/vmstat.
    pub vmstat: VmStat,
    /// The trace recorder, when tracing (boxed: off the hot structure).
    pub trace: Option<Box<Tracer>>,
    /// NUMA balancing's kernel-wide state: the policy and the
    /// asynchronous scanner.
    pub numa: numa::NumaState,
}

/// The CPUs a task may run on ([`Kernel::task_allowed`]), read in place:
/// its affinity within its cgroup's effective cpuset, or the cpuset alone
/// when the two do not intersect (`cpuset_cpus_allowed_fallback`).
#[derive(Clone, Copy, Debug)]
pub struct AllowedCpus<'a> {
    affinity: &'a CpuSet,
    cpuset: &'a CpuSet,
    fallback: bool,
}

impl AllowedCpus<'_> {
    /// Whether `cpu` is allowed.
    pub fn has(&self, cpu: CpuId) -> bool {
        self.cpuset.has(cpu) && (self.fallback || self.affinity.has(cpu))
    }
}

impl Kernel {
    /// A booted kernel on machine `m` with knobs `knobs`, no tasks yet.
    /// Fails when `numalab.policy` names no registered policy (the error
    /// lists the known ones).
    pub fn new(m: Machine, knobs: Knobs) -> Result<Kernel, String> {
        let numa_ops = numa::policy::find(knobs.name(knob::POLICY))?;
        let hz = knobs.get(knob::CONFIG_HZ).max(1);
        let cgroups = Cgroups::new(m.all_cpus(), NodeMask::first_n(m.nr_nodes()));
        Ok(Kernel {
            mem: mm::MmState::new(&m, &knobs),
            numa: numa::NumaState::new(numa_ops),
            sched: sched::Sched::new(&m, &knobs),
            now: 0,
            tick_ns: 1_000_000_000 / hz,
            knobs,
            tasks: TiVec::new(),
            owed: TiVec::new(),
            cgroups,
            vmstat: VmStat::default(),
            trace: None,
            m,
        })
    }

    /// Adds `task` to the task table (`copy_process`'s part that makes a
    /// task visible), with nothing owed.
    pub fn add_task(&mut self, task: Task) -> TaskId {
        self.owed.push(Default::default());
        self.tasks.push_and_get_key(task)
    }

    /// Removes the last task added, which nothing may refer to (a probe).
    pub fn remove_last_task(&mut self) {
        self.tasks.pop();
        self.owed.pop();
    }

    /// `cpu_smt_mask`: the CPUs of `cpu`'s core, `cpu` included.
    pub fn cpu_smt_mask(&self, cpu: CpuId) -> &[CpuId] {
        &self.sched.topo.core_cpus[self.cpu_info(cpu).core]
    }

    /// `jiffies` at the current time.
    pub fn jiffies(&self) -> u64 {
        self.now / self.tick_ns
    }

    /// Milliseconds to ns.
    pub fn ms(&self, ms: u64) -> u64 {
        ms * NSEC_PER_MSEC
    }

    /// CPUs task `t` may run on: its affinity within its cgroup's effective
    /// cpuset (`p->cpus_ptr`).
    pub fn task_allowed(&self, t: TaskId) -> CpuSet {
        let a = self.task_allowed_cpus(t);
        if a.fallback {
            a.cpuset.clone()
        } else {
            a.affinity.and(a.cpuset)
        }
    }

    /// Membership in [`Kernel::task_allowed`] without building the set: a
    /// wakeup asks it of a few CPUs, and the set would be allocated for
    /// each wakeup.
    pub fn task_allowed_cpus(&self, t: TaskId) -> AllowedCpus<'_> {
        let task = &self.tasks[t];
        let cpuset = &self.cgroups.all[task.cgroup].effective_cpus;
        AllowedCpus {
            affinity: &task.affinity,
            cpuset,
            fallback: !task.affinity.intersects(cpuset),
        }
    }

    /// Nodes task `t` may allocate from (`cpuset_current_mems_allowed`).
    pub fn task_mems(&self, t: TaskId) -> NodeMask {
        self.cgroups.all[self.tasks[t].cgroup].effective_mems
    }

    /// Every node, lowest id first.
    pub fn node_ids(&self) -> impl DoubleEndedIterator<Item = NodeId> + Clone {
        NodeId::range(self.m.nr_nodes())
    }

    /// CPUs of node `nid`, lowest id first.
    pub fn node_cpus(&self, nid: NodeId) -> impl Iterator<Item = CpuId> + '_ {
        self.m.nodes[nid.index()].cpus.cpu_ids()
    }

    /// Every CPU, lowest id first.
    pub fn cpu_ids(&self) -> impl DoubleEndedIterator<Item = CpuId> + Clone {
        CpuId::range(self.m.nr_cpus())
    }

    /// The machine's description of `cpu` (package, core, LLC).
    pub fn cpu_info(&self, cpu: CpuId) -> &numalab_topology::Cpu {
        &self.m.cpus[cpu.index()]
    }

    /// SLIT distance between nodes `a` and `b`.
    pub fn node_distance(&self, a: NodeId, b: NodeId) -> u32 {
        self.m.distance[a.index()][b.index()]
    }

    /// Node of `cpu`.
    pub fn cpu_node(&self, cpu: CpuId) -> NodeId {
        NodeId::new(self.m.cpus[cpu.index()].node)
    }

    /// Adds a vmstat event, and to the memory.stat of the task's cgroup.
    #[inline]
    pub fn count_memcg_event(&mut self, t: TaskId, item: stats::Vm, n: u64) {
        self.vmstat.add(item, n);
        let cg = self.tasks[t].cgroup;
        self.cgroups.all[cg].stat.add(item, n);
    }

    /// The policy that governs a fault in `vma` of task `t`'s address
    /// space: the VMA policy, else the task policy (`get_vma_policy`).
    pub fn vma_policy(&self, t: TaskId, vma: VmaId) -> MemPolicy {
        self.mem.mms[self.tasks[t].mm].vmas[vma]
            .policy
            .unwrap_or(self.tasks[t].mempolicy)
    }

    /// Checks model invariants (debug builds and tests): every page on one
    /// node within capacity, every task on at most one CPU, summaries right.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.mem.check_invariants()?;
        self.sched.check_invariants()?;
        let mut seen: TiVec<TaskId, bool> = vec![false; self.tasks.len()].into();
        for rq in &self.sched.rq {
            for &t in rq.curr.iter().chain(rq.queue.iter()) {
                if seen[t] {
                    return Err(format!("task {t} is on two runqueues"));
                }
                seen[t] = true;
                if self.tasks[t].cpu != rq.cpu {
                    return Err(format!(
                        "task {t} on rq {} but task.cpu={}",
                        rq.cpu, self.tasks[t].cpu
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::numa::tests::fx;

    /// `task_allowed` and `task_allowed_cpus` give the allowed CPUs as
    /// written out here (the affinity within the cpuset, or the cpuset
    /// when they do not meet) for an affinity inside the cpuset, one partly
    /// outside, and one wholly outside it (the cpuset fallback).
    #[test]
    fn allowed_cpus_view_is_the_allowed_set() {
        let mut k = fx::kernel("tiny-2n", &[]);
        let mm = fx::add_mm(&mut k, 1 << 20, false, None);
        let t = fx::add_task(&mut k, mm, fx::c(0));
        let cg = k.tasks[t].cgroup;
        k.cgroups.all[cg].effective_cpus = CpuSet::parse_list("0-1").expect("list");
        for (affinity, allowed) in [("0", "0"), ("1-3", "1"), ("2-3", "0-1"), ("0-3", "0-1")] {
            k.tasks[t].affinity = CpuSet::parse_list(affinity).expect("list");
            let want = CpuSet::parse_list(allowed).expect("list");
            assert_eq!(k.task_allowed(t), want, "affinity {affinity}");
            let view = k.task_allowed_cpus(t);
            for c in 0..k.m.nr_cpus() {
                assert_eq!(
                    view.has(fx::c(c)),
                    want.has(fx::c(c)),
                    "affinity {affinity}, CPU {c}"
                );
            }
        }
        // The fallback case is exercised: affinity 2-3 lies outside 0-1.
        k.tasks[t].affinity = CpuSet::parse_list("2-3").expect("list");
        assert!(k.task_allowed_cpus(t).has(fx::c(0)));
    }
}
