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
//! `numalab.numa_series_v1` turns the v1 posting's own rules on where
//! mainline later replaced them and their switch is off: patch 7's split
//! of faults by the two-stage filter's record (with
//! `numa_fault_classify=0`) and patch 8's scan rule (with
//! `numa_scan_adapt=0`): no reset hammer, a settled task that changes its
//! preferred node halves its scan period.
//!
//! The hooks themselves sit where the kernel code is (placement.rs,
//! migrate.rs, fault.rs, scan.rs, sched/balance.rs); this file holds the
//! switch readers, 3.9's scan-rate rules and the v1 rules.
//!
//! Left out: 3.9's `mm->first_nid` rule (no scanning until the mm runs on a
//! second node), 3.9's sysctl defaults (scan_period_min 100 ms, max 5 s:
//! the knobs keep their mainline defaults; sched.toml sets 3.9's), the
//! migration rate limiter of 3.8 (`migrate_ratelimited`), and the numa
//! groups' own history (they came with the same v3.13 merge; here they go
//! with fault classification). Of v1: patch 6's own CPU choice
//! (`find_idlest_cpu_node` and a stop-machine move; the model's
//! `numa_migrate_on_select` uses mainline's `task_numa_migrate`) and patch
//! 5's settle rule in the balancer (mainline's `migrate_degrades_locality`
//! stands in); v1's patch 8 text was not found, V2's 08/13 (same title and
//! cover-letter description) is what is modelled. Mainline's skip of the
//! two-stage filter early in a task's life (`should_numa_migrate_memory`)
//! stays in both the 3.9 and the v1 settings, where 3.9 filtered every
//! fault.

use super::{cpu_pid_to_cpupid, cpupid_to_cpu, cpupid_unset};
use crate::kernel::sysctl::knob;
use crate::kernel::{CpuId, Kernel, MmId, NodeId, TaskId, VmaId};

/// `sysctl_numa_balancing_scan_period_reset` of 3.8-3.12 (kernel/sched/
/// fair.c: `100*600`, ms); removed by "sched: numa: Remove the
/// numa_balancing_scan_period_reset sysctl" for v3.13.
pub const NUMA_SCAN_PERIOD_RESET_MS: u64 = 100 * 600;

/// 3.9 `task_numa_fault`: `numa_scan_period + jiffies_to_msecs(10)` per
/// hinting fault that migrated nothing (10 jiffies, in ms).
pub const NUMA_SCAN_SLOWDOWN_JIFFIES: u64 = 10;

/// `sysctl_numa_balancing_settle_count` of the 2013 series (v1 5/8,
/// kernel/sched/fair.c: `= 3`): placement passes after which a task counts
/// as settled on its preferred node.
pub const NUMA_BALANCING_SETTLE_COUNT: u32 = 3;

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

    /// `numalab.numa_series_v1`: the v1 posting's rules where its switch
    /// is off (see the module doc).
    pub fn numa_series_v1_on(&self) -> bool {
        self.knobs.get(knob::NUMA_SERIES_V1)
    }

    /// v1 7/8 is in force: the series' rule without mainline's
    /// classification.
    pub(crate) fn numa_fault_split_v1(&self) -> bool {
        self.numa_series_v1_on() && !self.numa_fault_classify_on()
    }

    /// v1 8/8 is in force: the series' rule without mainline's scan
    /// adaptation.
    pub(crate) fn numa_scan_rule_v1(&self) -> bool {
        self.numa_series_v1_on() && !self.numa_scan_adapt_on()
    }

    /// v1 7/8 `task_numa_fault`: `priv = cpu_to_node(task_cpu(p)) ==
    /// last_nid`, the node the page's previous hinting fault came from (the
    /// two-stage filter's record). A page with no record is shared: 3.9's
    /// reset value (-1, masked) is no node.
    pub(crate) fn numa_fault_private_v1(&self, t: TaskId, last_cpupid: u32) -> bool {
        if cpupid_unset(last_cpupid) {
            return false;
        }
        let last_cpu = cpupid_to_cpu(last_cpupid);
        let Some(last) = self.m.cpus.get(last_cpu.index()) else {
            return false;
        };
        NodeId::new(last.node) == self.cpu_node(self.tasks[t].cpu)
    }

    /// 3.9 `mpol_misplaced` (MPOL_F_MORON): `page_nid_xchg_last` ran on
    /// every hinting fault, a local one too, so the next fault's v1 7/8
    /// split sees this one. Mainline's `mpol_misplaced` returns before the
    /// exchange on a local page; with the v1 split on, the record is
    /// updated here for local faults.
    pub(crate) fn numa_local_fault_record_v1(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        idx: usize,
    ) {
        if !self.numa_fault_split_v1() {
            return;
        }
        let mm = self.tasks[t].mm;
        let cpupid = cpu_pid_to_cpupid(cpu, self.tasks[t].pid);
        self.mem.folio_xchg_last_cpupid(mm, vma, idx, cpupid);
    }

    /// v1 8/8 `task_numa_placement`, on a change of preferred node: "if
    /// preferred nodes changes frequently then the scan rate will be
    /// continually high", so only a task that was settled (`old_migrate_seq
    /// >= sysctl_numa_balancing_settle_count`) scans faster: its period is
    /// halved, not below `scan_period_min`.
    pub(crate) fn numa_preferred_changed_v1(&mut self, t: TaskId, old_migrate_seq: u32) {
        if !self.numa_scan_rule_v1() || old_migrate_seq < NUMA_BALANCING_SETTLE_COUNT {
            return;
        }
        let min = self.knobs.get(knob::SCAN_PERIOD_MIN_MS);
        let n = &mut self.tasks[t].numa;
        n.scan_period = (n.scan_period >> 1).max(min);
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
    /// first scan, or, with `numalab.numa_scan_39`, at the first scan after
    /// the mm's first fork, as 3.9's `__sched_fork` set it.
    /// v1 8/8 removed it (`numalab.numa_series_v1`).
    pub(crate) fn numa_scan_reset_39(&mut self, t: TaskId, mm: MmId, now: u64) {
        if self.numa_series_v1_on() {
            return;
        }
        let reset = self.msecs_to_jiffies(NUMA_SCAN_PERIOD_RESET_MS);
        // 3.9's own scanner (`numalab.numa_scan_39`) armed it at fork.
        if self.mem.mms[mm].numa.next_reset == 0 && !self.numa_scan_39_on() {
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
            fx::fault_on_page_of(&mut k, t1, t2, fx::n(1));
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

    /// The v1 posting's kernel: its switches on, mainline's classification
    /// and scan adaptation off, v1's own rules for those two parts.
    const V1: &[&str] = &[
        "numalab.numa_fault_classify=0",
        "numalab.numa_scan_adapt=0",
        "numalab.numa_series_v1=1",
    ];

    /// The same without v1's rules (3.9's there).
    const V1_WITHOUT_ITS_RULES: &[&str] =
        &["numalab.numa_fault_classify=0", "numalab.numa_scan_adapt=0"];

    #[test]
    fn v1_counts_a_fault_private_when_the_pages_last_fault_came_from_the_tasks_node() {
        for (sets, same, other, unset) in [
            (V1, true, false, false),
            (V1_WITHOUT_ITS_RULES, true, true, true),
        ] {
            let (mut k, _mm, t) = setup(sets);
            assert_eq!(k.cpu_node(fx::c(1)), k.cpu_node(fx::c(0)));
            assert_ne!(k.cpu_node(fx::c(2)), k.cpu_node(fx::c(0)));
            // Another task's pid: v1 looks at the node only.
            let pid = k.tasks[t].pid + 7;
            let on_node = cpu_pid_to_cpupid(fx::c(1), pid);
            let off_node = cpu_pid_to_cpupid(fx::c(2), pid);
            assert_eq!(k.task_numa_fault_private(t, on_node, 0), same, "{sets:?}");
            assert_eq!(k.task_numa_fault_private(t, off_node, 0), other, "{sets:?}");
            assert_eq!(
                k.task_numa_fault_private(t, CPUPID_UNSET, 0),
                unset,
                "{sets:?}"
            );
        }
    }

    #[test]
    fn v1_prefers_the_node_of_most_private_faults_and_weighs_migrated_faults_double() {
        for (sets, preferred, migrated_weight) in [(V1, 0, 20), (V1_WITHOUT_ITS_RULES, 1, 10)] {
            let (mut k, mm, t) = setup(sets);
            let pid = k.tasks[t].pid;
            // Many faults on node 1 whose pages were last faulted from
            // node 1 (shared for a task on node 0), few on node 0 from
            // node 0 (private).
            let from_1 = cpu_pid_to_cpupid(fx::c(2), pid);
            let from_0 = cpu_pid_to_cpupid(fx::c(1), pid);
            k.task_numa_fault(t, fx::c(0), from_1, fx::n(1), 100, 0);
            k.task_numa_fault(t, fx::c(0), from_0, fx::n(0), 10, TNF_MIGRATED);
            let nn = k.m.nr_nodes();
            let buf = k.tasks[t].numa.faults[faults_idx(nn, NUMA_MEMBUF, fx::n(0), 1)];
            assert_eq!(buf, migrated_weight, "{sets:?}");
            k.mem.mms[mm].numa.scan_seq += 1;
            k.task_numa_placement(t);
            assert_eq!(
                k.tasks[t].numa.preferred_nid,
                Some(fx::n(preferred)),
                "{sets:?}"
            );
        }
    }

    /// As [`remote_pass`], the faults private under v1 too (the pages'
    /// last faults came from the task's node).
    fn private_remote_pass(k: &mut Kernel, mm: MmId, t: TaskId) {
        let from_0 = cpu_pid_to_cpupid(fx::c(1), k.tasks[t].pid);
        k.task_numa_fault(t, fx::c(0), from_0, fx::n(1), 100, 0);
        k.mem.mms[mm].numa.scan_seq += 1;
        k.task_numa_placement(t);
    }

    #[test]
    fn v1_has_no_reset_hammer_and_halves_a_settled_tasks_period_on_a_new_preferred_node() {
        let (mut k, mm, t) = setup(V1);
        let now = k.jiffies();
        k.tasks[t].numa.scan_period = 3000;
        k.numa_scan_reset_39(t, mm, now);
        k.numa_scan_reset_39(t, mm, now + k.msecs_to_jiffies(60_000) + 1);
        assert_eq!(k.tasks[t].numa.scan_period, 3000);
        let step = 10 * 1000 / k.tick_hz();
        // (passes before this one, period before the pass, period after)
        for (seq_before, period, want) in [
            // Settled: the pass makes it 3, >= the settle count: halved.
            (2, 3000, (3000 + step) / 2),
            // Halved, but not below scan_period_min (1000 ms here).
            (2, 1500, 1000),
            // Not settled: the new node is taken, the period kept.
            (1, 3000, 3000 + step),
        ] {
            k.sched_setnuma(t, Some(fx::n(0)));
            k.tasks[t].numa.migrate_seq = seq_before;
            k.tasks[t].numa.scan_period = period;
            private_remote_pass(&mut k, mm, t);
            assert_eq!(k.tasks[t].numa.preferred_nid, Some(fx::n(1)));
            assert_eq!(k.tasks[t].numa.scan_period, want, "{seq_before} {period}");
            assert_eq!(k.tasks[t].numa.migrate_seq, 0);
        }
        // Without v1's rules a new preferred node leaves the period alone.
        let (mut k, mm, t) = setup(V1_WITHOUT_ITS_RULES);
        k.sched_setnuma(t, Some(fx::n(0)));
        k.tasks[t].numa.migrate_seq = 5;
        k.tasks[t].numa.scan_period = 3000;
        private_remote_pass(&mut k, mm, t);
        assert_eq!(k.tasks[t].numa.scan_period, 3000 + step);
    }

    #[test]
    fn v1_records_a_local_faults_node_on_the_page_as_39_did() {
        for (sets, recorded) in [(V1, true), (V1_WITHOUT_ITS_RULES, false)] {
            let (mut k, mm, t) = setup(sets);
            fx::populate(&mut k, mm, 0, 1, fx::n(0));
            let mut flags = 0;
            k.numa_migrate_check(t, fx::c(0), fx::V0, 0, &mut flags);
            assert_ne!(flags & TNF_FAULT_LOCAL, 0);
            let rec = k.mem.folio_last_cpupid(mm, fx::V0, 0);
            assert_eq!(!cpupid_unset(rec), recorded, "{sets:?}");
            if recorded {
                assert_eq!(rec, cpu_pid_to_cpupid(fx::c(0), k.tasks[t].pid));
            }
        }
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
