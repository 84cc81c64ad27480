//! Memory management's own state ([`MmState`]): the address spaces, the
//! objects several of them map (shmem), each
//! node's free memory and zonelist, and the locks of the fault and
//! migration paths (`mmap_lock`, the PTL, `zone->lock`, `lru_lock`, the
//! per-CPU page lists), which the kernel keeps in `mm_struct`, `pg_data_t`
//! and `struct zone`.
//!
//! Left out: the functions on this state (fault.rs, page_alloc.rs, tlb.rs,
//! kernel/locking), and the global event counters (`/proc/vmstat`), which
//! stay on [`Kernel`](crate::kernel::Kernel) because the scheduler and NUMA
//! balancing count into them as much as mm does.

use crate::kernel::ids::{TiSlice, TiVec};
use crate::kernel::locking::Locks;
use crate::kernel::mm::page_alloc::{zonelists, NodeMem};
use crate::kernel::mm::shmem::Shmem;
use crate::kernel::mm::{Mm, PAGE_SHIFT};
use crate::kernel::sysctl::Knobs;
use crate::kernel::{MmId, NodeId};
use numalab_topology::Machine;

/// Memory management's state.
pub struct MmState {
    /// Address spaces.
    pub mms: TiVec<MmId, Mm>,
    /// Free memory per node; read with [`MmState::nodes()`].
    pub(in crate::kernel) nodes: TiVec<NodeId, NodeMem>,
    /// Fault-path locks, on the contended-line model (kernel/locking/);
    /// read with [`MmState::locks()`].
    pub(in crate::kernel) locks: Locks,
    /// Memory-cgroup charging: per-CPU stocks and the page counters'
    /// lines (kernel/mm/memcontrol.rs).
    pub(in crate::kernel) memcg: super::memcontrol::MemcgCharge,
    /// Zonelists: nodes by distance from each node (`build_zonelists`),
    /// fixed at boot.
    pub(in crate::kernel) zonelists: TiVec<NodeId, Vec<NodeId>>,
    /// Objects several mms map (`MAP_SHARED`), by the index a mapping's
    /// [`Vma::shm`](crate::kernel::mm::Vma::shm) holds.
    pub shmem: Vec<Shmem>,
    /// Each node's min watermark and step between watermarks, worked out
    /// on first use (kernel/numa/fault.rs): they follow from the nodes'
    /// sizes, fixed at boot, and the NUMA fault path reads them at every
    /// migration.
    pub(in crate::kernel) wmarks: std::cell::OnceCell<TiVec<NodeId, (u64, u64)>>,
}

impl MmState {
    /// Memory management of machine `m` at boot with knobs `knobs`: every
    /// node's memory free, no address spaces.
    pub fn new(m: &Machine, knobs: &Knobs) -> MmState {
        let nodes = m
            .nodes
            .iter()
            .map(|n| NodeMem {
                total_pages: n.mem_bytes >> PAGE_SHIFT,
                free_pages: n.mem_bytes >> PAGE_SHIFT,
            })
            .collect();
        MmState {
            mms: TiVec::new(),
            nodes,
            locks: Locks::new(m, knobs),
            memcg: Default::default(),
            zonelists: zonelists(&m.distance),
            shmem: Vec::new(),
            wmarks: std::cell::OnceCell::new(),
        }
    }

    /// Free memory per node.
    pub fn nodes(&self) -> &TiSlice<NodeId, NodeMem> {
        &self.nodes
    }

    /// Fault-path locks and their switches.
    pub fn locks(&self) -> &Locks {
        &self.locks
    }

    /// Checks memory management's invariants (debug builds and tests):
    /// every VMA's own summaries right, and every node's allocated pages
    /// the pages mapped there.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut used = vec![0u64; self.nodes.len()];
        for mm in &self.mms {
            for v in &mm.vmas {
                v.check_invariants()?;
                // A shared object's folios are counted once, below.
                if v.shm.is_some() {
                    continue;
                }
                for (n, p) in v.pages_by_node().into_iter().enumerate() {
                    used[n] += p * v.nr_base_pages();
                }
            }
        }
        self.check_shmem(&mut used)?;
        for (nm, (n, u)) in self.nodes.iter().zip(used.iter().enumerate()) {
            if nm.total_pages - nm.free_pages != *u {
                return Err(format!(
                    "node {n}: {} pages allocated but {} mapped",
                    nm.total_pages - nm.free_pages,
                    u
                ));
            }
        }
        Ok(())
    }
}
