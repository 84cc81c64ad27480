//! Proposal 4's reproductions (per-cgroup NUMA balancing; Chen Yu, "[PATCH
//! v2] sched/numa: Introduce per cgroup numa balance control", LKML, 2025):
//! the posting's own experiment, and the case the proposal exists for, which
//! the posting did not measure.
//!
//! Published numbers are only printed beside the model's (see
//! [`crate::reproduce`]); figures marked unpublished are the model's alone.

use crate::reproduce_decl::{
    Config, Metric, Published, Reproduction, APPROXIMATE, FEW_EVENTS, ONE_RUN_COUNTER,
    SAME_MACHINE_SPREAD,
};
use crate::reproduce_mainline::{
    THREADLOCAL_FIRST_TOUCH as FIRST_TOUCH, THREADLOCAL_SYSTEM_TIME as SYSTEM_TIME,
    THREADLOCAL_TASKS_STAY as TASKS_STAY,
};

/// The posting's experiment: NUMA01_THREADLOCAL in cgroup `/mytest`,
/// `kernel.numa_balancing=4`, `/mytest` disabled vs enabled.
pub fn per_cgroup_numa_balancing() -> Reproduction {
    Reproduction {
        name: "per-cgroup-numa-balancing",
        description: "NUMA01_THREADLOCAL in cgroup /mytest on 4 nodes x 80 CPUs, kernel.numa_balancing=4 (proposal 4) with /mytest's cpu.numa_load_balance 0 vs 1, 6 iterations",
        source: "LKML: Chen Yu, \"[PATCH v2] sched/numa: Introduce per cgroup numa balance control\", 2025-06-25: Sapphire Rapids, 4 nodes, 6 runs: elapsed 3:33 -> 1:54 (0.54), user 29360 s -> ~7600 s, system ~16300 s both; /mytest memory.stat numa_pages_migrated 10238503, numa_pte_updates 24378124, numa_hint_faults 16921590, numa_task_migrated 253, numa_task_swapped 4",
        machine: "spr-4n",
        workloads: &["numa01-threadlocal"],
        cgroup: Some("/mytest"),
        iterations: 6,
        configs: &[
            Config {
                label: "mytest-disabled",
                sets: &["kernel.numa_balancing=4"],
                needs_scan: false,
            },
            Config {
                label: "mytest-enabled",
                sets: &["kernel.numa_balancing=4", "/mytest:cpu.numa_load_balance=1"],
                needs_scan: true,
            },
        ],
        latency_cgroup: None,
        published: || {
            let (off, on) = ("mytest-disabled", "mytest-enabled");
            let cg = "/mytest";
            vec![
                Published::figure(off, Metric::Elapsed, 213.0, SAME_MACHINE_SPREAD).known_miss(FIRST_TOUCH),
                Published::figure(on, Metric::Elapsed, 114.0, SAME_MACHINE_SPREAD).known_miss(FIRST_TOUCH),
                Published::figure(off, Metric::User, 29360.0, SAME_MACHINE_SPREAD).known_miss(FIRST_TOUCH),
                Published::figure(on, Metric::User, 7600.0, SAME_MACHINE_SPREAD).known_miss(FIRST_TOUCH),
                Published::figure(off, Metric::Sys, 16300.0, APPROXIMATE).known_miss(SYSTEM_TIME),
                Published::figure(on, Metric::Sys, 16300.0, APPROXIMATE).known_miss(SYSTEM_TIME),
                Published::figure(on, Metric::RatioVs(off, &Metric::Elapsed), 114.0 / 213.0, SAME_MACHINE_SPREAD).known_miss(FIRST_TOUCH),
                Published::figure(on, Metric::RatioVs(off, &Metric::User), 7600.0 / 29360.0, SAME_MACHINE_SPREAD).known_miss(FIRST_TOUCH),
                Published::figure(on, Metric::MemoryStat(cg, "numa_pages_migrated"), 10238503.0, ONE_RUN_COUNTER).known_miss(TASKS_STAY),
                Published::figure(on, Metric::MemoryStat(cg, "numa_pte_updates"), 24378124.0, ONE_RUN_COUNTER).known_miss(TASKS_STAY),
                Published::figure(on, Metric::MemoryStat(cg, "numa_hint_faults"), 16921590.0, ONE_RUN_COUNTER).known_miss(TASKS_STAY),
                Published::figure(on, Metric::MemoryStat(cg, "numa_task_migrated"), 253.0, FEW_EVENTS).known_miss(TASKS_STAY),
                Published::figure(on, Metric::MemoryStat(cg, "numa_task_swapped"), 4.0, FEW_EVENTS)
                    .known_miss(TASKS_STAY),
                Published::figure(
                    on,
                    Metric::StatRatio(cg, "numa_pages_migrated", "numa_hint_faults"),
                    10238503.0 / 16921590.0,
                    ONE_RUN_COUNTER,
                )
                .known_miss(TASKS_STAY),
                Published::figure(
                    on,
                    Metric::StatRatio(cg, "numa_hint_faults", "numa_pte_updates"),
                    16921590.0 / 24378124.0,
                    ONE_RUN_COUNTER,
                ),
                Published::model_only(off, Metric::MemoryStat(cg, "numa_pte_updates")),
                Published::model_only(off, Metric::MemoryStat(cg, "numa_hint_faults")),
            ]
        },
    }
}

/// The case the proposal exists for: a workload that gains from NUMA
/// balancing (`/gain`) and one that loses (`/lose`) on one machine, under
/// mode 0, mode 1, and mode 4 with only `/gain` enabled.
pub fn per_cgroup_mixed() -> Reproduction {
    Reproduction {
        name: "per-cgroup-mixed",
        description: "one spr-4n machine, /gain (NUMA01_THREADLOCAL's shape on half the CPUs) beside /lose (random writes to a buffer shared by writers on every node): mode 0, mode 1, and mode 4 with only /gain enabled (not published; the model's answer)",
        source: "Chen Yu, \"[PATCH v2] sched/numa: Introduce per cgroup numa balance control\", LKML, 2025-06-25: the proposal's motivation (balancing helps some workloads and hurts others on one machine, so it is switched off everywhere), not measured by the posting; no published figures",
        machine: "spr-4n",
        workloads: &["mixed-cgroups"],
        cgroup: None,
        iterations: 3,
        configs: &[
            Config {
                label: "mode-0",
                sets: &["kernel.numa_balancing=0"],
                needs_scan: false,
            },
            Config {
                label: "mode-1",
                sets: &["kernel.numa_balancing=1"],
                needs_scan: true,
            },
            Config {
                label: "mode-4-gain",
                sets: &["kernel.numa_balancing=4", "/gain:cpu.numa_load_balance=1"],
                needs_scan: true,
            },
        ],
        latency_cgroup: None,
        published: || {
            let mut v = Vec::new();
            for c in ["mode-0", "mode-1", "mode-4-gain"] {
                v.push(Published::model_only(c, Metric::CgroupElapsed("/gain")));
                v.push(Published::model_only(c, Metric::CgroupElapsed("/lose")));
            }
            for base in ["mode-0", "mode-1"] {
                for m in [
                    &Metric::CgroupElapsed("/gain"),
                    &Metric::CgroupElapsed("/lose"),
                    &Metric::Elapsed,
                ] {
                    v.push(Published::model_only("mode-4-gain", Metric::RatioVs(base, m)));
                }
            }
            for c in ["mode-1", "mode-4-gain"] {
                v.push(Published::model_only(c, Metric::MemoryStat("/lose", "numa_pages_migrated")));
                v.push(Published::model_only(c, Metric::MemoryStat("/gain", "numa_pages_migrated")));
            }
            v
        },
    }
}
