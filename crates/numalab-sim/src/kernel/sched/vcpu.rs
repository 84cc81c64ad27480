//! A virtual machine's vCPUs taken off their host core, as the guest
//! kernel's own clock sees it (`[kernel] vcpu_preemption` of the machine
//! spec): a QEMU guest's vCPU threads time-share the host's cores, so a
//! stretch of guest kernel work that the host cuts lasts, by the guest's
//! `sched_clock`, as long as the host kept the vCPU off. The model applies
//! it where the guest kernel decides by a duration it measured itself: the
//! newly idle balance's cost (balance.rs `update_newidle_cost`) and a
//! NUMA scan pass's run time, which pushes the scanning task's next scan
//! by 32 times that (numa/scan.rs, `numalab.vcpu_scan_stamp`); and a
//! timed access of user work the host cut, which the guest's clock sees
//! as one slow access (engine/host_cuts.rs, `numalab.vcpu_access_cuts`).
//! Elsewhere a guest's slower time is in the machine's averages
//! (`cost_scale`, `core_gbps` measured with every vCPU busy).
//!
//! Left out: the vCPU's tasks stalling meanwhile (the model's CPU goes on
//! running them; their average slowdown is in those averages).

use super::Sched;
use numalab_topology::VcpuPreemption;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Mixed into the run's seed for the vCPU draws, so they are a stream of
/// their own (the engine's workload draws use the same seed).
const VCPU_STREAM: u64 = 0x7663_7075_686f_7374;

/// The draws' generator for a run of seed `seed` (`Sched::seed_balance`).
pub(super) fn vcpu_rng(seed: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed ^ VCPU_STREAM)
}

/// How many times the host cuts a stretch of `run_ns` of guest time:
/// once per whole `run_ms` it spans, and once more with probability the
/// rest over `run_ms` (so a stretch shorter than `run_ms` is cut at most
/// once).
pub(crate) fn host_cuts(rng: &mut Pcg64Mcg, p: &VcpuPreemption, run_ns: f64) -> u64 {
    let runs = run_ns / (p.run_ms * 1e6);
    let whole = runs.floor();
    let mut cuts = whole as u64;
    if rng.gen::<f64>() < runs - whole {
        cuts += 1;
    }
    cuts
}

/// One cut's delay, ns: from the spec's quantiles, linear between them.
pub(crate) fn host_cut_ns(rng: &mut Pcg64Mcg, p: &VcpuPreemption) -> f64 {
    let q = rng.gen::<f64>() * 4.0;
    let i = (q as usize).min(3);
    let d = &p.delay_ms;
    (d[i] + (d[i + 1] - d[i]) * (q - i as f64)) * 1e6
}

impl Sched {
    /// How much longer than `cost_ns` a stretch of guest kernel work of
    /// that length lasts by the guest's clock: the sum of the host's cuts
    /// of it ([`host_cuts`], [`host_cut_ns`]).
    pub(crate) fn vcpu_host_delay_ns(&mut self, p: &VcpuPreemption, cost_ns: f64) -> f64 {
        let cuts = host_cuts(&mut self.vcpu_rng, p, cost_ns);
        (0..cuts).map(|_| host_cut_ns(&mut self.vcpu_rng, p)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::sysctl::Knobs;
    use crate::kernel::Kernel;

    fn sched() -> Sched {
        let m = numalab_topology::presets::load("tiny-2n").expect("preset");
        Kernel::new(m, Knobs::default()).expect("boots").sched
    }

    #[test]
    fn short_work_is_seldom_cut_and_a_cut_lasts_a_delay_from_the_quantiles() {
        let p = VcpuPreemption {
            run_ms: 4.0,
            delay_ms: [1.0, 3.8, 4.8, 12.0, 44.0],
        };
        let mut s = sched();
        let n = 200_000;
        let delays: Vec<f64> = (0..n).map(|_| s.vcpu_host_delay_ns(&p, 40_000.0)).collect();
        let cut: Vec<f64> = delays.iter().copied().filter(|&d| d > 0.0).collect();
        // 40 us of work in 4 ms runs: cut 1 % of the time.
        let share = cut.len() as f64 / n as f64;
        assert!((share - 0.01).abs() < 0.002, "cut share {share}");
        assert!(cut.iter().all(|&d| (1e6..=44e6).contains(&d)));
        let mut sorted = cut.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        assert!((median - 4.8e6).abs() < 0.6e6, "median {median}");
        // Work as long as a run is always cut, ten runs' ten times.
        assert!(s.vcpu_host_delay_ns(&p, 4e6) >= 1e6);
        let long = s.vcpu_host_delay_ns(&p, 40e6);
        assert!((10e6..=440e6).contains(&long), "{long}");
    }

    #[test]
    fn the_stream_is_the_same_from_boot_to_boot_and_follows_the_run_seed() {
        let p = VcpuPreemption {
            run_ms: 1.0,
            delay_ms: [1.0, 2.0, 3.0, 4.0, 5.0],
        };
        let (mut a, mut b) = (sched(), sched());
        let da: Vec<f64> = (0..1000).map(|_| a.vcpu_host_delay_ns(&p, 5e5)).collect();
        let db: Vec<f64> = (0..1000).map(|_| b.vcpu_host_delay_ns(&p, 5e5)).collect();
        assert_eq!(da, db);
        assert!(da.iter().any(|&d| d > 0.0) && da.contains(&0.0));
        // Another run seed, another stream.
        let mut c = sched();
        c.seed_balance(2);
        let dc: Vec<f64> = (0..1000).map(|_| c.vcpu_host_delay_ns(&p, 5e5)).collect();
        assert_ne!(da, dc);
    }
}
