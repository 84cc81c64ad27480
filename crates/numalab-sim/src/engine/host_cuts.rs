//! A QEMU guest's host taking a vCPU off in the middle of user work, as
//! the guest's timed accesses see it (lab switch `numalab.vcpu_access_cuts`,
//! machines with `[kernel] vcpu_preemption` only).
//!
//! pmbench (and `numalab real run`'s timed random phases) read the clock
//! after every access. The guest's clock runs on while the host keeps the
//! vCPU off, so an access the host cut lasts, by that clock, as long as the
//! cut: one access per cut, closed loop (engine/latency.rs). The cuts of a
//! stretch of timed accesses come at the machine's measured rate and
//! delays (kernel/sched/vcpu.rs `host_cuts`, `host_cut_ns`), from a draw
//! stream of their own so that switching them changes no other figure.
//!
//! Left out: the work a cut delays. The guest's speeds in the machine spec
//! (`core_gbps`, `cost_scale`) are averages measured with the cuts in
//! them, so the tasks' progress already carries them; only the histogram
//! of timed accesses is redistributed.

use crate::kernel::sched::vcpu::{host_cut_ns, host_cuts};
use numalab_topology::VcpuPreemption;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// Mixed into the run's seed: the cuts' own draw stream.
const ACCESS_CUT_STREAM: u64 = 0x6163_6365_7373_6375;

/// The host's cuts of timed user work on one guest.
#[derive(Clone, Debug)]
pub(crate) struct HostCuts {
    /// The machine's measured preemption.
    p: VcpuPreemption,
    /// Draws, in the engine's (deterministic) order of timed stretches.
    rng: Pcg64Mcg,
}

impl HostCuts {
    /// The cuts of a run of seed `seed` on a machine with preemption `p`.
    pub(crate) fn new(p: VcpuPreemption, seed: u64) -> HostCuts {
        HostCuts {
            p,
            rng: Pcg64Mcg::seed_from_u64(seed ^ ACCESS_CUT_STREAM),
        }
    }

    /// Calls `each` with the delay (ns) of every cut of a stretch of
    /// `run_ns` of timed accesses.
    pub(crate) fn draw(&mut self, run_ns: f64, mut each: impl FnMut(f64)) {
        if run_ns <= 0.0 {
            return;
        }
        for _ in 0..host_cuts(&mut self.rng, &self.p, run_ns) {
            each(host_cut_ns(&mut self.rng, &self.p));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cuts() -> HostCuts {
        let p = VcpuPreemption {
            run_ms: 4.0,
            delay_ms: [1.0, 3.8, 4.8, 12.0, 44.0],
        };
        HostCuts::new(p, 7)
    }

    #[test]
    fn a_second_of_timed_work_is_cut_once_per_run_with_delays_from_the_quantiles() {
        let mut c = cuts();
        let mut delays = Vec::new();
        // 1000 stretches of 1 ms: 250 cuts expected (one per 4 ms).
        for _ in 0..1000 {
            c.draw(1e6, |d| delays.push(d));
        }
        assert!((200..=300).contains(&delays.len()), "{}", delays.len());
        assert!(delays.iter().all(|&d| (1e6..=44e6).contains(&d)));
        // One long stretch: its whole runs are each cut.
        let mut n = 0;
        c.draw(40e6, |_| n += 1);
        assert!((10..=11).contains(&n), "{n}");
    }

    #[test]
    fn the_same_seed_draws_the_same_cuts() {
        let draw = |seed| {
            let mut c = cuts();
            c.rng = Pcg64Mcg::seed_from_u64(seed ^ ACCESS_CUT_STREAM);
            let mut v = Vec::new();
            for _ in 0..200 {
                c.draw(2e6, |d| v.push(d));
            }
            v
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
    }
}
