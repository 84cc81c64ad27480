//! Automatic NUMA balancing (kernel/sched/fair.c NUMA parts, mm/mempolicy.c
//! `mpol_misplaced`, mm/memory.c `do_numa_page`). State types only so far;
//! the mechanism arrives with the mainline-balancing work.

/// Per-mm scan state (`mm->numa_next_scan`, `numa_scan_offset`,
/// `numa_scan_seq`).
#[derive(Clone, Debug, Default)]
pub struct MmNumaState {
    /// Earliest time of the next scan, ns.
    pub next_scan: u64,
    /// Virtual address to resume scanning at.
    pub scan_offset: u64,
    /// Completed passes over the address space.
    pub scan_seq: u64,
}

/// Per-VMA NUMA balancing state (`vma->numab_state`).
#[derive(Clone, Debug, Default)]
pub struct VmaNumabState {
    /// Time before which the VMA is not scanned, ns.
    pub next_scan: u64,
    /// Time the pid window rotates next, ns.
    pub pids_active_reset: u64,
    /// Recent accessor bitmaps (`pids_active[2]`), by `hash_32(pid, 6)`.
    pub pids_active: [u64; 2],
    /// `start_scan_seq`.
    pub start_scan_seq: u64,
    /// `prev_scan_seq`.
    pub prev_scan_seq: Option<u64>,
}

/// Per-task NUMA balancing state.
#[derive(Clone, Debug, Default)]
pub struct TaskNumaState {}

use crate::kernel::Kernel;
use crate::physics::costs;

impl Kernel {
    /// `do_numa_page`: a hinting fault on a PROT_NONE page. Restores the
    /// PTE; placement and migration decisions come with the balancing model.
    pub fn do_numa_page(&mut self, t: usize, _cpu: usize, vma: usize, idx: usize) -> f64 {
        let mm = self.tasks[t].mm;
        self.mms[mm].vmas[vma].set_protnone(idx, false);
        costs::HINT_FAULT_NS
    }
}

impl crate::engine::Sim {
    /// `task_tick_numa` for the task running on `cpu` (balancing model
    /// pending: nothing yet).
    pub(crate) fn task_tick_numa(&mut self, _cpu: usize) {}

    /// NUMA state of a new task (`init_numa_balancing`).
    pub(crate) fn numa_task_init(&mut self, _t: usize) {}

    /// The /proc/PID/sched NUMA fields of a task for the Run record.
    pub(crate) fn task_numa_figures(
        &self,
        _t: &crate::kernel::sched::Task,
    ) -> Option<numalab_record::TaskNuma> {
        None
    }
}
