//! Memory-cgroup charging on the first-touch path (mm/memcontrol.c,
//! mm/page_counter.c, 6.12): the page counters' atomics, which every CPU
//! faulting for tasks of one cgroup shares.
//!
//! # What the kernel does
//! - `alloc_anon_folio` charges the new folio to the mm's memcg
//!   (`mem_cgroup_charge` -> `try_charge_memcg`). A charge first tries the
//!   CPU's `memcg_stock`, which caches pages pre-charged to one memcg
//!   (`consume_stock`). When the stock holds another memcg or too few pages,
//!   the charge takes `MEMCG_CHARGE_BATCH` (64) pages at once
//!   (`page_counter_try_charge`: one atomic on the `usage` line of the memcg
//!   and of each ancestor up to the root) and keeps the surplus in the
//!   stock (`refill_stock`, which first gives back what a stock of another
//!   memcg held: `drain_stock`, `page_counter_uncharge`).
//! - A folio freed while charged is uncharged at once: `__folio_put` ->
//!   `mem_cgroup_uncharge` -> `uncharge_batch` -> `page_counter_uncharge`,
//!   one atomic on each of the same `usage` lines, with no per-CPU stock in
//!   between. Each loser of a racing first touch (kernel/mm/fault.rs) frees
//!   the folio it allocated, so a convoy of `K` racers makes `K - 1`
//!   uncharges per page, from every CPU faulting for the cgroup.
//! - The root memcg charges no LRU pages (`mem_cgroup_is_root`): tasks in
//!   the root cgroup pay none of this.
//!
//! # The model
//! Each cgroup's `usage` line is an atomic counter of the contended-line
//! model whose updates are counted per tick ([`TickLock::new_atomic`]):
//! an update pays the wait solved from the previous tick's updates (each
//! CPU offering the rate of its own work: the tick less what it waited)
//! plus one transfer from the last CPU to update it. The spin is system time of the
//! faulting task. The stock is per CPU: the memcg it holds and its pages.
//! Lab switch `numalab.memcg_page_counter` (with `numalab.fault_locks`),
//! off by default: an experiment on the line model at hundreds of
//! requesters (docs/reproductions.md, numa-balancing-threadlocal, system
//! time). NUMA01_THREADLOCAL in `/mytest` on spr-4n (320 CPUs, 159 losers
//! a page in each process's convoy) gives 172754 s of system time with it
//! against the posting's 16365 s: the line's transfer, grown by
//! `LINE_QUEUE_GROWTH` per outstanding request, is about 10x its unloaded
//! cost at 320 requesters. With `numalab.line_queueing=0` it adds 1.5 %.
//! The kernel does take these atomics, so the posting bounds what one
//! costs under that load; the switch stays off until the line model is
//! measured there.
//!
//! Left out: memory limits (`memory.max`, `memory.high`) and the reclaim
//! they start, the statistics' batched flush (`memcg_rstat_updated`), css
//! and objcg reference counts (per-CPU), swap and kmem accounting, charges
//! and uncharges of other paths (a migration moves the charge to the new
//! folio without touching the counters; the exit's uncharges are batched
//! per memcg), `memory.min`/`memory.low` protection.

use crate::kernel::locking::TickLock;
use crate::kernel::{CgroupId, CpuId, Kernel};
use smallvec::SmallVec;

/// Pages a charge takes into the CPU's stock at once (`MEMCG_CHARGE_BATCH`,
/// include/linux/memcontrol.h).
pub const MEMCG_CHARGE_BATCH: u64 = 64;

/// Charging state: each CPU's stock and each cgroup's counter line.
#[derive(Clone, Debug, Default)]
pub struct MemcgCharge {
    /// Per CPU (grown on first use): the memcg its stock holds pages of,
    /// and how many.
    stock: Vec<(Option<CgroupId>, u64)>,
    /// Per cgroup (grown on first use): its `page_counter`'s `usage` line.
    usage: Vec<Option<TickLock>>,
    /// Atomics done on the usage lines (read by the tests).
    pub(crate) updates: u64,
}

impl Kernel {
    /// Whether a charge of a task in `cg` updates any page counter: not
    /// for the root (it charges no LRU pages), nor with the switch off.
    pub(crate) fn memcg_charges(&self, cg: CgroupId) -> bool {
        let on = self.mem.locks.on;
        on.memcg_page_counter && on.fault_locks && self.cgroups.all[cg].parent.is_some()
    }

    /// The page counters a charge to `cg` updates: `cg`'s and each
    /// ancestor's up to the root (callers ask [`Kernel::memcg_charges`]
    /// first).
    fn memcg_levels(&self, cg: CgroupId) -> SmallVec<[CgroupId; 4]> {
        let mut out = SmallVec::new();
        let mut c = Some(cg);
        while let Some(x) = c {
            out.push(x);
            c = self.cgroups.all[x].parent;
        }
        out
    }

    /// One atomic on the usage line of each of `levels` by each of `cpus`:
    /// the CPU time they spin together (wait + transfer, ns).
    fn page_counter_atomics(&mut self, cpus: &[CpuId], levels: &[CgroupId]) -> f64 {
        if cpus.is_empty() {
            return 0.0;
        }
        let (tick, tick_ns) = (self.jiffies(), self.tick_ns as f64);
        let nr_cpus = self.m.nr_cpus();
        let memcg = &mut self.mem.memcg;
        let mut ns = 0.0;
        for &cg in levels {
            if memcg.usage.len() <= cg.index() {
                memcg.usage.resize(cg.index() + 1, None);
            }
            let line = memcg.usage[cg.index()].get_or_insert_with(|| TickLock::new_atomic(nr_cpus));
            ns += line.acquire_each(&self.mem.locks.model, &self.m, tick, tick_ns, cpus);
            memcg.updates += cpus.len() as u64;
        }
        ns
    }

    /// `consume_stock` by `cpu` of `nr` pages of `cg`: true when its stock
    /// served them; else the stock is refilled with a batch (the caller
    /// pays the counters' atomics) and the memcg it held before, if
    /// another with pages left, is returned to be drained.
    fn memcg_stock_take(&mut self, cpu: CpuId, cg: CgroupId, nr: u64) -> (bool, Option<CgroupId>) {
        let stock = &mut self.mem.memcg.stock;
        if stock.len() <= cpu.index() {
            stock.resize(cpu.index() + 1, (None, 0));
        }
        let (held, pages) = stock[cpu.index()];
        if held == Some(cg) && pages >= nr {
            stock[cpu.index()].1 -= nr;
            return (true, None);
        }
        let kept = if held == Some(cg) { pages } else { 0 };
        stock[cpu.index()] = (Some(cg), kept + MEMCG_CHARGE_BATCH.max(nr) - nr);
        (false, held.filter(|&o| o != cg && pages > 0))
    }

    /// `mem_cgroup_charge` of `nr` base pages by each of `cpus` for a task
    /// in cgroup `cg`: from each CPU's stock when it holds enough of `cg`,
    /// else a batch through the page counters (after giving back another
    /// memcg's stock). Returns the CPU time the counters' lines cost all
    /// of them together (ns).
    pub(crate) fn mem_cgroup_charge(&mut self, cpus: &[CpuId], cg: CgroupId, nr: u64) -> f64 {
        if !self.memcg_charges(cg) {
            return 0.0;
        }
        let levels = self.memcg_levels(cg);
        let mut refill: SmallVec<[CpuId; 8]> = SmallVec::new();
        let mut ns = 0.0;
        for &cpu in cpus {
            let (served, drain) = self.memcg_stock_take(cpu, cg, nr);
            if let Some(old) = drain {
                let old_levels = self.memcg_levels(old);
                ns += self.page_counter_atomics(&[cpu], &old_levels);
            }
            if !served {
                refill.push(cpu);
            }
        }
        ns + self.page_counter_atomics(&refill, &levels)
    }

    /// `mem_cgroup_uncharge` of a freed folio charged to cgroup `cg`, by
    /// each of `cpus`: one atomic on each level's usage line. Returns the
    /// CPU time of all of them together (ns).
    pub(crate) fn mem_cgroup_uncharge(&mut self, cpus: &[CpuId], cg: CgroupId) -> f64 {
        if !self.memcg_charges(cg) {
            return 0.0;
        }
        let levels = self.memcg_levels(cg);
        self.page_counter_atomics(cpus, &levels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::numa::tests::fx;

    /// A kernel with the switch on (and `sets` after it), and `/mytest`.
    fn kernel(sets: &[&str]) -> (Kernel, CgroupId) {
        let mut all = vec!["numalab.memcg_page_counter=1"];
        all.extend_from_slice(sets);
        let mut k = fx::kernel("spr-4n", &all);
        let cg = k.cgroups.mkdir("/mytest", None, None).unwrap();
        (k, cg)
    }

    #[test]
    fn the_root_cgroup_charges_nothing() {
        let (mut k, _) = kernel(&[]);
        let root = CgroupId::new(0);
        assert_eq!(k.mem_cgroup_charge(&[fx::c(0)], root, 1), 0.0);
        assert_eq!(k.mem_cgroup_uncharge(&[fx::c(0)], root), 0.0);
        assert_eq!(k.mem.memcg.updates, 0);
    }

    #[test]
    fn charges_come_from_a_64_page_stock_and_uncharges_never_do() {
        let (mut k, cg) = kernel(&[]);
        let cpu = fx::c(3);
        // First charge: a batch through /mytest's and the root's counters.
        assert!(k.mem_cgroup_charge(&[cpu], cg, 1) > 0.0);
        assert_eq!(k.mem.memcg.updates, 2);
        // The next 63 come from the stock.
        for _ in 0..63 {
            assert_eq!(k.mem_cgroup_charge(&[cpu], cg, 1), 0.0);
        }
        assert_eq!(k.mem.memcg.updates, 2);
        // The 65th refills it.
        assert!(k.mem_cgroup_charge(&[cpu], cg, 1) > 0.0);
        assert_eq!(k.mem.memcg.updates, 4);
        // An uncharge goes to both counters every time.
        k.mem_cgroup_uncharge(&[cpu], cg);
        k.mem_cgroup_uncharge(&[cpu], cg);
        assert_eq!(k.mem.memcg.updates, 8);
    }

    #[test]
    fn another_memcg_drains_the_stock_first() {
        let (mut k, cg) = kernel(&[]);
        let other = k.cgroups.mkdir("/other", None, None).unwrap();
        let cpu = fx::c(0);
        k.mem_cgroup_charge(&[cpu], cg, 1);
        k.mem_cgroup_charge(&[cpu], other, 1);
        // /mytest's 63 pages back (2 atomics), then /other's batch (2).
        assert_eq!(k.mem.memcg.updates, 6);
    }

    #[test]
    fn the_switches_turn_it_off() {
        for sets in [["numalab.memcg_page_counter=0"], ["numalab.fault_locks=0"]] {
            let (mut k, cg) = kernel(&sets);
            assert!(!k.mem.locks.on.memcg_page_counter || !k.mem.locks.on.fault_locks);
            assert_eq!(k.mem_cgroup_charge(&[fx::c(0)], cg, 1), 0.0);
            assert_eq!(k.mem_cgroup_uncharge(&[fx::c(0)], cg), 0.0);
            assert_eq!(k.mem.memcg.updates, 0, "{sets:?}");
        }
    }

    #[test]
    fn many_cpus_updating_a_counter_each_tick_wait_for_its_line() {
        let (mut k, cg) = kernel(&[]);
        let tick = k.tick_ns;
        let alone = k.mem_cgroup_uncharge(&[fx::c(0)], cg);
        // A tick in which 160 CPUs of the four packages each uncharge 100
        // folios: the next tick's uncharges queue on the line.
        k.now += tick;
        let cpus: Vec<CpuId> = (0..160).map(|i| fx::c(i * 2)).collect();
        for _ in 0..100 {
            k.mem_cgroup_uncharge(&cpus, cg);
        }
        k.now += tick;
        let loaded = k.mem_cgroup_uncharge(&[fx::c(0)], cg);
        assert!(loaded > 2.0 * alone, "alone {alone} ns, loaded {loaded} ns");
    }
}
