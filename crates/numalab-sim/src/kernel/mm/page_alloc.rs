//! Per-node free memory and page allocation (mm/page_alloc.c).
//!
//! Models the buddy allocator only as a free-page count per node, the
//! zonelist (nodes ordered by distance) and the NUMA allocation counters
//! (`numa_hit`, `numa_miss`, `numa_foreign`, `numa_interleave`,
//! `numa_local`, `numa_other`), and the per-CPU page lists in front of
//! `zone->lock` ([`Pcp`]): an allocation takes a page from the CPU's list
//! for the node, and an empty list is refilled with `batch` pages under
//! `zone->lock` (`rmqueue_bulk`); a free puts the page on the list, and a
//! list above `high` gives `batch` pages back under the lock
//! (`free_pcppages_bulk`). `batch` and `high` are sized as
//! `zone_batchsize()` and `zone_highsize()` size them. Left out: zones
//! (one per node), watermarks other than a node being full, fragmentation
//! (a THP allocation succeeds whenever 512 base pages are free), reclaim,
//! the dynamic `pcp->high` between `high_min` and `high_max` (6.7+: the
//! list keeps `high_min`), the larger refills of `pcp->alloc_factor`, and
//! the high-order lists' own batch (a THP takes the lock once per folio).

use crate::kernel::ids::{TiSlice, TiVec};
use crate::kernel::NodeId;

/// Free memory of one node, in base pages.
#[derive(Clone, Debug)]
pub struct NodeMem {
    /// Capacity in base pages.
    pub total_pages: u64,
    /// Free base pages.
    pub free_pages: u64,
}

/// Nodes of each node ordered by SLIT distance, ties by node id (the
/// zonelist order of `build_zonelists`).
pub fn zonelists(distance: &[Vec<u32>]) -> TiVec<NodeId, Vec<NodeId>> {
    NodeId::range(distance.len())
        .map(|n| {
            let mut v: Vec<NodeId> = NodeId::range(distance.len()).collect();
            v.sort_by_key(|&m| (distance[n.index()][m.index()], m != n, m));
            v
        })
        .collect()
}

/// Takes `nr` base pages from the first node in `order` that has them.
/// Returns the node, or `None` when every allowed node is full.
pub fn alloc_pages_on(
    nodes: &mut TiSlice<NodeId, NodeMem>,
    order: &[NodeId],
    nr: u64,
) -> Option<NodeId> {
    for &n in order {
        if nodes[n].free_pages >= nr {
            nodes[n].free_pages -= nr;
            return Some(n);
        }
    }
    None
}

/// `zone_batchsize()` (mm/page_alloc.c): pages moved per refill or drain
/// of a per-CPU list, for a zone of `managed_pages`: about 0.1 % of the
/// zone or 1 MiB, whichever is smaller, a quarter of it, rounded as
/// `rounddown_pow_of_two(batch + batch / 2) - 1` (63 for any zone of 1 GiB
/// or more).
pub fn zone_batchsize(managed_pages: u64) -> u32 {
    let mut batch = (managed_pages >> 10).min((1 << 20) >> super::PAGE_SHIFT) / 4;
    if batch < 1 {
        batch = 1;
    }
    let x = batch + batch / 2;
    let pow = 1u64 << (63 - x.leading_zeros());
    (pow - 1).max(1) as u32
}

/// `zone_highsize()` (mm/page_alloc.c, `high_fraction` 0): the zone's low
/// watermark split over the zone's CPUs plus all online CPUs, at least
/// four batches.
pub fn zone_highsize(low_wmark: u64, batch: u32, node_cpus: usize, online_cpus: usize) -> u32 {
    let mut split = (node_cpus + online_cpus) as u64;
    if split == 0 {
        split = online_cpus.max(1) as u64;
    }
    let high = low_wmark / split;
    high.max(u64::from(batch) << 2) as u32
}

/// The per-CPU page lists: pages held per (CPU, node), with each node's
/// `batch` and `high`.
#[derive(Clone, Debug, Default)]
pub struct Pcp {
    nr_nodes: usize,
    count: Vec<u32>,
    batch: Vec<u32>,
    high: Vec<u32>,
}

impl Pcp {
    /// Empty lists for `nr_cpus` CPUs with each node's (batch, high).
    pub fn new(nr_cpus: usize, sizes: &[(u32, u32)]) -> Pcp {
        Pcp {
            nr_nodes: sizes.len(),
            count: vec![0; nr_cpus * sizes.len()],
            batch: sizes.iter().map(|s| s.0).collect(),
            high: sizes.iter().map(|s| s.1).collect(),
        }
    }

    /// True once sized.
    pub fn is_sized(&self) -> bool {
        self.nr_nodes > 0
    }

    /// `batch` and `high` of node `nid`.
    pub fn sizes(&self, nid: NodeId) -> (u32, u32) {
        (self.batch[nid.index()], self.high[nid.index()])
    }

    /// One base page taken from `cpu`'s list for `nid`. Returns the pages
    /// `rmqueue_bulk` moved from the buddy lists under `zone->lock` first
    /// (0 when the list had one).
    pub fn alloc(&mut self, cpu: usize, nid: NodeId) -> u32 {
        let i = cpu * self.nr_nodes + nid.index();
        let mut moved = 0;
        if self.count[i] == 0 {
            moved = self.batch[nid.index()];
            self.count[i] = moved;
        }
        self.count[i] -= 1;
        moved
    }

    /// One base page put on `cpu`'s list for `nid`. Returns the pages
    /// `free_pcppages_bulk` gave back under `zone->lock` (0 when the list
    /// stays at or below `high`).
    pub fn free(&mut self, cpu: usize, nid: NodeId) -> u32 {
        let i = cpu * self.nr_nodes + nid.index();
        self.count[i] += 1;
        if self.count[i] > self.high[nid.index()] {
            let b = self.batch[nid.index()].min(self.count[i]);
            self.count[i] -= b;
            return b;
        }
        0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pcp_sizes_match_the_kernel_formulas() {
        // 256 GiB node: 1 MiB cap -> 256 / 4 = 64 -> rounddown(96) - 1.
        assert_eq!(zone_batchsize(256 << 18), 63);
        // 16 MiB zone: 4096 >> 10 = 4 -> 1 -> rounddown(1) - 1 -> 1 (kept >= 1).
        assert_eq!(zone_batchsize(4096), 1);
        // 256 MiB: 65536 >> 10 = 64 -> 16 -> rounddown(24) - 1 = 15.
        assert_eq!(zone_batchsize(65536), 15);
        assert_eq!(zone_highsize(75_300, 63, 80, 320), 252);
        assert_eq!(zone_highsize(1_000_000, 63, 80, 320), 2500);
    }

    #[test]
    fn pcp_refills_and_drains_by_batch() {
        let n0 = NodeId::new(0);
        let mut p = Pcp::new(2, &[(4, 8)]);
        assert_eq!(p.alloc(0, n0), 4);
        assert_eq!((p.alloc(0, n0), p.alloc(0, n0), p.alloc(0, n0)), (0, 0, 0));
        assert_eq!(p.alloc(0, n0), 4);
        // CPU 1's list is its own.
        assert_eq!(p.alloc(1, n0), 4);
        let drained: u32 = (0..9).map(|_| p.free(1, n0)).sum();
        assert_eq!(drained, 4);
    }

    use super::*;

    #[test]
    fn zonelist_is_nearest_first() {
        let d = vec![vec![10, 21, 12], vec![21, 10, 21], vec![12, 21, 10]];
        let z = zonelists(&d);
        let n = |v: &[usize]| v.iter().map(|&i| NodeId::new(i)).collect::<Vec<_>>();
        assert_eq!(z[NodeId::new(0)], n(&[0, 2, 1]));
        assert_eq!(z[NodeId::new(1)], n(&[1, 0, 2]));
    }

    #[test]
    fn full_node_falls_back_in_order() {
        let mut nodes: TiVec<NodeId, NodeMem> = TiVec::from(vec![
            NodeMem {
                total_pages: 2,
                free_pages: 1,
            },
            NodeMem {
                total_pages: 2,
                free_pages: 2,
            },
        ]);
        let (n0, n1) = (NodeId::new(0), NodeId::new(1));
        assert_eq!(alloc_pages_on(&mut nodes, &[n0, n1], 1), Some(n0));
        assert_eq!(alloc_pages_on(&mut nodes, &[n0, n1], 1), Some(n1));
        assert_eq!(alloc_pages_on(&mut nodes, &[n0], 1), None);
    }
}
