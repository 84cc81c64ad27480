//! The cgroup v2 tree: cpuset and cpu/memory controllers as far as NUMA
//! balancing needs them.
//!
//! Each task belongs to one cgroup. `cpuset.cpus` and `cpuset.mems` narrow
//! what a task may use, intersected down the hierarchy (effective values);
//! cpu.stat user/system time and memory.stat NUMA counters are charged to a
//! task's cgroup and summed up the tree when reported. Proposal 4's
//! `cpu.numa_load_balance` is the cgroup's `nlb_enabled` flag (`struct
//! task_group`), 0 when the cgroup is made, read by
//! `tg_numa_balance_enabled` (kernel/numa/cgroup.rs, which also moves a
//! process as a write to `cgroup.procs` does). Other cgroup files
//! (`CGROUP:FILE=VALUE`) are kept as strings without effect.
//!
//! Left out: weights, bandwidth limits, memory limits and reclaim,
//! cpuset partitions, threaded cgroups; memory.stat charges follow the
//! task (the kernel charges hinting faults and migrations to the folio's
//! memcg and PTE updates to the mm owner's, which differ from the task's
//! cgroup only for memory allocated before a move).

use crate::kernel::ids::TiVec;
use crate::kernel::stats::VmStat;
use crate::kernel::CgroupId;
use numalab_topology::{CpuSet, NodeMask};
use std::collections::BTreeMap;

/// One cgroup.
#[derive(Clone, Debug)]
pub struct Cgroup {
    /// Path ("/" for the root).
    pub path: String,
    /// Parent index (None for the root).
    pub parent: Option<CgroupId>,
    /// `cpuset.cpus` as written (None = inherit).
    pub cpus: Option<CpuSet>,
    /// `cpuset.mems` as written (None = inherit).
    pub mems: Option<NodeMask>,
    /// `cpuset.cpus.effective`.
    pub effective_cpus: CpuSet,
    /// `cpuset.mems.effective`.
    pub effective_mems: NodeMask,
    /// Other files written, by name.
    pub files: BTreeMap<String, String>,
    /// memory.stat counters charged directly to this cgroup.
    pub stat: VmStat,
    /// User ns charged directly.
    pub user_ns: f64,
    /// System ns charged directly.
    pub sys_ns: f64,
    /// Tasks that ever ran here directly.
    pub nr_tasks: u64,
    /// `tg->nlb_enabled`: `cpu.numa_load_balance` (proposal 4), 0 when
    /// made.
    pub nlb_enabled: bool,
}

/// The cgroup tree.
#[derive(Clone, Debug)]
pub struct Cgroups {
    /// All cgroups; index 0 is the root.
    pub all: TiVec<CgroupId, Cgroup>,
}

impl Cgroups {
    /// A tree holding only the root, with all CPUs and nodes.
    pub fn new(all_cpus: CpuSet, all_mems: NodeMask) -> Cgroups {
        Cgroups {
            all: TiVec::from(vec![Cgroup {
                path: "/".into(),
                parent: None,
                cpus: None,
                mems: None,
                effective_cpus: all_cpus,
                effective_mems: all_mems,
                files: BTreeMap::new(),
                stat: VmStat::default(),
                user_ns: 0.0,
                sys_ns: 0.0,
                nr_tasks: 0,
                nlb_enabled: false,
            }]),
        }
    }

    /// Index of the cgroup at `path`.
    pub fn find(&self, path: &str) -> Option<CgroupId> {
        let p = normalize(path);
        self.all.position(|c| c.path == p)
    }

    /// Creates `path` (its parent must exist) with the given cpuset values,
    /// checked against the parent's effective sets as the kernel would.
    pub fn mkdir(
        &mut self,
        path: &str,
        cpus: Option<CpuSet>,
        mems: Option<NodeMask>,
    ) -> Result<CgroupId, String> {
        let p = normalize(path);
        if self.find(&p).is_some() {
            return Err(format!("cgroup {p} exists twice"));
        }
        let parent_path = match p.rfind('/') {
            Some(0) => "/".to_string(),
            Some(i) => p[..i].to_string(),
            None => return Err(format!("cgroup path '{path}' must start with '/'")),
        };
        let parent = self.find(&parent_path).ok_or_else(|| {
            format!("cgroup {p}: parent {parent_path} does not exist (list parents first)")
        })?;
        let pc = &self.all[parent];
        let effective_cpus = match &cpus {
            Some(c) => {
                if !c.is_subset(&pc.effective_cpus) || c.is_empty() {
                    return Err(format!(
                        "cgroup {p}: cpuset.cpus {c} is empty or not within the parent's {}",
                        pc.effective_cpus
                    ));
                }
                c.clone()
            }
            None => pc.effective_cpus.clone(),
        };
        let effective_mems = match mems {
            Some(m) => {
                if m.and(pc.effective_mems) != m || m.is_empty() {
                    return Err(format!(
                        "cgroup {p}: cpuset.mems {m} is empty or not within the parent's {}",
                        pc.effective_mems
                    ));
                }
                m
            }
            None => pc.effective_mems,
        };
        Ok(self.all.push_and_get_key(Cgroup {
            path: p,
            parent: Some(parent),
            cpus,
            mems,
            effective_cpus,
            effective_mems,
            files: BTreeMap::new(),
            stat: VmStat::default(),
            user_ns: 0.0,
            sys_ns: 0.0,
            nr_tasks: 0,
            nlb_enabled: false,
        }))
    }

    /// Ancestors of `cg` including itself, from `cg` up to the root.
    pub fn path_to_root(&self, cg: CgroupId) -> Vec<CgroupId> {
        let mut v = vec![cg];
        let mut c = cg;
        while let Some(p) = self.all[c].parent {
            v.push(p);
            c = p;
        }
        v
    }

    /// Whether cgroup `cg` lets NUMA balancing act on its tasks in mode 4.
    /// With `hierarchy`, `cg` and every ancestor below the root must have
    /// `cpu.numa_load_balance=1` (the posting's to-do, after zswap.writeback);
    /// without, only `cg`'s own file counts (the posting as posted). The
    /// root's file governs only the root's own tasks: were it an ancestor
    /// that must be enabled, enabling any cgroup would enable every task
    /// left in the root too, which per-cgroup control exists to avoid.
    pub fn numa_balance_enabled(&self, cg: CgroupId, hierarchy: bool) -> bool {
        if !self.all[cg].nlb_enabled {
            return false;
        }
        if !hierarchy {
            return true;
        }
        let mut c = cg;
        while let Some(p) = self.all[c].parent {
            if self.all[p].parent.is_some() && !self.all[p].nlb_enabled {
                return false;
            }
            c = p;
        }
        true
    }

    /// True when `anc` is `cg` or one of its ancestors.
    pub fn is_ancestor(&self, anc: CgroupId, cg: CgroupId) -> bool {
        self.path_to_root(cg).contains(&anc)
    }
}

fn normalize(path: &str) -> String {
    let t = path.trim().trim_end_matches('/');
    if t.is_empty() {
        "/".into()
    } else if t.starts_with('/') {
        t.to_string()
    } else {
        format!("/{t}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numa_balance_needs_every_ancestor_below_the_root_with_the_hierarchy() {
        let mut cg = Cgroups::new(CpuSet::first_n(4), NodeMask::first_n(2));
        let a = cg.mkdir("/a", None, None).unwrap();
        let b = cg.mkdir("/a/b", None, None).unwrap();
        let root = CgroupId::new(0);
        // Every cgroup starts disabled.
        for c in [root, a, b] {
            assert!(!cg.numa_balance_enabled(c, true));
            assert!(!cg.numa_balance_enabled(c, false));
        }
        cg.all[b].nlb_enabled = true;
        assert!(!cg.numa_balance_enabled(b, true), "parent 0, child 1");
        assert!(
            cg.numa_balance_enabled(b, false),
            "as posted: own file only"
        );
        cg.all[a].nlb_enabled = true;
        assert!(cg.numa_balance_enabled(b, true), "parent 1, child 1");
        // The root's own file is not an ancestor's.
        assert!(!cg.numa_balance_enabled(root, true));
        cg.all[a].nlb_enabled = false;
        assert!(!cg.numa_balance_enabled(b, true));
    }

    #[test]
    fn child_cpuset_must_nest_in_parent() {
        let mut cg = Cgroups::new(CpuSet::first_n(4), NodeMask::first_n(2));
        let a = cg
            .mkdir("/a", Some(CpuSet::parse_list("0-1").unwrap()), None)
            .unwrap();
        assert_eq!(cg.all[a].effective_mems, NodeMask::first_n(2));
        assert!(cg
            .mkdir("/a/b", Some(CpuSet::parse_list("2").unwrap()), None)
            .is_err());
        let b = cg.mkdir("a/b", None, Some(NodeMask::single(1))).unwrap();
        assert_eq!(cg.all[b].effective_cpus.to_string(), "0-1");
        assert!(cg.is_ancestor(a, b) && !cg.is_ancestor(b, a));
        assert!(cg.mkdir("/x/y", None, None).is_err());
    }
}
