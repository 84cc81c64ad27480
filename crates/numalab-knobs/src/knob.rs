//! The declarations: every knob numalab knows, once, with its typed handle.
//!
//! Defaults are the kernel's (kernel/sched/fair.c, kernel/Kconfig.hz,
//! mm/mempolicy.c on a machine with more than one node). Ranges are what
//! numalab accepts; the kernel's debugfs files take any `unsigned int`.
//! To add a knob, add a block here: it gets a handle, a line in
//! `numalab list knobs` and an entry in every Run record's `settings`.
//! Left out: memory tiering's knobs (`numa_balancing_promote_rate_limit_MBps`,
//! `hot_threshold_ms`), which the model does not have; a real run still
//! passes them through to the kernel (see numalab-real's `knobs`).

use crate::def::{choice, declare, Location};

choice! {
    /// Which ordering of `sched_balance_running` (SD_SERIALIZE) the
    /// balancer follows: the words of [`SCHED_BALANCE_SERIALIZE`].
    pub enum SchedBalanceSerialize {
        /// Before 6.19: flag taken before the due and designated checks.
        Legacy = "legacy",
        /// v3 posting: checks first; redo keeps the held marker.
        V3 = "v3",
        /// v4 posting: redo releases and clears the marker; newidle
        /// serialized.
        V4 = "v4",
        /// Tip 2265c5d4: redo keeps the flag; newidle not serialized.
        Fixed = "fixed",
        /// Mainline 6.19 (also 22c929d2): as `Fixed`, newidle serialized.
        FixedNewidle = "fixed+newidle",
    }
}

choice! {
    /// Which cycles the contention share of a profile counts in its
    /// denominator: the words of [`PROFILE_CYCLES`].
    pub enum ProfileCycles {
        /// perf's `cycles` event (unhalted core cycles): CPUs running a
        /// task, or in kernel with no task; a CPU halted in idle adds none.
        Unhalted = "unhalted",
        /// Every CPU's elapsed time, idle or not (the model before).
        Elapsed = "elapsed",
    }
}

choice! {
    /// Which tasks' load reaches the root runqueue through a task group
    /// (CONFIG_FAIR_GROUP_SCHED): the words of [`TASK_GROUP`].
    pub enum TaskGroup {
        /// Every task in the root group (the model before).
        None = "none",
        /// Each non-root cgroup is a task group.
        Cgroups = "cgroups",
        /// Also the workload's root cgroup is a group below the root,
        /// where only kernel threads run (systemd, numalab real run).
        Session = "session",
    }
}

choice! {
    /// Which runtime's own mappings a workload process has besides its
    /// regions: the words of [`PROCESS_MAPPINGS`].
    pub enum ProcessMappings {
        /// Only the workload's regions (the model before).
        None = "none",
        /// A C program on glibc's pthreads: 8 MiB thread stacks, the
        /// heap, the libraries' data, the main stack.
        Glibc = "glibc",
        /// A Rust program (numalab real run's worker): 2 MiB thread
        /// stacks, sigaltstacks, a glibc malloc arena per spawned thread.
        Rust = "rust",
    }
}

declare! {
    /// `sysctl_numa_balancing_mode`.
    NUMA_BALANCING: uint(0, 4) {
        name: "kernel.numa_balancing",
        aliases: [],
        default: 1,
        unit: None,
        location: Location::Sysctl("kernel/numa_balancing"),
        source: "kernel/sched/core.c sysctl_numa_balancing(), sysctl_numa_balancing_mode, range [0, SYSCTL_FOUR] since memory tiering (5.18); default from mm/mempolicy.c check_numabalancing_enable(); 4 = NUMA_BALANCING_CGROUP of proposal 4 (Chen Yu, 2025, not in mainline)",
        description: "0 off, 1 NUMA_BALANCING_NORMAL (default with >1 node), 4 NUMA_BALANCING_CGROUP (proposal 4: only tasks whose cgroup has cpu.numa_load_balance=1); 2/3 (memory tiering) are refused by the model: not modeled; 5-7 are refused: NUMA_BALANCING_CGROUP excludes the other bits",
    }

    /// `sysctl_numa_balancing_scan_delay`.
    SCAN_DELAY_MS: uint(0, 3_600_000) {
        name: "numa_balancing.scan_delay_ms",
        aliases: [
            "numa_balancing/scan_delay_ms",
            "sched/numa_balancing/scan_delay_ms",
            "kernel.numa_balancing_scan_delay_ms",
        ],
        default: 1000,
        unit: Ms,
        location: Location::Debugfs {
            path: "sched/numa_balancing/scan_delay_ms",
            legacy_sysctl: Some("kernel/numa_balancing_scan_delay_ms"),
        },
        source: "kernel/sched/fair.c sysctl_numa_balancing_scan_delay, read by init_numa_balancing(); debugfs since 8a99b6833c88 (5.13)",
        description: "delay before a new mm is first scanned",
    }

    /// `sysctl_numa_balancing_scan_period_min`.
    SCAN_PERIOD_MIN_MS: uint(1, 3_600_000) {
        name: "numa_balancing.scan_period_min_ms",
        aliases: [
            "numa_balancing/scan_period_min_ms",
            "sched/numa_balancing/scan_period_min_ms",
            "kernel.numa_balancing_scan_period_min_ms",
        ],
        default: 1000,
        unit: Ms,
        location: Location::Debugfs {
            path: "sched/numa_balancing/scan_period_min_ms",
            legacy_sysctl: Some("kernel/numa_balancing_scan_period_min_ms"),
        },
        source: "kernel/sched/fair.c sysctl_numa_balancing_scan_period_min, read by task_scan_min()",
        description: "shortest scan period of a task's address space, spread over its scan windows",
    }

    /// `sysctl_numa_balancing_scan_period_max`.
    SCAN_PERIOD_MAX_MS: uint(1, 3_600_000) {
        name: "numa_balancing.scan_period_max_ms",
        aliases: [
            "numa_balancing/scan_period_max_ms",
            "sched/numa_balancing/scan_period_max_ms",
            "kernel.numa_balancing_scan_period_max_ms",
        ],
        default: 60000,
        unit: Ms,
        location: Location::Debugfs {
            path: "sched/numa_balancing/scan_period_max_ms",
            legacy_sysctl: Some("kernel/numa_balancing_scan_period_max_ms"),
        },
        source: "kernel/sched/fair.c sysctl_numa_balancing_scan_period_max, read by task_scan_max()",
        description: "longest scan period of a task's address space, spread over its scan windows",
    }

    /// `sysctl_numa_balancing_scan_size`.
    SCAN_SIZE_MB: uint(1, 1 << 20) {
        name: "numa_balancing.scan_size_mb",
        aliases: [
            "numa_balancing/scan_size_mb",
            "sched/numa_balancing/scan_size_mb",
            "kernel.numa_balancing_scan_size_mb",
        ],
        default: 256,
        unit: Mb,
        location: Location::Debugfs {
            path: "sched/numa_balancing/scan_size_mb",
            legacy_sysctl: Some("kernel/numa_balancing_scan_size_mb"),
        },
        source: "kernel/sched/fair.c sysctl_numa_balancing_scan_size, read by task_numa_work() and task_nr_scan_windows()",
        description: "MB of address space marked per scan",
    }

    /// `CONFIG_HZ`.
    CONFIG_HZ: uint(100, 1000) {
        name: "CONFIG_HZ",
        aliases: ["config.hz"],
        default: 250,
        unit: Hz,
        location: Location::Config("CONFIG_HZ"),
        source: "kernel/Kconfig.hz (HZ_250 is the default choice)",
        description: "scheduler tick rate (jiffies per second)",
    }

    /// The SD_SERIALIZE ordering the model's balancer follows.
    SCHED_BALANCE_SERIALIZE: choice(SchedBalanceSerialize) {
        name: "numalab.sched_balance_serialize",
        aliases: [],
        default: SchedBalanceSerialize::FixedNewidle,
        unit: None,
        location: Location::Lab,
        source: "kernel/sched/fair.c sched_balance_domains(), sched_balance_running; tip 2265c5d4, mainline 22c929d2 (6.19)",
        description: "SD_SERIALIZE / sched_balance_running ordering: legacy (flag before the due and designated checks, before 6.19), v3 (checks first, redo keeps the held marker: the bug review found), v4 (as posted: redo releases and clears the marker, newidle serialized), fixed (tip 2265c5d4: redo keeps the flag, newidle not serialized), fixed+newidle (mainline 6.19, also 22c929d2)",
    }

    /// The denominator of the `sched_balance_running` contention share.
    PROFILE_CYCLES: choice(ProfileCycles) {
        name: "numalab.profile_cycles",
        aliases: [],
        default: ProfileCycles::Unhalted,
        unit: None,
        location: Location::Lab,
        source: "perf's default event `cycles` (PERF_COUNT_HW_CPU_CYCLES) is the architectural UnHalted Core Cycles event (Intel SDM vol. 3B, 'Pre-defined Architectural Performance Events': CPU_CLK_UNHALTED.THREAD counts only while the logical processor is not halted, so not in C1 or deeper); the 7.8 % of proposal 5's posting is a share of total CPU cycles in a perf profile (its annotate listing)",
        description: "unhalted: the share of sched_balance_running contention is of the cycles perf's cycles event counts, every CPU's time running a task plus kernel time on CPUs with no task (a CPU spinning on the flag while idle counts, a halted idle CPU does not); elapsed: of elapsed time x CPUs (the model before 2026-11-27)",
    }

    /// Contended cache lines: transfer cost grows with outstanding requests.
    LINE_QUEUEING: bool {
        name: "numalab.line_queueing",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "numalab physics/line.rs; growth per outstanding request from contended-CAS throughput versus threads (physics/costs.rs LINE_QUEUE_GROWTH)",
        description: "1: a cache-line transfer costs more the more requests for the line are outstanding (home-agent and snoop queueing); 0: every transfer at its unloaded core-to-core latency",
    }

    /// How much a contended line's transfer grows per outstanding request:
    /// a sensitivity experiment on the extrapolated value.
    LINE_QUEUE_GROWTH_PPM: uint(0, 1_000_000) {
        name: "numalab.line_queue_growth_ppm",
        aliases: [],
        default: 30_000,
        unit: None,
        location: Location::Lab,
        source: "numalab physics/costs.rs LINE_QUEUE_GROWTH (0.03 per request): 16 threads doing CAS on one line on one Skylake-SP die (wtarreau/atomic-tests, Xeon W-2145), each hand-over at its measured unloaded latency; EXTRAPOLATED to other dies, packages and beyond 16 contenders (the same files for a 2-CCX Ryzen give 0.11 across LLCs); no multi-socket measurement",
        description: "millionths of a transfer's unloaded latency added per additional outstanding request for the line (with numalab.line_queueing=1): 30000 is the default's 0.03; other values are experiments (docs/reproductions.md, numa-balance-serialize)",
    }

    /// Where a contended line's transfer stops growing with its queue: an
    /// experiment on the extrapolated form beyond the measured 16 contenders.
    LINE_QUEUE_GROWTH_CAP: uint(0, 1_000_000) {
        name: "numalab.line_queue_growth_cap",
        aliases: [],
        default: 0,
        unit: None,
        location: Location::Lab,
        source: "numalab physics/line.rs load_factor; the growth (physics/costs.rs LINE_QUEUE_GROWTH) is measured up to 15 waiting requests (16 threads doing CAS on one line, wtarreau/atomic-tests) and its form beyond is not: a home agent tracks a bounded number of requests, how many for one line is not published",
        description: "waiting requests past which a contended line's transfer stops growing (numalab.line_queue_growth_ppm each, with numalab.line_queueing=1); 0: no cap, the growth stays linear however long the queue (the default); 15 keeps to the measured range; other values are experiments (docs/reproductions.md, numa-balance-serialize)",
    }

    /// The unloaded cost of moving a contended line between cores of
    /// different packages: a sensitivity experiment on the measured value.
    C2C_REMOTE_PACKAGE_NS: uint(1, 10_000) {
        name: "numalab.c2c_remote_package_ns",
        aliases: [],
        default: 115,
        unit: None,
        location: Location::Lab,
        source: "numalab physics/costs.rs C2C_REMOTE_PACKAGE_NS: 2-socket Ice Lake 8360Y core-to-core latency, 106-119 ns (KCORES/core-to-core-latency-plus); Intel MLC remote HITM latency 111-127 ns homed in the writer's socket, up to 177-178 ns homed in the reader's (hpcleuven/VscDocumentation *_mlc.txt); no 4-socket measurement",
        description: "ns a contended cache line takes between cores of different packages (lock hand-overs, atomics, shared written lines); the default is the measured 2-socket figure, other values are experiments (docs/reproductions.md, numa-balancing-threadlocal)",
    }

    /// The per-PTE cost of `change_prot_numa`: a sensitivity experiment on
    /// the measured value.
    PTE_UPDATE_NS: uint(1, 10_000) {
        name: "numalab.pte_update_ns",
        aliases: [],
        default: 45,
        unit: None,
        location: Location::Lab,
        source: "numalab physics/costs.rs PTE_UPDATE_NS: mprotect() of 4 KiB pages, which runs change_pte_range as change_prot_numa does: 48 ns a PTE on an Apple M3 (Dev Jain, LKML, 2025-07-18, before the PTE batching), 75-86 ns on numalab's build host (AMD EPYC VM, 6.18.44, after the batching, reported 2x+ slower for large regions); 10 before 2026-11-27 (mmtests' relative weights, not a measurement)",
        description: "ns of system time task_numa_work spends per present PTE it walks in change_prot_numa (marking it PROT_NONE or skipping it); with SCAN_WORK_FIXED_NS a 256 MiB window of 4 KiB pages costs 5 us + 65536 x this. The default is the measured figure; 10 gives the model before 2026-11-27 (docs/model.md)",
    }

    /// Shared written lines: cache-to-cache transfers between writers.
    SHARED_LINE_TRANSFERS: bool {
        name: "numalab.shared_line_transfers",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "numalab physics/sharing.rs, engine/sharing.rs; transfer costs from physics/line.rs",
        description: "1: an access to a line another core still holds Modified (written by another task within the last few MiB of its writes, from the running tasks' operations) waits for a cache-to-cache transfer by distance and load on top of its memory latency; 0: no sharing cost",
    }

    /// PELT load tracking in the balancer and placement.
    PELT: bool {
        name: "numalab.pelt",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "kernel/sched/pelt.c ___update_load_sum/___update_load_avg; fair.c update_sg_lb_stats, group_classify, calculate_imbalance, detach_tasks, find_idlest_group, select_idle_cpu (SIS_UTIL), update_numa_stats, task_h_load",
        description: "1: the balancer, fork/wakeup placement and NUMA task placement read PELT load_avg/runnable_avg/util_avg (1024 us periods, y^32 = 1/2); 0: they read runnable-task counts (load = 1024 per runnable task), the model before PELT",
    }

    /// Task groups: a cgroup's tasks weigh on the root runqueue through
    /// a group entity.
    TASK_GROUP: choice(TaskGroup) {
        name: "numalab.task_group",
        aliases: [],
        default: TaskGroup::None,
        unit: None,
        location: Location::Lab,
        source: "kernel/sched/fair.c calc_group_shares(), update_tg_load_avg(), task_h_load(); CONFIG_FAIR_GROUP_SCHED=y in Debian's and every distribution's kernel; systemd puts user sessions in user.slice, numalab real run its workload in its own cgroup, while kernel threads stay in the root",
        description: "none: every task in the root group (the model before); cgroups: each non-root cgroup is a task group whose 1024 shares are split over the CPUs by its load there, so its tasks weigh that share on the root runqueue and in task_h_load (kernel/sched/group.rs); session: also the workload's root cgroup is such a group, below the root where only kernel threads run. Off by default until its effect on the reproductions is judged; validate uses session",
    }

    /// A process's main thread creates its other threads one at a time.
    SERIAL_CLONE: bool {
        name: "numalab.serial_clone",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "kernel/fork.c copy_process(), wake_up_new_task(); mm/mmap.c do_mmap() under mmap_write_lock; numalab real run's worker (crates/numalab-real/src/worker.rs) creates the threads that start at once from its main thread; 6.12 guest trace of validate/unpinned (docs/real.md M3): new threads sleep in D at once and wake after the last is created; off by default until its effect on the reproductions is judged (validate turns it on: it is how numalab real run's worker starts threads)",
        description: "1: a process's first thread creates the others that start at once, one after another (physics/costs.rs CLONE_THREAD_NS each, its system time), each new thread placed from the creator's CPU and sleeping on the creator's mmap_lock until the last is created (engine/clone.rs); 0: they all exist at time 0, placed from the process's CPU (the model before)",
    }

    /// A `sleep` phase is slept in slices, as `numalab real run`'s worker does.
    SLEEP_SLICE_MS: uint(0, 3_600_000) {
        name: "numalab.sleep_slice_ms",
        aliases: [],
        default: 0,
        unit: Ms,
        location: Location::Lab,
        source: "numalab real run's worker (crates/numalab-real/src/worker.rs, Phase::Sleep): it sleeps until the phase's end in std::thread::sleep calls of at most 20 ms, checking its stop flag between them; in the 6.12 guest each such wakeup goes through select_task_rq_fair and moved validate/low-memory's sleeping threads between CPUs 40 times in their 2 s sleep (docs/real.md M3, session 17)",
        description: "0: a sleep phase is one sleep (a program's nanosleep; plain model runs); N: the thread wakes every N ms until the phase's end (absolute, so time spent waiting for a CPU counts), each wakeup placed by select_task_rq_fair and charged as one; validate sets 20, what numalab real run's worker does",
    }

    /// A wakeup by another task weighs the waker's CPU (`wake_affine`).
    WAKE_AFFINE: bool {
        name: "numalab.wake_affine",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "kernel/sched/fair.c select_task_rq_fair() with WF_TTWU: record_wakee, wake_wide (sd_llc_size), the lowest SD_WAKE_AFFINE domain holding prev (kept on NUMA domains up to RECLAIM_DISTANCE 30, kernel/sched/topology.c sd_init), wake_affine -> wake_affine_idle, wake_affine_weight (WA_IDLE, WA_WEIGHT, WA_BIAS on), then select_idle_sibling(p, prev, target); 6.12",
        description: "1: a task woken by another (the last arrival at a workload `barrier`, a thread creator releasing the threads it made under numalab.serial_clone) may be pulled towards the waker's CPU, across nodes too, when prev is busy and heavier; 0: every wakeup is placed from the wakee's previous CPU, as a timer's (the model before this switch)",
    }

    /// How many scheduler ticks the fluid solve's rates are kept for.
    FLUID_SOLVE_TICKS: uint(1, 64) {
        name: "numalab.fluid_solve_ticks",
        aliases: [],
        default: 1,
        unit: None,
        location: Location::Lab,
        source: "a numerical choice of numalab, not a kernel or hardware fact: the fluid model (engine/mod.rs solve_physics, physics::max_min_fair_with) is solved once per tick (4 ms at HZ=250) by default; the convergence and seed-spread measurements behind a coarser step are in docs/model.md (\"Fluid solve interval\", session 23)",
        description: "1: the rates of every running task, the loaded latencies and each resource's served share are solved at every tick (exact, the default); N: at every Nth tick only, the others keep the last solve's rates (a task that changed CPU since, or starts a new op, takes its rate from the last solve's served shares, as an op started mid-tick always does). The scheduler, NUMA balancing and faults still run at every tick. A speed setting for sweeps: 4 runs the spr-4n autonumabench entries about 1.5x faster, smooth figures (elapsed, user time of NUMA01_THREADLOCAL) within 0.7 %, counts of task moves within their seed-to-seed spread",
    }

    /// `sched_balance_rq` resets `balance_interval` on any imbalance found.
    BALANCE_INTERVAL_RESET: bool {
        name: "numalab.balance_interval_reset",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "kernel/sched/fair.c sched_balance_rq(): after a pass that found a busiest queue, `sd->balance_interval = sd->min_interval` (\"We were unbalanced, so reset the balancing interval\") unless an active balance was started without need_active_balance; only out_balanced / out_all_pinned double it (MAX_PINNED_INTERVAL 512 ms while all pinned); 6.12 guest line-up docs/real.md M3",
        description: "1: a balance pass that found an imbalance returns to the domain's minimum interval whether or not it moved a task, so a failing imbalance is retried at once and nr_balance_failed climbs, as in the kernel; 0: only a pass that moved a task does, a failed one doubles the interval (the model before 2026-11-27). On by default since session 16: with the guests' rcu_preempt and numalab real run's coordinator costed as measured, it brings the QEMU guests' balancer-driven moves into the kernel's bands (numa02-like's NUMA moves 1 -> 15 against 4-37, shared-procs' 0 -> 6 against 4-16, unpinned's migrations per thread 16.5 -> 29.8 against 35-49, band from 18) (docs/real.md M3)",
    }

    /// The newly idle balance is gated by its own measured cost (5.16+).
    NEWIDLE_LB_COST: bool {
        name: "numalab.newidle_lb_cost",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "kernel/sched/fair.c sched_balance_newidle() (since 9d783c8dd112, 5.16: skipped when rq->avg_idle < the lowest domain's max_newidle_lb_cost, a domain tried only while avg_idle >= the cost so far + its max_newidle_lb_cost, each domain's cost the sched_clock time of its pass), update_newidle_cost() (max kept, decayed by 253/256 at most once a second, also from sched_balance_domains()), kernel/sched/core.c update_rq_avg_idle() (avg_idle += (idle - avg_idle) / 8, then clamped to 2 x rq->max_idle_balance_cost); 6.12 guest trace of validate/sleepy (docs/real.md M4, session 17)",
        description: "1: as 6.12: each domain's newly idle pass costs what the model charged for it (kernel work x the machine's cost_scale, so a QEMU guest's passes are as slow as the guest measures its own) and a CPU whose average idle time is shorter than that cost does not try; avg_idle is averaged then clamped; 0: the model before: a newly idle balance runs when avg_idle >= 500 us (sysctl_sched_migration_cost, the pre-5.16 test) and a domain when avg_idle exceeds its native modeled cost, the idle sample is clamped before averaging",
    }

    /// A guest's NUMA scan pass, timed by the guest's clock, includes its
    /// host's preemptions of the vCPU.
    VCPU_SCAN_STAMP: bool {
        name: "numalab.vcpu_scan_stamp",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "kernel/sched/fair.c task_numa_work(): `p->node_stamp += 32 * diff`, diff the pass's sum_exec_runtime by the guest's sched_clock, which under QEMU TCG runs on while the host keeps the vCPU off; 6.12 guest traces of validate/shared-procs (docs/real.md M3, session 18: fprobes on task_numa_work and change_prot_numa): passes that updated 16-33 k PTEs took 28-624 ms by the guest's clock, median 114 ms, where the model charges 30 ms for 16 k",
        description: "on a machine with [kernel] vcpu_preemption (QEMU guests): 1: the run time a task_numa_work pass pushes its task's next scan by (32x) is the pass's charged cost plus the host's cuts drawn for a stretch that long (kernel/sched/vcpu.rs), so a pass the host cut keeps its thread from scanning for seconds, as in the guest; 0: the charged cost alone. No effect on other machines",
    }

    /// A `/proc/PID/numa_maps` reader counts in the process's `mm_users`.
    PROC_MM_REFS: bool {
        name: "numalab.proc_mm_refs",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "fs/proc/task_mmu.c: m_start() takes mmget_not_zero(mm) for the walk of /proc/PID/numa_maps and m_stop() drops it (mmput), so mm_users counts the reader meanwhile; mm/mprotect.c change_protection() leaves pages on the scanning CPU's node alone only while mm_users == 1 (change_pte_range's target_node); 6.12 guest trace of validate/pinned-4k (fprobe on change_prot_numa with vma->vm_mm->mm_users, docs/real.md M8, session 19): init's first pass marked its heap and chunks with mm_users 2 while numalab real run's coordinator sampled, and 1 a few ms later",
        description: "1: a background task whose spec has mm_refs (validate's coordinator, which samples every process's numa_maps) holds a reference on each live workload mm while its work runs, so a single-threaded process's scan then marks its pages on its own node too and a thread created meanwhile sees mm_users one higher (init_numa_balancing); 0: mm_users counts threads only (the model before). No effect without such a task (native reproductions)",
    }

    /// A guest's timed accesses see the host's cuts of the vCPU.
    VCPU_ACCESS_CUTS: bool {
        name: "numalab.vcpu_access_cuts",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "pmbench's timing loop (a clock read after every access; numalab real run's worker times its random phases the same way, numalab-real/src/latency.rs) under QEMU TCG, whose guest clock runs on while the host keeps a vCPU off; the 6.12 guest's own p2-pmbench histograms (validate/kernel/guest-2n2c-series, 2026-11-27): per thread about 1,600 accesses at 131-262 us (hinting faults with a migration) and, after a dip at 0.5-1 ms, about 5,000 at 1-64 ms, the host's cuts; the cuts' rate and delays are the machine spec's [kernel] vcpu_preemption (kernel/sched/vcpu.rs), measured from sched_balance_rq pass durations (docs/real.md M4, M8)",
        description: "on a machine with [kernel] vcpu_preemption (QEMU guests) and numalab.access_latency=1: 1: every stretch of a task's timed accesses is cut by the host at the spec's rate (one cut per run_ms of it), each cut one access as long as the cut's delay drawn from the spec's quantiles, from a draw stream of its own (engine/host_cuts.rs); the tasks' progress is unchanged (the guest's speeds are averages with the cuts in them); 0: the timed accesses see kernel work and runqueue waits only. No effect on other machines",
    }

    /// A task group's tasks share the CPU by their group entity's weight.
    TASK_GROUP_FAIRNESS: bool {
        name: "numalab.task_group_fairness",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "kernel/sched/fair.c update_curr() -> calc_delta_fair(delta_exec, se) at each level of the hierarchy (vruntime advances by NICE_0_LOAD / se->load.weight per ns), calc_group_shares() (the group entity's weight on a CPU), pick_eevdf() (each entity gets the CPU in proportion to its weight); 6.12 guest trace of validate/numa02-like (docs/real.md M3): the coordinator, in the root group, holds the CPU while the workload thread it shares it with waits",
        description: "with numalab.task_group on: 1: a task of a task group advances its vruntime by its run time x 1024 over its share of its group entity's weight on its CPU (the entity's calc_group_shares weight over the group's runnable tasks there), so a root-group task (a kernel thread, numalab real run's coordinator) sharing a CPU with one of a group's busy threads gets most of it, as the kernel's hierarchical fairness gives; 0: every task advances by its run time (equal shares, the model before). No effect without task groups (numalab.task_group=none, plain model runs). Off by default: the guest's coordinator got 85-90 % of the vCPU it shared with a workload thread during a sample (numa02-like, unpinned; the model 83 % with it on, about 75 % off), but with it on ten gate figures of the two guests leave their bands and seven enter (102 within against 105: shared-procs' NUMA moves 6 -> 0, fork-under-load's sticks 0 -> 208, sleepy's pages migrated 6 -> 2213; docs/real.md M3), so a compensating difference is still open",
    }

    /// A grouped task's `task_h_load` in the kernel's integer steps.
    TASK_H_LOAD_INTEGER: bool {
        name: "numalab.task_h_load_integer",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "kernel/sched/fair.c (6.12) update_cfs_rq_h_load(): a group runqueue's h_load = div64_ul(parent h_load * se->avg.load_avg, cfs_rq_load_avg(parent) + 1), the root's h_load its own load_avg; task_h_load(): div64_ul(p->se.avg.load_avg * cfs_rq->h_load, cfs_rq_load_avg(cfs_rq) + 1); a group entity's load_avg is its scale_load_down() weight (calc_group_shares) times its runnable fraction, an integer",
        description: "with numalab.task_group on: 1: a grouped task's task_h_load is computed as fair.c does, each step an integer division with a denominator one larger (the group entity's load the floor of its calc_group_shares weight), so a thread of a group whose 1024 shares are spread over 320 busy threads weighs 1, not 3.2; 0: its own load_avg times its group entity's weight over the group's load on its CPU, unrounded until the end (the model before). No effect without task groups. Off by default: on, the no-QEMU gate of guest-2n2c loses one figure (shared-procs' sched_stick_numa, median over seeds 1-21 45 -> 75 against the band 5.5-56; guest-4n keeps its 56 within lines), and interleave-task-migration with /mytest a task group moves 83 and swaps 202 at --scale 0.25 against 72 and 224 (docs/reproductions.md#interleave-task-migration)",
    }

    /// The program's runtime mappings beside the workload's regions.
    PROCESS_MAPPINGS: choice(ProcessMappings) {
        name: "numalab.process_mappings",
        aliases: [],
        default: ProcessMappings::None,
        unit: None,
        location: Location::Lab,
        source: "kernel/sched/fair.c task_numa_work() (one VMA per forced pass, vma_pids_forced; a VMA at most once per numa_scan_seq) and vma_is_accessed(); glibc nptl allocatestack.c (stack of RLIMIT_STACK, 8 MiB by default), malloc/arena.c (per-thread arenas, HEAP_MAX_SIZE 64 MiB reserved); Rust std::thread (2 MiB default stack, a sigaltstack per thread); the VMA list of numalab real run's worker in the 6.12 guest, from sched_skip_vma_numa and an fprobe on change_prot_numa (docs/real.md M5)",
        description: "none: a process has only its regions' VMAs (the model before); glibc: also a stack per thread (8 MiB, its top 16 KiB written by its thread at start and in every loop iteration), the heap, eight library data mappings and the main stack; rust: as glibc with 2 MiB stacks, a 132 KiB malloc arena per spawned thread and an 8 KiB sigaltstack per thread (numalab real run's worker). They change which VMAs task_numa_work walks and how far a pass gets (numalab-workload runtime.rs). Off by default until its effect on the reproductions is judged; validate uses rust",
    }

    /// numalab real run's shared control page in every process.
    REAL_RUN_SHARED_PAGE: bool {
        name: "numalab.real_run_shared_page",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "crates/numalab-real/src/worker.rs (Shared: one MAP_SHARED | MAP_ANONYMOUS page the coordinator maps before the forks; Exec::stopped reads its stop flag before every phase and every MiB streamed); mm/memory.c numa_migrate_check() (TNF_SHARED for a folio mapped by several mms in a VM_SHARED VMA; a shmem PTE is writable from the read fault, so no TNF_NO_GROUP); kernel/sched/fair.c task_numa_group(); the 6.12 guest's threadlocal-like boots, whose threads of two processes act in one numa group (docs/real.md)",
        description: "1: every process maps one shared 4 KiB page and every thread reads it before each phase, loop bodies included (numalab-workload real_run.rs), as numalab real run's worker does: a hinting fault on it is shared across the processes, so it can join their numa groups; 0: no such page (a plain program). A property of the runner, not of a workload; validate sets it",
    }

    /// Background activity: per-CPU kernel threads and periodic system work.
    BACKGROUND: bool {
        name: "numalab.background",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "the machine spec's [kernel] background list (numalab-topology kernel_spec.rs: kworker vmstat_update, RCU grace-period kthread, khugepaged, kcompactd, watchdog), plus the real-run sampler in validate's scenarios",
        description: "1: the machine's background tasks (small periodic CPU work, seeded phases) run beside the workload; 0: a quiet machine with only the workload's tasks",
    }

    /// The cgroup hierarchy rule of per-cgroup NUMA balancing.
    NUMA_BALANCING_CGROUP_HIERARCHY: bool {
        name: "numalab.numa_balancing_cgroup_hierarchy",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "proposal 4 (Chen Yu, 2025) tg_numa_balance_enabled() and its to-do, after mm/memcontrol.c mem_cgroup_zswap_writeback_enabled() (e39925734909)",
        description: "in mode 4, 1: a task's cgroup is enabled only when it and every ancestor below the root have cpu.numa_load_balance=1 (the posting's to-do, as numalab implements it; the root's file governs only the root's own tasks); 0: only the task's own cgroup counts (the posting as posted)",
    }

    /// Fault-path locks on the contended-line model.
    FAULT_LOCKS: bool {
        name: "numalab.fault_locks",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "mm/memory.c do_anonymous_page/do_numa_page (pte_offset_map_lock: split PTL), lock_vma_under_rcu (vma->vm_lock), mm/page_alloc.c rmqueue_bulk/free_pcppages_bulk (zone->lock behind zone_batchsize/zone_highsize), kernel/sched/fair.c task_numa_work (mmap_read_trylock); numalab kernel/locking/",
        description: "1: faults, scans and migrations pay the page-table lock, the per-VMA lock, zone->lock, the LRU lock and mmap_lock as contended lines (spinning is system time); 0: every lock uncontended, inside the fixed fault costs",
    }

    /// Racing faults on one page: the losers retry.
    FAULT_RETRY: bool {
        name: "numalab.fault_retry",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "mm/memory.c do_anonymous_page (vmf_pte_changed: !pte_none under the PTL -> release, free the folio, return) and do_numa_page (!pte_same -> unlock, return): the access is retried",
        description: "1: threads streaming over a page another thread is faulting fault it too, queue on its page-table lock, find the PTE changed and retry (a first touch also allocated, zeroed and frees a page); 0: only the first thread to reach a page faults",
    }

    /// TLB shootdowns of NUMA scanning and migration.
    TLB_SHOOTDOWN: bool {
        name: "numalab.tlb_shootdown",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "arch/x86/mm/tlb.c flush_tlb_mm_range, native_flush_tlb_multi, flush_tlb_func (tlb_single_page_flush_ceiling = 33), arch_tlbbatch_flush; mm/rmap.c set_tlb_ubc_flush_pending (pte_accessible)",
        description: "1: change_prot_numa's flush and accessible-PTE unmaps send IPIs to the other CPUs running the mm; the sender waits, each receiver pays the interrupt; nr_tlb_* counted; 0: flushes free and not counted",
    }

    /// A migration costs its steps.
    MIGRATE_COST: bool {
        name: "numalab.migrate_cost",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "mm/migrate.c migrate_misplaced_folio_prepare (folio_isolate_lru), migrate_pages_batch (migrate_folio_unmap: try_to_migrate; migrate_folio_move: folio_copy, remove_migration_ptes), migrate_folio_undo_src on failure",
        description: "1: a NUMA migration costs isolation under the LRU lock, unmap, the copy at the faulting core's bandwidth to the source and destination nodes, and remap; a failed one its isolation and putback; racing faults sleep on the migration entry; 0: a fixed 3 us plus the copy at the core's local bandwidth",
    }

    /// Memory-cgroup page counters on the first-touch path (an experiment,
    /// off by default).
    MEMCG_PAGE_COUNTER: bool {
        name: "numalab.memcg_page_counter",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "mm/memcontrol.c (6.12): try_charge_memcg charges from the CPU's memcg_stock (consume_stock) and refills it MEMCG_CHARGE_BATCH = 64 pages at a time through page_counter_try_charge; __folio_put -> mem_cgroup_uncharge -> uncharge_batch -> page_counter_uncharge, no stock; mm/page_counter.c walks both up to the root, one atomic on each counter's usage. The root memcg charges no LRU pages",
        description: "0 (default): charging costs nothing beyond the fixed fault costs; 1: a first touch by a task in a non-root cgroup charges its memcg from the CPU's 64-page stock, refilled with one atomic on the usage line of the memcg and of each ancestor up to the root, and each loser of a racing first touch frees its folio and uncharges it, one atomic on each of those lines; the lines are atomic counters of the line model (spin is system time). An experiment: with the line model's queue growth it gives NUMA01_THREADLOCAL in /mytest 10.6x the posting's system time, without it (numalab.line_queueing=0) 1.5 % more than off (docs/reproductions.md, numa-balancing-threadlocal, system time)",
    }

    /// The Run record's sampling interval.
    SAMPLE_INTERVAL_MS: uint(0, 3_600_000) {
        name: "numalab.sample_interval_ms",
        aliases: [],
        default: 1000,
        unit: Ms,
        location: Location::Lab,
        source: "numalab: the Run record's time series (no kernel counterpart)",
        description: "time-series sampling interval of the Run record (0 = none)",
    }

    /// Whether the fluid model routes remote traffic over the machine's
    /// links (1) or gives every package pair a link of its own (0).
    LINK_ROUTES: bool {
        name: "numalab.link_routes",
        aliases: [],
        default: 1,
        unit: None,
        location: Location::Lab,
        source: "numalab physics/links.rs: the machine spec's [[links]] bundles, fewest-hop routes (docs/machines.md); no kernel counterpart",
        description: "1: remote bytes load every link bundle on their route, one resource per direction; 0: the model before links, one link of bandwidth.link_gbps per ordered package pair and one of same_package_link_gbps per ordered node pair in a package",
    }

    /// Whether remote writes and coherence messages load the links.
    COHERENCE_TRAFFIC: bool {
        name: "numalab.coherence_traffic",
        aliases: [],
        default: 1,
        unit: None,
        location: Location::Lab,
        source: "numalab physics/coherence.rs: write-allocate (RFO + writeback) and the spec's [coherence] message_bytes and snoop mode; no kernel counterpart",
        description: "1: a written line is read for ownership and written back (memory and both link directions), every remote line costs a request (and a completion for writebacks, snoops under broadcast coherence); 0: reads and writes load the memory controller once and the memory-to-CPU direction only",
    }

    /// Whether a line written to DRAM costs its memory controller more
    /// than a line read (write-to-read turnaround, write recovery).
    DRAM_WRITE_COST: bool {
        name: "numalab.dram_write_cost",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "numalab physics/coherence.rs DRAM_WRITE_COST, from Intel MLC peak-injection bandwidth by read-write mix (hpcleuven/VscDocumentation *_mlc.txt, Ivy Bridge to Ice Lake); no kernel counterpart",
        description: "1: a line written back to memory takes DRAM_WRITE_COST (1.44) times a read's share of the controller's measured all-read bandwidth; 0: reads and writes share it alike (the model before)",
    }

    /// Whether the home writes its memory directory when another socket
    /// takes a line for writing.
    MEMORY_DIRECTORY: bool {
        name: "numalab.memory_directory",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "Intel memory directory (two state bits per line in the ECC bits of DRAM; J. McCalpin, 'Memory directories in Intel processors', 2023); PCM on 2-socket Skylake-SP (Intel community, 'SKL - strange memory behavior'): a store stream's remote half costs its home 2 line writes per line, the local half 1; numalab physics/coherence.rs",
        description: "1: under directory coherence, a line a CPU of another package takes for writing (read for ownership or whole-line invalidation) costs its home memory one more line write, the directory update; 0: no directory traffic (the model before)",
    }

    // Proposal 3 (issue 13): interleave + MPOL_F_NUMA_BALANCING moves tasks, not pages.

    /// Whether MPOL_INTERLEAVE accepts MPOL_F_NUMA_BALANCING, and which
    /// version of the proposal the fault path follows.
    INTERLEAVE_NUMA_BALANCING: choice(InterleaveNumaBalancing) {
        name: "numalab.interleave_numa_balancing",
        aliases: [],
        default: InterleaveNumaBalancing::Off,
        unit: None,
        location: Location::Lab,
        source: "Chen Yu, RFC 3/3 'sched/numa: Allow intervale memory allocation for numa balance' (Feb 2025, not in mainline): mm/mempolicy.c sanitize_mpol_flags (MPOL_F_MOF|MPOL_F_MOFT), mpol_misplaced (NUMA_TASK_MIG), mm/memory.c do_numa_page; as-posted defects found on the patched 6.12 guest (issue 19)",
        description: "off (mainline: MPOL_INTERLEAVE|MPOL_F_NUMA_BALANCING is EINVAL), on (the proposal as intended: flagged interleaved memory is scanned, its faults place tasks, no page of it migrates), as-posted (the posting's code: NUMA_TASK_MIG is 1, a valid node id, so do_numa_page skips every page migration to node 1 under any policy; do_huge_pmd_numa_page not updated, so flagged huge pages migrate to node 1)",
    }
    // Proposal 2 (issue 14): asynchronous NUMA scanning (Huang Ying, 2020)
    // and pmbench-style per-access latency histograms.
    /// `sysctl_numa_balancing_scan_async` of the RFC posting (not in
    /// mainline): scan from an unbound kworker instead of task work.
    NUMA_BALANCING_SCAN_ASYNC: uint(0, 1) {
        name: "kernel.numa_balancing_scan_async",
        aliases: [],
        default: 0,
        unit: None,
        location: Location::Sysctl("kernel/numa_balancing_scan_async"),
        source: "RFC \"autonuma: Support to scan page table asynchronously\" (Huang Ying, LKML, 2020-04-14): kern_table entry with extra1 SYSCTL_ZERO, extra2 SYSCTL_ONE; task_tick_numa queue_work_node(numa_node_id(), system_unbound_wq, &curr->numa_async_work); do_exit cancel_work_sync; not in mainline",
        description: "0: task_numa_work runs as the task's own work on return to user space (mainline); 1: the scan is queued on an unbound kworker of the task's current node, charged to the kworker (root cgroup), cancelled at exit",
    }

    /// The posting's suggested remedy, as a lab switch: async scanning
    /// whose time is charged back to the task's cgroup and which runs only
    /// on the task's cpuset CPUs.
    NUMA_SCAN_ASYNC_BACKCHARGE: bool {
        name: "numalab.numa_scan_async_backcharge",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "Huang Ying, RFC \"autonuma: Support to scan page table asynchronously\", LKML, 2020-04-14 (\"a better solution may be to back-charge the CPU time ... and find a way to run the work on the proper cpuset\"), the cgroup-aware workqueue discussion it cites; no kernel implementation",
        description: "with kernel.numa_balancing_scan_async=1 only: 1 = the scan work runs on a kworker of the scanned task's cgroup, allowed only on the task's cpuset CPUs of its node (all its cpuset CPUs when none are on that node), its CPU time charged to that cgroup; 0 = the posting's patch (root-cgroup kworker on any CPU of the node). Off by default: the default is the posting's patch",
    }

    /// Per-access latency histograms as pmbench measures them.
    ACCESS_LATENCY: bool {
        name: "numalab.access_latency",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "pmbench (blakecaldwell/pmbench: every access timed with rdtsc, log2 histograms for reads and writes apart; Jisoo Yang, UNLV); numalab engine/latency.rs",
        description: "1: every task's random and streaming accesses go into log2 latency histograms (reads and writes apart), each stall of the task (its kernel work, preemption) lengthening one timed access; per task and per cgroup in the Run record; 0: no histograms",
    }

    /// Whole request iterations at once when nothing in them can fault.
    REQUEST_FAST_FORWARD: bool {
        name: "numalab.request_fast_forward",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "numalab engine/fast_forward.rs: an engine shortcut, not a kernel mechanism; results agree with it off in expectation (the random draws differ)",
        description: "1: a task looping over a repeat whose body is only random accesses and compute (a SPECjbb-like transaction loop) runs as many whole iterations as fit in the rest of the tick in one step, when no page of their ranges needs a fault, no kernel work is owed and this tick's rates are known; 0: one operation at a time",
    }

    /// The outlier threshold of the latency histograms.
    ACCESS_LATENCY_THRESHOLD_US: uint(1, 1_000_000_000) {
        name: "numalab.access_latency_threshold_us",
        aliases: [],
        default: 1000,
        unit: None,
        location: Location::Lab,
        source: "Huang Ying, RFC \"autonuma: Support to scan page table asynchronously\", LKML, 2020-04-14, counts accesses slower than 1 ms; numalab engine/latency.rs",
        description: "accesses at least this slow (microseconds) are counted as outliers per task and per cgroup (default 1000 = 1 ms)",
    }


    // Proposal 1 (issue 15): the 2013 scheduler integration of NUMA balancing
    // (Mel Gorman, "Basic scheduler support for automatic NUMA balancing", v1
    // posted 2013-06-26 as an 8-patch series on 3.9, merged in its 63-patch
    // form for v3.13). Each switch on = mainline; all four off = the 3.9
    // baseline the series was measured against.
    /// Preferred node from the task's hinting faults, used by the balancer.
    NUMA_PREFERRED_NODE: bool {
        name: "numalab.numa_preferred_node",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "2013 series patches \"sched: Select a preferred node with the most numa hinting faults\" and \"sched: Favour moving tasks towards the preferred node\" (v1 3/8 and 5/8; v3.13); today fair.c task_numa_placement -> sched_setnuma, migrate_degrades_locality, fbq_classify_group/rq (nr_preferred_running)",
        description: "1: task_numa_placement sets the preferred node (most decayed MEM faults, the group's if grouped) and the load balancer keeps tasks on it; 0 (3.9): no preferred node, fault statistics kept but no task placement by NUMA preference, the balancer NUMA-blind",
    }

    /// Immediate reschedule to a newly chosen preferred node.
    NUMA_MIGRATE_ON_SELECT: bool {
        name: "numalab.numa_migrate_on_select",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "2013 series patch \"sched: Reschedule task on preferred NUMA node once selected\" (v1 6/8; v3.13); today fair.c task_numa_fault -> numa_migrate_preferred -> task_numa_migrate (move or swap)",
        description: "1: a task off its preferred node asks task_numa_migrate for a CPU there (retried every min(1 s, scan period / 16)); 0: only the load balancer moves it (slowly, through migrate_degrades_locality)",
    }

    /// An ablation: every thread of a process in its creator's numa group.
    NUMA_GROUP_THREADS: bool {
        name: "numalab.numa_group_threads",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "an experiment, not a kernel rule: in the 6.12 guest the threads of validate/numa02-like act in one numa group from their first NUMA moves (vm/lineup.py groups on validate/kernel/traces/numa02-like.guest-4n.trace.xz: ngid 200 on every event but five), built by task_numa_group from a handful of shared faults the model's threads do not take (docs/real.md M3, session 18); fair.c task_numa_migrate searches every node for a task in a group spanning several (`ng->active_nodes > 1`)",
        description: "1: a thread created in a process joins its creator's numa group at clone (the creator gets one if it has none), as if the shared faults that group the guest's threads had happened at once; shows what the groups the model does not form would change (docs/real.md M3); 0: groups form only from shared faults (task_numa_group), the kernel's rule",
    }

    /// A group's shared faults inside its active nodes count as local.
    NUMA_GROUP_ACTIVE_LOCAL: bool {
        name: "numalab.numa_group_active_local",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "kernel/sched/fair.c task_numa_fault() (6.12, and as far back as the node_isset(..., active_nodes) form of 4.x, so also the 5.7 kernel of proposal 2's posting): a shared fault of a task whose numa group spans several active nodes, with the task's node and the page's node both active (numa_is_active_node), counts as local in numa_faults_locality, \"so the scan rate can slow down when a workload has settled down\"; update_task_scan_period() then sees a local ratio of 9 of 10",
        description: "1: the kernel's rule (a numa group's shared fault wholly inside its active nodes is local for update_task_scan_period); 0: only a fault on the task's own node is local, an ablation that shows what the rule does to the scan rate of a workload whose threads share memory across nodes (docs/reproductions.md#async-numa-scan)",
    }

    /// Placement reads faults classified by the page's last cpupid.
    NUMA_FAULT_CLASSIFY: bool {
        name: "numalab.numa_fault_classify",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "2013 series patch \"sched: Split accounting of NUMA hinting faults that pass two-stage filter\" (v1 7/8, posted, not merged as such); merged successors for v3.13: \"sched: Set preferred NUMA node based on number of private faults\", \"mm: numa: Scan pages with elevated page_mapcount\", \"sched/numa: Use {cpu, pid} to create task groups for shared faults\"; today fair.c task_numa_fault (cpupid_match_pid, task_numa_group), should_numa_migrate_memory",
        description: "1: each hinting fault is private or shared by the page's last cpupid (the two-stage filter's record), shared faults form numa groups whose statistics drive placement and memory migration; 0 (3.9): every fault counts alike as the task's own, no numa groups (the two-stage filter still gates page migration)",
    }

    /// A task that meets a folio under migration sleeps off its CPU
    /// (`migration_entry_wait`) instead of stalling on it.
    MIGRATION_ENTRY_SLEEP: bool {
        name: "numalab.migration_entry_sleep",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "mm/migrate.c migration_entry_wait() -> migration_entry_wait_on_locked() (TASK_UNINTERRUPTIBLE on the folio's wait queue until folio_unlock), kernel/sched/core.c try_to_wake_up() -> select_task_rq_fair(); numalab kernel/locking/mod.rs delay_task",
        description: "1: a task that lost a fault race to a migrating thread (or waits on a lock the model sleeps on) leaves its CPU for the wait and is woken through the wakeup path (select_task_rq_fair may place it elsewhere; its CPU may newidle-balance meanwhile); 0: the wait is paid on its CPU as time that is neither user nor system (the model before this switch)",
    }

    /// `TNF_SHARED`: a fault on a folio two mms map through a shared
    /// mapping may join tasks of different processes into one group.
    TNF_SHARED: bool {
        name: "numalab.tnf_shared",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "mm/memory.c numa_migrate_check() (folio_likely_mapped_shared && VM_SHARED sets TNF_SHARED), kernel/sched/fair.c task_numa_group() (joins on the same mm or TNF_SHARED); numalab kernel/mm/shmem.rs",
        description: "1 (mainline): a hinting fault on a page of a shared mapping ([[shared]]) that two processes map is flagged TNF_SHARED, so task_numa_group joins tasks of different processes into one numa group; 0: never flagged, so only threads of one process join (an ablation: what cross-process groups do)",
    }

    /// A NUMA migration maps its new page read-only, so the next write
    /// takes a write-protect fault.
    MIGRATION_WP_FAULT: bool {
        name: "numalab.migration_wp_fault",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "mm/rmap.c (6.12) try_to_migrate_one: writable = pte_write(pteval), and the PROT_NONE PTE a NUMA scan left (change_pte_range: pte_modify to PAGE_NONE, no _PAGE_RW) is not, so the migration entry is readable; mm/migrate.c remove_migration_pte maps vm_page_prot (a private mapping's has no write bit, for copy-on-write) and makes it writable only for a writable entry; mm/memory.c do_wp_page -> wp_page_reuse for an exclusive anonymous folio, counted by mm_account_fault; the 6.12 guest's pgfault = first touches + numa_hint_faults + numa_pages_migrated (validate/kernel/guest-4n: pinned-4k 202941 against 65536 + 87983 + 49327); 3.8-3.13's _PAGE_NUMA hinting kept _PAGE_RW, so 3.9 has no such fault",
        description: "1 (6.x): a hinting fault that migrated its page leaves it mapped read-only, and when the faulting op writes (a `write` stream, a random op with writes) the retried write takes a write-protect fault (do_wp_page reusing the folio): one more pgfault and its exception and PTE update as system time; 0: the page comes back writable (3.8-3.13, and numalab before this switch)",
    }

    /// Scan rate adapted to fault locality instead of the reset hammer.
    NUMA_SCAN_ADAPT: bool {
        name: "numalab.numa_scan_adapt",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "2013 series patch \"sched: Increase NUMA PTE scanning when a new preferred node is selected\" (v1 8/8) and its v3.13 successors \"sched: numa: Remove the numa_balancing_scan_period_reset sysctl\" and \"sched/numa: Adjust scan rate in task_numa_placement\"; today fair.c update_task_scan_period, update_scan_period. Off: 3.9 fair.c task_numa_fault (+jiffies_to_msecs(10) per unmigrated fault) and task_numa_work (numa_next_reset, sysctl_numa_balancing_scan_period_reset = 100*600 ms)",
        description: "1: the scan period adapts once per pass to the local/remote and private/shared fault ratios (and restarts when a task leaves its preferred node); 0 (3.9): a fault that migrated nothing adds 10 jiffies to the period (up to scan_period_max) and every 60 s the mm's next scan resets the period to scan_period_min",
    }

    /// The June 2013 v1 posting's own rules for the two parts mainline
    /// later replaced (its patches 7 and 8), where those switches are off.
    NUMA_SERIES_V1: bool {
        name: "numalab.numa_series_v1",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "Mel Gorman, \"[PATCH 7/8] sched: Split accounting of NUMA hinting faults that pass two-stage filter\" (LKML, 2013-06-26: task_numa_fault priv = cpu_to_node(task_cpu(p)) == page_nid_last(page), task_numa_placement takes the node of most private faults, faults of migrated pages weigh double); \"[PATCH 08/13] sched: Increase NUMA PTE scanning when a new preferred node is selected\" (V2, 2013-07-03, the same patch as v1 8/8 by the V2 cover letter's list; v1's own text not found): numa_next_reset and sysctl_numa_balancing_scan_period_reset removed, task_numa_placement halves numa_scan_period (not below scan_period_min) when a task with numa_migrate_seq >= sysctl_numa_balancing_settle_count (3, v1 5/8) changes its preferred node",
        description: "1: with numalab.numa_fault_classify=0, a hinting fault is private when the page's last faulting node (the two-stage filter's record, updated by local faults too, as 3.9's mpol_misplaced did) is the task's node, the preferred node is the node of most private faults, and faults that migrated their page count twice; with numalab.numa_scan_adapt=0, no 60 s reset: a settled task (3 passes on its preferred node) that changes preferred node halves its scan period (the +10 jiffies per unmigrated fault stays); no effect where those switches are on (mainline's rules replaced both); 0: 3.9's rules there",
    }

    /// 3.8-3.9's own scanner: `task_tick_numa` and `task_numa_work` as
    /// they were before the August 2013 series reworked them.
    NUMA_SCAN_39: bool {
        name: "numalab.numa_scan_39",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "3.9/3.10 kernel/sched/fair.c task_tick_numa, task_numa_work, __sched_fork (a v3.10 vendor tree's fair.c in the code index, the NUMA part unchanged from 3.9) and 3.9 mm/huge_memory.c change_huge_pmd; the later changes as posted: Peter Zijlstra, \"[PATCH 06/27] sched, numa: Mitigate chance that same task always updates PTEs\" (linux-mm, 2013-08-08: node_stamp = now became node_stamp += period, the 2-tick push of the winner), Mel Gorman, \"[PATCH 14/16] sched: Remove check that skips small VMAs\" (linux-mm, 2013-07-11: 3.9's task_numa_work skipped VMAs under HPAGE_SIZE) and \"[PATCH 13/27] mm: Only flush TLBs if a transhuge PMD is modified for NUMA pte scanning\" (2013-08-08: before it every present huge PMD in range counted HPAGE_PMD_NR, already pmd_numa or not)",
        description: "1 (3.8-3.12 before the rework): task_tick_numa sets node_stamp to the task's runtime when its period has elapsed (a new task's first trigger sets its period to scan_period_min, unscaled), new threads are not staggered, the mm's first scan is due at fork; task_numa_work skips VMAs under 2 MiB, keeps no per-VMA scan state, has no virtual-space budget, does not push the winner's node_stamp, and counts every present THP PMD in range as 512 PTE updates (marked before or not) against its scan_size budget and numa_pte_updates; the 60 s reset (numalab.numa_scan_adapt=0) is due from the mm's first fork; 0: mainline's",
    }

    /// 3.8-3.12's PMD-level hinting mark on regular page tables
    /// (`change_pmd_protnuma`, `do_pmd_numa_page`).
    PMD_NUMA_BATCH: bool {
        name: "numalab.pmd_numa_batch",
        aliases: [],
        default: false,
        unit: None,
        location: Location::Lab,
        source: "3.8-3.12 mm/mprotect.c change_pmd_range (change_pte_range reports all_same_node over the present pages it examined; if so change_pmd_protnuma sets pmd_numa) and mm/memory.c do_pmd_numa_page (one fault clears pmd_numa and, under the PTE lock, handles every pte_numa PTE of the PMD: numa_migrate_prep counts numa_hint_faults and numa_hint_faults_local per page; task_numa_fault(curr_nid, 1, migrated) only for a page mpol_misplaced wants moved, curr_nid the target if migrated, else the faulting node); as quoted by Mel Gorman's \"[PATCH 7/8] sched: Split accounting of NUMA hinting faults that pass two-stage filter\" (linux-mm, 2013-06-26, against 3.9) and \"[PATCH 07/63] mm: numa: Sanitize task_numa_fault() callsites\" (2013-10-07: do_pmd_numa_page \"accounts not at all when the page isn't migrated\"); removed with _PAGE_NUMA in 3.15",
        description: "1 (3.8-3.12): a scan that finds every present 4 KiB page under a PMD on one node also marks the PMD, so the next access there takes one hinting fault for all the PMD's marked pages (numa_hint_faults still counts each page; task_numa_fault only for pages the policy wants moved); 0 (mainline): a fault per marked page; no effect on THP VMAs",
    }

    /// `task_numa_compare` sees the task a CPU is about to run as its
    /// `curr`.
    NUMA_COMPARE_NEXT_CURR: bool {
        name: "numalab.numa_compare_next_curr",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "fair.c (6.12) task_numa_compare: cur = rcu_dereference(dst_rq->curr), NULL only when idle or PF_EXITING; core.c migrate_task_to/migrate_swap complete through the stopper (stop_one_cpu, stop_two_cpus) and the woken destination runs the moved task before the next search can read its curr",
        description: "1: in task_numa_compare a CPU with no running task but queued ones (a task moved or swapped there earlier in the same tick, not yet picked) shows the task it will run next (least vruntime) as its curr, a swap candidate, as the kernel's CPU is running it by then; 0: such a CPU counts as idle (cur = NULL: a move if allowed, never a swap)",
    }

    /// Deferred `task_numa_migrate` searches run in fault order.
    NUMA_MIGRATE_FAULT_ORDER: bool {
        name: "numalab.numa_migrate_fault_order",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "fair.c (6.12) task_numa_fault -> numa_migrate_preferred -> task_numa_migrate: each search runs inside its hinting fault, so searches happen in the order of the faults and each sees the moves and swaps of the ones before",
        description: "1: the searches hinting faults asked for since the last tick (the model carries them out at the tick) run in the order of those faults; 0: in task id order, which favours low-numbered threads (the first to choose take the best CPUs and partners)",
    }

    /// `task_numa_work` runs after the tick, in the order CPUs leave it.
    NUMA_WORK_AFTER_TICK: bool {
        name: "numalab.numa_work_after_tick",
        aliases: [],
        default: true,
        unit: None,
        location: Location::Lab,
        source: "kernel/sched/fair.c (6.12, and 3.9) task_tick_numa: task_work_add(curr, work, TWA_RESUME), so task_numa_work runs on the way back to user space after the tick interrupt, and the threads whose check passed in the same tick race for mm->numa_next_scan with try_cmpxchg (3.9: cmpxchg); kernel/time/tick-sched.c tick_setup_sched_timer: without the skew_tick= boot option every CPU's tick fires at the same time, so which thread wins depends on when each CPU leaves its interrupt, not on its number; proposal 2's queue_work_node calls from the same ticks race the same way for the workqueue",
        description: "1: the scans the tick's task_tick_numa calls asked for run after every CPU's tick, in the order the CPUs leave their tick interrupt (the SCHED_SOFTIRQ start spread of kernel/sched/serialize.rs softirq_start), and the first one of an mm takes its numa_next_scan; with kernel.numa_balancing_scan_async=1 the queued items reach the kworkers in that order; 0: each runs inside the tick pass, which visits CPUs from 0 (items in CPU order), so the lowest-numbered due CPU's thread always took the mm's scan (the model before this switch)",
    }

    // Issue 31: the policy extension point (numalab-sim kernel/numa/policy).
    /// The NUMA balancing policy: the ops table the model's decisions go
    /// through. The names are the model's registry's, checked when the
    /// kernel is built (this crate cannot see that registry).
    POLICY: name {
        name: "numalab.policy",
        aliases: [],
        default: "mainline",
        unit: None,
        location: Location::Lab,
        source: "numalab kernel/numa/policy (POLICIES), after sched_ext's struct sched_ext_ops: scan pacing (task_scan_min/max/start, update_task_scan_period), mpol_misplaced, should_numa_migrate_memory, task_numa_placement, task_numa_migrate, task_numa_compare; see docs/policies.md",
        description: "the NUMA balancing policy by name (`numalab list policies`): mainline (the kernel's code, the default; proposals 1, 3 and 4 are its switches) or a policy from the registry, each replacing some of mainline's decisions; a real kernel runs only mainline",
    }
}

/// The declaration answering to `key`: a name or an alias, a location in
/// a real kernel, or an unambiguous bare name ([`crate::spelling`]).
pub fn lookup(key: &str) -> Option<&'static crate::def::Def> {
    resolve(key).ok()
}

/// [`lookup`], or why `key` is not a knob: the nearest spelling, or the
/// knobs an ambiguous bare name could be.
pub fn resolve(key: &str) -> Result<&'static crate::def::Def, crate::spelling::Unknown> {
    crate::spelling::resolve_in(ALL, key)
}

// Proposal 3 (issue 13): the words of INTERLEAVE_NUMA_BALANCING.
choice! {
    /// Which version of proposal 3 (interleave + MPOL_F_NUMA_BALANCING)
    /// the model follows: the words of [`INTERLEAVE_NUMA_BALANCING`].
    pub enum InterleaveNumaBalancing {
        /// Mainline: the flag with MPOL_INTERLEAVE is EINVAL.
        Off = "off",
        /// The proposal as intended: scan, account, move tasks, never pages.
        On = "on",
        /// The posting's code with its two defects (NUMA_TASK_MIG == 1;
        /// THP path not updated).
        AsPosted = "as-posted",
    }
}
