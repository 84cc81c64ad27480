//! The list of reproductions `numalab reproduce` knows, in the order
//! `list reproductions` and `reproduce all` show them. A new reproduction
//! is a declaration (reproduce_decl.rs) in its proposal's file and one line
//! here. Left out: running them (reproduce.rs).

use crate::reproduce_decl::Reproduction;

/// All reproductions.
pub fn all() -> Vec<Reproduction> {
    vec![
        crate::reproduce_mainline::numa_balancing_threadlocal(),
        crate::reproduce_mainline::numa_balance_serialize(),
        crate::reproduce_cgroup::per_cgroup_numa_balancing(),
        crate::reproduce_cgroup::per_cgroup_mixed(),
        crate::reproduce_interleave::interleave_task_migration(),
        crate::reproduce_interleave::interleave_task_migration_example(),
        crate::reproduce_async::async_numa_scan(),
        crate::reproduce_async::async_numa_scan_busy(),
        crate::reproduce_sched::sched_numa_integration(),
        crate::reproduce_sched::mainline_ablation(),
    ]
}
