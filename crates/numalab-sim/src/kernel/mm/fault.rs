//! Page faults (mm/memory.c): first touch of an anonymous page
//! (`do_anonymous_page`, `do_huge_pmd_anonymous_page`; a shared mapping's
//! first touch allocates the same way, `shmem_fault`, and a later mm's
//! maps the folio, kernel/mm/shmem.rs) and the dispatch of
//! NUMA hinting faults on PROT_NONE pages to the balancing model, and
//! the write-protect fault a migrated page takes on its next write
//! ([`Kernel::do_wp_page_reuse`], `numalab.migration_wp_fault`).
//!
//! The first touch allocates on the node the governing policy picks
//! (`alloc_pages_mpol`, through the per-CPU page lists and `zone->lock`),
//! falling back by distance when it is full, counts `numa_hit`/
//! `numa_miss`/`numa_local`/... once per allocation like
//! `zone_statistics`, `thp_fault_alloc` for a huge page, and costs the
//! faulting task a fixed fault cost plus zeroing the page at its core's
//! streaming bandwidth. Every completed fault counts `pgfault`
//! (`mm_account_fault`), in vmstat and the task's memory.stat.
//!
//! Racing faults ([`Kernel::handle_mm_fault_racing`],
//! `numalab.fault_retry`): threads that reach the same page while it is
//! being faulted take the fault too. On a first touch each allocates and
//! zeroes its own folio, takes the page-table lock, finds `!pte_none`
//! (`vmf_pte_changed`), frees its folio and returns; the access is
//! retried. On a hinting fault each finds `!pte_same` under the lock and
//! returns; if the winner is migrating the folio, the retried access
//! sleeps on the migration entry until the migration is done
//! (`migration_entry_wait`: the folio lock the migration holds), which is
//! not CPU time. All of them queue on the page-table lock and take the
//! per-VMA lock (kernel/locking/ptl.rs, `numalab.fault_locks`). Which
//! threads race is the engine's answer (engine/fault.rs). With
//! `numalab.memcg_page_counter` (off by default) a task in a non-root
//! cgroup also charges each folio to its memcg, and each loser uncharges
//! the one it frees (kernel/mm/memcontrol.rs).
//!
//! Left out: the zero page for reads, a loser's allocation landing on
//! another node than the winner's (counted as the winner's node), faults
//! on different pages of one page-table page contending for its lock.

use super::mempolicy::alloc_order;
use super::page_alloc::alloc_pages_on;
use super::{MmState, PAGE_SHIFT};
use crate::kernel::mm::mempolicy::MpolMode;
use crate::kernel::stats::Vm;
use crate::kernel::sysctl::knob;
use crate::kernel::{CgroupId, CpuId, Kernel, TaskId, VmaId};
use crate::physics::costs;
use numalab_topology::Machine;
use smallvec::SmallVec;

/// The threads faulting one page at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct Race<'a> {
    /// CPUs of every thread faulting the page, the winner's included
    /// (empty or one: no race).
    pub cpus: &'a [CpuId],
    /// How many of `cpus` are on each node, the winner's included (empty
    /// when `cpus` is).
    pub per_node: &'a [u64],
    /// [`crate::kernel::locking::ptl::cpu_set_key`] of `cpus`: the lock
    /// solve is cached under it.
    pub key: u64,
}

impl Race<'_> {
    /// Threads that lose the race.
    pub fn losers(&self) -> u64 {
        self.cpus.len().saturating_sub(1) as u64
    }
}

/// What one fault cost, in ns: the winner's CPU time and each loser's CPU
/// time and sleep (the same for every loser).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FaultCost {
    /// CPU time of the task that took the fault (the winner).
    pub cpu_ns: f64,
    /// CPU time of each loser of the race.
    pub loser_cpu_ns: f64,
    /// Time each loser sleeps (on the migration the winner does).
    pub loser_sleep_ns: f64,
}

/// A fault that cannot be satisfied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Oom(pub String);

impl Kernel {
    /// Handles a read by task `t` on `cpu` of page `idx` of VMA `vma`
    /// that is special (not present or PROT_NONE), with no thread racing
    /// it. Returns the CPU time the fault cost, in ns (charged by the
    /// caller's progress loop).
    pub fn handle_mm_fault(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        idx: usize,
    ) -> Result<f64, Oom> {
        Ok(self
            .handle_mm_fault_racing(t, cpu, vma, idx, false, Race::default())?
            .cpu_ns)
    }

    /// [`Kernel::handle_mm_fault`] with the threads of `race` faulting the
    /// same page at the same time: `t` on `cpu` (one of `race.cpus`) wins,
    /// each other thread loses and retries (see the module doc). With
    /// `numalab.fault_retry` off the race is ignored. `write`: the access
    /// writes (`FAULT_FLAG_WRITE`), so a hinting fault that migrated the
    /// page (mapped back read-only) is followed by the winner's
    /// write-protect fault, [`Kernel::do_wp_page_reuse`], in its cost.
    pub fn handle_mm_fault_racing(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        idx: usize,
        write: bool,
        race: Race<'_>,
    ) -> Result<FaultCost, Oom> {
        let race = if self.mem.locks.on.fault_retry && race.cpus.len() > 1 {
            race
        } else {
            Race::default()
        };
        let mm = self.tasks[t].mm;
        // 3.8-3.12 (`numalab.pmd_numa_batch`): a PMD marked `pmd_numa`
        // takes `do_pmd_numa_page` first, whatever the page (numa/pmd_numa.rs).
        let pmd_fault = self.pmd_numa(mm, vma, idx);
        let (pmd_ns, pmd_held) = if pmd_fault {
            self.do_pmd_numa_page(t, cpu, vma, idx)
        } else {
            (0.0, 0.0)
        };
        let page = self.mem.mms[mm].vmas[vma].pages[idx];
        if page.nid == super::NO_NODE {
            // A shared mapping: another mm may have allocated the folio.
            if let Some(nid) = self.mem.shmem_folio_node(mm, vma, idx) {
                return Ok(FaultCost {
                    cpu_ns: self.shmem_map_folio(t, cpu, vma, idx, nid) + pmd_ns,
                    ..FaultCost::default()
                });
            }
            let mut c = self.do_anonymous_page(t, cpu, vma, idx, race)?;
            self.mem.shmem_add_folio(mm, vma, idx);
            c.cpu_ns += pmd_ns;
            return Ok(c);
        }
        if page.protnone || pmd_fault {
            let (own, held) = if pmd_fault {
                (pmd_ns, pmd_held)
            } else {
                self.do_numa_page_timed(t, cpu, vma, idx)
            };
            // mm_account_fault (6.12; 3.9 counts at the top of
            // handle_mm_fault): every completed fault is a `pgfault`, the
            // hinting fault and each loser's retried one alike (a loser
            // returns 0 after `!pte_same`).
            self.count_memcg_event(t, Vm::PgFault, 1 + race.losers());
            // Everyone gets to the lock after the exception entry; the
            // winner then holds it through the PTE update, the losers for
            // the check.
            let spin = self.mem.race_spin(&self.m, race, costs::FAULT_ENTRY_NS);
            let lost = race.losers() > 0;
            // A migration (held > 0: do_numa_page_timed's contract) of a
            // private 6.x PROT_NONE page: try_to_migrate made a readable
            // entry and remove_migration_pte mapped vm_page_prot, read-only
            // for copy-on-write, so the retried write faults again.
            // 3.8-3.12's pmd_numa path kept the write bit; a shared
            // mapping's vm_page_prot is writable.
            let wp = if write
                && held > 0.0
                && !pmd_fault
                && self.knobs.get(knob::MIGRATION_WP_FAULT)
                && self.mem.mms[mm].vmas[vma].shm.is_none()
            {
                self.do_wp_page_reuse(t)
            } else {
                0.0
            };
            return Ok(FaultCost {
                cpu_ns: own + spin + wp,
                loser_cpu_ns: if lost {
                    costs::FAULT_ENTRY_NS + costs::PTL_HOLD_CHECK_NS + spin
                } else {
                    0.0
                },
                loser_sleep_ns: if lost { held } else { 0.0 },
            });
        }
        Ok(FaultCost::default())
    }

    /// `do_wp_page` on a page a NUMA migration left read-only: the folio
    /// is task `t`'s exclusive anonymous one, so `wp_page_reuse` makes the
    /// PTE writable. Counts the fault (`mm_account_fault`) and returns its
    /// CPU time (ns, for [`Kernel::charge_sys`], in the hinting fault's). The machine's speed for
    /// the first-touch path (`[kernel] fault_cost_scale`) is its speed for
    /// this one: the same exception, walk and PTE update under the lock,
    /// without the allocation and the zeroing.
    pub fn do_wp_page_reuse(&mut self, t: TaskId) -> f64 {
        self.count_memcg_event(t, Vm::PgFault, 1);
        costs::WP_REUSE_FAULT_NS * self.first_touch_rescale().unwrap_or(1.0)
    }

    /// `zone_statistics(preferred_zone, zone, 1)` for allocations of one
    /// node, whatever their order (a THP is one, as the guest's
    /// `numa_hit` shows: validate/kernel): `local` of them by CPUs of that
    /// node and `other` by CPUs elsewhere, on the node the policy
    /// preferred (`hit`) or not. `interleave`: an MPOL_INTERLEAVE
    /// allocation, which `alloc_pages_mpol` also counts as an
    /// interleave hit when it lands where the policy put it.
    pub(crate) fn zone_statistics(&mut self, hit: bool, interleave: bool, local: u64, other: u64) {
        let n = local + other;
        if hit {
            self.vmstat.add(Vm::NumaHit, n);
            if interleave {
                self.vmstat.add(Vm::NumaInterleave, n);
            }
        } else {
            self.vmstat.add(Vm::NumaMiss, n);
            self.vmstat.add(Vm::NumaForeign, n);
        }
        self.vmstat.add(Vm::NumaLocal, local);
        self.vmstat.add(Vm::NumaOther, other);
    }

    /// What turns the first-touch path's native costs into the units
    /// [`Kernel::charge_sys`] takes (it multiplies by `cost_scale`):
    /// `fault_cost_scale / cost_scale` when the machine gives one.
    fn first_touch_rescale(&self) -> Option<f64> {
        let k = &self.m.kernel;
        k.fault_cost_scale.map(|f| f / k.cost_scale)
    }

    /// `do_anonymous_page`: allocate, zero and map page `idx`; the other
    /// threads of `race` did the same, lost the page-table lock to `t` and
    /// freed theirs.
    fn do_anonymous_page(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        idx: usize,
        race: Race<'_>,
    ) -> Result<FaultCost, Oom> {
        let mm = self.tasks[t].mm;
        let pol = self.vma_policy(t, vma);
        let local = self.cpu_node(cpu);
        let v = &self.mem.mms[mm].vmas[vma];
        let nr = v.nr_base_pages();
        let psize = v.page_size();
        // Interleave: VMA policies interleave by page offset
        // (`interleave_nid`), task policies by the task's cursor (`il_prev`).
        let il_index = if pol.mode == MpolMode::Interleave {
            if v.policy.is_some() {
                idx as u64
            } else {
                let i = self.tasks[t].il_prev;
                self.tasks[t].il_prev += 1;
                i
            }
        } else {
            0
        };
        let mems = self.task_mems(t);
        // The common first touch: a default or local policy, whose order
        // starts at the local node when it is allowed and first in its own
        // zonelist, and room there: the node the order and
        // `alloc_pages_on` give, without building the order (NUMA02's
        // 262144 first touches).
        let local_first = matches!(pol.mode, MpolMode::Default | MpolMode::Local)
            && self.mem.zonelists[local].first() == Some(&local)
            && mems.contains(local.index())
            && self.mem.nodes[local].free_pages >= nr;
        let (intended, nid) = if local_first {
            self.mem.nodes[local].free_pages -= nr;
            (Some(local), local)
        } else {
            let order = alloc_order(&pol, local, il_index, mems, &self.mem.zonelists);
            let Some(nid) = alloc_pages_on(&mut self.mem.nodes, &order, nr) else {
                return Err(Oom(format!(
                    "out of memory: task {} could not allocate a {} KiB page on any allowed node ({:?} policy)",
                    self.tasks[t].name,
                    psize >> 10,
                    pol.mode
                )));
            };
            (order.first().copied(), nid)
        };
        self.mem.mms[mm].vmas[vma].set_page_node(idx, nid);
        let interleave = pol.mode == MpolMode::Interleave;
        let here = u64::from(nid == local);
        self.zone_statistics(Some(nid) == intended, interleave, here, 1 - here);
        self.count_memcg_event(t, Vm::PgFault, 1);
        if nr > 1 && self.mem.mms[mm].vmas[vma].shm.is_none() {
            // map_anon_folio_pmd: the winner's huge page (a loser finds the
            // PMD taken and frees its folio uncounted). A shared mapping's
            // is shmem's (`thp_file_alloc`, not modeled).
            self.count_memcg_event(t, Vm::ThpFaultAlloc, 1);
        }
        let zero_ns = self.bytes_cost_ns(psize as f64);
        let base = costs::FAULT_ALLOC_NS + zero_ns;
        let zone = self.pcp_alloc(cpu, nid, nr);
        // Losers: each allocated (counted like the winner's allocation),
        // zeroed, queued on the lock and freed its folio. Its folio comes
        // from and goes back to its own per-CPU list: no `zone->lock`
        // beyond the list's first refill, left out.
        let spin = self
            .mem
            .race_spin(&self.m, race, base - costs::PTL_HOLD_MAP_NS);
        let losers = race.losers();
        if losers > 0 {
            self.count_memcg_event(t, Vm::PgFault, losers);
            // Each loser's folio is an allocation too, on the winner's
            // node (the module doc's approximation), local to the losers
            // on that node.
            let here = race.per_node[nid.index()] - u64::from(local == nid);
            self.zone_statistics(Some(nid) == intended, interleave, here, losers - here);
        }
        // The memcg charge of each racer's folio, and each loser's
        // uncharge when it frees its own (kernel/mm/memcontrol.rs).
        let cg = self.tasks[t].cgroup;
        let (memcg, loser_memcg) = if self.memcg_charges(cg) {
            (
                self.mem_cgroup_charge(&[cpu], cg, nr),
                self.racers_recharge(cpu, cg, nr, race),
            )
        } else {
            (0.0, 0.0)
        };
        let mut cpu_ns = base + zone + spin + memcg;
        let mut loser_cpu_ns = if losers > 0 {
            base - costs::PTL_HOLD_MAP_NS
                + costs::PTL_HOLD_CHECK_NS
                + costs::FOLIO_FREE_NS
                + spin
                + loser_memcg
        } else {
            0.0
        };
        // The machine may run this path at its own speed
        // (`[kernel] fault_cost_scale`); the zeroing is a copy at the
        // machine's bandwidth either way.
        if let Some(work) = self.first_touch_rescale() {
            cpu_ns = (cpu_ns - zero_ns) * work + zero_ns;
            if losers > 0 {
                loser_cpu_ns = (loser_cpu_ns - zero_ns) * work + zero_ns;
            }
        }
        Ok(FaultCost {
            cpu_ns,
            loser_cpu_ns,
            ..FaultCost::default()
        })
    }

    /// The memcg work of the losers of `race` (whose winner is on
    /// `winner`): each charged its folio to `cg` and uncharges it on
    /// freeing. Returns the mean per loser (ns; 0 without losers).
    fn racers_recharge(&mut self, winner: CpuId, cg: CgroupId, nr: u64, race: Race<'_>) -> f64 {
        let losers = race.losers();
        if losers == 0 {
            return 0.0;
        }
        let mut cpus: SmallVec<[CpuId; 16]> = SmallVec::from_slice(race.cpus);
        if let Some(i) = cpus.iter().position(|&c| c == winner) {
            cpus.remove(i);
        }
        let ns = self.mem_cgroup_charge(&cpus, cg, nr) + self.mem_cgroup_uncharge(&cpus, cg);
        ns / losers as f64
    }

    /// Bytes of a base page.
    pub fn page_bytes() -> u64 {
        1 << PAGE_SHIFT
    }
}

impl MmState {
    /// Spin per fault (page-table lock and per-VMA lock) of each thread of
    /// `race`, each doing `own_ns` of work before the lock; 0 without a
    /// race or with `numalab.fault_locks` off. The locks' lines sit on
    /// machine `m`.
    fn race_spin(&mut self, m: &Machine, race: Race<'_>, own_ns: f64) -> f64 {
        if race.cpus.len() < 2 || !self.locks.on.fault_locks {
            return 0.0;
        }
        let model = self.locks.model;
        let s = self.locks.races.solve(
            &model,
            m,
            race.cpus,
            race.key,
            own_ns,
            costs::PTL_HOLD_MAP_NS,
            costs::PTL_HOLD_CHECK_NS,
        );
        s.ptl_ns + s.vm_lock_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::locking::ptl::cpu_set_key;
    use crate::kernel::numa::tests::fx;

    fn race_on(sets: &[&str]) -> (Kernel, FaultCost) {
        race_in(sets, None)
    }

    /// Task `t` on CPU 0 wins a write fault on page 3 of the first VMA
    /// that the threads on `cpus` (CPU 0 among them) race.
    fn fault_raced(k: &mut Kernel, t: TaskId, cpus: &[CpuId]) -> FaultCost {
        let mut per_node = vec![0u64; k.m.nr_nodes()];
        for &c in cpus {
            per_node[k.cpu_node(c).index()] += 1;
        }
        let race = Race {
            cpus,
            per_node: &per_node,
            key: cpu_set_key(cpus),
        };
        k.handle_mm_fault_racing(t, fx::c(0), fx::V0, 3, true, race)
            .expect("racing fault")
    }

    /// A race of 64 threads on one page, their task in cgroup `cg` (the
    /// root when `None`).
    fn race_in(sets: &[&str], cg: Option<&str>) -> (Kernel, FaultCost) {
        let mut k = fx::kernel("spr-4n", sets);
        let mm = fx::add_mm(&mut k, fx::pages(16), false, None);
        let t = fx::add_task(&mut k, mm, fx::c(0));
        if let Some(path) = cg {
            k.tasks[t].cgroup = k.cgroups.mkdir(path, None, None).expect("cgroup");
        }
        let cpus: Vec<CpuId> = (0..64).map(|i| fx::c(i * 5)).collect();
        let c = fault_raced(&mut k, t, &cpus);
        (k, c)
    }

    #[test]
    fn racing_first_touch_losers_pay_and_count_like_the_kernel() {
        let (alone_k, alone) = {
            let mut k = fx::kernel("spr-4n", &[]);
            let mm = fx::add_mm(&mut k, fx::pages(16), false, None);
            let t = fx::add_task(&mut k, mm, fx::c(0));
            let c = k.handle_mm_fault(t, fx::c(0), fx::V0, 3).expect("fault");
            (k, c)
        };
        let (k, race) = race_on(&[]);
        // 64 faults on one page: one maps it, 63 retry; all counted.
        assert_eq!(k.vmstat.get(Vm::PgFault), 64);
        assert_eq!(alone_k.vmstat.get(Vm::PgFault), 1);
        assert_eq!(k.vmstat.get(Vm::NumaHit), 64);
        // Queued behind 63 others on the page-table lock.
        assert!(
            race.cpu_ns > alone + 63.0 * costs::PTL_HOLD_CHECK_NS,
            "{race:?} {alone}"
        );
        assert!(race.loser_cpu_ns > race.cpu_ns * 0.5, "{race:?}");
        // Without the locks the race costs the repeated work only.
        let (_, nolock) = race_on(&["numalab.fault_locks=0"]);
        assert!(nolock.cpu_ns < race.cpu_ns);
        assert!(nolock.loser_cpu_ns > 0.0);
        // Without retries the others never fault.
        let (k, noretry) = race_on(&["numalab.fault_retry=0"]);
        assert_eq!(k.vmstat.get(Vm::PgFault), 1);
        assert_eq!(noretry.loser_cpu_ns, 0.0);
    }

    #[test]
    fn a_hinting_fault_counts_pgfault_like_a_first_touch() {
        // The race of 64 on a page marked for a hinting fault after its
        // first touch: the winner's fault and the 63 retried ones are
        // completed faults (mm_account_fault), as the guest's vmstat shows
        // (pgfault = first touches + numa_hint_faults, validate/kernel).
        let mut k = fx::kernel("spr-4n", &[]);
        let mm = fx::add_mm(&mut k, fx::pages(16), false, None);
        let t = fx::add_task(&mut k, mm, fx::c(0));
        k.handle_mm_fault(t, fx::c(0), fx::V0, 3)
            .expect("first touch");
        fx::mark(&mut k, mm, 3);
        k.handle_mm_fault(t, fx::c(0), fx::V0, 3)
            .expect("hinting fault");
        assert_eq!(k.vmstat.get(Vm::NumaHintFaults), 1);
        assert_eq!(k.vmstat.get(Vm::PgFault), 2);
        let cpus: Vec<CpuId> = (0..64).map(|i| fx::c(i * 5)).collect();
        fx::mark(&mut k, mm, 3);
        fault_raced(&mut k, t, &cpus);
        assert_eq!(k.vmstat.get(Vm::NumaHintFaults), 2, "the winner's");
        assert_eq!(k.vmstat.get(Vm::PgFault), 2 + 64);
    }

    #[test]
    fn every_racer_of_an_interleaved_first_touch_counts_an_interleave_hit() {
        // alloc_pages_mpol counts NUMA_INTERLEAVE_HIT for each allocation
        // that lands where the interleave put it, a losing racer's too.
        let mut k = fx::kernel("spr-4n", &[]);
        let req = crate::kernel::mm::mempolicy::MpolRequest {
            mode: MpolMode::Interleave,
            nodes: vec![0, 1, 2, 3],
            numa_balancing: false,
        };
        let pol = crate::kernel::mm::mempolicy::mpol_new(
            &req,
            4,
            numalab_knobs::knob::InterleaveNumaBalancing::Off,
        )
        .expect("plain interleave");
        let mm = fx::add_mm(&mut k, fx::pages(16), false, Some(pol));
        let t = fx::add_task(&mut k, mm, fx::c(0));
        let cpus: Vec<CpuId> = (0..8).map(|i| fx::c(i * 40)).collect();
        fault_raced(&mut k, t, &cpus);
        assert_eq!(k.vmstat.get(Vm::NumaHit), 8, "winner and 7 losers");
        assert_eq!(k.vmstat.get(Vm::NumaInterleave), 8);
        assert_eq!(k.vmstat.get(Vm::NumaLocal) + k.vmstat.get(Vm::NumaOther), 8);
    }

    #[test]
    fn numa_hit_counts_allocations_not_pages_and_migrations_count_too() {
        // A THP first touch is one allocation (zone_statistics(.., 1)),
        // 512 base pages.
        let mut k = fx::kernel("tiny-2n", &[]);
        let mm = fx::add_mm(&mut k, 4 << 20, true, None);
        let t = fx::add_task(&mut k, mm, fx::c(0));
        k.handle_mm_fault(t, fx::c(0), fx::V0, 0)
            .expect("THP first touch");
        assert_eq!(k.vmstat.get(Vm::NumaHit), 1);
        assert_eq!(k.vmstat.get(Vm::ThpFaultAlloc), 1);
        assert_eq!(k.vmstat.get(Vm::NumaLocal), 1);
        // Its migration to node 1 by a task there allocates the
        // destination folio there: one more hit, local to that CPU.
        let t1 = fx::add_task(&mut k, mm, fx::c(2));
        k.migrate_misplaced_folio(t1, fx::V0, 0, fx::n(1))
            .expect("migrated");
        assert_eq!(k.vmstat.get(Vm::PgmigrateSuccess), 512);
        assert_eq!(k.vmstat.get(Vm::NumaHit), 2);
        assert_eq!(k.vmstat.get(Vm::NumaLocal), 2);
        assert_eq!(k.vmstat.get(Vm::NumaOther), 0);
        // Migrated back by the task on node 1: hit on node 0, but other.
        k.migrate_misplaced_folio(t1, fx::V0, 0, fx::n(0))
            .expect("migrated back");
        assert_eq!(k.vmstat.get(Vm::NumaHit), 3);
        assert_eq!(k.vmstat.get(Vm::NumaOther), 1);
    }

    #[test]
    fn fault_cost_scale_rescales_the_first_touch_work_but_not_the_zeroing() {
        let first_touch = |cost: f64, fault: Option<f64>| {
            let mut k = fx::kernel("spr-4n", &[]);
            k.m.kernel.cost_scale = cost;
            k.m.kernel.fault_cost_scale = fault;
            let mm = fx::add_mm(&mut k, fx::pages(16), false, None);
            let t = fx::add_task(&mut k, mm, fx::c(0));
            let ns = k.handle_mm_fault(t, fx::c(0), fx::V0, 3).expect("fault");
            // What charge_sys makes of it.
            ns * cost
        };
        let native = first_touch(1.0, None);
        let zero = 4096.0 / fx::kernel("spr-4n", &[]).m.bandwidth.core_gbps;
        assert!(native > zero);
        // The whole path at 180, the zeroing at the machine's bandwidth.
        let slow = first_touch(180.0, None);
        assert!(
            ((slow - zero) / (native - zero) - 180.0).abs() < 1e-6,
            "{slow} {native}"
        );
        // Only the path's own work at 8 when the machine says so.
        let calibrated = first_touch(180.0, Some(8.0));
        assert!(
            ((calibrated - zero) / (native - zero) - 8.0).abs() < 1e-6,
            "{calibrated}"
        );
    }

    #[test]
    fn in_a_memory_cgroup_each_loser_uncharges_its_folio_on_the_shared_counters() {
        let on = ["numalab.memcg_page_counter=1"];
        let (root_k, root) = race_in(&on, None);
        let (k, mytest) = race_in(&on, Some("/mytest"));
        // 64 charges (the first of each CPU refills its stock: two
        // atomics, /mytest's and the root's) and 63 uncharges (two each).
        assert_eq!(root_k.mem.memcg.updates, 0);
        assert_eq!(k.mem.memcg.updates, 64 * 2 + 63 * 2);
        assert!(
            mytest.loser_cpu_ns > root.loser_cpu_ns,
            "{mytest:?} {root:?}"
        );
        assert!(mytest.cpu_ns > root.cpu_ns, "the winner's stock refill");
        // Off (the default), a cgroup costs what the root does.
        let (_, off) = race_in(&[], Some("/mytest"));
        assert_eq!(off, root);
    }
}
