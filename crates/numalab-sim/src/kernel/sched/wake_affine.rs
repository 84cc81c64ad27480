//! A wakeup by another task (kernel/sched/fair.c `select_task_rq_fair`
//! with WF_TTWU from a waker's context: `record_wakee`, `wake_wide`,
//! `wake_affine`, `wake_affine_idle`, `wake_affine_weight`, then
//! `select_idle_sibling` around the CPU chosen).
//!
//! The waker's CPU is weighed against the wakee's previous CPU in the
//! lowest domain with SD_WAKE_AFFINE that spans both (a NUMA domain keeps
//! the flag while its distance is at most RECLAIM_DISTANCE, 30, so on a
//! 2- or 4-socket box a wakeup may pull a task across nodes); a waker that
//! flips between many wakees (`wake_wide`) leaves the wakee near its
//! previous CPU. Lab switch `numalab.wake_affine` (on: the kernel's).
//!
//! A wakeup no task made (a timer's, taken on the CPU the task slept on)
//! is placed from the previous CPU alone (`select_task_rq_wake`).
//!
//! Left out: WF_SYNC (no wakeup in the model is synchronous: the barrier's
//! and a thread creator's wakers go on running), energy-aware placement
//! (no energy model), WF_CURRENT_CPU, `recent_used_cpu`, and the
//! `record_wakee` of a timer's or an interrupt's wakeup (it bumps whatever
//! task the interrupt found running).

use super::topology::SdFlags;
use crate::kernel::ids::CpuSetExt;
use crate::kernel::{AllowedCpus, CpuId, Kernel, TaskId};

/// A task's wakee-flip record (`wakee_flips`, `wakee_flip_decay_ts`,
/// `last_wakee` of task_struct).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakeeFlips {
    /// How often it woke a task other than the one it woke last, halved
    /// once a second (`wakee_flips`).
    pub flips: u32,
    /// When the flips were last halved, in jiffies (`wakee_flip_decay_ts`).
    pub decay_ts: u64,
    /// The task it woke last (`last_wakee`).
    pub last: Option<TaskId>,
}

impl Kernel {
    /// Placement of a waking task that no other task woke
    /// (`select_task_rq_fair` with WF_TTWU → `select_idle_sibling`, fair.rs):
    /// the previous CPU if idle; else, in its LLC, an idle core (SMT
    /// machines), else an idle CPU among the next `nr_idle_scan`, else the
    /// previous CPU.
    pub fn select_task_rq_wake(&self, t: TaskId) -> CpuId {
        self.place_wakee(t, None)
    }

    /// Where task `t`, woken by `waker` running on `this_cpu`, goes
    /// (`select_task_rq_fair`, WF_TTWU): `record_wakee`, then the waker's
    /// CPU weighed against prev (`wake_affine`) unless the waker goes wide,
    /// then `select_idle_sibling` around the CPU chosen. With
    /// `numalab.wake_affine=0` it is placed as a wakeup without a waker.
    pub fn select_task_rq_wakeup(&mut self, t: TaskId, waker: TaskId, this_cpu: CpuId) -> CpuId {
        if !self.knobs.get(numalab_knobs::knob::WAKE_AFFINE) {
            return self.select_task_rq_wake(t);
        }
        self.record_wakee(waker, t);
        self.place_wakee(t, Some((waker, this_cpu)))
    }

    /// The placement both wakeups share: a previous CPU the task may no
    /// longer use sends it to fork placement; otherwise the target is prev,
    /// or what `wake_affine` makes of the waker's CPU, and
    /// `select_idle_sibling` searches around it.
    fn place_wakee(&self, t: TaskId, waker: Option<(TaskId, CpuId)>) -> CpuId {
        let prev = self.tasks[t].cpu;
        let allowed = self.task_allowed_cpus(t);
        if !allowed.has(prev) {
            return self.select_task_rq_fork(t, prev);
        }
        let target = match waker {
            Some((w, this_cpu)) => self.affine_target(&allowed, t, w, this_cpu, prev),
            None => prev,
        };
        self.select_idle_sibling(&allowed, prev, target)
    }

    /// `want_affine` and the domain walk: a waker that goes wide, or runs
    /// where the wakee may not, leaves prev; else the lowest SD_WAKE_AFFINE
    /// domain of the waker's CPU that holds prev decides (SD_BALANCE_WAKE
    /// is set on none, so the fast path follows).
    fn affine_target(
        &self,
        allowed: &AllowedCpus<'_>,
        t: TaskId,
        waker: TaskId,
        this_cpu: CpuId,
        prev: CpuId,
    ) -> CpuId {
        if this_cpu == prev || self.wake_wide(waker, t, this_cpu) || !allowed.has(this_cpu) {
            return prev;
        }
        let sd = self.sched.topo.sd[this_cpu]
            .iter()
            .find(|d| d.flags.has(SdFlags::WAKE_AFFINE) && d.span.has(prev));
        match sd {
            Some(sd) => self.wake_affine(sd.imbalance_pct as i64, t, this_cpu, prev),
            None => prev,
        }
    }

    /// `record_wakee`: the waker's flips are halved once a second, and
    /// counted when it wakes a task other than its last wakee.
    fn record_wakee(&mut self, waker: TaskId, p: TaskId) {
        let now = self.jiffies();
        let hz = 1_000_000_000 / self.tick_ns;
        let w = &mut self.tasks[waker].wakee;
        if now > w.decay_ts + hz {
            w.flips >>= 1;
            w.decay_ts = now;
        }
        if w.last != Some(p) {
            w.last = Some(p);
            w.flips += 1;
        }
    }

    /// `wake_wide`: true (spread) when both the waker's and the wakee's
    /// flips reach the LLC's size and one's are that many times the
    /// other's: a waker of more partners than an LLC holds.
    fn wake_wide(&self, waker: TaskId, p: TaskId, this_cpu: CpuId) -> bool {
        let factor = self.sched.topo.llc_cpus[self.cpu_info(this_cpu).llc].len() as u64;
        let a = self.tasks[waker].wakee.flips as u64;
        let b = self.tasks[p].wakee.flips as u64;
        let (master, slave) = if a < b { (b, a) } else { (a, b) };
        !(slave < factor || master < slave * factor)
    }

    /// `wake_affine` (WA_IDLE, WA_WEIGHT): `this_cpu` if `wake_affine_idle`
    /// or, failing an answer there, `wake_affine_weight` chooses it, else
    /// `prev`.
    fn wake_affine(&self, imbalance_pct: i64, p: TaskId, this_cpu: CpuId, prev: CpuId) -> CpuId {
        let target = self
            .wake_affine_idle(this_cpu, prev)
            .or_else(|| self.wake_affine_weight(imbalance_pct, p, this_cpu, prev));
        if target == Some(this_cpu) {
            this_cpu
        } else {
            prev
        }
    }

    /// `wake_affine_idle` without WF_SYNC: an idle waker's CPU (an
    /// interrupt's wakeup) sharing prev's LLC gives prev if it is idle too,
    /// else itself; an idle prev gives prev.
    fn wake_affine_idle(&self, this_cpu: CpuId, prev: CpuId) -> Option<CpuId> {
        let idle = |c: CpuId| self.sched.rq[c].is_idle();
        let share_cache = self.cpu_info(this_cpu).llc == self.cpu_info(prev).llc;
        if idle(this_cpu) && share_cache {
            return Some(if idle(prev) { prev } else { this_cpu });
        }
        idle(prev).then_some(prev)
    }

    /// `wake_affine_weight` without WF_SYNC, WA_BIAS on: the waker's CPU if
    /// its load with the wakee added is below prev's without it, prev's
    /// weighed up by half the domain's imbalance_pct.
    fn wake_affine_weight(
        &self,
        imbalance_pct: i64,
        p: TaskId,
        this_cpu: CpuId,
        prev: CpuId,
    ) -> Option<CpuId> {
        let task_load = self.task_h_load(p);
        let this_eff =
            (self.sched.cpu_load(this_cpu) + task_load) * 100 * self.sched.capacity_of(prev);
        let prev_eff = (self.sched.cpu_load(prev) - task_load)
            * (100 + (imbalance_pct - 100) / 2)
            * self.sched.capacity_of(this_cpu);
        (this_eff < prev_eff).then_some(this_cpu)
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::numa::tests::fx;
    use crate::kernel::sched::TaskState;
    use crate::kernel::{CpuId, Kernel, MmId, TaskId};

    /// tiny-2n (2 nodes x 2 CPUs, an LLC per node) with `sets`, and an mm.
    fn boot(sets: &[&str]) -> (Kernel, MmId) {
        let mut k = fx::kernel("tiny-2n", sets);
        let mm = fx::add_mm(&mut k, 1 << 20, false, None);
        (k, mm)
    }

    /// A task that ran on `cpu` and sleeps now.
    fn sleeper(k: &mut Kernel, mm: MmId, cpu: CpuId) -> TaskId {
        let t = fx::add_task(k, mm, cpu);
        k.dequeue_task(t);
        k.tasks[t].state = TaskState::Sleeping;
        if k.sched.rq[cpu].curr.is_none() {
            k.pick_next_task(cpu);
        }
        t
    }

    #[test]
    fn a_waker_that_flips_between_many_wakees_goes_wide() {
        let (mut k, mm) = boot(&[]);
        let waker = fx::add_task(&mut k, mm, fx::c(0));
        let p = sleeper(&mut k, mm, fx::c(2));
        // sd_llc_size is 2: both need 2 flips, and one 2x the other's.
        k.tasks[waker].wakee.flips = 4;
        k.tasks[p].wakee.flips = 1;
        assert!(
            !k.wake_wide(waker, p, fx::c(0)),
            "the wakee flips too little"
        );
        k.tasks[p].wakee.flips = 2;
        assert!(k.wake_wide(waker, p, fx::c(0)));
        k.tasks[waker].wakee.flips = 3;
        assert!(!k.wake_wide(waker, p, fx::c(0)), "3 < 2 x 2");
    }

    #[test]
    fn record_wakee_counts_a_new_wakee_and_halves_once_a_second() {
        let (mut k, mm) = boot(&[]);
        let waker = fx::add_task(&mut k, mm, fx::c(0));
        let a = sleeper(&mut k, mm, fx::c(1));
        let b = sleeper(&mut k, mm, fx::c(2));
        k.now = 0;
        k.record_wakee(waker, a);
        k.record_wakee(waker, a);
        k.record_wakee(waker, b);
        assert_eq!(k.tasks[waker].wakee.flips, 2, "a, then b: two flips");
        // More than HZ jiffies later: halved, then the flip back to a.
        k.now = 2_000_000_000;
        k.record_wakee(waker, a);
        assert_eq!(k.tasks[waker].wakee.flips, 2);
        assert_eq!(k.tasks[waker].wakee.last, Some(a));
    }

    #[test]
    fn a_busy_prev_cpu_loses_the_wakee_to_a_lighter_wakers_cpu() {
        let (mut k, mm) = boot(&[]);
        let (this, prev) = (fx::c(0), fx::c(2));
        // The waker runs on `this`.
        fx::add_task(&mut k, mm, this);
        let p = sleeper(&mut k, mm, prev);
        let other = fx::add_task(&mut k, mm, prev);
        assert_eq!(k.sched.rq[prev].curr, Some(other));
        assert_eq!(k.wake_affine_idle(this, prev), None, "neither idle");
        // Loads as PELT would have them: the waker's CPU one task's, prev's
        // two (the runner's and the sleeper's blocked load).
        k.tasks[p].avg.load_avg = 1000.0;
        k.sched.rq[this].avg.load_avg = 1000.0;
        k.sched.rq[prev].avg.load_avg = 2000.0;
        // 100 x (1000 + 1000) < 108 x (2000 - 1000)? No: prev keeps it.
        assert_eq!(k.wake_affine(117, p, this, prev), prev);
        // prev three tasks' load: 100 x 2000 < 108 x 2000, pulled.
        k.sched.rq[prev].avg.load_avg = 3000.0;
        assert_eq!(k.wake_affine(117, p, this, prev), this);
        // An idle prev keeps its sleeper whatever the loads.
        k.dequeue_task(other);
        k.tasks[other].state = TaskState::Sleeping;
        assert_eq!(k.wake_affine(117, p, this, prev), prev);
    }

    #[test]
    fn a_pulled_wakee_lands_on_an_idle_cpu_beside_the_waker_unless_switched_off() {
        for (sets, pulled) in [(&[][..], true), (&["numalab.wake_affine=0"][..], false)] {
            let (mut k, mm) = boot(sets);
            let waker = fx::add_task(&mut k, mm, fx::c(0));
            let p = sleeper(&mut k, mm, fx::c(2));
            for c in [2, 3] {
                fx::add_task(&mut k, mm, fx::c(c));
            }
            k.tasks[p].avg.load_avg = 1000.0;
            k.sched.rq[fx::c(0)].avg.load_avg = 1000.0;
            k.sched.rq[fx::c(2)].avg.load_avg = 3000.0;
            let cpu = k.select_task_rq_wakeup(p, waker, fx::c(0));
            // Pulled: CPU 1, the idle one in the waker's LLC; else CPU 2,
            // prev (node 1 has no idle CPU).
            let want = if pulled { fx::c(1) } else { fx::c(2) };
            assert_eq!(cpu, want, "{sets:?}");
        }
    }
}
