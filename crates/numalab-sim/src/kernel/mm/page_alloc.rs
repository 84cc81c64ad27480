//! Per-node free memory and page allocation (mm/page_alloc.c).
//!
//! Models the buddy allocator only as a free-page count per node, the
//! zonelist (nodes ordered by distance) and the NUMA allocation counters
//! (`numa_hit`, `numa_miss`, `numa_foreign`, `numa_interleave`,
//! `numa_local`, `numa_other`). Left out: zones, watermarks other than a
//! node being full, fragmentation (a THP allocation succeeds whenever 512
//! base pages are free), reclaim.

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

#[cfg(test)]
mod tests {
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
