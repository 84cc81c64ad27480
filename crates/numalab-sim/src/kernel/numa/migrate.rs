//! Moving tasks to their memory (kernel/sched/fair.c, core.c):
//! `numa_migrate_preferred` (with its retry interval), `task_numa_migrate`
//! over the lowest NUMA domain, `update_numa_stats`/`numa_classify`,
//! `task_numa_find_cpu` (a move into spare capacity within the
//! `imb_numa_nr` allowance, else a load check), `task_numa_compare` (move
//! versus swap with the task running on each candidate CPU),
//! `task_numa_assign`, `load_too_imbalanced`, and performing the choice
//! (`migrate_task_to`, `migrate_swap`) with the `sched_move_numa`,
//! `sched_swap_numa` and `sched_stick_numa` events.
//!
//! When it runs: a hinting fault that finds its task off the preferred
//! node only records the request (`migrate_requested`); the search and the
//! move or swap run at the next tick, when every CPU's progress is
//! accounted (tasks on other CPUs may be running between ticks). A task
//! that went to sleep in between loses its request.
//!
//! Loads are the scheduler's (kernel/sched/pelt.rs): a CPU's PELT load,
//! runnable and utilisation averages, capacity 1024, and each task's own
//! `load_avg` as `task_h_load` (with `numalab.pelt=0`: 1024 per runnable
//! task, so a swap never changes the load balance).
//!
//! Left out: `select_idle_sibling` refinements, the `test_idle_cores`
//! LLC hint (an idle core is found by looking at its siblings), stopper
//! threads and their failure races, the reverted task counters.

use super::{NumaTopologyType, SMALLIMP};
use crate::kernel::ids::CpuSetExt;
use crate::kernel::sched::fair::adjust_numa_imbalance;
use crate::kernel::sched::topology::lowest_numa_domain;
use crate::kernel::stats::Vm;
use crate::kernel::sysctl::knob;
use crate::kernel::{CpuId, Kernel, NodeId, TaskId};

/// `enum numa_type` (fair.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum NumaType {
    /// `node_has_spare`.
    #[default]
    HasSpare,
    /// `node_fully_busy`.
    FullyBusy,
    /// `node_overloaded`.
    Overloaded,
}

/// `struct numa_stats` (fair.c).
#[derive(Clone, Copy, Debug, Default)]
pub struct NumaStats {
    /// `load`: sum of CPU loads.
    pub load: i64,
    /// `runnable`.
    pub runnable: i64,
    /// `util`.
    pub util: i64,
    /// `compute_capacity`.
    pub compute_capacity: i64,
    /// `nr_running` (CFS tasks).
    pub nr_running: i64,
    /// `weight`: CPUs of the node.
    pub weight: i64,
    /// `node_type`.
    pub node_type: NumaType,
    /// `idle_cpu`: an idle CPU the task may use (an idle core preferred).
    pub idle_cpu: Option<CpuId>,
}

/// `struct task_numa_env` (fair.c).
#[derive(Clone, Debug)]
pub struct TaskNumaEnv {
    /// The task being placed.
    pub p: TaskId,
    /// Its CPU.
    pub src_cpu: CpuId,
    /// Its node.
    pub src_nid: NodeId,
    /// Candidate CPU.
    pub dst_cpu: CpuId,
    /// Candidate node.
    pub dst_nid: NodeId,
    /// `imb_numa_nr` of the lowest NUMA domain.
    pub imb_numa_nr: i64,
    /// Source node statistics.
    pub src_stats: NumaStats,
    /// Destination node statistics.
    pub dst_stats: NumaStats,
    /// `100 + (sd->imbalance_pct - 100) / 2`.
    pub imbalance_pct: i64,
    /// Distance used for the weights.
    pub dist: u32,
    /// Best swap partner so far.
    pub best_task: Option<TaskId>,
    /// Its improvement.
    pub best_imp: i64,
    /// Best CPU so far.
    pub best_cpu: Option<CpuId>,
}

/// `numa_classify` (fair.c).
pub fn numa_classify(imbalance_pct: i64, ns: &NumaStats) -> NumaType {
    if ns.nr_running > ns.weight
        && (ns.compute_capacity * 100 < ns.util * imbalance_pct
            || ns.compute_capacity * imbalance_pct < ns.runnable * 100)
    {
        return NumaType::Overloaded;
    }
    if ns.nr_running < ns.weight
        || (ns.compute_capacity * 100 > ns.util * imbalance_pct
            && ns.compute_capacity * imbalance_pct > ns.runnable * 100)
    {
        return NumaType::HasSpare;
    }
    NumaType::FullyBusy
}

/// `load_too_imbalanced` (fair.c): would moving load make the
/// capacity-normalised imbalance between the two nodes worse?
pub fn load_too_imbalanced(src_load: i64, dst_load: i64, env: &TaskNumaEnv) -> bool {
    let src_capacity = env.src_stats.compute_capacity;
    let dst_capacity = env.dst_stats.compute_capacity;
    let imb = (dst_load * src_capacity - src_load * dst_capacity).abs();
    let old_imb = (env.dst_stats.load * src_capacity - env.src_stats.load * dst_capacity).abs();
    imb > old_imb
}

impl Kernel {
    /// `numa_migrate_preferred` (fair.c): sets the retry time
    /// (`min(1 s, scan period / 16)`) and, when the task is off its
    /// preferred node, asks for `task_numa_migrate` (done at the next tick).
    pub fn mainline_numa_migrate_preferred(&mut self, t: TaskId) {
        let n = &self.tasks[t].numa;
        let Some(pref) = n.preferred_nid else {
            return;
        };
        if n.faults.is_empty() {
            return;
        }
        let interval = self
            .tick_hz()
            .min(self.msecs_to_jiffies(n.scan_period) / 16);
        self.tasks[t].numa.migrate_retry = self.jiffies() + interval;
        // Without the 2013 reschedule only the load balancer moves tasks.
        if self.cpu_node(self.tasks[t].cpu) == pref || !self.numa_migrate_on_select_on() {
            return;
        }
        if !std::mem::replace(&mut self.tasks[t].numa.migrate_requested, true) {
            self.numa.migrate_queue.push(t);
        }
    }

    /// `update_numa_stats` (fair.c): load, utilisation and an idle CPU of
    /// node `nid` for placing `env.p`.
    pub fn update_numa_stats(&self, env: &TaskNumaEnv, nid: NodeId, find_idle: bool) -> NumaStats {
        let mut ns = NumaStats::default();
        let mut idle_core: Option<CpuId> = None;
        let allowed = self.task_allowed(env.p);
        for cpu in self.node_cpus(nid) {
            let rq = &self.sched.rq[cpu];
            let nr = rq.nr_running() as i64;
            ns.load += self.sched.cpu_load(cpu);
            ns.runnable += self.sched.cpu_runnable(cpu);
            ns.util += self.sched.cpu_util_cfs(cpu);
            ns.nr_running += nr;
            ns.compute_capacity += self.sched.capacity_of(cpu);
            if find_idle && idle_core.is_none() && nr == 0 {
                if rq.numa_migrate_on || !allowed.has(cpu) {
                    continue;
                }
                if ns.idle_cpu.is_none() {
                    ns.idle_cpu = Some(cpu);
                }
                // numa_idle_core: prefer a CPU whose whole core is idle.
                let core = &self.sched.topo.core_cpus[self.cpu_info(cpu).core];
                if core.len() > 1 && core.iter().all(|&c| self.sched.rq[c].is_idle()) {
                    idle_core = Some(cpu);
                }
            }
        }
        ns.weight = self.m.nodes[nid.index()].cpus.len() as i64;
        ns.node_type = numa_classify(env.imbalance_pct, &ns);
        if idle_core.is_some() {
            ns.idle_cpu = idle_core;
        }
        ns
    }

    /// `task_numa_assign` (fair.c): records (`cur`, `imp`) on `env.dst_cpu`
    /// as the best so far, claiming the CPU's `numa_migrate_on` (or another
    /// idle CPU of the node when it is already claimed).
    fn task_numa_assign(&mut self, env: &mut TaskNumaEnv, cur: Option<TaskId>, imp: i64) {
        if env.best_cpu != Some(env.dst_cpu)
            && std::mem::replace(&mut self.sched.rq[env.dst_cpu].numa_migrate_on, true)
        {
            let cpus: Vec<CpuId> = self.node_cpus(env.dst_nid).collect();
            let allowed = self.task_allowed(env.p);
            let start = cpus
                .iter()
                .position(|&c| c == env.dst_cpu)
                .map_or(0, |i| i + 1);
            let mut found = false;
            for k in 0..cpus.len() {
                let cpu = cpus[(start + k) % cpus.len()];
                if Some(cpu) == env.best_cpu || !self.sched.rq[cpu].is_idle() || !allowed.has(cpu) {
                    continue;
                }
                env.dst_cpu = cpu;
                if !std::mem::replace(&mut self.sched.rq[cpu].numa_migrate_on, true) {
                    found = true;
                    break;
                }
            }
            if !found {
                return;
            }
        }
        if let Some(b) = env.best_cpu {
            if b != env.dst_cpu {
                self.sched.rq[b].numa_migrate_on = false;
            }
        }
        env.best_task = cur;
        env.best_imp = imp;
        env.best_cpu = Some(env.dst_cpu);
    }

    /// `dst_rq->curr` as `task_numa_compare` (fair.c) reads it: the running
    /// task, or with `numalab.numa_compare_next_curr` (default) on a CPU
    /// whose running slot is empty but whose queue is not (a task moved or
    /// swapped there earlier in this tick, not picked yet) the task it
    /// will pick next, as `pick_next_task` would (least vruntime, then
    /// id): the kernel's destination runs the moved task as soon as the
    /// stopper finishes, before another search can read its `curr`.
    fn numa_compare_curr(&self, cpu: CpuId) -> Option<TaskId> {
        let rq = &self.sched.rq[cpu];
        if rq.curr.is_some() || rq.queue.is_empty() || !self.knobs.get(knob::NUMA_COMPARE_NEXT_CURR)
        {
            return rq.curr;
        }
        self.next_task(cpu).map(|(_, t)| t)
    }

    /// `task_numa_compare` (fair.c): would moving `env.p` to `env.dst_cpu`,
    /// or swapping it with the task running there, improve NUMA locality
    /// without hurting the load balance? Returns true to stop the search.
    pub fn mainline_task_numa_compare(
        &mut self,
        env: &mut TaskNumaEnv,
        taskimp: i64,
        groupimp: i64,
        maymove: bool,
    ) -> bool {
        let dst_rq = env.dst_cpu;
        if self.sched.rq[dst_rq].numa_migrate_on {
            return false;
        }
        let p_ng = self.tasks[env.p].numa.group;
        let mut imp = if p_ng.is_some() { groupimp } else { taskimp };
        let moveimp = imp;
        let mut cur = self.numa_compare_curr(dst_rq);
        if cur == Some(env.p) {
            return true;
        }
        let pref = |k: &Kernel, x: TaskId| k.tasks[x].numa.preferred_nid;
        'assign: {
            let Some(c) = cur else {
                if maymove && moveimp >= env.best_imp {
                    break 'assign;
                }
                return false;
            };
            if !self.task_allowed_cpus(c).has(env.src_cpu) {
                return false;
            }
            // Do not pick a swap partner that is not going to its preferred
            // node when the best one is.
            if let Some(bt) = env.best_task {
                if pref(self, bt) == Some(env.src_nid) && pref(self, c) != Some(env.src_nid) {
                    return false;
                }
            }
            let cur_ng = self.tasks[c].numa.group;
            let dist = env.dist;
            if cur_ng == p_ng {
                // No swaps within a group (or between ungrouped tasks) while
                // the destination has spare capacity.
                if env.dst_stats.node_type == NumaType::HasSpare {
                    return false;
                }
                imp = taskimp + self.task_weight(c, env.src_nid, dist)
                    - self.task_weight(c, env.dst_nid, dist);
                if cur_ng.is_some() {
                    imp -= imp / 16;
                }
            } else if cur_ng.is_some() && p_ng.is_some() {
                imp += self.group_weight(c, env.src_nid, dist)
                    - self.group_weight(c, env.dst_nid, dist);
            } else {
                imp +=
                    self.task_weight(c, env.src_nid, dist) - self.task_weight(c, env.dst_nid, dist);
            }
            // Discourage taking a task off its preferred node, encourage
            // sending one to it.
            if pref(self, c) == Some(env.dst_nid) {
                imp -= imp / 16;
            }
            if pref(self, c) == Some(env.src_nid) {
                imp += imp / 8;
            }
            if maymove && moveimp > imp && moveimp > env.best_imp {
                imp = moveimp;
                cur = None;
                break 'assign;
            }
            if let Some(bt) = env.best_task {
                if pref(self, c) == Some(env.src_nid) && pref(self, bt) != Some(env.src_nid) {
                    break 'assign;
                }
            }
            if imp < SMALLIMP || imp <= env.best_imp + SMALLIMP / 2 {
                return false;
            }
            // In the overloaded case, keep the load balanced (equal busy
            // tasks: a swap changes nothing).
            let load = self.task_h_load(env.p) - self.task_h_load(c);
            if load != 0 {
                let dst_load = env.dst_stats.load + load;
                let src_load = env.src_stats.load - load;
                if load_too_imbalanced(src_load, dst_load, env) {
                    return false;
                }
            }
        }
        // assign:
        if cur.is_none() {
            let mut cpu = env.dst_stats.idle_cpu.unwrap_or(env.dst_cpu);
            if !self.sched.rq[cpu].is_idle() {
                if let Some(b) = env.best_cpu {
                    if self.sched.rq[b].is_idle() {
                        cpu = b;
                    }
                }
            }
            env.dst_cpu = cpu;
        }
        self.task_numa_assign(env, cur, imp);
        let mut stop = false;
        if maymove && cur.is_none() && env.best_cpu.is_some_and(|b| self.sched.rq[b].is_idle()) {
            stop = true;
        }
        if !maymove
            && env
                .best_task
                .is_some_and(|bt| pref(self, bt) == Some(env.src_nid))
        {
            stop = true;
        }
        stop
    }

    /// `task_numa_find_cpu` (fair.c): the candidates on `env.dst_nid`. With
    /// spare capacity there, a move is allowed when it leaves no imbalance
    /// beyond the `imb_numa_nr` allowance (and an idle CPU is taken at
    /// once); otherwise a move is allowed unless it worsens the load
    /// imbalance. Then every allowed CPU of the node is compared.
    pub fn task_numa_find_cpu(&mut self, env: &mut TaskNumaEnv, taskimp: i64, groupimp: i64) {
        let before = (env.best_cpu, env.best_task);
        let (path, maymove) = self.task_numa_find_cpu_search(env, taskimp, groupimp);
        if self.trace.is_some() {
            self.trace_numa_find_cpu(env, before, path, maymove);
        }
    }

    /// The search of [`Kernel::task_numa_find_cpu`]; returns which path it
    /// took (0: spare capacity and an idle CPU taken at once, 1: spare
    /// capacity but the move would leave an imbalance, 2: spare capacity,
    /// no idle CPU cached, 3: no spare capacity, the load check) and
    /// `maymove`.
    fn task_numa_find_cpu_search(
        &mut self,
        env: &mut TaskNumaEnv,
        taskimp: i64,
        groupimp: i64,
    ) -> (u8, bool) {
        let maymove;
        let path;
        if env.dst_stats.node_type == NumaType::HasSpare {
            let src_running = env.src_stats.nr_running - 1;
            let dst_running = env.dst_stats.nr_running + 1;
            let imbalance = (dst_running - src_running).max(0);
            let imbalance = adjust_numa_imbalance(imbalance, dst_running, env.imb_numa_nr);
            if imbalance == 0 {
                maymove = true;
                path = 2;
                if let Some(idle) = env.dst_stats.idle_cpu {
                    env.dst_cpu = idle;
                    self.task_numa_assign(env, None, 0);
                    return (0, maymove);
                }
            } else {
                maymove = false;
                path = 1;
            }
        } else {
            let load = self.task_h_load(env.p);
            let dst_load = env.dst_stats.load + load;
            let src_load = env.src_stats.load - load;
            maymove = !load_too_imbalanced(src_load, dst_load, env);
            path = 3;
        }
        let allowed = self.task_allowed(env.p);
        let cpus: Vec<CpuId> = self
            .node_cpus(env.dst_nid)
            .filter(|&c| allowed.has(c))
            .collect();
        for cpu in cpus {
            env.dst_cpu = cpu;
            if self.task_numa_compare(env, taskimp, groupimp, maymove) {
                break;
            }
        }
        (path, maymove)
    }

    /// `numalab_numa_find_cpu` (opt-in): one `task_numa_find_cpu` call,
    /// with the destination node's figures as `update_numa_stats` saw
    /// them (and both nodes' PELT loads with the task's `task_h_load`,
    /// which `load_too_imbalanced` weighs), the path taken (see
    /// [`Kernel::task_numa_find_cpu_search`]),
    /// `maymove`, how many of the node's CPUs have no current task now
    /// (`cur == NULL` in `task_numa_compare`): `idle` with nothing queued,
    /// `pending` with a task queued that has not run yet (one moved there
    /// earlier in the tick), and what the call chose
    /// (`res=none|same|move|swap`; `same` when an earlier node's choice
    /// stands).
    fn trace_numa_find_cpu(
        &mut self,
        env: &TaskNumaEnv,
        before: (Option<CpuId>, Option<TaskId>),
        path: u8,
        maymove: bool,
    ) {
        let ds = env.dst_stats;
        let (mut idle, mut pending) = (0, 0);
        for c in self.node_cpus(env.dst_nid) {
            let rq = &self.sched.rq[c];
            if rq.curr.is_none() {
                if rq.queue.is_empty() {
                    idle += 1;
                } else {
                    pending += 1;
                }
            }
        }
        let res = match (env.best_cpu, env.best_task) {
            (None, _) => "none",
            (b, bt) if (b, bt) == before => "same",
            (_, None) => "move",
            (_, Some(_)) => "swap",
        };
        let pid = self.tasks[env.p].pid;
        let (sn, dn) = (env.src_nid, env.dst_nid);
        let ss = env.src_stats;
        let idle_cpu = ds.idle_cpu.map_or(-1, |c| c.index() as i64);
        let load = self.task_h_load(env.p);
        let (sl, dl) = (ss.load, ds.load);
        let ty = ds.node_type as u8;
        self.trace(Some(env.p), env.src_cpu, "numalab_numa_find_cpu", || {
            format!(
                "pid={pid} src_nid={sn} dst_nid={dn} src_nr={} dst_nr={} weight={} type={ty} src_load={sl} dst_load={dl} load={load} idle_cpu={idle_cpu} path={path} maymove={} idle={idle} pending={pending} res={res}",
                ss.nr_running, ds.nr_running, ds.weight, u8::from(maymove)
            )
        });
    }

    /// `task_numa_migrate` (fair.c): look for a CPU on the preferred node
    /// (and, when none is found or the group spans several active nodes,
    /// on the others) and move or swap task `t` there. The distance used
    /// for other nodes is the previous candidate's, as in the kernel.
    pub fn mainline_task_numa_migrate(&mut self, t: TaskId) {
        let src_cpu = self.tasks[t].cpu;
        let src_nid = self.cpu_node(src_cpu);
        let Some(sd) = lowest_numa_domain(&self.sched.topo.sd[src_cpu]) else {
            // Trapped in a domain that does not cross nodes.
            self.sched_setnuma(t, Some(src_nid));
            return;
        };
        let imbalance_pct = 100 + (sd.imbalance_pct as i64 - 100) / 2;
        let imb_numa_nr = sd.imb_numa_nr as i64;
        let Some(pref) = self.tasks[t].numa.preferred_nid else {
            return;
        };
        let dist = self.node_distance(src_nid, pref);
        let mut env = TaskNumaEnv {
            p: t,
            src_cpu,
            src_nid,
            dst_cpu: src_cpu,
            dst_nid: pref,
            imb_numa_nr,
            src_stats: NumaStats::default(),
            dst_stats: NumaStats::default(),
            imbalance_pct,
            dist,
            best_task: None,
            best_imp: 0,
            best_cpu: None,
        };
        let mut taskweight = self.task_weight(t, src_nid, dist);
        let mut groupweight = self.group_weight(t, src_nid, dist);
        env.src_stats = self.update_numa_stats(&env, src_nid, false);
        let taskimp = self.task_weight(t, pref, dist) - taskweight;
        let groupimp = self.group_weight(t, pref, dist) - groupweight;
        env.dst_stats = self.update_numa_stats(&env, pref, true);
        self.task_numa_find_cpu(&mut env, taskimp, groupimp);

        let multi_node_group = self.numa_group(t).is_some_and(|g| g.active_nodes > 1);
        if env.best_cpu.is_none() || multi_node_group {
            let backplane =
                super::numa_topology_type(&self.m.distance) == NumaTopologyType::Backplane;
            for nid in NodeId::range(self.m.nr_nodes()) {
                if !self.node_has_cpus(nid) || nid == src_nid || nid == pref {
                    continue;
                }
                let dist = self.node_distance(src_nid, env.dst_nid);
                if backplane && dist != env.dist {
                    taskweight = self.task_weight(t, src_nid, dist);
                    groupweight = self.group_weight(t, src_nid, dist);
                }
                let taskimp = self.task_weight(t, nid, dist) - taskweight;
                let groupimp = self.group_weight(t, nid, dist) - groupweight;
                if taskimp < 0 && groupimp < 0 {
                    continue;
                }
                env.dist = dist;
                env.dst_nid = nid;
                env.dst_stats = self.update_numa_stats(&env, nid, true);
                self.task_numa_find_cpu(&mut env, taskimp, groupimp);
            }
        }
        // A grouped task settles where it goes (or stays).
        if self.tasks[t].numa.group.is_some() {
            let nid = env.best_cpu.map_or(src_nid, |c| self.cpu_node(c));
            if Some(nid) != self.tasks[t].numa.preferred_nid {
                self.sched_setnuma(t, Some(nid));
            }
        }
        let Some(best_cpu) = env.best_cpu else {
            self.trace_sched_stick_numa(t, src_cpu, None, None);
            return;
        };
        match env.best_task {
            None => {
                let ok = self.migrate_task_to(t, best_cpu);
                self.sched.rq[best_cpu].numa_migrate_on = false;
                if !ok {
                    self.trace_sched_stick_numa(t, src_cpu, None, Some(best_cpu));
                }
            }
            Some(other) => {
                let ok = self.migrate_swap(t, other, best_cpu, src_cpu);
                self.sched.rq[best_cpu].numa_migrate_on = false;
                if !ok {
                    let oc = self.tasks[other].cpu;
                    self.trace_sched_stick_numa(t, src_cpu, Some(other), Some(oc));
                }
            }
        }
    }

    /// `migrate_task_to` (core.c): moves task `t` to `cpu` (through the
    /// stopper in the kernel), with `sched_move_numa`, and counts
    /// `numa_task_migrated` system wide and in the task's memory.stat (as
    /// 6.16-rc1 to rc5 did). False if the task may not run there.
    pub fn migrate_task_to(&mut self, t: TaskId, cpu: CpuId) -> bool {
        let curr_cpu = self.tasks[t].cpu;
        if curr_cpu == cpu {
            return true;
        }
        if !self.task_allowed_cpus(t).has(cpu) {
            return false;
        }
        let (pid, tgid, ngid) = (
            self.tasks[t].pid,
            self.tasks[t].tgid,
            self.task_numa_group_id(t),
        );
        let (sn, dn) = (self.cpu_node(curr_cpu), self.cpu_node(cpu));
        self.count_memcg_event(t, Vm::NumaTaskMigrated, 1);
        self.trace(Some(t), curr_cpu, "sched_move_numa", || {
            format!(
                "pid={pid} tgid={tgid} ngid={ngid} src_cpu={curr_cpu} src_nid={sn} dst_cpu={cpu} dst_nid={dn}"
            )
        });
        self.move_task(t, cpu);
        true
    }

    /// `migrate_swap` (core.c): exchanges task `p` on `curr_cpu` with task
    /// `other` on `target_cpu`, with `sched_swap_numa`. Each task moved
    /// counts one `numa_task_swapped` (`__migrate_swap_task` runs once per
    /// task, as 6.16-rc1 to rc5 counted it), so a swap counts two, each in
    /// its own task's memory.stat. False if either may not run on the
    /// other's CPU or has moved.
    pub fn migrate_swap(
        &mut self,
        p: TaskId,
        other: TaskId,
        target_cpu: CpuId,
        curr_cpu: CpuId,
    ) -> bool {
        if curr_cpu == target_cpu
            || !self.task_allowed_cpus(p).has(target_cpu)
            || !self.task_allowed_cpus(other).has(curr_cpu)
            || self.tasks[p].cpu != curr_cpu
            || self.tasks[other].cpu != target_cpu
        {
            return false;
        }
        let f = |k: &Kernel, t: TaskId| (k.tasks[t].pid, k.tasks[t].tgid, k.task_numa_group_id(t));
        let ((sp, st, sg), (dp, dt, dg)) = (f(self, p), f(self, other));
        let (sn, dn) = (self.cpu_node(curr_cpu), self.cpu_node(target_cpu));
        self.trace(Some(p), curr_cpu, "sched_swap_numa", || {
            format!(
                "src_pid={sp} src_tgid={st} src_ngid={sg} src_cpu={curr_cpu} src_nid={sn} dst_pid={dp} dst_tgid={dt} dst_ngid={dg} dst_cpu={target_cpu} dst_nid={dn}"
            )
        });
        for (t, cpu) in [(p, target_cpu), (other, curr_cpu)] {
            self.count_memcg_event(t, Vm::NumaTaskSwapped, 1);
            self.move_task(t, cpu);
        }
        true
    }

    /// The `sched_stick_numa` event: task `t` stays (no CPU found, or the
    /// move or swap failed).
    fn trace_sched_stick_numa(
        &mut self,
        t: TaskId,
        src_cpu: CpuId,
        dst: Option<TaskId>,
        dst_cpu: Option<CpuId>,
    ) {
        let (sp, st, sg) = (
            self.tasks[t].pid,
            self.tasks[t].tgid,
            self.task_numa_group_id(t),
        );
        let sn = self.cpu_node(src_cpu);
        let (dp, dt, dg) = dst.map_or((0, 0, 0), |d| {
            (
                self.tasks[d].pid,
                self.tasks[d].tgid,
                self.task_numa_group_id(d),
            )
        });
        let dc = dst_cpu.map_or(-1, |c| c.index() as i64);
        let dn = dst_cpu.map_or(-1, |c| self.cpu_node(c).index() as i64);
        self.trace(Some(t), src_cpu, "sched_stick_numa", || {
            format!(
                "src_pid={sp} src_tgid={st} src_ngid={sg} src_cpu={src_cpu} src_nid={sn} dst_pid={dp} dst_tgid={dt} dst_ngid={dg} dst_cpu={dc} dst_nid={dn}"
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::fx;
    use super::super::*;
    use super::{load_too_imbalanced, numa_classify, NumaStats, NumaType, TaskNumaEnv};
    use crate::kernel::sched::balance::CpuIdleType;
    use crate::kernel::stats::Vm;
    use crate::kernel::Kernel;
    use crate::kernel::{CgroupId, CpuId, NodeId, TaskId};

    /// Gives task `t` `n` private MEM faults on `nid` and makes it
    /// preferred.
    fn faults_on(k: &mut Kernel, t: TaskId, nid: NodeId, n: i64) {
        let nn = k.m.nr_nodes();
        let f = &mut k.tasks[t].numa;
        f.faults = vec![0; NR_NUMA_HINT_FAULT_BUCKETS * nn];
        f.faults[faults_idx(nn, NUMA_MEM, nid, 1)] = n;
        f.total_faults = n;
        k.sched_setnuma(t, Some(nid));
    }

    /// One single-threaded process per CPU of tiny-2n.
    fn four_tasks() -> (Kernel, Vec<TaskId>) {
        four_tasks_with(&[])
    }

    /// [`four_tasks`] with knobs `sets`.
    fn four_tasks_with(sets: &[&str]) -> (Kernel, Vec<TaskId>) {
        let mut k = fx::kernel("tiny-2n", sets);
        k.trace = Some(Box::default());
        let ts = CpuId::range(4)
            .map(|cpu| {
                let mm = fx::add_mm(&mut k, 1 << 20, false, None);
                fx::add_task(&mut k, mm, cpu)
            })
            .collect();
        // Two seconds of running, ticked, so the PELT signals say busy.
        while k.now < 2_000_000_000 {
            k.now += k.tick_ns;
            k.pelt_tick();
        }
        (k, ts)
    }

    #[test]
    fn task_numa_compare_prefers_a_swap_that_improves_both() {
        let (mut k, ts) = four_tasks();
        let (a, b, c) = (ts[0], ts[2], ts[3]);
        // A on node 0 uses node 1; B on node 1 uses node 0; C on node 1 is
        // at home; D has no faults. Every CPU is busy.
        faults_on(&mut k, a, fx::n(1), 1000);
        faults_on(&mut k, b, fx::n(0), 1000);
        faults_on(&mut k, c, fx::n(1), 1000);
        // B lives in its own cgroup: each swapped task counts in its own.
        let cg_b = k.cgroups.mkdir("/b", None, None).unwrap();
        k.tasks[b].cgroup = cg_b;
        k.task_numa_migrate(a);
        assert_eq!(k.cpu_node(k.tasks[a].cpu), fx::n(1));
        assert_eq!(k.vmstat.get(Vm::NumaTaskSwapped), 2, "one per task swapped");
        assert_eq!(k.vmstat.get(Vm::NumaTaskMigrated), 0);
        let root = CgroupId::new(0);
        assert_eq!(k.cgroups.all[root].stat.get(Vm::NumaTaskSwapped), 1);
        assert_eq!(k.cgroups.all[cg_b].stat.get(Vm::NumaTaskSwapped), 1);
        assert_eq!(k.tasks[a].cpu, fx::c(2), "took B's CPU");
        assert_eq!(k.tasks[b].cpu, fx::c(0), "B went to A's CPU");
        assert_eq!(k.tasks[c].cpu, fx::c(3), "C, at home, was left alone");
        let tr = &k.trace.as_ref().unwrap().events;
        let ev = tr
            .iter()
            .find(|e| e.name == "sched_swap_numa")
            .expect("swap event");
        let (pa, pb) = (k.tasks[a].pid, k.tasks[b].pid);
        assert!(
            ev.fields.contains(&format!("src_pid={pa} ")),
            "{}",
            ev.fields
        );
        assert!(
            ev.fields.contains(&format!("dst_pid={pb} ")),
            "{}",
            ev.fields
        );
        assert!(ev.fields.contains("src_nid=0") && ev.fields.contains("dst_nid=1"));
        assert!(k.sched.rq.iter().all(|r| !r.numa_migrate_on));
        k.check_invariants().unwrap();
        k.check_numa_counters().unwrap();
    }

    /// A on node 0 wants node 1, whose CPU 2 holds B (wanting node 0)
    /// queued but not running, as a task moved there earlier in the tick
    /// is; C on CPU 3 is at home. Returns where A ends up.
    fn search_past_a_queued_partner(sets: &[&str]) -> (Kernel, Vec<TaskId>) {
        let (mut k, ts) = four_tasks_with(sets);
        let (a, b, c) = (ts[0], ts[2], ts[3]);
        faults_on(&mut k, a, fx::n(1), 1000);
        faults_on(&mut k, b, fx::n(0), 1000);
        faults_on(&mut k, c, fx::n(1), 1000);
        k.put_prev_task(fx::c(2));
        assert_eq!(k.sched.rq[fx::c(2)].curr, None);
        assert_eq!(k.sched.rq[fx::c(2)].queue, vec![b]);
        k.task_numa_migrate(a);
        (k, ts)
    }

    #[test]
    fn task_numa_compare_sees_the_task_a_cpu_is_about_to_run() {
        // numalab.numa_compare_next_curr (default): B is CPU 2's curr for
        // the search, so A and B swap as if B were running.
        let (k, ts) = search_past_a_queued_partner(&[]);
        assert_eq!(k.tasks[ts[0]].cpu, fx::c(2));
        assert_eq!(k.tasks[ts[2]].cpu, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaTaskSwapped), 2);
        // Off: CPU 2 looks idle (cur = NULL), a move is not allowed on a
        // fully busy node, and nothing happens.
        let (k, ts) = search_past_a_queued_partner(&["numalab.numa_compare_next_curr=0"]);
        assert_eq!(k.tasks[ts[0]].cpu, fx::c(0));
        assert_eq!(k.tasks[ts[2]].cpu, fx::c(2));
        assert_eq!(k.vmstat.get(Vm::NumaTaskSwapped), 0);
        assert_eq!(k.vmstat.get(Vm::NumaTaskMigrated), 0);
    }

    /// Two tasks on node 0 that want node 1 ask for a search, the
    /// higher-numbered first; the tick carries the searches out. Returns
    /// the pids in the order of their `sched_*_numa` events.
    fn searches_in_order(sets: &[&str]) -> (Vec<u64>, [u64; 2]) {
        let mut k = fx::kernel("tiny-2n", sets);
        k.trace = Some(Box::default());
        let mm = fx::add_mm(&mut k, 1 << 20, false, None);
        let a = fx::add_task(&mut k, mm, fx::c(0));
        let b = fx::add_task(&mut k, mm, fx::c(1));
        assert!(a < b);
        for t in [a, b] {
            faults_on(&mut k, t, fx::n(1), 500);
        }
        k.numa_migrate_preferred(b);
        k.numa_migrate_preferred(a);
        k.numa_tick_housekeeping();
        let order = k
            .trace
            .as_ref()
            .unwrap()
            .events
            .iter()
            .filter(|e| e.name.starts_with("sched_") && e.name.ends_with("_numa"))
            .map(|e| e.pid)
            .collect();
        (order, [k.tasks[b].pid, k.tasks[a].pid])
    }

    #[test]
    fn deferred_searches_run_in_fault_order() {
        let (order, [pb, pa]) = searches_in_order(&[]);
        assert_eq!(order, vec![pb, pa], "B faulted first");
        let (order, [pb, pa]) = searches_in_order(&["numalab.numa_migrate_fault_order=0"]);
        assert_eq!(order, vec![pa, pb], "by task id");
    }

    #[test]
    fn no_swap_when_the_partner_would_lose_more_than_the_task_gains() {
        let (mut k, ts) = four_tasks();
        let (a, b, c) = (ts[0], ts[2], ts[3]);
        faults_on(&mut k, a, fx::n(1), 1000);
        faults_on(&mut k, b, fx::n(1), 1000);
        faults_on(&mut k, c, fx::n(1), 1000);
        k.task_numa_migrate(a);
        assert_eq!(k.tasks[a].cpu, fx::c(0));
        assert_eq!(k.vmstat.get(Vm::NumaTaskSwapped), 0);
        assert_eq!(k.vmstat.get(Vm::NumaTaskMigrated), 0);
        let tr = &k.trace.as_ref().unwrap().events;
        assert!(tr
            .iter()
            .any(|e| e.name == "sched_stick_numa" && e.fields.contains("dst_cpu=-1")));
    }

    #[test]
    fn a_task_moves_to_an_idle_cpu_of_its_preferred_node() {
        let mut k = fx::kernel("tiny-2n", &[]);
        k.trace = Some(Box::default());
        let mm = fx::add_mm(&mut k, 1 << 20, false, None);
        let a = fx::add_task(&mut k, mm, fx::c(0));
        faults_on(&mut k, a, fx::n(1), 500);
        k.task_numa_migrate(a);
        assert_eq!(k.cpu_node(k.tasks[a].cpu), fx::n(1));
        assert_eq!(k.sched.rq[k.tasks[a].cpu].nr_preferred_running, 1);
        assert_eq!(k.sched.rq[fx::c(0)].nr_numa_running, 0);
        assert_eq!(k.vmstat.get(Vm::NumaTaskMigrated), 1);
        assert_eq!(k.vmstat.get(Vm::NumaTaskSwapped), 0);
        let root = CgroupId::new(0);
        assert_eq!(k.cgroups.all[root].stat.get(Vm::NumaTaskMigrated), 1);
        let tr = &k.trace.as_ref().unwrap().events;
        let ev = tr
            .iter()
            .find(|e| e.name == "sched_move_numa")
            .expect("move event");
        assert!(ev
            .fields
            .starts_with(&format!("pid={} tgid=", k.tasks[a].pid)));
        assert!(ev.fields.contains("src_nid=0") && ev.fields.contains("dst_nid=1"));
        k.check_invariants().unwrap();
        k.check_numa_counters().unwrap();
    }

    #[test]
    fn numalab_numa_find_cpu_says_which_path_the_search_took() {
        let mut k = fx::kernel("tiny-2n", &[]);
        let mut tr = Box::<crate::kernel::trace::Tracer>::default();
        tr.filter.events = Some(vec!["numalab_numa_find_cpu".into()]);
        k.trace = Some(tr);
        let mm = fx::add_mm(&mut k, 1 << 20, false, None);
        let a = fx::add_task(&mut k, mm, fx::c(0));
        faults_on(&mut k, a, fx::n(1), 500);
        k.task_numa_migrate(a);
        let tr = &k.trace.as_ref().unwrap().events;
        assert_eq!(tr.len(), 1, "only the named event: {tr:?}");
        let f = &tr[0].fields;
        // Node 1 is empty: spare capacity, an idle CPU taken at once.
        assert!(
            f.contains("src_nid=0 dst_nid=1 src_nr=1 dst_nr=0 weight=2 type=0 "),
            "{f}"
        );
        assert!(
            f.contains("path=0 maymove=1 idle=2 pending=0 res=move"),
            "{f}"
        );
    }

    #[test]
    fn numa_migrate_preferred_retries_after_min_of_a_second_and_a_sixteenth_period() {
        let mut k = fx::kernel("tiny-2n", &[]);
        let mm = fx::add_mm(&mut k, 1 << 20, false, None);
        let a = fx::add_task(&mut k, mm, fx::c(0));
        faults_on(&mut k, a, fx::n(1), 10);
        k.now = 4_000_000_000;
        k.tasks[a].numa.scan_period = 1000;
        k.numa_migrate_preferred(a);
        // 1000 ms = 250 jiffies; /16 = 15 jiffies (< HZ).
        assert_eq!(k.tasks[a].numa.migrate_retry, k.jiffies() + 15);
        assert!(k.tasks[a].numa.migrate_requested, "done at the next tick");
        k.tasks[a].numa.scan_period = 60000;
        k.numa_migrate_preferred(a);
        assert_eq!(k.tasks[a].numa.migrate_retry, k.jiffies() + k.tick_hz());
        // Already on the preferred node: nothing to do.
        k.tasks[a].numa.migrate_requested = false;
        k.sched_setnuma(a, Some(fx::n(0)));
        k.numa_migrate_preferred(a);
        assert!(!k.tasks[a].numa.migrate_requested);
    }

    #[test]
    fn migrate_degrades_locality_guards_the_preferred_node() {
        let (mut k, ts) = four_tasks();
        let (a, b) = (ts[0], ts[2]);
        faults_on(&mut k, a, fx::n(0), 800);
        faults_on(&mut k, b, fx::n(0), 800);
        // A task without faults waits on CPU 0 too.
        let mm = fx::add_mm(&mut k, 1 << 20, false, None);
        fx::add_task(&mut k, mm, fx::c(0));
        let numa_level = k.sched.topo.sd[fx::c(0)]
            .iter()
            .position(|d| d.flags.has(crate::kernel::sched::topology::SdFlags::NUMA))
            .unwrap();
        // Leaving the preferred node while its rq runs tasks off their
        // preferred node: bad.
        assert_eq!(
            k.migrate_degrades_locality(a, fx::c(0), fx::c(2), numa_level, CpuIdleType::NotIdle),
            1
        );
        // Going to the preferred node: good.
        assert_eq!(
            k.migrate_degrades_locality(b, fx::c(2), fx::c(0), numa_level, CpuIdleType::NotIdle),
            -1
        );
        // A task with no faults is neutral; so is any move within a node.
        assert_eq!(
            k.migrate_degrades_locality(
                ts[1],
                fx::c(1),
                fx::c(3),
                numa_level,
                CpuIdleType::NotIdle
            ),
            0
        );
        assert_eq!(
            k.migrate_degrades_locality(a, fx::c(0), fx::c(1), numa_level, CpuIdleType::NotIdle),
            0
        );
    }

    #[test]
    fn equal_node_weights_do_not_degrade_locality() {
        let (mut k, ts) = four_tasks();
        let t = ts[0];
        faults_on(&mut k, t, fx::n(0), 400);
        let nn = k.m.nr_nodes();
        k.tasks[t].numa.faults[faults_idx(nn, NUMA_MEM, fx::n(1), 1)] = 400;
        k.tasks[t].numa.total_faults = 800;
        k.sched_setnuma(t, None);
        let numa_level = k.sched.topo.sd[fx::c(0)]
            .iter()
            .position(|d| d.flags.has(crate::kernel::sched::topology::SdFlags::NUMA))
            .unwrap();
        // fair.c: `return src_weight > dst_weight;` is 0 (not hot) when
        // they are equal, so the balancer may take the task at once.
        assert_eq!(
            k.migrate_degrades_locality(t, fx::c(0), fx::c(2), numa_level, CpuIdleType::NotIdle),
            -1
        );
        // More of its memory on the source: moving it degrades locality.
        k.tasks[t].numa.faults[faults_idx(nn, NUMA_MEM, fx::n(0), 1)] = 600;
        assert_eq!(
            k.migrate_degrades_locality(t, fx::c(0), fx::c(2), numa_level, CpuIdleType::NotIdle),
            1
        );
    }

    /// The branch that decides move or swap on a full machine
    /// (docs/reproductions.md, interleave-task-migration): between nodes
    /// of equal capacity, moving a task of load `l` is allowed only when
    /// the source's load exceeds the destination's by at least `l`.
    #[test]
    fn a_move_between_equal_nodes_needs_a_task_load_of_excess() {
        let stats = |load| NumaStats {
            load,
            compute_capacity: 80 * 1024,
            ..Default::default()
        };
        let env = |src, dst| TaskNumaEnv {
            p: TaskId::new(0),
            src_cpu: CpuId::new(0),
            src_nid: NodeId::new(0),
            dst_cpu: CpuId::new(1),
            dst_nid: NodeId::new(1),
            imb_numa_nr: 4,
            src_stats: stats(src),
            dst_stats: stats(dst),
            imbalance_pct: 106,
            dist: 21,
            best_task: None,
            best_imp: 0,
            best_cpu: None,
        };
        let may_move =
            |src: i64, dst: i64, l: i64| !load_too_imbalanced(src - l, dst + l, &env(src, dst));
        // The model's full machine: 0.68 of a task's load apart at most.
        assert!(!may_move(82_600, 82_600 - 696, 1024));
        assert!(!may_move(82_600, 82_600 - 1023, 1024));
        assert!(may_move(82_600, 82_600 - 1024, 1024));
        // In a task group of 320 threads a task weighs 3: noise suffices.
        assert!(may_move(781, 581, 3));
        assert!(!may_move(581, 781, 3));
    }

    #[test]
    fn numa_classify_matches_the_kernel() {
        let ns = |nr, weight| NumaStats {
            nr_running: nr,
            weight,
            load: nr * 1024,
            runnable: nr * 1024,
            util: nr.min(weight) * 1024,
            compute_capacity: weight * 1024,
            ..Default::default()
        };
        assert_eq!(numa_classify(108, &ns(1, 2)), NumaType::HasSpare);
        assert_eq!(numa_classify(108, &ns(2, 2)), NumaType::FullyBusy);
        assert_eq!(numa_classify(108, &ns(3, 2)), NumaType::Overloaded);
    }
}
