//! The `mainline` policy, the default: every callback is the kernel's own
//! code, where a kernel developer looks for it (scan.rs, fault.rs,
//! placement.rs, migrate.rs, cgroup.rs), under its kernel name with a
//! `mainline_` prefix. It also carries the proposals whose change is a
//! decision, as the switches they are in the kernel or their postings:
//! proposal 1's `numalab.numa_*` (read in `task_numa_placement`,
//! `should_numa_migrate_memory`, `task_numa_fault_private`,
//! `numa_migrate_preferred`), proposal 3's
//! `numalab.interleave_numa_balancing` (`mpol_misplaced`) and proposal 4's
//! `kernel.numa_balancing=4` with `cpu.numa_load_balance`
//! (`task_numa_balance_enabled`). A policy built on mainline
//! (`..MAINLINE`) keeps them.
//!
//! Left out: nothing; this file only names the functions.

use super::ops::NumaPolicyOps;
use crate::kernel::Kernel;

/// Linux's NUMA balancing (kernel/sched/fair.c, mm/mempolicy.c) with the
/// proposals' switches at their settings.
pub const MAINLINE: NumaPolicyOps = NumaPolicyOps {
    name: "mainline",
    description: "the kernel's NUMA balancing (the default); proposals 1, 3 and 4 are its switches",
    task_scan_min: Kernel::mainline_task_scan_min,
    task_scan_max: Kernel::mainline_task_scan_max,
    task_scan_start: Kernel::mainline_task_scan_start,
    update_task_scan_period: Kernel::mainline_update_task_scan_period,
    mpol_misplaced: Kernel::mainline_mpol_misplaced,
    should_numa_migrate_memory: Kernel::mainline_should_numa_migrate_memory,
    task_numa_fault_private: Kernel::mainline_task_numa_fault_private,
    task_numa_placement: Kernel::mainline_task_numa_placement,
    numa_migrate_preferred: Kernel::mainline_numa_migrate_preferred,
    task_numa_migrate: Kernel::mainline_task_numa_migrate,
    task_numa_compare: Kernel::mainline_task_numa_compare,
    task_numa_balance_enabled: Kernel::mainline_task_numa_balance_enabled,
};
