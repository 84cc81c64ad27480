//! 3.8-3.9's NUMA scanner (`numalab.numa_scan_39`): `task_tick_numa` and
//! `task_numa_work` of 3.9's kernel/sched/fair.c, and the PTE-update count
//! of 3.9's `change_huge_pmd`, as they were before the August 2013 series
//! reworked them ("[PATCH 06/27] sched, numa: Mitigate chance that same
//! task always updates PTEs" and "[PATCH 13/27] mm: Only flush TLBs if a
//! transhuge PMD is modified for NUMA pte scanning", linux-mm 2013-08-08).
//! Both of `sched-numa-integration`'s kernels (3.9 and 3.9 + the June v1
//! series, which left these functions alone) run it.
//!
//! What differs from mainline's scanner (scan.rs):
//! - `task_tick_numa` sets `node_stamp = now` (the task's runtime) when its
//!   period has elapsed, so a task checks once per period of its own
//!   runtime whatever the scan cost; a task's first trigger
//!   (`node_stamp == 0`) sets its period to `scan_period_min`, unscaled;
//! - `__sched_fork` gives a new thread `node_stamp = 0` (no stagger) and
//!   the mm's first fork sets `numa_next_scan` and `numa_next_reset` to
//!   now: the first scan waits only for `scan_delay` of the thread's own
//!   runtime, and the first `task_numa_work` after fork resets its
//!   caller's period (the 60 s reset, series2013.rs);
//! - `task_numa_work` skips VMAs smaller than `HPAGE_SIZE` (removed by
//!   "[PATCH 14/16] sched: Remove check that skips small VMAs", linux-mm
//!   2013-07-11; a region's `vma_size` is the size judged), keeps no
//!   per-VMA state (no scan delay, accessor pids or once-per-sequence
//!   rule), has no virtual-space budget, does not push the winner's or
//!   the scan cost into `node_stamp`, and takes `change_prot_numa`'s
//!   return off its `scan_size` budget;
//! - that return (and `numa_pte_updates`) counts every present THP PMD in
//!   the range as `HPAGE_PMD_NR`, already `pmd_numa` or not (scan.rs's
//!   `change_prot_numa` with the switch on); base pages count when marked.
//!
//! Proposal 2's asynchronous scan (`kernel.numa_balancing_scan_async`),
//! which 3.9 did not have, still moves this scanner's work to a kworker.
//!
//! Left out: the cmpxchg losing (scans are serial here), `mm->first_nid`
//! (no scan until the mm runs on a second node: a JVM's threads spread at
//! once), `migrate_ratelimited` (a scan skipped while its node receives
//! more than 128 MB per 100 ms of migrations), the single-threaded mm's
//! skip of pages already on the scanner's node (mainline's, not 3.9's: off
//! here), and `vma_migratable`'s policy side: bind and interleave VMAs
//! without `MPOL_F_MOF` stay unscanned as in mainline (3.9 scanned them and
//! `mpol_misplaced` refused the faults).

use super::scan::ScanPass;
use super::{HPAGE_SIZE, PAGES_PER_MB};
use crate::kernel::mm::PAGE_SHIFT;
use crate::kernel::sched::TaskState;
use crate::kernel::sysctl::knob;
use crate::kernel::{CpuId, Kernel, TaskId, VmaId};

impl Kernel {
    /// `numalab.numa_scan_39`: 3.9's `task_tick_numa` / `task_numa_work`.
    pub fn numa_scan_39_on(&self) -> bool {
        self.knobs.get(knob::NUMA_SCAN_39)
    }

    /// 3.9 `task_tick_numa` for task `t` on `cpu`: once the task has run
    /// its period since `node_stamp`, the stamp becomes its runtime and,
    /// if the mm is due, `task_numa_work` runs.
    pub(crate) fn task_tick_numa_39(&mut self, t: TaskId, cpu: CpuId) {
        let now = self.tasks[t].sum_exec_runtime;
        let period = self.tasks[t].numa.scan_period * crate::kernel::NSEC_PER_MSEC;
        if now.saturating_sub(self.tasks[t].numa.node_stamp) <= period {
            return;
        }
        if self.tasks[t].numa.node_stamp == 0 {
            self.tasks[t].numa.scan_period = self.knobs.get(knob::SCAN_PERIOD_MIN_MS);
        }
        self.tasks[t].numa.node_stamp = now;
        let mm = self.tasks[t].mm;
        if self.jiffies() >= self.mem.mms[mm].numa.next_scan {
            // 3.9 had no asynchronous scan; proposal 2's switch still
            // moves this scanner's work to a kworker (async_scan.rs).
            if self.numa_scan_async() {
                self.queue_numa_async_work(t, cpu);
            } else {
                self.queue_task_numa_work(t, cpu);
            }
        }
    }

    /// 3.9 `__sched_fork`'s NUMA part after mainline's
    /// `init_numa_balancing` ran: no stagger, and a new mm is due at once
    /// (its first scan waits for the thread's `scan_delay` of runtime).
    pub(crate) fn sched_fork_numa_39(&mut self, t: TaskId, new_mm: bool) {
        self.tasks[t].numa.node_stamp = 0;
        if new_mm {
            let mm = self.tasks[t].mm;
            let now = self.jiffies();
            self.mem.mms[mm].numa.next_scan = now;
            self.mem.mms[mm].numa.next_reset = now;
        }
    }

    /// 3.9 `task_numa_work`: one scan by task `t` on `cpu`, paid by
    /// `current`. Returns the time charged, ns (0 when nothing ran).
    pub(crate) fn task_numa_work_39(&mut self, t: TaskId, cpu: CpuId, current: TaskId) -> f64 {
        let now = self.jiffies();
        if self.tasks[t].state == TaskState::Dead
            || !self.task_numa_balance_enabled(t)
            || self.task_mems(t).len() == 1
        {
            return 0.0;
        }
        let mm = self.tasks[t].mm;
        if !self.numa_scan_adapt_on() {
            self.numa_scan_reset_39(t, mm, now);
        }
        if now < self.mem.mms[mm].numa.next_scan {
            return 0.0;
        }
        if self.tasks[t].numa.scan_period == 0 {
            self.tasks[t].numa.scan_period = self.knobs.get(knob::SCAN_PERIOD_MIN_MS);
        }
        self.mem.mms[mm].numa.next_scan =
            now + self.msecs_to_jiffies(self.tasks[t].numa.scan_period);
        let mut pages = (self.knobs.get(knob::SCAN_SIZE_MB) * PAGES_PER_MB) as i64;
        if pages == 0 {
            return 0.0;
        }
        let mut locks_ns = self
            .mem
            .locks
            .mmap_read_trylock_unlock(&self.m, self.now, cpu, mm);
        let (mut examined, mut marked) = (0u64, 0u64);
        let mut start = self.mem.mms[mm].numa.scan_offset;
        let nvmas = self.mem.mms[mm].vmas.len();
        let mut vi = self.mem.mms[mm].vmas.position(|v| v.end() > start);
        if vi.is_none() {
            self.mem.reset_ptenuma_scan(mm);
            start = 0;
            vi = self.mem.mms[mm].vmas.first_key();
        }
        let mut stopped = false;
        let mut cur = vi;
        'vmas: while let Some(i) = cur {
            cur = Some(VmaId::new(i.index() + 1)).filter(|n| n.index() < nvmas);
            if !self.vma_policy(t, i).mof {
                continue;
            }
            // "Skip small VMAs. They are not likely to be of relevance."
            // A region standing for many small VMAs (thread stacks) is
            // judged by the size of each.
            let v = &self.mem.mms[mm].vmas[i];
            if v.piece_bytes.unwrap_or(v.bytes).min(v.bytes) < HPAGE_SIZE {
                continue;
            }
            let (vm_start, vm_end) = {
                let v = &self.mem.mms[mm].vmas[i];
                (v.start, v.end())
            };
            loop {
                start = start.max(vm_start);
                let end = (start + ((pages as u64) << PAGE_SHIFT))
                    .next_multiple_of(HPAGE_SIZE)
                    .min(vm_end);
                let (updated, walked) = self.change_prot_numa(t, mm, i, start, end, None);
                examined += walked;
                marked += updated;
                if updated > 0 {
                    let stride = self.mem.mms[mm].vmas[i].page_shift;
                    locks_ns += self.flush_tlb_mm_range(cpu, mm, start, end, stride);
                }
                pages -= updated as i64;
                start = end;
                if pages <= 0 {
                    stopped = true;
                    break 'vmas;
                }
                if end == vm_end {
                    break;
                }
            }
        }
        let pass = ScanPass {
            stopped_at: stopped.then_some(start),
            marked,
            examined,
            locks_ns,
        };
        self.end_scan_pass(t, cpu, current, mm, &pass)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fx;
    use crate::kernel::stats::Vm;
    use crate::kernel::{Kernel, MmId, TaskId};

    /// 3.9's scanner with 3.9's sysctl defaults and scan-rate rules.
    const S39: &[&str] = &[
        "numalab.numa_scan_39=1",
        "numalab.numa_scan_adapt=0",
        "numa_balancing.scan_period_min_ms=100",
        "numa_balancing.scan_period_max_ms=5000",
        "numa_balancing.scan_delay_ms=1000",
    ];

    /// Mainline's scanner, the same sysctls.
    const MAINLINE: &[&str] = &[
        "numalab.numa_scan_adapt=0",
        "numa_balancing.scan_period_min_ms=100",
        "numa_balancing.scan_period_max_ms=5000",
        "numa_balancing.scan_delay_ms=1000",
    ];

    /// Two threads of an mm of `mb` MiB (THP or not) on node 1, 2 s in.
    fn setup(sets: &[&str], mb: u64, thp: bool) -> (Kernel, MmId, TaskId, TaskId) {
        let mut k = fx::kernel("tiny-2n", sets);
        let mm = fx::add_mm(&mut k, mb << 20, thp, None);
        let n = k.mem.mms[mm].vmas[fx::V0].pages.len();
        fx::populate(&mut k, mm, 0, n, fx::n(1));
        let t0 = fx::add_task(&mut k, mm, fx::c(0));
        let t1 = fx::add_task(&mut k, mm, fx::c(2));
        k.now = 2_000_000_000;
        (k, mm, t0, t1)
    }

    #[test]
    fn a_thread_starts_unstaggered_and_its_first_trigger_sets_scan_period_min() {
        let (mainline, _, _, t1) = setup(MAINLINE, 16, false);
        assert_ne!(mainline.tasks[t1].numa.node_stamp, 0, "staggered");
        let (mut k, mm, _, t) = setup(S39, 16, false);
        assert_eq!(k.tasks[t].numa.node_stamp, 0);
        assert_eq!(k.tasks[t].numa.scan_period, 1000, "scan_delay until then");
        k.tasks[t].sum_exec_runtime = 900_000_000;
        fx::tick_numa(&mut k, t, fx::c(2));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 0);
        k.tasks[t].sum_exec_runtime = 1_001_000_000;
        fx::tick_numa(&mut k, t, fx::c(2));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 4096);
        assert_eq!(k.tasks[t].numa.scan_period, 100);
        // The stamp is the runtime: no scan cost, no winner's ticks added.
        assert_eq!(k.tasks[t].numa.node_stamp, 1_001_000_000);
        assert_eq!(
            k.mem.mms[mm].numa.next_scan,
            k.jiffies() + k.msecs_to_jiffies(100)
        );
        // Checked again only once 100 ms more of its runtime have passed,
        // then stamped with that runtime (not the old stamp + period).
        k.now += 1_000_000_000;
        k.tasks[t].sum_exec_runtime = 1_100_000_000;
        fx::tick_numa(&mut k, t, fx::c(2));
        assert_eq!(k.tasks[t].numa.node_stamp, 1_001_000_000);
        k.tasks[t].sum_exec_runtime = 1_150_000_000;
        fx::tick_numa(&mut k, t, fx::c(2));
        assert_eq!(k.tasks[t].numa.node_stamp, 1_150_000_000);
        assert_eq!(
            k.vmstat.get(Vm::NumaPteUpdates),
            4096,
            "nothing left unmarked"
        );
    }

    #[test]
    fn an_already_marked_huge_pmd_counts_512_updates_again() {
        for (sets, second) in [(S39, 4 * 512), (MAINLINE, 0)] {
            let (mut k, _, t, _) = setup(sets, 8, true);
            k.task_numa_work(t, fx::c(0));
            assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 4 * 512, "{sets:?}");
            // Nothing faulted: every PMD is still marked at the next pass.
            k.now += 2_000_000_000;
            k.task_numa_work(t, fx::c(0));
            let total = k.vmstat.get(Vm::NumaPteUpdates);
            assert_eq!(total, 4 * 512 + second, "{sets:?}");
        }
    }

    #[test]
    fn the_budget_is_what_change_prot_numa_returned() {
        // 512 MiB of marked THPs: 3.9 stops after 256 MiB of them.
        let (mut k, mm, t, _) = setup(S39, 512, true);
        for i in 0..k.mem.mms[mm].vmas[fx::V0].pages.len() {
            fx::mark(&mut k, mm, i);
        }
        k.task_numa_work(t, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), 256 * 256);
        let start = k.mem.mms[mm].vmas[fx::V0].start;
        assert_eq!(k.mem.mms[mm].numa.scan_offset, start + (256 << 20));
    }

    #[test]
    fn a_vma_under_2_mib_is_not_scanned() {
        for (sets, updates) in [(S39, 0), (MAINLINE, 256)] {
            let (mut k, mm, t, _) = setup(sets, 1, false);
            k.task_numa_work(t, fx::c(0));
            assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), updates, "{sets:?}");
            // 3.9 keeps no per-VMA state; mainline made some.
            assert_eq!(k.mem.mms[mm].vmas[fx::V0].numab.is_some(), updates > 0);
        }
    }

    #[test]
    fn a_region_of_1_mib_stacks_is_not_scanned_by_39_but_is_by_mainline() {
        for (sets, updates) in [(S39, 0), (MAINLINE, 4096)] {
            let (mut k, mm, t, _) = setup(sets, 16, false);
            k.mem.mms[mm].vmas[fx::V0].piece_bytes = Some(1 << 20);
            k.task_numa_work(t, fx::c(0));
            assert_eq!(k.vmstat.get(Vm::NumaPteUpdates), updates, "{sets:?}");
        }
    }

    #[test]
    fn the_first_scan_after_fork_resets_its_callers_period() {
        let (mut k, mm, t, _) = setup(S39, 16, false);
        k.tasks[t].numa.scan_period = 3000;
        k.task_numa_work(t, fx::c(0));
        assert_eq!(k.tasks[t].numa.scan_period, 100);
        let reset = k.jiffies() + k.msecs_to_jiffies(60_000);
        assert_eq!(k.mem.mms[mm].numa.next_reset, reset);
    }
}
