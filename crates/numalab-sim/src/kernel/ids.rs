//! Typed ids for the model's objects: tasks, CPUs, nodes, address spaces,
//! VMAs and cgroups.
//!
//! Each id is a newtype over the index of its object in the kernel's
//! tables, so passing a CPU where a task is meant, or indexing the task
//! table with a node, is a compile error. The tables are
//! [`typed_index_collections::TiVec`]s indexed by their id type
//! (`k.tasks[t]`, `k.rq[cpu]`). `Display` prints the bare number, as the
//! kernel's trace points and messages do.
//!
//! The topology crate (`Machine`, `CpuSet`, `NodeMask`) speaks plain
//! `usize`; conversions happen where the kernel reads it ([`CpuId::new`],
//! [`NodeId::index`], [`CpuSetExt`], [`NodeMaskExt`]).
//!
//! Left out: pids, which are the kernel's numbers, not table indices, and
//! stay `u64`.

use numalab_topology::{CpuSet, NodeMask};
use std::fmt;

pub use typed_index_collections::{TiSlice, TiVec};

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(usize);

        impl $name {
            /// The id of the object at table index `i`.
            #[inline]
            pub const fn new(i: usize) -> Self {
                $name(i)
            }

            /// The table index.
            #[inline]
            pub const fn index(self) -> usize {
                self.0
            }

            /// The ids `0..n`, in order.
            pub fn range(n: usize) -> impl DoubleEndedIterator<Item = $name> + Clone {
                (0..n).map($name)
            }
        }

        impl From<usize> for $name {
            #[inline]
            fn from(i: usize) -> Self {
                $name(i)
            }
        }

        impl From<$name> for usize {
            #[inline]
            fn from(id: $name) -> usize {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

id!(
    /// A task: index into `Kernel::tasks` (pid = first pid + index in runs).
    TaskId
);
id!(
    /// A CPU, numbered as the machine numbers it; indexes `Sched::rq`.
    CpuId
);
id!(
    /// A NUMA node, numbered as the machine numbers it.
    NodeId
);
id!(
    /// An address space: index into `MmState::mms`.
    MmId
);
id!(
    /// A VMA of an address space: index into `Mm::vmas` (the workload's
    /// region number).
    VmaId
);
id!(
    /// A cgroup: index into `Cgroups::all` (0 is the root).
    CgroupId
);

/// Typed access to a [`CpuSet`], which numbers CPUs as plain `usize`.
pub trait CpuSetExt {
    /// True when `cpu` is in the set.
    fn has(&self, cpu: CpuId) -> bool;
    /// The CPUs of the set, lowest first.
    fn cpu_ids(&self) -> impl Iterator<Item = CpuId> + '_;
}

impl CpuSetExt for CpuSet {
    #[inline]
    fn has(&self, cpu: CpuId) -> bool {
        self.contains(cpu.index())
    }

    #[inline]
    fn cpu_ids(&self) -> impl Iterator<Item = CpuId> + '_ {
        self.iter().map(CpuId::new)
    }
}

/// Typed access to a [`NodeMask`], which numbers nodes as plain `usize`.
pub trait NodeMaskExt {
    /// True when `nid` is in the mask.
    fn has(&self, nid: NodeId) -> bool;
    /// The nodes of the mask, lowest first.
    fn node_ids(&self) -> impl Iterator<Item = NodeId>;
}

impl NodeMaskExt for NodeMask {
    #[inline]
    fn has(&self, nid: NodeId) -> bool {
        self.contains(nid.index())
    }

    #[inline]
    fn node_ids(&self) -> impl Iterator<Item = NodeId> {
        self.iter().map(NodeId::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_bare_number_and_honours_width() {
        assert_eq!(TaskId::new(7).to_string(), "7");
        assert_eq!(
            format!("{:>3}|{:<3}|", CpuId::new(5), NodeId::new(1)),
            "  5|1  |"
        );
    }

    #[test]
    fn tables_index_by_their_id() {
        let mut v: TiVec<TaskId, &str> = TiVec::new();
        let a = v.push_and_get_key("a");
        let b = v.push_and_get_key("b");
        assert_eq!((a, b), (TaskId::new(0), TaskId::new(1)));
        assert_eq!(v[b], "b");
        assert_eq!(
            v.keys().collect::<Vec<_>>(),
            TaskId::range(2).collect::<Vec<_>>()
        );
    }
}
