//! The counters a Run record carries: which /proc/vmstat and memory.stat
//! counters are recorded, which are sampled into the time series, which
//! scheduler tracepoints are counted (their `lab` keys are
//! [`crate::lab::TRACE`]).
//!
//! Declared once here for the model and the real runner. Where the two
//! lists differ, the doc comment of the list says why. Left out: the
//! model's own counter array (`numalab-sim`'s `VM_NAMES`), which names
//! what the model counts; its test checks that every one of them passes
//! [`is_recorded_vmstat`].

/// /proc/vmstat counters a real run samples into its time series (those
/// the running kernel has), in column order, as deltas since the start.
pub const VMSTAT_SERIES: [&str; 9] = [
    "numa_pte_updates",
    "numa_huge_pte_updates",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pages_migrated",
    "pgmigrate_success",
    "pgmigrate_fail",
    "thp_migration_success",
    "numa_local",
];

/// /proc/vmstat counters the model samples into its time series, in
/// column order, as running totals. A subset of [`VMSTAT_SERIES`] in the
/// same order: the model's series was fixed with version 1 of the format,
/// and every model record would change if it grew (the record's end-of-run
/// `vmstat` has all of the model's counters anyway). A real run samples
/// more because reading /proc/vmstat costs the same for nine as for four.
pub const MODEL_VMSTAT_SERIES: [&str; 4] = [
    "numa_pte_updates",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pages_migrated",
];

/// memory.stat counters a real run samples per cgroup into its time
/// series (`memory.stat:CGROUP:NAME`). Real runs only: the model's series
/// has no per-cgroup columns (its per-cgroup figures are in the record's
/// `cgroups`, at the end of the run).
pub const MEMSTAT_SERIES: [&str; 3] = [
    "numa_pte_updates",
    "numa_hint_faults",
    "numa_pages_migrated",
];

/// The scheduler tracepoints a run counts (real runs with perf events,
/// the model from its trace in `numalab validate`), by their tracefs
/// names in the `sched` system.
pub const TRACE_EVENTS: [&str; 3] = ["sched_move_numa", "sched_swap_numa", "sched_stick_numa"];

/// True for the /proc/vmstat counters a record's `vmstat` holds: NUMA
/// balancing, NUMA allocation, migration, promotion/demotion, fault and
/// TLB-shootdown (`nr_tlb_*`, CONFIG_DEBUG_TLBFLUSH) counters. A real run
/// filters the kernel's hundreds of counters with it; the model's counters
/// all pass it.
pub fn is_recorded_vmstat(name: &str) -> bool {
    const PREFIXES: [&str; 6] = [
        "numa_",
        "pgmigrate_",
        "thp_migration_",
        "pgpromote_",
        "pgdemote_",
        "thp_fault_",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
        || matches!(name, "pgfault" | "pgmajfault")
        || matches!(
            name,
            "nr_tlb_remote_flush"
                | "nr_tlb_remote_flush_received"
                | "nr_tlb_local_flush_all"
                | "nr_tlb_local_flush_one"
        )
}

/// True for the memory.stat counters a record's cgroup `memory_stat`
/// holds (deltas over the run).
pub fn is_recorded_memory_stat(name: &str) -> bool {
    name.starts_with("numa_")
        || name.starts_with("pgpromote_")
        || name.starts_with("pgdemote_")
        || name.starts_with("thp_migration")
        || matches!(name, "pgfault" | "pgmajfault" | "thp_fault_alloc")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_series_is_an_ordered_subset_of_the_real_one() {
        let pos: Vec<usize> = MODEL_VMSTAT_SERIES
            .iter()
            .map(|m| VMSTAT_SERIES.iter().position(|r| r == m).unwrap())
            .collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "{pos:?}");
    }

    #[test]
    fn sampled_counters_are_recorded_counters() {
        assert!(VMSTAT_SERIES.iter().all(|c| is_recorded_vmstat(c)));
        assert!(MEMSTAT_SERIES.iter().all(|c| is_recorded_memory_stat(c)));
        assert!(!is_recorded_vmstat("nr_free_pages"));
        assert!(!is_recorded_memory_stat("anon"));
    }
}
