//! Executing a thread's phases: the bridge between the workload and the
//! kernel model.
//!
//! Each task carries a cursor into its phase list (a stack of frames for
//! `repeat`) and the state of the operation in progress: a stream position
//! and passes left, random accesses left, compute or sleep time left. While
//! the task runs, [`Sim::run_task`] moves the operation forward at the rate
//! the physics gave it, stopping at every page that needs a fault (first
//! touch or hinting fault), charging the fault's cost as system time to it
//! and to the threads racing it (engine/fault.rs), and
//! returning when the task must block, exit or move, or the time is up.
//!
//! Random accesses are not simulated one by one: per chunk of the range,
//! the expected number of accesses says which of its special pages are
//! reached (a page is touched with probability 1 - exp(-accesses x its
//! share)), which keeps first-touch and hinting-fault counts right without
//! sampling millions of accesses.

use super::clone::CloneStep;
use super::Sim;
use crate::kernel::ids::NodeMaskExt;
use crate::kernel::mm::mempolicy::MpolMode;
use crate::kernel::{CpuId, MmId, NodeId, TaskId, VmaId};
use crate::physics::coherence::Stores;
use crate::physics::{Demand, CACHE_LINE};
use numalab_workload::{Distribution, Phase};
use rand::Rng;
use smallvec::SmallVec;
use std::rc::Rc;

/// Per-node figures of one range (pages, access shares), held inline up to
/// 8 nodes (every preset but the 16-node `xl-*` scaling machines): they are
/// built per op and per tick, so they stay off the allocator, and small
/// enough to copy cheaply. 16 inline spared xl-8s-1024 2.7 % of its time
/// (2.4 M allocations at --scale 0.1) but cost spr-4n's NUMA01 with
/// balancing 2 % (larger memo entries), measured 2026-11-28.
pub(crate) type NodeVec = smallvec::SmallVec<[f64; 8]>;

/// A memory op's traffic list: each resource its bytes load and by what
/// share of them ([`Demand::uses`]), shared between the memos and the
/// demands that hold it.
pub(crate) type Uses = Rc<[(crate::physics::ResId, f64)]>;

/// The operation a task is in the middle of.
#[derive(Clone, Debug)]
pub enum Op {
    /// Nothing started: fetch the next phase.
    Idle,
    /// Streaming over pages `[first, last)` of a VMA.
    Stream {
        /// VMA index.
        vma: VmaId,
        /// First byte offset in the VMA.
        offset: u64,
        /// Bytes per pass.
        len: u64,
        /// Bytes done in the current pass.
        pos: f64,
        /// Passes left, counting the current one.
        passes: u64,
        /// Share of the bytes written (1 for a `write` stream, else 0).
        write: f64,
    },
    /// Random accesses left over a range.
    Random {
        /// VMA index.
        vma: VmaId,
        /// First byte offset.
        offset: u64,
        /// Bytes in the range.
        len: u64,
        /// Accesses left (fractional part carried).
        left: f64,
        /// Distribution.
        dist: Distribution,
        /// Misses in flight.
        mlp: f64,
        /// Share of the accesses that are writes (`write_fraction`).
        write: f64,
    },
    /// CPU work left, ns.
    Compute(f64),
}

impl Op {
    /// The VMA range a memory op covers: its VMA, first byte offset and
    /// length; `None` for compute and idle.
    pub(crate) fn range(&self) -> Option<(VmaId, u64, u64)> {
        match *self {
            Op::Stream {
                vma, offset, len, ..
            }
            | Op::Random {
                vma, offset, len, ..
            } => Some((vma, offset, len)),
            Op::Compute(_) | Op::Idle => None,
        }
    }
}

/// Why a task stopped before its time was up.
#[derive(Clone, Debug, PartialEq)]
pub enum Stop {
    /// It ran until the horizon.
    Horizon,
    /// It sleeps for this many ns.
    Sleep(u64),
    /// It finished its last phase.
    Exit,
    /// Its affinity changed and excludes its CPU.
    Migrate,
    /// It sleeps until something wakes it (a kworker with no work, a new
    /// thread on its creator's `mmap_lock`).
    Block,
    /// It creates thread `j` of its process (engine/clone.rs).
    Clone(usize),
    /// It reaches barrier `b` of its process (engine/barrier.rs).
    Barrier(usize),
}

/// One frame of the phase cursor.
#[derive(Clone, Debug)]
pub struct Frame {
    /// Index of the next phase in this frame's list.
    pub pc: usize,
    /// Iterations left of the enclosing repeat (1 for the root).
    pub left: u64,
    /// The repeat counts its iterations as requests.
    pub request: bool,
}

/// Execution state of one task.
#[derive(Clone, Debug)]
pub struct ThreadExec {
    /// Process index.
    pub proc: usize,
    /// Thread index in the process.
    pub thread: usize,
    /// Phase cursor: frames from the root list inwards.
    pub frames: Vec<Frame>,
    /// Operation in progress.
    pub op: Op,
    /// Completed requests.
    pub requests: u64,
    /// Bytes it accessed on each node (the record's `bytes_by_node`).
    pub bytes_by_node: Vec<f64>,
    /// Rate for the current op, bytes/ns (memory) or work-ns/ns (compute),
    /// from the last physics solve.
    pub rate: f64,
    /// True when `rate` was solved for the current op on the current CPU.
    pub rate_fresh: bool,
    /// The CPU the last fluid solve gave `rate` on (`None` before any):
    /// a tick without a solve (`numalab.fluid_solve_ticks`) keeps the rate
    /// only on that CPU.
    pub rate_cpu: Option<CpuId>,
    /// Its access latencies (proposal 2, engine/latency.rs).
    pub lat: super::latency::TaskLatency,
    /// Rates and node mixes it already worked out this tick on this CPU.
    pub(crate) memo: TaskMemo,
    /// Whether its phases have a repeat fast_forward.rs can run whole
    /// (found on its first try).
    pub(crate) fast_body: Option<bool>,
    /// The resources its last few memory ops loaded ([`TrafficMemo`]).
    traffic: Vec<TrafficMemo>,
    /// The threads it still creates before its phases (a main thread,
    /// engine/clone.rs).
    pub(crate) creating: Option<Box<super::clone::Creating>>,
    /// It sleeps on its creator's `mmap_lock` until the creator is done.
    pub(crate) waits_for_creator: bool,
    /// The end (absolute ns) of a `sleep` phase slept in slices
    /// (`numalab.sleep_slice_ms`): until then, each time it runs it sleeps
    /// again for a slice or what is left.
    pub(crate) nap_until: Option<u64>,
    /// A `/proc/PID/numa_maps` reader (`numalab.proc_mm_refs`): the mms it
    /// holds a reference on while its work runs; `None` for other tasks.
    pub(crate) mm_refs: Option<Vec<crate::kernel::MmId>>,
}

impl ThreadExec {
    /// A cursor at the first phase, on a machine of `nr_nodes` nodes.
    pub fn new(proc: usize, thread: usize, nr_nodes: usize) -> ThreadExec {
        ThreadExec {
            proc,
            thread,
            frames: vec![Frame {
                pc: 0,
                left: 1,
                request: false,
            }],
            op: Op::Idle,
            requests: 0,
            bytes_by_node: vec![0.0; nr_nodes],
            rate: 0.0,
            rate_fresh: false,
            rate_cpu: None,
            lat: Default::default(),
            memo: TaskMemo::default(),
            fast_body: None,
            traffic: Vec::new(),
            creating: None,
            waits_for_creator: false,
            nap_until: None,
            mm_refs: None,
        }
    }
}

/// What a phase asks of the engine once fetched.
enum Next {
    Op(Op),
    Sleep(u64),
    SetMempolicy(Option<numalab_workload::PolicySpec>),
    SetAffinity(Option<numalab_topology::CpuSet>),
    /// A barrier, by its index in the process's (engine/barrier.rs).
    Barrier(usize),
    /// numalab's per-task control or a cgroup file write (proposal 4):
    /// kernel state only, done at once (engine/control.rs).
    Control(Phase),
    Exit,
}

impl Sim {
    /// The phase list a frame stack points into.
    pub(super) fn phase_list<'a>(phases: &'a [Phase], frames: &[Frame]) -> &'a [Phase] {
        let mut list = phases;
        for f in &frames[..frames.len() - 1] {
            match &list[f.pc] {
                Phase::Repeat { body, .. } => list = body,
                _ => unreachable!("frame points at a non-repeat phase"),
            }
        }
        list
    }

    /// Advances task `t`'s cursor to the next phase and returns it.
    fn next_phase(&mut self, t: TaskId) -> Next {
        let ex = &mut self.exec[t];
        let phases = &self.threads[ex.proc][ex.thread];
        loop {
            let depth = ex.frames.len();
            let list = Self::phase_list(phases, &ex.frames);
            let pc = ex.frames[depth - 1].pc;
            if pc >= list.len() {
                if depth == 1 {
                    return Next::Exit;
                }
                let f = ex.frames.pop().unwrap_or(Frame {
                    pc: 0,
                    left: 1,
                    request: false,
                });
                if f.request {
                    ex.requests += 1;
                    self.requests += 1;
                }
                if f.left > 1 {
                    ex.frames.push(Frame {
                        pc: 0,
                        left: f.left - 1,
                        request: f.request,
                    });
                } else {
                    let last = ex.frames.len() - 1;
                    ex.frames[last].pc += 1;
                }
                continue;
            }
            ex.frames[depth - 1].pc += 1;
            return match &list[pc] {
                Phase::Repeat { times, request, .. } => {
                    if *times == 0 {
                        continue;
                    }
                    ex.frames[depth - 1].pc -= 1;
                    ex.frames.push(Frame {
                        pc: 0,
                        left: *times,
                        request: *request,
                    });
                    continue;
                }
                Phase::Stream {
                    region,
                    offset,
                    len,
                    passes,
                    write,
                } => {
                    if *passes == 0 || *len == 0 {
                        continue;
                    }
                    Next::Op(Op::Stream {
                        vma: VmaId::new(*region),
                        offset: *offset,
                        len: *len,
                        pos: 0.0,
                        passes: *passes,
                        write: if *write { 1.0 } else { 0.0 },
                    })
                }
                Phase::Random {
                    region,
                    offset,
                    len,
                    accesses,
                    distribution,
                    mlp,
                    write_fraction,
                } => {
                    if *accesses == 0 || *len == 0 {
                        continue;
                    }
                    Next::Op(Op::Random {
                        vma: VmaId::new(*region),
                        offset: *offset,
                        len: *len,
                        left: *accesses as f64,
                        dist: distribution.clone(),
                        mlp: mlp.max(1.0),
                        write: write_fraction.clamp(0.0, 1.0),
                    })
                }
                Phase::Compute { ns } => Next::Op(Op::Compute(*ns as f64)),
                Phase::Sleep { ns } => Next::Sleep(*ns),
                Phase::Barrier { name } => {
                    let pi = self.exec[t].proc;
                    match self.procs[pi].barrier_index(name) {
                        Some(b) => Next::Barrier(b),
                        None => unreachable!("barrier {name} of process {pi} not collected"),
                    }
                }
                Phase::SetMempolicy(p) => Next::SetMempolicy(p.clone()),
                Phase::SetAffinity(s) => Next::SetAffinity(s.clone()),
                ph @ (Phase::SetNumaBalancing(_) | Phase::CgroupWrite { .. }) => {
                    Next::Control(ph.clone())
                }
            };
        }
    }

    /// Share of a range's accesses that land on each node, with pages not
    /// yet present counted where a first touch from `cpu` would put them.
    /// Also returns the range's pages not yet present: with none, the mix
    /// is the range's alone (no policy or CPU enters it).
    /// Also returns whether the pages are those of the VMA's current page
    /// version (false: a mix [`Sim::range_pages_current`] computed earlier this tick)
    /// and the pages' [`MixEntry::gen`] (0 for an op without a range).
    fn op_mix(&mut self, t: TaskId, cpu: CpuId, op: &Op) -> (NodeVec, f64, bool, u64) {
        let nn = self.k.m.nr_nodes();
        let Some((vma, offset, len)) = op.range() else {
            return (NodeVec::from_elem(0.0, nn), 0.0, true, 0);
        };
        let mm = self.k.tasks[t].mm;
        let (mut mix, absent, current, gen) = self.range_pages_current(mm, vma, offset, len);
        debug_assert_eq!(mix.len(), nn);
        if absent > 0.0 {
            self.absent_to(t, vma, self.k.cpu_node(cpu))
                .place(&mut mix, absent);
        }
        let total: f64 = mix.iter().sum();
        if total > 0.0 {
            // A node without pages stays 0 (0 / total is 0): on 16 nodes
            // most of a thread's range is on one or two, and the divisions
            // of the others were most of this.
            mix.iter_mut()
                .filter(|x| **x != 0.0)
                .for_each(|x| *x /= total);
        }
        (mix, absent, current, gen)
    }

    /// Where a first touch by task `t` from a CPU of node `cn` puts the
    /// pages of VMA `vma` not yet present, as [`Sim::op_mix`] counts them:
    /// spread over an interleave policy's nodes, on the first node of a
    /// bind or preferred policy that leaves `cn` out, else on `cn`.
    fn absent_to(&self, t: TaskId, vma: VmaId, cn: NodeId) -> AbsentTo {
        let pol = self.k.vma_policy(t, vma);
        match pol.mode {
            MpolMode::Interleave => AbsentTo::Interleave(pol.nodes),
            MpolMode::Bind | MpolMode::Preferred | MpolMode::PreferredMany
                if !pol.nodes.has(cn) =>
            {
                AbsentTo::Node(NodeId::new(pol.nodes.first().unwrap_or(cn.index())))
            }
            _ => AbsentTo::Node(cn),
        }
    }

    /// The demand of task `t` running `op` on `cpu`: its rate cap and the
    /// resources its bytes cross. Compute ops have no resources.
    pub(crate) fn op_demand(&mut self, t: TaskId, cpu: CpuId, op: &Op) -> Demand {
        let smt = self.smt_factor(cpu);
        match op {
            Op::Compute(_) | Op::Idle => Demand {
                cap: smt,
                uses: self.no_uses.clone(),
            },
            Op::Stream { .. } | Op::Random { .. } => {
                let cn = self.k.cpu_node(cpu);
                // A `write` stream is `bzero`-like: whole-line stores, no
                // read for ownership; random writes update part of a line.
                let (write, stores) = match op {
                    Op::Stream { write, .. } => (*write, Stores::FullLine),
                    Op::Random { write, .. } => (*write, Stores::WriteAllocate),
                    _ => (0.0, Stores::WriteAllocate),
                };
                let (lat, uses) = self.solved_demand(t, cpu, op, cn, write, stores);
                // Issue 9 item 3 (numalab.shared_line_transfers): lines other
                // cores hold Modified come by a cache-to-cache transfer.
                let lat = self.shared_line_latency(t, cpu, op, lat);
                let mlp = match op {
                    Op::Random { mlp, .. } => *mlp,
                    _ => {
                        self.k.m.bandwidth.core_gbps * self.k.m.latency_ns[cn.index()][cn.index()]
                            / CACHE_LINE
                    }
                };
                Demand {
                    cap: mlp * CACHE_LINE / lat * smt,
                    uses,
                }
            }
        }
    }

    /// The latency sum and traffic list of memory op `op` on `cpu` (of node
    /// `cn`), before shared lines: during a solve from another task that
    /// asked with the same [`SolveKey`] (one hash lookup); for a range with
    /// pages not yet present, from one whose policy puts them alike
    /// ([`AbsentTo`]: NUMA01's 160 threads first-touching one buffer under
    /// one policy ask it once per node); else [`Sim::placed_demand`]'s.
    fn solved_demand(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        op: &Op,
        cn: NodeId,
        write: f64,
        stores: Stores,
    ) -> (f64, Uses) {
        let vma = match op.range() {
            Some((vma, _, _)) if self.solving && self.share_solves => vma,
            _ => {
                let (lat, uses, _) = self.placed_demand(t, cpu, op, cn, write, stores);
                return (lat, uses);
            }
        };
        let key = SolveKey::of(self.k.tasks[t].mm, op, cn, write, stores);
        // A range with pages not yet present: where this task puts them.
        let placing = match self.solve_ranges.get(&key) {
            Some(SolvedRange::Settled(lat, uses)) => return (*lat, uses.clone()),
            Some(SolvedRange::Placing(asked)) => {
                let to = self.absent_to(t, vma, cn);
                if let Some((_, lat, uses)) = asked.iter().find(|e| e.0 == to) {
                    return (*lat, uses.clone());
                }
                Some(to)
            }
            None => None,
        };
        let (lat, uses, settled) = self.placed_demand(t, cpu, op, cn, write, stores);
        if settled {
            self.solve_ranges
                .insert(key, SolvedRange::Settled(lat, uses.clone()));
        } else {
            let to = placing.unwrap_or_else(|| self.absent_to(t, vma, cn));
            let entry = self
                .solve_ranges
                .entry(key)
                .or_insert_with(|| SolvedRange::Placing(SmallVec::new()));
            if let SolvedRange::Placing(asked) = entry {
                asked.push((to, lat, uses.clone()));
            }
        }
        (lat, uses)
    }

    /// The parts of memory op `op`'s demand on `cpu` (of node `cn`) that
    /// follow from where its range's pages are: the latency sum before
    /// shared lines (this tick's latencies), the traffic list, and whether
    /// every page of the range is present (then no policy or CPU placed any
    /// of it). A range with all its pages present has its node mix and
    /// traffic list kept in task `t`'s memo ([`DemandMemo`]) from tick to
    /// tick while the VMA's page version holds, or the range still reads
    /// the same mix ([`MixEntry::gen`]), so a task asking again only sums
    /// the latencies.
    fn placed_demand(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        op: &Op,
        cn: NodeId,
        write: f64,
        stores: Stores,
    ) -> (f64, Uses, bool) {
        let place = DemandPlace::of(op, cn, write, stores);
        let version = place.map_or(0, |p| {
            self.k.mem.mms[self.k.tasks[t].mm].vmas[p.vma].version
        });
        let memo = &self.exec[t].memo.demands;
        // One entry per place: an older page version never comes back, so
        // a new one takes its place.
        let found = place.and_then(|p| memo.iter().position(|e| e.place == p));
        if let (Some(i), Some(p)) = (found, place) {
            let e = &memo[i];
            let holds = e.version == version && e.holds(self.tick_start);
            // Another version, but the pages it reads are still those the
            // entry was made from (the range's mix is recomputed at most
            // once a tick): the entry a rebuild would make, but for its
            // version stamp.
            let same_pages = if holds {
                None
            } else {
                let gen = e.gen;
                self.range_gen(self.k.tasks[t].mm, p.vma, p.offset, p.len)
                    .filter(|&(g, _)| g == gen)
            };
            if holds || same_pages.is_some() {
                let e = &mut self.exec[t].memo.demands[i];
                if let Some((_, current)) = same_pages {
                    (e.version, e.current, e.tick) = (version, current, self.tick_start);
                }
                self.demand_gen = e.gen;
                let lat = latency_sum(&e.mix, &self.fluid.latency[cn.index()]);
                return (lat, e.uses.clone(), true);
            }
        }
        let (mix, absent, current, gen) = self.op_mix(t, cpu, op);
        self.demand_gen = gen;
        let uses = self.op_traffic(t, cn, &mix, write, stores);
        let lat = latency_sum(&mix, &self.fluid.latency[cn.index()]);
        let settled = absent == 0.0;
        // Only a range with every page present is kept: a policy or the
        // CPU places the others.
        if let Some(place) = place.filter(|_| settled) {
            let e = DemandMemo {
                place,
                version,
                gen,
                mix,
                uses: uses.clone(),
                current,
                tick: self.tick_start,
            };
            let memo = &mut self.exec[t].memo.demands;
            match found {
                Some(i) => memo[i] = e,
                None => {
                    memo_put(memo, e);
                }
            }
        }
        (lat, uses, settled)
    }

    /// The resources an op's bytes load, share `mix` of them on each node,
    /// touched from `cn`, `write` of them written by `stores`: what
    /// [`crate::physics::Resources::traffic`] gives node by node, taken
    /// from task `t`'s [`TrafficMemo`] when it has these inputs.
    fn op_traffic(
        &mut self,
        t: TaskId,
        cn: NodeId,
        mix: &[f64],
        write: f64,
        stores: Stores,
    ) -> Uses {
        let key = TrafficMemo::key(cn, mix, write, stores);
        let memo = &mut self.exec[t].traffic;
        if let Some(e) = memo.iter().find(|e| e.holds(key, cn, mix, write, stores)) {
            return e.uses.clone();
        }
        // Room for a memory controller and a route each way per node.
        let mut uses = std::mem::take(&mut self.uses_scratch);
        uses.clear();
        uses.reserve(4 * mix.len());
        for (n, &f) in NodeId::range(mix.len()).zip(mix) {
            if f > 0.0 {
                self.fluid.res.traffic(n, cn, f, write, stores, &mut uses);
            }
        }
        let shared: Rc<[_]> = Rc::from(&uses[..]);
        self.uses_scratch = uses;
        let memo = &mut self.exec[t].traffic;
        let mut e = if memo.len() >= TRAFFIC_ENTRIES {
            memo.remove(0)
        } else {
            TrafficMemo::default()
        };
        e.fill(key, cn, mix, write, stores, shared.clone());
        memo.push(e);
        shared
    }

    /// Throughput share of one hardware thread given how many of its core's
    /// siblings are busy.
    pub(super) fn smt_factor(&self, cpu: CpuId) -> f64 {
        let busy = self.k.sched.busy_smt_siblings(cpu);
        if busy <= 1 {
            1.0
        } else {
            self.k.m.bandwidth.smt_throughput / busy as f64
        }
    }

    /// A rate for `op` outside the tick's solve: its cap scaled by how much
    /// of their demand the resources it uses could serve last tick.
    fn quick_rate(&mut self, t: TaskId, cpu: CpuId, op: &Op) -> f64 {
        // A CPU-only op crosses no resource: its rate is its demand's cap,
        // the SMT share (op_demand's), without building the demand.
        if matches!(op, Op::Compute(_) | Op::Idle) {
            return self.smt_factor(cpu);
        }
        let d = self.op_demand(t, cpu, op);
        let share = d
            .uses
            .iter()
            .map(|&(r, _)| self.fluid.res_share[r])
            .fold(1.0, f64::min);
        d.cap * share
    }

    /// Runs task `t` on `cpu` from now for at most `budget` ns. Returns the
    /// time used and why it stopped. Progress, faults and time accounting
    /// are applied as it goes.
    pub(crate) fn run_task(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        budget: f64,
    ) -> Result<(f64, Stop), String> {
        let mut left = budget;
        // Kernel work owed from before is paid first.
        let mut paid = 0.0;
        let smt = self.smt_factor(cpu).to_bits();
        let stamp = MemoStamp {
            tick: self.tick_start,
            cpu,
            epoch: self.policy_epoch,
        };
        if self.exec[t].memo.stamp != Some(stamp) {
            // Cleared in place: the vectors keep their room for the next tick.
            let memo = &mut self.exec[t].memo;
            let same_place = memo
                .stamp
                .is_some_and(|s| s.cpu == stamp.cpu && s.epoch == stamp.epoch);
            memo.stamp = Some(stamp);
            memo.rates.clear();
            if same_place {
                // A new tick on the same CPU: mixes of the VMAs' current
                // versions still hold (see MixMemo).
                memo.mixes.retain(|e| e.current);
            } else {
                memo.mixes.clear();
            }
        }
        // The op in progress is held here while the task runs and stored
        // back when it stops. Nothing reads the running task's `exec[t].op`
        // meanwhile (a fault looks at the other CPUs' tasks' ops; this
        // one's was `Op::Idle` while it ran an op before too), so it no
        // longer goes back and forth through it at every turn.
        let mut op = std::mem::replace(&mut self.exec[t].op, Op::Idle);
        let stop = loop {
            // Each turn is an engine step (budget.rs): a storm of tiny
            // phases shows up here, not as queue events.
            self.steps += 1;
            let debt = self.k.owed[t].debt_ns;
            if debt > 0.0 {
                let p = debt.min(left.max(0.0));
                self.k.owed[t].debt_ns -= p;
                left -= p;
                paid += p;
                if self.k.owed[t].debt_ns > 0.0 {
                    break Stop::Horizon;
                }
            }
            // A wait on a folio under migration (numalab.migration_entry_sleep):
            // off the CPU until woken, the op resumes where it stopped.
            let sleep = std::mem::take(&mut self.k.owed[t].sleep_ns);
            if sleep > 0.0 {
                self.exec[t].rate_fresh = false;
                break Stop::Sleep((sleep.round() as u64).max(1));
            }
            if left <= 0.0 {
                break Stop::Horizon;
            }
            if matches!(op, Op::Idle) {
                // numalab real run's sleep loop: woken before the phase's
                // end, it checks the clock and sleeps again.
                if let Some(until) = self.exec[t].nap_until {
                    let now = self.k.now + (budget - left).max(0.0) as u64;
                    if now < until {
                        break Stop::Sleep((until - now).min(self.sleep_slice_ns));
                    }
                    self.exec[t].nap_until = None;
                }
                match self.clone_step(t) {
                    Some(CloneStep::Block) => break Stop::Block,
                    Some(CloneStep::Create(j)) => break Stop::Clone(j),
                    Some(CloneStep::Charged) => continue,
                    None => {}
                }
                // A kworker (proposal 2) runs its queued items, not phases.
                match self.kworker_next(t, cpu) {
                    Some(true) => continue,
                    Some(false) => break Stop::Block,
                    None => {}
                }
                // At the end of an iteration: the whole ones that fit in
                // the tick at once (engine/fast_forward.rs).
                left -= self.fast_forward_iterations(t, cpu, left);
                match self.next_phase(t) {
                    Next::Op(o) => {
                        // A /proc reader's work holds the workload's mms
                        // (engine/background.rs).
                        if self.exec[t].mm_refs.is_some() {
                            self.proc_mm_refs(t, matches!(o, Op::Compute(_)));
                        }
                        self.exec[t].rate_fresh = false;
                        if left <= 0.0 {
                            op = o;
                            continue;
                        }
                        // The next turn's checks would pass as this turn's
                        // did (nothing since paid or owed kernel time, and
                        // time is left): the op runs now, as that turn.
                        self.steps += 1;
                        op = o;
                    }
                    // The runner's loop is the workload's threads'; the
                    // background's (kernel threads, the runner's coordinator)
                    // sleep their period whole.
                    Next::Sleep(ns)
                        if self.sleep_slice_ns > 0
                            && ns > self.sleep_slice_ns
                            && !self.k.tasks[t].kthread =>
                    {
                        let now = self.k.now + (budget - left).max(0.0) as u64;
                        self.exec[t].nap_until = Some(now + ns);
                        break Stop::Sleep(self.sleep_slice_ns);
                    }
                    Next::Sleep(ns) => {
                        if self.exec[t].mm_refs.is_some() {
                            self.proc_mm_refs(t, false);
                        }
                        break Stop::Sleep(ns);
                    }
                    Next::Exit => break Stop::Exit,
                    Next::Barrier(b) => break Stop::Barrier(b),
                    Next::SetMempolicy(p) => {
                        self.set_mempolicy(t, p.as_ref())?;
                        self.forget_memos(t);
                        continue;
                    }
                    Next::Control(ph) => {
                        self.control_phase(t, &ph)?;
                        self.forget_memos(t);
                        continue;
                    }
                    Next::SetAffinity(s) => {
                        self.sched_setaffinity(t, s);
                        self.forget_memos(t);
                        if !self.k.task_allowed_cpus(t).has(cpu) {
                            break Stop::Migrate;
                        }
                        continue;
                    }
                }
            }
            if !self.exec[t].rate_fresh {
                let key = RateKey::of(
                    &op,
                    |vma| self.k.mem.mms[self.k.tasks[t].mm].vmas[vma].version,
                    smt,
                );
                let kept = key.map_or(KeptRate::None, |k| self.exec[t].memo.kept_rate(&k));
                self.exec[t].rate = match kept {
                    KeptRate::Exact(rate) => rate,
                    _ => {
                        // A rate kept at another page version whose range
                        // still reads the same pages is the one quick_rate
                        // would give (RateKey).
                        let (rate, gen) = match kept {
                            KeptRate::OtherVersion(rate, gen)
                                if self.op_range_gen(t, &op) == gen =>
                            {
                                (rate, gen)
                            }
                            _ => (self.quick_rate(t, cpu, &op), self.demand_gen),
                        };
                        if let Some(k) = key {
                            self.exec[t].memo.put_rate(k, rate, gen);
                        }
                        rate
                    }
                };
                self.exec[t].rate_fresh = true;
            }
            let rate = self.exec[t].rate.max(1e-9);
            let (used, op_after) = match op {
                Op::Compute(w) => {
                    let need = w / rate;
                    if need <= left {
                        (need, Op::Idle)
                    } else {
                        (left, Op::Compute(w - left * rate))
                    }
                }
                Op::Stream { .. } => self.advance_stream(t, cpu, op, rate, left)?,
                Op::Random { .. } => self.advance_random(t, cpu, op, rate, left)?,
                Op::Idle => (0.0, Op::Idle),
            };
            left -= used;
            let done = matches!(op_after, Op::Idle);
            op = op_after;
            if done {
                self.exec[t].rate_fresh = false;
            }
        };
        self.exec[t].op = op;
        // Kernel work charged during this span (faults) was added to debt;
        // pay what fits.
        let debt = self.k.owed[t].debt_ns;
        if debt > 0.0 && left > 0.0 {
            let p = debt.min(left);
            self.k.owed[t].debt_ns -= p;
            left -= p;
            paid += p;
        }
        let used = (budget - left.max(0.0)).max(0.0);
        paid += std::mem::take(&mut self.paid_in_op);
        let user = (used - paid).max(0.0);
        let task = &mut self.k.tasks[t];
        if task.kthread {
            // A kernel thread's work is system time, outside any cgroup
            // the record reports (background.rs).
            task.sys_ns += user;
        } else {
            task.user_ns += user;
            let cg = task.cgroup;
            self.k.cgroups.all[cg].user_ns += user;
        }
        self.k.update_curr(t, used.round() as u64);
        Ok((used, stop))
    }

    /// Streams forward; stops at special pages to fault them in.
    fn advance_stream(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        op: Op,
        rate: f64,
        budget: f64,
    ) -> Result<(f64, Op), String> {
        let Op::Stream {
            vma,
            offset,
            len,
            mut pos,
            mut passes,
            write,
        } = op
        else {
            unreachable!()
        };
        let mm = self.k.tasks[t].mm;
        let shift = self.k.mem.mms[mm].vmas[vma].page_shift;
        let lenf = len as f64;
        let mut left = budget;
        let mut bytes = 0.0;
        while passes > 0 && left > 0.0 && self.k.owed[t].debt_ns <= 0.0 {
            let cur = offset + pos as u64;
            let first = (cur >> shift) as usize;
            let last = page_span(offset, len, shift).1;
            // Fast path: nothing to fault in the rest of this pass.
            let v = &self.k.mem.mms[mm].vmas[vma];
            let special = v.next_special(first, last);
            let stop_at = match special {
                Some(p) => (((p as u64) << shift).max(offset) - offset) as f64,
                None => lenf,
            };
            let gap = (stop_at - pos).max(0.0);
            let need = gap / rate;
            if need > left {
                let adv = left * rate;
                pos += adv;
                bytes += adv;
                left = 0.0;
                break;
            }
            pos = stop_at;
            bytes += gap;
            left -= need;
            if let Some(p) = special {
                let at = Some((offset, len, offset + pos as u64));
                self.fault_page(t, cpu, vma, p, at, write > 0.0)?;
                self.close_stall(t, true);
                let pay = self.k.owed[t].debt_ns.min(left);
                self.k.owed[t].debt_ns -= pay;
                left -= pay;
                self.paid_in_op += pay;
                continue;
            }
            // End of a pass.
            passes -= 1;
            pos = 0.0;
            if special.is_none() && passes > 0 {
                // Whole passes that fit, all fault-free.
                let pass_t = lenf / rate;
                let full = ((left / pass_t).floor() as u64).min(passes - 1);
                let (from, to) = page_span(offset, len, shift);
                if full > 0 && self.k.mem.mms[mm].vmas[vma].special_in(from, to) == 0 {
                    passes -= full;
                    left -= full as f64 * pass_t;
                    bytes += full as f64 * lenf;
                }
            }
        }
        if bytes > 0.0 {
            // Lines of the stream, each taking the core's lines in flight
            // over the rate (Little's law, as op_demand's cap).
            let cn = self.k.cpu_node(cpu).index();
            let mlp = self.k.m.bandwidth.core_gbps * self.k.m.latency_ns[cn][cn] / CACHE_LINE;
            self.lat_accesses(
                t,
                bytes / CACHE_LINE,
                mlp * CACHE_LINE / rate,
                write,
                bytes / rate,
            );
        }
        self.account_bytes(t, cpu, vma, offset, len, bytes);
        let used = budget - left;
        let op = if passes == 0 {
            Op::Idle
        } else {
            Op::Stream {
                vma,
                offset,
                len,
                pos,
                passes,
                write,
            }
        };
        Ok((used, op))
    }

    /// Random accesses: as many as the time allows; special pages they
    /// reach are faulted per chunk in expectation.
    fn advance_random(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        op: Op,
        rate: f64,
        budget: f64,
    ) -> Result<(f64, Op), String> {
        let Op::Random {
            vma,
            offset,
            len,
            left: acc_left,
            dist,
            mlp,
            write,
        } = op
        else {
            unreachable!()
        };
        let per_ns = rate / CACHE_LINE;
        let can = budget * per_ns;
        let n = can.min(acc_left);
        let used = n / per_ns;
        let mm = self.k.tasks[t].mm;
        let v = &self.k.mem.mms[mm].vmas[vma];
        let shift = v.page_shift;
        let (from, to) = page_span(offset, len, shift);
        let npages = (to - from) as f64;
        let mut faults: Vec<usize> = Vec::new();
        if v.nr_special > 0 && n > 0.0 && n <= DIRECT_SAMPLE_MAX_ACCESSES {
            // Few accesses: place them one by one, a Poisson number of them
            // at positions drawn from the distribution. Every page is then
            // touched with probability 1 - exp(-n x its share), as in the
            // chunk walk below, at a cost that does not grow with the range
            // (the walk visits every page of every chunk holding a special
            // page: millions per op on a large scanned region).
            let k = poisson(&mut self.rng, n);
            let inverse = DistInverse::new(&dist);
            for _ in 0..k {
                let x = inverse.at(self.rng.gen::<f64>());
                let q = (from + (x * npages) as usize).min(to - 1);
                if v.is_special(q) && !faults.contains(&q) {
                    faults.push(q);
                }
            }
        } else if v.nr_special > 0 && n > 0.0 && dist == Distribution::Uniform {
            // Uniform: every page is touched with the same probability, so
            // the gaps between touched special pages are one geometric
            // sequence over the whole range, skipped a chunk at a time
            // where whole chunks fall in a gap (a random op over GiBs draws
            // once per fault, not once per chunk holding a special page).
            let g = Geometric::new(1.0 - (-(n / npages)).exp());
            let mut q = from;
            // Special pages left in [q, to), known when the range is the
            // whole VMA: a gap past them ends the walk without a search to
            // the end (between scans a few special pages are left, and
            // every task's last draw of every tick walked all their
            // chunks). The draws are the same.
            let mut left = if from == 0 && to == v.pages.len() {
                v.nr_special
            } else {
                u64::MAX
            };
            loop {
                let k = g.sample(&mut self.rng);
                if k >= left {
                    break;
                }
                let Some(x) = v.nth_special_far(q, to, k) else {
                    break;
                };
                faults.push(x);
                q = x + 1;
                left = left.saturating_sub(k + 1);
            }
        } else if v.nr_special > 0 && n > 0.0 {
            // Only chunks holding a special page, and only their special
            // pages, are visited (through the VMA's bitmaps): the same
            // draws in the same order as a walk over every page, at a cost
            // that follows the special pages, not the range (a 64-thread
            // random workload over GiBs otherwise spends its run here).
            let ppc = v.pages_per_chunk;
            let mut p = from;
            // Whole chunks of a uniform range share one per-page rate: its
            // probability and log are worked out once.
            let mut last: Option<(u64, Geometric)> = None;
            while let Some(s) = v.next_special(p, to) {
                let c = s / ppc;
                let cstart = (c * ppc).max(from);
                let end = ((c + 1) * ppc).min(to);
                let a = (cstart - from) as f64 / npages;
                let b = (end - from) as f64 / npages;
                let mass = dist_mass(&dist, a, b);
                let per_page = n * mass / (end - cstart) as f64;
                let g = match last {
                    Some((bits, g)) if bits == per_page.to_bits() => g,
                    _ => {
                        let g = Geometric::new(1.0 - (-per_page).exp());
                        last = Some((per_page.to_bits(), g));
                        g
                    }
                };
                // Each special page is touched with probability `prob`,
                // independently: the gaps between touched ones are
                // geometric, so draw the gaps and skip the untouched pages
                // a bitmap word at a time.
                let mut q = s;
                while let Some(x) = v.nth_special(q, end, g.sample(&mut self.rng)) {
                    faults.push(x);
                    q = x + 1;
                }
                p = end;
            }
        }
        // The pages' states are prefetched a few faults ahead: a random
        // fault's page is a cache miss (Vma::prefetch_page).
        const PREFETCH_AHEAD: usize = 4;
        let v = &self.k.mem.mms[mm].vmas[vma];
        for &q in faults.iter().take(PREFETCH_AHEAD) {
            v.prefetch_page(q);
        }
        for i in 0..faults.len() {
            if let Some(&ahead) = faults.get(i + PREFETCH_AHEAD) {
                self.k.mem.mms[mm].vmas[vma].prefetch_page(ahead);
            }
            self.fault_page(t, cpu, vma, faults[i], None, write > 0.0)?;
            self.close_stall(t, true);
        }
        // pmbench's timed accesses (engine/latency.rs): `mlp` in flight at
        // `per_ns` accesses per ns, so each takes mlp / per_ns.
        self.lat_accesses(t, n, mlp / per_ns, write, n / per_ns);
        self.account_bytes(t, cpu, vma, offset, len, n * CACHE_LINE);
        let rest = acc_left - n;
        let op = if rest < 0.5 {
            Op::Idle
        } else {
            Op::Random {
                vma,
                offset,
                len,
                left: rest,
                dist,
                mlp,
                write,
            }
        };
        Ok((used, op))
    }

    /// Adds `bytes` of traffic by `t` over a range to the per-node and
    /// per-task counters, split by the range's node mix.
    pub(super) fn account_bytes(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        vma: VmaId,
        offset: u64,
        len: u64,
        bytes: f64,
    ) {
        if bytes <= 0.0 {
            return;
        }
        let local = self.k.cpu_node(cpu);
        let i = self.byte_mix(t, local, vma, offset, len);
        let ex = &mut self.exec[t];
        let MixMemo { mix, total, .. } = &ex.memo.mixes[i];
        let total = *total;
        if total > 0.0 {
            let by_task = &mut ex.bytes_by_node;
            let by_node = &mut self.fluid.node_traffic;
            let (mut local_bytes, mut all_bytes) = (self.interval_local_bytes, self.interval_bytes);
            for (n, &f) in mix.iter().enumerate() {
                // A node with none of the range's pages gets 0 bytes,
                // and adding 0 to these sums (never -0) leaves them as
                // they are: skipped.
                if f == 0.0 {
                    continue;
                }
                let b = bytes * f / total;
                by_task[n] += b;
                by_node[n] += b;
                if n == local.index() {
                    local_bytes += b;
                }
                all_bytes += b;
            }
            (self.interval_local_bytes, self.interval_bytes) = (local_bytes, all_bytes);
        }
    }

    /// The index in task `t`'s memo of the range's pages per node (absent
    /// ones where a first touch from node `local` puts them), remembered
    /// for the rest of the tick while the VMA's pages stay as they are,
    /// and past a new page version while the range reads the same mix
    /// (see TaskMemo). One entry per range: an older version never comes
    /// back.
    fn byte_mix(&mut self, t: TaskId, local: NodeId, vma: VmaId, offset: u64, len: u64) -> usize {
        let mm = self.k.tasks[t].mm;
        let key = (vma, offset, len, self.k.mem.mms[mm].vmas[vma].version);
        let mixes = &self.exec[t].memo.mixes;
        if let Some(i) = mixes.iter().position(|e| e.key == key) {
            return i;
        }
        let old = mixes.iter().position(|e| {
            let (v, o, l, _) = e.key;
            (v, o, l) == (vma, offset, len)
        });
        if let Some(i) = old {
            // Another version, but the range still reads the pages the
            // entry was made from: the entry a rebuild would make, but for
            // its version stamp.
            let gen = self.exec[t].memo.mixes[i].gen;
            if let Some((_, current)) = self
                .range_gen(mm, vma, offset, len)
                .filter(|&(g, _)| g == gen)
            {
                let e = &mut self.exec[t].memo.mixes[i];
                (e.key, e.current) = (key, current);
                return i;
            }
        }
        let (mut mix, absent, current, gen) = self.range_pages_current(mm, vma, offset, len);
        if absent > 0.0 {
            self.absent_to(t, vma, local).place(&mut mix, absent);
        }
        let total: f64 = mix.iter().sum();
        let e = MixMemo {
            key,
            mix,
            total,
            current,
            gen,
        };
        let mixes = &mut self.exec[t].memo.mixes;
        match old {
            Some(i) => {
                mixes[i] = e;
                i
            }
            None => memo_put(mixes, e),
        }
    }

    /// Pages per node of a VMA range (whole chunks), pages not present, and
    /// whether they are those of the VMA's current page version (false: a
    /// mix computed earlier this tick), and the mix's [`MixEntry::gen`].
    /// Cached per range: recomputed when
    /// the VMA's pages changed, but at most once per tick, so inside one
    /// tick a range's mix may be up to one tick stale (the same bound as
    /// the eager run-to-tick engine).
    fn range_pages_current(
        &mut self,
        mm: MmId,
        vma: VmaId,
        offset: u64,
        len: u64,
    ) -> (NodeVec, f64, bool, u64) {
        let key = (mm, vma, offset, len);
        let v = &self.k.mem.mms[mm].vmas[vma];
        if let Some(e) = self.mix_cache.get(&key) {
            if e.version == v.version || e.at == self.tick_start {
                let current = e.version == v.version;
                return (NodeVec::from_slice(&e.pages), e.absent, current, e.gen);
            }
        }
        let shift = v.page_shift;
        let (from, to) = page_span(offset, len, shift);
        let mut pages = NodeVec::from_elem(0.0, self.k.m.nr_nodes());
        let absent = v.node_pages_in(from, to, &mut pages);
        self.mix_gens += 1;
        let gen = self.mix_gens;
        let e = MixEntry {
            version: v.version,
            at: self.tick_start,
            pages: NodeVec::from_slice(&pages),
            absent,
            gen,
        };
        self.mix_cache.insert(key, e);
        (pages, absent, true, gen)
    }

    /// [`Sim::range_gen`] of task `t`'s op `op`'s range, 0 when it has none
    /// or the mix would be made anew (no generation is 0).
    fn op_range_gen(&self, t: TaskId, op: &Op) -> u64 {
        op.range()
            .and_then(|(vma, offset, len)| self.range_gen(self.k.tasks[t].mm, vma, offset, len))
            .map_or(0, |(gen, _)| gen)
    }

    /// The [`MixEntry::gen`] of the mix [`Sim::range_pages_current`] would
    /// give for this range now, without making one, and whether it is the
    /// VMA's current version's; `None` when it would make one. Memos kept
    /// at an older page version whose generation this is still hold: the
    /// range reads the same pages.
    fn range_gen(&self, mm: MmId, vma: VmaId, offset: u64, len: u64) -> Option<(u64, bool)> {
        if !self.memo_by_pages {
            return None;
        }
        let version = self.k.mem.mms[mm].vmas[vma].version;
        self.mix_cache
            .get(&(mm, vma, offset, len))
            .filter(|e| e.version == version || e.at == self.tick_start)
            .map(|e| (e.gen, e.version == version))
    }
}

/// What [`Sim::quick_rate`] of a random op depends on besides the tick's
/// solve (latencies and served shares), the task, its CPU and its SMT
/// siblings (see [`TaskMemo`]): the range, the op's
/// misses in flight and write share, and the VMA's page version (a fault
/// or migration that moves a page bumps it): a rate kept at an older
/// version still holds while its range reads the same mix
/// ([`TaskMemo::kept_rate`], [`MixEntry::gen`]). Streams are left out:
/// their shared-line cost depends on their position.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct RateKey {
    vma: VmaId,
    offset: u64,
    len: u64,
    mlp: u64,
    write: u64,
    version: u64,
    /// The SMT factor's bits (its siblings' load): a request loop's task
    /// finds its sibling busy or idle from one wakeup to the next.
    smt: u64,
}

impl RateKey {
    /// The key of a random op (its `mlp` and `write` as the op holds
    /// them) on a CPU whose SMT factor has bits `smt`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn random(
        vma: VmaId,
        offset: u64,
        len: u64,
        mlp: f64,
        write: f64,
        version: u64,
        smt: u64,
    ) -> RateKey {
        RateKey {
            vma,
            offset,
            len,
            mlp: mlp.to_bits(),
            write: write.to_bits(),
            version,
            smt,
        }
    }

    /// Equal but for the page version.
    fn same_but_version(&self, k: &RateKey) -> bool {
        RateKey {
            version: k.version,
            ..*self
        } == *k
    }

    fn of(op: &Op, version: impl Fn(VmaId) -> u64, smt: u64) -> Option<RateKey> {
        match *op {
            Op::Random {
                vma,
                offset,
                len,
                mlp,
                write,
                ..
            } => Some(RateKey::random(
                vma,
                offset,
                len,
                mlp,
                write,
                version(vma),
                smt,
            )),
            _ => None,
        }
    }
}

/// What a task already worked out: the rates of its last few random ops
/// (this tick) and the node mixes of the ranges it accounted bytes to. A
/// task looping over short requests (OLTP, SPECjbb) starts the same ops
/// again and again inside one tick, often across sleeps, and neither can
/// have changed while the [`MemoStamp`] holds and the VMA's page version
/// (in the keys) is the same, or the range still reads the mix the entry
/// was made from ([`MixEntry::gen`]): the tick's solve (latencies, served shares,
/// shared writers) is fixed, and so is the CPU; the SMT siblings' load
/// is in the rate keys. Rates are forgotten when the stamp differs at the
/// start of a `run_task` call; mixes only when its CPU or the policy epoch
/// does (a streaming task accounts to the same range tick after tick, see
/// [`MixMemo`]). Both go when a phase changes a policy, an affinity or a
/// cgroup.
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskMemo {
    stamp: Option<MemoStamp>,
    /// Each with the [`MixEntry::gen`] of its range's mix.
    rates: Vec<(RateKey, f64, u64)>,
    mixes: Vec<MixMemo>,
    /// Node mixes and traffic lists of its ops' ranges, kept across ticks
    /// and CPUs (the CPU's node is in the key).
    demands: Vec<DemandMemo>,
}

/// What [`Sim::placed_demand`] keeps of a range whose pages are all
/// present: its node mix (normalised) and traffic list from a CPU of node
/// `cn`. Neither depends on the tick's solve, a policy or the CPU beyond
/// its node, only on the pages, which the VMA's page version stands for:
/// an entry made from the pages of the version it names (`current`) holds
/// at any later tick while that version does; one made from a mix
/// [`Sim::range_pages_current`] computed earlier in the tick (a page moved since)
/// holds for the rest of that tick only, as that mix does. Either holds
/// at a later version too while the range is still given the mix of the
/// entry's [`MixEntry::gen`].
#[derive(Clone, Debug)]
struct DemandMemo {
    place: DemandPlace,
    /// The VMA's page version the mix was made at.
    version: u64,
    /// The range mix's [`MixEntry::gen`].
    gen: u64,
    mix: NodeVec,
    uses: Uses,
    current: bool,
    /// Tick start it was made at.
    tick: u64,
}

impl DemandMemo {
    /// Whether the entry still gives what building it would, at the tick
    /// that started at `tick`.
    fn holds(&self, tick: u64) -> bool {
        self.current || self.tick == tick
    }
}

/// A memory op's range, the node of the CPU it runs on, its write share's
/// bits and its kind of stores: with the VMA's page version, the inputs of
/// a [`DemandMemo`].
#[derive(Clone, Copy, Debug, PartialEq)]
struct DemandPlace {
    vma: VmaId,
    offset: u64,
    len: u64,
    cn: NodeId,
    write: u64,
    stores: Stores,
}

impl DemandPlace {
    /// The place of memory op `op` (`None` for a CPU-only op) on a CPU of
    /// node `cn`.
    fn of(op: &Op, cn: NodeId, write: f64, stores: Stores) -> Option<DemandPlace> {
        let (vma, offset, len) = op.range()?;
        Some(DemandPlace {
            vma,
            offset,
            len,
            cn,
            write: write.to_bits(),
            stores,
        })
    }
}

/// The latency of an access to a range with node mix `mix` from a CPU
/// whose row of the latency matrix (ns) is `row`, at least 1 ns.
fn latency_sum(mix: &[f64], row: &[f64]) -> f64 {
    // Nodes without a share add +0.0, which changes no sum with a nonzero
    // term, and an all-zero sum is raised to 1 ns either way: skipped.
    mix.iter()
        .zip(row)
        .filter(|(f, _)| **f != 0.0)
        .map(|(f, l)| f * l)
        .sum::<f64>()
        .max(1.0)
}

/// Puts `x` at the back of memo list `v`, dropping the oldest entry once
/// it holds [`MEMO_ENTRIES`]; returns its index.
fn memo_put<T>(v: &mut Vec<T>, x: T) -> usize {
    if v.len() >= MEMO_ENTRIES {
        // A short list: shifting it is cheaper than a ring's split reads.
        v.remove(0);
    }
    v.push(x);
    v.len() - 1
}

/// (VMA, offset, length, page version) -> pages per node, their sum, and
/// whether they are those of that version. A VMA's version only grows, so
/// a mix of the version a range has is what `range_pages_current` gives for it at
/// any later tick while the version stays (an entry it computed in a tick
/// has at least the version the tick started with): such entries are kept
/// from tick to tick on the same CPU. A mix `range_pages_current` gave one tick
/// stale (a page moved since it was computed this tick) holds only for
/// the rest of that tick.
#[derive(Clone, Debug)]
struct MixMemo {
    /// (VMA, offset, length, page version).
    key: (VmaId, u64, u64, u64),
    mix: NodeVec,
    /// The mix's sum.
    total: f64,
    /// Made from the pages of the version in `key`.
    current: bool,
    /// The range mix's [`MixEntry::gen`].
    gen: u64,
}

/// What [`TaskMemo::kept_rate`] found.
enum KeptRate {
    /// The rate of the key as asked.
    Exact(f64),
    /// A rate at another page version, and its range mix's generation.
    OtherVersion(f64, u64),
    None,
}

/// When a [`TaskMemo`] was filled.
#[derive(Clone, Copy, Debug, PartialEq)]
struct MemoStamp {
    /// Tick start.
    tick: u64,
    cpu: CpuId,
    /// [`Sim::policy_epoch`].
    epoch: u64,
}

/// Distinct ops and ranges remembered per task.
const MEMO_ENTRIES: usize = 12;

impl TaskMemo {
    pub(super) fn rate(&self, k: &RateKey) -> Option<f64> {
        self.rates.iter().find(|e| e.0 == *k).map(|e| e.1)
    }

    /// What is kept for `k`, in one pass: its rate, or else the latest
    /// rate kept for it at another page version with the
    /// [`MixEntry::gen`] of the range mix that rate was made from. Versions
    /// only grow and entries are added in time order, so the latest entry
    /// equal but for the version is `k`'s own if there is one.
    fn kept_rate(&self, k: &RateKey) -> KeptRate {
        match self.rates.iter().rev().find(|e| e.0.same_but_version(k)) {
            Some(e) if e.0.version == k.version => KeptRate::Exact(e.1),
            Some(e) if e.2 != 0 => KeptRate::OtherVersion(e.1, e.2),
            _ => KeptRate::None,
        }
    }

    fn put_rate(&mut self, k: RateKey, rate: f64, gen: u64) {
        memo_put(&mut self.rates, (k, rate, gen));
    }
}

impl Sim {
    /// A phase changed a policy, an affinity or a cgroup: every task's
    /// memo is stale ([`TaskMemo`]).
    fn forget_memos(&mut self, t: TaskId) {
        self.policy_epoch += 1;
        self.exec[t].memo = TaskMemo::default();
    }
}

/// The resources one memory op loaded, and the inputs they follow from
/// alone: the op's node mix, its CPU's node, its write share and store
/// kind (the machine's routes and coherence parameters are fixed for the
/// run). A streaming task asks the same at every tick while its pages
/// stay where they are; building the list walks every node's route and
/// coherence messages (physics/coherence.rs `line_traffic`). Inputs are
/// compared bit for bit, so a kept list is exactly the one building would
/// give.
#[derive(Clone, Debug)]
struct TrafficMemo {
    /// [`TrafficMemo::key`] of the inputs: most entries that do not hold
    /// are told apart by it alone, without reading their mix.
    key: u64,
    cn: NodeId,
    write: u64,
    stores: Stores,
    mix: NodeVec,
    uses: Uses,
}

impl Default for TrafficMemo {
    fn default() -> Self {
        TrafficMemo {
            key: 0,
            cn: NodeId::new(0),
            write: 0,
            stores: Stores::WriteAllocate,
            mix: NodeVec::new(),
            uses: Rc::from([]),
        }
    }
}

impl TrafficMemo {
    /// A fingerprint of the inputs, bit for bit (equal inputs give equal
    /// keys; unequal ones almost never do, and [`TrafficMemo::holds`]
    /// still compares them whole).
    #[inline]
    fn key(cn: NodeId, mix: &[f64], write: f64, stores: Stores) -> u64 {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let step = |h: u64, x: u64| (h.rotate_left(5) ^ x).wrapping_mul(K);
        let h = step(step(cn.index() as u64, write.to_bits()), stores as u64);
        // The nonzero shares and where they are (a 16-node mix is mostly
        // zeros): still a fingerprint of the whole mix with its length.
        let h = step(h, mix.len() as u64);
        mix.iter()
            .enumerate()
            .filter(|(_, x)| x.to_bits() != 0)
            .fold(h, |h, (n, x)| step(step(h, n as u64), x.to_bits()))
    }

    #[inline]
    fn holds(&self, key: u64, cn: NodeId, mix: &[f64], write: f64, stores: Stores) -> bool {
        self.key == key
            && self.cn == cn
            && self.write == write.to_bits()
            && self.stores == stores
            && self.mix.len() == mix.len()
            // Bits compared without a branch per node.
            && self
                .mix
                .iter()
                .zip(mix)
                .fold(0, |d, (a, b)| d | (a.to_bits() ^ b.to_bits()))
                == 0
    }

    fn fill(&mut self, key: u64, cn: NodeId, mix: &[f64], write: f64, stores: Stores, uses: Uses) {
        self.key = key;
        self.cn = cn;
        self.write = write.to_bits();
        self.stores = stores;
        self.mix.clear();
        self.mix.extend_from_slice(mix);
        self.uses = uses;
    }
}

/// Memory ops' traffic lists remembered per task (OLTP's request body
/// touches five ranges).
const TRAFFIC_ENTRIES: usize = 6;

/// A cached node mix of one VMA range.
#[derive(Clone, Debug)]
pub(crate) struct MixEntry {
    version: u64,
    at: u64,
    pages: NodeVec,
    absent: f64,
    /// Which making of a range's mix this is, unique in the run
    /// ([`Sim::mix_gens`]): a memo made from this entry's pages holds
    /// while [`Sim::range_gen`] gives it, whatever the VMA's version. A
    /// migration anywhere in OLTP's 14 GiB data VMA bumps its version,
    /// while each range's mix is made anew at most once a tick.
    gen: u64,
}

/// What the memory latency and the traffic list of an op's demand follow
/// from during one solve (engine/mod.rs `solve_physics`), when its range
/// has every page present: the range, the node of the CPU, the write share
/// and the kind of stores. Pages do not move while the solve runs, so every
/// task with these inputs gets the same mix, the same latency sum and the
/// same list (pmbench's 64 tasks ask it of one range from two nodes); the
/// mix then follows the pages alone, with no policy or CPU in it. A range
/// with pages not yet present adds where the asking task's first touch
/// puts them ([`SolvedRange::Placing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SolveKey {
    mm: MmId,
    vma: VmaId,
    offset: u64,
    len: u64,
    cn: NodeId,
    write: u64,
    stores: Stores,
}

impl SolveKey {
    /// The key of memory op `op` of a task of `mm` on a CPU of node `cn`.
    fn of(mm: MmId, op: &Op, cn: NodeId, write: f64, stores: Stores) -> SolveKey {
        let (vma, offset, len) = op.range().unwrap_or((VmaId::new(0), 0, 0));
        SolveKey {
            mm,
            vma,
            offset,
            len,
            cn,
            write: write.to_bits(),
            stores,
        }
    }
}

/// The latency sum and traffic list a solve's tasks share for one
/// [`SolveKey`]: one answer when every page of the range is present, else
/// one per place the askers' first touches put the rest.
#[derive(Clone, Debug)]
pub(crate) enum SolvedRange {
    /// Every page present: the same for every asker.
    Settled(f64, Uses),
    /// Pages not yet present: by where the asker puts them.
    Placing(SmallVec<[(AbsentTo, f64, Uses); 2]>),
}

/// Where the pages of a range that are not yet present go when the asking
/// task touches them ([`Sim::absent_to`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum AbsentTo {
    /// All on this node.
    Node(NodeId),
    /// Spread evenly over these nodes.
    Interleave(numalab_topology::NodeMask),
}

impl AbsentTo {
    /// Adds `absent` pages to the per-node counts `mix` where they go.
    fn place(self, mix: &mut [f64], absent: f64) {
        match self {
            AbsentTo::Interleave(nodes) => {
                let k = nodes.len().max(1) as f64;
                for n in nodes.iter() {
                    mix[n] += absent / k;
                }
            }
            AbsentTo::Node(n) => mix[n.index()] += absent,
        }
    }
}

/// The solve's shared demand parts by [`SolveKey`]: the latency sum before
/// shared lines, and the traffic list.
pub(crate) type SolveRanges = rustc_hash::FxHashMap<SolveKey, SolvedRange>;

/// Random ops with at most this many accesses in one step sample their
/// accesses one by one instead of walking the range's special pages.
const DIRECT_SAMPLE_MAX_ACCESSES: f64 = 64.0;

/// Failures before the first success of independent trials that succeed
/// with probability `p` (geometric on {0, 1, ...}), by inversion.
#[derive(Clone, Copy, Debug)]
struct Geometric {
    p: f64,
    /// `ln(1 - p)`.
    log_q: f64,
}

impl Geometric {
    fn new(p: f64) -> Geometric {
        Geometric {
            p,
            log_q: (-p).ln_1p(),
        }
    }

    /// One draw: `u64::MAX` when `p` is 0, 0 when it is 1.
    fn sample(&self, rng: &mut impl Rng) -> u64 {
        if self.p >= 1.0 {
            return 0;
        }
        if self.p <= 0.0 {
            return u64::MAX;
        }
        // 1 - U lies in (0, 1], so its log is finite.
        let u = 1.0 - rng.gen::<f64>();
        let g = (u.ln() / self.log_q).floor();
        if g >= u64::MAX as f64 {
            u64::MAX
        } else {
            g as u64
        }
    }
}

#[cfg(test)]
fn geometric(rng: &mut impl Rng, p: f64) -> u64 {
    Geometric::new(p).sample(rng)
}

/// A Poisson-distributed count with mean `mean` (Knuth's method; for the
/// small means of [`DIRECT_SAMPLE_MAX_ACCESSES`]).
fn poisson(rng: &mut impl Rng, mean: f64) -> u64 {
    let limit = (-mean).exp();
    let mut k = 0;
    let mut p: f64 = rng.gen();
    while p > limit {
        k += 1;
        p *= rng.gen::<f64>();
    }
    k
}

/// The position (fraction of the range) below which a share `u` of the
/// accesses fall, the inverse of `x -> dist_mass(dist, 0, x)`, for one
/// distribution, its constants worked out once: a
/// random op places each of its accesses with it, and Zipf's normalising
/// power is the same for all of them. The same operations in the same
/// order, so the same positions bit for bit.
#[derive(Clone, Copy, Debug)]
enum DistInverse {
    Uniform,
    Hot {
        f: f64,
        p: f64,
    },
    /// Zipf with s = 1: `1001^u`.
    ZipfOne,
    /// Zipf with s != 1: `c = 1001^(1-s) - 1` and `1 / (1-s)`.
    Zipf {
        c: f64,
        inv_e: f64,
    },
}

impl DistInverse {
    fn new(dist: &Distribution) -> DistInverse {
        match dist {
            Distribution::Uniform => DistInverse::Uniform,
            Distribution::Hot {
                fraction,
                probability,
            } => DistInverse::Hot {
                f: fraction.clamp(1e-9, 1.0),
                p: *probability,
            },
            Distribution::Zipf { s } => {
                if (*s - 1.0).abs() < 1e-9 {
                    DistInverse::ZipfOne
                } else {
                    let e = 1.0 - s;
                    DistInverse::Zipf {
                        c: 1001f64.powf(e) - 1.0,
                        inv_e: 1.0 / e,
                    }
                }
            }
        }
    }

    fn at(self, u: f64) -> f64 {
        let u = u.clamp(0.0, 1.0);
        let x = match self {
            DistInverse::Uniform => u,
            DistInverse::Hot { f, p } => {
                if f >= 1.0 {
                    u
                } else if u < p {
                    u / p * f
                } else {
                    f + (u - p) / (1.0 - p).max(1e-12) * (1.0 - f)
                }
            }
            DistInverse::ZipfOne => (1001f64.powf(u) - 1.0) / 1000.0,
            DistInverse::Zipf { c, inv_e } => ((u * c + 1.0).powf(inv_e) - 1.0) / 1000.0,
        };
        x.clamp(0.0, 1.0)
    }
}

/// Page indices `[from, to)` covering bytes `[offset, offset + len)` of a
/// VMA with pages of `1 << shift` bytes (`len > 0`).
pub(super) fn page_span(offset: u64, len: u64, shift: u32) -> (usize, usize) {
    (
        (offset >> shift) as usize,
        ((offset + len - 1) >> shift) as usize + 1,
    )
}

/// Share of accesses that fall in `[a, b)` of a range (as fractions of it).
pub fn dist_mass(dist: &Distribution, a: f64, b: f64) -> f64 {
    match dist {
        Distribution::Uniform => b - a,
        Distribution::Hot {
            fraction,
            probability,
        } => {
            let f = fraction.clamp(1e-9, 1.0);
            let hot = |x: f64| x.min(f) / f * probability;
            let cold = |x: f64| {
                if f >= 1.0 {
                    0.0
                } else {
                    (x - f).max(0.0) / (1.0 - f) * (1.0 - probability)
                }
            };
            (hot(b) - hot(a)) + (cold(b) - cold(a))
        }
        Distribution::Zipf { s } => {
            // Continuous approximation of the Zipf CDF over (0, 1], with the
            // first 1/1000 of the range as the head.
            let cdf = |x: f64| {
                let x = 1.0 + 1000.0 * x;
                if (*s - 1.0).abs() < 1e-9 {
                    x.ln() / 1001f64.ln()
                } else {
                    (x.powf(1.0 - s) - 1.0) / (1001f64.powf(1.0 - s) - 1.0)
                }
            };
            (cdf(b) - cdf(a)).max(0.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_masses_sum_to_one() {
        for d in [
            Distribution::Uniform,
            Distribution::Hot {
                fraction: 0.1,
                probability: 0.9,
            },
            Distribution::Zipf { s: 0.99 },
            Distribution::Zipf { s: 1.0 },
        ] {
            let total: f64 = (0..10)
                .map(|i| dist_mass(&d, i as f64 / 10.0, (i + 1) as f64 / 10.0))
                .sum();
            assert!((total - 1.0).abs() < 1e-9, "{d:?}: {total}");
        }
        let hot = Distribution::Hot {
            fraction: 0.1,
            probability: 0.9,
        };
        assert!((dist_mass(&hot, 0.0, 0.1) - 0.9).abs() < 1e-9);
        let z = Distribution::Zipf { s: 0.99 };
        assert!(dist_mass(&z, 0.0, 0.1) > dist_mass(&z, 0.9, 1.0));
    }

    #[test]
    fn dist_inverse_inverts_the_distribution() {
        for d in [
            Distribution::Uniform,
            Distribution::Hot {
                fraction: 0.1,
                probability: 0.9,
            },
            Distribution::Zipf { s: 0.99 },
            Distribution::Zipf { s: 1.0 },
            Distribution::Zipf { s: 1.5 },
        ] {
            for i in 0..=20 {
                let u = i as f64 / 20.0;
                let x = DistInverse::new(&d).at(u);
                assert!((dist_mass(&d, 0.0, x) - u).abs() < 1e-6, "{d:?} {u} {x}");
            }
        }
    }

    #[test]
    fn geometric_gaps_have_the_right_mean() {
        use rand::SeedableRng;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        for p in [0.01, 0.2, 0.7] {
            let n = 20_000;
            let sum: u64 = (0..n).map(|_| geometric(&mut rng, p)).sum();
            let m = sum as f64 / n as f64;
            let want = (1.0 - p) / p;
            assert!(
                (m - want).abs() < 0.05 * want.max(1.0),
                "{p}: {m} vs {want}"
            );
        }
        assert_eq!(geometric(&mut rng, 1.0), 0);
        assert_eq!(geometric(&mut rng, 0.0), u64::MAX);
    }

    #[test]
    fn traffic_memo_holds_only_for_the_inputs_it_was_filled_with() {
        let mix = [0.25, 0.75, 0.0];
        let uses = [(0, 0.25), (1, 0.75), (4, 0.75)];
        let mut e = TrafficMemo::default();
        let n1 = NodeId::new(1);
        let key = TrafficMemo::key(n1, &mix, 1.0, Stores::FullLine);
        e.fill(key, n1, &mix, 1.0, Stores::FullLine, Rc::from(&uses[..]));
        assert_eq!(&e.uses[..], &uses[..]);
        let holds = |cn: NodeId, mix: &[f64], write: f64, stores: Stores| {
            e.holds(
                TrafficMemo::key(cn, mix, write, stores),
                cn,
                mix,
                write,
                stores,
            )
        };
        assert!(holds(n1, &mix, 1.0, Stores::FullLine));
        assert!(!holds(NodeId::new(0), &mix, 1.0, Stores::FullLine));
        assert!(!holds(n1, &mix, 0.5, Stores::FullLine));
        assert!(!holds(n1, &mix, 1.0, Stores::WriteAllocate));
        assert!(!holds(n1, &[0.25, 0.75], 1.0, Stores::FullLine));
        // Bit for bit: a share one ulp off, or -0.0 for 0.0, is another mix.
        let next = f64::from_bits(0.75f64.to_bits() + 1);
        assert!(!holds(n1, &[0.25, next, 0.0], 1.0, Stores::FullLine));
        assert!(!holds(n1, &[0.25, 0.75, -0.0], 1.0, Stores::FullLine));
        // The key alone never decides: a forged equal key with other
        // inputs still fails.
        assert!(!e.holds(key, n1, &[0.5, 0.5, 0.0], 1.0, Stores::FullLine));
    }

    #[test]
    fn a_demand_memo_holds_while_its_pages_version_does() {
        let op = |vma: usize, offset: u64| Op::Random {
            vma: VmaId::new(vma),
            offset,
            len: 4096,
            left: 10.0,
            dist: Distribution::Uniform,
            mlp: 2.0,
            write: 0.5,
        };
        let place =
            |op: &Op, cn: usize, stores: Stores| DemandPlace::of(op, NodeId::new(cn), 0.5, stores);
        let p = place(&op(1, 0), 0, Stores::WriteAllocate).unwrap();
        assert!(place(&Op::Compute(1.0), 0, Stores::FullLine).is_none());
        // The same op from the same node is the same place; another range,
        // node or store kind is another place.
        assert_eq!(Some(p), place(&op(1, 0), 0, Stores::WriteAllocate));
        assert_ne!(Some(p), place(&op(2, 0), 0, Stores::WriteAllocate));
        assert_ne!(Some(p), place(&op(1, 4096), 0, Stores::WriteAllocate));
        assert_ne!(Some(p), place(&op(1, 0), 1, Stores::WriteAllocate));
        assert_ne!(Some(p), place(&op(1, 0), 0, Stores::FullLine));
        let entry = |current: bool| DemandMemo {
            place: p,
            version: 7,
            gen: 1,
            mix: NodeVec::from_slice(&[1.0, 0.0]),
            uses: Rc::from([]),
            current,
            tick: 4_000_000,
        };
        // Made from the pages of its version: good at any later tick.
        assert!(entry(true).holds(4_000_000));
        assert!(entry(true).holds(8_000_000));
        // Made from a mix computed earlier in its tick: that tick only.
        assert!(entry(false).holds(4_000_000));
        assert!(!entry(false).holds(8_000_000));
    }

    /// Three threads on node 0's CPUs first-touch and stream one buffer,
    /// each under another policy (bind to node 0, bind to node 1,
    /// interleave): the same range from the same node, whose absent pages
    /// go three ways. Sharing the solve's demands among them must give the
    /// run each computing its own gives, byte for byte.
    #[test]
    fn tasks_sharing_a_solves_demands_change_nothing() {
        let run = |share: bool| {
            let m = numalab_topology::presets::load("tiny-2n").unwrap();
            let thread = |name: &str, policy: &str| {
                format!(
                    "[[process.thread]]\nname = \"{name}\"\naffinity = \"nodes:0 .. 1\"\n\
                     policy = {policy}\nphases = [{{ stream = \"buf\", passes = 3 }}]\n"
                )
            };
            let text = format!(
                "[[process]]\nname = \"p\"\n[[process.region]]\nname = \"buf\"\nsize = \"64MiB\"\n{}{}{}",
                thread("local", "{ mode = \"bind\", nodes = \"0 .. 1\" }"),
                thread("remote", "{ mode = \"bind\", nodes = \"1 .. 2\" }"),
                thread("spread", "{ mode = \"interleave\", nodes = \"0 .. 2\" }"),
            );
            let spec = numalab_workload::parse(&text, "t.toml").unwrap();
            let w = numalab_workload::resolve(&spec, &m, 1, 1.0).unwrap();
            let mut sim =
                Sim::new(m, w, crate::Knobs::default(), crate::RunOptions::default()).unwrap();
            sim.share_solves = share;
            let rec = sim.run(&mut |_| {}).unwrap();
            serde_json::to_string(&rec).unwrap()
        };
        assert_eq!(run(true), run(false));
    }

    /// Request loops of random accesses to a buffer whose pages NUMA
    /// balancing moves under them: every migration bumps the VMA's page
    /// version, and the memos kept at an older version while the range
    /// reads the same pages must give what working the rates, demands and
    /// mixes out again gives, byte for byte.
    #[test]
    fn memos_kept_while_a_range_reads_the_same_pages_change_nothing() {
        let run = |by_pages: bool| {
            let m = numalab_topology::presets::load("tiny-2n").unwrap();
            let text = "duration = \"1500ms\"\n[[process]]\nname = \"p\"\n\
                        [[process.region]]\nname = \"buf\"\nsize = \"32MiB\"\n\
                        [[process.thread]]\nname = \"filler\"\naffinity = \"nodes:0 .. 1\"\n\
                        phases = [{ stream = \"buf\" }]\n\
                        [[process.thread]]\nname = \"w\"\ncount = \"4\"\nstart_after = \"filler\"\n\
                        affinity = \"nodes:1 .. 2\"\n\
                        [[process.thread.phases]]\nrepeat = 1_000_000\nrequest = true\nbody = [\n\
                        { random = \"buf\", slice = [\"i\", \"n\"], accesses = 8, write_fraction = 0.3, mlp = 1 },\n\
                        { random = \"buf\", accesses = 2, mlp = 1 },\n\
                        { compute = \"20us\" },\n{ sleep = \"30us\" },\n]\n";
            let spec = numalab_workload::parse(text, "t.toml").unwrap();
            let w = numalab_workload::resolve(&spec, &m, 1, 1.0).unwrap();
            let mut k = crate::Knobs::default();
            k.set("kernel.numa_balancing=1").unwrap();
            k.set("numa_balancing.scan_delay_ms=100").unwrap();
            let mut sim = Sim::new(m, w, k, crate::RunOptions::default()).unwrap();
            sim.memo_by_pages = by_pages;
            let rec = sim.run(&mut |_| {}).unwrap();
            serde_json::to_string(&rec).unwrap()
        };
        let kept = run(true);
        // The pages did move under the loops.
        let rec: serde_json::Value = serde_json::from_str(&kept).unwrap();
        assert!(
            rec["vmstat"]["numa_pages_migrated"].as_u64().unwrap() > 100,
            "{}",
            rec["vmstat"]
        );
        assert_eq!(kept, run(false));
    }

    /// A thread on node 0 first-touching a buffer bound to node 1 writes
    /// node 1's memory from its first byte: its bytes are accounted there,
    /// where the pages go, not on its CPU's node.
    #[test]
    fn a_bound_first_touch_accounts_its_bytes_where_the_policy_puts_the_pages() {
        let m = numalab_topology::presets::load("tiny-2n").unwrap();
        let text = "[[process]]\nname = \"p\"\n[[process.region]]\nname = \"buf\"\nsize = \"64MiB\"\n\
                    [[process.thread]]\nname = \"t\"\naffinity = \"nodes:0 .. 1\"\n\
                    policy = { mode = \"bind\", nodes = \"1 .. 2\" }\nphases = [{ stream = \"buf\" }]\n";
        let spec = numalab_workload::parse(text, "t.toml").unwrap();
        let w = numalab_workload::resolve(&spec, &m, 1, 1.0).unwrap();
        let sim = Sim::new(m, w, crate::Knobs::default(), crate::RunOptions::default()).unwrap();
        let rec = sim.run(&mut |_| {}).unwrap();
        let bytes = &rec.tasks[0].bytes_by_node;
        assert!(bytes[1] >= 64 << 20, "{bytes:?}");
        assert_eq!(bytes[0], 0, "{bytes:?}");
    }

    #[test]
    fn poisson_counts_have_the_right_mean() {
        use rand::SeedableRng;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        for mean in [0.3, 1.0, 9.0] {
            let n = 20_000;
            let sum: u64 = (0..n).map(|_| poisson(&mut rng, mean)).sum();
            let m = sum as f64 / n as f64;
            assert!((m - mean).abs() < 0.05 * mean.max(1.0), "{mean}: {m}");
        }
    }
}
