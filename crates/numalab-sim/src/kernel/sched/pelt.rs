//! Per-entity load tracking (kernel/sched/pelt.c, pelt.h and the PELT parts
//! of fair.c): `load_avg`, `runnable_avg` and `util_avg` of every task and
//! every runqueue, with the kernel's geometric decay.
//!
//! Time is cut into 1024 us periods (the kernel's `delta >>= 10` turns ns
//! into ~us; a period is 1024 of those). A period `n` periods ago weighs
//! `y^n`, with `y^32 = 1/2` (`LOAD_AVG_PERIOD`). `___update_load_sum`
//! accumulates the partial first period, the full periods in between
//! (`__accumulate_pelt_segments`) and the partial last one, decaying what
//! was there; `___update_load_avg` divides by `get_pelt_divider`. A task's
//! signals grow while it is on a runqueue (load, runnable) or running
//! (util) and decay while it sleeps; a runqueue's signals sum its tasks'
//! (`nr_running` for load and runnable, 1 while something runs for util),
//! and keep the decaying contributions of tasks that sleep on it (blocked
//! load). A task that changes CPU is detached from the old runqueue and
//! attached to the new one (`detach_entity_load_avg`,
//! `attach_entity_load_avg`); a new task starts with full load and half the
//! runqueue's spare utilisation (`init_entity_runnable_average`,
//! `post_init_entity_util_avg`); a dead task is removed
//! (`remove_entity_load_avg`).
//!
//! The sums are kept in `f64` with exact powers of `y` instead of the
//! kernel's 32-entry integer table (`runnable_avg_yN_inv`), so
//! `LOAD_AVG_MAX` is 1024 / (1 - y) = 47 788 here, not the truncated
//! 47 742. Every task is a nice-0 CFS task; with `numalab.task_group`
//! other than `none`, a cgroup's tasks reach the root through a task group
//! (kernel/sched/group.rs), else `task_h_load` is the task's own
//! `load_avg` and load equals runnable.
//!
//! With `numalab.pelt=0` the balancer reads runnable counts instead
//! (`cpu_load` = 1024 x nr_running, `cpu_util_cfs` 1024 while anything
//! runs, `task_h_load` 1024), the model before PELT; the signals are
//! still computed.
//!
//! Left out: frequency and capacity invariance (`rq_clock_pelt` runs at
//! wall speed: every CPU has capacity 1024), `util_est`, uclamp, RT/DL/IRQ
//! pressure, nested task groups and the group entity's own smoothing
//! (kernel/sched/group.rs), and the
//! `removed` deferral (a dead or migrating task's load leaves at once).

use super::Sched;
use crate::kernel::{CpuId, Kernel, TaskId};

/// `LOAD_AVG_PERIOD`: periods for a contribution to halve.
pub const LOAD_AVG_PERIOD: f64 = 32.0;
/// Length of a PELT period in the kernel's ~us units (`1024`).
pub const PELT_PERIOD: f64 = 1024.0;
/// `SCHED_CAPACITY_SCALE`: a CPU's full capacity, a nice-0 task's weight.
pub const SCHED_CAPACITY_SCALE: f64 = 1024.0;

/// `y`, the per-period decay: `y^32 = 1/2`.
pub fn pelt_y() -> f64 {
    0.5f64.powf(1.0 / LOAD_AVG_PERIOD)
}

/// `LOAD_AVG_MAX`: the sum of a signal that was always 1 (1024 / (1 - y)).
pub fn load_avg_max() -> f64 {
    consts().max
}

/// `decay_load(val, n)`: `val * y^n`.
pub fn decay_load(val: f64, n: f64) -> f64 {
    val * consts().decay_factor(n)
}

/// Whole periods whose `y^n` comes from the table.
const DECAY_TABLE_LEN: usize = 64;

/// The constants the kernel compiles in, worked out once (powf is not
/// const): `LOAD_AVG_MAX` and `y^n` for whole `n` below 64 (every update a
/// few ticks apart), as the kernel's `runnable_avg_yN_inv` table spares it
/// the computation. An update takes them once ([`consts`]).
struct PeltConsts {
    max: f64,
    y_n: [f64; DECAY_TABLE_LEN],
}

impl PeltConsts {
    /// `y^n`, the factor [`decay_load`] applies (one `powf` for all the
    /// sums an update decays by the same periods, or a table entry).
    fn decay_factor(&self, n: f64) -> f64 {
        if n >= 0.0 && n < DECAY_TABLE_LEN as f64 && n.fract() == 0.0 {
            self.y_n[n as usize]
        } else {
            0.5f64.powf(n / LOAD_AVG_PERIOD)
        }
    }
}

/// The PELT constants.
fn consts() -> &'static PeltConsts {
    static CONSTS: std::sync::LazyLock<PeltConsts> = std::sync::LazyLock::new(|| PeltConsts {
        max: PELT_PERIOD / (1.0 - pelt_y()),
        y_n: std::array::from_fn(|i| 0.5f64.powf(i as f64 / LOAD_AVG_PERIOD)),
    });
    &CONSTS
}

/// `struct sched_avg`, the parts modeled. Sums are in ~us (ns / 1024)
/// weighted by the signal's factor; averages are 0..1024 per task.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SchedAvg {
    /// `last_update_time`, ns.
    pub last_update_time: u64,
    /// `load_sum`.
    pub load_sum: f64,
    /// `runnable_sum`.
    pub runnable_sum: f64,
    /// `util_sum`.
    pub util_sum: f64,
    /// `period_contrib`: ~us of the current period already accumulated.
    pub period_contrib: f64,
    /// `load_avg`.
    pub load_avg: f64,
    /// `runnable_avg`.
    pub runnable_avg: f64,
    /// `util_avg`.
    pub util_avg: f64,
}

impl SchedAvg {
    /// `get_pelt_divider`.
    pub fn divider(&self) -> f64 {
        self.divider_with(load_avg_max())
    }

    /// [`SchedAvg::divider`] with `LOAD_AVG_MAX` already at hand.
    fn divider_with(&self, max: f64) -> f64 {
        max - PELT_PERIOD + self.period_contrib
    }

    /// `___update_load_sum` + `___update_load_avg`: brings the signal to
    /// `now` (ns) with `load`, `runnable` and `running` held since the last
    /// update. Averages are recomputed when a period boundary was crossed,
    /// as in the kernel. Returns whether they were.
    pub fn update(&mut self, now: u64, load: f64, runnable: f64, running: bool) -> bool {
        if now <= self.last_update_time {
            // A clock that went back (the kernel resets last_update_time).
            self.last_update_time = self.last_update_time.min(now);
            return false;
        }
        let delta_ns = now - self.last_update_time;
        // delta >>= 10: whole ~us; the remainder stays in last_update_time.
        let whole = delta_ns >> 10;
        if whole == 0 {
            return false;
        }
        // Exact: `whole` is below 2^54, and below 2^53 (f64's exact
        // integers) for any span under 292 years, so `delta as u64` would
        // give `whole` back; the integer spares that conversion (a hot
        // line: every runqueue and running task, every tick).
        let delta = whole as f64;
        self.last_update_time += whole << 10;
        let c = consts();
        // The sums in locals, stored once at the end: stores of single
        // sums followed by a paired load of two of them (the averages'
        // division, vectorised) stalled on store forwarding, a tenth of
        // a busy run's time. The same operations in the same order.
        let (mut load_sum, mut runnable_sum, mut util_sum) =
            (self.load_sum, self.runnable_sum, self.util_sum);
        // accumulate_sum
        let mut contrib = delta;
        let total = delta + self.period_contrib;
        let periods = (total / PELT_PERIOD).floor();
        if periods > 0.0 {
            let y_n = c.decay_factor(periods);
            load_sum *= y_n;
            runnable_sum *= y_n;
            util_sum *= y_n;
            // __accumulate_pelt_segments(periods, d1, d3)
            let d1 = PELT_PERIOD - self.period_contrib;
            let d3 = total - periods * PELT_PERIOD;
            let max = c.max;
            let c1 = d1 * y_n;
            let c2 = max - max * y_n - PELT_PERIOD;
            contrib = c1 + c2 + d3;
        }
        let period_contrib = total - periods * PELT_PERIOD;
        if load > 0.0 {
            load_sum += load * contrib;
        }
        if runnable > 0.0 {
            runnable_sum += runnable * contrib;
        }
        if running {
            util_sum += contrib;
        }
        self.period_contrib = period_contrib;
        self.load_sum = load_sum;
        self.runnable_sum = runnable_sum;
        self.util_sum = util_sum;
        if periods > 0.0 {
            // ___update_load_avg, from the locals (`divider_with`).
            let div = c.max - PELT_PERIOD + period_contrib;
            self.load_avg = SCHED_CAPACITY_SCALE * load_sum / div;
            self.runnable_avg = SCHED_CAPACITY_SCALE * runnable_sum / div;
            self.util_avg = SCHED_CAPACITY_SCALE * util_sum / div;
            return true;
        }
        false
    }

    /// `___update_load_avg`: averages from the stored sums (the tests';
    /// [`SchedAvg::update`] works them out from its locals).
    #[cfg(test)]
    fn recompute(&mut self, max: f64) {
        let div = self.divider_with(max);
        self.load_avg = SCHED_CAPACITY_SCALE * self.load_sum / div;
        self.runnable_avg = SCHED_CAPACITY_SCALE * self.runnable_sum / div;
        self.util_avg = SCHED_CAPACITY_SCALE * self.util_sum / div;
    }

    /// `enqueue_load_avg` and friends: adds an entity's averages to this
    /// (runqueue) signal, its sums scaled by this signal's divider.
    pub(super) fn add(&mut self, se: &SchedAvg) {
        let div = self.divider() / SCHED_CAPACITY_SCALE;
        self.load_avg += se.load_avg;
        self.runnable_avg += se.runnable_avg;
        self.util_avg += se.util_avg;
        self.load_sum += se.load_avg * div;
        self.runnable_sum += se.runnable_avg * div;
        self.util_sum += se.util_avg * div;
    }

    /// `dequeue_load_avg` and friends: removes an entity's averages,
    /// never going below zero (`sub_positive`).
    pub(super) fn sub(&mut self, se: &SchedAvg) {
        let div = self.divider() / SCHED_CAPACITY_SCALE;
        self.load_avg = (self.load_avg - se.load_avg).max(0.0);
        self.runnable_avg = (self.runnable_avg - se.runnable_avg).max(0.0);
        self.util_avg = (self.util_avg - se.util_avg).max(0.0);
        self.load_sum = (self.load_sum - se.load_avg * div).max(0.0);
        self.runnable_sum = (self.runnable_sum - se.runnable_avg * div).max(0.0);
        self.util_sum = (self.util_sum - se.util_avg * div).max(0.0);
    }
}

impl Kernel {
    /// `update_cfs_rq_load_avg`: brings `cpu`'s runqueue signals to now.
    pub fn update_cfs_rq_load_avg(&mut self, cpu: CpuId) {
        let rq = &self.sched.rq[cpu];
        let nr = rq.nr_running() as f64;
        let running = rq.curr.is_some();
        let now = self.now;
        if self.sched.rq[cpu].avg.update(now, nr, nr, running) {
            self.sched.lb_changed(cpu);
        }
        if !self.sched.tg.active.is_empty() {
            self.update_groups_on(cpu);
        }
    }

    /// `__update_load_avg_se` (with the runqueue first, as
    /// `update_load_avg` does): brings task `t` and its runqueue to now.
    pub fn update_load_avg(&mut self, t: TaskId) {
        if let Some(cpu) = self.tasks[t].pelt_cpu {
            self.update_cfs_rq_load_avg(cpu);
        }
        let task = &self.tasks[t];
        let on_rq = matches!(
            task.state,
            super::TaskState::Runnable | super::TaskState::Running
        );
        let running =
            self.sched.rq[task.cpu].curr == Some(t) && task.state == super::TaskState::Running;
        let f = if on_rq { 1.0 } else { 0.0 };
        let now = self.now;
        self.tasks[t].avg.update(now, f, f, running);
    }

    /// Before task `t` is put on `cpu`'s queue: bring it up to date and,
    /// if it comes from another CPU or is new, detach it there and attach
    /// it here (`enqueue_entity` → `update_load_avg(DO_ATTACH)`,
    /// `migrate_task_rq_fair`).
    pub(crate) fn pelt_enqueue(&mut self, t: TaskId, cpu: CpuId) {
        let new = self.tasks[t].state == super::TaskState::New && self.tasks[t].pelt_cpu.is_none();
        self.update_load_avg(t);
        self.update_cfs_rq_load_avg(cpu);
        if self.tasks[t].pelt_cpu == Some(cpu) {
            return;
        }
        if let Some(old) = self.tasks[t].pelt_cpu {
            self.update_cfs_rq_load_avg(old);
            let se = self.tasks[t].avg;
            self.sched.rq[old].avg.sub(&se);
            self.sched.lb_changed(old);
            self.group_attach(t, old, false);
        }
        if new {
            self.init_entity_runnable_average(t, cpu);
        }
        // attach_entity_load_avg: the entity takes the runqueue's clock
        // and period phase; its sums follow from its averages.
        let rq_avg = self.sched.rq[cpu].avg;
        let se = &mut self.tasks[t].avg;
        se.last_update_time = rq_avg.last_update_time;
        se.period_contrib = rq_avg.period_contrib;
        let div = se.divider() / SCHED_CAPACITY_SCALE;
        se.load_sum = se.load_avg * div;
        se.runnable_sum = se.runnable_avg * div;
        se.util_sum = se.util_avg * div;
        let se = *se;
        self.sched.rq[cpu].avg.add(&se);
        self.sched.lb_changed(cpu);
        self.group_attach(t, cpu, true);
        self.tasks[t].pelt_cpu = Some(cpu);
    }

    /// `init_entity_runnable_average` + `post_init_entity_util_avg`: a
    /// new task starts with full load and a share of `cpu`'s spare
    /// utilisation.
    fn init_entity_runnable_average(&mut self, t: TaskId, cpu: CpuId) {
        let rq = self.sched.rq[cpu].avg;
        let cap = (SCHED_CAPACITY_SCALE - rq.util_avg) / 2.0;
        let mut util = 0.0;
        if cap > 0.0 {
            util = if rq.util_avg > 0.0 {
                (rq.util_avg * SCHED_CAPACITY_SCALE / (rq.load_avg + 1.0)).min(cap)
            } else {
                cap
            };
        }
        let se = &mut self.tasks[t].avg;
        se.load_avg = SCHED_CAPACITY_SCALE;
        se.util_avg = util;
        se.runnable_avg = util;
    }

    /// `remove_entity_load_avg` when task `t` dies: its load leaves its
    /// runqueue.
    pub fn pelt_task_dead(&mut self, t: TaskId) {
        if let Some(cpu) = self.tasks[t].pelt_cpu.take() {
            self.update_cfs_rq_load_avg(cpu);
            let se = self.tasks[t].avg;
            self.sched.rq[cpu].avg.sub(&se);
            self.sched.lb_changed(cpu);
            self.group_attach(t, cpu, false);
        }
    }

    /// Tick: the running task's entity and every runqueue are brought up
    /// to date (`entity_tick` → `update_load_avg`; idle runqueues decay as
    /// `sched_balance_update_blocked_averages` would make them).
    pub fn pelt_tick(&mut self) {
        for cpu in self.cpu_ids() {
            match self.sched.rq[cpu].curr {
                Some(t) => self.update_load_avg(t),
                None => self.update_cfs_rq_load_avg(cpu),
            }
        }
    }

    /// `task_h_load`: the task's load (its own `load_avg`, scaled through
    /// its task group when it has one, kernel/sched/group.rs, where it may
    /// be 0 as the kernel's; otherwise at least 1),
    /// or 1024 with `numalab.pelt=0`.
    pub fn task_h_load(&self, t: TaskId) -> i64 {
        if self.sched.pelt_enabled() {
            let f = if self.sched.tg.active.is_empty() {
                1.0
            } else {
                // The kernel's integer steps (numalab.task_h_load_integer).
                if let Some(h) = self.group_task_h_load(t) {
                    return h;
                }
                self.group_h_factor(t)
            };
            ((self.tasks[t].avg.load_avg * f).round() as i64).max(1)
        } else {
            SCHED_CAPACITY_SCALE as i64
        }
    }

    /// `task_util_est` (without util_est: `task_util`), or 1024.
    pub fn task_util(&self, t: TaskId) -> i64 {
        if self.sched.pelt_enabled() {
            self.tasks[t].avg.util_avg.round() as i64
        } else {
            SCHED_CAPACITY_SCALE as i64
        }
    }
}

impl Sched {
    /// `sched_feat`-like switch: true when the balancer reads PELT signals
    /// (`numalab.pelt=1`), false for runnable counts.
    #[inline]
    pub fn pelt_enabled(&self) -> bool {
        self.pelt
    }

    /// `cpu_load`: the runqueue's load (PELT `load_avg`, with task groups'
    /// loads replaced by their entities' weights, kernel/sched/group.rs; or
    /// 1024 per runnable task with `numalab.pelt=0`).
    #[inline(always)]
    pub fn cpu_load(&self, cpu: CpuId) -> i64 {
        if self.pelt_enabled() {
            let mut load = self.rq[cpu].avg.load_avg;
            if !self.tg.active.is_empty() {
                load = (load + self.group_load_delta(cpu)).max(0.0);
            }
            load.round() as i64
        } else {
            self.rq[cpu].nr_running() as i64 * SCHED_CAPACITY_SCALE as i64
        }
    }

    /// `cpu_runnable`: the runqueue's runnable average (or 1024 per
    /// runnable task).
    #[inline(always)]
    pub fn cpu_runnable(&self, cpu: CpuId) -> i64 {
        if self.pelt_enabled() {
            self.rq[cpu].avg.runnable_avg.round() as i64
        } else {
            self.rq[cpu].nr_running() as i64 * SCHED_CAPACITY_SCALE as i64
        }
    }

    /// `cpu_util_cfs`: the runqueue's utilisation, at most its capacity
    /// (or 1024 while anything runs).
    #[inline(always)]
    pub fn cpu_util_cfs(&self, cpu: CpuId) -> i64 {
        if self.pelt_enabled() {
            (self.rq[cpu].avg.util_avg.round() as i64).min(self.capacity_of(cpu))
        } else if self.rq[cpu].nr_running() > 0 {
            SCHED_CAPACITY_SCALE as i64
        } else {
            0
        }
    }

    /// `capacity_of`: every modeled CPU has full capacity.
    #[inline(always)]
    pub fn capacity_of(&self, _cpu: CpuId) -> i64 {
        SCHED_CAPACITY_SCALE as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_contribution_halves_every_32_periods() {
        let y = pelt_y();
        assert!((y.powi(32) - 0.5).abs() < 1e-12);
        assert!((decay_load(1000.0, 32.0) - 500.0).abs() < 1e-9);
        // LOAD_AVG_MAX: the kernel's truncated table gives 47742.
        assert!((load_avg_max() - 47742.0).abs() < 60.0);
    }

    #[test]
    fn an_always_running_entity_converges_to_full_and_decays_by_half() {
        let mut a = SchedAvg::default();
        let mut now = 0;
        for _ in 0..1000 {
            now += 4 * MS;
            a.update(now, 1.0, 1.0, true);
        }
        assert!((a.util_avg - 1024.0).abs() < 2.0, "{}", a.util_avg);
        assert!((a.load_avg - 1024.0).abs() < 2.0);
        // 32 periods (32 x 1024 x 1024 ns) asleep: half.
        let before = a.util_avg;
        let period_ns = 1024 * 1024;
        a.update(now + 32 * period_ns, 0.0, 0.0, false);
        assert!((a.util_avg / before - 0.5).abs() < 0.02, "{}", a.util_avg);
    }

    #[test]
    fn a_half_running_entity_settles_near_half() {
        let mut a = SchedAvg::default();
        let mut now = 0;
        for i in 0..4000 {
            now += MS;
            a.update(now, 1.0, 1.0, i % 2 == 0);
        }
        assert!((a.util_avg - 512.0).abs() < 40.0, "{}", a.util_avg);
        assert!((a.load_avg - 1024.0).abs() < 2.0);
    }

    #[test]
    fn attach_and_detach_move_an_entitys_averages() {
        let mut rq = SchedAvg {
            period_contrib: 300.0,
            ..Default::default()
        };
        let se = SchedAvg {
            load_avg: 800.0,
            runnable_avg: 700.0,
            util_avg: 600.0,
            ..Default::default()
        };
        rq.add(&se);
        assert_eq!((rq.load_avg, rq.util_avg), (800.0, 600.0));
        rq.recompute(load_avg_max());
        assert!((rq.load_avg - 800.0).abs() < 1e-6);
        rq.sub(&se);
        rq.sub(&se);
        assert_eq!((rq.load_avg, rq.util_avg, rq.load_sum), (0.0, 0.0, 0.0));
    }
}
