//! Memory shared between processes (mm/shmem.c, the rmap side of
//! mm/migrate.c): a `MAP_SHARED | MAP_ANONYMOUS` object that the VMAs of
//! several mms map, as a workload's `[[shared]]` region is.
//!
//! What is whose, as in the kernel. The folio is the object's, one for all
//! mappers: its node and its `last_cpupid` live in [`Shmem::folios`],
//! once. The page tables are each mm's: every mapping is an ordinary
//! [`Vma`] of its mm with [`Vma::shm`] set, whose pages say what that mm's
//! PTE maps (present or not, on which node: the node of the pfn it points
//! to) and whether that PTE is PROT_NONE. So each process's
//! `task_numa_work` marks its own mapping (and counts its own
//! `numa_pte_updates`), each process takes its own hinting faults, and a
//! fault reads and writes the folio's one `last_cpupid`
//! ([`MmState::folio_last_cpupid`]).
//!
//! - First touch by any mapper allocates the folio under the VMA's policy
//!   (the shared policy: every mapping of the object has the same one);
//!   a later fault of another mm on the page finds it in the object and
//!   maps it (`shmem_fault` → `filemap_map_pages`'s one page, a minor
//!   fault: [`Kernel::shmem_map_folio`]).
//! - `do_numa_page` flags the fault `TNF_SHARED` when the folio is mapped
//!   by more than one mm (`folio_likely_mapped_shared`: its mapcount,
//!   exact for small folios) and the VMA is `VM_SHARED`, which every
//!   mapping of the object is ([`MmState::folio_likely_mapped_shared`]).
//! - A migration moves the folio for every mapper: `try_to_migrate` walks
//!   the rmap and `remove_migration_pte` rebuilds each present PTE from
//!   `vm_page_prot`, so every mapping points to the new node and no
//!   mapping keeps a hinting mark ([`MmState::remove_migration_ptes`]).
//!   `migrate_misplaced_folio_prepare` refuses only file-LRU folios
//!   (executable shared ones and dirty ones); shmem folios are swap-backed,
//!   so nothing is refused for being shared.
//!
//! Left out: truncation, swap, `fault_around_bytes` (a write fault on a
//! shared mapping maps one page, `do_shared_fault`; the workloads'
//! streams write), the per-mm `MM_SHMEMPAGES` split of RSS (a mapped page
//! counts in each mapper's RSS, as it does in the kernel's total), threads
//! of two mms racing on one page's first touch, and THP for shmem beyond
//! what a VMA's page size says (`shmem_enabled` is the real run's check).

use super::{Page, Vma, NO_NODE};
use crate::kernel::mm::MmState;
use crate::kernel::stats::Vm;
use crate::kernel::{CpuId, Kernel, MmId, NodeId, TaskId, VmaId};
use crate::physics::costs;

/// What a minor fault on a page already in the object costs: the fault
/// entry, the lookup and mapping under the page-table lock (numalab's
/// estimate: no allocation, no zeroing).
pub const SHMEM_MAP_NS: f64 = costs::FAULT_ENTRY_NS + costs::PTL_HOLD_MAP_NS;

/// One shared object (the shmem inode behind a `MAP_SHARED |
/// MAP_ANONYMOUS` mapping).
#[derive(Clone, Debug)]
pub struct Shmem {
    /// The workload's name for it.
    pub name: String,
    /// `PAGE_SHIFT` or `HPAGE_SHIFT`, as every mapping has it.
    pub page_shift: u32,
    /// The folios: node ([`NO_NODE`] before the first touch) and
    /// `last_cpupid`. `protnone` is unused here: it is each PTE's, in the
    /// mappers' VMAs.
    pub folios: Vec<Page>,
    /// The VMAs that map it (`i_mmap`), in the order they were mapped.
    pub mappers: Vec<(MmId, VmaId)>,
}

impl MmState {
    /// The object named `name`, made for `vma` (of `mm`, to become its
    /// VMA `vid`) if no mm maps it yet, else the existing one: `vma`
    /// becomes one of its mappings. The first mapping fixes the page
    /// size; a later one of another size is an error.
    pub fn shmem_attach(
        &mut self,
        name: &str,
        mm: MmId,
        vid: VmaId,
        vma: &mut Vma,
    ) -> Result<(), String> {
        let s = match self.shmem.iter().position(|s| s.name == name) {
            Some(s) => {
                let o = &self.shmem[s];
                if o.page_shift != vma.page_shift || o.folios.len() != vma.pages.len() {
                    return Err(format!(
                        "shared region {name}: mapped with {} pages of {} KiB, but it has {} of {} KiB",
                        vma.pages.len(),
                        vma.page_size() >> 10,
                        o.folios.len(),
                        (1u64 << o.page_shift) >> 10
                    ));
                }
                s
            }
            None => {
                self.shmem.push(Shmem {
                    name: name.to_string(),
                    page_shift: vma.page_shift,
                    folios: vec![Page::EMPTY; vma.pages.len()],
                    mappers: Vec::new(),
                });
                self.shmem.len() - 1
            }
        };
        self.shmem[s].mappers.push((mm, vid));
        vma.shm = Some(s);
        Ok(())
    }

    /// The memory behind VMA `vma` of `mm`, as a key: a shared object's
    /// first mapping for each of its mappings (they reach the same
    /// lines), the VMA itself otherwise.
    #[inline]
    pub fn region_key(&self, mm: MmId, vma: VmaId) -> (MmId, VmaId) {
        match self.mms[mm].vmas[vma].shm {
            None => (mm, vma),
            Some(s) => self.shmem[s].mappers[0],
        }
    }

    /// `folio_last_cpupid` of page `idx` of VMA `vma` of `mm`: the
    /// object's folio for a shared mapping, else the VMA's own page.
    #[inline]
    pub fn folio_last_cpupid(&self, mm: MmId, vma: VmaId, idx: usize) -> u32 {
        let v = &self.mms[mm].vmas[vma];
        match v.shm {
            None => v.pages[idx].last_cpupid,
            Some(s) => self.shmem[s].folios[idx].last_cpupid,
        }
    }

    /// `folio_xchg_last_cpupid`: stores `cpupid` in the folio of page
    /// `idx` and returns what it held.
    #[inline]
    pub fn folio_xchg_last_cpupid(&mut self, mm: MmId, vma: VmaId, idx: usize, cpupid: u32) -> u32 {
        let v = &mut self.mms[mm].vmas[vma];
        let slot = match v.shm {
            None => &mut v.pages[idx].last_cpupid,
            Some(s) => &mut self.shmem[s].folios[idx].last_cpupid,
        };
        std::mem::replace(slot, cpupid)
    }

    /// `folio_mapcount` of page `idx` of VMA `vma` of `mm`: how many
    /// mappings have a present PTE for it (1 for a private page that is
    /// present).
    pub fn folio_mapcount(&self, mm: MmId, vma: VmaId, idx: usize) -> usize {
        let v = &self.mms[mm].vmas[vma];
        match v.shm {
            None => usize::from(v.pages[idx].nid != NO_NODE),
            Some(s) => self.shmem[s]
                .mappers
                .iter()
                .filter(|&&(m, w)| self.mms[m].vmas[w].pages[idx].nid != NO_NODE)
                .count(),
        }
    }

    /// `folio_likely_mapped_shared(folio) && (vma->vm_flags & VM_SHARED)`
    /// (`do_numa_page`'s test for `TNF_SHARED`): a shared mapping whose
    /// folio more than one mm maps. A private VMA is never `VM_SHARED`.
    pub fn folio_likely_mapped_shared(&self, mm: MmId, vma: VmaId, idx: usize) -> bool {
        self.mms[mm].vmas[vma].shm.is_some() && self.folio_mapcount(mm, vma, idx) > 1
    }

    /// After `mm`'s VMA `vma` allocated page `idx` (its PTE now maps the
    /// new folio): a shared mapping's folio is the object's.
    pub fn shmem_add_folio(&mut self, mm: MmId, vma: VmaId, idx: usize) {
        let v = &self.mms[mm].vmas[vma];
        if let Some(s) = v.shm {
            self.shmem[s].folios[idx].nid = v.pages[idx].nid;
        }
    }

    /// The node of the object's folio behind page `idx` of a shared
    /// mapping, if some mm has allocated it; `None` for a private VMA.
    pub fn shmem_folio_node(&self, mm: MmId, vma: VmaId, idx: usize) -> Option<NodeId> {
        let s = self.mms[mm].vmas[vma].shm?;
        self.shmem[s].folios[idx].node()
    }

    /// `remove_migration_ptes` after the folio of page `idx` (faulted by
    /// `mm`'s VMA `vma`, whose PTE the caller has set) moved to `nid`:
    /// the object's folio is on `nid`, and every other mapping with a
    /// present PTE for it points there, rebuilt from `vm_page_prot` (its
    /// hinting mark gone). Nothing for a private VMA.
    pub fn remove_migration_ptes(&mut self, mm: MmId, vma: VmaId, idx: usize, nid: NodeId) {
        let Some(s) = self.mms[mm].vmas[vma].shm else {
            return;
        };
        self.shmem[s].folios[idx].nid = nid.index() as u8;
        for k in 0..self.shmem[s].mappers.len() {
            let (m, w) = self.shmem[s].mappers[k];
            if (m, w) == (mm, vma) {
                continue;
            }
            let other = &mut self.mms[m].vmas[w];
            if other.pages[idx].nid == NO_NODE {
                continue;
            }
            other.set_page_node(idx, nid);
            other.set_protnone(idx, false);
        }
    }

    /// Checks every object against its mappings (debug invariant): each
    /// present PTE maps the folio's node, and the object's allocated
    /// folios per node (in base pages) go into `used`.
    pub(super) fn check_shmem(&self, used: &mut [u64]) -> Result<(), String> {
        for o in &self.shmem {
            let nr = 1u64 << (o.page_shift - super::PAGE_SHIFT);
            for (i, f) in o.folios.iter().enumerate() {
                if f.nid != NO_NODE {
                    used[f.nid as usize] += nr;
                }
                for &(m, w) in &o.mappers {
                    let p = self.mms[m].vmas[w].pages[i];
                    if p.nid != NO_NODE && p.nid != f.nid {
                        return Err(format!(
                            "shared region {} page {i}: mm {m} maps node {} but the folio is on {}",
                            o.name, p.nid, f.nid
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

impl Kernel {
    /// `shmem_fault` on a page whose folio another mm has already
    /// allocated, on node `nid`: task `t`'s mm maps it (a minor fault, no
    /// allocation). Returns the fault's CPU time (ns), which the machine's
    /// `fault_cost_scale` scales like the first-touch path's own work.
    pub fn shmem_map_folio(
        &mut self,
        t: TaskId,
        _cpu: CpuId,
        vma: VmaId,
        idx: usize,
        nid: NodeId,
    ) -> f64 {
        let mm = self.tasks[t].mm;
        self.mem.mms[mm].vmas[vma].set_page_node(idx, nid);
        self.count_memcg_event(t, Vm::PgFault, 1);
        let k = &self.m.kernel;
        match k.fault_cost_scale {
            Some(f) => SHMEM_MAP_NS * f / k.cost_scale,
            None => SHMEM_MAP_NS,
        }
    }
}
