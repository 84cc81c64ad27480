//! The split page-table lock and the per-VMA lock of racing faults.
//!
//! # Which locks a fault takes (6.12)
//! `do_user_addr_fault` (arch/x86/mm/fault.c) first tries
//! `lock_vma_under_rcu`: `vma_start_read` takes `vma->vm_lock` for read
//! (`down_read_trylock`, one atomic on the lock's count line) and
//! `vma_end_read` releases it (a second atomic). Only when that fails does
//! the fault fall back to `mmap_read_lock`, which for the anonymous VMAs
//! modeled here happens once per VMA (`vmf_anon_prepare` setting up the
//! `anon_vma`); that one fault is left out. Under the VMA lock,
//! `do_anonymous_page` and `do_numa_page` take the split page-table lock
//! of the PTE page (`pte_offset_map_lock`: one spinlock per page-table
//! page, covering 2 MiB of address space with 4 KiB pages) or, for a THP,
//! the PMD lock (`pmd_lock`, one per PMD page: 1 GiB) — both one lock per
//! page-table page, here keyed by the page being faulted.
//!
//! # A race
//! When `K` threads reach the same not-present (or PROT_NONE) page at
//! once, each takes the fault: a first touch allocates and zeroes its own
//! folio, then all `K` queue on the page-table lock. The first to take it
//! maps its folio; each other finds `!pte_none` (`vmf_pte_changed`) or
//! `!pte_same`, unlocks, frees its folio and returns, and the access is
//! retried. [`RaceCache::solve`] gives the mean spin on each lock: the
//! `K` CPUs are the requesters of the line model's queued spinlock
//! (`LineModel::qspinlock`), each offering one acquisition
//! per `own_ns` of its own work (the fault work before the lock), holding
//! it the mean of one map and `K - 1` checks. Its `vm_lock` count line
//! gets two atomics per fault cycle from the same CPUs.
//!
//! Left out: the PTE line itself moving between the racers beyond the one
//! transfer in the check's hold, the pte_offset_map RCU walk, faults on
//! different pages of one page-table page contending for its lock (racers
//! here are threads on the same page).

use crate::kernel::CpuId;
use crate::physics::line::{LineModel, Requester};
use numalab_topology::Machine;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// Spin per fault of one racer (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RaceSpin {
    /// Waiting for and taking the page-table lock (wait + transfer).
    pub ptl_ns: f64,
    /// The two atomics on `vma->vm_lock` (wait + transfer each).
    pub vm_lock_ns: f64,
}

/// Solved races, keyed by an id of the racing CPUs (the caller's: the
/// same whenever the set is) and the per-racer work, so a convoy of the
/// same threads solves its locks once. Cleared when it grows past
/// [`RACE_CACHE_MAX`] entries. A hash map: it is only looked up, filled
/// and cleared, never iterated, so its order cannot reach any output
/// (it was a BTreeMap, whose search was most of a cached fault's cost).
///
/// A race missing there is looked up again by its shape ([`RaceShape`]):
/// the line model's solve of racers who all offer the same rate reads the
/// CPUs only through how many there are and the sums of the squares of
/// how many share each core, LLC and package (`physics/line.rs` `Groups`,
/// whose one-class Gram sums are sums of whole numbers, exact in any
/// order), so two sets of that shape get the same spins bit for bit. On
/// xl-16n-640 NUMA01_THREADLOCAL's 26065 distinct racing sets have 3742
/// shapes.
#[derive(Clone, Debug, Default)]
pub struct RaceCache {
    solved: FxHashMap<(u64, u64, u64), RaceSpin>,
    by_shape: FxHashMap<(RaceShape, u64, u64), RaceSpin>,
    /// Racers per core, LLC and package id, all zero between solves.
    tally: [Vec<u32>; 3],
}

/// What a race's solve reads of its CPUs: their number and, per core, LLC
/// and package, the sum over those of the square of its racers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct RaceShape {
    racers: usize,
    squares: [u64; 3],
}

/// Most solved races kept (each of the two tables).
const RACE_CACHE_MAX: usize = 512;

impl RaceCache {
    /// The [`RaceShape`] of `cpus` on `m`.
    fn shape(&mut self, m: &Machine, cpus: &[CpuId]) -> RaceShape {
        let mut squares = [0u64; 3];
        for t in &mut self.tally {
            if t.len() < m.cpus.len() {
                t.resize(m.cpus.len(), 0);
            }
        }
        let ids = |cpu: &CpuId| {
            let info = &m.cpus[cpu.index()];
            [info.core, info.llc, info.package]
        };
        for cpu in cpus {
            for ((t, sq), id) in self.tally.iter_mut().zip(&mut squares).zip(ids(cpu)) {
                // (c + 1)^2 - c^2
                *sq += 2 * u64::from(t[id]) + 1;
                t[id] += 1;
            }
        }
        for cpu in cpus {
            for (t, id) in self.tally.iter_mut().zip(ids(cpu)) {
                t[id] = 0;
            }
        }
        RaceShape {
            racers: cpus.len(),
            squares,
        }
    }
}

/// An id of a set of CPUs for [`RaceCache::solve`]: FNV-1a over the sorted
/// CPU numbers.
pub fn cpu_set_key(cpus: &[CpuId]) -> u64 {
    // The CPUs as a bitmap, read back in ascending order: the sorted
    // numbers without a sort (a fault's racers: up to a node's CPUs, at
    // every racing fault). A CPU named twice falls back to the sort, which
    // hashes it twice.
    let words = cpus.iter().map(|c| c.index() / 64 + 1).max().unwrap_or(0);
    let mut bits: SmallVec<[u64; 16]> = SmallVec::from_elem(0, words);
    for c in cpus {
        let (w, b) = (c.index() / 64, 1u64 << (c.index() % 64));
        if bits[w] & b != 0 {
            return sorted_cpu_set_key(cpus);
        }
        bits[w] |= b;
    }
    let mut h = FNV_OFFSET;
    for (w, &word) in bits.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            let i = (w * 64 + rest.trailing_zeros() as usize) as u32;
            h = fnv_u32(h, i);
            rest &= rest - 1;
        }
    }
    h
}

/// FNV-1a's offset basis.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a of `i`'s little-endian bytes after `h`.
fn fnv_u32(mut h: u64, i: u32) -> u64 {
    for b in i.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// [`cpu_set_key`] by sorting the numbers (any list, repeats included).
fn sorted_cpu_set_key(cpus: &[CpuId]) -> u64 {
    let mut ids: Vec<u32> = cpus.iter().map(|c| c.index() as u32).collect();
    ids.sort_unstable();
    ids.into_iter().fold(FNV_OFFSET, fnv_u32)
}

impl RaceCache {
    /// The spin of each of the CPUs `cpus` (all racers, the winner
    /// included; `len() >= 2`; `key` = [`cpu_set_key`] of them) racing on
    /// one page, each doing `own_ns` of work per fault before the
    /// page-table lock, the winner holding it `hold_map_ns`, each loser
    /// `hold_check_ns`.
    #[allow(clippy::too_many_arguments)]
    pub fn solve(
        &mut self,
        model: &LineModel,
        m: &Machine,
        cpus: &[CpuId],
        key: u64,
        own_ns: f64,
        hold_map_ns: f64,
        hold_check_ns: f64,
    ) -> RaceSpin {
        let k = cpus.len() as f64;
        let hold = (hold_map_ns + (k - 1.0) * hold_check_ns) / k;
        let key = (key, own_ns.to_bits(), hold.to_bits());
        if let Some(s) = self.solved.get(&key) {
            return *s;
        }
        let shape = (self.shape(m, cpus), key.1, key.2);
        if let Some(&s) = self.by_shape.get(&shape) {
            self.remember(key, s);
            return s;
        }
        let reqs: Vec<Requester> = cpus
            .iter()
            .map(|&cpu| Requester {
                cpu,
                rate_per_ns: 1.0 / own_ns.max(1.0),
            })
            .collect();
        let ptl = model.qspinlock(m, &reqs, hold);
        let ptl_ns = ptl.spin_ns();
        // Each fault cycle: own work, the lock, its hold; two atomics on
        // the VMA lock's count per cycle.
        let cycle = own_ns + ptl_ns + hold;
        let vreqs: Vec<Requester> = cpus
            .iter()
            .map(|&cpu| Requester {
                cpu,
                rate_per_ns: 2.0 / cycle.max(1.0),
            })
            .collect();
        let vm_lock_ns = 2.0 * model.atomic(m, &vreqs).spin_ns();
        let s = RaceSpin { ptl_ns, vm_lock_ns };
        if self.by_shape.len() >= RACE_CACHE_MAX {
            self.by_shape.clear();
        }
        self.by_shape.insert(shape, s);
        self.remember(key, s);
        s
    }

    /// Keeps `s` under the racing set's `key`.
    fn remember(&mut self, key: (u64, u64, u64), s: RaceSpin) {
        if self.solved.len() >= RACE_CACHE_MAX {
            self.solved.clear();
        }
        self.solved.insert(key, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_race_of_the_same_shape_gets_the_spins_a_fresh_solve_gives() {
        let m = numalab_topology::presets::load("spr-4n").expect("preset");
        let model = LineModel::new(true);
        let set = |ids: &[usize]| ids.iter().map(|&i| CpuId::new(i)).collect::<Vec<_>>();
        let solve = |cache: &mut RaceCache, c: &[CpuId]| {
            cache.solve(&model, &m, c, cpu_set_key(c), 1400.0, 150.0, 60.0)
        };
        // Four cores of package 0, then four of package 1: one shape.
        let (a, b) = (set(&[0, 1, 2, 3]), set(&[40, 41, 42, 43]));
        let mut warm = RaceCache::default();
        solve(&mut warm, &a);
        let from_shape = solve(&mut warm, &b);
        assert_eq!(warm.solved.len(), 2);
        assert_eq!(warm.by_shape.len(), 1, "b found a's shape");
        assert_eq!(from_shape, solve(&mut RaceCache::default(), &b));
        // Two racers on one core's SMT siblings (CPU 160 is CPU 0's): another
        // shape, solved afresh, and a shorter hand-over.
        let siblings = set(&[0, 160, 1, 2]);
        let other = solve(&mut warm, &siblings);
        assert_eq!(warm.by_shape.len(), 2);
        assert_eq!(other, solve(&mut RaceCache::default(), &siblings));
        assert!(other.ptl_ns < from_shape.ptl_ns, "{other:?} {from_shape:?}");
        // The tally is left clean for the next shape.
        assert!(warm.tally.iter().all(|t| t.iter().all(|&n| n == 0)));
    }

    #[test]
    fn more_racers_spin_longer_and_the_convoy_serializes() {
        let m = numalab_topology::presets::load("spr-4n").expect("preset");
        let model = LineModel::new(true);
        let mut cache = RaceCache::default();
        let cpus = |n: usize| (0..n).map(|i| CpuId::new(i * 2)).collect::<Vec<_>>();
        let own = 1400.0;
        let solve = |cache: &mut RaceCache, c: &[CpuId]| {
            cache.solve(&model, &m, c, cpu_set_key(c), own, 150.0, 60.0)
        };
        let two = solve(&mut cache, &cpus(2));
        let many = solve(&mut cache, &cpus(160));
        assert!(many.ptl_ns > 10.0 * two.ptl_ns, "{two:?} {many:?}");
        // 160 racers each needing the lock once per page: every racer
        // waits for about all the others' services, far beyond its own
        // work, so the convoy advances one page per 160 services.
        assert!(many.ptl_ns > 100.0 * 60.0, "{many:?}");
        assert!(many.vm_lock_ns > 0.0);
        // Cached: the same racers in another order give the same answer.
        let mut rev = cpus(160);
        rev.reverse();
        assert_eq!(cpu_set_key(&rev), cpu_set_key(&cpus(160)));
        // The bitmap walk hashes what the sort does, and a repeated CPU
        // still counts twice.
        assert_eq!(cpu_set_key(&rev), sorted_cpu_set_key(&rev));
        let twice = [CpuId::new(70), CpuId::new(3), CpuId::new(70)];
        assert_eq!(cpu_set_key(&twice), sorted_cpu_set_key(&twice));
        assert_ne!(cpu_set_key(&twice), cpu_set_key(&twice[..2]));
        assert_eq!(solve(&mut cache, &rev), many);
    }
}
