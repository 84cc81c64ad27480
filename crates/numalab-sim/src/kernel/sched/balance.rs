//! Load balancing (kernel/sched/fair.c): periodic balancing from the tick
//! (`sched_balance_trigger` → `sched_balance_domains` → `sched_balance_rq`)
//! and newly-idle balancing (`sched_balance_newidle`).
//!
//! Workflow of one `sched_balance_rq(cpu, sd)`:
//! 1. `should_we_balance`: only one CPU per local group balances a domain:
//!    the first idle core, else the first idle SMT sibling, else the group's
//!    first CPU. Any other CPU stops here and at every level above.
//! 2. On an SD_SERIALIZE (NUMA) domain, take the global
//!    `sched_balance_running` flag; failing to get it counts as balanced.
//! 3. `sched_balance_find_src_group`: classify groups (has_spare,
//!    fully_busy, overloaded), pick the busiest, decide whether an imbalance
//!    exists and how many tasks fix it (`calculate_imbalance`, with the
//!    NUMA allowance of `adjust_numa_imbalance`).
//! 4. `sched_balance_find_src_rq`: the busiest runqueue of that group.
//! 5. `detach_tasks`: move waiting tasks that may run here and are not
//!    cache-hot; if every candidate was pinned by affinity, drop that CPU
//!    and `redo`.
//! 6. Nothing moved: count a failure; after `cache_nice_tries + 2` failures
//!    push the running task over (`active_load_balance_cpu_stop`).
//! 7. The domain's interval resets to its minimum after an imbalance and
//!    doubles up to its maximum when balanced.
//!
//! Left out: PELT load and utilisation (load is the number of runnable
//! nice-0 tasks), group_imbalanced / misfit / asym-packing types, NOHZ idle
//! balancing (idle CPUs balance at their own tick), active balance from the
//! newly-idle path, the `LBF_DST_PINNED` retry with another destination.

use super::fair::adjust_numa_imbalance;
use super::topology::SdFlags;
use super::{TaskState, MIGRATION_COST_NS};
use crate::kernel::Kernel;
use crate::physics::costs;
use numalab_topology::CpuSet;

/// `enum cpu_idle_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuIdleType {
    /// `__CPU_NOT_IDLE`.
    NotIdle,
    /// `CPU_IDLE`.
    Idle,
    /// `CPU_NEWLY_IDLE`.
    NewlyIdle,
}

/// `enum group_type`, the subset modeled, in increasing order of load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    /// Fewer tasks than CPUs.
    HasSpare,
    /// As many tasks as CPUs.
    FullyBusy,
    /// More tasks than CPUs.
    Overloaded,
}

/// `enum fbq_type` (NUMA balancing): how well placed a group's or rq's
/// tasks are, in increasing order of preference for leaving them alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FbqType {
    /// Some tasks have no preferred node.
    Regular,
    /// Some tasks run off their preferred node.
    Remote,
    /// No distinction.
    All,
}

/// `MAX_PINNED_INTERVAL` (ms): how far the interval may grow when all tasks
/// are pinned.
pub const MAX_PINNED_INTERVAL_MS: u64 = 512;
/// `sysctl_sched_nr_migrate`: tasks examined per balance pass.
pub const SCHED_NR_MIGRATE: usize = 32;

/// Statistics of one group for the balancer.
#[derive(Clone, Copy, Debug, Default)]
struct SgStats {
    nr_running: i64,
    idle_cpus: i64,
    weight: i64,
}

impl SgStats {
    fn group_type(&self) -> GroupType {
        if self.nr_running < self.weight {
            GroupType::HasSpare
        } else if self.nr_running == self.weight {
            GroupType::FullyBusy
        } else {
            GroupType::Overloaded
        }
    }

    /// Load per CPU, scaled by 1024 (`avg_load`).
    fn avg_load(&self) -> i64 {
        self.nr_running * 1024 / self.weight.max(1)
    }
}

/// Counts of what the balancer did, for reports and tests.
#[derive(Clone, Debug, Default)]
pub struct BalanceStats {
    /// `sched_balance_rq` calls that got past `should_we_balance`.
    pub lb_count: u64,
    /// Attempts that found the domain balanced.
    pub lb_balanced: u64,
    /// Tasks moved by detach/attach.
    pub lb_gained: u64,
    /// Attempts that found an imbalance but moved nothing.
    pub lb_failed: u64,
    /// Running tasks pushed by active balance.
    pub alb_pushed: u64,
    /// `redo` passes after all candidates were pinned.
    pub lb_redo: u64,
    /// Newly-idle balances that pulled a task.
    pub newidle_pulled: u64,
    /// Attempts on the SD_SERIALIZE flag (cmpxchg).
    pub serialize_attempts: u64,
    /// Attempts that found the flag taken.
    pub serialize_contended: u64,
}

/// The global SD_SERIALIZE state (`sched_balance_running`).
#[derive(Clone, Debug, Default)]
pub struct SerializeFlag {
    /// CPU holding the flag, if any.
    pub holder: Option<usize>,
}

impl Kernel {
    /// `get_sd_balance_interval` in jiffies.
    fn sd_balance_interval(&self, cpu: usize, level: usize, busy: bool) -> u64 {
        let sd = &self.sd[cpu][level];
        let mut ms = self.rq[cpu].sd[level].balance_interval_ms;
        if busy {
            ms *= sd.busy_factor;
        }
        let hz = 1_000_000_000 / self.tick_ns;
        let mut j = (ms * hz).div_ceil(1000);
        if busy {
            j = j.saturating_sub(1);
        }
        let max = (hz * self.m.nr_cpus() as u64 / 10).max(1);
        j.clamp(1, max)
    }

    /// `sched_balance_trigger` + the SCHED_SOFTIRQ it raises: called from
    /// the tick of `cpu`.
    pub fn sched_balance_trigger(&mut self, cpu: usize) {
        if self.jiffies() < self.rq[cpu].next_balance {
            return;
        }
        let idle = if self.rq[cpu].is_idle() {
            CpuIdleType::Idle
        } else {
            CpuIdleType::NotIdle
        };
        self.sched_balance_domains(cpu, idle);
    }

    /// `sched_balance_domains`: walk `cpu`'s domains bottom-up and balance
    /// each one whose interval has expired.
    pub fn sched_balance_domains(&mut self, cpu: usize, mut idle: CpuIdleType) {
        let mut busy = idle == CpuIdleType::NotIdle;
        let mut continue_balancing = true;
        let jiffies = self.jiffies();
        let mut next_balance = jiffies + self.tick_hz() * 60;
        for level in 0..self.sd[cpu].len() {
            if !continue_balancing {
                break;
            }
            let mut interval = self.sd_balance_interval(cpu, level, busy);
            if jiffies >= self.rq[cpu].sd[level].last_balance + interval {
                if self.sched_balance_rq(cpu, level, idle, &mut continue_balancing) > 0 {
                    idle = if self.rq[cpu].is_idle() {
                        CpuIdleType::Idle
                    } else {
                        CpuIdleType::NotIdle
                    };
                    busy = idle == CpuIdleType::NotIdle;
                }
                self.rq[cpu].sd[level].last_balance = jiffies;
                interval = self.sd_balance_interval(cpu, level, busy);
            }
            next_balance = next_balance.min(self.rq[cpu].sd[level].last_balance + interval);
        }
        self.rq[cpu].next_balance = next_balance;
    }

    /// Ticks per second.
    pub fn tick_hz(&self) -> u64 {
        1_000_000_000 / self.tick_ns
    }

    /// `should_we_balance`: is `cpu` the one CPU of its group that balances
    /// domain `level` now?
    pub fn should_we_balance(
        &self,
        cpu: usize,
        level: usize,
        idle: CpuIdleType,
        cpus: &CpuSet,
    ) -> bool {
        if !cpus.contains(cpu) {
            return false;
        }
        if idle == CpuIdleType::NewlyIdle {
            return self.rq[cpu].nr_running() == 0;
        }
        let sd = &self.sd[cpu][level];
        let group = &sd.groups[0];
        let smt_level = sd.flags.has(SdFlags::SHARE_CPUCAPACITY);
        let mut idle_smt = None;
        let mut skip = CpuSet::new();
        for c in group.iter() {
            if !cpus.contains(c) || skip.contains(c) || !self.rq[c].is_idle() {
                continue;
            }
            let core = self.m.cpus[c].core;
            let core_idle = self.core_cpus[core].iter().all(|&o| self.rq[o].is_idle());
            if !smt_level && !core_idle {
                idle_smt.get_or_insert(c);
                for &o in &self.core_cpus[core] {
                    skip.insert(o);
                }
                continue;
            }
            return c == cpu;
        }
        if let Some(c) = idle_smt {
            return c == cpu;
        }
        group.first() == Some(cpu)
    }

    fn sg_stats(&self, group: &CpuSet, cpus: &CpuSet) -> SgStats {
        let mut s = SgStats::default();
        for c in group.iter().filter(|c| cpus.contains(*c)) {
            s.weight += 1;
            let n = self.rq[c].nr_running() as i64;
            s.nr_running += n;
            if n == 0 {
                s.idle_cpus += 1;
            }
        }
        s
    }

    /// `sched_balance_find_src_group` + `calculate_imbalance`: the busiest
    /// group's index and the number of tasks to move, or `None` if balanced.
    fn find_busiest_group(
        &self,
        cpu: usize,
        level: usize,
        idle: CpuIdleType,
        cpus: &CpuSet,
    ) -> Option<(usize, i64)> {
        let sd = &self.sd[cpu][level];
        let local = self.sg_stats(&sd.groups[0], cpus);
        let mut busiest: Option<(usize, SgStats)> = None;
        let mut total = SgStats::default();
        total.nr_running += local.nr_running;
        total.weight += local.weight;
        for (i, g) in sd.groups.iter().enumerate().skip(1) {
            let s = self.sg_stats(g, cpus);
            total.nr_running += s.nr_running;
            total.weight += s.weight;
            if s.weight == 0 || s.nr_running == 0 {
                continue;
            }
            let key = (s.group_type(), s.avg_load());
            if busiest.is_none_or(|(_, b)| key > (b.group_type(), b.avg_load())) {
                busiest = Some((i, s));
            }
        }
        let (bi, busiest) = busiest?;
        let (lt, bt) = (local.group_type(), busiest.group_type());
        if lt > bt {
            return None;
        }
        if lt == GroupType::Overloaded {
            if busiest.avg_load() <= local.avg_load() {
                return None;
            }
            if 100 * busiest.avg_load() <= sd.imbalance_pct as i64 * local.avg_load() {
                return None;
            }
        }
        if bt != GroupType::Overloaded {
            if idle == CpuIdleType::NotIdle {
                return None;
            }
            if busiest.weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                return None;
            }
            if busiest.nr_running == 1 {
                return None;
            }
        }
        // calculate_imbalance, in tasks.
        let prefer_sibling =
            level > 0 && self.sd[cpu][level - 1].flags.has(SdFlags::PREFER_SIBLING);
        let mut imb = if lt == GroupType::HasSpare {
            let n = if bt == GroupType::Overloaded {
                local.idle_cpus.min(busiest.nr_running - busiest.weight)
            } else if busiest.weight == 1 || prefer_sibling {
                // sibling_imbalance: equalise tasks per CPU between the two.
                let (lw, bw) = (local.weight, busiest.weight);
                (busiest.nr_running * lw - local.nr_running * bw) / (lw + bw)
            } else {
                (local.idle_cpus - busiest.idle_cpus) >> 1
            };
            let n = n.max(0);
            if sd.flags.has(SdFlags::NUMA) {
                adjust_numa_imbalance(n, local.nr_running + 1, sd.imb_numa_nr as i64)
            } else {
                n
            }
        } else {
            // Both busy: move load until both sit at the domain average.
            let avg = total.nr_running as f64 / total.weight.max(1) as f64;
            let from_busiest = busiest.nr_running as f64 - avg * busiest.weight as f64;
            let to_local = avg * local.weight as f64 - local.nr_running as f64;
            from_busiest.min(to_local).floor() as i64
        };
        if imb <= 0
            && idle != CpuIdleType::NotIdle
            && bt == GroupType::Overloaded
            && local.nr_running == 0
        {
            imb = 1;
        }
        (imb > 0).then_some((bi, imb))
    }

    /// `sched_balance_find_src_rq`: the runqueue with most tasks in `group`,
    /// skipping runqueues classed above `fbq` (NUMA balancing).
    fn find_busiest_queue(&self, group: &CpuSet, cpus: &CpuSet, fbq: FbqType) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for c in group.iter().filter(|c| cpus.contains(*c)) {
            let n = self.rq[c].nr_running();
            if n == 0 {
                continue;
            }
            // NUMA balancing: leave well-placed NUMA tasks alone while there
            // are better candidates (fbq_classify_rq > env->fbq_type).
            if self.fbq_classify_rq(c) > fbq {
                continue;
            }
            if best.is_none_or(|(bn, _)| n > bn) {
                best = Some((n, c));
            }
        }
        best.map(|(_, c)| c)
    }

    // --- NUMA balancing pieces of the load balancer (fair.c) -------------

    /// `fbq_classify_group`: `regular` if the group runs tasks without a
    /// preferred node, `remote` if some run off their preferred node, else
    /// `all`. Counts only busy runqueues, as `update_sg_lb_stats` does.
    fn fbq_classify_group(&self, group: &CpuSet, cpus: &CpuSet) -> FbqType {
        let (mut nr, mut numa, mut preferred) = (0u32, 0u32, 0u32);
        for c in group.iter().filter(|c| cpus.contains(*c)) {
            let rq = &self.rq[c];
            if rq.nr_running() == 0 {
                continue;
            }
            nr += rq.nr_running() as u32;
            numa += rq.nr_numa_running;
            preferred += rq.nr_preferred_running;
        }
        if nr > numa {
            FbqType::Regular
        } else if nr > preferred {
            FbqType::Remote
        } else {
            FbqType::All
        }
    }

    /// `fbq_classify_rq`: the same classes for one runqueue.
    fn fbq_classify_rq(&self, cpu: usize) -> FbqType {
        let rq = &self.rq[cpu];
        let nr = rq.nr_running() as u32;
        if nr > rq.nr_numa_running {
            FbqType::Regular
        } else if nr > rq.nr_preferred_running {
            FbqType::Remote
        } else {
            FbqType::All
        }
    }

    /// `migrate_degrades_locality` (fair.c): positive if moving task `t`
    /// from `src` to `dst` hurts its NUMA locality, negative if it helps, 0
    /// if neutral. Leaving the preferred node is bad while the source runs
    /// tasks off their preferred node; reaching it is good; an idle
    /// destination (CPU_IDLE) is neutral; otherwise the task's (or group's)
    /// fault weights decide.
    pub(crate) fn migrate_degrades_locality(
        &self,
        t: usize,
        src: usize,
        dst: usize,
        level: usize,
        idle: CpuIdleType,
    ) -> i64 {
        if !self.numa_balancing_enabled() {
            return 0;
        }
        if self.tasks[t].numa.faults.is_empty() || !self.sd[dst][level].flags.has(SdFlags::NUMA) {
            return 0;
        }
        let (src_nid, dst_nid) = (self.cpu_node(src), self.cpu_node(dst));
        if src_nid == dst_nid {
            return 0;
        }
        let pref = self.tasks[t].numa.preferred_nid;
        if pref == Some(src_nid) {
            let rq = &self.rq[src];
            return i64::from(rq.nr_running() as u32 > rq.nr_preferred_running);
        }
        if pref == Some(dst_nid) {
            return -1;
        }
        if idle == CpuIdleType::Idle {
            return 0;
        }
        let dist = self.m.distance[src_nid][dst_nid];
        if self.tasks[t].numa.group.is_some() {
            self.group_weight(t, src_nid, dist) - self.group_weight(t, dst_nid, dist)
        } else {
            self.task_weight(t, src_nid, dist) - self.task_weight(t, dst_nid, dist)
        }
    }

    /// `can_migrate_task` without the pinning test: not running, not cache
    /// hot unless balancing keeps failing.
    fn task_hot(&self, t: usize, failed: u32, cache_nice_tries: u32) -> bool {
        let hot = self.now.saturating_sub(self.tasks[t].exec_start) < MIGRATION_COST_NS;
        hot && failed <= cache_nice_tries
    }

    /// `sched_balance_rq`: balance domain `level` of `cpu`. Returns the
    /// number of tasks moved here.
    pub fn sched_balance_rq(
        &mut self,
        cpu: usize,
        level: usize,
        idle: CpuIdleType,
        continue_balancing: &mut bool,
    ) -> usize {
        let mut cpus = self.sd[cpu][level].span.clone();
        let span_w = self.sd[cpu][level].span_weight() as f64;
        let serialize =
            self.sd[cpu][level].flags.has(SdFlags::SERIALIZE) && idle != CpuIdleType::NewlyIdle;
        let cache_nice_tries = self.sd[cpu][level].cache_nice_tries;
        let mut need_unlock = false;
        let mut ld_moved = 0usize;
        let mut all_pinned;
        let mut imbalance_found = false;
        let mut active = false;
        loop {
            // redo:
            if !self.should_we_balance(cpu, level, idle, &cpus) {
                *continue_balancing = false;
                self.charge_cpu(cpu, costs::BALANCE_FIXED_NS / 4.0);
                break;
            }
            if serialize && !need_unlock {
                self.balance.stats.serialize_attempts += 1;
                if self.balance.flag.holder.is_some() {
                    self.balance.stats.serialize_contended += 1;
                    break;
                }
                self.balance.flag.holder = Some(cpu);
                need_unlock = true;
            }
            self.balance.stats.lb_count += 1;
            self.charge_cpu(
                cpu,
                costs::BALANCE_FIXED_NS + costs::BALANCE_PER_CPU_NS * span_w,
            );
            let Some((bi, imb)) = self.find_busiest_group(cpu, level, idle, &cpus) else {
                self.balance.stats.lb_balanced += 1;
                break;
            };
            let group = self.sd[cpu][level].groups[bi].clone();
            // NUMA balancing: classify the busiest group on NUMA levels
            // (update_sd_lb_stats → fbq_classify_group); `all` elsewhere.
            let fbq = if self.sd[cpu][level].flags.has(SdFlags::NUMA) {
                self.fbq_classify_group(&group, &cpus)
            } else {
                FbqType::All
            };
            let Some(src) = self.find_busiest_queue(&group, &cpus, fbq) else {
                self.balance.stats.lb_balanced += 1;
                break;
            };
            imbalance_found = true;
            all_pinned = true;
            if self.rq[src].nr_running() > 1 {
                let failed = self.rq[cpu].sd[level].nr_balance_failed;
                let mut moved = 0i64;
                let cands: Vec<usize> = self.rq[src]
                    .queue
                    .iter()
                    .copied()
                    .take(SCHED_NR_MIGRATE)
                    .collect();
                for t in cands {
                    if moved >= imb {
                        break;
                    }
                    if !self.task_allowed(t).contains(cpu) {
                        continue;
                    }
                    all_pinned = false;
                    // NUMA balancing: on NUMA levels locality decides
                    // hotness (can_migrate_task → migrate_degrades_locality).
                    let hot = match self.migrate_degrades_locality(t, src, cpu, level, idle) {
                        0 => self.task_hot(t, failed, cache_nice_tries),
                        d => d > 0 && failed <= cache_nice_tries,
                    };
                    if hot {
                        continue;
                    }
                    self.move_task(t, cpu);
                    moved += 1;
                }
                ld_moved += moved as usize;
                self.balance.stats.lb_gained += moved as u64;
                if all_pinned {
                    // LBF_ALL_PINNED: try again without that CPU.
                    cpus.remove(src);
                    let dst_group = &self.sd[cpu][level].groups[0];
                    if !cpus.is_subset(dst_group) {
                        self.balance.stats.lb_redo += 1;
                        self.balance_redo_hook(cpu, &mut need_unlock);
                        continue;
                    }
                }
            }
            if ld_moved == 0 {
                self.balance.stats.lb_failed += 1;
                if idle != CpuIdleType::NewlyIdle {
                    self.rq[cpu].sd[level].nr_balance_failed += 1;
                    if self.rq[cpu].sd[level].nr_balance_failed > cache_nice_tries + 2 {
                        active = self.active_load_balance(src, cpu);
                        if active {
                            ld_moved = 1;
                        }
                    }
                }
            }
            break;
        }
        let st = &mut self.rq[cpu].sd[level];
        if ld_moved > 0 {
            st.nr_balance_failed = 0;
        }
        if imbalance_found && (ld_moved > 0 || active) {
            st.balance_interval_ms = self.sd[cpu][level].min_interval_ms;
        } else if idle != CpuIdleType::NewlyIdle {
            if !imbalance_found {
                st.nr_balance_failed = 0;
            }
            if st.balance_interval_ms < self.sd[cpu][level].max_interval_ms {
                st.balance_interval_ms *= 2;
            }
        }
        if need_unlock {
            self.balance_release(cpu);
        }
        ld_moved
    }

    /// What the serialize flag does on a `redo`. Mainline releases the flag
    /// and clears its "held" marker before retrying, so the retry takes it
    /// afresh.
    fn balance_redo_hook(&mut self, cpu: usize, need_unlock: &mut bool) {
        if *need_unlock {
            self.balance_release(cpu);
            *need_unlock = false;
        }
    }

    fn balance_release(&mut self, cpu: usize) {
        if self.balance.flag.holder == Some(cpu) {
            self.balance.flag.holder = None;
        } else {
            self.balance.bad_releases += 1;
        }
    }

    /// `active_load_balance_cpu_stop`: push the running task of `src` to
    /// `dst` if it may run there. Only called at tick time, when every
    /// running task's progress is accounted up to now.
    fn active_load_balance(&mut self, src: usize, dst: usize) -> bool {
        let Some(t) = self.rq[src].curr else {
            return false;
        };
        if !self.rq[dst].is_idle()
            || !self.task_allowed(t).contains(dst)
            || self.rq[src].nr_running() != 1
        {
            return false;
        }
        self.move_task(t, dst);
        self.balance.stats.alb_pushed += 1;
        true
    }

    /// `sched_balance_newidle`: `cpu` is about to go idle; try to pull a
    /// task from the domains bottom-up. Returns true when one was pulled.
    pub fn sched_balance_newidle(&mut self, cpu: usize) -> bool {
        let overloaded = self.rq.iter().any(|r| r.nr_running() > 1);
        if !overloaded || self.rq[cpu].avg_idle < MIGRATION_COST_NS {
            return false;
        }
        let mut curr_cost = 0.0;
        let mut continue_balancing = true;
        for level in 0..self.sd[cpu].len() {
            let sd = &self.sd[cpu][level];
            let cost =
                costs::BALANCE_FIXED_NS + costs::BALANCE_PER_CPU_NS * sd.span_weight() as f64;
            if (self.rq[cpu].avg_idle as f64) < curr_cost + cost {
                break;
            }
            if sd.flags.has(SdFlags::BALANCE_NEWIDLE) {
                let pulled = self.sched_balance_rq(
                    cpu,
                    level,
                    CpuIdleType::NewlyIdle,
                    &mut continue_balancing,
                );
                curr_cost += cost;
                if pulled > 0 {
                    self.balance.stats.newidle_pulled += 1;
                    return true;
                }
            }
            if !continue_balancing {
                break;
            }
        }
        false
    }

    /// Tasks waiting on `cpu` that are not running (for tests).
    pub fn nr_queued(&self, cpu: usize) -> usize {
        self.rq[cpu]
            .queue
            .iter()
            .filter(|&&t| self.tasks[t].state == TaskState::Runnable)
            .count()
    }
}

/// Balancer state held by the kernel.
#[derive(Clone, Debug, Default)]
pub struct BalanceState {
    /// `sched_balance_running`.
    pub flag: SerializeFlag,
    /// What the balancer did.
    pub stats: BalanceStats,
    /// Releases of the flag by a CPU that did not hold it (invariant
    /// violations).
    pub bad_releases: u64,
}
