//! One contended cache line: an owner, a queue of requesters, and what a
//! transfer of ownership costs.
//!
//! # The line
//! A locked operation (`lock cmpxchg`, `lock xadd`) or a store needs the
//! line in Modified state in the requesting CPU's cache. The line is a
//! single server: requests are served one at a time in arrival order
//! (FIFO), each service is one transfer from the current owner (the CPU
//! that last held it Modified) to the requester, who becomes the owner.
//!
//! # What a transfer costs ([`LineModel::transfer_ns`])
//! - By distance between the owner and the requester ([`Distance`]): same
//!   core (SMT siblings, or the owner itself), same LLC, same package on
//!   another LLC (SNC node / compute die), other package. The latencies are
//!   the measured core-to-core figures of physics/costs.rs (`C2C_*`).
//! - By load: with `n` requests outstanding for the line (the one being
//!   served included) a transfer takes `latency x (1 + g (n - 1))`,
//!   `g = costs::LINE_QUEUE_GROWTH`, calibrated from contended-CAS
//!   throughput versus thread count (see costs.rs). The requests that wait
//!   are snooped, retried and tracked by the home agent, and that traffic
//!   slows each transfer. `numalab.line_queueing=0` sets `g = 0`: every
//!   transfer costs its unloaded ping-pong latency.
//!
//! # Two faces over the same cost
//! - Discrete ([`Line::request`]): event-ordered requests, for code that
//!   knows when each request happens (the `sched_balance_running` flag in
//!   kernel/sched/serialize.rs). A request arriving at `now` waits for every
//!   request queued before it, then pays one transfer; `n` is the number of
//!   requests still in the queue at its arrival, itself included.
//! - Fluid ([`LineModel::fluid`]): for locks taken in hot paths where the
//!   requests of different CPUs are not time-ordered (the engine runs each
//!   CPU's task ahead to the tick horizon on its own). Given which CPUs
//!   request the line at what rate (acquisitions per ns of their own time
//!   when they never wait) and how long each acquisition holds it beyond
//!   the transfer, it gives the mean wait per acquisition, the achieved and
//!   the maximum acquisition rate, and the CPU time a spinning waiter burns.
//!   The solution is approximate mean-value analysis (Bard-Schweitzer) of a
//!   closed system: each requester alternates between its own work (mean
//!   `1/rate`) and one acquisition (queue + transfer + hold), so a line
//!   never serves more than `1/service` acquisitions per ns however many
//!   CPUs ask. The mean transfer is the distance mix of consecutive
//!   owners: two successive acquisitions come from CPUs `i` and `j` with
//!   probabilities proportional to their achieved rates.
//!
//! # Usage
//! ```
//! use numalab_sim::kernel::CpuId;
//! use numalab_sim::physics::line::{Line, LineModel, Requester};
//! let m = numalab_topology::presets::load("clx-2s-104").unwrap();
//! let model = LineModel::new(true); // or LineModel::from_knobs(&knobs)
//!
//! // Discrete: two CPUs on different packages bounce a flag.
//! let mut line = Line::new();
//! let a = line.request(&model, &m, 0.0, CpuId::new(0));
//! let b = line.request(&model, &m, 0.0, CpuId::new(60));
//! assert!(b.wait_ns >= a.transfer_ns); // b queued behind a
//!
//! // Fluid: a spinlock held 200 ns, taken 1 M times/s by each of 8 CPUs.
//! let cpus: Vec<Requester> = (0..8)
//!     .map(|i| Requester { cpu: CpuId::new(i), rate_per_ns: 1e-3 })
//!     .collect();
//! let lock = model.spinlock(&m, &cpus, 200.0);
//! // Each acquisition costs the CPU lock.spin_ns() of spinning (plus the
//! // 200 ns critical section it executes itself).
//! assert!(lock.rate_per_ns <= lock.max_rate_per_ns);
//!
//! // An rwsem reader's down_read: one atomic on the count line.
//! let count = model.atomic(&m, &cpus);
//! assert!(count.wait_ns >= 0.0);
//! ```
//!
//! A queued spinlock ([`LineModel::qspinlock`]) differs in what waits on
//! the line: its waiters spin on their own MCS nodes, so the lock word
//! sees at most two outstanding requests, and each hand-over is two
//! transfers (lock word, then the next waiter's node).
//!
//! Left out: reads that share the line (every request here wants it
//! Modified), non-FIFO arbitration (snoop retries that let a near requester
//! overtake a far one, unfairness), false sharing with neighbouring data,
//! the line's home node (the directory lookup is inside the measured
//! core-to-core latencies), qspinlock's pending-bit fast path for a single
//! waiter, and back-off in software that spins on a plain [`LineModel::spinlock`]
//! (there every waiter is one outstanding request for the lock line).

use super::costs;
use crate::kernel::CpuId;
use numalab_knobs::{knob, Knobs};
use numalab_topology::{Cpu, Machine};
use std::collections::VecDeque;

/// Where the line comes from, seen from the requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distance {
    /// The same core: an SMT sibling, or the requester already owns it.
    SameCore,
    /// Another core sharing the last-level cache.
    SameLlc,
    /// Another LLC (SNC node, compute die) of the same package.
    SamePackage,
    /// Another package.
    RemotePackage,
}

/// Where a CPU sits in the cache hierarchy: the ids [`Distance`] compares,
/// 12 bytes instead of a whole [`Cpu`], for lists read once per access
/// and writer (physics/sharing.rs's random writers). The machine's ids are
/// below its CPU count, far below `u32::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    core: u32,
    llc: u32,
    package: u32,
}

impl Place {
    /// The place of CPU `c`.
    #[inline]
    pub fn of(c: &Cpu) -> Place {
        Place {
            core: c.core as u32,
            llc: c.llc as u32,
            package: c.package as u32,
        }
    }
}

impl Distance {
    /// Where `to` sits from `from` on machine `m`.
    pub fn between(m: &Machine, from: CpuId, to: CpuId) -> Distance {
        Distance::between_cpus(&m.cpus[from.index()], &m.cpus[to.index()])
    }

    /// Where CPU `b` sits from CPU `a` (both of one machine).
    pub fn between_cpus(a: &Cpu, b: &Cpu) -> Distance {
        Distance::between_places(Place::of(a), Place::of(b))
    }

    /// Where place `b` sits from place `a` (CPUs of one machine).
    #[inline]
    pub fn between_places(a: Place, b: Place) -> Distance {
        if a.core == b.core {
            Distance::SameCore
        } else if a.llc == b.llc {
            Distance::SameLlc
        } else if a.package == b.package {
            Distance::SamePackage
        } else {
            Distance::RemotePackage
        }
    }

    /// Unloaded transfer latency at this distance (ns), from the measured
    /// core-to-core latencies in physics/costs.rs.
    pub fn latency_ns(self) -> f64 {
        match self {
            Distance::SameCore => costs::C2C_SAME_CORE_NS,
            Distance::SameLlc => costs::C2C_SAME_LLC_NS,
            Distance::SamePackage => costs::C2C_SAME_PACKAGE_NS,
            Distance::RemotePackage => costs::C2C_REMOTE_PACKAGE_NS,
        }
    }
}

/// Unloaded latency of moving a line from `from` (its last owner, if any)
/// to `to` for a locked operation (ns). A line nobody owned yet costs a
/// same-LLC transfer (it comes from the LLC or memory once).
pub fn c2c_latency_ns(m: &Machine, from: Option<CpuId>, to: CpuId) -> f64 {
    match from {
        Some(f) => Distance::between(m, f, to).latency_ns(),
        None => costs::C2C_SAME_LLC_NS,
    }
}

/// The cost function shared by both faces: how a transfer's cost grows
/// with load. Build it once from the knobs ([`LineModel::from_knobs`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LineModel {
    /// Relative growth of a transfer per additional outstanding request
    /// (0 when `numalab.line_queueing` is off).
    pub growth: f64,
    /// Outstanding requests beyond the one served past which a transfer
    /// stops growing (`numalab.line_queue_growth_cap`; infinite by
    /// default: the growth is linear however long the queue).
    pub growth_cap: f64,
    /// Unloaded transfer between cores of different packages (ns):
    /// [`costs::C2C_REMOTE_PACKAGE_NS`] unless `numalab.c2c_remote_package_ns`
    /// sets another (a sensitivity experiment, docs/model.md).
    pub remote_package_ns: f64,
}

impl LineModel {
    /// A model with queueing growth on ([`costs::LINE_QUEUE_GROWTH`]) or
    /// off (every transfer at its unloaded latency).
    pub fn new(queueing: bool) -> LineModel {
        LineModel {
            growth: if queueing {
                costs::LINE_QUEUE_GROWTH
            } else {
                0.0
            },
            growth_cap: f64::INFINITY,
            remote_package_ns: costs::C2C_REMOTE_PACKAGE_NS,
        }
    }

    /// The model the knobs select (`numalab.line_queueing`, and its growth
    /// per request from `numalab.line_queue_growth_ppm`, bounded by
    /// `numalab.line_queue_growth_cap`).
    pub fn from_knobs(knobs: &Knobs) -> LineModel {
        let growth = if knobs.get(knob::LINE_QUEUEING) {
            knobs.get(knob::LINE_QUEUE_GROWTH_PPM) as f64 / 1e6
        } else {
            0.0
        };
        let growth_cap = match knobs.get(knob::LINE_QUEUE_GROWTH_CAP) {
            0 => f64::INFINITY,
            cap => cap as f64,
        };
        LineModel {
            growth,
            growth_cap,
            remote_package_ns: knobs.get(knob::C2C_REMOTE_PACKAGE_NS) as f64,
        }
    }

    /// Unloaded latency of moving a line from `from` (its last owner, if
    /// any) to `to` (ns): [`c2c_latency_ns`], with this model's transfer
    /// between packages.
    pub fn c2c_ns(&self, m: &Machine, from: Option<CpuId>, to: CpuId) -> f64 {
        // One topology lookup: this sits in the shared-line cost's inner
        // loop (physics/sharing.rs), once per other writer of a region.
        match from {
            Some(f) => self.c2c_at(Distance::between(m, f, to)),
            None => costs::C2C_SAME_LLC_NS,
        }
    }

    /// Unloaded transfer at distance `d` (ns), with this model's transfer
    /// between packages.
    pub fn c2c_at(&self, d: Distance) -> f64 {
        match d {
            Distance::RemotePackage => self.remote_package_ns,
            d => d.latency_ns(),
        }
    }

    /// [`LineModel::transfer_ns`] from an owner at each [`Distance`]
    /// (indexed by `Distance as usize`) with `outstanding` requests: the
    /// same products, computed once for a loop over many owners (the
    /// shared-line cost's random writers).
    pub fn transfer_by_distance(&self, outstanding: f64) -> [f64; 4] {
        let f = self.load_factor(outstanding);
        [
            Distance::SameCore,
            Distance::SameLlc,
            Distance::SamePackage,
            Distance::RemotePackage,
        ]
        .map(|d| self.c2c_at(d) * f)
    }

    /// Factor on a transfer's latency with `outstanding` requests for the
    /// line, the one being served included (`>= 1`; fractional for the
    /// fluid view's mean queue). Past [`LineModel::growth_cap`] waiting
    /// requests it stays where it is.
    pub fn load_factor(&self, outstanding: f64) -> f64 {
        1.0 + self.growth * (outstanding - 1.0).max(0.0).min(self.growth_cap)
    }

    /// One transfer from `from` (last owner, if any) to `to` with
    /// `outstanding` requests for the line (ns).
    pub fn transfer_ns(
        &self,
        m: &Machine,
        from: Option<CpuId>,
        to: CpuId,
        outstanding: f64,
    ) -> f64 {
        self.c2c_ns(m, from, to) * self.load_factor(outstanding)
    }

    /// The fluid view of a line requested by `reqs`, each acquisition
    /// holding it `hold_ns` beyond its transfer (0 for a bare atomic). See
    /// the module doc. Requesters with a rate of 0 (or below) are ignored.
    pub fn fluid(&self, m: &Machine, reqs: &[Requester], hold_ns: f64) -> FluidLine {
        fluid(self, m, reqs, hold_ns.max(0.0), false)
    }

    /// A spinlock built on the line: each acquisition transfers the lock
    /// word and holds it `hold_ns`; waiters spin ([`FluidLine::spin_ns`] is
    /// CPU time).
    pub fn spinlock(&self, m: &Machine, reqs: &[Requester], hold_ns: f64) -> FluidLine {
        self.fluid(m, reqs, hold_ns)
    }

    /// A queued spinlock (the kernel's `spinlock_t` on x86: qspinlock)
    /// built on the line: waiters queue on their own MCS nodes and only
    /// the head of the queue requests the lock word, so at most two
    /// requests are outstanding on it (the releasing owner's and the
    /// head's) however many CPUs wait. A hand-over costs two transfers in
    /// series: the lock word to the head, then the new owner's write to
    /// the next waiter's MCS node (`arch_mcs_spin_unlock_contended`)
    /// before its critical section. Waiters spin ([`FluidLine::spin_ns`]
    /// is CPU time).
    pub fn qspinlock(&self, m: &Machine, reqs: &[Requester], hold_ns: f64) -> FluidLine {
        fluid(self, m, reqs, hold_ns.max(0.0), true)
    }

    /// A bare atomic read-modify-write on the line (an rwsem reader's
    /// `down_read` on the count, an atomic counter): no hold time.
    pub fn atomic(&self, m: &Machine, reqs: &[Requester]) -> FluidLine {
        self.fluid(m, reqs, 0.0)
    }
}

/// The discrete line: its owner and the requests queued on it.
#[derive(Clone, Debug, Default)]
pub struct Line {
    /// Last CPU to own the line.
    owner: Option<CpuId>,
    /// Completion times of the queued requests, oldest first (the last is
    /// when the line is free again).
    queue: VecDeque<f64>,
}

/// What one discrete request got.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grant {
    /// When its service started (ns).
    pub start_ns: f64,
    /// When it completed: the requester owns the line (ns).
    pub done_ns: f64,
    /// Time spent waiting behind earlier requests (ns).
    pub wait_ns: f64,
    /// Its transfer's cost, load included (ns).
    pub transfer_ns: f64,
    /// Where the line came from, `None` when nobody owned it.
    pub distance: Option<Distance>,
    /// Requests outstanding at its arrival, itself included.
    pub outstanding: usize,
    /// True when the line came from another CPU (or from nobody): a
    /// transfer between caches, not a re-use by its owner.
    pub moved: bool,
}

impl Line {
    /// A line nobody owns, with nothing queued.
    pub fn new() -> Line {
        Line::default()
    }

    /// The CPU that last held the line Modified.
    pub fn owner(&self) -> Option<CpuId> {
        self.owner
    }

    /// When the line has served everything queued on it (ns).
    pub fn free_at(&self) -> f64 {
        self.queue.back().copied().unwrap_or(0.0)
    }

    /// `cpu` requests the line at `now_ns`: it waits for every request
    /// queued before it (FIFO), then the line moves to it. Requests are
    /// meant to arrive in time order; one arriving earlier than an already
    /// queued one is still served after it (call order is queue order).
    pub fn request(&mut self, model: &LineModel, m: &Machine, now_ns: f64, cpu: CpuId) -> Grant {
        while self.queue.front().is_some_and(|&d| d <= now_ns) {
            self.queue.pop_front();
        }
        let outstanding = self.queue.len() + 1;
        let start = now_ns.max(self.free_at());
        let transfer = model.transfer_ns(m, self.owner, cpu, outstanding as f64);
        let done = start + transfer;
        let distance = self.owner.map(|o| Distance::between(m, o, cpu));
        let moved = self.owner != Some(cpu);
        self.owner = Some(cpu);
        self.queue.push_back(done);
        Grant {
            start_ns: start,
            done_ns: done,
            wait_ns: start - now_ns,
            transfer_ns: transfer,
            distance,
            outstanding,
            moved,
        }
    }
}

/// One CPU's demand on a line, for the fluid view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Requester {
    /// The requesting CPU.
    pub cpu: CpuId,
    /// Acquisitions per ns of this CPU's own time when it never waits (the
    /// inverse of the work it does between two acquisitions).
    pub rate_per_ns: f64,
}

/// The fluid view's answer for one line.
#[derive(Clone, Debug, PartialEq)]
pub struct FluidLine {
    /// Mean transfer per acquisition, distance mix and load included (ns).
    pub transfer_ns: f64,
    /// Time the line is busy per acquisition: transfer + hold (ns).
    pub service_ns: f64,
    /// Most acquisitions per ns the line can serve at this load
    /// (`1 / service_ns`).
    pub max_rate_per_ns: f64,
    /// Acquisitions per ns achieved by all requesters together.
    pub rate_per_ns: f64,
    /// Achieved acquisitions per ns of each requester, in input order (0
    /// for ignored ones).
    pub rates_per_ns: Vec<f64>,
    /// Share of time the line is busy (`rate x service`, <= 1).
    pub utilisation: f64,
    /// Mean wait per acquisition before its transfer starts (ns).
    pub wait_ns: f64,
    /// Mean requests at the line (queued or in service).
    pub outstanding: f64,
}

impl FluidLine {
    /// CPU time a spinning requester burns per acquisition, besides the
    /// hold it executes itself: the wait plus its own transfer (ns). A
    /// sleeping lock's waiter spends `wait_ns` asleep instead.
    pub fn spin_ns(&self) -> f64 {
        self.wait_ns + self.transfer_ns
    }

    /// Slow-down of a requester's progress: its time per acquisition with
    /// the line as it is over the same without any wait or transfer, given
    /// its offered rate (>= 1). For a spinning requester that also counts
    /// the hold, pass `hold_ns`; 0 for a bare atomic.
    pub fn stretch(&self, rate_per_ns: f64, hold_ns: f64) -> f64 {
        if rate_per_ns <= 0.0 {
            return 1.0;
        }
        let z = 1.0 / rate_per_ns;
        (z + hold_ns + self.spin_ns()) / (z + hold_ns)
    }
}

/// Iterations of the mean-value analysis; it converges in a few tens.
const MVA_ITERATIONS: usize = 200;

/// The fluid solve; `mcs`: a queued lock (see [`LineModel::qspinlock`]).
///
/// Requesters offering the same rate are one class: Bard-Schweitzer treats
/// them alike (the same think time, the same starting queue), so each
/// iteration works per class and per group, not per requester. A race of
/// hundreds of CPUs on one page, where every racer offers the same rate,
/// is then one class, and the solve costs the same on 1024 CPUs as on 8.
fn fluid(model: &LineModel, m: &Machine, reqs: &[Requester], hold: f64, mcs: bool) -> FluidLine {
    // Transfers per acquisition, and the most requests outstanding on the
    // lock word.
    let (hops, cap) = if mcs {
        (2.0, 2.0)
    } else {
        (1.0, f64::INFINITY)
    };
    let n = reqs.len();
    let mut rates = vec![0.0; n];
    // Classes by offered rate, in order of first appearance.
    let mut class_rate: Vec<f64> = Vec::new();
    let mut class_of: Vec<Option<usize>> = vec![None; n];
    for (i, r) in reqs.iter().enumerate() {
        if r.rate_per_ns <= 0.0 {
            continue;
        }
        let bits = r.rate_per_ns.to_bits();
        let c = match class_rate.iter().position(|x| x.to_bits() == bits) {
            Some(c) => c,
            None => {
                class_rate.push(r.rate_per_ns);
                class_rate.len() - 1
            }
        };
        class_of[i] = Some(c);
    }
    if class_rate.is_empty() {
        let transfer = costs::C2C_SAME_CORE_NS;
        let service = transfer + hold;
        return FluidLine {
            transfer_ns: transfer,
            service_ns: service,
            max_rate_per_ns: 1.0 / service,
            rate_per_ns: 0.0,
            rates_per_ns: rates,
            utilisation: 0.0,
            wait_ns: 0.0,
            outstanding: 0.0,
        };
    }
    let groups = Groups::new(m, reqs, &class_of, class_rate.len());
    let mult = &groups.members;
    let think: Vec<f64> = class_rate.iter().map(|r| 1.0 / r).collect();
    // Start from the offered rates, each requester alone at the line.
    let mut q: Vec<f64> = vec![0.0; think.len()];
    let mut x: Vec<f64> = think.iter().map(|z| 1.0 / z).collect();
    let weighted = |v: &[f64]| v.iter().zip(mult).map(|(a, k)| a * k).sum::<f64>();
    let mut transfer = hops * groups.mean_transfer(&x, model.remote_package_ns);
    let mut service = transfer + hold;
    for _ in 0..MVA_ITERATIONS {
        let total_q = weighted(&q);
        transfer = hops
            * groups.mean_transfer(&x, model.remote_package_ns)
            * model.load_factor(total_q.clamp(1.0, cap));
        service = transfer + hold;
        let mut change = 0.0_f64;
        for c in 0..think.len() {
            // Bard-Schweitzer: an arrival sees the others' mean queue.
            let r = service * (1.0 + total_q - q[c]);
            let xc = 1.0 / (think[c] + r);
            let qc = xc * r;
            change = change.max((qc - q[c]).abs());
            x[c] = xc;
            // Damped to keep the load-dependent service from oscillating.
            q[c] = 0.5 * q[c] + 0.5 * qc;
        }
        if change < 1e-9 {
            break;
        }
    }
    let total = weighted(&x);
    let total_q = weighted(&q);
    let wait = if total > 0.0 {
        // Little: requests at the line = rate x time there.
        (total_q / total - service).max(0.0)
    } else {
        0.0
    };
    for (rate, c) in rates.iter_mut().zip(&class_of) {
        if let Some(c) = c {
            *rate = x[*c];
        }
    }
    FluidLine {
        transfer_ns: transfer,
        service_ns: service,
        max_rate_per_ns: 1.0 / service,
        rate_per_ns: total,
        rates_per_ns: rates,
        utilisation: (total * service).min(1.0),
        wait_ns: wait,
        outstanding: total_q,
    }
}

/// Mean unloaded transfer between consecutive owners when each
/// acquisition comes from CPU `i` with probability proportional to `w[i]`:
/// `sum_ij p_i p_j latency(i, j)`, computed by the shares of each core,
/// LLC and package (no pair loop).
#[cfg(test)]
fn mean_transfer(m: &Machine, cpus: &[CpuId], w: &[f64]) -> f64 {
    // Each requester its own class, acquiring at its weight.
    let reqs: Vec<Requester> = cpus
        .iter()
        .map(|&cpu| Requester {
            cpu,
            rate_per_ns: 1.0,
        })
        .collect();
    let class_of: Vec<Option<usize>> = (0..cpus.len()).map(Some).collect();
    Groups::new(m, &reqs, &class_of, cpus.len()).mean_transfer(w, costs::C2C_REMOTE_PACKAGE_NS)
}

/// The requesters' cores, LLCs and packages numbered in order of first
/// appearance, with how many requesters of each class each holds, built
/// once per solve: the mean-value iterations then sum shares per group and
/// class, without a table the size of the machine or a pass over the
/// requesters (this runs inside the fluid solve of every contended lock,
/// up to [`MVA_ITERATIONS`] times).
struct Groups {
    /// Per kind (core, LLC, package), per group: requesters of each class
    /// (`classes` entries per group).
    counts: [Vec<f64>; 3],
    /// Requesters per class.
    members: Vec<f64>,
    classes: usize,
    /// Per kind, when there are at most [`GRAM_MAX_CLASSES`] classes:
    /// `sum_g counts[g][a] * counts[g][b]` for classes `a`, `b`, so the
    /// sum of squared shares is `x' G x / total^2` without a pass over
    /// the groups.
    gram: Option<[Vec<f64>; 3]>,
}

/// Most classes for which [`Groups`] keeps the Gram matrices.
const GRAM_MAX_CLASSES: usize = 8;

impl Groups {
    /// The groups of the requesters with a class (`class_of[i]`).
    fn new(m: &Machine, reqs: &[Requester], class_of: &[Option<usize>], classes: usize) -> Groups {
        // Each core's, LLC's and package's row, by id: sized by the largest
        // id among the requesters, not the machine's CPUs (filling a slot
        // per CPU of xl-8s-1024 for every race was a tenth of this solve).
        let ids = |r: &Requester| {
            let info = &m.cpus[r.cpu.index()];
            [info.core, info.llc, info.package]
        };
        let mut top = [0usize; 3];
        for (r, c) in reqs.iter().zip(class_of) {
            if c.is_some() {
                for (t, id) in top.iter_mut().zip(ids(r)) {
                    *t = (*t).max(id + 1);
                }
            }
        }
        let mut slots: [Vec<usize>; 3] = top.map(|n| vec![usize::MAX; n]);
        let mut counts: [Vec<f64>; 3] = Default::default();
        let mut members = vec![0.0; classes];
        for (r, c) in reqs.iter().zip(class_of) {
            let Some(c) = *c else { continue };
            members[c] += 1.0;
            for (kind, id) in ids(r).into_iter().enumerate() {
                let slot = &mut slots[kind][id];
                if *slot == usize::MAX {
                    *slot = counts[kind].len() / classes;
                    counts[kind].resize(counts[kind].len() + classes, 0.0);
                }
                counts[kind][*slot * classes + c] += 1.0;
            }
        }
        let gram = (classes <= GRAM_MAX_CLASSES).then(|| {
            counts.clone().map(|cnt| {
                let mut g = vec![0.0; classes * classes];
                for row in cnt.chunks(classes) {
                    for a in 0..classes {
                        for b in 0..classes {
                            g[a * classes + b] += row[a] * row[b];
                        }
                    }
                }
                g
            })
        });
        Groups {
            counts,
            members,
            classes,
            gram,
        }
    }

    /// Mean unloaded transfer between consecutive owners when each
    /// requester of class `c` acquires at rate `x[c]`: `sum_ij p_i p_j
    /// latency(i, j)` by the shares of each core, LLC and package, a
    /// transfer between packages costing `remote_ns`.
    fn mean_transfer(&self, x: &[f64], remote_ns: f64) -> f64 {
        let total: f64 = x.iter().zip(&self.members).map(|(a, k)| a * k).sum();
        if total <= 0.0 {
            return costs::C2C_SAME_CORE_NS;
        }
        let mut sq = [0.0; 3];
        if let Some(gram) = &self.gram {
            let k = self.classes;
            for (s, g) in sq.iter_mut().zip(gram) {
                let mut xgx = 0.0;
                for a in 0..k {
                    for b in 0..k {
                        xgx += x[a] * g[a * k + b] * x[b];
                    }
                }
                *s = xgx / (total * total);
            }
        } else {
            for (kind, s) in sq.iter_mut().enumerate() {
                *s = self.counts[kind]
                    .chunks(self.classes)
                    .map(|cnt| {
                        let share = cnt.iter().zip(x).map(|(k, a)| k * a).sum::<f64>() / total;
                        share * share
                    })
                    .sum::<f64>();
            }
        }
        let (s_core, s_llc, s_pkg) = (sq[0], sq[1], sq[2]);
        // P(same core) = s_core; P(same LLC, other core) = s_llc - s_core; ...
        costs::C2C_SAME_CORE_NS * s_core
            + costs::C2C_SAME_LLC_NS * (s_llc - s_core)
            + costs::C2C_SAME_PACKAGE_NS * (s_pkg - s_llc)
            + remote_ns * (1.0 - s_pkg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(i: usize) -> CpuId {
        CpuId::new(i)
    }

    fn gnr() -> Machine {
        numalab_topology::presets::load("gnr-2s-snc3").expect("preset")
    }

    #[test]
    fn transfers_cost_by_distance_in_order() {
        let m = gnr();
        // gnr-2s-snc3: CPU 240 is CPU 0's SMT sibling, 1 shares its LLC,
        // 40 is on the next SNC node of package 0, 120 on package 1.
        assert_eq!(Distance::between(&m, c(0), c(240)), Distance::SameCore);
        assert_eq!(Distance::between(&m, c(0), c(1)), Distance::SameLlc);
        assert_eq!(Distance::between(&m, c(0), c(40)), Distance::SamePackage);
        assert_eq!(Distance::between(&m, c(0), c(120)), Distance::RemotePackage);
        let l: Vec<f64> = [240, 1, 40, 120]
            .iter()
            .map(|&to| c2c_latency_ns(&m, Some(c(0)), c(to)))
            .collect();
        assert!(l.windows(2).all(|w| w[0] < w[1]), "{l:?}");
        assert_eq!(l[0], costs::C2C_SAME_CORE_NS);
        assert_eq!(l[3], costs::C2C_REMOTE_PACKAGE_NS);
    }

    #[test]
    fn growth_knob_defaults_to_the_constant_and_scales_the_queueing() {
        let m = gnr();
        let default = LineModel::from_knobs(&Knobs::default());
        assert_eq!(default, LineModel::new(true));
        let mut k = Knobs::default();
        k.set("numalab.line_queue_growth_ppm=5000").unwrap();
        let lower = LineModel::from_knobs(&k);
        assert_eq!(lower.growth, 0.005);
        let extra = |lm: LineModel| {
            lm.transfer_ns(&m, Some(c(0)), c(120), 65.0)
                - lm.transfer_ns(&m, Some(c(0)), c(120), 1.0)
        };
        let ratio = extra(lower) / extra(default);
        let want = 0.005 / costs::LINE_QUEUE_GROWTH;
        assert!((ratio - want).abs() < 1e-9, "{ratio} against {want}");
        k.set("numalab.line_queueing=0").unwrap();
        assert_eq!(LineModel::from_knobs(&k).growth, 0.0);
    }

    #[test]
    fn a_growth_cap_stops_the_transfer_growing_past_that_many_waiters() {
        let m = gnr();
        let mut k = Knobs::default();
        k.set("numalab.line_queue_growth_cap=15").unwrap();
        let capped = LineModel::from_knobs(&k);
        let linear = LineModel::from_knobs(&Knobs::default());
        let at = |lm: LineModel, n: f64| lm.transfer_ns(&m, Some(c(0)), c(120), n);
        // Up to 16 outstanding (15 waiting) the two agree; past it the
        // capped transfer stays at its 16-request cost.
        assert_eq!(at(capped, 16.0), at(linear, 16.0));
        assert_eq!(at(capped, 950.0), at(capped, 16.0));
        assert!(at(linear, 950.0) > 10.0 * at(capped, 950.0));
        assert_eq!(linear.growth_cap, f64::INFINITY);
    }

    #[test]
    fn queueing_grows_the_transfer_and_off_keeps_it_unloaded() {
        let m = gnr();
        let on = LineModel::new(true);
        let off = LineModel::new(false);
        let one = on.transfer_ns(&m, Some(c(0)), c(120), 1.0);
        let many = on.transfer_ns(&m, Some(c(0)), c(120), 64.0);
        assert_eq!(one, costs::C2C_REMOTE_PACKAGE_NS);
        assert!(many > 1.5 * one, "{one} {many}");
        assert_eq!(off.transfer_ns(&m, Some(c(0)), c(120), 64.0), one);
    }

    #[test]
    fn discrete_requests_queue_fifo_and_move_the_owner() {
        let m = gnr();
        let model = LineModel::new(true);
        let mut line = Line::new();
        let mut last_done: f64 = 0.0;
        let mut transfers = Vec::new();
        for (k, cpu) in [0, 120, 40, 1].into_iter().enumerate() {
            let g = line.request(&model, &m, 100.0, c(cpu));
            assert_eq!(g.outstanding, k + 1);
            assert!((g.start_ns - last_done.max(100.0)).abs() < 1e-9);
            assert!((g.wait_ns - (g.start_ns - 100.0)).abs() < 1e-9);
            last_done = g.done_ns;
            transfers.push(g.transfer_ns);
            assert_eq!(line.owner(), Some(c(cpu)));
        }
        // 0 -> 120 is remote, 120 -> 40 remote again but with more queued.
        assert!(transfers[2] > transfers[1]);
        // Once everything completed, a new request waits for nothing.
        let g = line.request(&model, &m, last_done + 1.0, c(1));
        assert_eq!((g.wait_ns, g.outstanding), (0.0, 1));
        assert_eq!(g.distance, Some(Distance::SameCore));
    }

    #[test]
    fn a_burst_costs_more_with_queueing_than_without() {
        let m = gnr();
        let burst = |model: LineModel| {
            let mut line = Line::new();
            (0..64)
                .map(|i| {
                    let g = line.request(&model, &m, 0.0, c(i * 7 % 480));
                    g.done_ns
                })
                .sum::<f64>()
        };
        let (on, off) = (burst(LineModel::new(true)), burst(LineModel::new(false)));
        assert!(on > 1.3 * off, "{on} {off}");
    }

    fn reqs(cpus: impl Iterator<Item = usize>, rate: f64) -> Vec<Requester> {
        cpus.map(|i| Requester {
            cpu: c(i),
            rate_per_ns: rate,
        })
        .collect()
    }

    #[test]
    fn fluid_light_load_barely_waits() {
        let m = gnr();
        let model = LineModel::new(true);
        // 4 CPUs, one acquisition per 100 us each.
        let f = model.spinlock(&m, &reqs(0..4, 1e-5), 100.0);
        assert!(f.utilisation < 0.02, "{f:?}");
        assert!(f.wait_ns < 0.05 * f.service_ns, "{f:?}");
        assert!((f.rate_per_ns - 4e-5).abs() < 1e-7, "{f:?}");
    }

    #[test]
    fn fluid_saturates_at_the_line_max_rate() {
        let m = gnr();
        let model = LineModel::new(true);
        let mut last = 0.0;
        for n in [2, 16, 64, 256] {
            // Every CPU wants the lock every 50 ns: far above what it serves.
            let f = model.spinlock(&m, &reqs((0..n).map(|i| i * 479 / n.max(2)), 0.02), 100.0);
            assert!(
                f.rate_per_ns <= f.max_rate_per_ns * (1.0 + 1e-6),
                "{n}: {f:?}"
            );
            if n >= 16 {
                assert!(f.utilisation > 0.95, "{n}: {f:?}");
            }
            assert!(f.wait_ns > last, "wait grows with contenders: {n}: {f:?}");
            last = f.wait_ns;
        }
    }

    #[test]
    fn fluid_queueing_lowers_the_max_rate_and_far_cpus_cost_more() {
        let m = gnr();
        let near = reqs(0..32, 0.01);
        let far = reqs((0..32).map(|i| if i % 2 == 0 { i } else { 120 + i }), 0.01);
        let on = LineModel::new(true);
        let off = LineModel::new(false);
        let (a, b) = (on.atomic(&m, &near), on.atomic(&m, &far));
        assert!(b.transfer_ns > a.transfer_ns, "{a:?} {b:?}");
        assert!(b.max_rate_per_ns < a.max_rate_per_ns);
        let c_off = off.atomic(&m, &far);
        assert!(c_off.max_rate_per_ns > b.max_rate_per_ns, "{c_off:?} {b:?}");
        assert!(b.spin_ns() > b.transfer_ns);
        assert!(b.stretch(0.01, 0.0) > 1.0);
    }

    #[test]
    fn qspinlock_waiters_do_not_load_the_lock_word() {
        let m = gnr();
        let model = LineModel::new(true);
        let r = reqs((0..160).map(|i| i * 3), 1e-3);
        let plain = model.spinlock(&m, &r, 60.0);
        let q = model.qspinlock(&m, &r, 60.0);
        // Both saturated; the queued lock's hand-over is two unloaded-ish
        // transfers, the plain one a transfer loaded by every waiter.
        assert!(q.utilisation > 0.95 && plain.utilisation > 0.95);
        assert!(q.service_ns < plain.service_ns, "{q:?} {plain:?}");
        let two = model.qspinlock(&m, &reqs([0, 120].into_iter(), 1e-6), 0.0);
        assert!(two.transfer_ns > 1.9 * costs::C2C_SAME_LLC_NS, "{two:?}");
    }

    #[test]
    fn fluid_ignores_idle_requesters_and_handles_none() {
        let m = gnr();
        let model = LineModel::new(true);
        let f = model.atomic(&m, &[]);
        assert_eq!(f.rate_per_ns, 0.0);
        let mut r = reqs(0..2, 1e-3);
        r.push(Requester {
            cpu: c(5),
            rate_per_ns: 0.0,
        });
        let f = model.atomic(&m, &r);
        assert_eq!(f.rates_per_ns.len(), 3);
        assert_eq!(f.rates_per_ns[2], 0.0);
        assert!(f.rates_per_ns[0] > 0.0);
    }

    #[test]
    fn requesters_of_one_rate_solve_as_one_class_like_each_apart() {
        // The same requesters, once all at one rate (one class) and once
        // each a hair apart (a class each): the solves must agree.
        let m = gnr();
        for (n, rate, hold) in [(8, 1e-3, 0.0), (96, 2e-3, 40.0), (300, 5e-4, 10.0)] {
            let one = reqs((0..n).map(|i| i * 3 % m.cpus.len()), rate);
            let mut apart = one.clone();
            for (i, r) in apart.iter_mut().enumerate() {
                r.rate_per_ns *= 1.0 + i as f64 * 1e-12;
            }
            let model = LineModel::new(true);
            let (a, b) = (model.fluid(&m, &one, hold), model.fluid(&m, &apart, hold));
            let close = |x: f64, y: f64| (x - y).abs() <= 1e-6 * x.abs().max(y.abs());
            assert!(close(a.rate_per_ns, b.rate_per_ns), "{n}: {a:?} {b:?}");
            assert!(close(a.wait_ns, b.wait_ns), "{n}: {a:?} {b:?}");
            assert!(close(a.transfer_ns, b.transfer_ns), "{n}: {a:?} {b:?}");
            assert!(a.wait_ns > 0.0 || n < 10);
        }
    }

    #[test]
    fn mean_transfer_matches_the_pair_average() {
        let m = gnr();
        let cpus: Vec<CpuId> = [0, 1, 240, 40, 120, 130].into_iter().map(c).collect();
        let w = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0];
        let tot: f64 = w.iter().sum();
        let mut pair = 0.0;
        for (i, a) in cpus.iter().enumerate() {
            for (j, b) in cpus.iter().enumerate() {
                pair += w[i] / tot * w[j] / tot * c2c_latency_ns(&m, Some(*a), *b);
            }
        }
        assert!((mean_transfer(&m, &cpus, &w) - pair).abs() < 1e-9);
    }

    #[test]
    fn remote_package_transfer_follows_its_knob_and_nothing_else() {
        // gnr-2s-snc3: CPUs 0 and 40 share a package (other SNC nodes),
        // 0 and 120 do not.
        let m = gnr();
        let k = |sets: &[&str]| Knobs::from_sets(sets).expect("knobs");
        let measured = LineModel::from_knobs(&k(&[]));
        let slow = LineModel::from_knobs(&k(&["numalab.c2c_remote_package_ns=230"]));
        assert_eq!(measured.remote_package_ns, costs::C2C_REMOTE_PACKAGE_NS);
        assert_eq!(slow.c2c_ns(&m, Some(c(0)), c(120)), 230.0);
        assert_eq!(
            slow.c2c_ns(&m, Some(c(0)), c(40)),
            measured.c2c_ns(&m, Some(c(0)), c(40))
        );
        // A lock handed between the packages: every hand-over slower.
        let r = reqs([0, 120].into_iter(), 1e-6);
        let (a, b) = (measured.qspinlock(&m, &r, 0.0), slow.qspinlock(&m, &r, 0.0));
        assert!(b.transfer_ns > 1.5 * a.transfer_ns, "{a:?} {b:?}");
        // Within one package: unchanged.
        let r = reqs([0, 40].into_iter(), 1e-6);
        assert_eq!(
            measured.qspinlock(&m, &r, 0.0).transfer_ns,
            slow.qspinlock(&m, &r, 0.0).transfer_ns
        );
    }
}
