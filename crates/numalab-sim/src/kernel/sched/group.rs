//! Task groups (CONFIG_FAIR_GROUP_SCHED), first order: what a cgroup's
//! tasks weigh on the root runqueue that the balancer reads.
//!
//! A cgroup with CPU control is a task group: its tasks queue on the
//! group's own runqueue on each CPU, and the root runqueue sees one group
//! entity per CPU whose weight is the group's shares (1024 for the default
//! `cpu.weight` 100) split over the CPUs in proportion to the group's load
//! on each (`calc_group_shares`: `shares * load / tg->load_avg`, `load`
//! the larger of the group runqueue's `load.weight` and `load_avg`). So
//! the root load of a CPU holding two of a group's eight busy tasks is
//! about 256, not 2048, and a task's load as the balancer moves it
//! (`task_h_load`) is its own load scaled by the same ratio: 128. Kernel
//! threads stay in the root group at full weight, so their load, running
//! or blocked (a kworker that ran a little while ago), counts for as much
//! as a quarter of a CPU's group load, and the balancer moves the
//! group's tasks from CPUs whose counts are equal (docs/real.md M3).
//!
//! With the lab switch `numalab.task_group_fairness` (off by default,
//! docs/real.md M3) time sharing follows the same weights
//! (`vruntime_rate`): on a CPU where a root-group task (a
//! kernel thread, `numalab real run`'s coordinator) and one of a group's
//! tasks are runnable, the group's entity weighs its shares there (about
//! 256 for one of eight busy tasks on four CPUs) against the root task's
//! 1024, so the root task runs about 4/5 of the time and the group's task
//! waits in the queue, where the balancer can take it.
//!
//! Each group keeps a PELT signal per CPU driven by its runnable tasks
//! there, with its tasks' contributions attached and detached as they
//! move (as the root runqueue's, kernel/sched/pelt.rs), and their sum
//! (`tg->load_avg`). Lab switch `numalab.task_group`: `none` (every task in
//! the root group: the model before), `cgroups` (each non-root cgroup is
//! a task group), `session` (also the workload's root cgroup is a group of
//! its own below the root where only kernel threads run: a systemd session
//! or `numalab real run`'s cgroup).
//!
//! With the lab switch `numalab.task_h_load_integer` (off by default) a
//! grouped task's `task_h_load` follows fair.c's integer steps
//! (`group_task_h_load`): a thread of a group whose shares are spread thin
//! weighs 1 where the unrounded ratio gives 3.
//!
//! Left out: the group entity's own PELT smoothing (its weight reaches the
//! root load at once), nested groups (every group is a child of the root),
//! `cpu.weight` other than 100, `MIN_SHARES` and the 1/64 threshold of
//! `update_tg_load_avg`.

use super::pelt::{SchedAvg, SCHED_CAPACITY_SCALE};
use super::Sched;
use crate::kernel::ids::TiVec;
use crate::kernel::sysctl::knob;
use crate::kernel::{CgroupId, CpuId, Kernel, TaskId};
use numalab_knobs::knob::TaskGroup;

/// One task group's load.
#[derive(Clone, Debug, Default)]
pub struct GroupLoad {
    /// Its runqueue's signals on each CPU.
    pub per_cpu: TiVec<CpuId, SchedAvg>,
    /// Its runnable tasks on each CPU, queued or running
    /// (`cfs_rq->h_nr_running` of the group runqueue).
    pub nr: TiVec<CpuId, u32>,
    /// `tg->load_avg`: the sum of `per_cpu`'s `load_avg`.
    pub load_avg: f64,
}

/// The task groups, by cgroup (`None` for a cgroup that is not one, or has
/// had no task).
#[derive(Clone, Debug, Default)]
pub struct TaskGroups {
    /// By cgroup id.
    pub by_cgroup: Vec<Option<GroupLoad>>,
    /// Cgroups that are groups, for the root load's sum.
    pub active: Vec<CgroupId>,
}

impl Kernel {
    /// The task group task `t`'s load goes through, if any.
    pub fn task_group(&self, t: TaskId) -> Option<CgroupId> {
        let task = &self.tasks[t];
        if task.kthread {
            return None;
        }
        match self.knobs.get(knob::TASK_GROUP) {
            TaskGroup::None => None,
            TaskGroup::Cgroups => (task.cgroup.index() != 0).then_some(task.cgroup),
            TaskGroup::Session => Some(task.cgroup),
        }
    }

    /// Brings group `g`'s signal on `cpu` to now (`update_cfs_rq_load_avg`
    /// of the group runqueue), keeping `tg->load_avg` in step.
    pub(crate) fn update_group_load_avg(&mut self, g: CgroupId, cpu: CpuId) {
        let running = self.sched.rq[cpu]
            .curr
            .is_some_and(|c| self.task_group(c) == Some(g));
        let now = self.now;
        let grp = self.sched.group_mut(g);
        let nr = f64::from(grp.nr[cpu]);
        let before = grp.per_cpu[cpu].load_avg;
        grp.per_cpu[cpu].update(now, nr, nr, running);
        grp.load_avg += grp.per_cpu[cpu].load_avg - before;
    }

    /// Brings every group's signal on `cpu` to now.
    pub(crate) fn update_groups_on(&mut self, cpu: CpuId) {
        for i in 0..self.sched.tg.active.len() {
            let g = self.sched.tg.active[i];
            self.update_group_load_avg(g, cpu);
        }
    }

    /// Counts task `t` on (`on`) or off `cpu`'s runqueue in its group.
    pub(crate) fn group_count(&mut self, t: TaskId, cpu: CpuId, on: bool) {
        // A task's group exists from its first attach, before it queues:
        // with none, there is nothing to count (and no knob to read).
        if self.sched.tg.active.is_empty() {
            return;
        }
        let Some(g) = self.task_group(t) else {
            return;
        };
        let nr = &mut self.sched.group_mut(g).nr[cpu];
        *nr = if on { *nr + 1 } else { nr.saturating_sub(1) };
    }

    /// Attaches (`add`) or detaches task `t`'s load on `cpu` to or from its
    /// group's runqueue there.
    pub(crate) fn group_attach(&mut self, t: TaskId, cpu: CpuId, add: bool) {
        let Some(g) = self.task_group(t) else {
            return;
        };
        self.update_group_load_avg(g, cpu);
        let se = self.tasks[t].avg;
        let grp = self.sched.group_mut(g);
        let before = grp.per_cpu[cpu].load_avg;
        if add {
            grp.per_cpu[cpu].add(&se);
        } else {
            grp.per_cpu[cpu].sub(&se);
        }
        grp.load_avg += grp.per_cpu[cpu].load_avg - before;
    }

    /// `task_h_load`'s group factor for task `t`: its group entity's
    /// weight over its group runqueue's load on its CPU (1 outside groups).
    pub(crate) fn group_h_factor(&self, t: TaskId) -> f64 {
        let Some(g) = self.task_group(t) else {
            return 1.0;
        };
        let Some(Some(grp)) = self.sched.tg.by_cgroup.get(g.index()) else {
            return 1.0;
        };
        let cpu = self.tasks[t].pelt_cpu.unwrap_or(self.tasks[t].cpu);
        let avg = grp.per_cpu[cpu].load_avg;
        if avg <= 0.0 || grp.load_avg <= 0.0 {
            return 1.0;
        }
        (SCHED_CAPACITY_SCALE / grp.load_avg).min(SCHED_CAPACITY_SCALE / avg)
    }

    /// `task_h_load` (fair.c) of task `t` in its task group as the kernel
    /// computes it, in integers with denominators one larger
    /// (`update_cfs_rq_h_load`, then `task_h_load`): the root's `h_load`
    /// is its load, the group runqueue's `h_load` that times its entity's
    /// load over the root's load + 1, and the task's its `load_avg` times
    /// that over the group runqueue's load + 1. The entity's load is the
    /// floor of its `calc_group_shares` weight, as the model's root load
    /// counts it (the entity's own smoothing is left out). `None` outside
    /// task groups or without `numalab.task_h_load_integer=1` (off by
    /// default, docs/model.md).
    pub(crate) fn group_task_h_load(&self, t: TaskId) -> Option<i64> {
        if !self.knobs.get(knob::TASK_H_LOAD_INTEGER) {
            return None;
        }
        let g = self.task_group(t)?;
        let grp = self.sched.tg.by_cgroup.get(g.index())?.as_ref()?;
        let cpu = self.tasks[t].pelt_cpu.unwrap_or(self.tasks[t].cpu);
        let se_load = calc_group_shares(grp, cpu)?.floor() as i64;
        let root = self.sched.cpu_load(cpu);
        let h_load = root * se_load / (root + 1);
        let grp_load = grp.per_cpu[cpu].load_avg.floor() as i64;
        let own = self.tasks[t].avg.load_avg.floor() as i64;
        Some(own * h_load / (grp_load + 1))
    }
}

impl Sched {
    fn group_mut(&mut self, g: CgroupId) -> &mut GroupLoad {
        let i = g.index();
        if self.tg.by_cgroup.len() <= i {
            self.tg.by_cgroup.resize(i + 1, None);
        }
        if self.tg.by_cgroup[i].is_none() {
            let n = self.rq.len();
            self.tg.by_cgroup[i] = Some(GroupLoad {
                per_cpu: vec![SchedAvg::default(); n].into(),
                nr: vec![0; n].into(),
                load_avg: 0.0,
            });
            self.tg.active.push(g);
        }
        self.tg.by_cgroup[i].as_mut().expect("just made")
    }

    /// What the task groups change in `cpu`'s root load: each group's load
    /// there replaced by its entity's weight (`calc_group_shares`).
    pub(crate) fn group_load_delta(&self, cpu: CpuId) -> f64 {
        let mut d = 0.0;
        for &g in &self.tg.active {
            let Some(grp) = &self.tg.by_cgroup[g.index()] else {
                continue;
            };
            if let Some(shares) = calc_group_shares(grp, cpu) {
                d += shares - grp.per_cpu[cpu].load_avg;
            }
        }
        d
    }
}

/// `calc_group_shares`: the weight of group `grp`'s entity on `cpu`'s root
/// runqueue, its 1024 shares times its load there over its load on all
/// CPUs (`None` when the group weighs nothing anywhere).
fn calc_group_shares(grp: &GroupLoad, cpu: CpuId) -> Option<f64> {
    let nr = f64::from(grp.nr[cpu]);
    let avg = grp.per_cpu[cpu].load_avg;
    let load = avg.max(nr * SCHED_CAPACITY_SCALE);
    let tg_weight = grp.load_avg - avg + load;
    (tg_weight > 0.0).then(|| (SCHED_CAPACITY_SCALE * load / tg_weight).min(SCHED_CAPACITY_SCALE))
}

impl Kernel {
    /// How fast task `t`'s vruntime advances per ns it runs (`update_curr`
    /// → `calc_delta_fair` through its group entity, flattened):
    /// `NICE_0_LOAD` over its share of its group entity's weight on its CPU,
    /// the entity's `calc_group_shares` weight split evenly over the group's
    /// runnable tasks there (every task is nice 0). 1 for a task outside
    /// task groups, or with `numalab.task_group_fairness=0`.
    pub(crate) fn vruntime_rate(&self, t: TaskId) -> f64 {
        if self.sched.tg.active.is_empty() || !self.knobs.get(knob::TASK_GROUP_FAIRNESS) {
            return 1.0;
        }
        let Some(g) = self.task_group(t) else {
            return 1.0;
        };
        let Some(Some(grp)) = self.sched.tg.by_cgroup.get(g.index()) else {
            return 1.0;
        };
        let cpu = self.tasks[t].cpu;
        let nr = f64::from(grp.nr[cpu].max(1));
        match calc_group_shares(grp, cpu) {
            // The kernel clamps a group entity's weight at MIN_SHARES (2);
            // here it only guards the division.
            Some(shares) => SCHED_CAPACITY_SCALE * nr / shares.max(2.0),
            None => 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::numa::tests::fx;
    use crate::kernel::{CpuId, Kernel, TaskId};

    /// Eight busy tasks of one process, two per CPU of tiny-2n's four, run
    /// for `ms`; then the root load of CPU 0 and task 0's `task_h_load`.
    fn two_per_cpu(group: &str, ms: u64) -> (i64, i64) {
        let mut k = fx::kernel("tiny-2n", &[&format!("numalab.task_group={group}")]);
        let mm = fx::add_mm(&mut k, 1 << 20, false, None);
        let tasks: Vec<_> = (0..8)
            .map(|i| fx::add_task(&mut k, mm, CpuId::new(i % 4)))
            .collect();
        for _ in 0..ms {
            k.now += 1_000_000;
            k.pelt_tick();
        }
        // The group's runnable count on each CPU follows its queue: two,
        // then one after a dequeue.
        if let Some(g) = k.task_group(tasks[0]) {
            let nr = |k: &crate::kernel::Kernel, c: usize| {
                k.sched.tg.by_cgroup[g.index()].as_ref().unwrap().nr[CpuId::new(c)]
            };
            assert!((0..4).all(|c| nr(&k, c) == 2));
            let load = (k.sched.cpu_load(CpuId::new(0)), k.task_h_load(tasks[0]));
            k.dequeue_task(tasks[4]);
            assert_eq!(nr(&k, 0), 1);
            return load;
        }
        (k.sched.cpu_load(CpuId::new(0)), k.task_h_load(tasks[0]))
    }

    /// `n` busy tasks of one process on `machine`, task `i` on CPU `i`
    /// modulo the CPUs, after 300 ms of PELT ticks with `sets`.
    fn busy_tasks(machine: &str, n: usize, sets: &[&str]) -> (Kernel, Vec<TaskId>) {
        let mut k = fx::kernel(machine, sets);
        let cpus = k.m.nr_cpus();
        let mm = fx::add_mm(&mut k, 1 << 20, false, None);
        let tasks: Vec<_> = (0..n)
            .map(|i| fx::add_task(&mut k, mm, CpuId::new(i % cpus)))
            .collect();
        for _ in 0..300 {
            k.now += 1_000_000;
            k.pelt_tick();
        }
        (k, tasks)
    }

    /// Eight busy tasks, two per CPU of tiny-2n's four: task 0's vruntime
    /// rate.
    fn rate_of_two_per_cpu(sets: &[&str]) -> f64 {
        let (k, tasks) = busy_tasks("tiny-2n", 8, sets);
        k.vruntime_rate(tasks[0])
    }

    #[test]
    fn a_grouped_tasks_vruntime_runs_faster_by_its_share_of_the_entitys_weight() {
        // The group entity weighs about 256 on each CPU, half of it each
        // task's: vruntime advances 1024 / 128 = 8 times as fast as a
        // root-group task's, which so gets 8/9 of a CPU it shares with one.
        let r = rate_of_two_per_cpu(&[
            "numalab.task_group=session",
            "numalab.task_group_fairness=1",
        ]);
        assert!((7.0..=9.0).contains(&r), "{r}");
        // Switched off (the default), or without groups: equal shares.
        assert_eq!(rate_of_two_per_cpu(&["numalab.task_group=session"]), 1.0);
        let none =
            rate_of_two_per_cpu(&["numalab.task_group=none", "numalab.task_group_fairness=1"]);
        assert_eq!(none, 1.0);
    }

    /// 320 busy tasks of one group, one per CPU of spr-4n, after 300 ms:
    /// task 0's `task_h_load` with `sets`.
    fn h_load_of_one_of_320(sets: &[&str]) -> i64 {
        let (k, tasks) = busy_tasks("spr-4n", 320, sets);
        k.task_h_load(tasks[0])
    }

    #[test]
    fn task_h_load_of_a_thinly_spread_group_truncates_as_the_kernels() {
        // 1024 shares over 320 CPUs: the entity weighs 3.2 on each. The
        // kernel's integer steps: entity load 3, group h_load 3 * L / (L
        // + 1) = 2, the task's ~1023 * 2 / (~1023 + 1) = 1.
        let kernel = h_load_of_one_of_320(&[
            "numalab.task_group=session",
            "numalab.task_h_load_integer=1",
        ]);
        assert_eq!(kernel, 1);
        // Unrounded until the end (the default, the model before): 3.
        let float = h_load_of_one_of_320(&["numalab.task_group=session"]);
        assert_eq!(float, 3);
        // Without groups the switch changes nothing: the task's own load.
        let a = h_load_of_one_of_320(&["numalab.task_group=none"]);
        let b = h_load_of_one_of_320(&["numalab.task_group=none", "numalab.task_h_load_integer=1"]);
        assert_eq!(a, b);
        assert!((1000..=1024).contains(&a), "{a}");
    }

    #[test]
    fn a_groups_tasks_weigh_its_shares_spread_over_the_cpus() {
        // Root group: two full tasks, 2048; each task 1024.
        let (load, h) = two_per_cpu("none", 300);
        assert!((1900..=2100).contains(&load), "{load}");
        assert!((950..=1050).contains(&h), "{h}");
        // A session group of 1024 shares over 4 CPUs: 256 each, and a
        // task's share of it 128.
        let (load, h) = two_per_cpu("session", 300);
        assert!((230..=280).contains(&load), "{load}");
        assert!((115..=140).contains(&h), "{h}");
        // Tasks of the root cgroup are in no group under `cgroups`.
        assert_eq!(two_per_cpu("cgroups", 300), two_per_cpu("none", 300));
    }
}
