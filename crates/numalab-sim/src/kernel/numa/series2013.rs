//! The switches of the 2013 scheduler integration (proposal 1, issue 15):
//! Mel Gorman's "Basic scheduler support for automatic NUMA balancing"
//! (v1 posted on 3.9 in June 2013, merged in its longer form for v3.13).
//! Each `numalab.numa_*` switch below is on by default (mainline); turning
//! all four off gives the 3.9 baseline the series was measured against:
//! hinting faults only migrate pages (through the two-stage filter), no
//! preferred node, no task placement by NUMA preference, and 3.9's scan
//! rate (slower by 10 jiffies per fault that migrated nothing, reset to the
//! minimum every `numa_balancing_scan_period_reset` = 60 s).
//!
//! The hooks themselves sit where the kernel code is (placement.rs,
//! migrate.rs, fault.rs, scan.rs, sched/balance.rs); this file holds the
//! switch readers and 3.9's scan-rate rules.
//!
//! Left out: 3.9's `mm->first_nid` rule (no scanning until the mm runs on a
//! second node), 3.9's sysctl defaults (scan_period_min 100 ms, max 5 s:
//! the knobs keep their mainline defaults, set them to compare), the
//! migration rate limiter of 3.8 (`migrate_ratelimited`), and the numa
//! groups' own history (they came with the same v3.13 merge; here they go
//! with fault classification).

use crate::kernel::sysctl::knob;
use crate::kernel::{Kernel, MmId, TaskId};

/// `sysctl_numa_balancing_scan_period_reset` of 3.8-3.12 (kernel/sched/
/// fair.c: `100*600`, ms); removed by "sched: numa: Remove the
/// numa_balancing_scan_period_reset sysctl" for v3.13.
pub const NUMA_SCAN_PERIOD_RESET_MS: u64 = 100 * 600;

/// 3.9 `task_numa_fault`: `numa_scan_period + jiffies_to_msecs(10)` per
/// hinting fault that migrated nothing (10 jiffies, in ms).
pub const NUMA_SCAN_SLOWDOWN_JIFFIES: u64 = 10;

impl Kernel {
    /// `numalab.numa_preferred_node`: placement chooses a preferred node
    /// and the load balancer respects it.
    pub fn numa_preferred_node_on(&self) -> bool {
        self.knobs.get(knob::NUMA_PREFERRED_NODE)
    }

    /// `numalab.numa_migrate_on_select`: a task off its preferred node is
    /// moved there by `task_numa_migrate` at once.
    pub fn numa_migrate_on_select_on(&self) -> bool {
        self.knobs.get(knob::NUMA_MIGRATE_ON_SELECT)
    }

    /// `numalab.numa_fault_classify`: faults are private or shared by the
    /// page's last cpupid, shared ones forming numa groups.
    pub fn numa_fault_classify_on(&self) -> bool {
        self.knobs.get(knob::NUMA_FAULT_CLASSIFY)
    }

    /// `numalab.numa_scan_adapt`: mainline's per-pass scan-rate adaptation
    /// instead of 3.9's slow-down and periodic reset.
    pub fn numa_scan_adapt_on(&self) -> bool {
        self.knobs.get(knob::NUMA_SCAN_ADAPT)
    }

    /// 3.9 `task_numa_fault`: a fault whose page did not migrate (properly
    /// placed) slows the task's scanning by 10 jiffies, up to the maximum.
    pub(crate) fn numa_scan_slowdown_39(&mut self, t: TaskId) {
        let step = NUMA_SCAN_SLOWDOWN_JIFFIES * 1000 / self.tick_hz().max(1);
        let max = self.knobs.get(knob::SCAN_PERIOD_MAX_MS);
        let n = &mut self.tasks[t].numa;
        n.scan_period = max.min(n.scan_period + step);
    }

    /// 3.9 `task_numa_work`'s reset hammer: once `numa_next_reset` has
    /// passed, the scanning task's period returns to the minimum and the
    /// next reset is 60 s away. The first reset is due 60 s after the mm's
    /// first scan (3.9 set it at the mm's first fork).
    pub(crate) fn numa_scan_reset_39(&mut self, t: TaskId, mm: MmId, now: u64) {
        let reset = self.msecs_to_jiffies(NUMA_SCAN_PERIOD_RESET_MS);
        if self.mem.mms[mm].numa.next_reset == 0 {
            self.mem.mms[mm].numa.next_reset = now + reset;
        } else if now > self.mem.mms[mm].numa.next_reset {
            self.tasks[t].numa.scan_period = self.task_scan_min(t);
            self.mem.mms[mm].numa.next_reset = now + reset;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fx;
    use super::super::*;
    use crate::kernel::mm::CPUPID_UNSET;
    use crate::kernel::{Kernel, MmId, TaskId};

    const ALL_OFF: &[&str] = &[
        "numalab.numa_preferred_node=0",
        "numalab.numa_migrate_on_select=0",
        "numalab.numa_fault_classify=0",
        "numalab.numa_scan_adapt=0",
    ];

    fn setup(sets: &[&str]) -> (Kernel, MmId, TaskId) {
        fx::remote_task(sets)
    }

    /// Remote faults on node 1, then the end of a pass and placement.
    fn remote_pass(k: &mut Kernel, mm: MmId, t: TaskId) {
        k.task_numa_fault(t, fx::c(0), CPUPID_UNSET, fx::n(1), 100, 0);
        k.mem.mms[mm].numa.scan_seq += 1;
        k.task_numa_placement(t);
    }

    #[test]
    fn without_the_preferred_node_placement_chooses_none() {
        let (mut k, mm, t) = setup(&[]);
        remote_pass(&mut k, mm, t);
        assert_eq!(k.tasks[t].numa.preferred_nid, Some(fx::n(1)));
        let (mut k, mm, t) = setup(&["numalab.numa_preferred_node=0"]);
        remote_pass(&mut k, mm, t);
        assert_eq!(k.tasks[t].numa.preferred_nid, None);
        assert_eq!(k.sched.rq[fx::c(0)].nr_numa_running, 0);
    }

    #[test]
    fn without_reschedule_a_fault_off_the_preferred_node_asks_no_move() {
        for (sets, asked) in [
            (&[][..], true),
            (&["numalab.numa_migrate_on_select=0"][..], false),
        ] {
            let (mut k, mm, t) = setup(sets);
            remote_pass(&mut k, mm, t);
            k.tasks[t].numa.migrate_retry = 0;
            k.numa_migrate_preferred(t);
            assert_eq!(k.tasks[t].numa.migrate_requested, asked, "{sets:?}");
        }
    }

    #[test]
    fn without_classification_a_fault_on_another_tasks_page_is_private() {
        for (sets, grouped) in [
            (&[][..], true),
            (&["numalab.numa_fault_classify=0"][..], false),
        ] {
            let (mut k, mm, t1) = setup(sets);
            let t2 = fx::add_task(&mut k, mm, fx::c(2));
            let p2 = k.tasks[t2].pid;
            k.task_numa_fault(
                t1,
                fx::c(0),
                cpu_pid_to_cpupid(fx::c(2), p2),
                fx::n(1),
                1,
                0,
            );
            assert_eq!(k.numa_group(t1).is_some(), grouped, "{sets:?}");
            let nn = k.m.nr_nodes();
            let private = k.tasks[t1].numa.faults[faults_idx(nn, NUMA_MEMBUF, fx::n(1), 1)];
            assert_eq!(private, i64::from(!grouped), "{sets:?}");
        }
    }

    #[test]
    fn the_39_scan_rate_slows_per_unmigrated_fault_and_resets_after_60_s() {
        let (mut k, mm, t) = setup(ALL_OFF);
        k.tasks[t].numa.scan_period = 1000;
        // HZ 250 on tiny-2n? 10 jiffies in ms whatever HZ is.
        let step = 10 * 1000 / k.tick_hz();
        k.task_numa_fault(t, fx::c(0), CPUPID_UNSET, fx::n(1), 1, 0);
        assert_eq!(k.tasks[t].numa.scan_period, 1000 + step);
        // A fault that migrated keeps the period.
        k.task_numa_fault(t, fx::c(0), CPUPID_UNSET, fx::n(1), 1, TNF_MIGRATED);
        assert_eq!(k.tasks[t].numa.scan_period, 1000 + step);
        // The end of a pass does not adapt it (no update_task_scan_period).
        k.mem.mms[mm].numa.scan_seq += 1;
        k.task_numa_placement(t);
        assert_eq!(k.tasks[t].numa.scan_period, 1000 + step);
        // The reset hammer: armed at the first scan, fires 60 s later.
        let now = k.jiffies();
        k.tasks[t].numa.scan_period = 30_000;
        k.numa_scan_reset_39(t, mm, now);
        assert_eq!(k.tasks[t].numa.scan_period, 30_000);
        let later = now + k.msecs_to_jiffies(60_000) + 1;
        k.numa_scan_reset_39(t, mm, later);
        assert_eq!(k.tasks[t].numa.scan_period, k.task_scan_min(t));
    }

    #[test]
    fn with_scan_adapt_a_pass_adapts_the_period() {
        let (mut k, mm, t) = setup(&[]);
        k.tasks[t].numa.scan_period = 1000;
        remote_pass(&mut k, mm, t);
        // All private and remote: local + shared == 0 doubles the period.
        assert_eq!(k.tasks[t].numa.scan_period, 2000);
    }
}
