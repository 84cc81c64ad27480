//! Kernel locks on the contended-line model (physics/line.rs): the split
//! page-table lock and the per-VMA lock a fault takes ([`ptl`]),
//! `mmap_lock` ([`mmap_lock`]), and spinlocks whose takers' rates are known
//! only per tick, `zone->lock` and the lruvec's `lru_lock` ([`TickLock`]).
//!
//! Which face of the line model each lock uses: the engine runs every
//! CPU's task ahead to the tick horizon on its own, so requests of
//! different CPUs inside a tick are not time-ordered. Locks taken in hot
//! paths (the PTL, `vm_lock`, `zone->lock`, `lru_lock`) use the fluid face
//! with the requesting CPUs and their rates; `mmap_lock`, taken by
//! `task_numa_work` once per scan, uses the discrete face.
//!
//! The spinlocks (PTL, `zone->lock`, `lru_lock`) are `spinlock_t`, a
//! queued spinlock on x86: they use the line model's qspinlock face
//! (waiters spin on their own MCS nodes; two transfers per hand-over). The
//! rwsem counts (`vm_lock`, `mmap_lock`) are bare atomics that every
//! requester hammers. Spinning is system time of the spinning task. Sleeping on an rwsem
//! or on a folio under migration is not CPU time: the task is delayed
//! without being charged ([`Kernel::delay_task`]).
//!
//! Switches: `numalab.fault_locks` (every lock here, the memcg page
//! counters' lines too; off: each is
//! uncontended, its hold inside the fixed costs of physics/costs.rs),
//! `numalab.fault_retry` (racing faults, kernel/mm/fault.rs),
//! `numalab.tlb_shootdown` (kernel/mm/tlb.rs), `numalab.migrate_cost`
//! (kernel/numa/fault.rs).
//!
//! Left out: lock holders being preempted or interrupted, qspinlock's
//! pending-bit fast path, rwsem optimistic spinning and writer starvation,
//! lockdep.

pub mod mmap_lock;
pub mod ptl;

use crate::kernel::mm::page_alloc::{zone_batchsize, zone_highsize, Pcp};
use crate::kernel::{CpuId, Kernel, MmId, NodeId, TaskId};
use crate::physics::line::{Line, LineModel, Requester};
use numalab_knobs::knob;
use numalab_topology::Machine;

/// The lab switches of this issue, read once at boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockSwitches {
    /// `numalab.fault_locks`.
    pub fault_locks: bool,
    /// `numalab.fault_retry`.
    pub fault_retry: bool,
    /// `numalab.migration_entry_sleep`: [`Kernel::delay_task`] sleeps.
    pub migration_entry_sleep: bool,
    /// `numalab.tlb_shootdown`.
    pub tlb_shootdown: bool,
    /// `numalab.migrate_cost`.
    pub migrate_cost: bool,
    /// `numalab.memcg_page_counter` (kernel/mm/memcontrol.rs).
    pub memcg_page_counter: bool,
}

/// All lock state of the kernel.
#[derive(Clone, Debug)]
pub struct Locks {
    /// The line model locks are built on.
    pub model: LineModel,
    /// Which mechanisms are on.
    pub on: LockSwitches,
    /// Solved page-table-lock races, reused while the racers stay.
    pub races: ptl::RaceCache,
    /// `zone->lock`, one per node (one zone per node here).
    pub zone_lock: Vec<TickLock>,
    /// The lruvec `lru_lock`, one per node.
    pub lru_lock: Vec<TickLock>,
    /// `mm->mmap_lock`'s count line, per mm (grown on first use).
    pub mmap_lock: Vec<Line>,
    /// The per-CPU page lists in front of `zone->lock` (sized on first
    /// use, when the nodes' memory is known).
    pub pcp: Pcp,
}

impl Locks {
    /// Lock state for machine `m` with the knobs' switches.
    pub fn new(m: &Machine, knobs: &crate::kernel::sysctl::Knobs) -> Locks {
        let nn = m.nr_nodes();
        Locks {
            model: LineModel::from_knobs(knobs),
            on: LockSwitches {
                fault_locks: knobs.get(knob::FAULT_LOCKS),
                fault_retry: knobs.get(knob::FAULT_RETRY),
                migration_entry_sleep: knobs.get(knob::MIGRATION_ENTRY_SLEEP),
                tlb_shootdown: knobs.get(knob::TLB_SHOOTDOWN),
                migrate_cost: knobs.get(knob::MIGRATE_COST),
                memcg_page_counter: knobs.get(knob::MEMCG_PAGE_COUNTER),
            },
            races: ptl::RaceCache::default(),
            zone_lock: (0..nn).map(|_| TickLock::new(m.nr_cpus())).collect(),
            lru_lock: (0..nn).map(|_| TickLock::new(m.nr_cpus())).collect(),
            mmap_lock: Vec::new(),
            pcp: Pcp::default(),
        }
    }
}

/// Offered utilisation below which a [`TickLock`] skips the fluid solve:
/// the wait is then under ~2 % of a service and the lock costs its
/// transfer only.
const LIGHT_UTILISATION: f64 = 0.02;

/// Least share of a tick an atomic line's requester is taken to spend on
/// its own work when working out its offered rate (a tick it spent all
/// waiting still offered some). Dimensionless (a share of a tick). Not a
/// hardware or kernel fact: a numerical floor that keeps the offered rate
/// finite; it binds only when a tick's waits filled it, and is used only
/// with `numalab.memcg_page_counter` (off by default).
const MIN_OWN_SHARE: f64 = 0.01;

/// A spinlock whose requesters are known per tick: acquisitions are
/// counted per CPU during a tick, and the next tick's acquisitions pay the
/// wait the fluid line model gives for those rates. One tick of lag, for
/// locks whose load changes over many ticks (`zone->lock` behind the
/// per-CPU lists, the LRU lock behind isolation).
#[derive(Clone, Debug)]
pub struct TickLock {
    /// Tick (jiffies) the counts belong to.
    tick: u64,
    /// Acquisitions per CPU in that tick.
    counts: Vec<u32>,
    /// CPUs with a non-zero count, in first-acquisition order.
    touched: Vec<CpuId>,
    /// Sum of hold times in that tick (ns).
    hold_sum: f64,
    /// Mean wait per acquisition solved from the previous tick (ns).
    wait_ns: f64,
    /// Last CPU to hold the lock.
    owner: Option<CpuId>,
    /// A bare atomic counter's line (`LineModel::atomic`: every requester
    /// hammers it, no hold) instead of a queued spinlock.
    atomic: bool,
}

impl TickLock {
    /// An idle lock on a machine of `nr_cpus` CPUs.
    pub fn new(nr_cpus: usize) -> TickLock {
        TickLock {
            tick: 0,
            counts: vec![0; nr_cpus],
            touched: Vec::new(),
            hold_sum: 0.0,
            wait_ns: 0.0,
            owner: None,
            atomic: false,
        }
    }

    /// An atomic counter's line on a machine of `nr_cpus` CPUs, whose
    /// updates are known per tick (a memcg's `page_counter` usage,
    /// kernel/mm/memcontrol.rs): [`TickLock::acquire`] with no hold.
    pub fn new_atomic(nr_cpus: usize) -> TickLock {
        TickLock {
            atomic: true,
            ..TickLock::new(nr_cpus)
        }
    }

    /// `cpu` takes the lock at jiffy `tick` (tick length `tick_ns`) and
    /// holds it `hold_ns`. Returns the CPU time it spins before owning it
    /// (wait + transfer, ns); the hold is the caller's work.
    pub fn acquire(
        &mut self,
        model: &LineModel,
        m: &Machine,
        tick: u64,
        tick_ns: f64,
        cpu: CpuId,
        hold_ns: f64,
    ) -> f64 {
        if tick != self.tick {
            self.roll(model, m, tick, tick_ns);
        }
        self.hold_sum += hold_ns;
        self.take(model, m, cpu)
    }

    /// Counts one acquisition by `cpu` this tick and makes it the owner:
    /// the wait plus the transfer from the last owner (ns).
    fn take(&mut self, model: &LineModel, m: &Machine, cpu: CpuId) -> f64 {
        if self.counts[cpu.index()] == 0 {
            self.touched.push(cpu);
        }
        self.counts[cpu.index()] += 1;
        let transfer = model.c2c_ns(m, self.owner, cpu);
        self.owner = Some(cpu);
        self.wait_ns + transfer
    }

    /// [`TickLock::acquire`] with no hold by each of `cpus` in turn, as
    /// one call: the summed CPU time (ns).
    pub fn acquire_each(
        &mut self,
        model: &LineModel,
        m: &Machine,
        tick: u64,
        tick_ns: f64,
        cpus: &[CpuId],
    ) -> f64 {
        if tick != self.tick {
            self.roll(model, m, tick, tick_ns);
        }
        cpus.iter().map(|&cpu| self.take(model, m, cpu)).sum()
    }

    /// Solves the wait from the finished tick's counts (as rates over one
    /// tick; a tick-old count stands for the current load) and starts
    /// counting `tick`.
    fn roll(&mut self, model: &LineModel, m: &Machine, tick: u64, tick_ns: f64) {
        let consecutive = tick == self.tick + 1;
        let n: u32 = self.touched.iter().map(|c| self.counts[c.index()]).sum();
        let prev_wait = self.wait_ns;
        self.wait_ns = 0.0;
        if consecutive && n > 1 && tick_ns > 0.0 {
            let hold = self.hold_sum / f64::from(n);
            let total_rate = f64::from(n) / tick_ns;
            let worst = crate::physics::costs::C2C_REMOTE_PACKAGE_NS + hold;
            if total_rate * worst >= LIGHT_UTILISATION {
                // An atomic line's requesters offer their own work's rate:
                // the tick's time less what its updates waited (a closed
                // loop, where the counts fall as the waits grow; a count
                // taken as the offered rate would solve a wait that the
                // next tick's lower count no longer bears, and swing).
                let waited = if self.atomic { prev_wait } else { 0.0 };
                let reqs: Vec<Requester> = self
                    .touched
                    .iter()
                    .map(|&c| {
                        let k = f64::from(self.counts[c.index()]);
                        let own = (tick_ns - k * waited).max(tick_ns * MIN_OWN_SHARE);
                        Requester {
                            cpu: c,
                            rate_per_ns: k / own,
                        }
                    })
                    .collect();
                self.wait_ns = if self.atomic {
                    model.atomic(m, &reqs).wait_ns
                } else {
                    model.qspinlock(m, &reqs, hold).wait_ns
                };
            }
        }
        for c in self.touched.drain(..) {
            self.counts[c.index()] = 0;
        }
        self.hold_sum = 0.0;
        self.tick = tick;
    }
}

/// The per-node spinlocks of the fault and migration paths.
#[derive(Clone, Copy, Debug)]
enum NodeLock {
    /// `zone->lock`.
    Zone,
    /// The node lruvec's `lru_lock`.
    Lru,
}

impl Kernel {
    /// Delays task `t` by `ns` without charging CPU time: it sleeps (on an
    /// rwsem, or on a folio a migration holds) and runs again once woken.
    /// Paid from the task's run time like kernel work, but counted as
    /// neither user nor system time.
    /// With `numalab.migration_entry_sleep` the task sleeps off its CPU
    /// instead (`migration_entry_wait`), at the engine's next turn of it.
    pub fn delay_task(&mut self, t: TaskId, ns: f64) {
        if ns > 0.0 {
            if self.mem.locks.on.migration_entry_sleep {
                self.owed[t].sleep_ns += ns;
            } else {
                self.owed[t].debt_ns += ns;
            }
            // A wait the task's timed access sees (engine/latency.rs).
            self.owed[t].stall_ns += ns;
        }
    }

    /// `spin_lock(&zone->lock)` by `cpu` for `nr` pages moved between the
    /// buddy lists and a per-CPU list. Returns the CPU time (spin + hold,
    /// ns); with `numalab.fault_locks` off, the hold only.
    pub fn zone_lock(&mut self, cpu: CpuId, nid: NodeId, nr: u32) -> f64 {
        let hold = f64::from(nr) * crate::physics::costs::ZONE_LOCK_PER_PAGE_NS;
        self.node_spin_lock(NodeLock::Zone, cpu, nid, hold)
    }

    /// One of node `nid`'s spinlocks taken by `cpu` and held `hold` ns.
    /// Returns the CPU time (spin + hold, ns); with `numalab.fault_locks`
    /// off, the hold only.
    fn node_spin_lock(&mut self, which: NodeLock, cpu: CpuId, nid: NodeId, hold: f64) -> f64 {
        if !self.mem.locks.on.fault_locks {
            return hold;
        }
        let (tick, tick_ns) = (self.jiffies(), self.tick_ns as f64);
        let lock = match which {
            NodeLock::Zone => &mut self.mem.locks.zone_lock[nid.index()],
            NodeLock::Lru => &mut self.mem.locks.lru_lock[nid.index()],
        };
        let spin = lock.acquire(&self.mem.locks.model, &self.m, tick, tick_ns, cpu, hold);
        spin + hold
    }

    /// An allocation of `nr` base pages on `nid` by `cpu` through the
    /// per-CPU lists (`rmqueue_pcplist`; a THP is one order-9 folio).
    /// Returns the CPU time `zone->lock` costs it (0 when the list served
    /// it); the allocation's own work is inside the callers' fixed costs.
    pub fn pcp_alloc(&mut self, cpu: CpuId, nid: NodeId, nr: u64) -> f64 {
        if nr > 1 {
            return self.zone_lock(cpu, nid, 1) - crate::physics::costs::ZONE_LOCK_PER_PAGE_NS;
        }
        self.size_pcp();
        let moved = self.mem.locks.pcp.alloc(cpu.index(), nid);
        self.pcp_zone_lock(cpu, nid, moved)
    }

    /// A free of `nr` base pages of `nid` by `cpu` to the per-CPU lists
    /// (`free_unref_folios`). Returns the CPU time `zone->lock` costs it.
    pub fn pcp_free(&mut self, cpu: CpuId, nid: NodeId, nr: u64) -> f64 {
        if nr > 1 {
            return self.zone_lock(cpu, nid, 1) - crate::physics::costs::ZONE_LOCK_PER_PAGE_NS;
        }
        self.size_pcp();
        let moved = self.mem.locks.pcp.free(cpu.index(), nid);
        self.pcp_zone_lock(cpu, nid, moved)
    }

    /// `zone->lock` for a refill or drain of `moved` pages; the hold
    /// amortized per page is inside the fixed fault costs (the
    /// measurements they come from include it), so only the spin is
    /// added.
    fn pcp_zone_lock(&mut self, cpu: CpuId, nid: NodeId, moved: u32) -> f64 {
        if moved == 0 || !self.mem.locks.on.fault_locks {
            return 0.0;
        }
        let hold = f64::from(moved) * crate::physics::costs::ZONE_LOCK_PER_PAGE_NS;
        self.zone_lock(cpu, nid, moved) - hold
    }

    /// Sizes the per-CPU lists from the nodes' memory on first use.
    fn size_pcp(&mut self) {
        if self.mem.locks.pcp.is_sized() {
            return;
        }
        let online = self.m.nr_cpus();
        let sizes: Vec<(u32, u32)> = NodeId::range(self.m.nr_nodes())
            .map(|n| {
                let batch = zone_batchsize(self.mem.nodes[n].total_pages);
                let high = zone_highsize(
                    self.mem.low_wmark_pages(n),
                    batch,
                    self.node_cpus(n).count(),
                    online,
                );
                (batch, high)
            })
            .collect();
        self.mem.locks.pcp = Pcp::new(online, &sizes);
    }

    /// `spin_lock_irq(&lruvec->lru_lock)` by `cpu` on node `nid`'s lruvec
    /// to isolate or put back one folio. Returns the CPU time (spin + hold,
    /// ns); with `numalab.fault_locks` off, the hold only.
    pub fn lru_lock(&mut self, cpu: CpuId, nid: NodeId) -> f64 {
        let hold = crate::physics::costs::LRU_LOCK_HOLD_NS;
        self.node_spin_lock(NodeLock::Lru, cpu, nid, hold)
    }

    /// The CPUs currently running a task of `mm`: the model's
    /// `mm_cpumask` (x86 clears a CPU's bit when it switches to another
    /// mm; lazy-TLB CPUs are skipped by the flush IPI anyway).
    pub fn mm_cpumask(&self, mm: MmId) -> Vec<CpuId> {
        self.sched
            .rq
            .iter_enumerated()
            .filter(|(_, rq)| rq.curr.is_some_and(|t| self.tasks[t].mm == mm))
            .map(|(c, _)| c)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_line_offers_the_rate_its_requesters_would_without_the_wait() {
        let m = numalab_topology::presets::load("spr-4n").unwrap();
        let model = LineModel::new(true);
        let tick_ns = 4e6;
        let cpus: Vec<CpuId> = (0..64).map(|i| CpuId::new(i * 5)).collect();
        // The same updates in ticks 1, 2 and 3: the wait solved at tick 2
        // comes from counts that waited nothing; the one at tick 3 from
        // counts that waited that much, so their own work was shorter and
        // the rate they offer higher.
        let waits = |atomic: bool| {
            let mut l = if atomic {
                TickLock::new_atomic(m.nr_cpus())
            } else {
                TickLock::new(m.nr_cpus())
            };
            let mut out = Vec::new();
            for tick in 1..=3 {
                for _ in 0..200 {
                    l.acquire_each(&model, &m, tick, tick_ns, &cpus);
                }
                out.push(l.wait_ns);
            }
            out
        };
        let a = waits(true);
        assert!(a[1] > 0.0, "{a:?}");
        assert!(a[2] > a[1], "{a:?}");
        // A spinlock's requesters keep the counted rate.
        let q = waits(false);
        assert_eq!(q[1], q[2], "{q:?}");
    }

    #[test]
    fn tick_lock_waits_only_when_loaded() {
        let m = numalab_topology::presets::load("spr-4n").expect("preset");
        let model = LineModel::new(true);
        let tick_ns = 4e6;
        let mut light = TickLock::new(m.nr_cpus());
        let mut heavy = TickLock::new(m.nr_cpus());
        // Tick 1: 4 CPUs take the light lock 10 times each, 160 CPUs take
        // the heavy one 2000 times each, holding it 3 us.
        for c in 0..160 {
            let cpu = CpuId::new(c * 2);
            for _ in 0..2000 {
                heavy.acquire(&model, &m, 1, tick_ns, cpu, 3000.0);
            }
            if c < 4 {
                for _ in 0..10 {
                    light.acquire(&model, &m, 1, tick_ns, cpu, 3000.0);
                }
            }
        }
        // Tick 2 pays tick 1's load.
        let l = light.acquire(&model, &m, 2, tick_ns, CpuId::new(0), 3000.0);
        let h = heavy.acquire(&model, &m, 2, tick_ns, CpuId::new(0), 3000.0);
        assert!(l < 200.0, "{l}");
        assert!(h > 10_000.0, "{h}");
        // A gap of idle ticks forgets the load.
        let g = heavy.acquire(&model, &m, 9, tick_ns, CpuId::new(0), 3000.0);
        assert!(g < 200.0, "{g}");
    }

    #[test]
    fn a_wait_is_slept_off_the_cpu_only_with_migration_entry_sleep() {
        use crate::kernel::numa::tests::fx;
        for (on, sets) in [
            (false, vec![]),
            (true, vec!["numalab.migration_entry_sleep=1"]),
        ] {
            let mut k = fx::kernel("tiny-2n", &sets);
            let mm = fx::add_mm(&mut k, fx::pages(64), false, None);
            let t = fx::add_task(&mut k, mm, fx::c(0));
            k.delay_task(t, 30_000.0);
            let o = k.owed[t];
            // Either way the timed access sees the wait.
            assert_eq!(o.stall_ns, 30_000.0);
            if on {
                assert_eq!((o.sleep_ns, o.debt_ns), (30_000.0, 0.0));
            } else {
                assert_eq!((o.sleep_ns, o.debt_ns), (0.0, 30_000.0));
            }
        }
    }
}
