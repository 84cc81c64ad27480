//! Kernel counters: /proc/vmstat items and the memory.stat NUMA items.
//!
//! Counters are an array indexed by [`Vm`], so the hot paths increment a
//! slot; names are the kernel's. Per-cgroup memory.stat keeps the same array
//! for the items memcg exports (`numa_pages_migrated`, `numa_pte_updates`,
//! `numa_hint_faults`, and `numa_task_migrated` / `numa_task_swapped`,
//! which came with the per-cgroup NUMA balancing statistics of 6.16-rc1
//! and were reverted in 6.16-rc6). The `nr_tlb_*` counters are the
//! kernel's CONFIG_DEBUG_TLBFLUSH items, counted where arch/x86/mm/tlb.c
//! counts them (kernel/mm/tlb.rs). Left out: every counter numalab does
//! not model.

/// A /proc/vmstat counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Vm {
    /// Allocation landed on the intended node (one per allocation, any
    /// order: `zone_statistics(.., 1)`; so are the five below).
    NumaHit,
    /// Allocation fell back to another node.
    NumaMiss,
    /// Allocation intended for this node landed elsewhere.
    NumaForeign,
    /// Interleave allocation that got its intended node.
    NumaInterleave,
    /// Allocation on the allocating CPU's node.
    NumaLocal,
    /// Allocation on another node than the allocating CPU's.
    NumaOther,
    /// PTEs marked PROT_NONE by NUMA scanning (base-page units).
    NumaPteUpdates,
    /// PMDs (THP) marked by NUMA scanning.
    NumaHugePteUpdates,
    /// NUMA hinting faults.
    NumaHintFaults,
    /// Hinting faults on a page already local to the faulting CPU.
    NumaHintFaultsLocal,
    /// Pages migrated by NUMA balancing (base-page units).
    NumaPagesMigrated,
    /// Pages migrated, any reason.
    PgmigrateSuccess,
    /// Page migrations that failed.
    PgmigrateFail,
    /// THP migrations that succeeded.
    ThpMigrationSuccess,
    /// Completed page faults (`mm_account_fault`): first touches, racing
    /// losers' retried faults and NUMA hinting faults alike.
    PgFault,
    /// Tasks moved to another CPU by NUMA balancing: one per
    /// `migrate_task_to` that passes its affinity check. 6.16-rc1 to rc5
    /// only (reverted in 6.16-rc6).
    NumaTaskMigrated,
    /// Tasks exchanged by NUMA balancing: one per task moved by
    /// `migrate_swap`, so two per swap (`__migrate_swap_task`). 6.16-rc1 to
    /// rc5 only (reverted in 6.16-rc6).
    NumaTaskSwapped,
    /// Shootdowns sent: one per `native_flush_tlb_multi` call
    /// (arch/x86/mm/tlb.c). Like the three below, the kernel has it only
    /// with CONFIG_DEBUG_TLBFLUSH.
    NrTlbRemoteFlush,
    /// Shootdown IPIs handled: one per receiving CPU (`flush_tlb_func`,
    /// not the initiator).
    NrTlbRemoteFlushReceived,
    /// Full flushes done by the initiating CPU (`flush_tlb_func`, local).
    NrTlbLocalFlushAll,
    /// Pages flushed one by one (`invlpg`) by the initiating CPU: a range
    /// of at most `tlb_single_page_flush_ceiling` (33) pages counts its
    /// pages.
    NrTlbLocalFlushOne,
    /// Huge pages a fault allocated and mapped: one per successful
    /// `do_huge_pmd_anonymous_page` (`map_anon_folio_pmd`; a racing loser
    /// that finds the PMD taken counts nothing). Appended last so that the
    /// other counters keep their places.
    ThpFaultAlloc,
}

/// Number of [`Vm`] counters.
pub const NR_VM_ITEMS: usize = 22;

/// Kernel names, in [`Vm`] order.
pub const VM_NAMES: [&str; NR_VM_ITEMS] = [
    "numa_hit",
    "numa_miss",
    "numa_foreign",
    "numa_interleave",
    "numa_local",
    "numa_other",
    "numa_pte_updates",
    "numa_huge_pte_updates",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pages_migrated",
    "pgmigrate_success",
    "pgmigrate_fail",
    "thp_migration_success",
    "pgfault",
    "numa_task_migrated",
    "numa_task_swapped",
    "nr_tlb_remote_flush",
    "nr_tlb_remote_flush_received",
    "nr_tlb_local_flush_all",
    "nr_tlb_local_flush_one",
    "thp_fault_alloc",
];

/// Counters that memory.stat exports per cgroup (mainline has the first
/// three, `thp_fault_alloc` and `pgfault`; the task counters existed in 6.16-rc1 to
/// rc5 only).
pub const MEMCG_ITEMS: [Vm; 7] = [
    Vm::NumaPagesMigrated,
    Vm::NumaPteUpdates,
    Vm::NumaHintFaults,
    Vm::NumaTaskMigrated,
    Vm::NumaTaskSwapped,
    Vm::ThpFaultAlloc,
    Vm::PgFault,
];

/// A set of counters.
#[derive(Clone, Debug, Default)]
pub struct VmStat(pub [u64; NR_VM_ITEMS]);

impl VmStat {
    /// Adds `n` to `item`.
    #[inline]
    pub fn add(&mut self, item: Vm, n: u64) {
        self.0[item as usize] += n;
    }

    /// Value of `item`.
    pub fn get(&self, item: Vm) -> u64 {
        self.0[item as usize]
    }
}
