//! SD_SERIALIZE and the global `sched_balance_running` flag
//! (kernel/sched/fair.c), its five orderings, what contending on it costs,
//! and an invariant checker.
//!
//! # The flag
//! NUMA sched domains carry SD_SERIALIZE: one load-balancing pass over such
//! a domain may run system-wide at a time. The guard is one `atomic_t`,
//! taken with `atomic_try_cmpxchg_acquire(&sched_balance_running, 0, 1)` and
//! dropped with `atomic_set_release(&sched_balance_running, 0)`. A CPU that
//! finds it taken skips the domain ("balanced"); nothing waits for it.
//!
//! # Orderings (`numalab.sched_balance_serialize`)
//! - `legacy` (before 6.19): `sched_balance_domains` takes the flag on every
//!   serialized level it walks, *before* the interval check and before
//!   `sched_balance_rq` runs `should_we_balance`, and drops it after. Every
//!   CPU whose walk reaches a NUMA level does a `lock cmpxchg` each time its
//!   softirq runs, due or not, designated or not. Newly-idle balancing is
//!   not serialized.
//! - `v3` (Tim Chen's v3 posting): the flag moves into `sched_balance_rq`
//!   after `should_we_balance`, so only the designated CPU of a due domain
//!   tries it. On `redo` (every task of the busiest rq pinned) the flag is
//!   released but the "held" marker (`need_unlock`) is not cleared. If the
//!   retry then fails because another CPU took the flag in between, the
//!   `out:` path releases a flag this CPU no longer holds, while its new
//!   owner is mid-balance (K Prateek Nayak's review). Newidle not serialized.
//! - `v4` (the v4 posting): as v3, but the redo path clears the marker
//!   (`need_unlock = false` at `redo:`), and newly-idle balancing is
//!   serialized too.
//! - `fixed` (tip commit 2265c5d4, "Skip sched_balance_running cmpxchg when
//!   balance is not due", with Peter Zijlstra's change): checks first, and a
//!   redo *keeps* the flag (`if (!need_unlock && SD_SERIALIZE)`), as the
//!   pre-patch code did by holding it around the whole call. Newidle not
//!   serialized. This is the code the published OLTP result was taken with.
//! - `fixed+newidle` (mainline 6.19: the above plus 22c929d2 "Have
//!   SD_SERIALIZE affect newidle balancing"): newly-idle balancing of
//!   serialized domains takes the flag too. The default.
//!
//! # Time inside a tick
//! The kernel's balance runs for microseconds, and what matters here is
//! who touches the flag while whom holds it. The model gives every CPU's
//! SCHED_SOFTIRQ its own clock: it starts at the (unskewed, common) tick
//! plus a small per-CPU spread ([`costs::TICK_SOFTIRQ_SPREAD_NS`]), and
//! advances by every cost the walk charges (`should_we_balance`, each
//! `sched_balance_rq` pass, line waits). The walks of all CPUs raised at a
//! tick run interleaved, always resuming the one whose clock is earliest,
//! and they stop at each flag operation, so flag operations happen in the
//! order of their times (balance.rs, `run_sched_softirqs`). The flag is
//! held from the moment its cmpxchg completes to the moment the release
//! completes, so a CPU trying in between finds it taken, and a `v3` redo
//! can lose the flag to another CPU between its release and its retry.
//! Newly-idle balances run to completion at the moment the CPU goes idle;
//! their flag operations are ordered after everything already done.
//!
//! # What the flag costs: one contended cache line
//! Every flag operation needs the line in Modified state. The line is the
//! discrete face of the contended-line model (physics/line.rs,
//! [`Line::request`]): a single FIFO server whose every service is a
//! transfer from the last CPU to touch it, costed by distance (same core,
//! same LLC, same package, other package) and by how many requests are
//! outstanding (`numalab.line_queueing`). A CPU arriving while the line is
//! busy waits for all requests ahead of it, so a burst of N simultaneous
//! cmpxchgs costs the CPUs about N²/2 transfers in total, each dearer the
//! longer the queue. The cmpxchg's whole time (wait + transfer) is
//! taken from the CPU that executes it (its running task's system time, or
//! idle-CPU kernel time, which delays the next task to run there) and
//! counted as `sched_balance_running` contention, by who paid it (a running
//! task, an idle CPU's periodic balance, a newly-idle balance: how much of
//! it costs a worker's time). The Run record's contention share is of the
//! cycles perf's `cycles` event counts, unhalted ones
//! (`numalab.profile_cycles`, engine/record.rs). A release is a plain
//! store: it occupies the line in turn but the CPU does not wait for it
//! (store buffer); the flag reads 0 once the store completes.
//!
//! # Invariant checker
//! Counts, for every run: `overlaps`, each time a CPU acquires the flag
//! while another CPU still believes it holds it (it acquired the flag and
//! has not yet released it), i.e. two CPUs balancing serialized domains at
//! once; and `bad_releases`, each release by a CPU that does not hold the
//! flag at that moment. Correct orderings keep both at zero by construction;
//! `v3` produces both when redo meets a concurrent balancer.
//!
//! Left out: the flag's false sharing with neighbouring data (only the flag's
//! own operations touch the line), the line's non-FIFO arbitration in real
//! interconnects (snoop retries, unfairness), reads of the line, NOHZ idle
//! balancing (the kernel's idle load balancer walks all idle CPUs' domains
//! on one CPU; here every idle CPU ticks and walks its own).

use super::lb_stats::CpuIdleType;
use crate::kernel::{CpuId, Kernel};
use crate::physics::costs;
use crate::physics::line::{Distance, Line, LineModel};
use numalab_knobs::SchedBalanceSerialize;

/// Which ordering of the serialize flag the balancer follows
/// (`numalab.sched_balance_serialize`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SerializeVariant {
    /// Before 6.19: flag taken in `sched_balance_domains` before the due
    /// and designated checks.
    Legacy,
    /// v3 posting: checks first; redo releases but keeps the held marker.
    V3,
    /// v4 posting: checks first; redo releases and clears the marker;
    /// newidle serialized.
    V4,
    /// Tip 2265c5d4: checks first; redo keeps the flag; newidle not
    /// serialized.
    Fixed,
    /// Mainline 6.19: as `Fixed`, newidle serialized too.
    FixedNewidle,
}

impl From<SchedBalanceSerialize> for SerializeVariant {
    /// The knob's value (`numalab.sched_balance_serialize`) as the variant.
    fn from(c: SchedBalanceSerialize) -> Self {
        match c {
            SchedBalanceSerialize::Legacy => SerializeVariant::Legacy,
            SchedBalanceSerialize::V3 => SerializeVariant::V3,
            SchedBalanceSerialize::V4 => SerializeVariant::V4,
            SchedBalanceSerialize::Fixed => SerializeVariant::Fixed,
            SchedBalanceSerialize::FixedNewidle => SerializeVariant::FixedNewidle,
        }
    }
}

/// What a `redo` in `sched_balance_rq` does with a held flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedoFlag {
    /// Keep holding it over the retry.
    Keep,
    /// Release it and forget that it was held (marker cleared).
    ReleaseAndClear,
    /// Release it but keep the marker set (the v3 bug).
    ReleaseKeepMarker,
}

impl SerializeVariant {
    /// The variant named by the knob value, if any.
    pub fn parse(s: &str) -> Option<SerializeVariant> {
        Some(match s {
            "legacy" => SerializeVariant::Legacy,
            "v3" => SerializeVariant::V3,
            "v4" => SerializeVariant::V4,
            "fixed" => SerializeVariant::Fixed,
            "fixed+newidle" => SerializeVariant::FixedNewidle,
            _ => return None,
        })
    }

    /// The knob value.
    pub fn name(self) -> &'static str {
        match self {
            SerializeVariant::Legacy => "legacy",
            SerializeVariant::V3 => "v3",
            SerializeVariant::V4 => "v4",
            SerializeVariant::Fixed => "fixed",
            SerializeVariant::FixedNewidle => "fixed+newidle",
        }
    }

    /// True when `sched_balance_domains` takes the flag itself, before the
    /// interval check (the pre-6.19 ordering).
    pub fn in_domains_walk(self) -> bool {
        self == SerializeVariant::Legacy
    }

    /// True when `sched_balance_rq` of an SD_SERIALIZE domain tries the flag
    /// after `should_we_balance`, given the idle type and the held marker.
    pub fn rq_tries(self, idle: CpuIdleType, need_unlock: bool) -> bool {
        let newidle = idle == CpuIdleType::NewlyIdle;
        match self {
            SerializeVariant::Legacy => false,
            // v3: `if (idle != CPU_NEWLY_IDLE && (sd->flags & SD_SERIALIZE))`
            // with no marker test, so the retry after redo tries again.
            SerializeVariant::V3 => !newidle,
            SerializeVariant::V4 | SerializeVariant::FixedNewidle => !need_unlock,
            SerializeVariant::Fixed => !need_unlock && !newidle,
        }
    }

    /// What a redo does with the flag.
    pub fn redo(self) -> RedoFlag {
        match self {
            SerializeVariant::Legacy | SerializeVariant::Fixed | SerializeVariant::FixedNewidle => {
                RedoFlag::Keep
            }
            SerializeVariant::V3 => RedoFlag::ReleaseKeepMarker,
            SerializeVariant::V4 => RedoFlag::ReleaseAndClear,
        }
    }
}

/// Counts of the flag and its cache line over a run.
#[derive(Clone, Debug, Default)]
pub struct SerializeStats {
    /// cmpxchg attempts on the flag.
    pub attempts: u64,
    /// Attempts that found it taken.
    pub contended: u64,
    /// Releases (stores of 0).
    pub releases: u64,
    /// Releases by a CPU that did not hold the flag (invariant violation).
    pub bad_releases: u64,
    /// Acquisitions while another CPU still believed it held the flag
    /// (two serialized balances at once: invariant violation).
    pub overlaps: u64,
    /// Time CPUs spent in the flag's cmpxchg: waiting for the line and
    /// its transfer (ns).
    pub atomic_ns: f64,
    /// The part of `atomic_ns` spent waiting behind other CPUs' requests.
    pub queue_ns: f64,
    /// Of `atomic_ns`, paid by CPUs running a task: taken from that task's
    /// time, so a worker waits for all of it.
    pub busy_ns: f64,
    /// Of `atomic_ns`, paid by CPUs with no task in their periodic balance
    /// (SCHED_SOFTIRQ from the tick, `CPU_IDLE`): a task loses only the part
    /// it spends woken on that CPU's queue (`Sched::idle_kernel_wait_ns`).
    pub idle_ns: f64,
    /// Of `atomic_ns`, paid in newly-idle balance (`CPU_NEWLY_IDLE`).
    pub newidle_ns: f64,
    /// Line transfers between CPUs (any operation, releases included).
    pub transfers: u64,
    /// Of those, transfers between packages.
    pub transfers_remote: u64,
    /// Longest single cmpxchg (ns).
    pub max_atomic_ns: f64,
}

/// The flag, its cache line, and the checker's state.
#[derive(Clone, Debug)]
pub struct SerializeState {
    /// Ordering in force.
    pub variant: SerializeVariant,
    /// CPU whose cmpxchg last set the flag while it stays set, if any.
    pub holder: Option<CpuId>,
    /// CPUs that acquired the flag and have not released it yet, with the
    /// time they acquired it (more than one only after a bad release).
    pub owners: Vec<(CpuId, f64)>,
    /// The flag's cache line (owner and queue).
    line: Line,
    /// Seed of the per-CPU softirq spread.
    pub seed: u64,
    /// Counts.
    pub stats: SerializeStats,
}

impl Default for SerializeState {
    fn default() -> Self {
        SerializeState::new(SerializeVariant::FixedNewidle)
    }
}

impl SerializeState {
    /// A free flag under `variant`.
    pub fn new(variant: SerializeVariant) -> SerializeState {
        SerializeState {
            variant,
            holder: None,
            owners: Vec::new(),
            line: Line::new(),
            seed: 0,
            stats: SerializeStats::default(),
        }
    }
}

/// A deterministic value in `[0, 1)` from a seed and two integers
/// (splitmix64), for the per-CPU softirq spread.
pub fn spread_hash(seed: u64, a: u64, b: u64) -> f64 {
    let mut z = seed
        .wrapping_add(a.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(b.wrapping_mul(0xbf58_476d_1ce4_e5b9))
        .wrapping_add(0x94d0_49bb_1331_11eb);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

impl Kernel {
    /// Queues `cpu`'s request for the flag's cache line arriving at `t`
    /// (ns): returns when the operation completes and how long of that was
    /// spent waiting behind other requests.
    fn serialize_line(&mut self, cpu: CpuId, t: f64) -> (f64, f64) {
        let model = LineModel::from_knobs(&self.knobs);
        let s = &mut self.sched.balance.serialize;
        let g = s.line.request(&model, &self.m, t, cpu);
        if g.moved {
            s.stats.transfers += 1;
            if g.distance == Some(Distance::RemotePackage) {
                s.stats.transfers_remote += 1;
            }
        }
        (g.done_ns, g.wait_ns)
    }

    /// `atomic_try_cmpxchg_acquire(&sched_balance_running, 0, 1)` by `cpu`
    /// whose clock reads `*t` (ns), balancing as `idle`. The CPU stalls
    /// until its request is served (charged to it, counted as contention,
    /// and by who paid it: a running task, an idle CPU's periodic balance,
    /// a newly-idle balance); `*t` moves to the completion. True when the
    /// flag was free and is now held by `cpu`.
    pub fn sched_balance_running_trylock(
        &mut self,
        cpu: CpuId,
        idle: CpuIdleType,
        t: &mut f64,
    ) -> bool {
        let (done, queued) = self.serialize_line(cpu, *t);
        let stall = done - *t;
        let running = self.sched.rq[cpu].curr.is_some();
        self.charge_cpu(cpu, stall);
        *t = done;
        let s = &mut self.sched.balance.serialize;
        s.stats.attempts += 1;
        s.stats.atomic_ns += stall;
        s.stats.queue_ns += queued;
        match (running, idle) {
            (true, _) => s.stats.busy_ns += stall,
            (false, CpuIdleType::NewlyIdle) => s.stats.newidle_ns += stall,
            (false, _) => s.stats.idle_ns += stall,
        }
        s.stats.max_atomic_ns = s.stats.max_atomic_ns.max(stall);
        if s.holder.is_some() {
            s.stats.contended += 1;
            return false;
        }
        s.holder = Some(cpu);
        // Invariant: nobody else may be inside a serialized balance now.
        s.stats.overlaps += s.owners.iter().filter(|&&(c, _)| c != cpu).count() as u64;
        s.owners.retain(|&(c, _)| c != cpu);
        s.owners.push((cpu, done));
        true
    }

    /// `atomic_set_release(&sched_balance_running, 0)` by `cpu` at `t`
    /// (ns): a store the CPU does not wait for; the flag reads 0 from its
    /// completion. A release by a CPU that does not hold the flag is
    /// counted as a bad release (and frees the flag under its holder).
    pub fn sched_balance_running_unlock(&mut self, cpu: CpuId, t: f64) {
        self.serialize_line(cpu, t);
        let s = &mut self.sched.balance.serialize;
        s.stats.releases += 1;
        if s.holder != Some(cpu) {
            s.stats.bad_releases += 1;
        }
        s.holder = None;
        s.owners.retain(|&(c, _)| c != cpu);
    }

    /// When `cpu`'s SCHED_SOFTIRQ of the current tick starts (ns).
    pub fn softirq_start(&self, cpu: CpuId) -> f64 {
        let u = spread_hash(
            self.sched.balance.serialize.seed,
            cpu.index() as u64,
            self.jiffies(),
        );
        self.now as f64 + u * costs::TICK_SOFTIRQ_SPREAD_NS
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::CpuId;

    fn c(i: usize) -> CpuId {
        CpuId::new(i)
    }
    use super::*;
    use crate::kernel::sysctl::Knobs;

    fn kernel(variant: &str) -> Kernel {
        let m = numalab_topology::presets::load("gnr-2s-snc3").expect("preset");
        let mut knobs = Knobs::default();
        knobs
            .set(&format!("numalab.sched_balance_serialize={variant}"))
            .expect("knob");
        Kernel::new(m, knobs).expect("mainline policy")
    }

    #[test]
    fn variants_parse_from_their_knob_values() {
        for v in ["legacy", "v3", "v4", "fixed", "fixed+newidle"] {
            assert_eq!(SerializeVariant::parse(v).map(|x| x.name()), Some(v));
        }
        assert_eq!(SerializeVariant::parse("v5"), None);
        assert_eq!(
            kernel("legacy").sched.balance.serialize.variant,
            SerializeVariant::Legacy
        );
    }

    #[test]
    fn only_the_newidle_variants_serialize_newidle_and_only_v3_retries_with_the_marker_set() {
        use CpuIdleType::*;
        use SerializeVariant::*;
        assert!(!Legacy.rq_tries(Idle, false));
        assert!(
            V3.rq_tries(Idle, true),
            "v3 retries although it holds the marker"
        );
        assert!(!V3.rq_tries(NewlyIdle, false));
        assert!(!V4.rq_tries(Idle, true));
        assert!(V4.rq_tries(NewlyIdle, false));
        assert!(!Fixed.rq_tries(NewlyIdle, false));
        assert!(
            !Fixed.rq_tries(NotIdle, true),
            "fixed keeps the flag over redo"
        );
        assert!(FixedNewidle.rq_tries(NewlyIdle, false));
        assert_eq!(V3.redo(), RedoFlag::ReleaseKeepMarker);
        assert_eq!(V4.redo(), RedoFlag::ReleaseAndClear);
        assert_eq!(Fixed.redo(), RedoFlag::Keep);
    }

    #[test]
    fn simultaneous_cmpxchgs_queue_on_the_line_and_only_the_first_wins() {
        let mut k = kernel("fixed");
        let n = 8;
        let mut won = 0;
        let mut stalls = Vec::new();
        for cpu in 0..n {
            let mut t = 1000.0;
            if k.sched_balance_running_trylock(c(cpu * 60), CpuIdleType::Idle, &mut t) {
                won += 1;
            }
            stalls.push(t - 1000.0);
        }
        assert_eq!(won, 1);
        let s = &k.sched.balance.serialize.stats;
        assert_eq!((s.attempts, s.contended), (n as u64, n as u64 - 1));
        // Each waits for all before it: stalls grow, total ~ n^2/2 transfers.
        assert!(stalls.windows(2).all(|w| w[1] > w[0]), "{stalls:?}");
        assert!((s.atomic_ns - stalls.iter().sum::<f64>()).abs() < 1e-6);
        assert!(s.queue_ns > 0.0);
        // Charged to the (idle) CPUs as kernel time.
        assert!((k.sched.idle_kernel_ns - s.atomic_ns).abs() < 1e-6);
    }

    #[test]
    fn cmpxchg_time_on_a_cpu_without_a_task_is_counted_as_its_balance_type_pays_it() {
        let mut k = kernel("fixed+newidle");
        let (mut ta, mut tb) = (1000.0, 1000.0);
        k.sched_balance_running_trylock(c(0), CpuIdleType::Idle, &mut ta);
        k.sched_balance_running_trylock(c(60), CpuIdleType::NewlyIdle, &mut tb);
        let s = &k.sched.balance.serialize.stats;
        assert!((s.idle_ns - (ta - 1000.0)).abs() < 1e-9, "{s:?}");
        assert!((s.newidle_ns - (tb - 1000.0)).abs() < 1e-9, "{s:?}");
        assert_eq!(s.busy_ns, 0.0);
        assert!((s.idle_ns + s.newidle_ns - s.atomic_ns).abs() < 1e-9);
    }

    #[test]
    fn a_task_waiting_for_an_idle_cpus_kernel_work_counts_each_ns_once() {
        let mut k = kernel("legacy");
        k.sched.rq[c(3)].kernel_busy_until = 1000;
        k.sched.note_kernel_wait(c(3), 200);
        // A second task woken on the same CPU while the first still waits.
        k.sched.note_kernel_wait(c(3), 500);
        assert_eq!(k.sched.idle_kernel_wait_ns(), 800.0);
        // The CPU's kernel work grows (the next tick's softirq): only the
        // new part counts.
        k.sched.rq[c(3)].kernel_busy_until = 1500;
        k.sched.note_kernel_wait(c(3), 900);
        assert_eq!(k.sched.idle_kernel_wait_ns(), 1300.0);
        // Woken after the work ended: nothing to wait for.
        k.sched.note_kernel_wait(c(3), 2000);
        assert_eq!(k.sched.idle_kernel_wait_ns(), 1300.0);
    }

    #[test]
    fn the_flag_is_free_again_once_the_release_completes() {
        let mut k = kernel("fixed");
        let mut t = 0.0;
        assert!(k.sched_balance_running_trylock(c(0), CpuIdleType::Idle, &mut t));
        k.sched_balance_running_unlock(c(0), t + 5000.0);
        let mut t2 = t + 6000.0;
        assert!(k.sched_balance_running_trylock(c(1), CpuIdleType::Idle, &mut t2));
        let s = &k.sched.balance.serialize.stats;
        assert_eq!((s.bad_releases, s.overlaps), (0, 0));
    }

    #[test]
    fn releasing_someone_elses_flag_is_counted_and_lets_a_third_cpu_overlap() {
        let mut k = kernel("v3");
        let (mut ta, mut tb, mut tc) = (0.0, 200.0, 400.0);
        assert!(k.sched_balance_running_trylock(c(0), CpuIdleType::Idle, &mut ta));
        k.sched_balance_running_unlock(c(0), ta + 10.0);
        assert!(k.sched_balance_running_trylock(c(1), CpuIdleType::Idle, &mut tb));
        // CPU 0 retries, fails, and releases at out: CPU 1's flag.
        let mut ta2 = tb + 1.0;
        assert!(!k.sched_balance_running_trylock(c(0), CpuIdleType::Idle, &mut ta2));
        k.sched_balance_running_unlock(c(0), ta2);
        assert!(k.sched_balance_running_trylock(c(2), CpuIdleType::Idle, &mut tc));
        let s = &k.sched.balance.serialize.stats;
        assert_eq!(s.bad_releases, 1);
        assert_eq!(s.overlaps, 1, "CPU 2 balances while CPU 1 still does");
    }

    #[test]
    fn every_serialize_word_is_the_variant_of_that_name() {
        use numalab_knobs::Choice;
        for &c in SchedBalanceSerialize::VARIANTS {
            assert_eq!(SerializeVariant::from(c).name(), c.word());
        }
    }
}
