//! What the balancer's `update_sg_lb_stats` reads, kept so that a group's
//! walk is cheap and the periodic balances of one tick walk a group once
//! (issue "speed after fidelity": the group walks were 12 % of a pmbench
//! run's instructions and 21 % of OLTP's).
//!
//! Two levels, both exact:
//! - per CPU, its terms (task count, rounded `cpu_load`, `cpu_util_cfs`,
//!   `cpu_runnable`) in one dense array, emptied when its runqueue changes
//!   and taken again on the next read, so a walk reads 32 bytes a CPU
//!   instead of each runqueue's signals rounded anew;
//! - per sched group, its sums (tasks, idle CPUs, load, utilisation,
//!   runnable, capacity), stamped with an epoch that every change bumps:
//!   the periodic balances of a tick share them (a newly idle balance
//!   follows the dequeue that changed them, and skips the memo).
//!
//! The terms and sums are a function of the runqueues' task counts and
//! PELT averages alone while no task group is active (a group's load
//! would enter `cpu_load`; then the walk reads pelt.rs's functions). Every
//! change to those calls `Sched::lb_changed`: `set_curr`, the queue's
//! pushes and removals, and the PELT updates and attaches that move a
//! runqueue's averages. `check_invariants` compares every held term and
//! current entry with a fresh reading. Groups are numbered once at boot,
//! equal CPU sets sharing a number, so the CPUs of a domain share their
//! groups' entries; `sg->cores` is counted apart (`Sched::group_cores`).
//!
//! A third memo, exact for the run: `sg->cores` of a group all of whose
//! CPUs the balance counts is the group's own core count, a function of
//! the topology alone, so it is counted once per group number
//! (`Sched::domain_group_cores`; the count per balance was 2-3 % of an
//! OLTP run's instructions).
//!
//! A fourth, for the newly idle balance, which follows a change and so
//! finds the epoch memo stale: per group number, the sums of its CPUs'
//! terms kept up to date by difference (integers: exact in any order).
//! A change marks its CPU dirty (`Sched::lb_changed`); a read of a group
//! first folds every dirty CPU's new terms into the groups holding it
//! (`Sched::running_sums`). Between two of OLTP's newly idle balances a
//! couple of CPUs change, so a read costs a few CPUs' terms instead of a
//! walk of the group's (the walks were 12 % of its instructions).
//!
//! Left out: the classification (`group_classify`, which depends on the
//! domain's `imbalance_pct` and flags: cheap, done per call), and the
//! memo for fork and wakeup placement (fair.rs), which walk the groups
//! (with the dense terms) each time.

use super::lb_stats::{GroupType, SgStats};
use super::topology::Topology;
use super::Sched;
use crate::kernel::ids::TiVec;
use crate::kernel::scratch;
use crate::kernel::CpuId;
use numalab_topology::CpuSet;
use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};

/// Calls `f` with every CPU in both `a` and `b`, lowest first, a word of
/// each at a time (the balancer's walks of a group's CPUs in the balance's
/// CPU set: a filtered iterator cost a call per CPU at opt-level 1).
#[inline(always)]
pub(crate) fn for_each_in_both(a: &CpuSet, b: &CpuSet, mut f: impl FnMut(CpuId)) {
    let bw = b.words();
    for (wi, &aw) in a.words().iter().enumerate() {
        let mut m = aw & bw.get(wi).copied().unwrap_or(0);
        while m != 0 {
            f(CpuId::new(wi * 64 + m.trailing_zeros() as usize));
            m &= m - 1;
        }
    }
}

/// What `update_sg_lb_stats` sums over a group's CPUs, before the group is
/// classified.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct GroupSums {
    /// `group_weight`: CPUs counted.
    pub weight: i64,
    /// `sum_nr_running`.
    pub nr_running: i64,
    /// `idle_cpus`.
    pub idle_cpus: i64,
    /// `group_load`.
    pub load: i64,
    /// `group_util`.
    pub util: i64,
    /// `group_runnable`.
    pub runnable: i64,
    /// `group_capacity`.
    pub capacity: i64,
}

impl GroupSums {
    /// Adds `sign` (1 or -1) times `o`, field by field: integers, so a
    /// sum kept by differences equals a walk's (the running sums).
    fn add(&mut self, o: &GroupSums, sign: i64) {
        self.weight += sign * o.weight;
        self.nr_running += sign * o.nr_running;
        self.idle_cpus += sign * o.idle_cpus;
        self.load += sign * o.load;
        self.util += sign * o.util;
        self.runnable += sign * o.runnable;
        self.capacity += sign * o.capacity;
    }
}

/// The group number of a group that has no entry.
const UNCACHED: u32 = u32::MAX;

/// The memo: group numbers by domain and one stamped entry per number.
pub(crate) struct LbCache {
    /// Group number by CPU, domain level and group index (equal sets share
    /// a number).
    gids: TiVec<CpuId, Vec<Vec<u32>>>,
    /// Per group number: the epoch its sums were taken at (0: none) and
    /// the sums. Filled while the balancer only reads the scheduler.
    entries: RefCell<Vec<(u64, GroupSums)>>,
    /// Bumped by every change the sums could see; starts at 1.
    epoch: u64,
    /// Per CPU, its terms of the sums without task groups' loads, or
    /// `None` when its runqueue changed since they were taken
    /// (`Sched::lb_changed`): a walk reads them from one dense array
    /// instead of each runqueue's signals rounded anew (a newly idle
    /// balance of a 480-CPU machine reads some 800 CPUs' terms, and a few
    /// of them changed since the last), and takes only the changed ones
    /// again (taking them at every change was 2.5 % of a pmbench run: the
    /// tick changes every CPU, and few are read before the next).
    terms: TiVec<CpuId, Cell<Option<CpuTerms>>>,
    /// Per group number: its CPUs' distinct cores (`sg->cores` when the
    /// balance counts all of them), once counted. Fixed by the topology.
    cores: Vec<Cell<Option<i64>>>,
    /// Per CPU: the group numbers whose groups hold it.
    cpu_gids: TiVec<CpuId, Vec<u32>>,
    /// The running sums per group number.
    running: RefCell<RunningSums>,
}

/// Per group number, the sums of its CPUs' terms as last folded in; per
/// CPU, whether its terms changed since (see the module doc).
#[derive(Clone, Debug)]
struct RunningSums {
    /// Per group number: the sums of its CPUs' folded terms.
    sums: Vec<GroupSums>,
    /// Per CPU: the terms folded into its groups' sums (`None`: none yet).
    folded: Vec<Option<CpuTerms>>,
    /// Per CPU: its terms may differ from the folded ones.
    dirty: Vec<bool>,
    /// The dirty CPUs, each once.
    dirty_list: Vec<CpuId>,
}

/// One CPU's terms of [`GroupSums`] with no task group active: its task
/// count, `cpu_load`, `cpu_util_cfs` and `cpu_runnable`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuTerms {
    nr_running: i64,
    load: i64,
    util: i64,
    runnable: i64,
}

impl LbCache {
    /// Numbers the groups of `topo`'s domains; every entry empty.
    pub(crate) fn new(topo: &Topology) -> LbCache {
        let mut ids: FxHashMap<&CpuSet, u32> = FxHashMap::default();
        let ncpu = topo.sd.len();
        let mut cpu_gids: TiVec<CpuId, Vec<u32>> = (0..ncpu).map(|_| Vec::new()).collect();
        let gids: TiVec<CpuId, Vec<Vec<u32>>> = topo
            .sd
            .iter()
            .map(|sds| {
                sds.iter()
                    .map(|sd| {
                        sd.groups
                            .iter()
                            .map(|g| {
                                // A group reaching past its domain's span
                                // sums fewer CPUs there than elsewhere.
                                if !g.is_subset(&sd.span) {
                                    return UNCACHED;
                                }
                                let next = ids.len() as u32;
                                let id = *ids.entry(g).or_insert(next);
                                if id == next {
                                    for c in g.iter() {
                                        cpu_gids[CpuId::new(c)].push(id);
                                    }
                                }
                                id
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        LbCache {
            gids,
            entries: RefCell::new(vec![(0, GroupSums::default()); ids.len()]),
            epoch: 1,
            terms: topo.sd.iter().map(|_| Cell::new(None)).collect(),
            cores: vec![Cell::new(None); ids.len()],
            cpu_gids,
            running: RefCell::new(RunningSums {
                sums: vec![GroupSums::default(); ids.len()],
                folded: vec![None; ncpu],
                // Every CPU's terms are still to fold in.
                dirty: vec![true; ncpu],
                dirty_list: CpuId::range(ncpu).collect(),
            }),
        }
    }

    /// Something the sums read changed: every entry is stale. (Emptying
    /// only the groups of the CPU that changed keeps no more of them: the
    /// tick's PELT update changes every CPU, and a pmbench run then took
    /// 0.8 % more instructions.)
    #[inline]
    pub(crate) fn changed(&mut self) {
        self.epoch += 1;
    }

    /// The number of group `i` of `cpu`'s domain at `level`, if it has
    /// an entry.
    fn gid(&self, cpu: CpuId, level: usize, i: usize) -> Option<usize> {
        let g = self.gids[cpu][level][i];
        (g != UNCACHED).then_some(g as usize)
    }
}

impl Sched {
    /// Something `group_sums` reads changed on `cpu` (its runqueue's
    /// tasks or PELT averages): the memo and `cpu`'s terms are stale.
    #[inline]
    pub(crate) fn lb_changed(&mut self, cpu: CpuId) {
        self.lb_cache.changed();
        self.lb_cache.terms[cpu].set(None);
        let r = self.lb_cache.running.get_mut();
        if !r.dirty[cpu.index()] {
            r.dirty[cpu.index()] = true;
            r.dirty_list.push(cpu);
        }
    }

    /// The sums of group number `gid` over all its CPUs, with every
    /// changed CPU's terms folded in first (see the module doc). Only
    /// while no task group is active (the terms leave their loads out).
    fn running_sums(&self, gid: usize) -> GroupSums {
        let mut r = self.lb_cache.running.borrow_mut();
        let r = &mut *r;
        for c in r.dirty_list.drain(..) {
            r.dirty[c.index()] = false;
            let new = self.terms(c);
            let old = r.folded[c.index()].replace(new);
            if old == Some(new) {
                continue;
            }
            let mut d = GroupSums::default();
            self.add_cpu_sums(&mut d, c, new);
            if let Some(old) = old {
                let mut o = GroupSums::default();
                self.add_cpu_sums(&mut o, c, old);
                d.add(&o, -1);
            }
            for &g in &self.lb_cache.cpu_gids[c] {
                r.sums[g as usize].add(&d, 1);
            }
        }
        r.sums[gid]
    }

    /// `cpu`'s terms, taken again if its runqueue changed since.
    #[inline(always)]
    fn terms(&self, cpu: CpuId) -> CpuTerms {
        let held = &self.lb_cache.terms[cpu];
        match held.get() {
            Some(t) => t,
            None => {
                let t = self.raw_terms(cpu);
                held.set(Some(t));
                t
            }
        }
    }

    /// `cpu`'s terms with no task group's load: `cpu_load`,
    /// `cpu_util_cfs` and `cpu_runnable` as pelt.rs gives them while no
    /// task group is active (`check_lb_cache` compares them).
    #[inline]
    fn raw_terms(&self, cpu: CpuId) -> CpuTerms {
        let rq = &self.rq[cpu];
        let nr = rq.nr_running() as i64;
        if self.pelt_enabled() {
            CpuTerms {
                nr_running: nr,
                load: rq.avg.load_avg.round() as i64,
                util: (rq.avg.util_avg.round() as i64).min(self.capacity_of(cpu)),
                runnable: rq.avg.runnable_avg.round() as i64,
            }
        } else {
            let full = super::pelt::SCHED_CAPACITY_SCALE as i64;
            CpuTerms {
                nr_running: nr,
                load: nr * full,
                util: if nr > 0 { full } else { 0 },
                runnable: nr * full,
            }
        }
    }

    /// `update_sg_lb_stats`'s walk: the sums over the CPUs of `group` in
    /// `cpus`.
    pub(crate) fn group_sums(&self, group: &CpuSet, cpus: &CpuSet) -> GroupSums {
        let mut s = GroupSums::default();
        // The CPUs of both sets a word at a time (the balancer's hottest
        // loop: OLTP's newly idle balances over 480 CPUs).
        let dense = self.tg.active.is_empty();
        for_each_in_both(group, cpus, |c| {
            let t = if dense {
                self.terms(c)
            } else {
                CpuTerms {
                    nr_running: self.rq[c].nr_running() as i64,
                    load: self.cpu_load(c),
                    util: self.cpu_util_cfs(c),
                    runnable: self.cpu_runnable(c),
                }
            };
            self.add_cpu_sums(&mut s, c, t);
        });
        s
    }

    /// Adds CPU `c`'s terms to `s`.
    #[inline(always)]
    fn add_cpu_sums(&self, s: &mut GroupSums, c: CpuId, t: CpuTerms) {
        s.weight += 1;
        s.nr_running += t.nr_running;
        if t.nr_running == 0 {
            s.idle_cpus += 1;
        }
        s.load += t.load;
        s.util += t.util;
        s.runnable += t.runnable;
        s.capacity += self.capacity_of(c);
    }

    /// Cores among the CPUs of `group` in `cpus` (`sg->cores`): only
    /// `sibling_imbalance` reads it, of the local and the busiest group,
    /// so it is counted for those two, not in every group's walk.
    pub(crate) fn group_cores(&self, group: &CpuSet, cpus: &CpuSet) -> i64 {
        // Cores seen, one bit each (core ids are below the CPU count).
        let (mut stack, mut heap) = ([0u64; scratch::STACK_WORDS], Vec::new());
        let cores = scratch::zeroed(self.rq.len().div_ceil(64), &mut stack, &mut heap);
        let mut n = 0;
        for_each_in_both(group, cpus, |c| {
            let core = self.core_of[c] as usize;
            let (word, bit) = (core / 64, 1u64 << (core % 64));
            if cores[word] & bit == 0 {
                cores[word] |= bit;
                n += 1;
            }
        });
        n
    }

    /// [`Sched::group_cores`] of group `i` of `cpu`'s domain at `level` in
    /// `cpus`: when `cpus` holds the whole group, its own core count,
    /// counted once per group number (the topology fixes it).
    pub(crate) fn domain_group_cores(
        &self,
        cpu: CpuId,
        level: usize,
        i: usize,
        cpus: &CpuSet,
    ) -> i64 {
        let group = &self.topo.sd[cpu][level].groups[i];
        match self.lb_cache.gid(cpu, level, i) {
            Some(gid) if group.is_subset(cpus) => {
                let held = &self.lb_cache.cores[gid];
                if let Some(n) = held.get() {
                    return n;
                }
                let n = self.group_cores(group, cpus);
                held.set(Some(n));
                n
            }
            _ => self.group_cores(group, cpus),
        }
    }

    /// [`Sched::group_sums`] of group `i` of `cpu`'s domain at `level`,
    /// from the memo when `whole` (the balance's CPUs are the domain's
    /// whole span, so every CPU of the group counts) and no task group
    /// adds to the load.
    pub(crate) fn domain_group_sums(
        &self,
        cpu: CpuId,
        level: usize,
        i: usize,
        cpus: &CpuSet,
        whole: bool,
    ) -> GroupSums {
        let group = &self.topo.sd[cpu][level].groups[i];
        if !self.tg.active.is_empty() {
            return self.group_sums(group, cpus);
        }
        let Some(gid) = self.lb_cache.gid(cpu, level, i) else {
            return self.group_sums(group, cpus);
        };
        if !whole {
            // A newly idle balance (or a pass without pinned CPUs): the
            // running sums when it counts the whole group.
            if group.is_subset(cpus) {
                return self.running_sums(gid);
            }
            return self.group_sums(group, cpus);
        }
        let epoch = self.lb_cache.epoch;
        let (stamp, s) = self.lb_cache.entries.borrow()[gid];
        if stamp == epoch {
            return s;
        }
        let s = self.group_sums(group, cpus);
        self.lb_cache.entries.borrow_mut()[gid] = (epoch, s);
        s
    }

    /// `group_classify` of a group with sums `g`, for a domain with
    /// `imbalance_pct` `level_pct` whose group is `imbalanced`. With
    /// `numalab.pelt=0` the group type is the runnable-count rule of the
    /// model before PELT (fewer tasks than CPUs: spare; as many: fully
    /// busy; more: overloaded).
    pub(crate) fn classify_group(&self, g: GroupSums, level_pct: i64, imbalanced: bool) -> SgStats {
        let mut s = SgStats {
            nr_running: g.nr_running,
            idle_cpus: g.idle_cpus,
            weight: g.weight,
            load: g.load,
            util: g.util,
            runnable: g.runnable,
            capacity: g.capacity,
            ..SgStats::default()
        };
        s.group_type = if !self.pelt_enabled() {
            if s.nr_running > s.weight {
                GroupType::Overloaded
            } else if imbalanced {
                GroupType::Imbalanced
            } else if s.nr_running == s.weight && s.weight > 0 {
                GroupType::FullyBusy
            } else {
                GroupType::HasSpare
            }
        } else if s.is_overloaded(level_pct) {
            GroupType::Overloaded
        } else if imbalanced {
            GroupType::Imbalanced
        } else if !s.has_capacity(level_pct) {
            GroupType::FullyBusy
        } else {
            GroupType::HasSpare
        };
        if s.group_type == GroupType::Overloaded {
            s.avg_load = s.load_per_capacity();
        }
        s
    }

    /// Every CPU's terms and every entry held equal a fresh reading.
    pub(crate) fn check_lb_cache(&self) -> Result<(), String> {
        if !self.tg.active.is_empty() {
            return Ok(());
        }
        for c in CpuId::range(self.rq.len()) {
            let fresh = CpuTerms {
                nr_running: self.rq[c].nr_running() as i64,
                load: self.cpu_load(c),
                util: self.cpu_util_cfs(c),
                runnable: self.cpu_runnable(c),
            };
            if self.lb_cache.terms[c].get().is_some_and(|t| t != fresh) {
                return Err(format!("balancer's terms of CPU {c:?} are stale"));
            }
        }
        let entries = self.lb_cache.entries.borrow();
        for (cpu, sds) in self.topo.sd.iter_enumerated() {
            for (level, sd) in sds.iter().enumerate() {
                for (i, g) in sd.groups.iter().enumerate() {
                    let held = self
                        .lb_cache
                        .gid(cpu, level, i)
                        .map(|id| entries[id])
                        .filter(|&(stamp, _)| stamp == self.lb_cache.epoch);
                    if held.is_some_and(|(_, s)| s != self.group_sums(g, &sd.span)) {
                        return Err(format!(
                            "balancer's memo of group {i} of CPU {cpu:?}'s level {level} is stale"
                        ));
                    }
                    let running = self
                        .lb_cache
                        .gid(cpu, level, i)
                        .map(|id| self.running_sums(id));
                    if running.is_some_and(|s| s != self.group_sums(g, g)) {
                        return Err(format!(
                            "balancer's running sums of group {i} of CPU {cpu:?}'s level {level} are wrong"
                        ));
                    }
                    let cores = self
                        .lb_cache
                        .gid(cpu, level, i)
                        .and_then(|id| self.lb_cache.cores[id].get());
                    if cores.is_some_and(|n| n != self.group_cores(g, g)) {
                        return Err(format!(
                            "balancer's core count of group {i} of CPU {cpu:?}'s level {level} is wrong"
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::mm::Mm;
    use crate::kernel::numa::tests::fx;
    use crate::kernel::sched::Task;
    use crate::kernel::{CgroupId, Kernel, MmId, TaskId};

    /// Memo and fresh walk of every group of every domain agree; returns
    /// how many groups the memo held.
    fn agree(k: &Kernel) -> usize {
        let mut held = 0;
        for (cpu, sds) in k.sched.topo.sd.iter_enumerated() {
            for (level, sd) in sds.iter().enumerate() {
                for (i, g) in sd.groups.iter().enumerate() {
                    let fresh = k.sched.group_sums(g, &sd.span);
                    let memo = k.sched.domain_group_sums(cpu, level, i, &sd.span, true);
                    assert_eq!(memo, fresh, "CPU {cpu:?} level {level} group {i}");
                    // A newly idle balance's read: the running sums.
                    let running = k.sched.domain_group_sums(cpu, level, i, &sd.span, false);
                    assert_eq!(
                        running, fresh,
                        "running: CPU {cpu:?} level {level} group {i}"
                    );
                    held += 1;
                }
            }
        }
        k.sched.check_lb_cache().expect("memo current");
        held
    }

    fn add_task(k: &mut Kernel, cpu: usize) -> TaskId {
        let t = k.tasks.next_key();
        let mut task = Task::new(
            101 + t.index() as u64,
            100,
            format!("t{t}"),
            MmId::new(0),
            CgroupId::new(0),
        );
        task.cpu = fx::c(cpu);
        k.add_task(task);
        k.enqueue_task(t, fx::c(cpu));
        t
    }

    #[test]
    fn the_memo_follows_enqueues_picks_moves_and_pelt() {
        let mut k = fx::kernel("spr-4n", &[]);
        k.mem
            .mms
            .push(Mm::new(MmId::new(0), 100, Default::default()));
        assert!(agree(&k) > 0);
        let a = add_task(&mut k, 0);
        let b = add_task(&mut k, 0);
        let before = k.sched.domain_group_sums(
            fx::c(0),
            0,
            0,
            &k.sched.topo.sd[fx::c(0)][0].span.clone(),
            true,
        );
        assert_eq!(before.nr_running, 2, "both queued tasks counted");
        agree(&k);
        k.pick_next_task(fx::c(0));
        agree(&k);
        k.move_task(b, fx::c(5));
        k.pick_next_task(fx::c(5));
        let after = k.sched.domain_group_sums(
            fx::c(0),
            0,
            0,
            &k.sched.topo.sd[fx::c(0)][0].span.clone(),
            true,
        );
        assert_eq!(
            after.nr_running,
            before.nr_running - 1,
            "the moved task left"
        );
        agree(&k);
        // PELT: averages move as time passes.
        for step in 1..=20u64 {
            k.now = step * 4_000_000;
            k.pelt_tick();
            agree(&k);
        }
        k.dequeue_task(a);
        agree(&k);
    }

    #[test]
    fn a_groups_core_count_is_held_only_for_balances_over_all_its_cpus() {
        let k = fx::kernel("spr-4n", &[]);
        for (cpu, sds) in k.sched.topo.sd.iter_enumerated() {
            for (level, sd) in sds.iter().enumerate() {
                for (i, g) in sd.groups.iter().enumerate() {
                    let whole = k.sched.group_cores(g, &sd.span);
                    // Counted, then held: the same either way.
                    for _ in 0..2 {
                        let held = k.sched.domain_group_cores(cpu, level, i, &sd.span);
                        assert_eq!(held, whole, "CPU {cpu:?} level {level} group {i}");
                    }
                    // A balance without one of the group's CPUs counts
                    // the rest, whatever is held.
                    let mut fewer = sd.span.clone();
                    if let Some(c) = g.first() {
                        fewer.remove(c);
                    }
                    assert_eq!(
                        k.sched.domain_group_cores(cpu, level, i, &fewer),
                        k.sched.group_cores(g, &fewer)
                    );
                }
            }
        }
        k.sched.check_lb_cache().expect("held core counts right");
    }
}
