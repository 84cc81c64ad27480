//! What kernel work costs, in nanoseconds of CPU time, and who pays it.
//!
//! Every constant here has a unit and a source. They are charged as system
//! time to the task (or CPU) that does the work. Costs that scale with bytes
//! (zeroing, copying) are not constants: they use the machine's bandwidth.
//!
//! The rule for charging: every kernel cost goes through the kernel's
//! charge path (`Kernel::charge_sys` for a task, `Kernel::charge_cpu` for a
//! CPU), which multiplies it by the machine's `[kernel] cost_scale` (1.0 on
//! native hardware, where these figures come from) and returns what it
//! charged; code that needs the time a piece of work took (a balancing
//! clock, `node_stamp`) uses that returned value. Constants stay native
//! figures: add new ones here and charge them through that path, never
//! scaled by hand. Byte costs are the exception: they run at the machine's
//! own measured bandwidth, so they enter the path through
//! `Kernel::bytes_cost_ns`, which divides by the scale the path multiplies
//! by.
//!
//! Lock hold times of the fault path, TLB-shootdown and migration step
//! costs are at the end (kernel/locking/, kernel/mm/tlb.rs); the waiting on
//! those locks is not a constant but comes from the contended-line model.
//!
//! Left out: cache and TLB refill after a fault or migration, and memcg
//! charging costs.

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

/// A write-protect fault that reuses its exclusive anonymous folio
/// (`do_wp_page` -> `wp_page_reuse`: the exception, the walk, the PTE
/// made writable under its lock), the write after a NUMA migration
/// mapped the page read-only (`numalab.migration_wp_fault`) (ns).
/// ESTIMATED: [`FAULT_ENTRY_NS`] plus a PTE update under the lock,
/// [`PTL_HOLD_MAP_NS`]; no allocation, no zeroing, no TLB flush (a
/// permission upgrade needs none on x86).
pub const WP_REUSE_FAULT_NS: f64 = FAULT_ENTRY_NS + PTL_HOLD_MAP_NS;

/// Fixed cost of migrating one folio on a hinting fault, besides the copy:
/// isolation, unmap, TLB flush of the old mapping, remap (ns).
/// Source: migrate_pages() of single 4 KiB pages measures ~3-5 us per page on
/// Intel servers (e.g. move_pages(2) microbenchmarks); the copy is ~0.4 us of
/// that, so ~3 us fixed.
pub const MIGRATE_PAGE_FIXED_NS: f64 = 3000.0;

/// Cost of changing one PTE to PROT_NONE in `change_prot_numa` (ns): the
/// default of the lab knob `numalab.pte_update_ns`, which the scan reads.
/// Sources, two measurements of the same function (`change_pte_range`,
/// mm/mprotect.c, which `change_prot_numa` runs with MM_CP_PROT_NUMA and
/// `mprotect(2)` without): Dev Jain's "[PATCH v5 0/7] Optimize mprotect()
/// for large folios" (linux-arm-kernel, 2025-07-18) times mprotect() of
/// 1 GiB of 4 KiB pages to read-only and back 40 times in 1 s on an
/// Apple M3 before the series, 48 ns a PTE; and on numalab's build host
/// (AMD EPYC, Firecracker VM, Linux 6.18.44; 2026-11-27,
/// vm/calibrate/mprotect_pte.c: mprotect(PROT_NONE) over 4 MiB to 1 GiB
/// windows of touched 4 KiB pages) 75-86 ns a PTE, linear in the window, on a kernel after
/// that series' PTE batching, which the LKML report "[REGRESSION]
/// mm/mprotect: 2x+ slowdown for >=400KiB regions since PTE batching"
/// (Pedro Falcato, 2026-02) puts at 2x+ for such regions, so 35-43 ns
/// before it. 45 ns sits between the two pre-batching figures; 6.12, the
/// kernel modelled, predates the batching. The prot_numa case also reads
/// each page's folio (`folio_nid`, the mapcount), so this is not an upper
/// bound. Until 2026-11-27 the constant was 10 ns, from mmtests' relative
/// weights (7 units a PTE against 5000 a hinting fault), not a measurement.
pub const PTE_UPDATE_NS: f64 = 45.0;

/// Cost of one page of a `/proc/PID/numa_maps` walk (`show_numa_map` →
/// `gather_pte_stats`, fs/proc/task_mmu.c), for the coordinator's sampler
/// when a boot did not measure it (ns). Source: a modelling estimate, the
/// scan's per-PTE figure as it was before 2026-11-27; in three traced
/// guest-4n boots the estimate came within 2x of what the coordinator
/// spent (docs/real.md M3). Kept apart from [`PTE_UPDATE_NS`] so that the
/// scan's measured cost does not move the sampler's estimate.
pub const NUMA_MAPS_PAGE_NS: f64 = 10.0;

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

/// What a process's main thread spends creating one thread: the stack's
/// `mmap` and guard page, `clone(CLONE_VM|CLONE_THREAD|...)`
/// (`copy_process`) and `wake_up_new_task` (ns). Source: measured with
/// vm/calibrate/pthread_create.c on the 2-core CI host, 2026-11-27: 35.6-51.3
/// us per pthread_create over 7 runs of 64 fresh stacks under a build load of
/// 4-5; the lowest is taken, load only adds. Independent check: the 6.12
/// guest's `sched_wakeup_new` gaps while `numalab real run` created 7 threads
/// (0.4-20 ms, median ~5 ms) over its `cost_scale` 180 give ~28 us.
pub const CLONE_THREAD_NS: f64 = 35_000.0;

/// Cost of a wakeup: `try_to_wake_up`, `select_task_rq_fair` and an IPI to
/// the target CPU when it is idle (ns). Source: schbench/hackbench wakeup
/// costs are a few us.
pub const WAKEUP_NS: f64 = 2000.0;

// --- Cache-line transfers between CPUs (contended atomics) -----------------
//
// What it costs to move one cache line in Modified state from the CPU that
// last wrote it to the CPU that now does a locked operation on it: the
// "core-to-core latency" that ping-pong compare-and-exchange benchmarks
// measure (Anandtech's test, Chips and Cheese's, and the open-source
// `core-to-core-latency` tool, which all bounce one line between two cores
// with `lock cmpxchg`). Used by the contended-line model (physics/line.rs)
// and through it the SD_SERIALIZE flag (kernel/sched/serialize.rs).
// Measured sources:
// (m1) KCORES/core-to-core-latency-plus, results "Dual Intel Xeon Platinum
//      8360Y 2.40GHz by-herver.csv" (commit 456cc116): 2 x 36-core Ice Lake
//      SP (the same 8360Y row that machine presets take their memory
//      physics from). SMT siblings 7.6 ns; two cores of one socket 41-57 ns,
//      mean about 51 ns; cores on different sockets 106-119 ns, mean about
//      115 ns.
// (m2) Same repository, "Intel Xeon W9-3475X 2.2GHz 36Cores 2023-Q2
//      by-ReinForce-II.csv": one 36-core Sapphire Rapids package built from
//      four tiles joined by EMIB; pairs range 36-72 ns, the pairs that cross
//      tiles sitting at the top of that range (60-72 ns).
// No Granite Rapids or cross-SNC-node measurement was found.

/// Line transfer between SMT siblings of one core, or a locked operation on
/// a line the CPU already owns (ns). Source: (m1), SMT siblings 7.6 ns.
pub const C2C_SAME_CORE_NS: f64 = 7.6;

/// Line transfer between two cores sharing a last-level cache (ns).
/// Source: (m1), mean of the same-socket pairs, about 51 ns (41-57).
pub const C2C_SAME_LLC_NS: f64 = 51.0;

/// Line transfer between two cores of one package on different LLCs (SNC
/// nodes / compute dies) (ns). EXTRAPOLATED: (m2)'s tile-crossing pairs on
/// a Sapphire Rapids package, 60-72 ns; 65 ns taken.
pub const C2C_SAME_PACKAGE_NS: f64 = 65.0;

/// Line transfer between cores on different packages (ns). Source: (m1),
/// mean of the cross-socket pairs, about 115 ns (106-119).
pub const C2C_REMOTE_PACKAGE_NS: f64 = 115.0;

/// Growth of one line transfer per additional outstanding request for the
/// same line (dimensionless, per request): with `n` requests outstanding a
/// transfer takes `latency x (1 + LINE_QUEUE_GROWTH x (n - 1))`. The home
/// agent (CHA) serves conflicting requests for one address one at a time;
/// the requests that wait are snooped, retried and tracked meanwhile, and
/// that traffic slows every transfer (physics/line.rs).
/// Source: (m3) wtarreau/atomic-tests, results on an Intel Xeon W-2145
/// (Skylake-SP die, 8 cores / 16 threads, one LLC). 16 threads doing CAS
/// on one line complete 18.5 M successful CAS/s, 53 ns each
/// (results/cas-lat-xeon.txt, first run), and the same file gives, for
/// every thread, which thread took the line from it next (its `t:` rows:
/// 2.2 % itself again, 8.3 % its SMT sibling, the rest other cores). At the
/// unloaded core-to-core CAS latencies of results/lat-xeon.txt (op 2:
/// 4 ns to the sibling, 38-44 ns to another core) those hand-overs average
/// 36.6 ns, so a transfer costs 53 / 36.6 = 1.45x its unloaded latency
/// with 16 contenders: (1.45 - 1) / 15 = 0.030 per additional request.
/// (Until 2026-11-28 the constant was 0.02, from 54 / 41 ns, which took
/// every hand-over as one between cores.) David, Guerraoui, Trigonakis
/// (SOSP 2013, Figure 4) report the same direction on multi-socket Opteron
/// and Xeon. EXTRAPOLATED: the same relative growth is applied to
/// cross-die and cross-package transfers and beyond 16 contenders. The one
/// cross-LLC measurement found, the same files for a Ryzen 7 2700X (two
/// 4-core CCXs: 8, 23-26 and 67-71 ns unloaded; 127 ns a CAS with 16
/// threads), gives 0.11 by the same reading: growth across LLCs is larger,
/// not smaller (docs/reproductions.md, numa-balance-serialize, for what
/// either does at hundreds of requests).
pub const LINE_QUEUE_GROWTH: f64 = 0.03;

/// Spread of the moment each CPU's SCHED_SOFTIRQ starts after the common
/// tick (ns): the tick handler before it (`update_process_times`,
/// `sched_tick`, hrtimer bookkeeping) takes a few microseconds and not the
/// same on every CPU. Each CPU's walk starts at tick + a deterministic
/// pseudo-random offset in `[0, TICK_SOFTIRQ_SPREAD_NS)`. A modeling choice,
/// not a measurement; contention on the serialize flag is insensitive to
/// it as long as it is below the time hundreds of line transfers take
/// (tens of microseconds).
pub const TICK_SOFTIRQ_SPREAD_NS: f64 = 2000.0;

// --- Fault-path locks, TLB shootdowns and migration (kernel/locking/,
// kernel/mm/tlb.rs, kernel/numa/fault.rs) ------------------------------------
//
// Hold times are the work a critical section does. None of the critical
// sections below has a published per-section measurement on these machines;
// each is marked ESTIMATED with the instruction-level reasoning, and the
// waiting around them comes from the contended-line model (physics/line.rs)
// with the measured core-to-core latencies above, not from these figures.

/// Time `do_anonymous_page` holds the split page-table lock when it maps a
/// new folio: `vmf_pte_changed` (pte_none), `folio_add_new_anon_rmap`,
/// `folio_add_lru_vma` (a per-CPU folio batch), `set_pte_at`,
/// `update_mmu_cache` (ns). Part of [`FAULT_ALLOC_NS`], not on top of it.
/// ESTIMATED: a few hundred instructions on lines the faulting CPU already
/// owns, ~0.15 us; of the order of the whole fault's 10-15 %.
pub const PTL_HOLD_MAP_NS: f64 = 150.0;

/// Time a fault that lost the race holds the page-table lock: it reads the
/// PTE (`!pte_none` in `do_anonymous_page`, `!pte_same` in `do_numa_page`),
/// unlocks and returns (ns). The PTE's line was just written by the winner
/// on another CPU, so the read is one line transfer. ESTIMATED: one
/// same-package transfer, [`C2C_SAME_PACKAGE_NS`] (m2), rounded to 60 ns.
pub const PTL_HOLD_CHECK_NS: f64 = 60.0;

/// Exception entry and exit plus the `handle_mm_fault` page-table walk of
/// a fault that finds nothing to do after taking the page-table lock (the
/// loser of a race retries the access) (ns). Part of [`FAULT_ALLOC_NS`] and
/// [`HINT_FAULT_NS`]. ESTIMATED: the exception round trip (entry, `iret`)
/// is of the order of 0.1 us on Intel servers without PTI, plus the
/// four-level walk and the VMA lookup; 250 ns, a quarter of
/// [`FAULT_ALLOC_NS`].
pub const FAULT_ENTRY_NS: f64 = 250.0;

/// Freeing the folio a losing first-touch fault allocated and zeroed, back
/// to the CPU's per-CPU page list (`folio_put` → `free_unref_folios`) (ns).
/// ESTIMATED: the mirror of the pcp allocation inside [`FAULT_ALLOC_NS`],
/// ~0.1 us.
pub const FOLIO_FREE_NS: f64 = 100.0;

/// Time `rmqueue_bulk` / `free_pcppages_bulk` hold `zone->lock` per base
/// page they move between the buddy lists and a per-CPU list (ns).
/// ESTIMATED: `__rmqueue_smallest` / `__free_one_page` touch a struct page
/// and a free-list head each, ~2 cache misses on a refilled list, ~50 ns
/// per page; a batch of 63 pages holds the lock ~3 us.
pub const ZONE_LOCK_PER_PAGE_NS: f64 = 50.0;

/// Time `folio_isolate_lru` / `folio_putback_lru` hold the lruvec's
/// `lru_lock` (ns). ESTIMATED: list removal and flag updates on one folio,
/// ~100 ns.
pub const LRU_LOCK_HOLD_NS: f64 = 100.0;

/// Migration of one folio besides the copy, the isolation and the TLB
/// flush (ns), split as `migrate_pages` spends it:
/// - [`MIGRATE_UNMAP_NS`]: `try_to_migrate` (folio lock, rmap walk,
///   install the migration entry);
/// - [`MIGRATE_REMAP_NS`]: `remove_migration_ptes` (rmap walk, install the
///   new PTE) and freeing the source folio;
/// - [`MIGRATE_ALLOC_NS`]: allocating the destination folio and
///   `migrate_folio` moving flags, mapping and memcg data.
///
/// Source: migrate_pages()/move_pages(2) of single 4 KiB pages measure
/// ~3-5 us per page on Intel servers, of which ~0.4 us is the copy
/// ([`MIGRATE_PAGE_FIXED_NS`]); the split of the remaining ~3 us between
/// the three steps is ESTIMATED from their work (two rmap walks, one
/// allocation).
pub const MIGRATE_UNMAP_NS: f64 = 1000.0;

/// See [`MIGRATE_UNMAP_NS`] (ns).
pub const MIGRATE_REMAP_NS: f64 = 1000.0;

/// See [`MIGRATE_UNMAP_NS`] (ns).
pub const MIGRATE_ALLOC_NS: f64 = 700.0;

/// Invalidating one page's translation with `invlpg` (ns). Source:
/// arch/x86/mm/tlb.c, the comment on `tlb_single_page_flush_ceiling`:
/// "Each single flush is about 100 ns".
pub const TLB_FLUSH_ONE_NS: f64 = 100.0;

/// Flushing a CPU's translations of one address space (`flush_tlb_local`:
/// a CR3 write with PCID, or INVPCID) (ns). ESTIMATED: the instruction
/// itself, ~0.2 us; the TLB refill that follows is left out.
pub const TLB_FLUSH_ALL_NS: f64 = 200.0;

/// Sending one TLB-flush IPI (`smp_call_function_many_cond`: queue the
/// call, one x2APIC ICR write per target CPU) (ns). ESTIMATED: ~100 ns per
/// target (an MSR write plus a remote cache-line write of the call queue).
pub const TLB_IPI_SEND_NS: f64 = 100.0;

/// The initiator's wait for the acknowledgements of a TLB shootdown after
/// its last IPI is sent: delivery, the slowest receiver's handler and the
/// acknowledgement line coming back (ns). ESTIMATED: an IPI round trip on
/// current Xeons is commonly put at 1-3 us (Amit, Tai, Wei, "Don't shoot
/// down TLB shootdowns!", EuroSys 2020, study shootdowns of this order);
/// no measurement on these machines was found. 2 us.
pub const TLB_SHOOTDOWN_WAIT_NS: f64 = 2000.0;

/// A TLB-flush IPI on the receiving CPU: interrupt entry and exit and
/// `flush_tlb_func`'s bookkeeping, besides the flush itself (ns).
/// ESTIMATED: ~1 us, half the round trip above.
pub const TLB_IPI_RECEIVE_NS: f64 = 1000.0;
