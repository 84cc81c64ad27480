//! The engine: virtual clock, event queue, run loop, stop conditions and
//! the Run record.
//!
//! Time is virtual nanoseconds. Ticks come every 1/HZ on all CPUs at once
//! (the kernel's default, unskewed ticks). At each tick the scheduler does
//! its time-slice and load-balance work, the physics solves the memory
//! system for every running task (max-min fair shares, loaded latencies),
//! and every running task is run up to the next tick at its rate. A task
//! that blocks, exits or must move before then leaves a `CpuStop` event at
//! that moment; sleeps end with a `Wakeup` event. Tasks are run eagerly up
//! to the next tick, so effects inside one tick may be seen slightly early
//! by other CPUs (at most one tick). Balancing softirqs raised at a tick run
//! interleaved on the CPUs' own clocks (kernel/sched/balance.rs); a CPU with
//! no task that is still balancing runs what is queued on it only when its
//! balance ends (`KernelDone`).
//!
//! Left out: sub-tick preemption, wakeup preemption.

mod async_scan;
mod background;
mod barrier;
pub mod budget;
mod cgroup_files;
mod clone;
mod control;
pub mod exec;
mod fast_forward;
mod fault;
mod host_cuts;
mod latency;
mod mpol;
mod numa;
pub mod record;
mod series;
mod sharing;
mod solve_interval;
mod stall;

use crate::kernel::ids::TiVec;
use crate::kernel::mm::mempolicy::{mpol_new, MemPolicy, MpolRequest};
use crate::kernel::mm::{Mm, Vma};
use crate::kernel::sched::{Task, TaskState};
use crate::kernel::sysctl::{knob, Knobs};
use crate::kernel::{CgroupId, CpuId, Kernel, MmId, NodeId, TaskId, VmaId};
use crate::physics::{loaded_latency, max_min_fair_with, FairScratch, Fluid, Switches};
use budget::StepBudget;
use cgroup_files::apply_cgroup_file;
use exec::{Op, Stop, ThreadExec};
use numalab_record::RunRecord;
use numalab_topology::{CpuSet, Machine, NodeMask};
use numalab_workload::{Phase, PolicySpec, Workload};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// First pid handed out (the model's tasks look like ordinary processes).
pub const FIRST_PID: u64 = 1000;
/// Runs stop with an error after this much virtual time (ns): 24 hours.
pub const MAX_VIRTUAL_NS: u64 = 24 * 3600 * 1_000_000_000;

/// Options of one run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// PRNG seed.
    pub seed: u64,
    /// `--scale` the workload was resolved with (recorded only).
    pub scale: f64,
    /// Record trace events.
    pub trace: bool,
    /// Check model invariants every this many ticks (0 = never).
    pub check_every: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            seed: 1,
            scale: 1.0,
            trace: false,
            check_every: 0,
        }
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The workload asked for something the kernel refuses (EINVAL, ENOMEM).
    #[error("{0}")]
    Refused(String),
    /// The run did not finish within [`MAX_VIRTUAL_NS`].
    #[error("the run did not finish within {0} s of virtual time")]
    TooLong(u64),
    /// An internal invariant broke (a bug in numalab).
    #[error("model invariant violated: {0}")]
    Invariant(String),
    /// The run broke its step budget ([`budget::StepBudget`]): one line
    /// saying what ran away, the steps taken and the budget.
    #[error("{0}")]
    Runaway(String),
}

/// What a run cost the engine, for tests and fuzzing (not part of the Run
/// record, whose bytes must not depend on it).
#[derive(Clone, Debug, PartialEq)]
pub struct RunStats {
    /// Engine steps taken ([`Sim::steps`]).
    pub steps: u64,
    /// The budget the run had ([`Sim::budget`]).
    pub budget: StepBudget,
    /// Fluid solves done: one a tick, or one every
    /// `numalab.fluid_solve_ticks` ticks.
    pub fluid_solves: u64,
    /// Ticks run.
    pub ticks: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Global tick.
    Tick,
    /// The running task of a CPU stopped early; valid while `gen` matches.
    CpuStop { cpu: CpuId, gen: u64 },
    /// A sleeping task wakes.
    Wakeup { task: TaskId },
    /// A CPU with no task finished its kernel work (a balance) and may run
    /// what is queued.
    KernelDone { cpu: CpuId },
}

/// Per-process bookkeeping.
#[derive(Clone, Debug)]
pub struct ProcInfo {
    /// Process pid.
    pub pid: u64,
    /// Task indices of its threads, by thread index (None until created).
    pub tasks: Vec<Option<TaskId>>,
    /// CPU its threads are forked from.
    pub home_cpu: CpuId,
    /// Time its last thread exited.
    pub exit_ns: Option<u64>,
    /// Its threads' barriers (engine/barrier.rs).
    pub barriers: Vec<barrier::BarrierState>,
}

/// A running simulation.
pub struct Sim {
    /// The kernel.
    pub k: Kernel,
    /// The workload.
    pub w: Workload,
    /// Execution state per task.
    pub exec: TiVec<TaskId, ThreadExec>,
    /// The fluid model's state.
    fluid: Fluid,
    /// Phases per process per thread.
    threads: Vec<Vec<Vec<Phase>>>,
    /// Process bookkeeping.
    pub procs: Vec<ProcInfo>,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    next_tick: u64,
    rng: Pcg64Mcg,
    /// Completed requests, all tasks.
    pub requests: u64,
    paid_in_op: f64,
    mix_cache: rustc_hash::FxHashMap<(MmId, VmaId, u64, u64), exec::MixEntry>,
    /// Range mixes made so far (exec.rs `MixEntry::gen`).
    mix_gens: u64,
    /// The `MixEntry::gen` of the range mix the last `placed_demand` read
    /// (0 for an op without a range): the generation a rate worked out by
    /// `quick_rate` is kept with.
    demand_gen: u64,
    /// Bumped by every phase that changes a policy, an affinity or a
    /// cgroup: the tasks' memos (exec.rs `TaskMemo`) go stale.
    policy_epoch: u64,
    race_streams: fault::RaceStreams,
    tick_start: u64,
    interval_local_bytes: f64,
    interval_bytes: f64,
    opts: RunOptions,
    live: usize,
    end_ns: Option<u64>,
    samples: Vec<Vec<f64>>,
    next_sample: u64,
    ticks: u64,
    pending_stop: TiVec<CpuId, Option<Stop>>,
    /// Engine steps so far (see [`budget`]).
    steps: u64,
    budget: StepBudget,
    /// `budget.steps_by` at the last event that asked it: the rate bound
    /// only grows with modeled time, so a step count within it is within
    /// the bound at any later event too, and the budget is asked again
    /// only past it (or past the time limit).
    steps_allowed: u64,
    /// Running writers per region at the last tick (engine/sharing.rs).
    shared: sharing::SharedWriters,
    /// Scratch of gather_shared_writers: this tick's writers with their
    /// regions, kept to spare its allocation every tick.
    shared_scratch: Vec<((MmId, VmaId), crate::physics::sharing::Writer)>,
    /// Scratch of gather_shared_writers: one region's writers.
    shared_writers: Vec<crate::physics::sharing::Writer>,
    /// Proposal 2's kworkers (engine/async_scan.rs).
    kworkers: async_scan::Kworkers,
    /// Outlier threshold of the access-latency histograms, ns; 0 when
    /// `numalab.access_latency` is off (engine/latency.rs).
    lat_threshold_ns: f64,
    /// Tasks preempted at a tick and when, for their timed access.
    /// (Only inserted into and taken from, never iterated: a hash map.)
    lat_preempted: rustc_hash::FxHashMap<TaskId, u64>,
    /// The host's cuts of timed accesses on a QEMU guest
    /// (`numalab.vcpu_access_cuts`, engine/host_cuts.rs); `None` elsewhere.
    host_cuts: Option<host_cuts::HostCuts>,
    /// `numalab.request_fast_forward` (engine/fast_forward.rs).
    fast_forward: bool,
    /// `numalab.sleep_slice_ms` in ns: 0, or the slice a `sleep` phase is
    /// slept in (engine/exec.rs, `ThreadExec::nap_until`).
    sleep_slice_ns: u64,
    /// `numalab.fluid_solve_ticks`: the fluid model is solved at every
    /// this many ticks (1: every tick, exact).
    fluid_solve_ticks: u64,
    /// Fluid solves done ([`RunStats::fluid_solves`]).
    fluid_solves: u64,
    /// The last tick's demands (the vector kept for its room).
    demands: Vec<crate::physics::Demand>,
    /// The resource list of a demand that loads none (compute), shared.
    pub(crate) no_uses: std::rc::Rc<[(crate::physics::ResId, f64)]>,
    /// The vector a missing traffic list is built in (exec.rs).
    pub(crate) uses_scratch: Vec<(crate::physics::ResId, f64)>,
    /// Scratch of fast_forward.rs, kept to spare an allocation a step.
    ff_body: Vec<fast_forward::BodyAccess>,
    /// The shared-line model's parameters (engine/sharing.rs).
    sharing: crate::physics::sharing::Sharing,
    /// What the fair share keeps from one tick's solve to the next.
    fair: FairScratch,
    /// True while `solve_physics` gathers the demands.
    solving: bool,
    /// What the demands of this solve share (exec.rs `SolveKey`).
    solve_ranges: exec::SolveRanges,
    /// Whether tasks share those parts (always, but in a test that checks
    /// the sharing changes nothing).
    share_solves: bool,
    /// Whether a memo kept at an older page version is used while its
    /// range reads the same pages (exec.rs `MixEntry::gen`): always, but in
    /// a test that checks it changes nothing.
    memo_by_pages: bool,
}

impl Sim {
    /// Sets up a run: boots the kernel, creates cgroups, address spaces and
    /// the initial threads. Fails on anything the kernel would refuse.
    pub fn new(
        machine: Machine,
        w: Workload,
        knobs: Knobs,
        opts: RunOptions,
    ) -> Result<Sim, SimError> {
        let mut k = Kernel::new(machine, knobs).map_err(SimError::Refused)?;
        // The runtime's own mappings (thread stacks, heap, libraries'
        // data) beside the workload's regions, when asked for.
        let mut w = w;
        numalab_workload::runtime::add_process_mappings(
            &mut w,
            k.knobs.get(knob::PROCESS_MAPPINGS),
        );
        // numalab real run's shared control page, when asked for.
        if k.knobs.get(knob::REAL_RUN_SHARED_PAGE) {
            numalab_workload::real_run::add_real_run_shared_page(&mut w);
        }
        k.sched.seed_balance(opts.seed);
        if opts.trace {
            k.trace = Some(Box::default());
        }
        let nn = k.m.nr_nodes();
        // Cgroups, then the --set cgroup files.
        for cg in &w.cgroups {
            let mems = match &cg.cpuset_mems {
                Some(v) => Some(nodemask(v, nn).map_err(|e| {
                    SimError::Refused(format!("cgroup {}: cpuset.mems: {e}", cg.path))
                })?),
                None => None,
            };
            k.cgroups
                .mkdir(&cg.path, cg.cpuset_cpus.clone(), mems)
                .map_err(SimError::Refused)?;
            for (file, value) in &cg.files {
                apply_cgroup_file(&mut k, &cg.path, file, value).map_err(SimError::Refused)?;
            }
        }
        for f in k.knobs.cgroup_files.clone() {
            apply_cgroup_file(&mut k, &f.cgroup, &f.file, &f.value).map_err(SimError::Refused)?;
        }
        // The runtime's mappings are address space, mostly never touched
        // (a thread writes 16 KiB of its 8 MiB stack): not counted.
        let total: u64 = w
            .processes
            .iter()
            .flat_map(|p| &p.regions)
            .filter(|r| !r.runtime)
            .map(|r| r.bytes)
            .sum();
        if total > k.m.total_mem_bytes() {
            return Err(SimError::Refused(format!(
                "workload {} needs {:.1} GiB but machine {} has {:.1} GiB",
                w.name,
                total as f64 / (1u64 << 30) as f64,
                k.m.name,
                k.m.total_mem_bytes() as f64 / (1u64 << 30) as f64
            )));
        }
        let threads: Vec<Vec<Vec<Phase>>> = w
            .processes
            .iter()
            .map(|p| p.threads.iter().map(|t| t.phases.clone()).collect())
            .collect();
        let fluid = Fluid::new(&k.m, Switches::from_knobs(&k.knobs));
        let budget = StepBudget::for_run(&k.m, &w);
        let sharing = sharing::sharing_params(&k);
        let mut sim = Sim {
            k,
            exec: TiVec::new(),
            fluid,
            threads,
            procs: Vec::new(),
            events: BinaryHeap::new(),
            seq: 0,
            next_tick: 0,
            rng: Pcg64Mcg::seed_from_u64(opts.seed ^ 0x6e75_6d61_6c61_6221),
            requests: 0,
            paid_in_op: 0.0,
            mix_cache: Default::default(),
            mix_gens: 0,
            demand_gen: 0,
            policy_epoch: 0,
            shared: Default::default(),
            shared_scratch: Vec::new(),
            shared_writers: Vec::new(),
            race_streams: Default::default(),
            tick_start: 0,
            interval_local_bytes: 0.0,
            interval_bytes: 0.0,
            opts,
            live: 0,
            end_ns: None,
            samples: Vec::new(),
            next_sample: 0,
            ticks: 0,
            pending_stop: TiVec::new(),
            steps: 0,
            budget,
            steps_allowed: 0,
            kworkers: Default::default(),
            lat_threshold_ns: 0.0,
            lat_preempted: Default::default(),
            host_cuts: None,
            fast_forward: false,
            sleep_slice_ns: 0,
            fluid_solve_ticks: 1,
            fluid_solves: 0,
            ff_body: Vec::new(),
            sharing,
            fair: FairScratch::default(),
            solving: false,
            share_solves: true,
            memo_by_pages: true,
            solve_ranges: Default::default(),
            demands: Vec::new(),
            no_uses: std::rc::Rc::from([]),
            uses_scratch: Vec::new(),
            w,
        };
        if sim.k.knobs.get(knob::ACCESS_LATENCY) {
            sim.lat_threshold_ns = sim.k.knobs.get(knob::ACCESS_LATENCY_THRESHOLD_US) as f64 * 1e3;
            if sim.k.knobs.get(knob::VCPU_ACCESS_CUTS) {
                sim.host_cuts = sim
                    .k
                    .m
                    .kernel
                    .vcpu_preemption
                    .clone()
                    .map(|p| host_cuts::HostCuts::new(p, sim.opts.seed));
            }
        }
        sim.fast_forward = sim.k.knobs.get(knob::REQUEST_FAST_FORWARD);
        sim.sleep_slice_ns = sim.k.knobs.get(knob::SLEEP_SLICE_MS) * 1_000_000;
        sim.fluid_solve_ticks = sim.k.knobs.get(knob::FLUID_SOLVE_TICKS).max(1);
        sim.pending_stop = vec![None; sim.k.m.nr_cpus()].into();
        sim.create_processes()?;
        sim.start_background();
        Ok(sim)
    }

    fn create_processes(&mut self) -> Result<(), SimError> {
        let nn = self.k.m.nr_nodes();
        let mut pid = FIRST_PID;
        let mut shell_cpu = CpuId::new(0);
        let serial_clone = self.k.knobs.get(knob::SERIAL_CLONE);
        for (pi, p) in self.w.processes.clone().iter().enumerate() {
            let cg = self.k.cgroups.find(&p.cgroup).ok_or_else(|| {
                SimError::Refused(format!(
                    "process {}: cgroup {} does not exist",
                    p.name, p.cgroup
                ))
            })?;
            let mm_id = self.k.mem.mms.next_key();
            let mut addr = 1u64 << 30;
            let mut vmas = Vec::new();
            for r in &p.regions {
                let policy = match &r.policy {
                    Some(s) => Some(self.mpol(s).map_err(|e| {
                        SimError::Refused(format!(
                            "process {} region {}: mbind: EINVAL: {e}",
                            p.name, r.name
                        ))
                    })?),
                    None => None,
                };
                let thp = r.page_size == numalab_workload::PageSize::Thp2M;
                let mut v = Vma::new(&r.name, addr, r.bytes, thp, policy, nn);
                v.piece_bytes = r.vma_bytes;
                addr = (v.end() + (4 << 20)).next_multiple_of(2 << 20);
                if r.shared {
                    let vid = VmaId::new(vmas.len());
                    self.k
                        .mem
                        .shmem_attach(&r.name, mm_id, vid, &mut v)
                        .map_err(|e| SimError::Refused(format!("process {}: {e}", p.name)))?;
                }
                vmas.push(v);
            }
            self.k.mem.mms.push(Mm::new(mm_id, pid, vmas.into()));
            // The process is forked from the shell; fork balancing places it.
            let probe = Task::new(pid, pid, p.name.clone(), mm_id, cg);
            let probe_id = self.k.add_task(probe);
            self.k.tasks[probe_id].affinity = self.k.m.all_cpus();
            let home = self.k.select_task_rq_fork(probe_id, shell_cpu);
            self.k.remove_last_task();
            shell_cpu = home;
            self.procs.push(ProcInfo {
                pid,
                tasks: vec![None; p.threads.len()],
                home_cpu: home,
                exit_ns: None,
                barriers: barrier::BarrierState::of_process(p),
            });
            let tgid = pid;
            pid += p.threads.len() as u64 + 1;
            let home = self.procs[pi].home_cpu;
            let initial: Vec<usize> = (0..p.threads.len())
                .filter(|&ti| p.threads[ti].start_after.is_empty())
                .collect();
            match initial.split_first() {
                // The main thread creates the others (engine/clone.rs).
                Some((&main, rest)) if serial_clone && !rest.is_empty() => {
                    let t = self.spawn_thread(pi, main, tgid, clone::Creator::shell(home))?;
                    self.exec[t].creating = Some(Box::new(clone::Creating::new(rest)));
                }
                _ => {
                    for ti in initial {
                        self.spawn_thread(pi, ti, tgid, clone::Creator::shell(home))?;
                    }
                }
            }
        }
        Ok(())
    }

    fn mpol(&self, s: &PolicySpec) -> Result<MemPolicy, String> {
        let il = self.k.knobs.get(knob::INTERLEAVE_NUMA_BALANCING);
        mpol_new(&MpolRequest::from(s), self.k.m.nr_nodes(), il).map_err(|e| e.0)
    }

    /// Creates thread `ti` of process `pi` now (`clone` + `wake_up_new_task`).
    /// Placed from `by.cpu`, the creator's CPU (engine/clone.rs).
    fn spawn_thread(
        &mut self,
        pi: usize,
        ti: usize,
        tgid: u64,
        by: clone::Creator,
    ) -> Result<TaskId, SimError> {
        let parent_cpu = by.cpu;
        let spec = self.w.processes[pi].threads[ti].clone();
        let p = &self.w.processes[pi];
        let cg = self.k.cgroups.find(&p.cgroup).unwrap_or(CgroupId::new(0));
        let nn = self.k.m.nr_nodes();
        let mm = self
            .k
            .mem
            .mms
            .position(|m| m.tgid == tgid)
            .unwrap_or(MmId::new(0));
        let pid = tgid + 1 + ti as u64;
        let name = numalab_record::task_name(&p.name, &spec.name);
        let mut task = Task::new(pid, tgid, name, mm, cg);
        task.affinity = spec.affinity.clone().unwrap_or_else(|| self.k.m.all_cpus());
        if task
            .affinity
            .last()
            .is_some_and(|c| c >= self.k.m.nr_cpus())
        {
            return Err(SimError::Refused(format!(
                "thread {}: affinity {} names a CPU the machine does not have",
                task.name, task.affinity
            )));
        }
        if let Some(s) = &spec.policy {
            task.mempolicy = self.mpol(s).map_err(|e| {
                SimError::Refused(format!("thread {}: set_mempolicy: EINVAL: {e}", task.name))
            })?;
        }
        task.start_ns = self.k.now;
        task.vruntime = 0;
        let t = self.k.add_task(task);
        self.k.cgroups.all[cg].nr_tasks += 1;
        self.k.mem.mms[mm].users += 1;
        let mut ex = ThreadExec::new(pi, ti, nn);
        ex.waits_for_creator = by.waits;
        self.exec.push(ex);
        self.procs[pi].tasks[ti] = Some(t);
        self.live += 1;
        let cpu = self.k.select_task_rq_fork(t, parent_cpu);
        // The parent is the process's first thread once it runs (the
        // workload's main thread); before that, the shell's fork.
        let parent = self.procs[pi]
            .tasks
            .iter()
            .flatten()
            .copied()
            .find(|&p| p != t);
        let (comm, pid) = (self.k.tasks[t].name.clone(), self.k.tasks[t].pid);
        self.k.trace(parent, parent_cpu, "sched_wakeup_new", || {
            let comm: String = comm.chars().take(15).collect();
            format!(
                "comm={comm} pid={pid} prio=120 target_cpu={:03}",
                cpu.index()
            )
        });
        self.k.tasks[t].cpu = cpu;
        self.k.tasks[t].vruntime = self.k.sched.rq[cpu].min_vruntime;
        self.k.enqueue_task(t, cpu);
        self.k.tasks[t].nr_migrations = 0;
        self.k.numa_task_init(t, by.task);
        if self.k.sched.rq[cpu].curr.is_none() && self.k.now > 0 {
            self.schedule(cpu)?;
        }
        Ok(t)
    }

    /// `set_mempolicy(2)` from a phase.
    fn set_mempolicy(&mut self, t: TaskId, p: Option<&PolicySpec>) -> Result<(), String> {
        let pol = match p {
            Some(s) => self.mpol(s).map_err(|e| {
                format!(
                    "thread {}: set_mempolicy: EINVAL: {e}",
                    self.k.tasks[t].name
                )
            })?,
            None => MemPolicy::DEFAULT,
        };
        self.k.tasks[t].mempolicy = pol;
        self.k.tasks[t].il_prev = 0;
        Ok(())
    }

    /// `sched_setaffinity(2)` from a phase.
    fn sched_setaffinity(&mut self, t: TaskId, s: Option<CpuSet>) {
        self.k.tasks[t].affinity = s.unwrap_or_else(|| self.k.m.all_cpus());
    }

    fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, ev)));
    }

    /// Engine steps taken so far: events handled plus turns of the tasks'
    /// run loops. A run stops with [`SimError::Runaway`] before this passes
    /// [`Sim::budget`]'s `max_steps()`.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The run's step budget, fixed when the Sim is made.
    pub fn budget(&self) -> &StepBudget {
        &self.budget
    }

    /// Keeps only the trace events `filter` keeps (when
    /// [`RunOptions::trace`] is set).
    pub fn with_trace_filter(mut self, filter: crate::kernel::TraceFilter) -> Sim {
        if let Some(tr) = self.k.trace.as_mut() {
            tr.filter = filter;
        }
        self
    }

    /// Replaces the step budget, e.g. a smaller one in a test of the guard.
    pub fn with_budget(mut self, budget: StepBudget) -> Sim {
        self.budget = budget;
        self
    }

    /// Like [`Sim::run_with_trace`], also returning the engine's
    /// [`RunStats`] (steps taken and the budget).
    pub fn run_with_stats(
        mut self,
        progress: &mut dyn FnMut(f64),
    ) -> Result<(RunRecord, Vec<crate::kernel::TraceEvent>, RunStats), SimError> {
        let end = self.drive(progress)?;
        let stats = RunStats {
            steps: self.steps,
            budget: self.budget.clone(),
            fluid_solves: self.fluid_solves,
            ticks: self.ticks,
        };
        let trace = self.k.trace.take().map(|t| t.events).unwrap_or_default();
        Ok((self.finish(end), trace, stats))
    }

    /// Runs to completion (or the workload's duration) and returns the
    /// Run record. `progress` is called with the fraction of virtual time
    /// done when it can be estimated, else with the virtual seconds elapsed.
    pub fn run(self, progress: &mut dyn FnMut(f64)) -> Result<RunRecord, SimError> {
        self.run_with_trace(progress).map(|(r, _)| r)
    }

    /// Like [`Sim::run`], also returning the trace events recorded when
    /// [`RunOptions::trace`] was set.
    pub fn run_with_trace(
        self,
        progress: &mut dyn FnMut(f64),
    ) -> Result<(RunRecord, Vec<crate::kernel::TraceEvent>), SimError> {
        self.run_with_stats(progress)
            .map(|(rec, trace, _)| (rec, trace))
    }

    /// Runs the event loop to the end; returns the end time.
    fn drive(&mut self, progress: &mut dyn FnMut(f64)) -> Result<u64, SimError> {
        self.push(0, Ev::Tick);
        let duration = self.w.duration_ns;
        while let Some(Reverse((at, _, ev))) = self.events.pop() {
            if let Some(d) = duration {
                if at > d {
                    self.end_ns = Some(d);
                    break;
                }
            }
            if at > MAX_VIRTUAL_NS {
                return Err(SimError::TooLong(MAX_VIRTUAL_NS / 1_000_000_000));
            }
            self.steps += 1;
            if self.steps > self.steps_allowed || at > self.budget.time_limit_ns {
                self.budget
                    .check(self.steps, at)
                    .map_err(SimError::Runaway)?;
                self.steps_allowed = self.budget.steps_by(at);
            }
            self.k.now = at;
            match ev {
                Ev::Tick => {
                    self.tick()?;
                    if self.ticks.is_multiple_of(250) {
                        progress(at as f64 / 1e9);
                    }
                }
                Ev::CpuStop { cpu, gen } => {
                    if self.k.sched.rq[cpu].gen == gen {
                        self.cpu_stop(cpu)?;
                    }
                }
                Ev::Wakeup { task } => self.try_to_wake_up(task, None)?,
                Ev::KernelDone { cpu } => {
                    if !self.k.sched.rq[cpu].queue.is_empty() {
                        self.schedule(cpu)?;
                    }
                }
            }
            if self.live == 0 {
                self.end_ns = Some(self.k.now);
                break;
            }
        }
        let end = self.end_ns.unwrap_or(self.k.now);
        self.k.now = end;
        Ok(end)
    }

    fn tick(&mut self) -> Result<(), SimError> {
        self.flush_race_debts();
        self.ticks += 1;
        self.tick_start = self.k.now;
        let now = self.k.now;
        let ncpu = self.k.m.nr_cpus();
        if self.opts.check_every > 0 && self.ticks.is_multiple_of(self.opts.check_every) {
            self.k.check_invariants().map_err(SimError::Invariant)?;
        }
        // sched_tick: PELT (entity_tick), the running task's class tick
        // (task_tick_numa runs for it before any reschedule), then slice
        // expiry.
        self.k.pelt_tick();
        let mut resched = Vec::new();
        for cpu in CpuId::range(ncpu) {
            self.k.task_tick_fair_numa(cpu);
            if let Some(t) = self.k.sched.rq[cpu].curr {
                if !self.k.sched.rq[cpu].queue.is_empty()
                    && now.saturating_sub(self.k.tasks[t].exec_start)
                        >= crate::kernel::sched::BASE_SLICE_NS
                {
                    resched.push((cpu, t));
                }
            }
        }
        // Balancing (SCHED_SOFTIRQ on each CPU whose next_balance is due).
        // It runs before the switch the tick asked for (resched_curr only
        // sets need_resched; schedule() comes on the way out of the
        // interrupt), so the running tasks are still on their CPUs.
        for cpu in CpuId::range(ncpu) {
            self.k.sched_balance_trigger(cpu);
        }
        self.k.run_sched_softirqs();
        // task_numa_work, queued by the pass above, on the way back to
        // user space (kernel/numa/task_work.rs).
        self.k.run_numa_task_work();
        for (cpu, t) in resched {
            if self.k.sched.rq[cpu].curr == Some(t) && !self.k.sched.rq[cpu].queue.is_empty() {
                self.k.put_prev_task(cpu);
                self.k
                    .charge_sys(t, crate::physics::costs::CONTEXT_SWITCH_NS / 2.0);
                if self.lat_threshold_ns > 0.0 {
                    self.lat_preempted.insert(t, now);
                }
            }
        }
        // Proposal 2: scans task_tick_numa queued go to their kworkers.
        self.dispatch_numa_async();
        for cpu in CpuId::range(ncpu) {
            if self.k.sched.rq[cpu].curr.is_none() {
                let busy = self.k.sched.rq[cpu].kernel_busy_until;
                if busy > now {
                    // Still in the balancing softirq: run the queue after.
                    if !self.k.sched.rq[cpu].queue.is_empty() {
                        self.k.sched.note_kernel_wait(cpu, now);
                        self.push(busy, Ev::KernelDone { cpu });
                    }
                } else {
                    self.k.pick_next_task(cpu);
                }
            }
        }
        // The kernel work of this tick delays one timed access per task.
        if self.lat_threshold_ns > 0.0 {
            self.close_stalls();
        }
        self.sample(now);
        if self.solve_due() {
            self.fluid_solves += 1;
            self.solve_physics();
        } else {
            self.keep_last_solve();
        }
        self.next_tick = now + self.k.tick_ns;
        for cpu in CpuId::range(ncpu) {
            if self.k.sched.rq[cpu].curr.is_some() {
                self.plan(cpu)?;
            }
        }
        let nt = self.next_tick;
        self.push(nt, Ev::Tick);
        Ok(())
    }

    /// Solves the fluid model for every running task and sets their rates,
    /// the loaded latencies and each resource's served share.
    fn solve_physics(&mut self) {
        let ncpu = self.k.m.nr_cpus();
        self.gather_shared_writers();
        let mut who = Vec::new();
        let mut demands = std::mem::take(&mut self.demands);
        demands.clear();
        self.solve_ranges.clear();
        self.solving = true;
        for cpu in CpuId::range(ncpu) {
            let Some(t) = self.k.sched.rq[cpu].curr else {
                continue;
            };
            if matches!(self.exec[t].op, Op::Idle) {
                self.exec[t].rate_fresh = false;
                continue;
            }
            let op = self.exec[t].op.clone();
            let d = self.op_demand(t, cpu, &op);
            who.push(t);
            demands.push(d);
        }
        self.solving = false;
        let cap = self.fluid.res.capacity.clone();
        let rates = max_min_fair_with(&cap, &demands, &mut self.fair);
        let mut load = vec![0.0; cap.len()];
        let mut want = vec![0.0; cap.len()];
        for (d, r) in demands.iter().zip(&rates) {
            for &(res, s) in d.uses.iter() {
                load[res] += s * r;
                want[res] += s * d.cap;
            }
        }
        for (i, &t) in who.iter().enumerate() {
            self.exec[t].rate = rates[i];
            self.exec[t].rate_fresh = true;
            self.exec[t].rate_cpu = Some(self.k.tasks[t].cpu);
        }
        self.demands = demands;
        for r in 0..cap.len() {
            self.fluid.res_share[r] = if want[r] > 0.0 {
                (cap[r] / want[r]).min(1.0)
            } else {
                1.0
            };
        }
        let nn = self.k.m.nr_nodes();
        for n in NodeId::range(nn) {
            self.fluid.mem_util[n.index()] =
                load[self.fluid.res.mem(n)] / cap[self.fluid.res.mem(n)];
        }
        for c in 0..nn {
            for n in 0..nn {
                self.fluid.latency[c][n] =
                    loaded_latency(self.k.m.latency_ns[c][n], self.fluid.mem_util[n]);
            }
        }
        self.trace_fluid(&load, &cap);
    }

    /// `numalab_fluid` (opt-in): what this tick's solve gave each shared
    /// resource, its load over its capacity (`mem1=1.000`: node 1's
    /// controller saturated; `link-pkg2->pkg1=...`), and per node the
    /// factor its controller's load multiplies memory latency by
    /// (`lat1=5.50`). Which resource binds a phase, read off a trace.
    fn trace_fluid(&mut self, load: &[f64], cap: &[f64]) {
        if self.k.trace.is_none() {
            return;
        }
        let res = &self.fluid.res;
        let util = &self.fluid.mem_util;
        let fields = || {
            let mut f = String::new();
            for (r, name) in res.name.iter().enumerate() {
                let u = if cap[r] > 0.0 { load[r] / cap[r] } else { 0.0 };
                // The name without its note ("link-pkg0->pkg1 (3 links)").
                let key = name.split(' ').next().unwrap_or(name);
                f.push_str(&format!("{key}={u:.3} "));
            }
            for (n, &u) in util.iter().enumerate() {
                f.push_str(&format!("lat{n}={:.2} ", loaded_latency(1.0, u)));
            }
            f.pop();
            f
        };
        self.k.trace(None, CpuId::new(0), "numalab_fluid", fields);
    }

    /// Runs `cpu`'s current task up to the next tick, or schedules the event
    /// at which it stops earlier.
    fn plan(&mut self, cpu: CpuId) -> Result<(), SimError> {
        let Some(t) = self.k.sched.rq[cpu].curr else {
            return Ok(());
        };
        let now = self.k.now;
        let budget = self.next_tick.saturating_sub(now) as f64;
        if budget <= 0.0 {
            return Ok(());
        }
        if !self.lat_preempted.is_empty() {
            if let Some(at) = self.lat_preempted.remove(&t) {
                self.wait_stall(t, now.saturating_sub(at) as f64);
            }
        }
        let (used, stop) = self.run_task(t, cpu, budget).map_err(SimError::Refused)?;
        if stop != Stop::Horizon {
            let at = now + (used.ceil() as u64).min(self.next_tick - now);
            self.stops_pending(cpu, stop);
            let gen = self.k.sched.rq[cpu].gen;
            self.push(at, Ev::CpuStop { cpu, gen });
        }
        Ok(())
    }

    fn stops_pending(&mut self, cpu: CpuId, stop: Stop) {
        self.pending_stop[cpu] = Some(stop);
    }

    /// The running task of `cpu` stopped: block, exit or move it, then pick
    /// the next task.
    fn cpu_stop(&mut self, cpu: CpuId) -> Result<(), SimError> {
        let Some(t) = self.k.sched.rq[cpu].curr else {
            return Ok(());
        };
        let stop = self.pending_stop[cpu].take().unwrap_or(Stop::Horizon);
        match stop {
            Stop::Horizon => {}
            Stop::Sleep(ns) => {
                self.k.dequeue_task(t);
                self.k.tasks[t].state = TaskState::Sleeping;
                let at = self.k.now + ns;
                self.push(at, Ev::Wakeup { task: t });
            }
            Stop::Exit => self.exit_task(t)?,
            Stop::Block => {
                self.k.dequeue_task(t);
                self.k.tasks[t].state = TaskState::Sleeping;
            }
            Stop::Barrier(b) => {
                if !self.barrier_arrive(t, cpu, b)? {
                    self.k.dequeue_task(t);
                    self.k.tasks[t].state = TaskState::Sleeping;
                } else if self.k.sched.rq[cpu].curr == Some(t) {
                    // The last party goes on: plan the rest of its tick.
                    return self.plan(cpu);
                }
            }
            Stop::Clone(j) => {
                self.clone_thread(t, cpu, j)?;
                // The creator runs on: plan the rest of its tick.
                if self.k.sched.rq[cpu].curr == Some(t) {
                    return self.plan(cpu);
                }
            }
            Stop::Migrate => {
                let dst = self.k.select_task_rq_wake(t);
                self.k.dequeue_task(t);
                self.k.tasks[t].state = TaskState::Sleeping;
                self.k.enqueue_task(t, dst);
                if self.k.sched.rq[dst].curr.is_none() {
                    self.schedule(dst)?;
                }
            }
        }
        self.schedule(cpu)
    }

    /// `__schedule` on an idle CPU: pick a task, or go idle after trying a
    /// newly-idle balance; run what was picked.
    fn schedule(&mut self, cpu: CpuId) -> Result<(), SimError> {
        if self.k.sched.rq[cpu].curr.is_some() {
            return Ok(());
        }
        if self.k.sched.rq[cpu].queue.is_empty() {
            self.k.sched.rq[cpu].idle_stamp = self.k.now;
            if !self.k.sched_balance_newidle(cpu) {
                self.k.trace_sched_switch(cpu, None);
                return Ok(());
            }
        }
        let busy = self.k.sched.rq[cpu].kernel_busy_until;
        if busy > self.k.now {
            // The CPU is still in kernel (a balance): the task waits.
            self.k.sched.note_kernel_wait(cpu, self.k.now);
            self.push(busy, Ev::KernelDone { cpu });
            return Ok(());
        }
        if self.k.pick_next_task(cpu).is_some() {
            self.plan(cpu)?;
        }
        Ok(())
    }

    /// `try_to_wake_up`: task `t` wakes, placed by `select_task_rq_fair`
    /// from the CPU it slept on, or, when `waker` (a task and the CPU it
    /// runs on) woke it, weighed against the waker's CPU (wake_affine.rs).
    pub(crate) fn try_to_wake_up(
        &mut self,
        t: TaskId,
        waker: Option<(TaskId, CpuId)>,
    ) -> Result<(), SimError> {
        if self.k.tasks[t].state != TaskState::Sleeping {
            return Ok(());
        }
        let cpu = match waker {
            Some((w, this_cpu)) => self.k.select_task_rq_wakeup(t, w, this_cpu),
            None => self.k.select_task_rq_wake(t),
        };
        if self.k.sched.rq[cpu].is_idle() {
            // update_rq_avg_idle
            let rq = &mut self.k.sched.rq[cpu];
            let idle = self.k.now.saturating_sub(rq.idle_stamp);
            let cap = 2 * rq.max_idle_balance_cost;
            let avg = rq.avg_idle as i64;
            rq.avg_idle = if self.k.sched.newidle_lb_cost {
                // update_avg, then the clamp.
                ((avg + (idle as i64 - avg) / 8).max(0) as u64).min(cap)
            } else {
                (avg + (idle.min(cap) as i64 - avg) / 8).max(0) as u64
            };
        }
        self.k.enqueue_task(t, cpu);
        // try_to_wake_up runs in the waker's context: a task that woke
        // another pays it; a timer's wakeup is charged to the wakee.
        let payer = waker.map_or(t, |(w, _)| w);
        self.k.charge_sys(payer, crate::physics::costs::WAKEUP_NS);
        self.schedule(cpu)
    }

    fn exit_task(&mut self, t: TaskId) -> Result<(), SimError> {
        self.cancel_numa_async(t);
        self.k.dequeue_task(t);
        self.k.pelt_task_dead(t);
        self.k.tasks[t].state = TaskState::Dead;
        self.k.tasks[t].exit_ns = Some(self.k.now);
        self.live -= 1;
        self.barrier_party_exits(t)?;
        let mm = self.k.tasks[t].mm;
        self.k.mem.mms[mm].users -= 1;
        let (pi, ti) = (self.exec[t].proc, self.exec[t].thread);
        // Threads waiting for this one start once all they wait for exited
        // (looked up by index: cloning every thread's phases at each exit
        // made a process's exits quadratic in its threads).
        let tgid = self.procs[pi].pid;
        for j in 0..self.w.processes[pi].threads.len() {
            let after = &self.w.processes[pi].threads[j].start_after;
            if self.procs[pi].tasks[j].is_some() || !after.contains(&ti) {
                continue;
            }
            let ready = after.iter().all(|&a| {
                self.procs[pi].tasks[a].is_some_and(|x| self.k.tasks[x].state == TaskState::Dead)
            });
            if ready {
                let home = self.k.tasks[t].cpu;
                self.procs[pi].home_cpu = home;
                // In numalab real run the exiting thread creates it, and
                // it inherits that thread's NUMA state (engine/clone.rs).
                let by = if self.k.knobs.get(knob::SERIAL_CLONE) {
                    clone::Creator::thread(home, t, false)
                } else {
                    clone::Creator::shell(home)
                };
                self.spawn_thread(pi, j, tgid, by)?;
            }
        }
        if self.k.mem.mms[mm].users == 0 && self.procs[pi].tasks.iter().all(|x| x.is_some()) {
            self.procs[pi].exit_ns = Some(self.k.now);
        }
        Ok(())
    }

    fn sample(&mut self, now: u64) {
        let iv = self.k.knobs.get(knob::SAMPLE_INTERVAL_MS) * 1_000_000;
        if iv == 0 || now < self.next_sample {
            return;
        }
        self.next_sample = now + iv;
        let row = series::row(self, now);
        self.samples.push(row);
    }
}

fn nodemask(v: &[usize], nn: usize) -> Result<NodeMask, String> {
    let mut m = NodeMask::NONE;
    for &n in v {
        if n >= nn {
            return Err(format!("node {n} does not exist"));
        }
        m.insert(n);
    }
    Ok(m)
}

/// Convenience: resolve nothing, just run a resolved workload.
pub fn run(
    machine: Machine,
    w: Workload,
    knobs: Knobs,
    opts: RunOptions,
    progress: &mut dyn FnMut(f64),
) -> Result<RunRecord, SimError> {
    Sim::new(machine, w, knobs, opts)?.run(progress)
}
