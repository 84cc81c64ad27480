//! Memory policies (mm/mempolicy.c): the modes, their legality rules, and
//! which node a new page goes to.
//!
//! Models `set_mempolicy(2)`/`mbind(2)` validation (`sanitize_mpol_flags`,
//! `mpol_new`), policy lookup (VMA policy, else task policy, else the
//! default local policy) and `policy_nodemask`/`interleave_nid` for
//! allocation. The NUMA-balancing side (`mpol_misplaced`) belongs to the
//! balancing model. Proposal 3 (`numalab.interleave_numa_balancing`, not
//! mainline) lets MPOL_INTERLEAVE take MPOL_F_NUMA_BALANCING, which sets
//! MPOL_F_MOF|MPOL_F_MOFT (scan it, move tasks, never its pages). The
//! kernel's own types ([`MpolMode`], [`MpolRequest`]) are what a call takes;
//! the engine turns a workload's policy into them. Left out:
//! MPOL_WEIGHTED_INTERLEAVE, MPOL_F_STATIC_NODES / MPOL_F_RELATIVE_NODES
//! remapping, shared-memory policies, home nodes.

use crate::kernel::ids::TiSlice;
use crate::kernel::NodeId;
use numalab_knobs::knob::InterleaveNumaBalancing;
use numalab_topology::NodeMask;
use smallvec::SmallVec;

/// A memory policy mode, as `include/uapi/linux/mempolicy.h` names them
/// (the ones the model has; MPOL_WEIGHTED_INTERLEAVE is left out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpolMode {
    /// MPOL_DEFAULT: allocate on the faulting CPU's node.
    Default,
    /// MPOL_PREFERRED: the one given node first, then fall back.
    Preferred,
    /// MPOL_BIND: only the given nodes.
    Bind,
    /// MPOL_INTERLEAVE: round-robin over the given nodes, page by page.
    Interleave,
    /// MPOL_LOCAL: the faulting CPU's node (as MPOL_DEFAULT for allocation).
    Local,
    /// MPOL_PREFERRED_MANY: the given nodes first, then fall back.
    PreferredMany,
}

/// The arguments of a `set_mempolicy(2)`/`mbind(2)` call, before
/// [`mpol_new`] validates them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpolRequest {
    /// The mode.
    pub mode: MpolMode,
    /// The nodemask, as node numbers (the machine may not have them all).
    pub nodes: Vec<usize>,
    /// MPOL_F_NUMA_BALANCING, the one mode flag the model has.
    pub numa_balancing: bool,
}

/// A validated memory policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemPolicy {
    /// Mode.
    pub mode: MpolMode,
    /// Nodes of the policy (empty for Default/Local).
    pub nodes: NodeMask,
    /// MPOL_F_MOF: migrate on fault (NUMA balancing may act on this memory).
    pub mof: bool,
    /// MPOL_F_MORON: migrate towards the referencing node.
    pub moron: bool,
    /// MPOL_F_MOFT (proposal 3, not mainline): task migration on fault but
    /// no page migration; set on MPOL_INTERLEAVE|MPOL_F_NUMA_BALANCING.
    pub moft: bool,
}

impl MemPolicy {
    /// MPOL_DEFAULT, which the kernel's `preferred_node_policy[]` backs with
    /// MOF|MORON so NUMA balancing applies to default-policy memory.
    pub const DEFAULT: MemPolicy = MemPolicy {
        mode: MpolMode::Default,
        nodes: NodeMask::NONE,
        mof: true,
        moron: true,
        moft: false,
    };
}

/// Why a policy was refused, as the syscall's errno would say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Einval(pub String);

/// Validates a policy request the way `set_mempolicy(2)`/`mbind(2)` do and
/// returns the policy the kernel would store. `nr_nodes` is the number of
/// nodes with memory; `il` is `numalab.interleave_numa_balancing`, which
/// decides whether MPOL_INTERLEAVE takes MPOL_F_NUMA_BALANCING.
pub fn mpol_new(
    spec: &MpolRequest,
    nr_nodes: usize,
    il: InterleaveNumaBalancing,
) -> Result<MemPolicy, Einval> {
    let mut nodes = NodeMask::NONE;
    for &n in &spec.nodes {
        if n >= nr_nodes {
            return Err(Einval(format!(
                "node {n} does not exist (the machine has {nr_nodes})"
            )));
        }
        nodes.insert(n);
    }
    match spec.mode {
        MpolMode::Default | MpolMode::Local => {
            if !nodes.is_empty() {
                return Err(Einval(format!("{:?} takes no nodes", spec.mode)));
            }
        }
        MpolMode::Preferred => {
            if nodes.len() != 1 {
                return Err(Einval("preferred takes exactly one node".into()));
            }
        }
        MpolMode::Bind | MpolMode::PreferredMany | MpolMode::Interleave => {
            if nodes.is_empty() {
                return Err(Einval(format!("{:?} needs at least one node", spec.mode)));
            }
        }
    }
    // sanitize_mpol_flags(): MPOL_F_NUMA_BALANCING is accepted with BIND
    // (5.12) and PREFERRED_MANY (6.10) only, and sets MOF|MORON; anything
    // else is EINVAL. Proposal 3 adds INTERLEAVE, setting MOF|MOFT.
    let flag = spec.numa_balancing;
    let il_ok = spec.mode == MpolMode::Interleave && il != InterleaveNumaBalancing::Off;
    if flag && !matches!(spec.mode, MpolMode::Bind | MpolMode::PreferredMany) && !il_ok {
        let hint = if spec.mode == MpolMode::Interleave {
            " (mainline; proposal 3 allows it with --set numalab.interleave_numa_balancing=on)"
        } else {
            ""
        };
        return Err(Einval(format!(
            "MPOL_F_NUMA_BALANCING is only valid with MPOL_BIND or MPOL_PREFERRED_MANY, not {:?}{hint}",
            spec.mode
        )));
    }
    if matches!(spec.mode, MpolMode::Default | MpolMode::Local) {
        return Ok(MemPolicy::DEFAULT);
    }
    let moft = flag && spec.mode == MpolMode::Interleave;
    Ok(MemPolicy {
        mode: spec.mode,
        nodes,
        mof: flag,
        moron: flag && !moft,
        moft,
    })
}

/// Nodes in the order an allocation tries them: inline up to 16 nodes,
/// so a page fault's allocation does not touch the heap.
pub type NodeOrder = SmallVec<[NodeId; 16]>;

/// The node list an allocation may use, in the order it tries them:
/// `policy_nodemask` plus the zonelist fallback (nearest first).
/// `local` is the allocating CPU's node, `il_index` picks the interleave
/// node, `mems` is the cpuset's mems_allowed, `by_distance[n]` lists all
/// nodes by distance from `n`.
pub fn alloc_order(
    pol: &MemPolicy,
    local: NodeId,
    il_index: u64,
    mems: NodeMask,
    by_distance: &TiSlice<NodeId, Vec<NodeId>>,
) -> NodeOrder {
    // NodeMask (numalab-topology) numbers nodes as plain usize.
    let has = |m: NodeMask, n: NodeId| m.contains(n.index());
    let allowed = |n: NodeId| has(mems, n);
    let mut order = NodeOrder::new();
    match pol.mode {
        MpolMode::Default | MpolMode::Local => {
            order.extend(by_distance[local].iter().copied().filter(|&n| allowed(n)));
        }
        MpolMode::Preferred | MpolMode::PreferredMany => {
            let pref = pol.nodes.and(mems);
            let start = if has(pref, local) {
                local
            } else {
                pref.first().map_or(local, NodeId::new)
            };
            let mut first: NodeOrder = by_distance[start]
                .iter()
                .copied()
                .filter(|&n| has(pref, n))
                .collect();
            let rest = by_distance[start]
                .iter()
                .copied()
                .filter(|&n| allowed(n) && !has(pref, n));
            first.extend(rest);
            order = first;
        }
        MpolMode::Bind => {
            let m = pol.nodes.and(mems);
            let m = if m.is_empty() { pol.nodes } else { m };
            order.extend(by_distance[local].iter().copied().filter(|&n| has(m, n)));
        }
        MpolMode::Interleave => {
            let m = pol.nodes.and(mems);
            let m = if m.is_empty() { pol.nodes } else { m };
            let nth = (il_index % m.len() as u64) as usize;
            let target = NodeId::new(m.iter().nth(nth).expect("nth < count"));
            order.push(target);
            order.extend(
                by_distance[target]
                    .iter()
                    .copied()
                    .filter(|&n| n != target && allowed(n)),
            );
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ids::TiVec;

    fn mpol_new_off(s: &MpolRequest, nr_nodes: usize) -> Result<MemPolicy, Einval> {
        mpol_new(s, nr_nodes, InterleaveNumaBalancing::Off)
    }

    fn spec(mode: MpolMode, nodes: &[usize], nb: bool) -> MpolRequest {
        MpolRequest {
            mode,
            nodes: nodes.to_vec(),
            numa_balancing: nb,
        }
    }

    #[test]
    fn numa_balancing_flag_only_with_bind_and_preferred_many() {
        let p = mpol_new_off(&spec(MpolMode::Bind, &[0], true), 2).unwrap();
        assert!(p.mof && p.moron, "MPOL_F_NUMA_BALANCING sets MOF|MORON");
        assert!(
            mpol_new_off(&spec(MpolMode::Bind, &[0], true), 2)
                .unwrap()
                .mof
        );
        assert!(mpol_new_off(&spec(MpolMode::PreferredMany, &[0, 1], true), 2).is_ok());
        for m in [MpolMode::Interleave, MpolMode::Preferred, MpolMode::Default] {
            let nodes: &[usize] = if m == MpolMode::Default { &[] } else { &[0] };
            let e = mpol_new_off(&spec(m, nodes, true), 2).unwrap_err();
            assert!(e.0.contains("MPOL_F_NUMA_BALANCING"), "{e:?}");
        }
    }

    #[test]
    fn plain_bind_and_interleave_do_not_migrate_on_fault() {
        assert!(
            !mpol_new_off(&spec(MpolMode::Bind, &[1], false), 2)
                .unwrap()
                .mof
        );
        assert!(
            !mpol_new_off(&spec(MpolMode::Interleave, &[0, 1], false), 2)
                .unwrap()
                .mof
        );
        let d = MemPolicy::DEFAULT;
        assert!(d.mof && d.moron);
    }

    #[test]
    fn bad_node_lists_are_einval() {
        assert!(mpol_new_off(&spec(MpolMode::Bind, &[], false), 2).is_err());
        assert!(mpol_new_off(&spec(MpolMode::Bind, &[2], false), 2).is_err());
        assert!(mpol_new_off(&spec(MpolMode::Preferred, &[0, 1], false), 2).is_err());
    }

    #[test]
    fn interleave_rotates_and_bind_stays_inside_its_nodes() {
        let n = |v: &[usize]| v.iter().map(|&i| NodeId::new(i)).collect::<Vec<_>>();
        let d: TiVec<NodeId, Vec<NodeId>> =
            TiVec::from(vec![n(&[0, 1, 2]), n(&[1, 0, 2]), n(&[2, 0, 1])]);
        let all = NodeMask::first_n(3);
        let il = mpol_new_off(&spec(MpolMode::Interleave, &[0, 2], false), 3).unwrap();
        let firsts: Vec<NodeId> = (0..4)
            .map(|i| alloc_order(&il, NodeId::new(1), i, all, &d)[0])
            .collect();
        assert_eq!(firsts, n(&[0, 2, 0, 2]));
        let b = mpol_new_off(&spec(MpolMode::Bind, &[2], false), 3).unwrap();
        assert_eq!(
            alloc_order(&b, NodeId::new(0), 0, all, &d).to_vec(),
            n(&[2])
        );
        assert_eq!(
            alloc_order(&MemPolicy::DEFAULT, NodeId::new(1), 0, all, &d).to_vec(),
            n(&[1, 0, 2])
        );
    }
}
