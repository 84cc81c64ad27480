//! The NUMA scanner: when a task scans (`task_tick_numa`), what it marks
//! (`task_numa_work`, `change_prot_numa`, `vma_is_accessed`), how often
//! (`task_scan_min/start/max`), and the state of new tasks
//! (`init_numa_balancing`) and of tasks moved across nodes
//! (`update_scan_period`). kernel/sched/fair.c, mm/mempolicy.c,
//! mm/mprotect.c.
//!
//! Scan cost: `task_numa_work` is charged to the scanning task as system
//! time, `SCAN_WORK_FIXED_NS` per call plus `numalab.pte_update_ns`
//! (default `PTE_UPDATE_NS`, measured) per present entry walked (a THP
//! PMD is one entry), at a guest's `scan_cost_scale`, and pushes the task's
//! `node_stamp` by 32 times that. Also charged, and in the stamp as the
//! kernel measures the whole run of `task_numa_work`: the
//! `mmap_read_trylock` atomics (kernel/locking/mmap_lock.rs) and the TLB
//! shootdown each `change_prot_numa` that changed PTEs ends with
//! (kernel/mm/tlb.rs; the other CPUs running the mm pay their interrupts).
//!
//! Left out: the skip rules for VMAs and pages the model does not have
//! (hugetlb, VM_MIXEDMAP, read-only file mappings, PROT_NONE VMAs, KSM,
//! zone-device and DMA-pinned pages, dirty file pages), memory tiering's
//! scan-time stamps, the mmap_lock trylock failing, `cond_resched`,
//! splitting a THP partly covered by a scan range (ranges end on 2 MiB
//! boundaries and VMAs start on them, so it never happens).

use super::{
    hash_32, VmaNumabState, HPAGE_SIZE, MAX_SCAN_WINDOW_MB, PAGES_PER_MB, SCAN_STAMP_FACTOR,
    SCAN_VIRT_FACTOR, SCAN_WINNER_TICKS, VMA_PID_HASH_BITS, VMA_PID_RESET_DELAYS,
};
use crate::kernel::mm::{MmState, HPAGE_PMD_NR, NO_NODE, PAGE_SHIFT};
use crate::kernel::sched::TaskState;
use crate::kernel::stats::Vm;
use crate::kernel::sysctl::knob;
use crate::kernel::{CpuId, Kernel, MmId, NodeId, TaskId, VmaId};
use crate::physics::costs;

/// What a `task_numa_work` pass did, for [`Kernel::end_scan_pass`].
pub(crate) struct ScanPass {
    /// Where the walk stopped (`vma != NULL` at `out:`), or `None` when it
    /// reached the last VMA.
    pub stopped_at: Option<u64>,
    /// Base pages marked PROT_NONE (`numa_pte_updates`).
    pub marked: u64,
    /// Present entries walked.
    pub examined: u64,
    /// The locks' and TLB flushes' time, ns.
    pub locks_ns: f64,
}

impl Kernel {
    /// `numa_balancing/scan_delay_ms`.
    pub(crate) fn numa_scan_delay_ms(&self) -> u64 {
        self.knobs.get(knob::SCAN_DELAY_MS)
    }

    /// `task_nr_scan_windows` (fair.c): RSS in units of `scan_size_mb`,
    /// rounded up, at least 1.
    pub fn task_nr_scan_windows(&self, t: TaskId) -> u64 {
        let nr_scan_pages = (self.knobs.get(knob::SCAN_SIZE_MB) * PAGES_PER_MB).max(1);
        let mut rss = self.mem.mm_rss(self.tasks[t].mm);
        if rss == 0 {
            rss = nr_scan_pages;
        }
        rss.div_ceil(nr_scan_pages)
    }

    /// `task_scan_min` (fair.c), ms: `scan_period_min` spread over the
    /// scan windows, floored so no more than `MAX_SCAN_WINDOW` MB/s are
    /// scanned.
    pub fn mainline_task_scan_min(&self, t: TaskId) -> u64 {
        let scan_size = self.knobs.get(knob::SCAN_SIZE_MB).max(1);
        let windows = if scan_size < MAX_SCAN_WINDOW_MB {
            MAX_SCAN_WINDOW_MB / scan_size
        } else {
            1
        };
        let floor = 1000 / windows;
        let scan = self.knobs.get(knob::SCAN_PERIOD_MIN_MS) / self.task_nr_scan_windows(t);
        floor.max(scan)
    }

    /// Group scaling of a scan period (`period * refcount * (shared + 1) /
    /// (private + shared + 1)`), as `task_scan_start`/`task_scan_max` do it.
    fn group_scaled_period(&self, t: TaskId, period: u64) -> Option<u64> {
        let g = self.numa_group(t)?;
        let nn = self.m.nr_nodes();
        let (mut shared, mut private) = (0u64, 0u64);
        for nid in self.node_ids() {
            shared += g.faults[super::faults_idx(nn, super::NUMA_MEM, nid, 0)].max(0) as u64;
            private += g.faults[super::faults_idx(nn, super::NUMA_MEM, nid, 1)].max(0) as u64;
        }
        Some(period * g.nr_tasks * (shared + 1) / (private + shared + 1))
    }

    /// `task_scan_start` (fair.c), ms: the minimum, scaled up for a task in
    /// a group that shares much of its memory.
    pub fn mainline_task_scan_start(&self, t: TaskId) -> u64 {
        let smin = self.task_scan_min(t);
        let period = self.group_scaled_period(t, smin).unwrap_or(smin);
        smin.max(period)
    }

    /// `task_scan_max` (fair.c), ms: `scan_period_max` spread over the scan
    /// windows, scaled up with the group's shared faults.
    pub fn mainline_task_scan_max(&self, t: TaskId) -> u64 {
        let smin = self.task_scan_min(t);
        let mut smax = self.knobs.get(knob::SCAN_PERIOD_MAX_MS) / self.task_nr_scan_windows(t);
        if let Some(p) = self.group_scaled_period(t, smax) {
            smax = smax.max(p);
        }
        smin.max(smax)
    }

    /// `init_numa_balancing` (fair.c): NUMA state of new task `t`. With no
    /// parent the task starts a new mm (first scan after `scan_delay`);
    /// a thread inherits its parent's preferred node and its first scan is
    /// staggered, with the kernel's unit mix-up kept: `min(task_scan_max`
    /// (ms), `period * mm_users` (ns)) as ns, plus two ticks. Left out:
    /// `mm_users` counts threads, not other mm references.
    pub fn init_numa_balancing(&mut self, t: TaskId, parent: Option<TaskId>) {
        let mm = self.tasks[t].mm;
        let delay = self.numa_scan_delay_ms();
        // mm_users as sched_fork() sees it: the child is not counted yet.
        let mm_users = self.mem.mms[mm].mm_users().saturating_sub(1);
        if parent.is_none() || mm_users == 1 {
            self.mem.mms[mm].numa.next_scan = self.jiffies() + self.msecs_to_jiffies(delay);
            self.mem.mms[mm].numa.scan_seq = 0;
        }
        let seq = self.mem.mms[mm].numa.scan_seq;
        let n = &mut self.tasks[t].numa;
        n.node_stamp = 0;
        n.scan_seq = seq;
        n.scan_period = delay;
        n.migrate_retry = 0;
        n.faults.clear();
        n.pages_migrated = 0;
        n.total_faults = 0;
        n.group = None;
        n.last_task_numa_placement = 0;
        n.last_sum_exec_runtime = 0;
        let new_mm = parent.is_none() || mm_users == 1;
        let Some(p) = parent else {
            self.sched_setnuma(t, None);
            if self.numa_scan_39_on() {
                self.sched_fork_numa_39(t, new_mm);
            }
            return;
        };
        let pref = self.tasks[p].numa.preferred_nid;
        self.sched_setnuma(t, pref);
        let ns = self.tasks[p].numa.scan_period * mm_users * crate::kernel::NSEC_PER_MSEC;
        let stagger = (self.task_scan_max(p) as u32).min(ns as u32) as u64;
        self.tasks[t].numa.node_stamp = stagger + 2 * self.tick_ns;
        if self.numa_scan_39_on() {
            self.sched_fork_numa_39(t, new_mm);
        }
    }

    /// `task_tick_numa` (fair.c) for task `t` running on `cpu`: on the
    /// task's CPU-time clock, once `sum_exec_runtime` passes
    /// `node_stamp + period`, advance the stamp and scan if the mm is due.
    /// The scan is queued as task work and runs after the tick pass
    /// (task_work.rs). Left out: the pending-work check (the queue is
    /// emptied every tick, so no work is pending at the next).
    pub fn task_tick_numa(&mut self, t: TaskId, cpu: CpuId) {
        if self.tasks[t].state == TaskState::Dead {
            return;
        }
        if self.numa_scan_39_on() {
            return self.task_tick_numa_39(t, cpu);
        }
        let now = self.tasks[t].sum_exec_runtime;
        let period = self.tasks[t].numa.scan_period * crate::kernel::NSEC_PER_MSEC;
        if now > self.tasks[t].numa.node_stamp + period {
            if self.tasks[t].numa.node_stamp == 0 {
                self.tasks[t].numa.scan_period = self.task_scan_start(t);
            }
            self.tasks[t].numa.node_stamp += period;
            let mm = self.tasks[t].mm;
            if self.jiffies() >= self.mem.mms[mm].numa.next_scan {
                // Proposal 2 (kernel.numa_balancing_scan_async): queue the
                // scan on a kworker of this node instead (async_scan.rs).
                if self.numa_scan_async() {
                    self.queue_numa_async_work(t, cpu);
                } else {
                    self.queue_task_numa_work(t, cpu);
                }
            }
        }
    }

    /// `vma_is_accessed` (fair.c): should task `t` scan VMA `vi`?
    fn vma_is_accessed(&self, t: TaskId, mm: MmId, vi: VmaId) -> bool {
        let m = &self.mem.mms[mm];
        let v = &m.vmas[vi];
        let Some(ns) = v.numab.as_ref() else {
            return true;
        };
        if m.numa.scan_seq.saturating_sub(ns.start_scan_seq) < 2 {
            return true;
        }
        let pids = ns.pids_active[0] | ns.pids_active[1];
        let bit = hash_32(self.tasks[t].pid as u32, VMA_PID_HASH_BITS);
        if pids & (1u64 << bit) != 0 {
            return true;
        }
        if m.numa.scan_offset > v.start {
            return true;
        }
        m.numa.scan_seq as i64 > ns.prev_scan_seq + m.users as i64
    }

    /// `task_numa_work` (fair.c): one scan by task `t` on `cpu`. Takes the
    /// mm's scan slot (`numa_next_scan`), walks the VMAs from
    /// `numa_scan_offset` with a budget of `scan_size_mb` (pages of chunks
    /// that had an update) and 8 times that of virtual space, and marks
    /// pages PROT_NONE. Left out: the cmpxchg losing (scans are serial
    /// here), the mmap_lock trylock failing (no writer ever holds it).
    pub fn task_numa_work(&mut self, t: TaskId, cpu: CpuId) {
        self.numa_scan(t, cpu, t);
    }

    /// `numa_scan(p)` of proposal 2 (the body `task_numa_work` had): the
    /// scan for task `t` run on `cpu` by task `current`, which pays its CPU
    /// time (`t` itself when synchronous, a kworker when asynchronous);
    /// `t`'s `node_stamp` is pushed by 32 times that time either way.
    /// Returns the time charged, ns (0 when nothing was scanned).
    pub(crate) fn numa_scan(&mut self, t: TaskId, cpu: CpuId, current: TaskId) -> f64 {
        if self.numa_scan_39_on() {
            return self.task_numa_work_39(t, cpu, current);
        }
        let now = self.jiffies();
        if self.tasks[t].state == TaskState::Dead {
            return 0.0;
        }
        // Proposal 4: a task whose cgroup (or per-task control) is not
        // enabled is not scanned; read at every scan, so a write takes
        // effect at the next one.
        if !self.task_numa_balance_enabled(t) {
            return 0.0;
        }
        // Memory pinned to one node by cpuset.mems: nothing can migrate.
        if self.task_mems(t).len() == 1 {
            return 0.0;
        }
        let mm = self.tasks[t].mm;
        let delay = self.numa_scan_delay_ms();
        if self.mem.mms[mm].numa.next_scan == 0 {
            self.mem.mms[mm].numa.next_scan = now + self.msecs_to_jiffies(delay);
        }
        // 3.9's reset hammer runs before the rate check, as it did there.
        if !self.numa_scan_adapt_on() {
            self.numa_scan_reset_39(t, mm, now);
        }
        if now < self.mem.mms[mm].numa.next_scan {
            return 0.0;
        }
        if self.tasks[t].numa.scan_period == 0 {
            self.tasks[t].numa.scan_period_max = self.task_scan_max(t);
            self.tasks[t].numa.scan_period = self.task_scan_start(t);
        }
        self.mem.mms[mm].numa.next_scan =
            now + self.msecs_to_jiffies(self.tasks[t].numa.scan_period);
        self.tasks[t].numa.node_stamp += SCAN_WINNER_TICKS * self.tick_ns;

        let mut pages = (self.knobs.get(knob::SCAN_SIZE_MB) * PAGES_PER_MB) as i64;
        let mut virtpages = pages * SCAN_VIRT_FACTOR;
        if pages == 0 {
            return 0.0;
        }
        // change_pte_range: in a single-threaded mm, pages already on the
        // scanning CPU's node are left alone.
        let target_node = (self.mem.mms[mm].mm_users() == 1).then(|| self.cpu_node(cpu));
        let pid_reset = self.msecs_to_jiffies(VMA_PID_RESET_DELAYS * delay);
        let nvmas = self.mem.mms[mm].vmas.len();
        // mmap_read_trylock / mmap_read_unlock: the count line's two
        // atomics (kernel/locking/mmap_lock.rs).
        let mut locks_ns = self
            .mem
            .locks
            .mmap_read_trylock_unlock(&self.m, self.now, cpu, mm);
        let mut examined = 0u64;
        let mut marked = 0u64;
        let mut pids_skipped = false;
        let mut pids_forced = false;
        let mut start;
        // The VMA the walk stopped in (`vma != NULL` at `out:`).
        let mut stopped: Option<VmaId>;
        'retry: loop {
            start = self.mem.mms[mm].numa.scan_offset;
            let mut vi = self.mem.mms[mm].vmas.position(|v| v.end() > start);
            if vi.is_none() {
                self.mem.reset_ptenuma_scan(mm);
                start = 0;
                vi = self.mem.mms[mm].vmas.first_key();
            }
            stopped = None;
            let mut cur = vi;
            while let Some(i) = cur {
                let next = Some(VmaId::new(i.index() + 1)).filter(|n| n.index() < nvmas);
                cur = next;
                // vma_policy_mof: plain bind/interleave memory is not scanned.
                if !self.vma_policy(t, i).mof {
                    self.trace_skip_vma(t, cpu, mm, i, "unsuitable");
                    continue;
                }
                let seq = self.mem.mms[mm].numa.scan_seq;
                if self.mem.mms[mm].vmas[i].numab.is_none() {
                    let next_scan = now + self.msecs_to_jiffies(delay);
                    self.mem.mms[mm].vmas[i].numab = Some(VmaNumabState {
                        next_scan,
                        pids_active_reset: next_scan + pid_reset,
                        pids_active: [0, 0],
                        start_scan_seq: seq,
                        prev_scan_seq: seq as i64 - 1,
                    });
                }
                let vm_start = self.mem.mms[mm].vmas[i].start;
                let vm_end = self.mem.mms[mm].vmas[i].end();
                let mut skip = None;
                {
                    let ns = self.mem.mms[mm].vmas[i]
                        .numab
                        .as_mut()
                        .expect("numab set above");
                    // New VMAs of short-lived tasks wait a scan delay.
                    if seq != 0 && now < ns.next_scan {
                        skip = Some("scan_delay");
                    }
                    // Rotate the accessor window.
                    if skip.is_none() && seq != 0 && now > ns.pids_active_reset {
                        ns.pids_active_reset += pid_reset;
                        ns.pids_active[0] = ns.pids_active[1];
                        ns.pids_active[1] = 0;
                    }
                    // Not twice within one sequence.
                    if skip.is_none() && ns.prev_scan_seq == seq as i64 {
                        self.mem.mms[mm].numa.scan_offset = vm_end;
                        skip = Some("seq_completed");
                    }
                }
                if let Some(reason) = skip {
                    self.trace_skip_vma(t, cpu, mm, i, reason);
                    continue;
                }
                if !pids_forced && !self.vma_is_accessed(t, mm, i) {
                    pids_skipped = true;
                    self.trace_skip_vma(t, cpu, mm, i, "pid_inactive");
                    continue;
                }
                loop {
                    start = start.max(vm_start);
                    let end = (start + ((pages as u64) << PAGE_SHIFT))
                        .next_multiple_of(HPAGE_SIZE)
                        .min(vm_end);
                    let (updated, walked) =
                        self.change_prot_numa(t, mm, i, start, end, target_node);
                    examined += walked;
                    marked += updated;
                    if updated > 0 {
                        // tlb_finish_mmu: flush what changed (kernel/mm/tlb.rs).
                        let stride = self.mem.mms[mm].vmas[i].page_shift;
                        locks_ns += self.flush_tlb_mm_range(cpu, mm, start, end, stride);
                    }
                    let span = ((end - start) >> PAGE_SHIFT) as i64;
                    if updated > 0 {
                        pages -= span;
                    }
                    virtpages -= span;
                    start = end;
                    if pages <= 0 || virtpages <= 0 {
                        stopped = Some(i);
                        break 'retry;
                    }
                    if end == vm_end {
                        break;
                    }
                }
                if let Some(ns) = self.mem.mms[mm].vmas[i].numab.as_mut() {
                    ns.prev_scan_seq = seq as i64;
                }
                // Force-scan only one VMA at a time.
                if pids_forced {
                    stopped = Some(i);
                    break;
                }
            }
            // Every VMA was skipped for want of this pid: force one.
            if stopped.is_none() && !pids_forced && pids_skipped {
                pids_forced = true;
                continue 'retry;
            }
            break;
        }
        let pass = ScanPass {
            stopped_at: stopped.map(|_| start),
            marked,
            examined,
            locks_ns,
        };
        let charged = self.end_scan_pass(t, cpu, current, mm, &pass);
        // The run time the kernel measured for the pass: on a QEMU guest it
        // includes what the host kept the vCPU off meanwhile (sched/vcpu.rs).
        let mut measured = charged;
        if self.knobs.get(knob::VCPU_SCAN_STAMP) {
            if let Some(p) = &self.m.kernel.vcpu_preemption {
                measured += self.sched.vcpu_host_delay_ns(p, charged);
            }
        }
        self.tasks[t].numa.node_stamp += SCAN_STAMP_FACTOR * measured as u64;
        charged
    }

    /// The end of a `task_numa_work` pass (mainline's and 3.9's): where the
    /// next pass starts (`numa_scan_offset`, or a new sequence when the
    /// walk reached the end), the model's `numalab_scan` event, and the
    /// pass's cost charged to `current` (kernel work x `cost_scale`).
    /// Returns the time charged, ns.
    pub(crate) fn end_scan_pass(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        current: TaskId,
        mm: MmId,
        pass: &ScanPass,
    ) -> f64 {
        match pass.stopped_at {
            Some(start) => self.mem.mms[mm].numa.scan_offset = start,
            None => self.mem.reset_ptenuma_scan(mm),
        }
        let off = self.mem.mms[mm].numa.scan_offset;
        let (pid, period) = (self.tasks[t].pid, self.tasks[t].numa.scan_period);
        let (marked, examined) = (pass.marked, pass.examined);
        // The model's own event: the kernel has no tracepoint for a pass.
        self.trace(Some(t), cpu, "numalab_scan", || {
            format!(
                "pid={pid} pages_updated={marked} ptes_examined={examined} numa_scan_offset={off:X} scan_period_ms={period}"
            )
        });
        // The per-PTE cost is the lab knob's (default the measured
        // `costs::PTE_UPDATE_NS`); a guest's scan runs at its own TCG
        // factor (`[kernel] scan_cost_scale`).
        let pte_ns = self.knobs.get(knob::PTE_UPDATE_NS) as f64;
        let cost = (costs::SCAN_WORK_FIXED_NS + pte_ns * examined as f64) * self.scan_rescale()
            + pass.locks_ns;
        // The kernel adds what the scan took: the charged (scaled) time,
        // measured on `current`'s clock.
        let charged = self.charge_sys(current, cost);
        self.numa.async_scan.stats.scan_ns += charged;
        self.numa.async_scan.stats.scans += 1;
        charged
    }

    /// What turns the scan pass's native cost into the units
    /// [`Kernel::charge_sys`] takes: `scan_cost_scale / cost_scale` when
    /// the machine gives one (`[kernel] scan_cost_scale`), else 1.
    fn scan_rescale(&self) -> f64 {
        let k = &self.m.kernel;
        k.scan_cost_scale.map_or(1.0, |f| f / k.cost_scale)
    }

    /// `sched_skip_vma_numa`: the scan by `t` on `cpu` skips VMA `vi`
    /// for `reason` (the kernel's `NUMAB_SKIP_REASON` names).
    fn trace_skip_vma(&mut self, t: TaskId, cpu: CpuId, mm: MmId, vi: VmaId, reason: &str) {
        if self.trace.is_none() {
            return;
        }
        let off = self.mem.mms[mm].numa.scan_offset;
        let (vs, ve) = (
            self.mem.mms[mm].vmas[vi].start,
            self.mem.mms[mm].vmas[vi].end(),
        );
        self.trace(Some(t), cpu, "sched_skip_vma_numa", || {
            format!("numa_scan_offset={off:X} vm_start={vs:X} vm_end={ve:X} reason={reason}")
        });
    }

    /// `change_prot_numa` (mm/mempolicy.c → `change_protection` with
    /// MM_CP_PROT_NUMA, mm/mprotect.c): marks the present, not yet marked
    /// pages of `[start, end)` of VMA `vi` PROT_NONE. A THP PMD counts
    /// 512 `numa_pte_updates` and one `numa_huge_pte_updates`. With
    /// `target_node` set (single-threaded mm), base pages already there are
    /// skipped. Returns (base pages updated, present entries walked).
    pub fn change_prot_numa(
        &mut self,
        t: TaskId,
        mm: MmId,
        vi: VmaId,
        start: u64,
        end: u64,
        target_node: Option<NodeId>,
    ) -> (u64, u64) {
        let nn = self.m.nr_nodes();
        // 3.8-3.12: PMDs whose present pages share a node get `pmd_numa`.
        let batch = self.pmd_numa_batch_on() && !self.mem.mms[mm].vmas[vi].is_thp();
        // 3.9's change_huge_pmd returned 1 for every huge PMD it locked, so
        // change_pmd_range counted HPAGE_PMD_NR for a PMD already pmd_numa
        // too (`numalab.numa_scan_39`, scan39.rs).
        let recount_thp = self.numa_scan_39_on() && self.mem.mms[mm].vmas[vi].is_thp();
        let mut pmd_marks: Vec<usize> = Vec::new();
        let v = &mut self.mem.mms[mm].vmas[vi];
        if end <= start || start >= v.end() {
            return (0, 0);
        }
        let shift = v.page_shift;
        let len = v.pages.len();
        let from = ((start.max(v.start) - v.start) >> shift) as usize;
        let to = (((end.min(v.end()) - v.start) + (1u64 << shift) - 1) >> shift) as usize;
        let to = to.min(len);
        let thp = v.is_thp();
        let ppc = v.pages_per_chunk;
        let target = target_node.map(|n| n.index() as u8);
        let (mut updated, mut huge, mut walked) = (0u64, 0u64, 0u64);
        let mut p = from;
        while p < to {
            let c = p / ppc;
            let cstart = c * ppc;
            let cfull_end = ((c + 1) * ppc).min(len);
            let cend = cfull_end.min(to);
            let whole = p == cstart && cend == cfull_end;
            if batch && change_pte_range_all_same_node(v, nn, c, p, cend, whole) {
                pmd_marks.push(c);
            }
            if whole {
                let present: u64 = v.chunk_nodes[c * nn..(c + 1) * nn]
                    .iter()
                    .map(|&x| x as u64)
                    .sum();
                walked += present;
                // Present pages not yet marked = chunk length - special.
                if (cfull_end - cstart) as u64 == v.chunk_special[c] as u64 {
                    if recount_thp {
                        updated += present * HPAGE_PMD_NR;
                    }
                    p = cend;
                    continue;
                }
            }
            for q in p..cend {
                let pg = v.pages[q];
                if pg.nid == NO_NODE {
                    continue;
                }
                if !whole {
                    walked += 1;
                }
                if pg.protnone {
                    if recount_thp {
                        updated += HPAGE_PMD_NR;
                    }
                    continue;
                }
                if !thp && target == Some(pg.nid) {
                    continue;
                }
                v.set_protnone(q, true);
                if thp {
                    updated += HPAGE_PMD_NR;
                    huge += 1;
                } else {
                    updated += 1;
                }
            }
            p = cend;
        }
        if updated > 0 {
            self.count_memcg_event(t, Vm::NumaPteUpdates, updated);
        }
        if huge > 0 {
            self.vmstat.add(Vm::NumaHugePteUpdates, huge);
        }
        for c in pmd_marks {
            self.change_pmd_protnuma(mm, vi, c);
        }
        (updated, walked)
    }

    /// `update_scan_period` (fair.c, from `migrate_task_rq_fair`): a task
    /// with NUMA faults moved from node `src` to `dst` starts scanning at
    /// the start rate again; after its first pass, not when it moves to
    /// its preferred node or was already off it.
    pub(crate) fn update_scan_period(&mut self, t: TaskId, src: NodeId, dst: NodeId) {
        // 3.9 (`numalab.numa_scan_adapt=0`) did not restart on a move.
        if !self.numa_balancing_enabled() || src == dst || !self.numa_scan_adapt_on() {
            return;
        }
        let n = &self.tasks[t].numa;
        if n.faults.is_empty() || self.tasks[t].state == TaskState::Dead {
            return;
        }
        if n.scan_seq != 0 {
            let pref = n.preferred_nid;
            if pref == Some(dst) || (pref.is_some() && pref != Some(src)) {
                return;
            }
        }
        self.tasks[t].numa.scan_period = self.task_scan_start(t);
    }

    /// `account_numa_enqueue` (fair.c) plus the cross-node check of
    /// `migrate_task_rq_fair` → `update_scan_period`.
    pub(crate) fn account_numa_enqueue(&mut self, t: TaskId, cpu: CpuId) {
        let nid = self.cpu_node(cpu);
        self.account_numa_counters(t, cpu, true);
        if let Some(src) = self.tasks[t].numa.last_rq_nid {
            self.update_scan_period(t, src, nid);
        }
    }

    /// `account_numa_dequeue` (fair.c); remembers the node for
    /// `update_scan_period`.
    pub(crate) fn account_numa_dequeue(&mut self, t: TaskId, cpu: CpuId) {
        self.account_numa_counters(t, cpu, false);
        self.tasks[t].numa.last_rq_nid = Some(self.cpu_node(cpu));
    }

    /// `rq->nr_numa_running` / `nr_preferred_running` bookkeeping.
    pub(crate) fn account_numa_counters(&mut self, t: TaskId, cpu: CpuId, add: bool) {
        let nid = self.cpu_node(cpu);
        let pref = self.tasks[t].numa.preferred_nid;
        let numa = u32::from(pref.is_some());
        let preferred = u32::from(pref == Some(nid));
        let rq = &mut self.sched.rq[cpu];
        if add {
            rq.nr_numa_running += numa;
            rq.nr_preferred_running += preferred;
        } else {
            rq.nr_numa_running = rq.nr_numa_running.saturating_sub(numa);
            rq.nr_preferred_running = rq.nr_preferred_running.saturating_sub(preferred);
        }
    }
}

/// `change_pte_range`'s `all_same_node` (3.8-3.12 mm/mprotect.c) for pages
/// `[p, end)` of chunk `c` of `v`: true when the present pages examined are
/// all on one node, and (unlike 3.9, see pmd_numa.rs) at least one is
/// present. A whole chunk is read from its per-node counts.
fn change_pte_range_all_same_node(
    v: &crate::kernel::mm::Vma,
    nn: usize,
    c: usize,
    p: usize,
    end: usize,
    whole: bool,
) -> bool {
    if whole {
        return v.chunk_nodes[c * nn..(c + 1) * nn]
            .iter()
            .filter(|&&x| x > 0)
            .count()
            == 1;
    }
    let mut nodes = v.pages[p..end]
        .iter()
        .map(|pg| pg.nid)
        .filter(|&n| n != NO_NODE);
    match nodes.next() {
        Some(first) => nodes.all(|n| n == first),
        None => false,
    }
}

impl MmState {
    /// `get_mm_rss`: resident base pages of address space `mm`, from the
    /// per-chunk summaries.
    pub fn mm_rss(&self, mm: MmId) -> u64 {
        self.mms[mm]
            .vmas
            .iter()
            .map(|v| v.chunk_nodes.iter().map(|&x| x as u64).sum::<u64>() * v.nr_base_pages())
            .sum()
    }

    /// `reset_ptenuma_scan` (fair.c): a pass is complete.
    pub(super) fn reset_ptenuma_scan(&mut self, mm: MmId) {
        self.mms[mm].numa.scan_seq += 1;
        self.mms[mm].numa.scan_offset = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fx;
    use crate::kernel::mm::mempolicy::MemPolicy;
    use crate::kernel::mm::mempolicy::MpolMode;
    use crate::kernel::stats::Vm;
    use crate::kernel::Kernel;
    use crate::kernel::{CgroupId, MmId, TaskId};
    use crate::physics::costs;
    use numalab_topology::NodeMask;

    /// A two-thread process with `mb` MB on node 0, threads on CPUs 0 and 2,
    /// at a time when its first scan is due.
    fn setup(mb: u64, thp: bool, policy: Option<MemPolicy>) -> (Kernel, MmId, TaskId) {
        let mut k = fx::kernel("tiny-2n", &[]);
        let mm = fx::add_mm(&mut k, mb << 20, thp, policy);
        let n = k.mem.mms[mm].vmas[fx::V0].pages.len();
        fx::populate(&mut k, mm, 0, n, fx::n(0));
        let t = fx::add_task(&mut k, mm, fx::c(0));
        fx::add_task(&mut k, mm, fx::c(2));
        k.now = 2_000_000_000;
        (k, mm, t)
    }

    /// The system time one 256 MB pass over 4 KiB pages charges with
    /// `sets` on a machine with `cost_scale` and `scan_cost_scale`.
    fn pass_sys_ns(sets: &[&str], cost_scale: f64, scan_cost_scale: Option<f64>) -> f64 {
        let mut k = fx::kernel("tiny-2n", sets);
        k.m.kernel.cost_scale = cost_scale;
        k.m.kernel.scan_cost_scale = scan_cost_scale;
        let mm = fx::add_mm(&mut k, 256 << 20, false, None);
        let n = k.mem.mms[mm].vmas[fx::V0].pages.len();
        fx::populate(&mut k, mm, 0, n, fx::n(0));
        let t = fx::add_task(&mut k, mm, fx::c(0));
        fx::add_task(&mut k, mm, fx::c(2));
        k.now = 2_000_000_000;
        k.task_numa_work(t, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 65536);
        k.tasks[t].sys_ns
    }

    #[test]
    fn a_pass_costs_the_pte_knob_per_pte_at_the_scans_own_scale() {
        // The knob is the per-PTE figure: 35 ns less a PTE, 65536 PTEs.
        let measured = pass_sys_ns(&[], 1.0, None);
        let old = pass_sys_ns(&["numalab.pte_update_ns=10"], 1.0, None);
        let saved = 65536.0 * (costs::PTE_UPDATE_NS - 10.0);
        assert!((measured - old - saved).abs() < 1.0, "{measured} {old}");
        assert!(measured > 65536.0 * costs::PTE_UPDATE_NS);
        // A guest's scan runs at scan_cost_scale, its other kernel work at
        // cost_scale: the pass's own cost scales 40/180, the rest not.
        let guest = pass_sys_ns(&[], 180.0, None);
        let scan_scaled = pass_sys_ns(&[], 180.0, Some(40.0));
        let pass = costs::SCAN_WORK_FIXED_NS + 65536.0 * costs::PTE_UPDATE_NS;
        assert!(
            (guest - scan_scaled - pass * 140.0).abs() < 1.0,
            "{guest} {scan_scaled}"
        );
    }

    #[test]
    fn scan_budget_stops_at_256_mb_and_the_next_scan_resumes_there() {
        let (mut k, mm, t) = setup(384, false, None);
        k.task_numa_work(t, fx::c(0));
        assert_eq!(
            k.vmstat.get(Vm::NumaPteUpdates),
            65536,
            "256 MB of 4 KiB pages"
        );
        assert_eq!(
            k.cgroups.all[CgroupId::new(0)].stat.get(Vm::NumaPteUpdates),
            65536
        );
        let start = k.mem.mms[mm].vmas[fx::V0].start;
        assert_eq!(k.mem.mms[mm].numa.scan_offset, start + (256 << 20));
        assert_eq!(k.mem.mms[mm].numa.scan_seq, 0);
        assert!(k.tasks[t].sys_ns > 65536.0 * costs::PTE_UPDATE_NS);
        // Too early: the mm's next scan is a scan period away.
        k.task_numa_work(t, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 65536);
        k.now += 1_000_000_000;
        k.task_numa_work(t, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 98304, "the last 128 MB");
        assert_eq!(
            k.mem.mms[mm].numa.scan_seq, 1,
            "end of the address space: next pass"
        );
        assert_eq!(k.mem.mms[mm].numa.scan_offset, 0);
        k.check_invariants().unwrap();
    }

    #[test]
    fn a_thp_pmd_counts_512_pte_updates_and_one_huge_update() {
        let (mut k, mm, t) = setup(8, true, None);
        k.task_numa_work(t, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 4 * 512);
        assert_eq!(k.vmstat.get(Vm::NumaHugePteUpdates), 4);
        assert!(k.mem.mms[mm].vmas[fx::V0].pages.iter().all(|p| p.protnone));
    }

    #[test]
    fn interleave_and_bind_without_the_flag_are_never_scanned() {
        let il = MemPolicy {
            mode: MpolMode::Interleave,
            nodes: NodeMask::first_n(2),
            mof: false,
            moron: false,
            moft: false,
        };
        let bind = MemPolicy {
            mode: MpolMode::Bind,
            nodes: NodeMask::single(0),
            mof: false,
            moron: false,
            moft: false,
        };
        for pol in [il, bind] {
            let (mut k, mm, t) = setup(16, false, Some(pol));
            k.task_numa_work(t, fx::c(0));
            assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 0, "{:?}", pol.mode);
            assert!(k.mem.mms[mm].vmas[fx::V0].numab.is_none());
            // The walk still reached the end of the address space.
            assert_eq!(k.mem.mms[mm].numa.scan_seq, 1);
        }
        // Bind with MPOL_F_NUMA_BALANCING is scanned.
        let flagged = MemPolicy {
            mof: true,
            moron: true,
            ..bind
        };
        let (mut k, _, t) = setup(16, false, Some(flagged));
        k.task_numa_work(t, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 4096);
    }

    #[test]
    fn a_single_threaded_scan_skips_pages_already_on_its_node() {
        let mut k = fx::kernel("tiny-2n", &[]);
        let mm = fx::add_mm(&mut k, fx::pages(100), false, None);
        fx::populate(&mut k, mm, 0, 60, fx::n(0));
        fx::populate(&mut k, mm, 60, 100, fx::n(1));
        let t = fx::add_task(&mut k, mm, fx::c(0));
        k.now = 2_000_000_000;
        k.task_numa_work(t, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 40);
    }

    #[test]
    fn single_node_cpuset_mems_scans_nothing() {
        let (mut k, _, t) = setup(16, false, None);
        let cg = k
            .cgroups
            .mkdir("/one", None, Some(NodeMask::single(0)))
            .unwrap();
        k.tasks[t].cgroup = cg;
        k.task_numa_work(t, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 0);
    }

    #[test]
    fn scan_period_bounds_follow_the_resident_size() {
        let (k, _, t) = setup(512, false, None);
        // 2 windows of 256 MB: min 1000/2 ms; max 60000/2 ms.
        assert_eq!(k.task_nr_scan_windows(t), 2);
        assert_eq!(k.task_scan_min(t), 500);
        assert_eq!(k.task_scan_max(t), 30000);
        assert_eq!(k.task_scan_start(t), 500);
        // Never more than 2560 MB/s: 256 MB windows at least 100 ms apart.
        let mut k = fx::kernel("tiny-2n", &["numa_balancing.scan_period_min_ms=10"]);
        let mm = fx::add_mm(&mut k, 16 << 20, false, None);
        let t = fx::add_task(&mut k, mm, fx::c(0));
        assert_eq!(k.task_scan_min(t), 100);
    }

    #[test]
    fn task_tick_numa_follows_cpu_time_and_waits_for_the_scan_delay() {
        let mut k = fx::kernel("tiny-2n", &[]);
        let mm = fx::add_mm(&mut k, 16 << 20, false, None);
        let n = k.mem.mms[mm].vmas[fx::V0].pages.len();
        fx::populate(&mut k, mm, 0, n, fx::n(1));
        let t = fx::add_task(&mut k, mm, fx::c(0));
        assert_eq!(k.tasks[t].numa.scan_period, 1000, "starts at scan_delay");
        k.now = 3_000_000_000;
        // 0.9 s of CPU time: not yet.
        k.tasks[t].sum_exec_runtime = 900_000_000;
        fx::tick_numa(&mut k, t, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 0);
        k.tasks[t].sum_exec_runtime = 1_001_000_000;
        fx::tick_numa(&mut k, t, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 4096);
        assert_eq!(k.tasks[t].numa.scan_period, k.task_scan_start(t));
        let stamp = k.tasks[t].numa.node_stamp;
        assert!(stamp > 1_000_000_000 + 2 * k.tick_ns, "{stamp}");
        // The mm's next scan moved one scan period on.
        let next = k.mem.mms[mm].numa.next_scan;
        assert_eq!(
            next,
            k.jiffies() + k.msecs_to_jiffies(k.tasks[t].numa.scan_period)
        );
    }

    #[test]
    fn a_new_thread_keeps_the_preferred_node_and_staggers_its_first_scan() {
        let mut k = fx::kernel("tiny-2n", &[]);
        let mm = fx::add_mm(&mut k, 16 << 20, false, None);
        let t0 = fx::add_task(&mut k, mm, fx::c(0));
        k.sched_setnuma(t0, Some(fx::n(1)));
        let t1 = fx::add_task(&mut k, mm, fx::c(2));
        assert_eq!(k.tasks[t1].numa.preferred_nid, Some(fx::n(1)));
        // min(task_scan_max in ms, period * users in ns) read as ns, + 2 ticks.
        let expect = k.task_scan_max(t0) + 2 * k.tick_ns;
        assert_eq!(k.tasks[t1].numa.node_stamp, expect);
        assert_eq!(k.sched.rq[fx::c(2)].nr_preferred_running, 1);
        assert_eq!(k.sched.rq[fx::c(0)].nr_numa_running, 1);
        assert_eq!(k.sched.rq[fx::c(0)].nr_preferred_running, 0);
    }
}
