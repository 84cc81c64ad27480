//! NUMA balancing policies: one ops table ([`NumaPolicyOps`]) through which
//! every decision NUMA balancing makes goes, in the spirit of sched_ext's
//! `struct sched_ext_ops`. The kernel boots with the policy that
//! `numalab.policy=NAME` names ([`find`]; default `mainline`, the kernel's
//! own code); each callback the policy does not replace is mainline's.
//! docs/policies.md writes one, step by step.
//!
//! # Writing a policy
//!
//! One file in this directory and one line in [`POLICIES`]'s registration
//! below. The file holds a `const` of [`NumaPolicyOps`] naming its own
//! callbacks and taking the rest from mainline:
//!
//! ```ignore
//! pub const MINE: NumaPolicyOps = NumaPolicyOps {
//!     name: "mine",
//!     description: "what it changes, in one line",
//!     should_numa_migrate_memory: mine_should_numa_migrate_memory,
//!     ..MAINLINE
//! };
//! ```
//!
//! A callback that adjusts mainline calls mainline's function
//! (`Kernel::mainline_should_numa_migrate_memory`) for its part; calling
//! the kernel's method of the same name (`k.should_numa_migrate_memory`)
//! would call the policy again. The rest of the model (counters, trace
//! events, costs, the Run record) is the kernel's and follows whatever the
//! policy decides.
//!
//! # Callbacks: when the kernel calls each, what mainline does
//!
//! Scan pacing (fair.c; periods in ms, per task):
//! - `task_scan_min`: called by `task_scan_start`, `task_scan_max`,
//!   `update_task_scan_period` (the clamp) and 3.9's reset
//!   (`numalab.numa_scan_adapt=0`). Mainline: `scan_period_min` spread over
//!   the RSS's scan windows, floored at 2560 MB/s of scanning.
//! - `task_scan_max`: called by `task_numa_placement` (the pass's
//!   `numa_scan_period_max`), the first `task_numa_work` of a task and
//!   `init_numa_balancing` (a new thread's first-scan stagger). Mainline:
//!   `scan_period_max` over the scan windows, scaled up by the numa
//!   group's shared faults.
//! - `task_scan_start`: called by `task_tick_numa` (a task's first scan
//!   tick), the first `task_numa_work`, and `update_scan_period` (a task
//!   moved off its preferred node starts over). Mainline: the minimum,
//!   scaled up by the group's shared faults.
//! - `update_task_scan_period`: called by `task_numa_placement` once per
//!   pass (only with `numalab.numa_scan_adapt=1`). Mainline: double the
//!   period when no fault was local or shared (or a migration failed),
//!   else move it by tenths toward 70 % local or private faults.
//!
//! The fault-time decision (every NUMA hinting fault, `do_numa_page`):
//! - `mpol_misplaced`: called by `numa_migrate_check` for each fault.
//!   Mainline: the VMA's memory policy picks a target (MPOL_F_MOF only;
//!   the default policy targets the faulting CPU's node), MPOL_F_MORON
//!   policies ask `should_numa_migrate_memory`; proposal 3's flagged
//!   interleave answers NUMA_TASK_MIG (no page moves).
//! - `should_numa_migrate_memory`: called by mainline's `mpol_misplaced`
//!   for MORON policies. Mainline: records the fault's cpupid in the page;
//!   early in a task's life private faults migrate at once; otherwise the
//!   two-stage filter (the previous fault came from the same node), then
//!   private faults migrate and shared ones follow the group's CPU and
//!   memory use with 3/4 hysteresis.
//! - `task_numa_fault_private`: called by `task_numa_fault` for every
//!   accounted fault. Mainline: private when the page's last pid is the
//!   task's (or unset); a shared fault may join the other task's numa
//!   group (`task_numa_group`).
//!
//! The preferred node:
//! - `task_numa_placement`: called by `task_numa_fault` once the retry time
//!   has passed; it acts once per scan pass. Mainline: halve the MEM and
//!   CPU averages and add the pass's faults, update the group, prefer the
//!   node with the most memory faults (the group's when grouped,
//!   `preferred_group_nid`), then `update_task_scan_period`.
//!
//! Task moves:
//! - `numa_migrate_preferred`: called by `task_numa_fault` right after
//!   placement. Mainline: set the retry time (min(1 s, period / 16)) and,
//!   off the preferred node, ask for `task_numa_migrate` at the next tick.
//! - `task_numa_migrate`: called at the next tick
//!   (`numa_tick_housekeeping`) for a task that asked and is still off its
//!   preferred node. Mainline: search the preferred node (and others when
//!   the group spans several) with `task_numa_find_cpu`, then move or swap.
//! - `task_numa_compare`: called by `task_numa_find_cpu` for every allowed
//!   CPU of a candidate node. Mainline: the task and group improvement of
//!   a move or a swap with the CPU's task, against load imbalance.
//!
//! The gate:
//! - `task_numa_balance_enabled`: called by `task_numa_work` (numa_scan)
//!   before a scan and by `task_numa_fault` before accounting. Mainline:
//!   the per-task control when set, else proposal 4's cgroup gate in mode
//!   4, else on.
//!
//! # Proposals and their switches
//!
//! The proposals whose change is a decision are switches of the mainline
//! policy, read inside its callbacks, because they combine with each
//! other and with any policy built on mainline: proposal 1's four
//! `numalab.numa_*` (all off = 3.9), proposal 3's
//! `numalab.interleave_numa_balancing`, proposal 4's
//! `kernel.numa_balancing=4`. A few of their reads are mechanism, not
//! decision, and stay where the kernel code is: 3.9's per-fault slow-down
//! and 60 s reset of the scan period (`task_numa_fault`, `task_numa_work`)
//! and its missing restart on a move (`update_scan_period`), the load
//! balancer's NUMA checks (`migrate_degrades_locality`), and the posting's
//! NUMA_TASK_MIG defect in `do_numa_page`. Proposal 2 (asynchronous
//! scanning) changes who runs the scan, not a decision: it is no policy.
//!
//! Left out: policies chosen per task or per cgroup, policies loaded at
//! run time (a policy is compiled in), and a real kernel's policy: real
//! runs take only `mainline`.

mod ops;

pub use ops::NumaPolicyOps;

/// Declares the policy files and [`POLICIES`] from one list: a line
/// `file::CONST` per policy.
macro_rules! policies {
    ($($file:ident::$ops:ident),+ $(,)?) => {
        $(pub mod $file;)+
        /// Every policy, in registration order; the first is the default
        /// (`numalab.policy`'s default names it).
        pub const POLICIES: &[&NumaPolicyOps] = &[$(&$file::$ops),+];
    };
}

// The registry: one line per policy.
policies! {
    mainline::MAINLINE,
    two_touch::TWO_TOUCH,
}

/// The policy named `name`, or one error naming it and listing the
/// known policies.
pub fn find(name: &str) -> Result<&'static NumaPolicyOps, String> {
    POLICIES
        .iter()
        .copied()
        .find(|p| p.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = POLICIES.iter().map(|p| p.name).collect();
            format!(
                "--set numalab.policy={name}: unknown NUMA balancing policy (known: {})",
                known.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_mainline_is_the_default() {
        assert_eq!(POLICIES[0].name, "mainline");
        let default = numalab_knobs::Knobs::default();
        assert_eq!(default.name(numalab_knobs::knob::POLICY), POLICIES[0].name);
        for (i, p) in POLICIES.iter().enumerate() {
            assert!(!p.description.is_empty(), "{}", p.name);
            assert!(
                POLICIES[..i].iter().all(|o| o.name != p.name),
                "{} registered twice",
                p.name
            );
            assert!(numalab_knobs::is_name(p.name), "{}", p.name);
        }
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_known_ones() {
        assert_eq!(find("mainline").map(|p| p.name), Ok("mainline"));
        let e = find("carrefour").unwrap_err();
        assert!(e.contains("numalab.policy=carrefour"), "{e}");
        for p in POLICIES {
            assert!(e.contains(p.name), "{e}");
        }
    }
}
