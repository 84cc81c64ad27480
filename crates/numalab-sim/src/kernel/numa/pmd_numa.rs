//! 3.8-3.12's PMD-level hinting mark on regular (4 KiB) page tables,
//! behind `numalab.pmd_numa_batch` (off: mainline, which has no such mark).
//!
//! The scan (`change_pmd_range`, mm/mprotect.c): `change_pte_range` marks
//! a PMD's pages `pte_numa` and reports whether every present page it
//! examined was on one node (`all_same_node`); if so `change_pmd_protnuma`
//! also sets `pmd_numa` on the PMD. The next access anywhere under that
//! PMD faults once (`do_pmd_numa_page`, mm/memory.c): it clears `pmd_numa`
//! and, under the PTE lock, handles every `pte_numa` PTE of the PMD. Per
//! page, `numa_migrate_prep` counts `numa_hint_faults` (and
//! `numa_hint_faults_local` when the page is on the faulting node) and asks
//! `mpol_misplaced`; only a page the policy wants moved is migrated and
//! accounted to the task (`task_numa_fault(curr_nid, 1, migrated)`, with
//! `curr_nid` the target if it moved, else the faulting node). A page that
//! stays is not accounted to the task at all: the quirk that "[PATCH 07/63]
//! mm: numa: Sanitize task_numa_fault() callsites" (Oct 2013) removed.
//! Sources: the 3.9 code as the series' own "[PATCH 7/8] sched: Split
//! accounting of NUMA hinting faults that pass two-stage filter" (linux-mm,
//! 2013-06-26) quotes it, and that later patch (both in sjp38/lore-linux-mm).
//!
//! Cost: the fault's exception round trip ([`costs::FAULT_ENTRY_NS`]) once,
//! and each page's handling (the rest of [`costs::HINT_FAULT_NS`]) plus its
//! migration, as `do_numa_page` charges them.
//!
//! Left out: 3.9 marking a PMD whose range has no present page (its next
//! fault finds nothing to do and falls through to the normal fault), the
//! `page_mapcount(page) == 1` test of the 3.9 scan and fault (every private
//! anonymous page here is mapped once; a shared mapping's pages are marked
//! and handled as mainline does), and racing threads on the PMD fault (the
//! caller's race accounting treats it as one page's fault).

use crate::kernel::mm::NO_NODE;
use crate::kernel::sysctl::knob;
use crate::kernel::{CpuId, Kernel, MmId, NodeId, TaskId, VmaId};
use crate::physics::costs;

impl Kernel {
    /// `numalab.pmd_numa_batch`: 3.8-3.12's `pmd_numa` on regular PMDs.
    pub fn pmd_numa_batch_on(&self) -> bool {
        self.knobs.get(knob::PMD_NUMA_BATCH)
    }

    /// `change_pmd_protnuma`: sets `pmd_numa` on chunk (PMD) `chunk` of VMA
    /// `vma` of `mm`.
    pub(crate) fn change_pmd_protnuma(&mut self, mm: MmId, vma: VmaId, chunk: usize) {
        self.numa.pmd_numa.insert((mm, vma, chunk));
    }

    /// True when the PMD over page `idx` of VMA `vma` of `mm` carries
    /// `pmd_numa` (nothing to look up unless `numalab.pmd_numa_batch`
    /// marked one).
    pub fn pmd_numa(&self, mm: MmId, vma: VmaId, idx: usize) -> bool {
        if self.numa.pmd_numa.is_empty() {
            return false;
        }
        let chunk = idx / self.mem.mms[mm].vmas[vma].pages_per_chunk;
        self.numa.pmd_numa.contains(&(mm, vma, chunk))
    }

    /// `do_pmd_numa_page` (3.9 mm/memory.c): task `t` on `cpu` touched page
    /// `idx` of VMA `vma` under a PMD marked `pmd_numa`. Clears the mark and
    /// handles every marked page of the PMD (see the module doc). Returns
    /// the fault's CPU time (ns) and how long the migration of page `idx`
    /// held it (ns; 0 if it did not move), as [`Kernel::do_numa_page_timed`].
    pub fn do_pmd_numa_page(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        idx: usize,
    ) -> (f64, f64) {
        let mm = self.tasks[t].mm;
        let (from, to) = {
            let v = &self.mem.mms[mm].vmas[vma];
            let ppc = v.pages_per_chunk;
            let c = idx / ppc;
            self.numa.pmd_numa.remove(&(mm, vma, c));
            (c * ppc, ((c + 1) * ppc).min(v.pages.len()))
        };
        let local = self.cpu_node(cpu);
        let rescale = self.hint_fault_rescale();
        let mut cost = costs::FAULT_ENTRY_NS * rescale;
        let per_page = (costs::HINT_FAULT_NS - costs::FAULT_ENTRY_NS) * rescale;
        let mut held = 0.0;
        for p in from..to {
            let page = self.mem.mms[mm].vmas[vma].pages[p];
            if page.nid == NO_NODE || !page.protnone {
                continue;
            }
            self.mem.mms[mm].vmas[vma].set_protnone(p, false);
            cost += per_page;
            let mut flags = 0u32;
            let (target, last_cpupid) = self.numa_migrate_check(t, cpu, vma, p, &mut flags);
            // 3.9: `if (target_nid == -1) { put_page(page); continue; }`.
            let Some(target) = target else {
                continue;
            };
            let (c, moved) = self.numa_migrate_misplaced(t, vma, p, target, 1, &mut flags);
            cost += c;
            if moved && p == idx {
                held = c;
            }
            let curr: NodeId = if moved { target } else { local };
            self.task_numa_fault(t, cpu, last_cpupid, curr, 1, flags);
        }
        (cost, held)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fx;
    use crate::kernel::mm::PAGE_SHIFT;
    use crate::kernel::stats::Vm;
    use crate::kernel::{Kernel, MmId, TaskId};
    use crate::physics::costs;

    const BATCH: &str = "numalab.pmd_numa_batch=1";

    /// Two PMDs of 4 KiB pages (1024 pages): the first all on node 1, the
    /// second half on node 0 and half on node 1; a task on node 0's CPU 0.
    fn two_pmds(sets: &[&str]) -> (Kernel, MmId, TaskId) {
        let mut k = fx::kernel("tiny-2n", sets);
        let mm = fx::add_mm(&mut k, 1024 << PAGE_SHIFT, false, None);
        fx::populate(&mut k, mm, 0, 512, fx::n(1));
        fx::populate(&mut k, mm, 512, 768, fx::n(0));
        fx::populate(&mut k, mm, 768, 1024, fx::n(1));
        let t = fx::add_task(&mut k, mm, fx::c(0));
        let end = 1024u64 << PAGE_SHIFT;
        let start = k.mem.mms[mm].vmas[fx::V0].start;
        k.change_prot_numa(t, mm, fx::V0, start, start + end, None);
        (k, mm, t)
    }

    #[test]
    fn a_pmd_of_pages_on_one_node_is_marked_and_a_mixed_one_is_not() {
        let (k, mm, _) = two_pmds(&[BATCH]);
        assert!(k.pmd_numa(mm, fx::V0, 0));
        assert!(!k.pmd_numa(mm, fx::V0, 512), "pages on two nodes");
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 1024);
        let (off, mm, _) = two_pmds(&[]);
        assert!(!off.pmd_numa(mm, fx::V0, 0), "mainline has no pmd_numa");
    }

    #[test]
    fn one_fault_handles_a_marked_pmd_and_counts_every_page() {
        let (mut k, mm, t) = two_pmds(&[BATCH]);
        let (cost, _) = k.do_pmd_numa_page(t, fx::c(0), fx::V0, 7);
        let v = &k.mem.mms[mm].vmas[fx::V0];
        assert!(v.pages[..512].iter().all(|p| !p.protnone));
        assert!(
            v.pages[512..].iter().all(|p| p.protnone),
            "the other PMD waits"
        );
        assert!(!k.pmd_numa(mm, fx::V0, 0));
        // numa_migrate_prep counts each page; none is local to node 0.
        assert_eq!(k.vmstat.get(Vm::NumaHintFaults), 512);
        assert_eq!(k.vmstat.get(Vm::NumaHintFaultsLocal), 0);
        // One exception entry, not 512.
        let pages = 512.0 * (costs::HINT_FAULT_NS - costs::FAULT_ENTRY_NS);
        assert!(cost >= costs::FAULT_ENTRY_NS + pages);
    }

    #[test]
    fn pages_the_policy_keeps_are_not_accounted_to_the_task() {
        // The task on node 1's CPU: every page of the first PMD is local, so
        // mpol_misplaced keeps them all and task_numa_fault never runs.
        let (mut k, mm, t) = two_pmds(&[BATCH]);
        let cpu = fx::c(k.m.cpus.iter().position(|c| c.node == 1).unwrap());
        k.do_pmd_numa_page(t, cpu, fx::V0, 0);
        assert_eq!(k.vmstat.get(Vm::NumaHintFaults), 512);
        assert_eq!(k.vmstat.get(Vm::NumaHintFaultsLocal), 512);
        assert_eq!(k.vmstat.get(Vm::NumaPagesMigrated), 0);
        assert!(
            k.tasks[t].numa.faults.iter().all(|&f| f == 0),
            "no task_numa_fault"
        );
        // The same pages through mainline's per-page fault are accounted.
        let (mut m, mm2, t2) = two_pmds(&[]);
        for p in 0..512 {
            m.do_numa_page(t2, cpu, fx::V0, p);
        }
        assert_eq!(m.vmstat.get(Vm::NumaHintFaults), 512);
        assert!(m.tasks[t2].numa.faults.iter().any(|&f| f > 0));
        assert!(m.mem.mms[mm2].vmas[fx::V0].pages[..512]
            .iter()
            .all(|p| !p.protnone));
        assert!(k.mem.mms[mm].vmas[fx::V0].pages[..512]
            .iter()
            .all(|p| !p.protnone));
    }

    #[test]
    fn a_fault_on_a_mixed_pmd_is_per_page() {
        let (mut k, mm, t) = two_pmds(&[BATCH]);
        k.handle_mm_fault(t, fx::c(0), fx::V0, 600).expect("fault");
        let v = &k.mem.mms[mm].vmas[fx::V0];
        assert!(!v.pages[600].protnone);
        assert_eq!(v.pages[512..].iter().filter(|p| p.protnone).count(), 511);
        assert_eq!(k.vmstat.get(Vm::NumaHintFaults), 1);
        // The marked PMD goes through do_pmd_numa_page from the fault path.
        k.handle_mm_fault(t, fx::c(0), fx::V0, 3).expect("fault");
        assert_eq!(k.vmstat.get(Vm::NumaHintFaults), 513);
        assert!(k.mem.mms[mm].vmas[fx::V0].pages[..512]
            .iter()
            .all(|p| !p.protnone));
    }
}
