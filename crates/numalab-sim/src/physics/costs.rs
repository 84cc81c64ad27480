//! What kernel work costs, in nanoseconds of CPU time, and who pays it.
//!
//! Every constant here has a unit and a source. They are charged as system
//! time to the task (or CPU) that does the work. Costs that scale with bytes
//! (zeroing, copying) are not constants: they use the machine's bandwidth.
//!
//! Left out: cache and TLB refill after a fault or migration, lock contention
//! inside the fault path (mmap_lock, page-table lock convoys when many
//! threads fault the same range at once), and memcg charging costs.

/// Fixed cost of an anonymous page fault that allocates a page: exception
/// entry/exit, page allocation, rmap and PTE install, excluding zeroing (ns).
/// Source: will-it-scale page_fault1 runs at roughly 0.5-1 M faults/s per
/// core on 2015-2020 Intel servers, i.e. 1-2 us per fault including zeroing
/// 4 KiB; zeroing 4 KiB at ~10 GB/s is ~0.4 us, leaving ~1 us fixed.
pub const FAULT_ALLOC_NS: f64 = 1000.0;

/// Fixed cost of a NUMA hinting fault that does not migrate: exception
/// entry/exit, `do_numa_page` restoring the PTE, `task_numa_fault`
/// accounting (ns). Source: the same fault-path cost as above, without the
/// allocation (about half of it).
pub const HINT_FAULT_NS: f64 = 600.0;

/// Fixed cost of migrating one folio on a hinting fault, besides the copy:
/// isolation, unmap, TLB flush of the old mapping, remap (ns).
/// Source: migrate_pages() of single 4 KiB pages measures ~3-5 us per page on
/// Intel servers (e.g. move_pages(2) microbenchmarks); the copy is ~0.4 us of
/// that, so ~3 us fixed.
pub const MIGRATE_PAGE_FIXED_NS: f64 = 3000.0;

/// Cost of changing one PTE to PROT_NONE in `change_prot_numa` (ns).
/// Source: mmtests' AutoNUMA cost weighs a PTE update at 7 units against
/// 5000 for a hint fault; with a hint fault near 1 us that is a few ns per
/// PTE; 10 ns allows for the page-table walk.
pub const PTE_UPDATE_NS: f64 = 10.0;

/// Fixed cost of one `task_numa_work` invocation (mmap_read_trylock, VMA
/// iteration set-up, TLB flush of the scanned range) (ns).
pub const SCAN_WORK_FIXED_NS: f64 = 5000.0;

/// Cost of migrating a task between CPUs (dequeue, enqueue, IPI) (ns).
/// Source: `migrate_task_to` / stop_one_cpu round trips measure ~5-10 us.
pub const TASK_MIGRATE_NS: f64 = 5000.0;

/// Cost of a context switch (ns). Source: lmbench lat_ctx ~1-3 us.
pub const CONTEXT_SWITCH_NS: f64 = 2000.0;

/// Cost per CPU in the span of a domain when `sched_balance_rq` gathers
/// group statistics (`update_sd_lb_stats` reads each rq) (ns).
/// Source: reading a remote rq's cache lines costs ~100 ns when they are
/// remote-hot; many are shared-clean, so ~20 ns on average.
pub const BALANCE_PER_CPU_NS: f64 = 20.0;

/// Fixed cost of one `sched_balance_rq` attempt (ns).
pub const BALANCE_FIXED_NS: f64 = 500.0;

/// Cost of a wakeup: `try_to_wake_up`, `select_task_rq_fair` and an IPI to
/// the target CPU when it is idle (ns). Source: schbench/hackbench wakeup
/// costs are a few us.
pub const WAKEUP_NS: f64 = 2000.0;
