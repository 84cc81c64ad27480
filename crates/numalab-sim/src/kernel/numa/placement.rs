//! Fault statistics and placement (kernel/sched/fair.c):
//! `task_numa_fault` accounts each hinting fault into per-node buffers,
//! `task_numa_placement` folds them into decayed averages once per scan
//! pass and picks the preferred node, `update_task_scan_period` adapts the
//! scan rate, and `task_numa_group` forms numa groups from shared faults.
//! Task and group weights (`task_weight`, `group_weight`,
//! `score_nearby_nodes`) and `preferred_group_nid` serve placement and
//! task migration.
//!
//! Fault arrays follow fair.c: `faults[2 * (stat * nr_nodes + nid) + priv]`
//! with stat MEM (where the page was), CPU (where the task ran), MEMBUF and
//! CPUBUF (the current window), priv 1 for private faults.
//!
//! Left out: memory tiering (slow-tier faults are not accounted there),
//! RCU and locking, `p->mm == NULL` faults (ksmd), the PELT `load_sum` of a
//! task's first placement (the fraction of its life it has run stands in).

use super::{
    cpupid_match_pid, cpupid_to_cpu, cpupid_unset, faults_idx, NumaGroup, NumaTopologyType,
    ACTIVE_NODE_FRACTION, LOAD_AVG_MAX, NR_NUMA_HINT_FAULT_BUCKETS, NR_NUMA_HINT_FAULT_STATS,
    NR_NUMA_HINT_FAULT_TYPES, NUMA_CPU, NUMA_CPUBUF, NUMA_MEM, NUMA_MEMBUF, NUMA_PERIOD_SLOTS,
    NUMA_PERIOD_THRESHOLD, TNF_MIGRATED, TNF_MIGRATE_FAIL, TNF_NO_GROUP, TNF_SHARED,
};
use crate::kernel::sched::TaskState;
use crate::kernel::{CpuId, Kernel, NodeId, TaskId};
use numalab_knobs::knob;

impl Kernel {
    /// `task_numa_fault` (fair.c): task `t` on `cpu` took a hinting fault on
    /// `pages` base pages now on `mem_node`. Decides private or shared (and
    /// may join a group), counts a shared fault inside the group's active
    /// nodes as local, runs placement and `numa_migrate_preferred` when the
    /// retry time has passed, and fills the MEMBUF/CPUBUF buffers and the
    /// locality counters.
    pub fn task_numa_fault(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        last_cpupid: u32,
        mem_node: NodeId,
        pages: u64,
        flags: u32,
    ) {
        if !self.numa_balancing_enabled() {
            return;
        }
        // Proposal 4: a disabled task's faults are not accounted.
        if !self.task_numa_balance_enabled(t) {
            return;
        }
        let nn = self.m.nr_nodes();
        let cpu_node = self.cpu_node(cpu);
        let mut local = flags & super::TNF_FAULT_LOCAL != 0;
        if self.tasks[t].numa.faults.is_empty() {
            let n = &mut self.tasks[t].numa;
            n.faults = vec![0; NR_NUMA_HINT_FAULT_BUCKETS * nn];
            n.total_faults = 0;
            n.faults_locality = [0; 3];
        }
        let private = usize::from(self.task_numa_fault_private(t, last_cpupid, flags));
        // The model's own event (opt-in): what an fprobe on the kernel's
        // task_numa_fault sees (last=, node=, pages=, flags=), plus the
        // private/shared call and the group it left the task in.
        if self.trace.is_some() {
            let gid = self.task_numa_group_id(t);
            self.trace(Some(t), cpu, "numalab_numa_fault", || {
                format!(
                    "last={last_cpupid} node={} pages={pages} flags={flags} private={private} ngid={gid}",
                    mem_node.index()
                )
            });
        }
        // A shared fault wholly inside the group's active nodes is local
        // (numalab.numa_group_active_local).
        if private == 0 && !local {
            if let Some(g) = self.numa_group(t) {
                if g.active_nodes > 1
                    && numa_is_active_node(g, nn, cpu_node)
                    && numa_is_active_node(g, nn, mem_node)
                    && self.knobs.get(knob::NUMA_GROUP_ACTIVE_LOCAL)
                {
                    local = true;
                }
            }
        }
        if self.jiffies() > self.tasks[t].numa.migrate_retry {
            self.task_numa_placement(t);
            self.numa_migrate_preferred(t);
        }
        // 3.9: a properly placed page (nothing migrated) slows scanning.
        if !self.numa_scan_adapt_on() && flags & TNF_MIGRATED == 0 {
            self.numa_scan_slowdown_39(t);
        }
        let n = &mut self.tasks[t].numa;
        if flags & TNF_MIGRATED != 0 {
            n.pages_migrated += pages;
        }
        if flags & TNF_MIGRATE_FAIL != 0 {
            n.faults_locality[2] += pages;
        }
        // v1's task_numa_fault (as 7/8 found it): "double the weight if
        // pages were migrated".
        let weight = if self.numa_fault_split_v1() && flags & TNF_MIGRATED != 0 {
            2 * pages
        } else {
            pages
        };
        let n = &mut self.tasks[t].numa;
        n.faults[faults_idx(nn, NUMA_MEMBUF, mem_node, private)] += weight as i64;
        n.faults[faults_idx(nn, NUMA_CPUBUF, cpu_node, private)] += pages as i64;
        n.faults_locality[usize::from(local)] += pages;
    }

    /// The private/shared classification of `task_numa_fault` (fair.c), the
    /// mainline policy's `task_numa_fault_private`: a first access is
    /// private; otherwise private iff the page's last pid is the task's,
    /// a shared fault possibly joining the other task's numa group
    /// (`task_numa_group`, which may count it private after all). Without
    /// classification (`numalab.numa_fault_classify=0`, 3.9) every fault
    /// is the task's own, or with `numalab.numa_series_v1` private when the
    /// page's last fault came from the task's node (v1 7/8).
    pub fn mainline_task_numa_fault_private(
        &mut self,
        t: TaskId,
        last_cpupid: u32,
        flags: u32,
    ) -> bool {
        if self.numa_fault_split_v1() {
            return self.numa_fault_private_v1(t, last_cpupid);
        }
        if cpupid_unset(last_cpupid) || !self.numa_fault_classify_on() {
            return true;
        }
        let mut p = usize::from(cpupid_match_pid(self.tasks[t].pid, last_cpupid));
        if p == 0 && flags & TNF_NO_GROUP == 0 {
            self.task_numa_group(t, last_cpupid, flags, &mut p);
        }
        p != 0
    }

    /// `numa_get_avg_runtime` (fair.c): CPU time and wall time since the
    /// last placement. "Now" is the current time (the kernel's
    /// `se.exec_start` is refreshed at every tick). Left out: the first
    /// placement's PELT `load_sum`, modeled as the share of its life the
    /// task has run, out of `LOAD_AVG_MAX`.
    fn numa_get_avg_runtime(&mut self, t: TaskId) -> (u64, u64) {
        let now = self.now;
        let task = &self.tasks[t];
        let runtime = task.sum_exec_runtime;
        let n = &task.numa;
        let (delta, period) = if n.last_task_numa_placement != 0 {
            (
                runtime.saturating_sub(n.last_sum_exec_runtime),
                now.saturating_sub(n.last_task_numa_placement),
            )
        } else {
            let life = now.saturating_sub(task.start_ns).max(1);
            let share = (LOAD_AVG_MAX as u128 * runtime as u128 / life as u128) as u64;
            (share.min(LOAD_AVG_MAX), LOAD_AVG_MAX)
        };
        let n = &mut self.tasks[t].numa;
        n.last_sum_exec_runtime = runtime;
        n.last_task_numa_placement = now;
        (delta, period)
    }

    /// `task_numa_placement` (fair.c): once per scan pass (the mm's
    /// `numa_scan_seq` moved), halves the MEM and CPU averages and adds the
    /// window's faults (CPU faults weighted by the share of time the task
    /// ran), updates the group, chooses the preferred node (most MEM
    /// faults, the group's if grouped), and adapts the scan period.
    pub fn mainline_task_numa_placement(&mut self, t: TaskId) {
        let mm = self.tasks[t].mm;
        let seq = self.mem.mms[mm].numa.scan_seq;
        if self.tasks[t].numa.scan_seq == seq {
            return;
        }
        self.tasks[t].numa.scan_seq = seq;
        self.tasks[t].numa.migrate_seq += 1;
        self.tasks[t].numa.scan_period_max = self.task_scan_max(t);
        // v1 7/8: the preferred node is where most private faults were.
        let private_only = self.numa_fault_split_v1();
        let nn = self.m.nr_nodes();
        let loc = self.tasks[t].numa.faults_locality;
        let total_faults = (loc[0] + loc[1]) as i64;
        let (runtime, period) = self.numa_get_avg_runtime(t);
        let gidx = self.tasks[t].numa.group;
        let mut grp: Option<NumaGroup> = gidx.and_then(|g| self.tasks[g].numa.own_group.take());
        let mut max_nid: Option<NodeId> = None;
        let mut max_faults = 0i64;
        let mut fault_types = [0i64; NR_NUMA_HINT_FAULT_TYPES];
        let f_weight0 = ((runtime as u128) << 16) / (period as u128 + 1);
        {
            let n = &mut self.tasks[t].numa;
            for nid in NodeId::range(nn) {
                let (mut faults, mut group_faults) = (0i64, 0i64);
                for (private, fault_type) in fault_types.iter_mut().enumerate() {
                    let mem_idx = faults_idx(nn, NUMA_MEM, nid, private);
                    let membuf_idx = faults_idx(nn, NUMA_MEMBUF, nid, private);
                    let cpu_idx = faults_idx(nn, NUMA_CPU, nid, private);
                    let cpubuf_idx = faults_idx(nn, NUMA_CPUBUF, nid, private);
                    // Decay the average, add the window.
                    let diff = n.faults[membuf_idx] - n.faults[mem_idx] / 2;
                    *fault_type += n.faults[membuf_idx];
                    n.faults[membuf_idx] = 0;
                    // CPU faults count by CPU use, not by raw fault numbers.
                    let f_weight = (f_weight0 * n.faults[cpubuf_idx].max(0) as u128
                        / (total_faults as u128 + 1)) as i64;
                    let f_diff = f_weight - n.faults[cpu_idx] / 2;
                    n.faults[cpubuf_idx] = 0;
                    n.faults[mem_idx] += diff;
                    n.faults[cpu_idx] += f_diff;
                    if !private_only || private == 1 {
                        faults += n.faults[mem_idx];
                    }
                    n.total_faults += diff;
                    if let Some(g) = grp.as_mut() {
                        g.faults[mem_idx] += diff;
                        g.faults[cpu_idx] += f_diff;
                        g.total_faults += diff;
                        group_faults += g.faults[mem_idx];
                    }
                }
                if grp.is_none() {
                    if faults > max_faults {
                        max_faults = faults;
                        max_nid = Some(nid);
                    }
                } else if group_faults > max_faults {
                    max_faults = group_faults;
                    max_nid = Some(nid);
                }
            }
        }
        // Cannot migrate a task to a CPU-less node.
        max_nid = self.numa_nearest_cpu_node(max_nid);
        if let Some(mut g) = grp {
            self.numa_group_count_active_nodes(&mut g);
            let owner = gidx.expect("grouped task has a group owner");
            self.tasks[owner].numa.own_group = Some(g);
            max_nid = max_nid.map(|n| self.preferred_group_nid(t, n));
        }
        // Without the preferred node (3.9) the statistics choose nothing.
        if self.numa_preferred_node_on()
            && max_faults > 0
            && max_nid != self.tasks[t].numa.preferred_nid
        {
            let old_migrate_seq = self.tasks[t].numa.migrate_seq;
            self.sched_setnuma(t, max_nid);
            self.numa_preferred_changed_v1(t, old_migrate_seq);
        }
        if self.numa_scan_adapt_on() {
            self.update_task_scan_period(t, fault_types[0], fault_types[1]);
        } else {
            self.tasks[t].numa.faults_locality = [0; 3];
        }
    }

    /// `update_task_scan_period` (fair.c), with shared and private faults of
    /// the last window. No local or shared faults, or any failed migration,
    /// doubles the period and pushes the mm's next scan (keeping the
    /// locality counters: a failed migration thus slows scanning for
    /// good, as in the kernel); mostly private faults slow scanning down;
    /// mostly local ones too; otherwise scanning speeds up.
    pub fn mainline_update_task_scan_period(&mut self, t: TaskId, shared: i64, private: i64) {
        let loc = self.tasks[t].numa.faults_locality;
        let (remote, local) = (loc[0] as i64, loc[1] as i64);
        let period = self.tasks[t].numa.scan_period as i64;
        if local + shared == 0 || loc[2] > 0 {
            let max = self.tasks[t].numa.scan_period_max;
            let p = max.min(self.tasks[t].numa.scan_period << 1);
            self.tasks[t].numa.scan_period = p;
            let mm = self.tasks[t].mm;
            self.mem.mms[mm].numa.next_scan = self.jiffies() + self.msecs_to_jiffies(p);
            return;
        }
        let period_slot = (period + NUMA_PERIOD_SLOTS - 1) / NUMA_PERIOD_SLOTS;
        let lr_ratio = local * NUMA_PERIOD_SLOTS / (local + remote).max(1);
        let ps_ratio = private * NUMA_PERIOD_SLOTS / (private + shared).max(1);
        let diff = if ps_ratio >= NUMA_PERIOD_THRESHOLD {
            // Mostly private: the memory follows the task, scan slower.
            (ps_ratio - NUMA_PERIOD_THRESHOLD).max(1) * period_slot
        } else if lr_ratio >= NUMA_PERIOD_THRESHOLD {
            // Mostly local (shared): scanning more will not help.
            (lr_ratio - NUMA_PERIOD_THRESHOLD).max(1) * period_slot
        } else {
            // Remote and shared: scan faster to move the memory.
            -(NUMA_PERIOD_THRESHOLD - lr_ratio.max(ps_ratio)) * period_slot
        };
        let smin = self.task_scan_min(t) as i64;
        let smax = self.task_scan_max(t) as i64;
        self.tasks[t].numa.scan_period = (period + diff).max(smin).min(smax.max(smin)) as u64;
        self.tasks[t].numa.faults_locality = [0; 3];
    }

    /// `numa_group_count_active_nodes` (fair.c).
    fn numa_group_count_active_nodes(&self, g: &mut NumaGroup) {
        let nn = self.m.nr_nodes();
        let cpu_nodes = NodeId::range(nn).filter(|&n| self.node_has_cpus(n));
        let max = cpu_nodes
            .clone()
            .map(|n| group_faults_cpu(g, nn, n))
            .max()
            .unwrap_or(0);
        g.max_faults_cpu = max.max(0);
        g.active_nodes = cpu_nodes
            .filter(|&n| group_faults_cpu(g, nn, n) * ACTIVE_NODE_FRACTION > g.max_faults_cpu)
            .count();
    }

    /// `sched_setnuma` (core.c): sets the preferred node, keeping the rq's
    /// `nr_numa_running`/`nr_preferred_running` right while queued.
    pub fn sched_setnuma(&mut self, t: TaskId, nid: Option<NodeId>) {
        let on_rq = matches!(
            self.tasks[t].state,
            TaskState::Runnable | TaskState::Running
        );
        let cpu = self.tasks[t].cpu;
        if on_rq {
            self.account_numa_counters(t, cpu, false);
        }
        self.tasks[t].numa.preferred_nid = nid;
        self.tasks[t].numa.migrate_seq = 0;
        if on_rq {
            self.account_numa_counters(t, cpu, true);
        }
    }

    /// The group `task_numa_group` makes for `t` on first need: `t` alone,
    /// with `t`'s fault statistics and its pid as the group id. Nothing
    /// when `t` already has one.
    fn numa_group_ensure(&mut self, t: TaskId) {
        if self.tasks[t].numa.group.is_some() {
            return;
        }
        let nn = self.m.nr_nodes();
        let n = &self.tasks[t].numa;
        let g = NumaGroup {
            gid: self.tasks[t].pid,
            nr_tasks: 1,
            active_nodes: 1,
            total_faults: n.total_faults,
            max_faults_cpu: 0,
            faults: n.faults[..NR_NUMA_HINT_FAULT_STATS * nn].to_vec(),
        };
        self.tasks[t].numa.own_group = Some(g);
        self.tasks[t].numa.group = Some(t);
    }

    /// `task_numa_group` (fair.c): a shared fault on a page last touched by
    /// the task now running on the cpupid's CPU. Creates the task's own
    /// group on first need; joins the other task's group if it is bigger
    /// (ties by group id) and in the same mm (or the page is shared);
    /// otherwise the fault counts as private after all.
    fn task_numa_group(&mut self, t: TaskId, cpupid: u32, flags: u32, private: &mut usize) {
        let nn = self.m.nr_nodes();
        self.numa_group_ensure(t);
        let cpu = cpupid_to_cpu(cpupid);
        let Some(tsk) = self.sched.rq.get(cpu).and_then(|rq| rq.curr) else {
            return;
        };
        if !cpupid_match_pid(self.tasks[tsk].pid, cpupid) {
            return;
        }
        let Some(grp) = self.tasks[tsk].numa.group else {
            return;
        };
        let my = self.tasks[t].numa.group.expect("set above");
        if grp == my {
            return;
        }
        let (my_nr, grp_nr) = (
            self.tasks[my]
                .numa
                .own_group
                .as_ref()
                .map_or(0, |g| g.nr_tasks),
            self.tasks[grp]
                .numa
                .own_group
                .as_ref()
                .map_or(0, |g| g.nr_tasks),
        );
        // Join the bigger group; ties go by the group's "address".
        if my_nr > grp_nr || (my_nr == grp_nr && my > grp) {
            return;
        }
        let join = self.tasks[tsk].mm == self.tasks[t].mm || flags & TNF_SHARED != 0;
        *private = usize::from(!join);
        if !join {
            return;
        }
        let pf: Vec<i64> = self.tasks[t].numa.faults[..NR_NUMA_HINT_FAULT_STATS * nn].to_vec();
        let ptotal = self.tasks[t].numa.total_faults;
        if let Some(g) = self.tasks[my].numa.own_group.as_mut() {
            for (x, f) in g.faults.iter_mut().zip(&pf) {
                *x -= f;
            }
            g.total_faults -= ptotal;
            g.nr_tasks -= 1;
        }
        if let Some(g) = self.tasks[grp].numa.own_group.as_mut() {
            for (x, f) in g.faults.iter_mut().zip(&pf) {
                *x += f;
            }
            g.total_faults += ptotal;
            g.nr_tasks += 1;
        }
        self.tasks[t].numa.group = Some(grp);
        self.put_numa_group(my);
    }

    /// `numalab.numa_group_threads` (an ablation, no kernel rule): new
    /// thread `t` joins creator `p`'s numa group at clone, `p` getting a
    /// group of its own first if it has none (as `task_numa_group` makes
    /// one). `t` has no faults yet, so the group's statistics are `p`'s.
    pub(crate) fn numa_group_join_creator(&mut self, t: TaskId, p: TaskId) {
        let nn = self.m.nr_nodes();
        let zeros = || vec![0; NR_NUMA_HINT_FAULT_BUCKETS * nn];
        if self.tasks[p].numa.faults.is_empty() {
            self.tasks[p].numa.faults = zeros();
        }
        self.numa_group_ensure(p);
        let owner = self.tasks[p].numa.group.expect("set above");
        self.tasks[t].numa.faults = zeros();
        self.tasks[t].numa.group = Some(owner);
        if let Some(g) = self.tasks[owner].numa.own_group.as_mut() {
            g.nr_tasks += 1;
        }
    }

    /// `put_numa_group`: frees a group nobody belongs to any more.
    fn put_numa_group(&mut self, g: TaskId) {
        if self.tasks[g]
            .numa
            .own_group
            .as_ref()
            .is_some_and(|x| x.nr_tasks == 0)
        {
            self.tasks[g].numa.own_group = None;
        }
    }

    /// `task_numa_free` (fair.c): an exited task leaves its group (taking
    /// its faults out) and drops its statistics.
    pub fn task_numa_free(&mut self, t: TaskId) {
        self.tasks[t].numa.freed = true;
        if self.tasks[t].numa.faults.is_empty() {
            return;
        }
        let nn = self.m.nr_nodes();
        if let Some(grp) = self.tasks[t].numa.group.take() {
            let pf: Vec<i64> = self.tasks[t].numa.faults[..NR_NUMA_HINT_FAULT_STATS * nn].to_vec();
            let ptotal = self.tasks[t].numa.total_faults;
            let mut snapshot = None;
            if let Some(g) = self.tasks[grp].numa.own_group.as_mut() {
                snapshot = Some((g.gid, g.faults.clone()));
                for (x, f) in g.faults.iter_mut().zip(&pf) {
                    *x -= f;
                }
                g.total_faults -= ptotal;
                g.nr_tasks = g.nr_tasks.saturating_sub(1);
            }
            self.tasks[t].numa.exit_group = snapshot;
            self.put_numa_group(grp);
        }
    }

    /// `task_faults` (fair.c): MEM faults of task `t` on `nid`.
    pub fn task_faults(&self, t: TaskId, nid: NodeId) -> i64 {
        let n = &self.tasks[t].numa;
        if n.faults.is_empty() {
            return 0;
        }
        let nn = self.m.nr_nodes();
        n.faults[faults_idx(nn, NUMA_MEM, nid, 0)] + n.faults[faults_idx(nn, NUMA_MEM, nid, 1)]
    }

    /// `group_faults` (fair.c): MEM faults of task `t`'s group on `nid`.
    pub fn group_faults(&self, t: TaskId, nid: NodeId) -> i64 {
        let nn = self.m.nr_nodes();
        self.numa_group(t).map_or(0, |g| {
            g.faults[faults_idx(nn, NUMA_MEM, nid, 0)] + g.faults[faults_idx(nn, NUMA_MEM, nid, 1)]
        })
    }

    /// `score_nearby_nodes` (fair.c): faults on nodes near `nid`, for
    /// machines whose nodes are not all one hop apart.
    fn score_nearby_nodes(&self, t: TaskId, nid: NodeId, lim_dist: u32, task: bool) -> i64 {
        let ty = super::numa_topology_type(&self.m.distance);
        if ty == NumaTopologyType::Direct {
            return 0;
        }
        let max_dist = self.sched_max_numa_distance();
        let mut score = 0i64;
        for node in NodeId::range(self.m.nr_nodes()) {
            if !self.node_has_cpus(node) {
                continue;
            }
            let dist = self.node_distance(nid, node);
            if dist >= max_dist || node == nid {
                continue;
            }
            if ty == NumaTopologyType::Backplane && dist >= lim_dist {
                continue;
            }
            let mut faults = if task {
                self.task_faults(t, node)
            } else {
                self.group_faults(t, node)
            };
            if ty == NumaTopologyType::GluelessMesh {
                faults = faults * (max_dist - dist) as i64 / (max_dist - 10).max(1) as i64;
            }
            score += faults;
        }
        score
    }

    /// `task_weight` (fair.c): share (of 1000) of task `t`'s faults on
    /// `nid`, nearby nodes included.
    pub fn task_weight(&self, t: TaskId, nid: NodeId, dist: u32) -> i64 {
        let n = &self.tasks[t].numa;
        if n.faults.is_empty() || n.total_faults <= 0 {
            return 0;
        }
        let faults = self.task_faults(t, nid) + self.score_nearby_nodes(t, nid, dist, true);
        1000 * faults.max(0) / n.total_faults
    }

    /// `group_weight` (fair.c): share (of 1000) of the group's faults on
    /// `nid`, nearby nodes included.
    pub fn group_weight(&self, t: TaskId, nid: NodeId, dist: u32) -> i64 {
        let Some(g) = self.numa_group(t) else {
            return 0;
        };
        if g.total_faults <= 0 {
            return 0;
        }
        let faults = self.group_faults(t, nid) + self.score_nearby_nodes(t, nid, dist, false);
        1000 * faults.max(0) / g.total_faults
    }

    /// `preferred_group_nid` (fair.c): the group's node on machines that
    /// are not all one hop apart (the best-scoring node on a glueless mesh,
    /// the best node of the best group of nodes on a backplane).
    fn preferred_group_nid(&self, t: TaskId, nid: NodeId) -> NodeId {
        let ty = super::numa_topology_type(&self.m.distance);
        let nn = self.m.nr_nodes();
        match ty {
            NumaTopologyType::Direct => nid,
            NumaTopologyType::GluelessMesh => {
                let dist = self.sched_max_numa_distance();
                let (mut max_score, mut max_node) = (0i64, nid);
                for node in NodeId::range(nn).filter(|&n| self.node_has_cpus(n)) {
                    let score = self.group_weight(t, node, dist);
                    if score > max_score {
                        max_score = score;
                        max_node = node;
                    }
                }
                max_node
            }
            NumaTopologyType::Backplane => {
                let mut nid = nid;
                let mut nodes: Vec<NodeId> = NodeId::range(nn)
                    .filter(|&n| self.node_has_cpus(n))
                    .collect();
                let mut dist = self.sched_max_numa_distance();
                while dist > 10 {
                    let exists = self.m.distance.iter().flatten().any(|&d| d == dist);
                    if !exists {
                        dist -= 1;
                        continue;
                    }
                    let mut max_faults = 0i64;
                    let mut max_group: Vec<NodeId> = Vec::new();
                    let mut left = nodes.clone();
                    for &a in &nodes {
                        if !left.contains(&a) {
                            continue;
                        }
                        let mut faults = 0i64;
                        let mut this_group = Vec::new();
                        left.retain(|&b| {
                            if self.node_distance(a, b) < dist {
                                faults += self.group_faults(t, b);
                                this_group.push(b);
                                false
                            } else {
                                true
                            }
                        });
                        if faults > max_faults {
                            max_faults = faults;
                            max_group = this_group;
                            nid = a;
                        }
                    }
                    if max_faults == 0 {
                        break;
                    }
                    nodes = max_group;
                    dist -= 1;
                }
                nid
            }
        }
    }
}

/// `group_faults_cpu` (fair.c): CPU faults of a group on `nid`.
pub fn group_faults_cpu(g: &NumaGroup, nn: usize, nid: NodeId) -> i64 {
    g.faults[faults_idx(nn, NUMA_CPU, nid, 0)] + g.faults[faults_idx(nn, NUMA_CPU, nid, 1)]
}

/// `numa_is_active_node` (fair.c).
pub fn numa_is_active_node(g: &NumaGroup, nn: usize, nid: NodeId) -> bool {
    group_faults_cpu(g, nn, nid) * ACTIVE_NODE_FRACTION > g.max_faults_cpu
}

#[cfg(test)]
mod tests {
    use super::super::tests::fx;
    use super::super::*;
    use crate::kernel::mm::CPUPID_UNSET;
    use crate::kernel::Kernel;
    use crate::kernel::{MmId, NodeId, TaskId};

    /// A task on CPU 0 of tiny-2n whose mm has 64 MB on node 1.
    fn setup() -> (Kernel, MmId, TaskId) {
        fx::remote_task(&[])
    }

    fn mem(k: &Kernel, t: TaskId, nid: NodeId, private: usize) -> i64 {
        k.tasks[t].numa.faults[faults_idx(k.m.nr_nodes(), NUMA_MEM, nid, private)]
    }

    /// Ends the scan pass so the next placement runs.
    fn next_pass(k: &mut Kernel, mm: MmId) {
        k.mem.mms[mm].numa.scan_seq += 1;
    }

    #[test]
    fn fault_stats_halve_per_placement_pass() {
        let (mut k, mm, t) = setup();
        k.task_numa_fault(t, fx::c(0), CPUPID_UNSET, fx::n(1), 100, 0);
        next_pass(&mut k, mm);
        k.task_numa_placement(t);
        assert_eq!(mem(&k, t, fx::n(1), 1), 100);
        assert_eq!(k.tasks[t].numa.total_faults, 100);
        for expect in [50, 25, 13, 7] {
            next_pass(&mut k, mm);
            k.task_numa_placement(t);
            assert_eq!(mem(&k, t, fx::n(1), 1), expect);
        }
        // Only once per pass.
        k.task_numa_placement(t);
        assert_eq!(mem(&k, t, fx::n(1), 1), 7);
    }

    #[test]
    fn preferred_node_is_the_node_with_most_faults() {
        let (mut k, mm, t) = setup();
        assert_eq!(k.tasks[t].numa.preferred_nid, None);
        k.task_numa_fault(t, fx::c(0), CPUPID_UNSET, fx::n(0), 30, TNF_FAULT_LOCAL);
        k.task_numa_fault(t, fx::c(0), CPUPID_UNSET, fx::n(1), 70, 0);
        next_pass(&mut k, mm);
        k.task_numa_placement(t);
        assert_eq!(k.tasks[t].numa.preferred_nid, Some(fx::n(1)));
        assert_eq!(k.sched.rq[fx::c(0)].nr_numa_running, 1);
        assert_eq!(k.sched.rq[fx::c(0)].nr_preferred_running, 0);
        // Node 0 overtakes as the old faults decay.
        k.task_numa_fault(t, fx::c(0), CPUPID_UNSET, fx::n(0), 200, TNF_FAULT_LOCAL);
        next_pass(&mut k, mm);
        k.task_numa_placement(t);
        assert_eq!(k.tasks[t].numa.preferred_nid, Some(fx::n(0)));
        assert_eq!(k.sched.rq[fx::c(0)].nr_preferred_running, 1);
    }

    #[test]
    fn update_task_scan_period_slows_down_for_private_local_faults() {
        let (mut k, _, t) = setup();
        k.tasks[t].numa.scan_period = 1000;
        k.tasks[t].numa.faults_locality = [0, 100, 0];
        k.update_task_scan_period(t, 0, 100);
        // ps_ratio 10: +3 slots of 100 ms.
        assert_eq!(k.tasks[t].numa.scan_period, 1300);
        assert_eq!(k.tasks[t].numa.faults_locality, [0, 0, 0]);
    }

    #[test]
    fn update_task_scan_period_speeds_up_for_remote_shared_faults() {
        let (mut k, _, t) = setup();
        k.tasks[t].numa.scan_period = 10_000;
        k.tasks[t].numa.faults_locality = [90, 10, 0];
        k.update_task_scan_period(t, 90, 10);
        // lr 1, ps 1: -(7 - 1) slots of 1000 ms.
        assert_eq!(k.tasks[t].numa.scan_period, 4000);
        // Clamped at task_scan_min.
        k.tasks[t].numa.faults_locality = [90, 10, 0];
        k.tasks[t].numa.scan_period = 2000;
        k.update_task_scan_period(t, 90, 10);
        assert_eq!(k.tasks[t].numa.scan_period, k.task_scan_min(t));
        assert_eq!(k.task_scan_min(t), 1000);
    }

    #[test]
    fn remote_private_faults_or_a_failed_migration_double_the_period_for_good() {
        let (mut k, mm, t) = setup();
        k.tasks[t].numa.scan_period = 1000;
        k.tasks[t].numa.scan_period_max = 60000;
        // All faults remote and private: local + shared == 0.
        k.tasks[t].numa.faults_locality = [100, 0, 0];
        k.update_task_scan_period(t, 0, 100);
        assert_eq!(k.tasks[t].numa.scan_period, 2000);
        assert_eq!(
            k.mem.mms[mm].numa.next_scan,
            k.jiffies() + k.msecs_to_jiffies(2000)
        );
        // A failed migration: the counters are not cleared, so it keeps
        // doubling even with local faults afterwards.
        k.tasks[t].numa.faults_locality = [0, 100, 1];
        k.update_task_scan_period(t, 0, 100);
        k.update_task_scan_period(t, 0, 100);
        assert_eq!(k.tasks[t].numa.scan_period, 8000);
        assert_eq!(k.tasks[t].numa.faults_locality[2], 1);
    }

    #[test]
    fn shared_faults_between_threads_form_one_numa_group() {
        let (mut k, mm, t1) = setup();
        let t2 = fx::add_task(&mut k, mm, fx::c(2));
        let (p1, p2) = (k.tasks[t1].pid, k.tasks[t2].pid);
        // t1 faults on a page t2 (on CPU 2) touched last: shared.
        fx::fault_on_page_of(&mut k, t1, t2, fx::n(1));
        assert_eq!(k.task_numa_group_id(t1), p1, "own group made on first need");
        assert_eq!(k.task_numa_group_id(t2), 0);
        // t2 faults on t1's page: both groups have one task; t2's is the
        // "higher address", so t2 stays.
        fx::fault_on_page_of(&mut k, t2, t1, fx::n(1));
        assert_eq!(k.task_numa_group_id(t2), p2);
        // t1 again: it joins t2's group.
        fx::fault_on_page_of(&mut k, t1, t2, fx::n(1));
        assert_eq!(k.task_numa_group_id(t1), p2);
        assert_eq!(k.numa_group(t1).unwrap().nr_tasks, 2);
        assert!(
            k.tasks[t1].numa.own_group.is_none(),
            "t1's empty group is freed"
        );
        let nn = k.m.nr_nodes();
        assert_eq!(
            k.tasks[t1].numa.faults[faults_idx(nn, NUMA_MEMBUF, fx::n(1), 0)],
            2,
            "shared"
        );
        // Exit: the group keeps going with one task.
        k.tasks[t1].state = crate::kernel::sched::TaskState::Dead;
        k.task_numa_free(t1);
        assert_eq!(k.numa_group(t2).unwrap().nr_tasks, 1);
    }

    #[test]
    fn a_shared_fault_inside_the_groups_active_nodes_is_local_unless_switched_off() {
        for (sets, local) in [
            (&[][..], true),
            (&["numalab.numa_group_active_local=0"][..], false),
        ] {
            let (mut k, mm, t1) = fx::remote_task(sets);
            let t2 = fx::add_task(&mut k, mm, fx::c(2));
            k.numa_group_join_creator(t2, t1);
            // The group runs on both nodes: both active.
            let nn = k.m.nr_nodes();
            let g = k.tasks[t1].numa.group.unwrap();
            let grp = k.tasks[g].numa.own_group.as_mut().unwrap();
            for nid in [fx::n(0), fx::n(1)] {
                grp.faults[faults_idx(nn, NUMA_CPU, nid, 0)] = 50;
            }
            grp.max_faults_cpu = 50;
            grp.active_nodes = 2;
            // t1 (node 0) faults on a node-1 page t2 touched last: shared,
            // remote by place.
            fx::fault_on_page_of(&mut k, t1, t2, fx::n(1));
            let want = if local { [0, 1, 0] } else { [1, 0, 0] };
            assert_eq!(k.tasks[t1].numa.faults_locality, want, "{sets:?}");
        }
    }

    #[test]
    fn numa_group_threads_puts_a_new_thread_in_its_creators_group() {
        let (mut k, mm, t1) = setup();
        k.task_numa_fault(t1, fx::c(0), CPUPID_UNSET, fx::n(1), 40, 0);
        let t2 = fx::add_task(&mut k, mm, fx::c(2));
        k.numa_group_join_creator(t2, t1);
        let p1 = k.tasks[t1].pid;
        assert_eq!(k.task_numa_group_id(t1), p1, "the creator's group, made");
        assert_eq!(k.task_numa_group_id(t2), p1);
        let g = k.numa_group(t2).unwrap();
        assert_eq!(g.nr_tasks, 2);
        // The group's statistics are the creator's: the new thread has none.
        let nn = k.m.nr_nodes();
        assert_eq!(
            g.faults,
            k.tasks[t1].numa.faults[..NR_NUMA_HINT_FAULT_STATS * nn]
        );
        // A third thread joins the same group; an exit leaves it.
        let t3 = fx::add_task(&mut k, mm, fx::c(3));
        k.numa_group_join_creator(t3, t2);
        assert_eq!(k.numa_group(t3).unwrap().nr_tasks, 3);
        k.tasks[t3].state = crate::kernel::sched::TaskState::Dead;
        k.task_numa_free(t3);
        assert_eq!(k.numa_group(t1).unwrap().nr_tasks, 2);
    }

    #[test]
    fn numalab_numa_fault_shows_the_faults_cpupid_flags_and_group_when_named() {
        let (mut k, mm, t1) = setup();
        let t2 = fx::add_task(&mut k, mm, fx::c(2));
        let (p1, p2) = (k.tasks[t1].pid, k.tasks[t2].pid);
        for named in [false, true] {
            let mut tr = Box::<crate::kernel::trace::Tracer>::default();
            tr.filter.events = Some(if named {
                vec!["numalab_numa_fault".into()]
            } else {
                vec!["sched_switch".into()]
            });
            k.trace = Some(tr);
            let last = cpu_pid_to_cpupid(fx::c(2), p2);
            k.task_numa_fault(t1, fx::c(0), last, fx::n(1), 3, 0);
            let ev = &k.trace.as_ref().unwrap().events;
            if !named {
                assert!(ev.is_empty(), "opt-in: {ev:?}");
                continue;
            }
            assert_eq!(ev.len(), 1, "{ev:?}");
            assert_eq!(ev[0].name, "numalab_numa_fault");
            assert_eq!(
                ev[0].fields,
                format!("last={last} node=1 pages=3 flags=0 private=0 ngid={p1}")
            );
        }
    }

    #[test]
    fn a_pid_collision_with_another_process_counts_as_private() {
        let (mut k, _, t1) = setup();
        let other = fx::add_mm(&mut k, 1 << 20, false, None);
        let t2 = fx::add_task(&mut k, other, fx::c(2));
        let p2 = k.tasks[t2].pid;
        // t2 must be grouped for a join to be considered.
        k.task_numa_fault(t2, fx::c(2), cpu_pid_to_cpupid(fx::c(0), 5), fx::n(0), 1, 0);
        assert!(k.numa_group(t2).is_some());
        fx::fault_on_page_of(&mut k, t1, t2, fx::n(1));
        let nn = k.m.nr_nodes();
        assert_eq!(
            k.tasks[t1].numa.faults[faults_idx(nn, NUMA_MEMBUF, fx::n(1), 1)],
            1
        );
        assert_ne!(k.task_numa_group_id(t1), p2);
    }

    #[test]
    fn topology_types_follow_the_slit() {
        let direct = vec![vec![10, 21], vec![21, 10]];
        assert_eq!(numa_topology_type(&direct), NumaTopologyType::Direct);
        let snc = vec![
            vec![10, 12, 21, 21],
            vec![12, 10, 21, 21],
            vec![21, 21, 10, 12],
            vec![21, 21, 12, 10],
        ];
        assert_eq!(numa_topology_type(&snc), NumaTopologyType::Backplane);
        let ring = vec![
            vec![10, 16, 22, 16],
            vec![16, 10, 16, 22],
            vec![22, 16, 10, 16],
            vec![16, 22, 16, 10],
        ];
        assert_eq!(numa_topology_type(&ring), NumaTopologyType::GluelessMesh);
    }
}
