//! Task placement on fork and wakeup (kernel/sched/fair.c
//! `select_task_rq_fair`, `sched_balance_find_dst_cpu`,
//! `find_idlest_group`, `select_idle_sibling`).
//!
//! Fork/exec placement walks down from the highest domain with
//! SD_BALANCE_FORK, choosing the idlest group at each level, with the NUMA
//! allowance that keeps a new task near its parent while the local node has
//! spare capacity and few tasks (`adjust_numa_imbalance`). Wakeups go to
//! the previous CPU if it is idle, else an idle core then an idle CPU of its
//! LLC, else stay on the previous CPU.
//!
//! Left out: wake_affine between waker and wakee CPUs, utilisation-based
//! (PELT) comparisons, idle-state exit latencies. (The NUMA preferred-node
//! shortcut of `find_idlest_group` is modeled; the state is numa/'s.)

use super::topology::SdFlags;
use crate::kernel::ids::CpuSetExt;
use crate::kernel::{CpuId, Kernel, TaskId};
use numalab_topology::CpuSet;

/// `NUMA_IMBALANCE_MIN`: imbalances this small are ignored while the
/// destination runs few tasks.
pub const NUMA_IMBALANCE_MIN: i64 = 2;

/// `adjust_numa_imbalance`: allow a small imbalance when the destination
/// would still run no more than `imb_numa_nr` tasks.
pub fn adjust_numa_imbalance(imbalance: i64, dst_running: i64, imb_numa_nr: i64) -> i64 {
    if dst_running > imb_numa_nr {
        return imbalance;
    }
    if imbalance <= NUMA_IMBALANCE_MIN {
        return 0;
    }
    imbalance
}

/// Group statistics used by placement (`struct sg_lb_stats`, the parts kept).
#[derive(Clone, Copy, Debug, Default)]
pub struct GroupStats {
    /// `sum_nr_running`.
    pub nr_running: i64,
    /// `idle_cpus`.
    pub idle_cpus: i64,
    /// `group_weight`.
    pub weight: i64,
}

impl GroupStats {
    /// `group_has_spare`: fewer tasks than CPUs.
    pub fn has_spare(&self) -> bool {
        self.nr_running < self.weight
    }
}

impl Kernel {
    /// Statistics of the CPUs in `group` that are also in `allowed`.
    pub fn group_stats(&self, group: &CpuSet, allowed: Option<&CpuSet>) -> GroupStats {
        let mut s = GroupStats::default();
        for c in group.cpu_ids() {
            if allowed.is_some_and(|a| !a.has(c)) {
                continue;
            }
            s.weight += 1;
            let n = self.rq[c].nr_running() as i64;
            s.nr_running += n;
            if n == 0 {
                s.idle_cpus += 1;
            }
        }
        s
    }

    /// Placement of a new task (`wake_up_new_task` → `select_task_rq_fair`
    /// with WF_FORK): start from the parent's CPU and descend.
    pub fn select_task_rq_fork(&self, t: TaskId, parent_cpu: CpuId) -> CpuId {
        let allowed = self.task_allowed(t);
        let mut cpu = if allowed.has(parent_cpu) {
            parent_cpu
        } else {
            CpuId::new(allowed.first().unwrap_or(0))
        };
        let sds = &self.topo.sd[cpu];
        // Highest domain that balances on fork.
        let Some(top) = sds.iter().rposition(|d| d.flags.has(SdFlags::BALANCE_FORK)) else {
            return self.idlest_cpu_in(&allowed, cpu);
        };
        let mut level = top as isize;
        while level >= 0 {
            let sd = &self.topo.sd[cpu][level as usize];
            let mut next = level - 1;
            if let Some(g) = self.find_idlest_group(sd, t, cpu, &allowed) {
                let cand = self.idlest_cpu_in(&sd.groups[g].and(&allowed), cpu);
                if cand != cpu {
                    // As find_idlest_cpu(): go on in the new CPU's highest
                    // domain smaller than this one. Its domain stack may
                    // differ from this CPU's (asymmetric SLIT distances).
                    let weight = sd.span_weight();
                    next = self.topo.sd[cand]
                        .iter()
                        .rposition(|d| d.span_weight() < weight)
                        .map_or(-1, |i| i as isize);
                }
                cpu = cand;
            }
            level = next;
        }
        self.idlest_cpu_in(
            &self.topo.sd[cpu]
                .first()
                .map_or_else(|| allowed.clone(), |d| d.span.and(&allowed)),
            cpu,
        )
    }

    /// `find_idlest_group`: the group of `sd` to move a new task to, or
    /// `None` to stay in the local group.
    fn find_idlest_group(
        &self,
        sd: &super::topology::SchedDomain,
        t: TaskId,
        cpu: CpuId,
        allowed: &CpuSet,
    ) -> Option<usize> {
        let local = self.group_stats(&sd.groups[0], Some(allowed));
        let mut best: Option<(usize, GroupStats)> = None;
        for (i, g) in sd.groups.iter().enumerate().skip(1) {
            if !g.intersects(allowed) {
                continue;
            }
            let s = self.group_stats(g, Some(allowed));
            let better = match best {
                None => true,
                Some((_, b)) => {
                    // Most idle CPUs, then fewest tasks per CPU.
                    (s.idle_cpus, -s.nr_running * 1024 / s.weight.max(1))
                        > (b.idle_cpus, -b.nr_running * 1024 / b.weight.max(1))
                }
            };
            if better {
                best = Some((i, s));
            }
        }
        let (idlest, is) = best?;
        if local.weight == 0 {
            return Some(idlest);
        }
        if local.has_spare() {
            if sd.flags.has(SdFlags::NUMA) {
                // NUMA balancing: with spare capacity, stay on or go to the
                // task's preferred node.
                if let Some(pref) = self.tasks[t].numa.preferred_nid {
                    if self.cpu_node(cpu) == pref {
                        return None;
                    }
                    if sd.groups[idlest].cpu_ids().next().map(|c| self.cpu_node(c)) == Some(pref) {
                        return Some(idlest);
                    }
                }
                let imb_numa_nr = (sd.imb_numa_nr as i64).min(allowed.len() as i64);
                let imbalance = (local.idle_cpus - is.idle_cpus).abs();
                if adjust_numa_imbalance(imbalance, local.nr_running + 1, imb_numa_nr) == 0 {
                    return None;
                }
            }
            if local.idle_cpus >= is.idle_cpus {
                return None;
            }
            return Some(idlest);
        }
        // Local is busy: go where the load per CPU is lower.
        let l = local.nr_running * 1024 / local.weight.max(1);
        let r = is.nr_running * 1024 / is.weight.max(1);
        if r * sd.imbalance_pct as i64 / 100 < l || (is.has_spare() && !local.has_spare()) {
            Some(idlest)
        } else {
            None
        }
    }

    /// The least loaded CPU of `set`, preferring `prefer` on ties, then the
    /// lowest id (`find_idlest_group_cpu`).
    pub fn idlest_cpu_in(&self, set: &CpuSet, prefer: CpuId) -> CpuId {
        let mut best = None;
        for c in set.cpu_ids() {
            let key = (self.rq[c].nr_running(), c != prefer, c);
            if best.is_none_or(|(k, _)| key < k) {
                best = Some((key, c));
            }
        }
        best.map_or(prefer, |(_, c)| c)
    }

    /// Placement of a waking task (`select_task_rq_fair` with WF_TTWU →
    /// `select_idle_sibling`).
    pub fn select_task_rq_wake(&self, t: TaskId) -> CpuId {
        let allowed = self.task_allowed(t);
        let prev = self.tasks[t].cpu;
        if !allowed.has(prev) {
            return self.select_task_rq_fork(t, prev);
        }
        if self.rq[prev].is_idle() {
            return prev;
        }
        // LLC of prev: an idle core first, then any idle CPU.
        let llc = self.cpu_info(prev).llc;
        let mut idle_cpu = None;
        for &c in &self.topo.llc_cpus[llc] {
            if !allowed.has(c) || !self.rq[c].is_idle() {
                continue;
            }
            let core = self.cpu_info(c).core;
            if self.topo.core_cpus[core]
                .iter()
                .all(|&o| self.rq[o].is_idle())
            {
                return c;
            }
            idle_cpu.get_or_insert(c);
        }
        idle_cpu.unwrap_or(prev)
    }
}
