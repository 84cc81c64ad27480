//! The scheduler core (kernel/sched/core.c and the CFS/EEVDF basics of
//! fair.c): tasks, runqueues, enqueue/dequeue, picking, time sharing and
//! moving tasks between CPUs.
//!
//! Every task is a nice-0 CFS task; fairness is round-robin by vruntime.
//! With `numalab.task_group_fairness` (off by default) a task of a task
//! group advances it faster, by 1024 over its share of its group entity's
//! weight (group.rs `vruntime_rate`), so kernel threads in the root group
//! get the CPU's larger share as the kernel's hierarchy gives them.
//! Load, runnable and utilisation are PELT signals (pelt.rs), updated at
//! enqueue, dequeue, pick, put and the tick. A running task keeps its CPU
//! until it blocks, exits, or a tick finds it has used its slice while
//! others wait (`sched_tick` → `resched_curr`).
//!
//! Left out: nice levels and weights, EEVDF lag and deadlines (vruntime ordering with the base slice instead),
//! wakeup preemption, RT/deadline classes, NO_HZ (idle CPUs keep ticking),
//! CPU hotplug.

pub mod background;
pub mod balance;
pub mod fair;
pub mod group;
pub mod lb_cache;
pub mod lb_stats;
pub mod owed;
pub mod pelt;
pub mod serialize;
pub mod task_state;
pub mod topology;
pub mod vcpu;
pub mod wake_affine;

pub use task_state::TaskState;

use crate::kernel::ids::TiVec;
use crate::kernel::mm::mempolicy::MemPolicy;
use crate::kernel::numa::TaskNumaState;
use crate::kernel::sysctl::{knob, Knobs};
use crate::kernel::{CgroupId, CpuId, Kernel, MmId, TaskId};
use numalab_topology::{CpuSet, Machine};
use serialize::SerializeVariant;
use topology::{SchedDomain, Topology};

/// `sysctl_sched_base_slice` for machines with 8+ CPUs: 0.75 ms scaled by
/// 1 + ilog2(min(ncpus, 8)) = 3 ms (ns).
pub const BASE_SLICE_NS: u64 = 3_000_000;
/// `sysctl_sched_migration_cost`: a task that ran this recently is cache
/// hot (ns).
pub const MIGRATION_COST_NS: u64 = 500_000;

/// The scheduler's own state, as kernel/sched keeps it apart from the
/// tasks, address spaces and NUMA balancing state: per-CPU `struct rq`s,
/// the balancer's and the root domain's state, task groups' load and the
/// `sched_domain` hierarchy. Functions that need only this take it
/// (`impl Sched` blocks beside their `impl Kernel` namesakes).
pub struct Sched {
    /// Runqueues, by CPU.
    pub rq: TiVec<CpuId, Rq>,
    /// The balancer's memo of group sums (lb_cache.rs); a change to a
    /// runqueue's tasks or PELT averages calls [`Sched::lb_changed`].
    pub(in crate::kernel) lb_cache: lb_cache::LbCache,
    /// Load-balancer state (the SD_SERIALIZE flag and counts); read with
    /// [`Sched::balance()`].
    pub(in crate::kernel) balance: balance::BalanceState,
    /// Task groups' load (group.rs).
    pub(in crate::kernel) tg: group::TaskGroups,
    /// Kernel time spent on CPUs with no task to charge (idle balancing),
    /// ns; read with [`Sched::idle_kernel_ns()`].
    pub(in crate::kernel) idle_kernel_ns: f64,
    /// Time tasks spent runnable on a CPU that had no task but was still in
    /// kernel (`Rq::kernel_busy_until`: a balancing softirq, a newly-idle
    /// balance), counted once per CPU however many tasks wait, ns: how much
    /// of `idle_kernel_ns` kept a task from running.
    pub(in crate::kernel) idle_kernel_wait_ns: f64,
    /// Derived topology, fixed at boot.
    pub(in crate::kernel) topo: Topology,
    /// Runqueues with more than one task (`rd->overloaded` as a count).
    pub(in crate::kernel) nr_overloaded: usize,
    /// `numalab.pelt`, read at boot (knobs do not change after it): the
    /// balancer reads PELT signals, not runnable counts (pelt.rs).
    pelt: bool,
    /// `numalab.balance_interval_reset`, read at boot: a pass that found an
    /// imbalance resets `balance_interval` even when nothing moved.
    pub(in crate::kernel) interval_reset_unbalanced: bool,
    /// `numalab.newidle_lb_cost`, read at boot: the newly idle balance is
    /// gated by its measured cost (balance.rs `sched_balance_newidle`).
    pub newidle_lb_cost: bool,
    /// The draws of vcpu.rs (a guest's vCPUs taken off by the host).
    vcpu_rng: rand_pcg::Pcg64Mcg,
    /// Ticks per second as the kernel's tick length gives them
    /// (1e9 / `Kernel::tick_ns`), fixed at boot.
    hz: u64,
    /// Each CPU's core (the machine's `Cpu::core`), dense for the hot
    /// paths that ask about SMT siblings.
    core_of: TiVec<CpuId, u32>,
    /// CPUs running a task on each core, kept by [`Sched::set_curr`]: the
    /// engine's SMT throughput share reads it once per op instead of every
    /// sibling's runqueue.
    busy_on_core: Vec<u8>,
}

impl Sched {
    /// The scheduler of machine `m` at boot with knobs `knobs`.
    pub fn new(m: &Machine, knobs: &Knobs) -> Sched {
        let variant = SerializeVariant::from(knobs.get(knob::SCHED_BALANCE_SERIALIZE));
        let topo = Topology::new(m);
        let rq = topo
            .sd
            .iter_enumerated()
            .map(|(cpu, sds)| Rq::new(cpu, sds))
            .collect();
        Sched {
            rq,
            lb_cache: lb_cache::LbCache::new(&topo),
            balance: balance::BalanceState::new(variant),
            tg: Default::default(),
            idle_kernel_ns: 0.0,
            idle_kernel_wait_ns: 0.0,
            topo,
            nr_overloaded: 0,
            pelt: knobs.get(knob::PELT),
            interval_reset_unbalanced: knobs.get(knob::BALANCE_INTERVAL_RESET),
            newidle_lb_cost: knobs.get(knob::NEWIDLE_LB_COST),
            vcpu_rng: vcpu::vcpu_rng(1),
            hz: 1_000_000_000 / (1_000_000_000 / knobs.get(knob::CONFIG_HZ).max(1)),
            core_of: m.cpus.iter().map(|c| c.core as u32).collect(),
            busy_on_core: vec![0; m.nr_cores()],
        }
    }

    /// Makes `t` (or nothing) the task running on `cpu`: `rq->curr`, with
    /// the runqueue's generation bumped (an event planned for the old
    /// task is stale) and the core's busy count kept.
    pub fn set_curr(&mut self, cpu: CpuId, t: Option<TaskId>) {
        let rq = &mut self.rq[cpu];
        let core = self.core_of[cpu] as usize;
        match (rq.curr.is_some(), t.is_some()) {
            (false, true) => self.busy_on_core[core] += 1,
            (true, false) => self.busy_on_core[core] -= 1,
            _ => {}
        }
        rq.curr = t;
        rq.gen += 1;
        self.lb_changed(cpu);
    }

    /// CPUs of `cpu`'s core (`cpu_smt_mask`) running a task now.
    pub fn busy_smt_siblings(&self, cpu: CpuId) -> usize {
        usize::from(self.busy_on_core[self.core_of[cpu] as usize])
    }

    /// The load balancer's state and counts.
    pub fn balance(&self) -> &balance::BalanceState {
        &self.balance
    }

    /// Seeds the spread of balancing softirqs over a tick and the draws of
    /// a guest's vCPU preemption (vcpu.rs) with the run's seed.
    pub fn seed_balance(&mut self, seed: u64) {
        self.balance.serialize.seed = seed;
        self.vcpu_rng = vcpu::vcpu_rng(seed);
    }

    /// Kernel time spent on CPUs with no task to charge (idle balancing), ns.
    pub fn idle_kernel_ns(&self) -> f64 {
        self.idle_kernel_ns
    }

    /// Time tasks waited, runnable, for an idle CPU's kernel work to end
    /// (ns): see [`Sched::note_kernel_wait`].
    pub fn idle_kernel_wait_ns(&self) -> f64 {
        self.idle_kernel_wait_ns
    }

    /// A task is runnable on `cpu`, which has none running and is in
    /// kernel until `Rq::kernel_busy_until`, at `now` (ns): counts the time
    /// from `now` to then that is not counted yet (the union over the
    /// waits of one CPU, so two tasks waiting at once count once).
    pub fn note_kernel_wait(&mut self, cpu: CpuId, now: u64) {
        let rq = &mut self.rq[cpu];
        let from = now.max(rq.kernel_wait_counted_until);
        if rq.kernel_busy_until > from {
            self.idle_kernel_wait_ns += (rq.kernel_busy_until - from) as f64;
            rq.kernel_wait_counted_until = rq.kernel_busy_until;
        }
    }

    /// Checks the scheduler's own invariants (debug builds and tests): the
    /// overload count matches the runqueues.
    pub fn check_invariants(&self) -> Result<(), String> {
        let overloaded = self.rq.iter().filter(|r| r.nr_running() > 1).count();
        if overloaded != self.nr_overloaded {
            return Err(format!(
                "{overloaded} runqueues overloaded but nr_overloaded = {}",
                self.nr_overloaded
            ));
        }
        let mut busy = vec![0u8; self.busy_on_core.len()];
        for (cpu, rq) in self.rq.iter_enumerated() {
            if rq.curr.is_some() {
                busy[self.core_of[cpu] as usize] += 1;
            }
        }
        if busy != self.busy_on_core {
            return Err("busy CPUs per core differ from the runqueues' current tasks".into());
        }
        self.check_lb_cache()
    }
}

/// A task (`struct task_struct`, the parts modeled).
#[derive(Clone, Debug)]
pub struct Task {
    /// Pid.
    pub pid: u64,
    /// Thread-group id.
    pub tgid: u64,
    /// Name (`comm`).
    pub name: String,
    /// Address space.
    pub mm: MmId,
    /// Cgroup.
    pub cgroup: CgroupId,
    /// State.
    pub state: TaskState,
    /// CPU the task is on or last ran on.
    pub cpu: CpuId,
    /// Requested affinity (`cpus_mask`).
    pub affinity: CpuSet,
    /// Task memory policy.
    pub mempolicy: MemPolicy,
    /// Interleave cursor (`il_prev`).
    pub il_prev: u64,
    /// Virtual runtime, ns.
    pub vruntime: u64,
    /// `sum_exec_runtime`, ns.
    pub sum_exec_runtime: u64,
    /// `se.exec_start`: when the task was last accounted running (picked,
    /// or taken off the CPU, as `update_curr` leaves it), ns. The
    /// balancer's cache-hot test measures from it.
    pub exec_start: u64,
    /// User time, ns.
    pub user_ns: f64,
    /// System time, ns.
    pub sys_ns: f64,
    /// Runnable-but-waiting time, ns.
    pub wait_ns: u64,
    /// When the task was last enqueued while not running, ns.
    pub wait_start: u64,
    /// `se.nr_migrations`.
    pub nr_migrations: u64,
    /// Creation time, ns.
    pub start_ns: u64,
    /// Exit time, ns.
    pub exit_ns: Option<u64>,
    /// NUMA balancing state.
    pub numa: TaskNumaState,
    /// PELT signals (`se.avg`).
    pub avg: pelt::SchedAvg,
    /// The runqueue whose PELT sums hold this task's contribution.
    pub pelt_cpu: Option<CpuId>,
    /// A kernel thread (`PF_KTHREAD`): background activity, no mm of its
    /// own, never in the Run record.
    pub kthread: bool,
    /// When the task last went to the head of its runqueue's `cfs_tasks`
    /// list (enqueued or picked), ns: the balancer takes tasks from the
    /// tail, least recently run first.
    pub lru_stamp: u64,
    /// Whom it woke and how often it changed wakee (fair.c
    /// `record_wakee`, wake_affine.rs).
    pub wakee: wake_affine::WakeeFlips,
}

impl Task {
    /// A new task in state `New`.
    pub fn new(pid: u64, tgid: u64, name: String, mm: MmId, cgroup: CgroupId) -> Task {
        Task {
            pid,
            tgid,
            name,
            mm,
            cgroup,
            state: TaskState::New,
            cpu: CpuId::new(0),
            affinity: CpuSet::new(),
            mempolicy: MemPolicy::DEFAULT,
            il_prev: 0,
            vruntime: 0,
            sum_exec_runtime: 0,
            exec_start: 0,
            user_ns: 0.0,
            sys_ns: 0.0,
            wait_ns: 0,
            wait_start: 0,
            nr_migrations: 0,
            start_ns: 0,
            exit_ns: None,
            numa: TaskNumaState::default(),
            avg: pelt::SchedAvg::default(),
            pelt_cpu: None,
            kthread: false,
            lru_stamp: 0,
            wakee: wake_affine::WakeeFlips::default(),
        }
    }
}

/// Per-CPU, per-domain balancing state (the dynamic part of
/// `struct sched_domain`).
#[derive(Clone, Debug)]
pub struct SdRuntime {
    /// `last_balance` in jiffies.
    pub last_balance: u64,
    /// `balance_interval` in ms.
    pub balance_interval_ms: u64,
    /// `nr_balance_failed`.
    pub nr_balance_failed: u32,
    /// `sd->max_newidle_lb_cost`, ns: the dearest newly idle pass of this
    /// domain lately (decayed by `update_newidle_cost`).
    pub max_newidle_lb_cost: f64,
    /// `sd->last_decay_max_lb_cost` in jiffies.
    pub last_decay_max_lb_cost: u64,
}

/// A runqueue (`struct rq`).
#[derive(Clone, Debug)]
pub struct Rq {
    /// CPU.
    pub cpu: CpuId,
    /// Running task.
    pub curr: Option<TaskId>,
    /// Runnable tasks waiting (not running).
    pub queue: Vec<TaskId>,
    /// `cfs_rq->min_vruntime`.
    pub min_vruntime: u64,
    /// `rq->next_balance` in jiffies.
    pub next_balance: u64,
    /// Per-domain balancing state, parallel to the CPU's domains.
    pub sd: Vec<SdRuntime>,
    /// `rq->avg_idle`, ns.
    pub avg_idle: u64,
    /// When the CPU last went idle, ns.
    pub idle_stamp: u64,
    /// `rq->max_idle_balance_cost`, ns: the dearest newly idle balance
    /// lately, at least `sysctl_sched_migration_cost`; caps `avg_idle`.
    pub max_idle_balance_cost: u64,
    /// `nr_numa_running`: tasks with a preferred node.
    pub nr_numa_running: u32,
    /// `nr_preferred_running`: tasks on their preferred node.
    pub nr_preferred_running: u32,
    /// Bumped when the running task's plan is invalidated.
    pub gen: u64,
    /// Time the CPU spent running tasks, ns.
    pub busy_ns: u64,
    /// `numa_migrate_on`: a NUMA migration targets this rq.
    pub numa_migrate_on: bool,
    /// While the CPU has no task, it is busy in kernel (balancing softirq,
    /// newly-idle balance) until this time (ns): the engine runs no task
    /// there before then; a woken task waits on the queue.
    pub kernel_busy_until: u64,
    /// How far [`Sched::note_kernel_wait`] has counted a task's wait for
    /// `kernel_busy_until` on this CPU (ns).
    pub kernel_wait_counted_until: u64,
    /// PELT signals of the CFS runqueue (`cfs_rq->avg`).
    pub avg: pelt::SchedAvg,
}

impl Rq {
    /// An idle runqueue for `cpu` with balancing state for its domains.
    pub fn new(cpu: CpuId, sds: &[SchedDomain]) -> Rq {
        Rq {
            cpu,
            curr: None,
            queue: Vec::new(),
            min_vruntime: 0,
            next_balance: 0,
            sd: sds
                .iter()
                .map(|d| SdRuntime {
                    last_balance: 0,
                    balance_interval_ms: d.min_interval_ms,
                    nr_balance_failed: 0,
                    max_newidle_lb_cost: 0.0,
                    last_decay_max_lb_cost: 0,
                })
                .collect(),
            avg_idle: 2 * MIGRATION_COST_NS,
            idle_stamp: 0,
            max_idle_balance_cost: MIGRATION_COST_NS,
            nr_numa_running: 0,
            nr_preferred_running: 0,
            gen: 0,
            busy_ns: 0,
            numa_migrate_on: false,
            kernel_busy_until: 0,
            kernel_wait_counted_until: 0,
            avg: pelt::SchedAvg::default(),
        }
    }

    /// `rq->nr_running`.
    pub fn nr_running(&self) -> usize {
        self.queue.len() + usize::from(self.curr.is_some())
    }

    /// True when nothing runs or waits (`idle_cpu`).
    pub fn is_idle(&self) -> bool {
        self.curr.is_none() && self.queue.is_empty()
    }
}

impl Kernel {
    /// Puts runnable task `t` on `cpu`'s queue (`enqueue_task_fair`), placing
    /// its vruntime no further back than one slice behind the queue.
    pub fn enqueue_task(&mut self, t: TaskId, cpu: CpuId) {
        self.pelt_enqueue(t, cpu);
        let (from, moved) = (self.tasks[t].cpu, self.tasks[t].cpu != cpu);
        if moved && self.tasks[t].state != TaskState::New {
            // set_task_cpu → trace_sched_migrate_task
            let (name, pid) = (self.tasks[t].name.clone(), self.tasks[t].pid);
            // Hit by whoever runs set_task_cpu: the destination's current
            // task (a pull by its balancer) or idle.
            let ctx = self.sched.rq[cpu].curr;
            self.trace(ctx, cpu, "sched_migrate_task", || {
                format!("comm={name} pid={pid} prio=120 orig_cpu={from} dest_cpu={cpu}")
            });
        }
        let minv = self.sched.rq[cpu].min_vruntime;
        let task = &mut self.tasks[t];
        task.vruntime = task.vruntime.max(minv.saturating_sub(BASE_SLICE_NS));
        if task.cpu != cpu && task.state != TaskState::New {
            task.nr_migrations += 1;
        }
        task.cpu = cpu;
        task.state = TaskState::Runnable;
        task.wait_start = self.now;
        task.lru_stamp = self.now;
        self.sched.rq[cpu].queue.push(t);
        self.sched.lb_changed(cpu);
        self.group_count(t, cpu, true);
        if self.sched.rq[cpu].nr_running() == 2 {
            self.sched.nr_overloaded += 1;
        }
        self.account_numa_enqueue(t, cpu);
    }

    /// Takes task `t` off its runqueue, running or waiting
    /// (`dequeue_task_fair`). A running task's CPU becomes free.
    pub fn dequeue_task(&mut self, t: TaskId) {
        let cpu = self.tasks[t].cpu;
        self.update_load_avg(t);
        let rq = &mut self.sched.rq[cpu];
        let was_overloaded = rq.nr_running() > 1;
        let mut removed = true;
        if rq.curr == Some(t) {
            self.sched.set_curr(cpu, None);
            self.tasks[t].exec_start = self.now;
            self.trace_off_cpu(t, cpu);
        } else if let Some(i) = rq.queue.iter().position(|&x| x == t) {
            rq.queue.remove(i);
            self.sched.lb_changed(cpu);
            let w = self.now.saturating_sub(self.tasks[t].wait_start);
            self.tasks[t].wait_ns += w;
        } else {
            removed = false;
        }
        if removed {
            self.group_count(t, cpu, false);
        }
        if was_overloaded && self.sched.rq[cpu].nr_running() == 1 {
            self.sched.nr_overloaded -= 1;
        }
        self.account_numa_dequeue(t, cpu);
    }

    /// The waiting task `cpu` would pick next (least vruntime, then id) and
    /// its place in the queue.
    pub(crate) fn next_task(&self, cpu: CpuId) -> Option<(usize, TaskId)> {
        self.sched.rq[cpu]
            .queue
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(_, t)| (self.tasks[t].vruntime, t))
    }

    /// Picks the waiting task with the least vruntime and makes it current
    /// (`pick_next_task_fair` + `set_next_entity`). Returns it.
    pub fn pick_next_task(&mut self, cpu: CpuId) -> Option<TaskId> {
        if self.sched.rq[cpu].curr.is_some() {
            return self.sched.rq[cpu].curr;
        }
        let (i, t) = self.next_task(cpu)?;
        self.update_load_avg(t);
        self.sched.rq[cpu].queue.remove(i);
        self.sched.lb_changed(cpu);
        self.sched.set_curr(cpu, Some(t));
        self.trace_sched_switch(cpu, Some(t));
        let now = self.now;
        let task = &mut self.tasks[t];
        task.wait_ns += now.saturating_sub(task.wait_start);
        task.state = TaskState::Running;
        task.exec_start = now;
        task.lru_stamp = now;
        Some(t)
    }

    /// Puts the running task of `cpu` back in the queue (`put_prev_task`).
    pub fn put_prev_task(&mut self, cpu: CpuId) {
        if let Some(t) = self.sched.rq[cpu].curr {
            self.update_load_avg(t);
            self.tasks[t].exec_start = self.now;
            self.sched.set_curr(cpu, None);
            self.trace_off_cpu(t, cpu);
            let now = self.now;
            let task = &mut self.tasks[t];
            task.state = TaskState::Runnable;
            task.wait_start = now;
            self.sched.rq[cpu].queue.push(t);
            self.sched.lb_changed(cpu);
        }
    }

    /// Charges `ns` of execution to the running task `t` (`update_curr`).
    pub fn update_curr(&mut self, t: TaskId, ns: u64) {
        let cpu = self.tasks[t].cpu;
        let rate = self.vruntime_rate(t);
        let task = &mut self.tasks[t];
        task.sum_exec_runtime += ns;
        // Exact for tasks outside groups (rate 1), whose runs stay as before.
        task.vruntime += if rate == 1.0 {
            ns
        } else {
            (ns as f64 * rate).round() as u64
        };
        let rq = &mut self.sched.rq[cpu];
        rq.busy_ns += ns;
        let minq = rq.queue.iter().map(|&q| self.tasks[q].vruntime).min();
        let v = self.tasks[t].vruntime;
        let floor = minq.map_or(v, |m| m.min(v));
        rq.min_vruntime = rq.min_vruntime.max(floor);
    }

    /// Moves waiting or running task `t` to `dst` (`move_queued_task` /
    /// `__migrate_swap_task`): off its queue, onto `dst`'s.
    pub fn move_task(&mut self, t: TaskId, dst: CpuId) {
        let src = self.tasks[t].cpu;
        if src == dst {
            return;
        }
        let (src_min, dst_min) = (
            self.sched.rq[src].min_vruntime,
            self.sched.rq[dst].min_vruntime,
        );
        self.dequeue_task(t);
        // Keep the task's lag relative to the queue it joins.
        let v = self.tasks[t].vruntime;
        self.tasks[t].vruntime = v.saturating_sub(src_min) + dst_min;
        self.enqueue_task(t, dst);
        self.charge_sys(t, crate::physics::costs::TASK_MIGRATE_NS);
    }

    /// Charges kernel work to task `t` as system time it still has to pay
    /// (it delays the task's next progress). `ns` is the work's cost on
    /// native hardware (physics/costs.rs); what is charged is that times
    /// the machine's `[kernel] cost_scale`, and is returned.
    pub fn charge_sys(&mut self, t: TaskId, ns: f64) -> f64 {
        let ns = ns * self.m.kernel.cost_scale;
        let task = &mut self.tasks[t];
        task.sys_ns += ns;
        let cg = task.cgroup;
        let owed = &mut self.owed[t];
        owed.debt_ns += ns;
        owed.stall_ns += ns;
        self.cgroups.all[cg].sys_ns += ns;
        ns
    }

    /// Charges kernel work done on `cpu`: to its running task if any,
    /// otherwise as idle-CPU kernel time. Scaled by `cost_scale` as
    /// [`Kernel::charge_sys`]; returns the time charged.
    pub fn charge_cpu(&mut self, cpu: CpuId, ns: f64) -> f64 {
        match self.sched.rq[cpu].curr {
            Some(t) => self.charge_sys(t, ns),
            None => {
                let ns = ns * self.m.kernel.cost_scale;
                self.sched.idle_kernel_ns += ns;
                ns
            }
        }
    }

    /// Time (ns) that moving `bytes` at the machine's core bandwidth takes,
    /// in the units [`Kernel::charge_sys`] takes: divided by `cost_scale`,
    /// because the bandwidth is the machine's own measured speed and must
    /// not be scaled again when charged.
    pub fn bytes_cost_ns(&self, bytes: f64) -> f64 {
        bytes / self.m.bandwidth.core_gbps / self.m.kernel.cost_scale
    }
}
