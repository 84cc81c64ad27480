//! The coordinator's own CPU time: what `real run`'s sampling loop costs
//! the machine it measures. In a QEMU guest under TCG a sample (numa_maps,
//! each thread's stat, memory.stat) takes hundreds of milliseconds of a
//! vCPU, during which the workload thread sharing that vCPU waits and the
//! balancer may move it (docs/real.md M3); `numalab validate` gives the
//! model's stand-in for the coordinator (`real_run_sampler`) the cost the
//! saved boots recorded.
//!
//! Measured with `CLOCK_THREAD_CPUTIME_ID` around each sample and each
//! loop iteration (the poll's blocking wait costs no CPU). Left out: the
//! setup before the workload's release and the teardown after it.

/// CPU time of the calling thread, ns (0 if the clock cannot be read).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the call to fill.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if r != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The sampling loop's CPU time, sample by sample and iteration by
/// iteration.
#[derive(Clone, Debug, Default)]
pub struct CoordinatorCpu {
    /// CPU ns of each sample.
    pub samples_ns: Vec<u64>,
    /// CPU ns of each loop iteration besides its samples (draining the
    /// workers' reports, reaping, polling).
    pub polls_ns: Vec<u64>,
}

impl CoordinatorCpu {
    /// Records a sample that began at thread CPU time `begin_ns` and ended
    /// now; returns its CPU ns.
    pub fn sample(&mut self, begin_ns: u64) -> u64 {
        let ns = thread_cpu_ns().saturating_sub(begin_ns);
        self.samples_ns.push(ns);
        ns
    }

    /// Median CPU ms per sample (`None` without samples).
    pub fn sample_ms(&self) -> Option<f64> {
        median(self.samples_ns.iter().map(|&ns| ns as f64)).map(|ns| ns / 1e6)
    }

    /// Median CPU us per loop iteration besides its samples.
    pub fn poll_us(&self) -> Option<f64> {
        median(self.polls_ns.iter().map(|&ns| ns as f64)).map(|ns| ns / 1e3)
    }

    /// Total CPU seconds of the loop.
    pub fn total_s(&self) -> f64 {
        let ns: u64 = self.samples_ns.iter().chain(&self.polls_ns).sum();
        ns as f64 / 1e9
    }
}

/// The median of `v` (the mean of the middle two for an even count;
/// `None` when empty).
pub fn median(v: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut s: Vec<f64> = v.into_iter().collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_total_of_the_loops_cpu() {
        let c = CoordinatorCpu {
            samples_ns: vec![300_000_000, 100_000_000, 200_000_000],
            polls_ns: vec![400_000, 600_000],
        };
        assert_eq!(c.sample_ms(), Some(200.0));
        assert_eq!(c.poll_us(), Some(500.0));
        assert!((c.total_s() - 0.601).abs() < 1e-12);
        assert_eq!(CoordinatorCpu::default().sample_ms(), None);
    }

    #[test]
    fn this_threads_cpu_clock_advances_with_work() {
        let a = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns() > a);
    }
}
