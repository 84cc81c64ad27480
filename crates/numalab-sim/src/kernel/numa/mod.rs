//! Automatic NUMA balancing as mainline has it (`kernel.numa_balancing=1`,
//! NUMA_BALANCING_NORMAL): kernel/sched/fair.c's NUMA parts, the hinting
//! fault of mm/memory.c, `mpol_misplaced` of mm/mempolicy.c, the PROT_NONE
//! marking of mm/mprotect.c and the misplaced-folio migration of
//! mm/migrate.c.
//!
//! The files follow the kernel's function families:
//! - [`scan`]: `task_tick_numa`, `task_numa_work`, `change_prot_numa`,
//!   `vma_is_accessed`, the scan-period bounds, `init_numa_balancing`,
//!   `update_scan_period`;
//! - [`fault`]: `do_numa_page`, `numa_migrate_check`, `mpol_misplaced`,
//!   `should_numa_migrate_memory`, `migrate_misplaced_folio(_prepare)`;
//! - [`placement`]: `task_numa_fault`, `task_numa_placement`,
//!   `update_task_scan_period`, numa groups, task and group weights;
//! - [`migrate`]: `numa_migrate_preferred`, `task_numa_migrate`,
//!   `task_numa_find_cpu`, `task_numa_compare`, `migrate_task_to`,
//!   `migrate_swap`;
//! - [`scan39`]: 3.8-3.9's `task_tick_numa` / `task_numa_work`
//!   (`numalab.numa_scan_39`);
//! - [`pmd_numa`]: 3.8-3.12's `change_pmd_protnuma` / `do_pmd_numa_page`
//!   (`numalab.pmd_numa_batch`);
//! - [`policy`]: the ops table the decisions above go through
//!   (`numalab.policy`); mainline's are the functions of these files,
//!   named `mainline_*`.
//!
//! The load balancer's NUMA pieces (`fbq_classify_*`,
//! `migrate_degrades_locality`) live in `sched/balance.rs`, the rq counters
//! (`account_numa_enqueue/dequeue`) are filled from `sched/mod.rs`, both as
//! in fair.c.
//!
//! How it meets the engine. The scan runs at the tick, where every running
//! task's progress is accounted up to now: `task_tick_numa` decides, and
//! `task_numa_work` (task work run on return to user in the kernel) runs at
//! once and is charged to the task as system time. Hinting faults happen
//! while tasks run between ticks; a fault that reaches `task_numa_migrate`
//! (through `numa_migrate_preferred`) only records the request, and the
//! task move or swap is done at the next tick, when no other CPU is in the
//! middle of running a task. Exited tasks leave their numa group at the
//! first tick after their exit (`task_numa_free`; the engine has no exit
//! hook).
//!
//! Proposal 4's per-cgroup mode (`kernel.numa_balancing=4`) and numalab's
//! per-task control gate `task_numa_work` and `task_numa_fault`
//! ([`cgroup`]).
//!
//! Left out: memory tiering (modes 2 and 3: slow-tier promotion, hot
//! thresholds, rate limits), file-backed memory (anonymous memory shared
//! between processes is modeled, kernel/mm/shmem.rs: its faults carry
//! `TNF_SHARED` when two mms map the folio, so `task_numa_group` joins
//! tasks of different processes), read-only PTEs (every PTE is writable,
//! so `TNF_NO_GROUP` never occurs), KSM
//! and the zero page, mmap_lock contention (the trylock always succeeds),
//! `thp_migration_fail`/`thp_migration_split` (the model never splits a
//! THP).
//!
//! Counters: besides mainline's, the model counts `numa_task_migrated` and
//! `numa_task_swapped` (vmstat and memory.stat) where 6.16-rc1 did, in
//! `migrate_task_to` and once per task in `migrate_swap`; they were
//! reverted in 6.16-rc6, so a mainline kernel reports neither.

pub mod async_scan;
pub mod cgroup;
pub mod fault;
#[cfg(test)]
mod interleave_tests;
pub mod migrate;
pub mod placement;
pub mod pmd_numa;
pub mod policy;
pub mod scan;
pub mod scan39;
pub mod series2013;
#[cfg(test)]
mod shmem_tests;
pub mod state;
pub mod task_work;
#[cfg(test)]
pub(crate) mod tests;

pub use state::NumaState;

use crate::kernel::mm::page_types::CPUPID_UNSET;
use crate::kernel::sysctl::knob;
use crate::kernel::{CpuId, Kernel, NodeId, TaskId};

// ---------------------------------------------------------------------------
// Constants, with units and sources. fair.c = kernel/sched/fair.c.
// ---------------------------------------------------------------------------

/// `NR_NUMA_HINT_FAULT_TYPES`: shared (0) and private (1) faults. fair.c.
pub const NR_NUMA_HINT_FAULT_TYPES: usize = 2;
/// `NR_NUMA_HINT_FAULT_STATS`: MEM and CPU, each shared/private. fair.c.
pub const NR_NUMA_HINT_FAULT_STATS: usize = NR_NUMA_HINT_FAULT_TYPES * 2;
/// `NR_NUMA_HINT_FAULT_BUCKETS`: the averaged stats plus the MEMBUF/CPUBUF
/// buffers of the current window. fair.c.
pub const NR_NUMA_HINT_FAULT_BUCKETS: usize = NR_NUMA_HINT_FAULT_STATS * 2;
/// `NUMA_MEM`: decayed memory faults, per node the page was on.
pub const NUMA_MEM: usize = 0;
/// `NUMA_CPU`: decayed CPU faults, per node the faulting CPU was on.
pub const NUMA_CPU: usize = 1;
/// `NUMA_MEMBUF`: memory faults since the last placement.
pub const NUMA_MEMBUF: usize = 2;
/// `NUMA_CPUBUF`: CPU faults since the last placement.
pub const NUMA_CPUBUF: usize = 3;

/// `MAX_SCAN_WINDOW`: never scan more than this many MB per second. fair.c.
pub const MAX_SCAN_WINDOW_MB: u64 = 2560;
/// `NUMA_PERIOD_SLOTS`: the scan period moves in tenths. fair.c.
pub const NUMA_PERIOD_SLOTS: i64 = 10;
/// `NUMA_PERIOD_THRESHOLD`: aim for 70 % local (or private) faults. fair.c.
pub const NUMA_PERIOD_THRESHOLD: i64 = 7;
/// `ACTIVE_NODE_FRACTION`: a node with more than 1/3 of the busiest node's
/// CPU faults is an active node of its numa group. fair.c.
pub const ACTIVE_NODE_FRACTION: i64 = 3;
/// `SMALLIMP`: improvements below this (of at most 1998) are not worth a
/// task move. fair.c.
pub const SMALLIMP: i64 = 30;
/// Early in a task's life (`p->numa_scan_seq <= 4`: two passes of the
/// two-stage filter) first and private faults migrate at once. fair.c
/// `should_numa_migrate_memory`.
pub const NUMA_EARLY_SCAN_SEQ: u64 = 4;
/// `VMA_PID_RESET_PERIOD` in units of `scan_delay_ms`: a VMA's accessor
/// window rotates every 4 scan delays. fair.c.
pub const VMA_PID_RESET_DELAYS: u64 = 4;
/// `ilog2(BITS_PER_LONG)`: bits of `hash_32(pid, .)` indexing a VMA's
/// `pids_active` words. fair.c, mm.h `vma_set_access_pid_bit`.
pub const VMA_PID_HASH_BITS: u32 = 6;
/// `GOLDEN_RATIO_32` of include/linux/hash.h.
pub const GOLDEN_RATIO_32: u32 = 0x61C8_8647;
/// `node_stamp += 32 * scan time`: scanning takes at most ~3 % of a task's
/// CPU time. fair.c `task_numa_work`.
pub const SCAN_STAMP_FACTOR: u64 = 32;
/// `virtpages = pages * 8`: a scan may walk up to 8 times its budget of
/// virtual space through unpopulated or already-marked ranges. fair.c.
pub const SCAN_VIRT_FACTOR: i64 = 8;
/// The scanner that wins the cmpxchg on `mm->numa_next_scan` pushes its own
/// `node_stamp` by this many ticks so another thread likely scans next.
pub const SCAN_WINNER_TICKS: u64 = 2;
/// `LOAD_AVG_MAX`: the PELT sum of a task runnable all the time. pelt.h.
pub const LOAD_AVG_MAX: u64 = 47742;
/// `SCHED_CAPACITY_SCALE`: capacity of one CPU (every modeled CPU is
/// full-size; SMT siblings are not scaled, as on x86).
pub const SCHED_CAPACITY_SCALE: i64 = 1024;
/// `NICE_0_LOAD` as PELT `load_avg` sees a busy nice-0 task (`task_h_load`).
pub const NICE_0_LOAD: i64 = 1024;

/// `MB_TO_PAGES`: 4 KiB pages per MB.
pub const PAGES_PER_MB: u64 = 1 << (20 - crate::kernel::mm::page_types::PAGE_SHIFT);
/// `HPAGE_SIZE` in bytes: scan chunks end on a 2 MiB boundary.
pub const HPAGE_SIZE: u64 = 1 << crate::kernel::mm::page_types::HPAGE_SHIFT;

/// `min_free_kbytes` bounds (mm/page_alloc.c `calculate_min_free_kbytes`:
/// `int_sqrt(lowmem_kbytes * 16)` clamped to [128 KiB, 256 MiB]).
pub const MIN_FREE_KBYTES_RANGE: (u64, u64) = (128, 262_144);
/// `watermark_scale_factor` default, in 1/10000 of a zone (mm/page_alloc.c):
/// the gap between min, low and high watermarks.
pub const WATERMARK_SCALE_FACTOR: u64 = 10;

/// `TNF_MIGRATED`: the faulting folio was migrated.
pub const TNF_MIGRATED: u32 = 0x01;
/// `TNF_NO_GROUP`: the PTE was not writable; do not form groups.
pub const TNF_NO_GROUP: u32 = 0x02;
/// `TNF_SHARED`: folio mapped by more than one mm in a VM_SHARED VMA.
pub const TNF_SHARED: u32 = 0x04;
/// `TNF_FAULT_LOCAL`: the folio was on the faulting CPU's node.
pub const TNF_FAULT_LOCAL: u32 = 0x08;
/// `TNF_MIGRATE_FAIL`: migration was wanted but failed.
pub const TNF_MIGRATE_FAIL: u32 = 0x10;

/// `NUMA_BALANCING_NORMAL`, bit 0 of `kernel.numa_balancing`.
pub const NUMA_BALANCING_NORMAL: u64 = 1;
/// `NUMA_BALANCING_CGROUP`, bit 2 of `kernel.numa_balancing`: proposal 4's
/// per-cgroup mode (see [`cgroup`]).
pub const NUMA_BALANCING_CGROUP: u64 = 4;

/// Bits of the pid kept in a `last_cpupid` (`LAST__PID_MASK`).
pub const LAST_PID_MASK: u32 = 0xff;
/// Shift of the pid bits in the model's cpupid layout
/// ((pid & 0xff) << 16 | cpu, see `mm::Page::last_cpupid`).
pub const LAST_PID_SHIFT: u32 = 16;
/// Bits of the CPU kept in a `last_cpupid`.
pub const LAST_CPU_MASK: u32 = 0xffff;

// ---------------------------------------------------------------------------
// State.
// ---------------------------------------------------------------------------

/// Per-mm scan state (`mm->numa_next_scan`, `numa_scan_offset`,
/// `numa_scan_seq`).
#[derive(Clone, Debug, Default)]
pub struct MmNumaState {
    /// `numa_next_scan`: earliest jiffy of the next scan (0 = not set).
    pub next_scan: u64,
    /// `numa_scan_offset`: virtual address to resume scanning at.
    pub scan_offset: u64,
    /// `numa_scan_seq`: completed passes over the address space.
    pub scan_seq: u64,
    /// 3.9's `numa_next_reset` (`numalab.numa_scan_adapt=0` only): jiffy
    /// after which a scan resets the scan period (0 = not armed).
    pub next_reset: u64,
}

/// Per-VMA NUMA balancing state (`vma->numab_state`).
#[derive(Clone, Debug, Default)]
pub struct VmaNumabState {
    /// `next_scan`: jiffy before which a new VMA is not scanned.
    pub next_scan: u64,
    /// `pids_active_reset`: jiffy the accessor window rotates next.
    pub pids_active_reset: u64,
    /// `pids_active[2]`: recent accessors by `hash_32(pid, 6)`; [1] fills
    /// on hinting faults, [0] is the previous window.
    pub pids_active: [u64; 2],
    /// `start_scan_seq`: the mm's scan sequence when the state was made.
    pub start_scan_seq: u64,
    /// `prev_scan_seq`: the last sequence that scanned the whole VMA
    /// (starts at `start_scan_seq - 1`).
    pub prev_scan_seq: i64,
}

/// A numa group (`struct numa_group`): tasks that share memory, placed
/// together. Its faults are the sums of its tasks' MEM and CPU faults.
#[derive(Clone, Debug, Default)]
pub struct NumaGroup {
    /// `gid`: pid of the task that created it.
    pub gid: u64,
    /// `nr_tasks` (also stands for the refcount: one reference per task).
    pub nr_tasks: u64,
    /// `active_nodes`: nodes with more than 1/3 of the max CPU faults.
    pub active_nodes: usize,
    /// `total_faults`: sum of the MEM faults.
    pub total_faults: i64,
    /// `max_faults_cpu`: the busiest node's CPU faults.
    pub max_faults_cpu: i64,
    /// `faults[]`: MEM then CPU, `2 * (stat * nr_nodes + nid) + priv`.
    pub faults: Vec<i64>,
}

/// Per-task NUMA balancing state (the `numa_*` fields of `task_struct`).
#[derive(Clone, Debug, Default)]
pub struct TaskNumaState {
    /// `node_stamp`: `sum_exec_runtime` (ns) at which the next scan is due
    /// minus the period.
    pub node_stamp: u64,
    /// `numa_scan_period`, ms.
    pub scan_period: u64,
    /// `numa_scan_period_max`, ms.
    pub scan_period_max: u64,
    /// `numa_scan_seq`: the mm sequence of the last placement.
    pub scan_seq: u64,
    /// `numa_migrate_retry`, jiffies.
    pub migrate_retry: u64,
    /// `numa_migrate_seq` (the 2013 series, 3.9 + v1 5/8 to v3.12):
    /// placement passes since the preferred node last changed; read only by
    /// `numalab.numa_series_v1`'s scan rule (series2013.rs).
    pub migrate_seq: u32,
    /// `numa_preferred_nid` (None = `NUMA_NO_NODE`).
    pub preferred_nid: Option<NodeId>,
    /// `numa_faults[]`: `NR_NUMA_HINT_FAULT_BUCKETS * nr_nodes` counters,
    /// `2 * (stat * nr_nodes + nid) + priv`; empty until the first fault.
    pub faults: Vec<i64>,
    /// `total_numa_faults`: sum of the MEM faults.
    pub total_faults: i64,
    /// `numa_faults_locality[3]`: remote, local, failed migrations (pages).
    pub faults_locality: [u64; 3],
    /// `numa_pages_migrated`.
    pub pages_migrated: u64,
    /// `last_task_numa_placement`, ns.
    pub last_task_numa_placement: u64,
    /// `last_sum_exec_runtime`, ns.
    pub last_sum_exec_runtime: u64,
    /// `numa_group`: index of the task holding the group's data.
    pub group: Option<TaskId>,
    /// The data of the group this task created, while it lives.
    pub own_group: Option<NumaGroup>,
    /// A hinting fault asked for `task_numa_migrate`; done at the next tick.
    pub migrate_requested: bool,
    /// Node of the runqueue the task was last dequeued from, for
    /// `update_scan_period` on a cross-node move.
    pub last_rq_nid: Option<NodeId>,
    /// `task_numa_free` has run (the task exited).
    pub freed: bool,
    /// The group the task was in when it exited (gid, MEM/CPU faults),
    /// kept for the Run record.
    pub exit_group: Option<(u64, Vec<i64>)>,
    /// numalab's per-task control (`PR_SET_NUMA_BALANCING`-like, see
    /// [`cgroup`]); kept across `init_numa_balancing`.
    pub prctl: cgroup::PrNumaBalancing,
}

/// `sched_numa_topology_type` (kernel/sched/topology.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumaTopologyType {
    /// All nodes are one hop apart.
    Direct,
    /// Nodes further apart are reached through intermediate nodes.
    GluelessMesh,
    /// Groups of nodes joined by a backplane.
    Backplane,
}

// ---------------------------------------------------------------------------
// Small helpers shared by the files.
// ---------------------------------------------------------------------------

/// `hash_32(val, bits)` of include/linux/hash.h.
pub fn hash_32(val: u32, bits: u32) -> u32 {
    val.wrapping_mul(GOLDEN_RATIO_32) >> (32 - bits)
}

/// `cpu_pid_to_cpupid` in the model's layout.
pub fn cpu_pid_to_cpupid(cpu: CpuId, pid: u64) -> u32 {
    (((pid as u32) & LAST_PID_MASK) << LAST_PID_SHIFT) | (cpu.index() as u32 & LAST_CPU_MASK)
}

/// `cpupid_to_pid`: the pid bits.
pub fn cpupid_to_pid(cpupid: u32) -> u32 {
    (cpupid >> LAST_PID_SHIFT) & LAST_PID_MASK
}

/// `cpupid_to_cpu`.
pub fn cpupid_to_cpu(cpupid: u32) -> CpuId {
    CpuId::new((cpupid & LAST_CPU_MASK) as usize)
}

/// `cpupid_pid_unset`: the pid bits are all ones. As in the kernel, a task
/// whose pid ends in 0xff looks like "nobody faulted here yet".
pub fn cpupid_pid_unset(cpupid: u32) -> bool {
    cpupid_to_pid(cpupid) == LAST_PID_MASK
}

/// `cpupid_match_pid`: the pid bits are the task's.
pub fn cpupid_match_pid(pid: u64, cpupid: u32) -> bool {
    (pid as u32 & LAST_PID_MASK) == cpupid_to_pid(cpupid)
}

/// True for a page whose `last_cpupid` was never set (`-1 &
/// LAST_CPUPID_MASK`).
pub fn cpupid_unset(cpupid: u32) -> bool {
    cpupid == CPUPID_UNSET
}

/// `task_faults_idx(stat, nid, priv)`.
#[inline]
pub fn faults_idx(nr_nodes: usize, stat: usize, nid: NodeId, private: usize) -> usize {
    NR_NUMA_HINT_FAULT_TYPES * (stat * nr_nodes + nid.index()) + private
}

/// `init_numa_topology_type` for a SLIT matrix.
pub fn numa_topology_type(distance: &[Vec<u32>]) -> NumaTopologyType {
    let mut levels: Vec<u32> = distance.iter().flatten().copied().collect();
    levels.sort_unstable();
    levels.dedup();
    if levels.len() <= 2 {
        return NumaTopologyType::Direct;
    }
    let n = *levels.last().unwrap_or(&10);
    let nn = distance.len();
    for a in 0..nn {
        for b in 0..nn {
            if distance[a][b] < n {
                continue;
            }
            let via = (0..nn).any(|c| distance[a][c] < n && distance[b][c] < n);
            return if via {
                NumaTopologyType::GluelessMesh
            } else {
                NumaTopologyType::Backplane
            };
        }
    }
    NumaTopologyType::Direct
}

impl Kernel {
    /// `sysctl_numa_balancing_mode` (`kernel.numa_balancing`).
    pub fn numa_balancing_mode(&self) -> u64 {
        self.knobs.get(crate::kernel::sysctl::knob::NUMA_BALANCING)
    }

    /// The `sched_numa_balancing` static key: NORMAL mode, or proposal 4's
    /// CGROUP mode, on a machine with more than one node (the kernel applies
    /// the default only then). In CGROUP mode the per-task gates decide
    /// ([`Kernel::task_numa_balance_enabled`]).
    pub fn numa_balancing_enabled(&self) -> bool {
        self.numa_balancing_mode() & (NUMA_BALANCING_NORMAL | NUMA_BALANCING_CGROUP) != 0
            && self.m.nr_nodes() > 1
    }

    /// `msecs_to_jiffies`.
    pub fn msecs_to_jiffies(&self, ms: u64) -> u64 {
        (ms * self.tick_hz()).div_ceil(1000)
    }

    /// `sched_max_numa_distance`.
    pub fn sched_max_numa_distance(&self) -> u32 {
        self.m
            .distance
            .iter()
            .flatten()
            .copied()
            .max()
            .unwrap_or(10)
    }

    /// True when `nid` has CPUs (`node_state(nid, N_CPU)`).
    pub fn node_has_cpus(&self, nid: NodeId) -> bool {
        !self.m.nodes[nid.index()].cpus.is_empty()
    }

    /// `numa_nearest_node(node, N_CPU)`: `node` if it has CPUs, else the
    /// nearest node that has (lowest id on ties).
    pub fn numa_nearest_cpu_node(&self, nid: Option<NodeId>) -> Option<NodeId> {
        let n = nid?;
        if self.node_has_cpus(n) {
            return Some(n);
        }
        self.node_ids()
            .filter(|&o| self.node_has_cpus(o))
            .min_by_key(|&o| (self.node_distance(n, o), o))
    }

    /// `task_numa_group_id`: the group's gid, 0 if none.
    pub fn task_numa_group_id(&self, t: TaskId) -> u64 {
        self.tasks[t]
            .numa
            .group
            .and_then(|g| self.tasks[g].numa.own_group.as_ref())
            .map_or(0, |g| g.gid)
    }

    /// The numa group a task belongs to.
    pub fn numa_group(&self, t: TaskId) -> Option<&NumaGroup> {
        let g = self.tasks[t].numa.group?;
        self.tasks[g].numa.own_group.as_ref()
    }

    /// Checks that every runqueue's `nr_numa_running` and
    /// `nr_preferred_running` match its tasks (a debug invariant).
    pub fn check_numa_counters(&self) -> Result<(), String> {
        for rq in &self.sched.rq {
            let nid = self.cpu_node(rq.cpu);
            let tasks = rq.curr.iter().chain(rq.queue.iter());
            let (mut numa, mut preferred) = (0u32, 0u32);
            for &t in tasks {
                let p = self.tasks[t].numa.preferred_nid;
                numa += u32::from(p.is_some());
                preferred += u32::from(p == Some(nid));
            }
            if (numa, preferred) != (rq.nr_numa_running, rq.nr_preferred_running) {
                return Err(format!(
                    "cpu {}: nr_numa_running/nr_preferred_running {}/{} but tasks say {numa}/{preferred}",
                    rq.cpu, rq.nr_numa_running, rq.nr_preferred_running
                ));
            }
        }
        Ok(())
    }

    /// Housekeeping at the start of each tick (called with CPU 0): frees the
    /// NUMA state of exited tasks (`task_numa_free`) and performs the task
    /// migrations hinting faults asked for since the last tick.
    pub(crate) fn numa_tick_housekeeping(&mut self) {
        use crate::kernel::sched::task_state::TaskState;
        debug_assert_eq!(self.check_numa_counters(), Ok(()));
        for t in TaskId::range(self.tasks.len()) {
            if self.tasks[t].state == TaskState::Dead && !self.tasks[t].numa.freed {
                self.task_numa_free(t);
            }
        }
        // The kernel searches at each fault, so in fault order; without
        // `numalab.numa_migrate_fault_order`, by task id.
        let mut queue = std::mem::take(&mut self.numa.migrate_queue);
        if !self.knobs.get(knob::NUMA_MIGRATE_FAULT_ORDER) {
            queue.sort_unstable();
        }
        for &t in &queue {
            // A request withdrawn since (or already served) is skipped.
            if !std::mem::replace(&mut self.tasks[t].numa.migrate_requested, false) {
                continue;
            }
            let st = self.tasks[t].state;
            let on_rq = matches!(st, TaskState::Runnable | TaskState::Running);
            let off_pref = self.tasks[t]
                .numa
                .preferred_nid
                .is_some_and(|p| p != self.cpu_node(self.tasks[t].cpu));
            if on_rq && off_pref {
                self.task_numa_migrate(t);
            }
        }
        queue.clear();
        self.numa.migrate_queue = queue;
    }

    /// The NUMA part of `task_tick_fair` for `cpu` (called from the tick,
    /// CPU by CPU): `task_tick_numa` for its running task. The CPU-0 call
    /// first does the tick's deferred NUMA work, see
    /// [`Kernel::numa_tick_housekeeping`].
    pub fn task_tick_fair_numa(&mut self, cpu: CpuId) {
        if !self.numa_balancing_enabled() {
            return;
        }
        if cpu.index() == 0 {
            self.numa_tick_housekeeping();
        }
        // Kernel threads have no mm to scan (task_tick_numa: PF_KTHREAD).
        if let Some(t) = self.sched.rq[cpu].curr.filter(|&t| !self.tasks[t].kthread) {
            self.task_tick_numa(t, cpu);
        }
    }

    /// NUMA state of a new task (`init_numa_balancing`), from `parent`
    /// when the engine knows the creating thread (it may have finished
    /// its work: its state is freed at the next tick); else a process's
    /// first thread gets a new mm's state and later threads inherit from
    /// the first live thread of their process.
    pub fn numa_task_init(&mut self, t: TaskId, parent: Option<TaskId>) {
        use crate::kernel::sched::task_state::TaskState;
        let mm = self.tasks[t].mm;
        let parent = parent.or_else(|| {
            self.tasks.keys().find(|&o| {
                o != t
                    && self.tasks[o].mm == mm
                    && !matches!(self.tasks[o].state, TaskState::Dead | TaskState::New)
            })
        });
        self.init_numa_balancing(t, parent);
        if let Some(p) = parent {
            if self.knobs.get(knob::NUMA_GROUP_THREADS) && self.tasks[p].mm == mm {
                self.numa_group_join_creator(t, p);
            }
        }
    }
}
