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
//! Groups are classified and compared with PELT load and utilisation
//! (balance.rs `sg_stats`); the wakeup scan is limited by the LLC's
//! utilisation (SIS_UTIL).
//!
//! The wakeups' entry points, and `wake_affine` for a wakeup by another
//! task, are in wake_affine.rs; `select_idle_sibling` is here.
//!
//! Left out: util_est, idle-state
//! exit latencies, `recent_used_cpu`, the task's own contribution removed
//! from its current CPU's load (`cpu_load_without`). (The NUMA preferred-node
//! shortcut of `find_idlest_group` is modeled; the state is numa/'s.)

use super::topology::SdFlags;
use super::Sched;
use crate::kernel::ids::CpuSetExt;
use crate::kernel::{AllowedCpus, CpuId, Kernel, TaskId};
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

impl Kernel {
    /// Placement of a new task (`wake_up_new_task` → `select_task_rq_fair`
    /// with WF_FORK): start from the parent's CPU and descend.
    pub fn select_task_rq_fork(&self, t: TaskId, parent_cpu: CpuId) -> CpuId {
        let allowed = self.task_allowed(t);
        let mut cpu = if allowed.has(parent_cpu) {
            parent_cpu
        } else {
            CpuId::new(allowed.first().unwrap_or(0))
        };
        let sds = &self.sched.topo.sd[cpu];
        // Highest domain that balances on fork.
        let Some(top) = sds.iter().rposition(|d| d.flags.has(SdFlags::BALANCE_FORK)) else {
            return self.sched.idlest_cpu_in(&allowed, cpu);
        };
        let mut level = top as isize;
        while level >= 0 {
            let sd = &self.sched.topo.sd[cpu][level as usize];
            let mut next = level - 1;
            if let Some(g) = self.find_idlest_group(sd, t, cpu, &allowed) {
                let cand = self.sched.idlest_cpu_in(&sd.groups[g].and(&allowed), cpu);
                if cand != cpu {
                    // As find_idlest_cpu(): go on in the new CPU's highest
                    // domain smaller than this one. Its domain stack may
                    // differ from this CPU's (asymmetric SLIT distances).
                    let weight = sd.span_weight();
                    next = self.sched.topo.sd[cand]
                        .iter()
                        .rposition(|d| d.span_weight() < weight)
                        .map_or(-1, |i| i as isize);
                }
                cpu = cand;
            }
            level = next;
        }
        self.sched.idlest_cpu_in(
            &self.sched.topo.sd[cpu]
                .first()
                .map_or_else(|| allowed.clone(), |d| d.span.and(&allowed)),
            cpu,
        )
    }

    /// `find_idlest_group`: the group of `sd` to move a new task to, or
    /// `None` to stay in the local group. Groups are compared by type
    /// (`update_sg_wakeup_stats`, `group_classify`), then by load per
    /// capacity (busy groups) or idle CPUs and utilisation (groups with
    /// spare capacity), as `update_pick_idlest`.
    fn find_idlest_group(
        &self,
        sd: &super::topology::SchedDomain,
        t: TaskId,
        cpu: CpuId,
        allowed: &CpuSet,
    ) -> Option<usize> {
        use super::lb_stats::GroupType;
        let pct = sd.imbalance_pct as i64;
        let stats = |g: &CpuSet| {
            let mut s = self.sg_stats(pct, false, g, allowed);
            if s.group_type == GroupType::FullyBusy {
                s.avg_load = s.load_per_capacity();
            }
            s
        };
        let local = stats(&sd.groups[0]);
        let mut best: Option<(usize, super::lb_stats::SgStats)> = None;
        for (i, g) in sd.groups.iter().enumerate().skip(1) {
            if !g.intersects(allowed) {
                continue;
            }
            let s = stats(g);
            let better = match &best {
                None => true,
                Some((_, b)) => {
                    if s.group_type != b.group_type {
                        s.group_type < b.group_type
                    } else {
                        match s.group_type {
                            GroupType::Overloaded | GroupType::FullyBusy => s.avg_load < b.avg_load,
                            GroupType::HasSpare => {
                                s.idle_cpus > b.idle_cpus
                                    || (s.idle_cpus == b.idle_cpus && s.util < b.util)
                            }
                            _ => false,
                        }
                    }
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
        if local.group_type < is.group_type {
            return None;
        }
        if local.group_type > is.group_type {
            return Some(idlest);
        }
        match local.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => {
                let imbalance = 1024 * (pct - 100) / 100;
                if sd.flags.has(SdFlags::NUMA) && is.avg_load + imbalance >= local.avg_load {
                    return None;
                }
                if is.avg_load >= local.avg_load + imbalance {
                    return None;
                }
                if 100 * local.avg_load <= pct * is.avg_load {
                    return None;
                }
                Some(idlest)
            }
            GroupType::HasSpare => {
                if sd.flags.has(SdFlags::NUMA) {
                    // NUMA balancing: with spare capacity, stay on or go
                    // to the task's preferred node.
                    if let Some(pref) = self.tasks[t].numa.preferred_nid {
                        if self.cpu_node(cpu) == pref {
                            return None;
                        }
                        if sd.groups[idlest].cpu_ids().next().map(|c| self.cpu_node(c))
                            == Some(pref)
                        {
                            return Some(idlest);
                        }
                    }
                    let imb_numa_nr =
                        (sd.imb_numa_nr as i64).min(sd.groups[0].and(allowed).len() as i64);
                    let imbalance = (local.idle_cpus - is.idle_cpus).abs();
                    if adjust_numa_imbalance(imbalance, local.nr_running + 1, imb_numa_nr) == 0 {
                        return None;
                    }
                }
                if local.idle_cpus >= is.idle_cpus {
                    return None;
                }
                Some(idlest)
            }
            // Not used in the slow wakeup path.
            _ => None,
        }
    }

    /// `select_idle_sibling(p, prev, target)`: `target` if idle; `prev` if
    /// it shares `target`'s LLC and is idle; else, in `target`'s LLC, an
    /// idle core (SMT machines), else an idle CPU among the next
    /// `nr_idle_scan` after `target`, else `target`; among the CPUs
    /// `allowed` (the waking task's).
    pub(super) fn select_idle_sibling(
        &self,
        allowed: &AllowedCpus<'_>,
        prev: CpuId,
        target: CpuId,
    ) -> CpuId {
        if self.sched.rq[target].is_idle() {
            return target;
        }
        let target_llc = self.cpu_info(target).llc;
        if prev != target
            && self.cpu_info(prev).llc == target_llc
            && self.sched.rq[prev].is_idle()
            && allowed.has(prev)
        {
            return prev;
        }
        let llc = &self.sched.topo.llc_cpus[target_llc];
        if llc.len() <= 1 {
            return target;
        }
        // for_each_cpu_wrap(cpu, llc, target + 1)
        let at = llc.iter().position(|&c| c == target).unwrap_or(0);
        let order = llc.iter().cycle().skip(at + 1).take(llc.len() - 1).copied();
        let smt = llc.iter().any(|&c| self.cpu_smt_mask(c).len() > 1);
        if smt {
            let mut idle_cpu = None;
            for c in order {
                if !allowed.has(c) || !self.sched.rq[c].is_idle() {
                    continue;
                }
                if self
                    .cpu_smt_mask(c)
                    .iter()
                    .all(|&o| self.sched.rq[o].is_idle())
                {
                    return c;
                }
                idle_cpu.get_or_insert(c);
            }
            return idle_cpu.unwrap_or(target);
        }
        let mut nr = if self.sched.pelt_enabled() {
            let pct = self.sched.topo.sd[target]
                .iter()
                .find(|d| d.flags.has(SdFlags::SHARE_LLC))
                .map_or(117, |d| d.imbalance_pct as i64);
            self.sched.nr_idle_scan(llc, pct) + 1
        } else {
            i64::MAX
        };
        if nr == 1 {
            return target;
        }
        for c in order {
            nr -= 1;
            if nr <= 0 {
                break;
            }
            if allowed.has(c) && self.sched.rq[c].is_idle() {
                return c;
            }
        }
        target
    }
}

impl Sched {
    /// `find_idlest_group_cpu`: an idle CPU of `set` (preferring `prefer`,
    /// then the lowest id), else the least loaded (`cpu_load`).
    pub fn idlest_cpu_in(&self, set: &CpuSet, prefer: CpuId) -> CpuId {
        let mut best = None;
        for c in set.cpu_ids() {
            let busy = self.rq[c].nr_running() > 0;
            let load = if busy { self.cpu_load(c) } else { 0 };
            let key = (busy, load, c != prefer, c);
            if best.is_none_or(|(k, _)| key < k) {
                best = Some((key, c));
            }
        }
        best.map_or(prefer, |(_, c)| c)
    }

    /// `update_idle_cpu_scan` (SIS_UTIL): how many CPUs of `llc` a wakeup
    /// may scan for an idle one, fewer as the LLC's utilisation grows, none
    /// from 100/imbalance_pct (85 %) up. Computed at the wakeup here (the
    /// kernel refreshes it at each periodic balance of the LLC domain).
    fn nr_idle_scan(&self, llc: &[CpuId], pct: i64) -> i64 {
        let w = llc.len() as i64;
        let sum: i64 = llc.iter().map(|&c| self.cpu_util_cfs(c)).sum();
        let x = sum / w.max(1);
        let tmp = (x * x * pct * pct / (10_000 * 1024)).min(1024);
        (1024 - tmp) * w / 1024
    }
}
